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
  Gpu gpu;
  std::optional<JobId> job;        // the job holding it
  std::string user;                // that job's owner
  std::optional<GpuSample> sample; // latest reading
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
};

}  // namespace gf
