// FakeClusterService: a ClusterService for the api tests that records every call and answers
// with canned values (or a canned error). Thread-safe: a mutex guards everything, because the
// server calls it from several worker threads.
#pragma once

#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include "controller/service.h"

namespace gf::testing {

class FakeClusterService : public ClusterService {
 public:
  FakeClusterService() {
    job.id = JobId(7);
    job.owner = Owner{1000, 1000, "alice"};
    job.spec.name = "train";
    job.spec.argv = {"python", "train.py"};
    job.submit_time = FromUnixMillis(1'700'000'000'123);
  }

  Result<Job> Submit(const Caller& caller, JobSpec spec) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_spec = spec;
    Job out = job;
    out.spec = std::move(spec);
    return out;
  }
  Result<std::vector<Job>> ListJobs(const Caller& caller, const JobFilter& filter) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_filter = filter;
    return std::vector<Job>{job};
  }
  Result<Job> GetJob(const Caller& caller, JobId id) override { return JobCall(caller, id); }
  Result<Job> CancelJob(const Caller& caller, JobId id) override { return JobCall(caller, id); }
  Result<JobLogs> GetJobLogs(const Caller& caller, JobId id) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_id = id;
    return logs;
  }
  Result<std::vector<Event>> JobEvents(const Caller& caller, JobId id) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_id = id;
    return events;
  }
  Result<std::vector<Node>> ListNodes(const Caller& caller) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    return nodes;
  }
  Result<std::vector<GpuStatus>> ListGpus(const Caller& caller) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    return gpus;
  }
  Result<ClusterStats> Stats(const Caller& caller) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    return stats;
  }

  int Calls() {
    std::lock_guard<std::mutex> lock(mu);
    return calls;
  }
  std::optional<Caller> LastCaller() {
    std::lock_guard<std::mutex> lock(mu);
    return last_caller;
  }

  // Configure before use (or under mu).
  std::mutex mu;
  std::optional<Error> fail_with;
  bool throw_exception = false;
  Job job;
  JobLogs logs;
  std::vector<Event> events;
  std::vector<Node> nodes;
  std::vector<GpuStatus> gpus;
  ClusterStats stats;
  // Recorded.
  int calls = 0;
  std::optional<Caller> last_caller;
  std::optional<JobSpec> last_spec;
  std::optional<JobFilter> last_filter;
  std::optional<JobId> last_id;

 private:
  Status Record(const Caller& caller) {  // REQUIRES: mu held
    ++calls;
    last_caller = caller;
    if (throw_exception) {
      throw std::runtime_error("boom");
    }
    if (fail_with) {
      return *fail_with;
    }
    return OkStatus();
  }
  Result<Job> JobCall(const Caller& caller, JobId id) {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_id = id;
    Job out = job;
    out.id = id;
    return out;
  }
};

}  // namespace gf::testing
