// ClusterService: the operations the API (and so every client) can ask of the controller.
//
// Thread-safe: API worker threads call it concurrently; the implementation (Controller) turns
// each call into a command for its single state thread and blocks until that command is applied
// and, for writes, durable. Every call names its Caller; permission checks happen here, not in
// the transport, so every transport enforces the same rules.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "model/event.h"
#include "model/gpu_sample.h"
#include "model/job.h"
#include "model/node.h"

namespace gf {

// Who is asking. From SO_PEERCRED on the Unix socket; unauthenticated on plain TCP.
struct Caller {
  bool authenticated = false;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string user;  // login name ("uid1234" when the uid has no passwd entry)
  bool IsRoot() const { return authenticated && uid == 0; }
};

struct JobFilter {
  bool include_finished = false;  // default: PENDING/STARTING/RUNNING only
  std::optional<std::string> user;  // root only: filter by owner name
  int limit = 1000;
};

struct GpuStatus {
  NodeId node;
  Gpu gpu;                         // health and health_cause as of the latest sample
  std::optional<JobId> job;        // the job holding it
  std::string user;                // that job's owner
  std::string team;                // that job's team
  std::optional<GpuSample> sample; // latest reading, processes attributed
  std::vector<std::string> conditions;  // "allocated_no_process", "unallocated_process"
};

// Counts behind the gpufleet_* Prometheus series (metrics/).
struct QueueStats {
  std::string priority;            // "high", "normal", "low"
  int pending = 0;
  double oldest_wait_seconds = 0;  // 0 when none pending
};

struct TeamStats {
  std::string team;                // "" is shown as "default"
  int allocated_gpus = 0;          // held by the team's jobs now
  int running_jobs = 0;
  int pending_jobs = 0;
  double gpu_seconds_total = 0;    // allocated GPU-seconds, ended and running jobs
};

struct ClusterStats {
  std::vector<std::pair<std::string, int>> jobs_by_state;  // every JobState name, with count
  std::vector<QueueStats> queue;                            // one per priority class
  // Queue wait of jobs that started since the controller started (histogram, seconds).
  std::vector<double> wait_bucket_bounds;  // upper bounds, ascending (+Inf implied)
  std::vector<std::int64_t> wait_bucket_counts;  // cumulative, same length as bounds
  std::int64_t wait_count = 0;
  double wait_sum_seconds = 0;
  std::vector<TeamStats> teams;  // ordered by name
  int nodes = 0;
  int gpus = 0;
  int gpus_allocated = 0;
};

struct JobLogs {
  std::filesystem::path stdout_path;
  std::filesystem::path stderr_path;
};

class ClusterService {
 public:
  virtual ~ClusterService() = default;

  // Validates, stores durably, and returns the job (state PENDING). Errors: kInvalidArgument
  // naming the field (bad spec, more GPUs than any node has, unknown GPU type),
  // kPermissionDenied (unauthenticated caller).
  virtual Result<Job> Submit(const Caller& caller, JobSpec spec) = 0;

  // Jobs the caller may see (root: all; others: their own), newest first.
  virtual Result<std::vector<Job>> ListJobs(const Caller& caller, const JobFilter& filter) = 0;

  // kNotFound also when the job exists but belongs to someone else (no existence leak).
  virtual Result<Job> GetJob(const Caller& caller, JobId id) = 0;

  // Cancels a pending or running job (running: SIGTERM, grace, SIGKILL). Returns the job as
  // it is after the request was recorded. kFailedPrecondition if already finished.
  virtual Result<Job> CancelJob(const Caller& caller, JobId id) = 0;

  virtual Result<JobLogs> GetJobLogs(const Caller& caller, JobId id) = 0;

  virtual Result<std::vector<Event>> JobEvents(const Caller& caller, JobId id) = 0;

  virtual Result<std::vector<Node>> ListNodes(const Caller& caller) = 0;
  virtual Result<std::vector<GpuStatus>> ListGpus(const Caller& caller) = 0;

  // Cluster-wide counts (no per-user detail beyond team totals): anyone may read them, as
  // Prometheus does over TCP.
  virtual Result<ClusterStats> Stats(const Caller& caller) = 0;
};

}  // namespace gf
