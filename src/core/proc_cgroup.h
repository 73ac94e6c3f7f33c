// The cgroup paths of a /proc/<pid>/cgroup text: one line per hierarchy, "ID:CONTROLLERS:PATH"
// (cgroup v1 controllers, or the v2 "0::" line). Each reader of whose job a process is in
// (gpufleet's, Slurm's, Kubernetes' pods) looks through these. Pure.
#pragma once

#include <string_view>
#include <vector>

namespace gf {

// Every line's PATH, in the file's order. The path itself may hold colons: a line is split at
// its first two only. Lines without two colons are skipped.
std::vector<std::string_view> CgroupPaths(std::string_view proc_cgroup);

}  // namespace gf
