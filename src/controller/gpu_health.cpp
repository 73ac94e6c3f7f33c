// The Controller's answer to GPU health (issue #8): fail-over when a GPU fails, and an
// operator's return of a GPU to service. A part of controller.cpp's class, kept apart so that
// file stays about jobs. Placement keeps new work off GPUs that are not ok (model/node.h
// TakesWork); this file deals with the work already on a GPU when it fails.
#include <algorithm>
#include <cctype>
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

// The node's entry in `nodes` (the controller's) and the GPU `ref` names on it. A template only
// so that it can take the controller's private entry type. Errors: kNotFound naming the node or
// the GPU and where to find the names.
template <typename Nodes>
Result<std::pair<typename Nodes::mapped_type*, Gpu*>> FindNodeGpu(Nodes& nodes,
                                                                  const NodeId& node,
                                                                  const std::string& ref) {
  auto it = nodes.find(node);
  if (it == nodes.end()) {
    return NotFound("node " + node.value() + " not found (gpufleet nodes lists them)");
  }
  Gpu* found = FindGpu(it->second.node, ref);
  if (found == nullptr) {
    return NotFound("GPU " + ref + " not found on " + node.value() +
                    "; name it by index or UUID (gpufleet gpus lists them)");
  }
  return std::make_pair(&it->second, found);
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
    GF_ASSIGN_OR_RETURN(const auto located, FindNodeGpu(nodes_, node, gpu));
    NodeEntry& entry = *located.first;
    Gpu* found = located.second;
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

// ---- Sharing modes (issue #7): `gpufleet gpu mode NODE GPU MODE` ----

namespace {

// The jobs holding the GPU now, "12, 14".
std::string HolderList(const std::map<JobId, Job>& active, const std::set<JobId>& holding,
                       const NodeId& node, const GpuUuid& uuid) {
  std::string list;
  for (const JobId id : holding) {
    if (Uses(active.at(id), node, uuid)) {
      list += (list.empty() ? "" : ", ") + std::to_string(id.value());
    }
  }
  return list;
}

}  // namespace

Result<Gpu> Controller::SetGpuMode(const Caller& caller, const NodeId& node,
                                   const std::string& gpu, const std::string& mode) {
  if (!caller.IsAdmin()) {
    return PermissionDenied("gpu mode: only an admin (or root) may change how a GPU is shared");
  }
  GF_ASSIGN_OR_RETURN(const SharingMode wanted, ParseSharingMode(mode));
  if (wanted == SharingMode::kMig) {
    return InvalidArgument(
        "mode: mig is not supported yet (MIG placement is a later step of issue #7); use "
        "exclusive, shared or mps");
  }
  return Call<Gpu>([this, caller, node, gpu, wanted]() -> Result<Gpu> {
    GF_ASSIGN_OR_RETURN(const auto located, FindNodeGpu(nodes_, node, gpu));
    NodeEntry& entry = *located.first;
    Gpu* found = located.second;
    const std::string name = GpuName(found->index, found->uuid, node);
    const std::string from(ToString(found->sharing));
    if (found->sharing == wanted) {
      if (found->sharing_next.has_value()) {
        found->sharing_next.reset();
        Record(std::nullopt, "gpu_mode", caller.user,
               name + " stays " + from + ": the waiting change was called off");
      } else {
        return *found;  // already so: nothing to do
      }
    } else if (const std::string holders = HolderList(active_, holding_, node, found->uuid);
               !holders.empty()) {
      // A job holds it whole, or shares it under the old rules: the change waits until the
      // GPU is empty, and until then the GPU takes no new work (TakesWholeJobs/TakesFractions).
      found->sharing_next = wanted;
      Record(std::nullopt, "gpu_mode", caller.user,
             name + " goes from " + from + " to " + std::string(ToString(wanted)) +
                 " once job(s) " + holders + " end; it takes no new work until then");
    } else {
      found->sharing = wanted;
      found->sharing_next.reset();
      Record(std::nullopt, "gpu_mode", caller.user,
             name + " is now " + std::string(ToString(wanted)) + " (was " + from + ")");
    }
    const Gpu answer = *found;
    batch_.nodes.push_back(entry.node);
    telemetry_->SetInventory(entry.node);
    full_pass_needed_ = true;
    return answer;
  });
}

void Controller::ApplyWaitingModes() {
  for (auto& [name, entry] : nodes_) {
    bool changed = false;
    for (Gpu& gpu : entry.node.gpus) {
      if (!gpu.sharing_next.has_value() ||
          !HolderList(active_, holding_, name, gpu.uuid).empty()) {
        continue;
      }
      Record(std::nullopt, "gpu_mode", "controller",
             GpuName(gpu.index, gpu.uuid, name) + " is now " +
                 std::string(ToString(*gpu.sharing_next)) + " (was " +
                 std::string(ToString(gpu.sharing)) + "): its last job ended");
      gpu.sharing = *gpu.sharing_next;
      gpu.sharing_next.reset();
      changed = true;
    }
    if (changed) {
      batch_.nodes.push_back(entry.node);
      telemetry_->SetInventory(entry.node);
      full_pass_needed_ = true;
    }
  }
}

void Controller::KeepSharingModes(const Node& known, Node& reported) {
  for (Gpu& gpu : reported.gpus) {
    const auto it = std::find_if(known.gpus.begin(), known.gpus.end(),
                                 [&](const Gpu& g) { return g.uuid == gpu.uuid; });
    if (it != known.gpus.end()) {
      gpu.sharing = it->sharing;
      gpu.sharing_next = it->sharing_next;
    }
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
  NodeAgent* agent = AgentFor(job);
  const bool kill = options_.memory_breach == MemoryBreach::kKill && change.pid.has_value() &&
                    agent != nullptr;
  const std::string action =
      kill ? "killed its process " + std::to_string(*change.pid) +
                 " (gpufleet holds shared GPUs to each job's memory: [sharing] memory_breach)"
           : "warned only ([sharing] memory_breach = \"warn\"); other jobs on the GPU may run "
             "out of memory";
  Record(job.id, "memory_breach", "controller", change.message + "; " + action);
  if (kill) {
    after_commit_.emplace_back([agent, id = job.id, pid = *change.pid, cause = change.message] {
      agent->KillProcess(id, pid, cause);
    });
  }
  NotifyJob(job, NotifyKind::kMemoryBreach,
            "job " + std::to_string(job.id.value()) + " is over its GPU memory limit",
            change.message + "; " + action);
}

}  // namespace gf
