// GpuSelfTest: returns a failed GPU to service once an administrator's self-test command passes
// on it (issue #8), so that a card that failed for a passing reason (a one-off XID that a
// driver reload cleared) need not wait for someone to type `gpufleet gpu resume`.
//
// The agent's sampler shows it every sample (Observe). A GPU that is failed and runs no process
// is tested at most once per `interval`: `/bin/sh -c COMMAND` runs as the agent's user with
// CUDA_VISIBLE_DEVICES, GPUFLEET_GPU_UUID and GPUFLEET_GPU_INDEX naming the card, in its own
// process group, killed after `timeout`. Exit 0 calls `on_pass(uuid)` (the agent then forgets
// the failure, and the next sample judges the card afresh); anything else is logged with the
// command's last output and the card stays failed. One test runs at a time, on a thread of its
// own: a burn-in may take minutes and must not hold up sampling.
//
// Thread-safety: Observe from one thread (the sampler); the destructor stops a running test.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/clock.h"
#include "core/ids.h"
#include "core/tool_run.h"
#include "model/gpu_sample.h"

namespace gf {

struct GpuSelfTestOptions {
  std::string command;              // run by /bin/sh -c; "" = no self-test
  Millis interval{10 * 60 * 1000};  // between two tests of the same GPU
  Millis timeout{10 * 60 * 1000};   // a test running longer fails (killed)
};

// Runs `command` for the GPU as described above and waits for it (at most `timeout`). While it
// runs, `*running` holds its process group (0 otherwise), for a caller that must stop it.
ToolOutcome RunSelfTest(const std::string& command,
                        const GpuUuid& uuid,
                        int index,
                        Millis timeout,
                        std::atomic<int>* running = nullptr);

class GpuSelfTest {
 public:
  GpuSelfTest(GpuSelfTestOptions options,
              const Clock& clock,
              std::function<void(const GpuUuid&)> on_pass);
  ~GpuSelfTest();
  GpuSelfTest(const GpuSelfTest&) = delete;
  GpuSelfTest& operator=(const GpuSelfTest&) = delete;

  // The sample of the GPU with this index, its health decided: queues a test when it is due.
  void Observe(const GpuSample& sample, int index);

 private:
  struct Due {
    GpuUuid uuid;
    int index = 0;
  };
  void Loop();

  GpuSelfTestOptions options_;
  const Clock& clock_;
  std::function<void(const GpuUuid&)> on_pass_;
  std::map<GpuUuid, Time> last_queued_;  // Observe's thread only

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Due> due_;          // GUARDED_BY(mu_)
  bool stopping_ = false;        // GUARDED_BY(mu_)
  std::atomic<int> running_{0};  // the running test's process group: killed at destruction
  std::thread thread_;
};

}  // namespace gf
