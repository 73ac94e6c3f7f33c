#include "controller/kube_desk.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "model/mig_share.h"

namespace gf {
namespace {

constexpr const char* kActor = "kubernetes";

}  // namespace

std::optional<KubeDesk::PodPlace> KubeDesk::PlaceOf(const NodeId& node, const KubePod& pod) {
  const NodeEntry* entry = p_.nodes.Find(node);
  if (entry == nullptr) {
    return std::nullopt;
  }
  PodPlace whole;
  whole.allocation.node = node;
  std::vector<PodPlace> mig;  // one per MIG device the pod holds
  for (const KubePodContainer& container : pod.containers) {
    for (const GpuUuid& id : container.gpus) {
      for (const Gpu& gpu : entry->node.gpus) {
        if (gpu.uuid == id) {
          std::vector<GpuUuid>& held = whole.allocation.gpus;
          if (std::find(held.begin(), held.end(), id) == held.end()) {
            held.push_back(id);
          }
          continue;
        }
        for (const MigInstance& instance : gpu.mig_instances) {
          if (instance.uuid == id) {
            mig.push_back(PodPlace{.allocation = {.node = node,
                                                  .gpus = {gpu.uuid},
                                                  .gpu_milli = MigInstanceMilli(gpu, instance),
                                                  .gpu_memory_mib = instance.memory_mib,
                                                  .mig = id},
                                   .mig_profile = instance.profile});
          }
        }
      }
    }
  }
  if (!whole.allocation.gpus.empty()) {
    return whole;
  }
  if (mig.empty()) {
    return std::nullopt;
  }
  // An allocation holds one MIG device (model/job.h): a pod with several is counted by its
  // first, and said once.
  if (mig.size() > 1 && refused_.insert(pod.uid).second) {
    spdlog::warn(
        "kubernetes: pod {}/{} holds {} MIG devices; gpufleet counts it on the first, "
        "{}",
        pod.pod_namespace,
        pod.name,
        mig.size(),
        mig.front().allocation.mig.value());
  }
  return mig.front();
}

void KubeDesk::NameFromApi(Job& job, const KubePod& pod) {
  if (!p_.api_facts) {
    return;
  }
  const std::optional<KubePodFacts> facts = p_.api_facts(pod.uid);
  if (!facts) {
    return;
  }
  const std::string user =
      "system:serviceaccount:" + pod.pod_namespace + ":" + facts->pod.service_account;
  const std::string workload =
      facts->workload ? facts->workload->kind + "/" + facts->workload->name : "";
  if (job.owner.user == user && EnvValue(job.spec.env, kPodWorkloadEnv) == workload) {
    return;
  }
  job.owner.user = user;
  SetEnvValue(job.spec.env, kPodServiceAccountEnv, facts->pod.service_account);
  SetEnvValue(job.spec.env, kPodWorkloadEnv, workload);
  p_.jobs.Write(job);
}

Job KubeDesk::Adopt(const KubePod& pod, JobId id, const PodPlace& place) const {
  Job job;
  job.id = id;
  job.owner.user = pod.pod_namespace;  // until the API server names its service account
  job.spec.name = pod.name;
  job.spec.argv = {"pod " + pod.pod_namespace + "/" + pod.name};
  job.spec.team = pod.pod_namespace;
  job.spec.priority = PriorityClass{std::string(kKubernetesClass)};
  job.spec.env = KubePodJobEnv(pod);
  job.spec.request.gpus = static_cast<int>(place.allocation.gpus.size());
  job.spec.request.mig_profile = place.mig_profile;
  job.spec.request.nodes = 1;
  job.submit_time = p_.clock.Now();
  job.state = JobState::kPending;
  return job;
}

void KubeDesk::Apply(const NodeId& node, const std::vector<KubePod>& pods) {
  std::set<JobId> listed;
  for (const KubePod& pod : pods) {
    const std::optional<JobId> id = KubeJobIdOfPod(pod.uid);
    const std::optional<PodPlace> place = PlaceOf(node, pod);
    if (!id || !place) {
      if (refused_.insert(pod.uid).second) {
        spdlog::warn("kubernetes: pod {}/{} on {} not followed: {}",
                     pod.pod_namespace,
                     pod.name,
                     node.value(),
                     !id ? "its UID '" + pod.uid + "' is not one the kubelet gives"
                         : std::string("none of its GPUs is in the node's inventory"));
      }
      continue;
    }
    listed.insert(*id);
    Job* job = p_.jobs.Find(*id);
    if (job == nullptr) {
      p_.jobs.Add(Adopt(pod, *id, *place));
      p_.jobs.Record(*id,
                     "submit",
                     kActor,
                     "pod " + pod.pod_namespace + "/" + pod.name + " (uid " + pod.uid +
                         ") holds GPUs on " + node.value());
      job = p_.jobs.Find(*id);
    }
    if (!IsTerminal(job->state)) {
      NameFromApi(*job, pod);
    }
    if (job->state != JobState::kPending) {
      continue;  // running already (a pod's GPUs do not change), or ended
    }
    p_.jobs.Start(
        *job, place->allocation, /*preemptible=*/false, "started by Kubernetes on " + node.value());
    p_.jobs.Started(*job, /*pid=*/0, p_.clock.Now(), kActor);
    p_.node_desk.AssignGpus(*job);
  }
  // This node's pods its kubelet no longer lists have ended there.
  std::vector<JobId> gone;
  for (const auto& [id, job] : p_.jobs.Active()) {
    if (!listed.contains(id) && HoldsGpus(job) && job.allocation->node == node &&
        !IsTerminal(job.state)) {
      gone.push_back(id);
    }
  }
  // COMPLETED, or as the idle reaper's stop of it meant (CANCELLED, its cause).
  for (const JobId id : gone) {
    p_.jobs.Exited(p_.jobs.At(id),
                   /*exit_code=*/0,
                   "its pod is no longer on " + node.value() + " (its kubelet lists it no more)",
                   p_.clock.Now(),
                   kActor);
  }
}

void KubeDesk::StopIdlePod(Job& job, const KubePodStop& stop, const std::string& cause) {
  if (!p_.send_stop) {
    StopAnswered(job.id,
                 stop,
                 FailedPrecondition("this server has no line to the API server: run it in a pod, "
                                    "or give --kube-api"));
    return;
  }
  p_.jobs.Stops().Request(job.id, StopIntent{.final_state = JobState::kCancelled, .cause = cause});
  p_.send_stop(job.id, stop);
}

void KubeDesk::StopAnswered(JobId id, const KubePodStop& stop, const Status& answer) {
  Job* job = p_.jobs.Find(id);
  if (job == nullptr || IsTerminal(job->state)) {
    return;
  }
  if (answer.ok()) {
    p_.jobs.Record(id,
                   "pod_stop",
                   kActor,
                   KubeStopDone(stop) +
                       ": the job ends when its node's kubelet no longer lists "
                       "the pod");
    return;
  }
  p_.jobs.Record(id, "pod_stop_failed", kActor, answer.error().message);
  p_.jobs.Stops().Forget(id);
  job->reason = "idle reaping failed: " + answer.error().message;
}

}  // namespace gf
