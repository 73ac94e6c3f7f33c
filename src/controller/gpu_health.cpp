// The Controller's answer to GPU health (issue #8): fail-over when a GPU fails, and an
// operator's return of a GPU to service. A part of controller.cpp's class, kept apart so that
// file stays about jobs. Placement keeps new work off GPUs that are not ok (model/node.h
// TakesWork); this file deals with the work already on a GPU when it fails.
#include <algorithm>
#include <string>
#include <utility>
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

}  // namespace

bool Controller::AlreadyHolds(const Node& node, const HealthChange& change) {
  return std::any_of(node.gpus.begin(), node.gpus.end(), [&](const Gpu& gpu) {
    return gpu.uuid == change.uuid && gpu.health == change.to && gpu.health_cause == change.cause;
  });
}

// Without a cgroup v2 a process that left its job's session outlives a killed shim; the agent
// kills what carries the job's tag, and what it could not kill (stuck in a driver call) may
// still hold GPU memory and compute. A new job there would start short of both.
void Controller::HoldForLeftovers(const Job& job, const JobExitReport& report) {
  if (!job.allocation) {
    return;
  }
  const NodeId& name = job.allocation->node;
  Node* node = nodes_.EditNode(name);
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
    jobs_.Record(std::nullopt,
                 "gpu_health",
                 "agent:" + name.value(),
                 GpuName(gpu.index, gpu.uuid, name) + ": ok -> degraded: " + cause);
  }
  out_.batch.nodes.push_back(*node);
  scheduling_.NeedFull();
}

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
  for (const JobId id : std::vector<JobId>(jobs_.Holding().begin(), jobs_.Holding().end())) {
    Job& job = jobs_.At(id);
    if (!Uses(job, node, change.uuid)) {
      continue;
    }
    held = true;
    out_.Notify(
        JobNotification(job,
                        NotifyKind::kGpuFailed,
                        notice.subject,
                        change.cause + "; job " + std::to_string(id.value()) +
                            (job.spec.requeue ? " is requeued" : " ends FAILED (--no-requeue)"),
                        clock_.Now()));
    if (jobs_.Stops().Stopping(id)) {
      continue;  // already stopping (cancel, time limit, preemption): it ends as meant
    }
    const int signal = change.lost ? kSigTerm : job.spec.checkpoint_signal;
    jobs_.Record(
        id,
        "gpu_failover",
        "controller",
        cause + ": sending SIG" + CheckpointSignalName(signal) +
            (change.lost ? " (the GPU does not answer: no checkpoint)" : " to checkpoint") + ", " +
            jobs_.AfterStopText(job, JobState::kFailed));
    job.reason = cause;
    jobs_.StopToRequeue(job, JobState::kNodeFail, "GPU failure", cause, signal);
  }
  if (!held) {
    out_.Notify(std::move(notice));
  }
}

Result<Gpu> Controller::ResumeGpu(const Caller& caller,
                                  const NodeId& node,
                                  const std::string& gpu) {
  GF_TRY(Authorize(caller, Resource::kGpu, Action::kResume, Ownership::kNone, "gpu resume"));
  return Call<Gpu>([this, caller, node, gpu]() -> Result<Gpu> {
    GF_ASSIGN_OR_RETURN(const Gpu* found, nodes_.FindGpu(node, gpu));
    const NodeEntry& entry = nodes_.At(node);
    const std::string name = GpuName(found->index, found->uuid, node);
    if (found->health == GpuHealth::kOk) {
      return FailedPrecondition(name + " is ok: there is nothing to resume");
    }
    if (entry.agent == nullptr || !entry.connected) {
      return Unavailable("the agent of " + node.value() +
                         " is not connected; resume the GPU once the node is back up");
    }
    jobs_.Record(std::nullopt,
                 "gpu_health",
                 caller.user,
                 "resume " + name + " (was " + std::string(ToString(found->health)) + ": " +
                     found->health_cause + "): its health is judged afresh from its next sample");
    out_.After([agent = entry.agent, uuid = found->uuid] { agent->ResetGpuHealth(uuid); });
    return *found;
  });
}

// ---- Sharing modes (issue #7): `gpufleet gpu mode NODE GPU MODE` ----

namespace {

// "3g.40gb,2g.20gb,1g.10gb,1g.10gb", or "none".
std::string LayoutText(const std::vector<std::string>& profiles) {
  std::string text;
  for (const std::string& p : profiles) {
    text += (text.empty() ? "" : ",") + p;
  }
  return text.empty() ? "none" : text;
}

// The jobs holding the GPU now, "12, 14".
std::string HolderList(const std::map<JobId, Job>& active,
                       const std::set<JobId>& holding,
                       const NodeId& node,
                       const GpuUuid& uuid) {
  std::string list;
  for (const JobId id : holding) {
    if (Uses(active.at(id), node, uuid)) {
      list += (list.empty() ? "" : ", ") + std::to_string(id.value());
    }
  }
  return list;
}

}  // namespace

Result<Gpu> Controller::SetGpuMode(const Caller& caller,
                                   const NodeId& node,
                                   const std::string& gpu,
                                   const std::string& mode) {
  GF_TRY(Authorize(caller, Resource::kGpu, Action::kConfigure, Ownership::kNone, "gpu mode"));
  GF_ASSIGN_OR_RETURN(const SharingMode wanted, ParseSharingMode(mode));
  return Call<Gpu>([this, caller, node, gpu, wanted]() -> Result<Gpu> {
    GF_ASSIGN_OR_RETURN(Gpu * found, nodes_.FindGpu(node, gpu));
    const NodeEntry& entry = nodes_.At(node);
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
        jobs_.Record(std::nullopt,
                     "gpu_mode",
                     caller.user,
                     name + " stays " + from + ": the waiting change was called off");
      } else {
        return *found;  // already so: nothing to do
      }
    } else if (const std::string holders =
                   HolderList(jobs_.Active(), jobs_.Holding(), node, found->uuid);
               !holders.empty()) {
      // A job holds it whole, or shares it under the old rules: the change waits until the
      // GPU is empty, and until then the GPU takes no new work (TakesWholeJobs/TakesFractions).
      found->sharing_next = wanted;
      nodes_.NoteModeWaiting();
      jobs_.Record(std::nullopt,
                   "gpu_mode",
                   caller.user,
                   name + " goes from " + from + " to " + std::string(ToString(wanted)) +
                       " once job(s) " + holders + " end; it takes no new work until then");
    } else {
      found->sharing = wanted;
      found->sharing_next.reset();
      jobs_.Record(std::nullopt,
                   "gpu_mode",
                   caller.user,
                   name + " is now " + std::string(ToString(wanted)) + " (was " + from + ")");
    }
    const Gpu answer = *found;
    out_.batch.nodes.push_back(entry.node);
    telemetry_->SetInventory(entry.node);
    scheduling_.NeedFull();
    return answer;
  });
}

void Controller::ApplyWaitingModes() {
  NodeRegistry::WaitingModes waiting =
      nodes_.ApplyWaitingModes([this](const NodeId& node, const GpuUuid& uuid) {
        return !HolderList(jobs_.Active(), jobs_.Holding(), node, uuid).empty();
      });
  for (NodeRegistry::MigLayoutSend& send : waiting.layouts) {
    out_.After([agent = send.agent, uuid = send.uuid, profiles = std::move(send.profiles)] {
      agent->ApplyMigLayout(uuid, profiles);
    });
  }
  for (const NodeRegistry::ModeApplied& applied : waiting.applied) {
    jobs_.Record(std::nullopt,
                 "gpu_mode",
                 "controller",
                 GpuName(applied.index, applied.uuid, applied.node) + " is now " +
                     std::string(ToString(applied.to)) + " (was " +
                     std::string(ToString(applied.from)) + "): its last job ended");
  }
  for (Node& node : waiting.changed) {
    telemetry_->SetInventory(node);
    out_.batch.nodes.push_back(std::move(node));
    scheduling_.NeedFull();
  }
}

Result<Gpu> Controller::SetMigLayout(const Caller& caller,
                                     const NodeId& node,
                                     const std::string& gpu,
                                     const std::string& layout) {
  GF_TRY(Authorize(caller, Resource::kGpu, Action::kConfigure, Ownership::kNone, "gpu mig-layout"));
  GF_ASSIGN_OR_RETURN(std::vector<std::string> profiles, ParseMigLayout(layout, "layout"));
  return Call<Gpu>([this, caller, node, gpu, profiles = std::move(profiles)]() -> Result<Gpu> {
    GF_ASSIGN_OR_RETURN(Gpu * found, nodes_.FindGpu(node, gpu));
    const NodeEntry& entry = nodes_.At(node);
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
    nodes_.ForgetMigLayoutSent(found->uuid);
    nodes_.NoteModeWaiting();
    const std::string holders = HolderList(jobs_.Active(), jobs_.Holding(), node, found->uuid);
    jobs_.Record(std::nullopt,
                 "gpu_mig_layout",
                 caller.user,
                 name + " gets MIG layout " + LayoutText(profiles) +
                     (holders.empty() ? ": applying it now"
                                      : " once job(s) " + holders +
                                            " end; it takes no new MIG job until then"));
    const Gpu answer = *found;
    out_.batch.nodes.push_back(entry.node);
    telemetry_->SetInventory(entry.node);
    scheduling_.NeedFull();
    return answer;
  });
}

void Controller::ApplyMigSamples(const NodeId& node, const std::vector<GpuSample>& samples) {
  Node* known = nodes_.EditNode(node);
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
      jobs_.Record(std::nullopt,
                   "gpu_mig_layout",
                   "agent:" + node.value(),
                   name + ": MIG layout " + LayoutText(*gpu->mig_layout_next) +
                       " was not applied: " + sample.mig_layout_error);
      gpu->mig_layout_next.reset();
      nodes_.ForgetMigLayoutSent(gpu->uuid);
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
      nodes_.ForgetMigLayoutSent(gpu->uuid);
    }
    jobs_.Record(std::nullopt,
                 "gpu_mig_layout",
                 "agent:" + node.value(),
                 name + " now has MIG devices " + LayoutText(now));
  }
  if (changed) {
    out_.batch.nodes.push_back(*known);
    telemetry_->SetInventory(*known);
    scheduling_.NeedFull();
  }
}

// Programs may size themselves by these (a framework's memory fraction); the controller holds
// the job to its memory whatever it does. Under MPS the daemon enforces both limits itself:
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE caps the SMs its kernels may use and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT its memory on device 0 (its one visible GPU).
void Controller::AddShareEnvironment(Job& launched, const Node& node) {
  const Allocation& a = *launched.allocation;
  auto& env = launched.spec.env;
  env.emplace_back("GPUFLEET_GPU_SHARE", GpuAmountText(a.gpu_milli));
  env.emplace_back("GPUFLEET_GPU_MEMORY_LIMIT_MIB", std::to_string(a.gpu_memory_mib));
  const auto gpu = std::find_if(node.gpus.begin(), node.gpus.end(), [&](const Gpu& g) {
    return !a.gpus.empty() && g.uuid == a.gpus.front();
  });
  if (gpu != node.gpus.end() && gpu->sharing == SharingMode::kMps) {
    constexpr int kMilliPerPercent = kWholeGpuMilli / 100;
    env.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                     std::to_string((a.gpu_milli + kMilliPerPercent - 1) / kMilliPerPercent));
    env.emplace_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
                     "0=" + std::to_string(a.gpu_memory_mib) + "M");
  }
}

void Controller::OnMemoryBreach(const Job& job, const ConditionChange& change) {
  if (!HoldsGpus(job)) {
    return;
  }
  NodeAgent* agent = nodes_.AgentFor(job);
  BreachResponse response = breaches_.OnBreach(job, change, agent != nullptr, clock_.Now());
  jobs_.Record(job.id, "memory_breach", "controller", response.event);
  if (response.kill) {
    out_.After([agent, id = job.id, pid = *change.pid, cause = change.message] {
      agent->KillProcess(id, pid, cause);
    });
  }
  out_.Notify(JobNotification(job,
                              NotifyKind::kMemoryBreach,
                              std::move(response.notify_subject),
                              std::move(response.notify_message),
                              clock_.Now()));
}

void Controller::EnforceMemoryLimits() {
  if (breaches_.Empty()) {
    return;
  }
  const std::vector<BreachStop> stops = breaches_.Overdue(clock_.Now(), [this](JobId id) {
    const auto job = jobs_.Active().find(id);
    if (job == jobs_.Active().end() || !HoldsGpus(job->second)) {
      return BreachWatched::kGone;
    }
    return jobs_.Stops().Stopping(id) ? BreachWatched::kStopping : BreachWatched::kHolding;
  });
  for (const BreachStop& stop : stops) {
    jobs_.Record(stop.job, "memory_breach", "controller", stop.cause);
    jobs_.RequestKill(jobs_.At(stop.job), JobState::kFailed, stop.cause, kSigTerm);
  }
}

}  // namespace gf
