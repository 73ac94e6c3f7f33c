// Slurm's jobs as `scontrol --details --oneliner show job` prints them, read for the companion
// mode (issue #23: `gpufleet server --slurm` learns jobs, users, accounts, partitions, time
// limits and which GPU of which node each job holds from Slurm). Pure.
//
// Why scontrol and not squeue or slurmrestd: only `scontrol -d show job` names the GPU indices
// a job holds on each node (`GRES=gpu:h100:2(IDX:0-1)`), which is what ties a Slurm job to a
// GPU; squeue's formats give the count only. slurmrestd is an optional daemon that most sites
// do not run (and Debian 12's 22.05 build needs extra plugins and a JWT key for it); scontrol is
// wherever Slurm's clients are, speaks to slurmctld with the site's own munge credentials, and
// its one-line output has been stable for many releases. docs/slurm.md, "Companion mode".
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/job.h"

namespace gf {

// The GPUs a job holds on one node: their indices in the node's gres list (the order of
// gres.conf's File= devices, which on a real node is the order of /dev/nvidiaN = NVML's index).
struct SlurmNodeGpus {
  std::string node;
  std::vector<int> gpu_indices{};
  bool operator==(const SlurmNodeGpus&) const = default;
};

struct SlurmJob {
  std::int64_t id = 0;                          // JobId (each array task has its own)
  std::optional<std::int64_t> array_job_id{};   // ArrayJobId, for an array task
  std::optional<std::int64_t> array_task_id{};  // ArrayTaskId, for one task (not a pending range)
  std::string name{};                           // JobName
  std::string user{};                           // UserId=name(uid)
  std::optional<std::uint32_t> uid{};
  std::string account{};    // Account ("" when (null))
  std::string partition{};  // Partition
  std::string qos{};        // QOS ("" when (null))
  std::string state{};      // JobState as Slurm names it: RUNNING, PENDING, COMPLETED, ...
  std::string reason{};     // Reason ("" when None)
  std::optional<std::chrono::seconds> time_limit{};  // nullopt: UNLIMITED
  std::optional<Time> submit_time{};
  std::optional<Time> start_time{};   // for a pending job: Slurm's expected start, if any
  std::optional<Time> end_time{};     // for a running job: when its time limit ends it
  std::optional<int> exit_code{};     // ExitCode=N:S: N, or 128+S when killed by signal S
  std::string work_dir{};             // WorkDir
  std::string command{};              // Command ("" when (null): a --wrap job)
  int restarts = 0;                   // Restarts: how often Slurm requeued it
  std::vector<SlurmNodeGpus> gpus{};  // per node (only while it holds them: running, completing)
  std::vector<std::string> nodes{};   // NodeList, expanded
  bool operator==(const SlurmJob&) const = default;
};

// A multi-node Slurm job is one gpufleet job per node: its first node's under the Slurm job id,
// the r-th node's (r = SLURM_NODEID, the node's place in the job's NodeList) under
// r * kSlurmNodeStride + the Slurm id. Slurm's job ids stay below 67,108,864 (MaxJobId's
// ceiling), so the two never meet, and the Slurm id is the remainder.
inline constexpr std::int64_t kSlurmNodeStride = 100'000'000;
inline std::int64_t SlurmNodeJobId(std::int64_t slurm_job, int node_rank) {
  return node_rank * kSlurmNodeStride + slurm_job;
}
inline std::int64_t SlurmJobOfNodeJob(std::int64_t id) {
  return id % kSlurmNodeStride;
}

// A whole number written as Slurm writes ids, counts and indices: digits with an optional sign,
// nothing else; nullopt otherwise (empty, trailing text, out of range).
std::optional<std::int64_t> SlurmNumber(std::string_view text);

// Every job of `text` (one per line, "JobId=..."); other lines (scontrol's warnings, a blank
// line) are skipped. A line without a readable JobId is an error naming it.
Result<std::vector<SlurmJob>> ParseShowJobs(std::string_view text);

// A Slurm host list, "gpu[01-03,07],login1" → gpu01 gpu02 gpu03 gpu07 login1 (the zero padding
// kept). Errors: kInvalidArgument for an unbalanced bracket or a bad range.
Result<std::vector<std::string>> ExpandHostList(std::string_view list);

// The GPU indices of a detailed GRES field, "gpu:h100:2(IDX:0-1)" or "gpu:2(IDX:0,3),shard:0"
// → 0 1 / 0 3; empty when no gpu item has indices ("", "gpu:h100:2" of a pending job).
std::vector<int> GpuIndicesOfGres(std::string_view gres);

// gpufleet's state for a Slurm state: RUNNING, COMPLETING, SUSPENDED → kRunning; PENDING,
// REQUEUED, REQUEUE_HOLD, REQUEUE_FED, RESV_DEL_HOLD, CONFIGURING → kPending (CONFIGURING:
// nodes booting; PENDING in the view of anyone waiting); COMPLETED → kCompleted; FAILED,
// OUT_OF_MEMORY, BOOT_FAIL, DEADLINE → kFailed; CANCELLED, REVOKED → kCancelled; TIMEOUT →
// kTimeout; PREEMPTED → kPreempted; NODE_FAIL → kNodeFail. Unknown states: nullopt.
std::optional<JobState> JobStateOfSlurm(std::string_view state);

}  // namespace gf
