// Which Slurm job a process belongs to, as the companion agent (`gpufleet agent --slurm`) tells
// it for each GPU process (monitor/attribution.h, ProcessAttributor in Slurm mode). Pure.
//
// 1. Its cgroup, where Slurm puts jobs in cgroups (proctrack/cgroup, task/cgroup): a path
//    component `job_<id>` below one named for Slurm —
//      cgroup v1: `…:/slurm/uid_1000/job_123/step_0/task_0` (`/slurm_<node>/…` when several
//                 slurmd share a host);
//      cgroup v2: `0::/system.slice/slurmstepd.scope/job_123/step_batch/user/task_0`
//                 (`<node>_slurmstepd.scope`).
//    The process cannot leave it: this holds whatever it did to its environment or parents.
// 2. Otherwise its initial environment's SLURM_JOB_ID, which slurmstepd sets for every step
//    and which each child inherits (sites with proctrack/linuxproc and no cgroups). A user could
//    set it by hand; a process outside every job that does is then counted to that job, which
//    is why the cgroup wins wherever there is one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gf {

// The Slurm job of a /proc/<pid>/cgroup text (every line: v1 controllers and the v2 "0::"
// line); nullopt when no line lies in a Slurm job's cgroup.
std::optional<std::int64_t> SlurmJobFromCgroup(std::string_view proc_cgroup);

// SLURM_JOB_ID of one NUL-separated environment block (a /proc/<pid>/environ); nullopt when
// absent or not a positive number.
std::optional<std::int64_t> SlurmJobFromEnviron(std::string_view environ_block);

// SLURM_NODEID of an environment block: the node's place in its job's node list (0 on the
// first node, and for a batch script); 0 when absent or not a number.
int SlurmNodeRankFromEnviron(std::string_view environ_block);

// The value of `name` in a NUL-separated environment block; nullopt when absent.
std::optional<std::string_view> EnvironValue(std::string_view environ_block, std::string_view name);

}  // namespace gf
