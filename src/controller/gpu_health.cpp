// The Controller's answer to GPU health (issue #8): fail-over when a GPU fails, and an
// operator's return of a GPU to service. A part of controller.cpp's class, kept apart so that
// file stays about jobs. Placement keeps new work off GPUs that are not ok (model/node.h
// TakesWork); this file deals with the work already on a GPU when it fails.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "controller/controller.h"
#include "core/duration.h"

namespace gf {
namespace {

// "GPU 3 (GPU-1234...) on n1".
std::string GpuName(int index, const GpuUuid& uuid, const NodeId& node) {
  return "GPU " + std::to_string(index) + " (" + uuid.value() + ") on " + node.value();
}

bool Uses(const Job& job, const NodeId& node, const GpuUuid& uuid) {
  return job.allocation && job.allocation->node == node &&
         std::find(job.allocation->gpus.begin(), job.allocation->gpus.end(), uuid) !=
             job.allocation->gpus.end();
}

// The GPU `ref` names on the node: its index ("3") or its UUID.
Gpu* FindGpu(Node& node, const std::string& ref) {
  const bool is_index =
      !ref.empty() && ref.size() <= 4 &&
      std::all_of(ref.begin(), ref.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  for (Gpu& gpu : node.gpus) {
    if (is_index ? std::to_string(gpu.index) == ref : gpu.uuid.value() == ref) {
      return &gpu;
    }
  }
  return nullptr;
}

}  // namespace

// Slurm drains a node on a GPU error and leaves its jobs to die; DCGM only reports. Here the
// card takes no new work (TakesWork) and each job on it is moved: stopped, then requeued at
// its place (or ended FAILED if it must not run twice). While the GPU still answers the job
// first gets its checkpoint signal, so that a three-day run loses only what followed its last
// checkpoint; a GPU that fell off the bus cannot serve a save, so the job is just stopped.
void Controller::FailOverGpu(const NodeId& node, const HealthChange& change) {
  const std::string gpu = GpuName(change.index, change.uuid, node);
  const std::string cause = gpu + " failed: " + change.cause;
  Notification notice{.kind = NotifyKind::kGpuFailed,
                      .time = clock_.Now(),
                      .node = node.value(),
                      .subject = gpu + " failed",
                      .message = change.cause};
  bool held = false;
  for (const JobId id : std::vector<JobId>(holding_.begin(), holding_.end())) {
    Job& job = active_.at(id);
    if (!Uses(job, node, change.uuid)) {
      continue;
    }
    held = true;
    NotifyJob(job, NotifyKind::kGpuFailed, notice.subject,
              change.cause + "; job " + std::to_string(id.value()) +
                  (job.spec.requeue ? " is requeued" : " ends FAILED (--no-requeue)"));
    if (terminating_.contains(id)) {
      continue;  // already stopping (cancel, time limit, preemption): it ends as meant
    }
    const int signal = change.lost ? kSigTerm : job.spec.checkpoint_signal;
    Record(id, "gpu_failover", "controller",
           cause + ": sending SIG" + CheckpointSignalName(signal) +
               (change.lost ? " (the GPU does not answer: no checkpoint)" : " to checkpoint") +
               ", " + AfterStopText(job, JobState::kFailed));
    job.reason = cause;
    StopToRequeue(job, JobState::kNodeFail, "GPU failure", cause, signal);
  }
  if (!held) {
    Notify(std::move(notice));
  }
}

Result<Gpu> Controller::ResumeGpu(const Caller& caller, const NodeId& node,
                                  const std::string& gpu) {
  if (!caller.IsOperator()) {
    return PermissionDenied("gpu resume: only an operator or admin (or root) may resume GPUs");
  }
  return Call<Gpu>([this, caller, node, gpu]() -> Result<Gpu> {
    auto it = nodes_.find(node);
    if (it == nodes_.end()) {
      return NotFound("node " + node.value() + " not found (gpufleet nodes lists them)");
    }
    NodeEntry& entry = it->second;
    Gpu* found = FindGpu(entry.node, gpu);
    if (found == nullptr) {
      return NotFound("GPU " + gpu + " not found on " + node.value() +
                      "; name it by index or UUID (gpufleet gpus lists them)");
    }
    const std::string name = GpuName(found->index, found->uuid, node);
    if (found->health == GpuHealth::kOk) {
      return FailedPrecondition(name + " is ok: there is nothing to resume");
    }
    if (entry.agent == nullptr || !entry.connected) {
      return Unavailable("the agent of " + node.value() +
                         " is not connected; resume the GPU once the node is back up");
    }
    Record(std::nullopt, "gpu_health", caller.user,
           "resume " + name + " (was " + std::string(ToString(found->health)) + ": " +
               found->health_cause + "): its health is judged afresh from its next sample");
    after_commit_.emplace_back(
        [agent = entry.agent, uuid = found->uuid] { agent->ResetGpuHealth(uuid); });
    return *found;
  });
}

}  // namespace gf
