// The agents' reports and a job's run (controller.h), on the state thread: a job started,
// exited, is stopped (cancel, preemption, time limit) and requeued or ended; a node's hello,
// heartbeat and GPU samples; a node lost with its jobs. Split from controller.cpp by topic.
#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "core/duration.h"
#include "lifecycle/admission.h"

namespace gf {

// ---- AgentReports ------------------------------------------------------------------------

void Controller::OnAgentHello(AgentHello hello) {
  // Before any sample of this agent is ingested (samples bypass the state thread).
  telemetry_->SetInventory(hello.node);
  Post([this, hello = std::move(hello)]() mutable { node_desk_.Hello(std::move(hello)); });
}

void Controller::OnJobStarted(JobId id, std::int64_t pid, Time start_time) {
  Post([this, id, pid, start_time] { node_desk_.JobStarted(id, pid, start_time); });
}

void Controller::OnJobExited(JobExitReport report) {
  Post([this, report = std::move(report)] { node_desk_.JobExited(report); });
}

void Controller::OnAgentHeartbeat(const NodeId& node) {
  Post([this, node] { node_desk_.Heard(node); });
}

void Controller::OnSamples(NodeId node, std::vector<GpuSample> samples) {
  // Telemetry is thread-safe: samples are taken here, on the agent's thread, and only what
  // the state must record (health changes, conditions, finished minutes) becomes a command.
  // Only a sample whose MIG devices differ from the GPU's previous sample (a layout applied, MIG
  // turned on) or that carries a layout's refusal goes to the state thread.
  std::vector<GpuSample> mig;
  const bool any_mig =
      std::any_of(samples.begin(), samples.end(), [](const GpuSample& s) { return s.mig_enabled; });
  if (any_mig || mig_seen_any_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(mig_seen_mu_);
    for (const GpuSample& sample : samples) {
      if (!sample.mig_enabled && !mig_seen_.contains(sample.uuid)) {
        continue;  // the usual GPU: never in MIG mode
      }
      mig_seen_any_.store(true, std::memory_order_relaxed);
      std::vector<GpuUuid> devices;
      for (const MigSample& device : sample.mig) {
        devices.push_back(device.instance.uuid);
      }
      auto& seen = mig_seen_[sample.uuid];
      if (seen != std::make_pair(sample.mig_enabled, devices) || !sample.mig_layout_error.empty()) {
        seen = {sample.mig_enabled, std::move(devices)};
        mig.push_back(sample);
      }
    }
  }
  IngestResult result = telemetry_->Ingest(node, std::move(samples));
  if (result.health.empty() && result.conditions.empty() && result.minutes.empty() && mig.empty()) {
    return;
  }
  Post([this, node = std::move(node), result = std::move(result), mig = std::move(mig)]() mutable {
    node_desk_.Ingest(node, std::move(result), mig);
  });
}

}  // namespace gf
