// FakeClusterService: a ClusterService for the api tests that records every call and answers
// with canned values (or a canned error). Thread-safe: a mutex guards everything, because the
// server calls it from several worker threads.
#pragma once

#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include "service/service.h"

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
  // Answers with one job per spec, ids counting up from `job`'s.
  Result<std::vector<Job>> SubmitBatch(const Caller& caller, std::vector<JobSpec> specs) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_batch = specs;
    std::vector<Job> out;
    for (JobSpec& spec : specs) {
      Job one = job;
      one.id = JobId(job.id.value() + static_cast<std::int64_t>(out.size()));
      one.spec = std::move(spec);
      out.push_back(std::move(one));
    }
    return out;
  }
  // Answers with one job per index, ids counting up from `job`'s.
  Result<std::vector<Job>> SubmitArray(const Caller& caller,
                                       JobSpec spec,
                                       ArrayRequest array) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_spec = spec;
    last_array = array;
    std::vector<Job> out;
    for (int index : array.indices) {
      Job task = job;
      task.id = JobId(job.id.value() + static_cast<std::int64_t>(out.size()));
      task.spec = spec;
      task.spec.array =
          ArrayTask{.array_job = job.id, .index = index, .max_running = array.max_running};
      out.push_back(std::move(task));
    }
    return out;
  }
  Result<std::vector<Job>> CancelArray(const Caller& caller, JobId array_job) override {
    GF_ASSIGN_OR_RETURN(Job first, JobCall(caller, array_job));
    return std::vector<Job>{first};
  }
  Result<std::vector<Job>> ListJobs(const Caller& caller, const JobFilter& filter) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_filter = filter;
    return std::vector<Job>{job};
  }
  // queue_order as set by a test; not counted in `calls` (ListJobs asks for it on the side).
  Result<std::vector<JobId>> QueueOrder(const Caller& /*caller*/) override {
    std::lock_guard<std::mutex> lock(mu);
    return queue_order;
  }
  Result<Job> GetJob(const Caller& caller, JobId id) override { return JobCall(caller, id); }
  // The canned job, and history_next as the cursor.
  Result<HistoryPage> JobHistory(const Caller& caller, const HistoryFilter& filter) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_history_filter = filter;
    return HistoryPage{.jobs = {job}, .next = history_next};
  }
  Result<Job> CancelJob(const Caller& caller, JobId id) override { return JobCall(caller, id); }
  Result<LogChunk> ReadJobLog(const Caller& caller, const LogRequest& request) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_id = request.job;
    last_log_request = request;
    return log_chunk;
  }
  Status WriteTerminal(const Caller& caller, JobId id, const TerminalInput& input) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_id = id;
    last_terminal_input = input;
    return OkStatus();
  }
  Result<std::vector<Event>> JobEvents(const Caller& caller, JobId id) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_id = id;
    return events;
  }
  Result<Explanation> ExplainJob(const Caller& caller, JobId id) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_id = id;
    Explanation out = explanation;
    out.job = id;
    return out;
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
  Result<QuotaReport> Quota(const Caller& caller) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    return quota;
  }
  Result<std::vector<GpuMinute>> GpuHistory(const Caller& caller,
                                            const GpuUuid& uuid,
                                            Time from,
                                            Time to) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    std::vector<GpuMinute> rows;
    for (const GpuMinute& minute : gpu_minutes) {
      if (minute.uuid == uuid && minute.minute >= from && minute.minute < to) {
        rows.push_back(minute);
      }
    }
    return rows;
  }
  Result<Report> MonthlyReport(const Caller& caller, const ReportRequest& request) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_report_request = request;
    return report;
  }
  Result<Job> ApproveJob(const Caller& caller, JobId id) override { return JobCall(caller, id); }
  Result<Job> CheckpointJob(const Caller& caller, JobId id) override { return JobCall(caller, id); }
  Result<Job> HoldJob(const Caller& caller, JobId id) override { return JobCall(caller, id); }
  Result<Job> ReleaseJob(const Caller& caller, JobId id) override { return JobCall(caller, id); }
  Result<Job> RequeueJob(const Caller& caller, JobId id) override { return JobCall(caller, id); }
  // Answers with `job`, as if it matched.
  Result<std::vector<Job>> CancelJobs(const Caller& caller, const JobSelector& selector) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_selector = selector;
    return std::vector<Job>{job};
  }
  Result<Job> SignalJob(const Caller& caller, JobId id, int sig) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      last_signal = sig;
    }
    return JobCall(caller, id);
  }
  // `job` signalled, and `job` with id + 1 skipped (as if pending).
  Result<SignalOutcome> SignalJobs(const Caller& caller,
                                   const JobSelector& selector,
                                   int sig) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_selector = selector;
    last_signal = sig;
    Job skipped = job;
    skipped.id = JobId(job.id.value() + 1);
    skipped.state = JobState::kPending;
    return SignalOutcome{.signalled = {job}, .skipped = {skipped}};
  }
  Result<Job> UpdateJob(const Caller& caller, JobId id, const JobUpdate& update) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      last_update = update;
    }
    return JobCall(caller, id);
  }
  Result<IssuedToken> CreateToken(const Caller& caller, TokenRequest request) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_token_request = request;
    return issued;
  }
  Result<std::vector<ApiToken>> ListTokens(const Caller& caller) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    return std::vector<ApiToken>{issued.token};
  }
  Result<ApiToken> RevokeToken(const Caller& caller, const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    ApiToken out = issued.token;
    out.id = id;
    return out;
  }
  Result<Node> DrainNode(const Caller& caller, const NodeId& node, std::string reason) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    Node out;
    out.name = node;
    out.state = NodeState::kDraining;
    out.state_reason = std::move(reason);
    return out;
  }
  Result<Node> ResumeNode(const Caller& caller, const NodeId& node) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    Node out;
    out.name = node;
    return out;
  }
  // Echoes the GPU in the mode asked (any known mode).
  Result<Gpu> SetGpuMode(const Caller& caller,
                         const NodeId& /*node*/,
                         const std::string& gpu,
                         const std::string& mode) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    Gpu out;
    out.uuid = GpuUuid(gpu);
    GF_ASSIGN_OR_RETURN(out.sharing, ParseSharingMode(mode));
    return out;
  }
  // Echoes the GPU with the layout asked waiting.
  Result<Gpu> SetMigLayout(const Caller& caller,
                           const NodeId& /*node*/,
                           const std::string& gpu,
                           const std::string& layout) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    Gpu out;
    out.uuid = GpuUuid(gpu);
    GF_ASSIGN_OR_RETURN(out.mig_layout_next, ParseMigLayout(layout, "layout"));
    return out;
  }
  Result<Gpu> ResumeGpu(const Caller& caller,
                        const NodeId& /*node*/,
                        const std::string& gpu) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    Gpu out;
    out.uuid = GpuUuid(gpu);
    out.health = GpuHealth::kFailed;
    return out;
  }
  // Echoes the request with id "sub-1" and the caller as owner.
  Result<Subscription> CreateSubscription(const Caller& caller, Subscription request) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_subscription = request;
    request.id = "sub-1";
    request.owner = caller.user;
    return request;
  }
  Result<std::vector<Subscription>> ListSubscriptions(const Caller& caller) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    return subscriptions;
  }
  Result<Subscription> DeleteSubscription(const Caller& caller, const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu);
    GF_TRY(Record(caller));
    last_subscription_id = id;
    return Subscription{.id = id, .owner = caller.user, .target = "http://h/x"};
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
  LogChunk log_chunk;
  std::vector<Event> events;
  Explanation explanation;
  std::vector<Node> nodes;
  std::vector<GpuStatus> gpus;
  ClusterStats stats;
  QuotaReport quota;
  Report report;
  std::vector<GpuMinute> gpu_minutes;  // GpuHistory answers from these
  std::optional<JobId> history_next;   // JobHistory's cursor
  std::vector<JobId> queue_order;      // QueueOrder's answer
  IssuedToken issued;
  std::vector<Subscription> subscriptions;
  // Recorded.
  std::optional<Subscription> last_subscription;
  std::optional<std::string> last_subscription_id;
  std::optional<TokenRequest> last_token_request;
  std::optional<ReportRequest> last_report_request;
  int calls = 0;
  std::optional<Caller> last_caller;
  std::optional<JobSpec> last_spec;
  std::optional<ArrayRequest> last_array;
  std::vector<JobSpec> last_batch;  // SubmitBatch
  std::optional<JobFilter> last_filter;
  std::optional<HistoryFilter> last_history_filter;
  std::optional<JobId> last_id;
  std::optional<LogRequest> last_log_request;
  std::optional<TerminalInput> last_terminal_input;
  std::optional<JobSelector> last_selector;
  std::optional<JobUpdate> last_update;
  std::optional<int> last_signal;

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
