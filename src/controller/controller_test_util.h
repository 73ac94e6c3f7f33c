// Test helpers shared by the controller's tests: a NodeAgent that records what the controller
// asks of its node (the test plays the agent's answers), and polling with a deadline.
// Thread-safety: FakeAgent's methods from any thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "service/node_agent.h"
#include "service/service.h"

namespace gf {

// A node of `gpus` H100-80GB GPUs, indexes 0.., UUIDs uuid_prefix + "GPU-0", ..., all ok.
inline Node TestNode(int gpus,
                     const std::string& name = "gpu01",
                     const std::string& uuid_prefix = "") {
  Node node;
  node.name = NodeId(name);
  for (int i = 0; i < gpus; ++i) {
    node.gpus.push_back(Gpu{.index = i,
                            .uuid = GpuUuid(uuid_prefix + "GPU-" + std::to_string(i)),
                            .model = "H100-80GB",
                            .memory_mib = 81920,
                            .health = GpuHealth::kOk,
                            .health_cause = ""});
  }
  node.gpu_backend = "test";
  return node;
}

// A caller authenticated as this Unix user (uid = gid), with this role: on the Unix socket for
// the role user (root there is an admin), else by an API token of that role, the only way to
// have one (authorization.h).
inline Caller TestCaller(std::uint32_t uid, std::string name, Role role = Role::kUser) {
  return Caller{.authenticated = true,
                .uid = uid,
                .gid = uid,
                .user = std::move(name),
                .role = role,
                .via_token = role != Role::kUser};
}

// A caller named by an API token of `role` acting as this Unix user.
inline Caller TokenCaller(std::uint32_t uid, std::string name, Role role) {
  Caller caller = TestCaller(uid, std::move(name), role);
  caller.via_token = true;
  return caller;
}

class FakeAgent final : public NodeAgent {
 public:
  void Launch(const Job& job) override {
    std::lock_guard lock(mu_);
    launched_.push_back(job);
  }
  void Kill(JobId job,
            std::chrono::seconds /*grace*/,
            const std::string& cause,
            int first_signal) override {
    std::lock_guard lock(mu_);
    killed_.emplace_back(job, cause);
    signals_.push_back(first_signal);
  }
  void Signal(JobId job, int sig) override {
    std::lock_guard lock(mu_);
    delivered_.emplace_back(job, sig);
  }
  void AcknowledgeExit(JobId job) override {
    std::lock_guard lock(mu_);
    acked_.push_back(job);
  }
  std::string LogPath(JobId job, bool err) const override {
    return "/logs/" + std::to_string(job.value()) + (err ? ".err" : ".out");
  }
  // Answers "<stream> of job N" (from the offset on), and records each read.
  Result<LogChunk> ReadLog(const LogRequest& request) override {
    std::lock_guard lock(mu_);
    reads_.push_back(request);
    const std::string text =
        std::string(ToString(request.stream)) + " of job " + std::to_string(request.job.value());
    const std::size_t start = std::min(static_cast<std::size_t>(request.offset), text.size());
    return LogChunk{.data = text.substr(start),
                    .size = static_cast<std::int64_t>(text.size()),
                    .next_offset = static_cast<std::int64_t>(text.size())};
  }
  // Records each message.
  Status WriteTerminal(JobId job, const TerminalInput& input) override {
    std::lock_guard lock(mu_);
    terminal_.emplace_back(job, input);
    return OkStatus();
  }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  std::vector<std::pair<JobId, TerminalInput>> terminal() {
    std::lock_guard lock(mu_);
    return terminal_;
  }
  void ResetGpuHealth(const GpuUuid& uuid) override {
    std::lock_guard lock(mu_);
    health_resets_.push_back(uuid);
  }
  void KillProcess(JobId job, std::uint32_t pid, const std::string& /*cause*/) override {
    std::lock_guard lock(mu_);
    process_kills_.emplace_back(job, pid);
  }
  void ApplyMigLayout(const GpuUuid& gpu, const std::vector<std::string>& profiles) override {
    std::lock_guard lock(mu_);
    mig_layouts_.emplace_back(gpu, profiles);
  }
  void KeepGpusReady(std::optional<int> gpus) override {
    std::lock_guard lock(mu_);
    ready_gpus_.push_back(gpus);
  }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  std::vector<std::optional<int>> ready_gpus() {
    std::lock_guard lock(mu_);
    return ready_gpus_;
  }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  std::vector<std::pair<GpuUuid, std::vector<std::string>>> mig_layouts() {
    std::lock_guard lock(mu_);
    return mig_layouts_;
  }
  std::vector<std::pair<JobId, std::uint32_t>> process_kills() {  // NOLINT: accessor
    std::lock_guard lock(mu_);
    return process_kills_;
  }
  std::vector<Job> launched() {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return launched_;
  }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  std::vector<std::pair<JobId, std::string>> killed() {
    std::lock_guard lock(mu_);
    return killed_;
  }
  std::vector<JobId> acked() {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return acked_;
  }
  std::vector<int> signals() {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return signals_;
  }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  std::vector<std::pair<JobId, int>> delivered() {
    std::lock_guard lock(mu_);
    return delivered_;
  }
  std::vector<LogRequest> reads() {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return reads_;
  }
  std::vector<GpuUuid> health_resets() {  // NOLINT(readability-identifier-naming): accessor
    std::lock_guard lock(mu_);
    return health_resets_;
  }

 private:
  std::mutex mu_;
  std::vector<Job> launched_;
  std::vector<std::pair<JobId, std::string>> killed_;
  std::vector<JobId> acked_;
  std::vector<int> signals_;                      // the first signal of each kill, in order
  std::vector<std::pair<JobId, int>> delivered_;  // Signal: what was delivered without a kill
  std::vector<LogRequest> reads_;
  std::vector<std::pair<JobId, TerminalInput>> terminal_;
  std::vector<GpuUuid> health_resets_;
  std::vector<std::pair<JobId, std::uint32_t>> process_kills_;
  std::vector<std::pair<GpuUuid, std::vector<std::string>>> mig_layouts_;
  std::vector<std::optional<int>> ready_gpus_;
};

// "kind: message" of each event of job `id` as `caller` reads them, one a line.
inline std::string EventHistory(ClusterService& service, const Caller& caller, JobId id) {
  std::string text;
  const Result<std::vector<Event>> events = service.JobEvents(caller, id);
  for (const Event& e : *events) {
    text += e.kind + ": " + e.message + "\n";
  }
  return text;
}

// Polls `pred` until it holds or 10 s pass; returns its last value. Tests wait for the
// controller's thread this way, never by sleeping a fixed time.
template <typename Pred>
bool WaitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace gf
