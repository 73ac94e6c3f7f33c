#include "agent/gpu_self_test.h"

#include <chrono>
#include <utility>

#include <signal.h>
#include <spdlog/spdlog.h>

#include "core/duration.h"
#include "core/result.h"

namespace gf {

ToolOutcome RunSelfTest(const std::string& command,
                        const GpuUuid& uuid,
                        int index,
                        Millis timeout,
                        std::atomic<int>* running) {
  // The command finds its card like a job does.
  return RunTool(ToolRun{.command = command,
                         .env = {{"CUDA_VISIBLE_DEVICES", uuid.value()},
                                 {"GPUFLEET_GPU_UUID", uuid.value()},
                                 {"GPUFLEET_GPU_INDEX", std::to_string(index)}},
                         .input = "",
                         .timeout = timeout},
                 running);
}

GpuSelfTest::GpuSelfTest(GpuSelfTestOptions options,
                         const Clock& clock,
                         std::function<void(const GpuUuid&)> on_pass)
    : options_(std::move(options)), clock_(clock), on_pass_(std::move(on_pass)) {
  thread_ = std::thread([this] { Loop(); });
}

GpuSelfTest::~GpuSelfTest() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    due_.clear();
  }
  cv_.notify_all();
  if (const int group = running_.load(); group > 0) {
    ::kill(-group, SIGKILL);  // the agent is stopping: a test in progress is abandoned
  }
  thread_.join();
}

void GpuSelfTest::Observe(const GpuSample& sample, int index) {
  if (options_.command.empty() || sample.health != GpuHealth::kFailed ||
      !sample.processes.empty()) {
    return;
  }
  const Time now = clock_.Now();
  auto last = last_queued_.find(sample.uuid);
  if (last != last_queued_.end() && now - last->second < options_.interval) {
    return;
  }
  last_queued_[sample.uuid] = now;
  {
    std::lock_guard lock(mu_);
    due_.push_back(Due{.uuid = sample.uuid, .index = index});
  }
  cv_.notify_one();
}

void GpuSelfTest::Loop() {
  while (true) {
    Due next;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !due_.empty(); });
      if (stopping_) {
        return;
      }
      next = due_.front();
      due_.pop_front();
    }
    spdlog::info("agent: self-test of failed GPU {} ({}): running {}",
                 next.index,
                 next.uuid.value(),
                 options_.command);
    const ToolOutcome outcome =
        RunSelfTest(options_.command, next.uuid, next.index, options_.timeout, &running_);
    if (outcome.passed) {
      spdlog::info("agent: self-test of GPU {} ({}) passed: its health is judged afresh",
                   next.index,
                   next.uuid.value());
      on_pass_(next.uuid);
    } else {
      spdlog::warn("agent: self-test of GPU {} ({}) failed ({}); it stays failed. Output: {}",
                   next.index,
                   next.uuid.value(),
                   outcome.detail,
                   outcome.output);
    }
  }
}

}  // namespace gf
