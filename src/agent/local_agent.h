// LocalAgent: the node agent of this machine, wired in-process to the controller by
// `gpufleet up` through the same NodeAgent/AgentReports interfaces a remote agent uses.
//
// It owns one thread. NodeAgent calls (from the controller thread) only queue work for it; the
// thread runs the Executor (launch, kill, poll for exits) and samples the GpuBackend, and
// reports back through AgentReports. The Executor and the GpuBackend are touched by this
// thread alone.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "controller/node_agent.h"
#include "core/clock.h"
#include "executor/executor.h"
#include "gpu/gpu_backend.h"

namespace gf {

struct LocalAgentOptions {
  NodeId name;
  Millis poll_interval{100};     // how often job exits are looked for
  Millis sample_interval{5000};  // how often GPUs are sampled
};

class LocalAgent final : public NodeAgent {
 public:
  LocalAgent(LocalAgentOptions options,
             GpuBackend& backend,
             Executor& executor,
             AgentReports& reports,
             const Clock& clock);
  ~LocalAgent() override;
  LocalAgent(const LocalAgent&) = delete;
  LocalAgent& operator=(const LocalAgent&) = delete;

  // Discovers the GPUs, re-attaches to jobs left running by an earlier instance, reports
  // both to the controller (OnAgentHello), then starts the agent thread.
  Status Start();
  void Stop();

  // NodeAgent
  void Launch(const Job& job) override;
  void Kill(JobId job, std::chrono::seconds grace, const std::string& cause) override;
  void AcknowledgeExit(JobId job) override;
  std::string LogPath(JobId job, bool stderr_stream) const override;

 private:
  void Enqueue(std::function<void()> work);
  void Loop();
  void DoLaunch(const Job& job);
  void PollExits();
  void SampleGpus();
  Result<Node> Inventory();

  LocalAgentOptions options_;
  GpuBackend& backend_;
  Executor& executor_;
  AgentReports& reports_;
  const Clock& clock_;
  std::vector<Gpu> gpus_;  // agent thread only, after Start

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> work_;  // GUARDED_BY(mu_)
  bool stopping_ = false;                   // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace gf
