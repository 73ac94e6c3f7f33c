// GpuCare (gpu_care.h): GPU health and fail-over, leftovers, an operator's resume, sharing modes
// and MIG layouts, memory breaches of fractional jobs.
#include "controller/gpu_care.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "controller/notification_router.h"
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

// True when the node's GPU already has the health and cause `change` brings (a change the
// controller made itself): nothing to apply or record.
bool AlreadyHolds(const Node& node, const HealthChange& change) {
  return std::any_of(node.gpus.begin(), node.gpus.end(), [&](const Gpu& gpu) {
    return gpu.uuid == change.uuid && gpu.health == change.to && gpu.health_cause == change.cause;
  });
}

// "3g.40gb,2g.20gb,1g.10gb,1g.10gb", or "none".
std::string LayoutText(const std::vector<std::string>& profiles) {
  std::string text;
  for (const std::string& p : profiles) {
    text += (text.empty() ? "" : ",") + p;
  }
  return text.empty() ? "none" : text;
}

}  // namespace

std::vector<GpuSample> MigChangeFilter::Changed(const std::vector<GpuSample>& samples) {
  std::vector<GpuSample> changed;
  const bool any_mig =
      std::any_of(samples.begin(), samples.end(), [](const GpuSample& s) { return s.mig_enabled; });
  if (!any_mig && !any_.load(std::memory_order_relaxed)) {
    return changed;
  }
  std::lock_guard lock(mu_);
  for (const GpuSample& sample : samples) {
    if (!sample.mig_enabled && !seen_.contains(sample.uuid)) {
      continue;  // the usual GPU: never in MIG mode
    }
    any_.store(true, std::memory_order_relaxed);
    std::vector<GpuUuid> devices;
    for (const MigSample& device : sample.mig) {
      devices.push_back(device.instance.uuid);
    }
    auto& seen = seen_[sample.uuid];
    if (seen != std::make_pair(sample.mig_enabled, devices) || !sample.mig_layout_error.empty()) {
      seen = {sample.mig_enabled, std::move(devices)};
      changed.push_back(sample);
    }
  }
  return changed;
}

GpuCare::GpuCare(const SharingConfig& sharing, GpuCareParts parts)
    : p_(parts), breaches_(sharing) {}

std::string GpuCare::Holders(const NodeId& node, const GpuUuid& uuid) const {
  std::string list;
  for (const JobId id : p_.jobs.Holding()) {
    if (Uses(p_.jobs.At(id), node, uuid)) {
      list += (list.empty() ? "" : ", ") + std::to_string(id.value());
    }
  }
  return list;
}

void GpuCare::Changed(const Node& node) {
  p_.out.batch.nodes.push_back(node);
  p_.telemetry.SetInventory(node);
  p_.scheduling.NeedFull();
}

void GpuCare::ApplyHealth(const NodeId& node, const std::vector<HealthChange>& changes) {
  const std::string actor = "agent:" + node.value();
  Node* known = p_.nodes.EditNode(node);
  for (const HealthChange& change : changes) {
    if (known != nullptr && AlreadyHolds(*known, change)) {
      continue;  // the controller made this change itself (HoldForLeftovers)
    }
    if (known != nullptr) {
      for (Gpu& gpu : known->gpus) {
        if (gpu.uuid == change.uuid) {
          gpu.health = change.to;
          gpu.health_cause = change.cause;
        }
      }
      p_.out.batch.nodes.push_back(*known);
    }
    std::string message = GpuName(change.index, change.uuid, node) + ": " +
                          std::string(ToString(change.from)) + " -> " +
                          std::string(ToString(change.to));
    if (!change.cause.empty()) {
      message += ": " + change.cause;
    }
    p_.jobs.Record(std::nullopt, "gpu_health", actor, message);
    p_.scheduling.NeedFull();  // a failed GPU takes no work; a recovered one does again
    if (change.to == GpuHealth::kFailed && change.from != GpuHealth::kFailed) {
      FailOver(node, change);
    }
  }
}

void GpuCare::ApplyConditions(const NodeId& node, const std::vector<ConditionChange>& changes) {
  const std::string actor = "agent:" + node.value();
  for (const ConditionChange& change : changes) {
    // Only a job this controller still knows may be named: events reference their job.
    const Job* job = change.job ? p_.jobs.Find(*change.job) : nullptr;
    p_.jobs.Record(job != nullptr ? change.job : std::nullopt,
                   change.active ? "gpu_condition" : "gpu_condition_cleared",
                   actor,
                   change.message);
    if (job != nullptr && change.kind == kGpuMemoryOverLimit) {
      if (change.active) {
        OnMemoryBreach(*job, change);
      } else {
        breaches_.OnCleared(job->id);
      }
    }
  }
}

// Without a cgroup v2 a process that left its job's session outlives a killed shim; the agent
// kills what carries the job's tag, and what it could not kill (stuck in a driver call) may
// still hold GPU memory and compute. A new job there would start short of both.
void GpuCare::HoldForLeftovers(const Job& job, const JobExitReport& report) {
  if (!job.allocation) {
    return;
  }
  const NodeId& name = job.allocation->node;
  Node* node = p_.nodes.EditNode(name);
  if (node == nullptr) {
    return;
  }
  const std::string cause = LeftoverHoldCause(job.id, report.leftover_pids);
  for (Gpu& gpu : node->gpus) {
    const bool held =
        std::find(job.allocation->gpus.begin(), job.allocation->gpus.end(), gpu.uuid) !=
        job.allocation->gpus.end();
    if (!held || gpu.health != GpuHealth::kOk) {
      continue;  // a GPU already out of service stays as it is
    }
    gpu.health = GpuHealth::kDegraded;
    gpu.health_cause = cause;
    p_.jobs.Record(std::nullopt,
                   "gpu_health",
                   "agent:" + name.value(),
                   GpuName(gpu.index, gpu.uuid, name) + ": ok -> degraded: " + cause);
  }
  p_.out.batch.nodes.push_back(*node);
  p_.scheduling.NeedFull();
}

// Slurm drains a node on a GPU error and leaves its jobs to die; DCGM only reports. Here the
// card takes no new work (TakesWork) and each job on it is moved: stopped, then requeued at
// its place (or ended FAILED if it must not run twice). While the GPU still answers the job
// first gets its checkpoint signal, so that a three-day run loses only what followed its last
// checkpoint; a GPU that fell off the bus cannot serve a save, so the job is just stopped.
void GpuCare::FailOver(const NodeId& node, const HealthChange& change) {
  const std::string gpu = GpuName(change.index, change.uuid, node);
  const std::string cause = gpu + " failed: " + change.cause;
  Notification notice{.kind = NotifyKind::kGpuFailed,
                      .time = p_.clock.Now(),
                      .node = node.value(),
                      .subject = gpu + " failed",
                      .message = change.cause};
  bool held = false;
  for (const JobId id : std::vector<JobId>(p_.jobs.Holding().begin(), p_.jobs.Holding().end())) {
    Job& job = p_.jobs.At(id);
    if (!Uses(job, node, change.uuid)) {
      continue;
    }
    held = true;
    p_.out.Notify(
        JobNotification(job,
                        NotifyKind::kGpuFailed,
                        notice.subject,
                        change.cause + "; job " + std::to_string(id.value()) +
                            (job.spec.requeue ? " is requeued" : " ends FAILED (--no-requeue)"),
                        p_.clock.Now()));
    if (p_.jobs.Stops().Stopping(id)) {
      continue;  // already stopping (cancel, time limit, preemption): it ends as meant
    }
    const int signal = change.lost ? kSigTerm : job.spec.checkpoint_signal;
    p_.jobs.Record(
        id,
        "gpu_failover",
        "controller",
        cause + ": sending SIG" + CheckpointSignalName(signal) +
            (change.lost ? " (the GPU does not answer: no checkpoint)" : " to checkpoint") + ", " +
            p_.jobs.AfterStopText(job, JobState::kFailed));
    job.reason = cause;
    p_.jobs.StopToRequeue(job, JobState::kNodeFail, "GPU failure", cause, signal);
  }
  if (!held) {
    p_.out.Notify(std::move(notice));
  }
  if (p_.slurm != nullptr) {
    p_.jobs.Record(
        std::nullopt, "node", "controller", "draining " + node.value() + " in Slurm: " + cause);
    p_.out.After(
        [slurm = p_.slurm, node, cause] { slurm->DrainNode(node.value(), "gpufleet: " + cause); });
  }
}

Result<Gpu> GpuCare::Resume(const Caller& caller, const NodeId& node, const std::string& gpu) {
  GF_ASSIGN_OR_RETURN(const Gpu* found, p_.nodes.FindGpu(node, gpu));
  const NodeEntry& entry = p_.nodes.At(node);
  const std::string name = GpuName(found->index, found->uuid, node);
  if (found->health == GpuHealth::kOk) {
    return FailedPrecondition(name + " is ok: there is nothing to resume");
  }
  if (entry.agent == nullptr || !entry.connected) {
    return Unavailable("the agent of " + node.value() +
                       " is not connected; resume the GPU once the node is back up");
  }
  p_.jobs.Record(std::nullopt,
                 "gpu_health",
                 caller.user,
                 "resume " + name + " (was " + std::string(ToString(found->health)) + ": " +
                     found->health_cause + "): its health is judged afresh from its next sample");
  p_.out.After([agent = entry.agent, uuid = found->uuid] { agent->ResetGpuHealth(uuid); });
  const bool others_failed =
      std::any_of(entry.node.gpus.begin(), entry.node.gpus.end(), [&](const Gpu& g) {
        return g.uuid != found->uuid && g.health == GpuHealth::kFailed;
      });
  if (p_.slurm != nullptr && !others_failed) {
    // Its node was drained in Slurm for it (FailOver); should the GPU fail again, its next
    // sample drains it again.
    p_.jobs.Record(std::nullopt, "node", caller.user, "resuming " + node.value() + " in Slurm");
    p_.out.After([slurm = p_.slurm, node] { slurm->ResumeNode(node.value()); });
  }
  return *found;
}

// ---- Sharing modes (issue #7): `gpufleet gpu mode NODE GPU MODE` ----

Result<Gpu> GpuCare::SetMode(const Caller& caller,
                             const NodeId& node,
                             const std::string& gpu,
                             SharingMode wanted) {
  GF_ASSIGN_OR_RETURN(Gpu * found, p_.nodes.FindGpu(node, gpu));
  const NodeEntry& entry = p_.nodes.At(node);
  const std::string name = GpuName(found->index, found->uuid, node);
  // MIG mode is the hardware's (FollowMigMode): gpufleet does not turn it on or off.
  const std::string index = std::to_string(found->index);
  if (wanted == SharingMode::kMig && !found->mig_enabled) {
    return FailedPrecondition("mode: " + name +
                              " has MIG mode off; turn it on with `nvidia-smi -i " + index +
                              " -mig 1` (the GPU idle; some cards need a reset) and "
                              "the GPU is in mig mode from its agent's next report");
  }
  if (wanted != SharingMode::kMig && found->mig_enabled) {
    return FailedPrecondition("mode: " + name +
                              " has MIG mode on, so it runs work only on its "
                              "MIG devices; turn MIG off with `nvidia-smi -i " +
                              index + " -mig 0` first");
  }
  const std::string from(ToString(found->sharing));
  if (found->sharing == wanted) {
    if (found->sharing_next.has_value()) {
      found->sharing_next.reset();
      p_.jobs.Record(std::nullopt,
                     "gpu_mode",
                     caller.user,
                     name + " stays " + from + ": the waiting change was called off");
    } else {
      return *found;  // already so: nothing to do
    }
  } else if (const std::string holders = Holders(node, found->uuid); !holders.empty()) {
    // A job holds it whole, or shares it under the old rules: the change waits until the
    // GPU is empty, and until then the GPU takes no new work (TakesWholeJobs/TakesFractions).
    found->sharing_next = wanted;
    p_.nodes.NoteModeWaiting();
    p_.jobs.Record(std::nullopt,
                   "gpu_mode",
                   caller.user,
                   name + " goes from " + from + " to " + std::string(ToString(wanted)) +
                       " once job(s) " + holders + " end; it takes no new work until then");
  } else {
    found->sharing = wanted;
    found->sharing_next.reset();
    p_.jobs.Record(std::nullopt,
                   "gpu_mode",
                   caller.user,
                   name + " is now " + std::string(ToString(wanted)) + " (was " + from + ")");
  }
  const Gpu answer = *found;
  Changed(entry.node);
  return answer;
}

void GpuCare::ApplyWaitingModes() {
  NodeRegistry::WaitingModes waiting = p_.nodes.ApplyWaitingModes(
      [this](const NodeId& node, const GpuUuid& uuid) { return !Holders(node, uuid).empty(); });
  for (NodeRegistry::MigLayoutSend& send : waiting.layouts) {
    p_.out.After([agent = send.agent, uuid = send.uuid, profiles = std::move(send.profiles)] {
      agent->ApplyMigLayout(uuid, profiles);
    });
  }
  for (const NodeRegistry::ModeApplied& applied : waiting.applied) {
    p_.jobs.Record(std::nullopt,
                   "gpu_mode",
                   "controller",
                   GpuName(applied.index, applied.uuid, applied.node) + " is now " +
                       std::string(ToString(applied.to)) + " (was " +
                       std::string(ToString(applied.from)) + "): its last job ended");
  }
  for (const Node& node : waiting.changed) {
    Changed(node);
  }
}

Result<Gpu> GpuCare::SetMigLayout(const Caller& caller,
                                  const NodeId& node,
                                  const std::string& gpu,
                                  const std::vector<std::string>& profiles) {
  GF_ASSIGN_OR_RETURN(Gpu * found, p_.nodes.FindGpu(node, gpu));
  const NodeEntry& entry = p_.nodes.At(node);
  const std::string name = GpuName(found->index, found->uuid, node);
  if (!found->mig_enabled) {
    return FailedPrecondition("layout: " + name +
                              " has MIG mode off; turn it on with "
                              "`nvidia-smi -i " +
                              std::to_string(found->index) + " -mig 1` first");
  }
  // The agent checks again with what the driver offers (at most so many of a profile).
  std::vector<MigProfile> offered;
  for (const std::string& p : found->mig_profiles) {
    offered.push_back(MigProfile{.name = p, .slices = MigProfileSlices(p)});
  }
  GF_TRY(PlanMigLayout(offered, "layout: " + name, profiles));
  found->mig_layout_next = profiles;
  p_.nodes.ForgetMigLayoutSent(found->uuid);
  p_.nodes.NoteModeWaiting();
  const std::string holders = Holders(node, found->uuid);
  p_.jobs.Record(std::nullopt,
                 "gpu_mig_layout",
                 caller.user,
                 name + " gets MIG layout " + LayoutText(profiles) +
                     (holders.empty() ? ": applying it now"
                                      : " once job(s) " + holders +
                                            " end; it takes no new MIG job until then"));
  const Gpu answer = *found;
  Changed(entry.node);
  return answer;
}

void GpuCare::ApplyMigSamples(const NodeId& node, const std::vector<GpuSample>& samples) {
  Node* known = p_.nodes.EditNode(node);
  if (known == nullptr) {
    return;
  }
  bool changed = false;
  for (const GpuSample& sample : samples) {
    const auto gpu = std::find_if(known->gpus.begin(), known->gpus.end(), [&](const Gpu& g) {
      return g.uuid == sample.uuid;
    });
    if (gpu == known->gpus.end()) {
      continue;
    }
    const std::string name = GpuName(gpu->index, gpu->uuid, node);
    if (!sample.mig_layout_error.empty() && gpu->mig_layout_next.has_value()) {
      p_.jobs.Record(std::nullopt,
                     "gpu_mig_layout",
                     "agent:" + node.value(),
                     name + ": MIG layout " + LayoutText(*gpu->mig_layout_next) +
                         " was not applied: " + sample.mig_layout_error);
      gpu->mig_layout_next.reset();
      p_.nodes.ForgetMigLayoutSent(gpu->uuid);
      changed = true;
    }
    std::vector<MigInstance> devices;
    for (const MigSample& device : sample.mig) {
      devices.push_back(device.instance);
    }
    if (devices == gpu->mig_instances && sample.mig_enabled == gpu->mig_enabled) {
      continue;
    }
    gpu->mig_enabled = sample.mig_enabled;
    gpu->mig_instances = std::move(devices);
    FollowMigMode(*gpu);
    changed = true;
    std::vector<std::string> now;
    for (const MigInstance& device : gpu->mig_instances) {
      now.push_back(device.profile);
    }
    std::vector<std::string> wanted = gpu->mig_layout_next.value_or(std::vector<std::string>{});
    std::sort(now.begin(), now.end());
    std::sort(wanted.begin(), wanted.end());
    if (gpu->mig_layout_next.has_value() && now == wanted) {
      gpu->mig_layout_next.reset();
      p_.nodes.ForgetMigLayoutSent(gpu->uuid);
    }
    p_.jobs.Record(std::nullopt,
                   "gpu_mig_layout",
                   "agent:" + node.value(),
                   name + " now has MIG devices " + LayoutText(now));
  }
  if (changed) {
    Changed(*known);
  }
}

void GpuCare::OnMemoryBreach(const Job& job, const ConditionChange& change) {
  if (!HoldsGpus(job)) {
    return;
  }
  NodeAgent* agent = p_.nodes.AgentFor(job);
  BreachResponse response = breaches_.OnBreach(job, change, agent != nullptr, p_.clock.Now());
  p_.jobs.Record(job.id, "memory_breach", "controller", response.event);
  if (response.kill) {
    p_.out.After([agent, id = job.id, pid = *change.pid, cause = change.message] {
      agent->KillProcess(id, pid, cause);
    });
  }
  p_.out.Notify(JobNotification(job,
                                NotifyKind::kMemoryBreach,
                                std::move(response.notify_subject),
                                std::move(response.notify_message),
                                p_.clock.Now()));
}

void GpuCare::EnforceMemoryLimits() {
  if (breaches_.Empty()) {
    return;
  }
  const std::vector<BreachStop> stops = breaches_.Overdue(p_.clock.Now(), [this](JobId id) {
    const auto job = p_.jobs.Active().find(id);
    if (job == p_.jobs.Active().end() || !HoldsGpus(job->second)) {
      return BreachWatched::kGone;
    }
    return p_.jobs.Stops().Stopping(id) ? BreachWatched::kStopping : BreachWatched::kHolding;
  });
  for (const BreachStop& stop : stops) {
    p_.jobs.Record(stop.job, "memory_breach", "controller", stop.cause);
    p_.jobs.RequestKill(p_.jobs.At(stop.job), JobState::kFailed, stop.cause, kSigTerm);
  }
}

}  // namespace gf
