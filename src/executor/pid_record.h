// PidRecord: a process identity that survives pid reuse. Its own header because both the
// Executor's interface (JobExit::leftovers) and the job files (job_files.h, which includes the
// Executor's header for LaunchSpec) speak of it.
#pragma once

#include <cstdint>

namespace gf::exec {

// The pid and its start time in clock ticks since boot (field 22 of /proc/PID/stat).
struct PidRecord {
  std::int64_t pid = 0;
  std::uint64_t start_time = 0;
};

}  // namespace gf::exec
