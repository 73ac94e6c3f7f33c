#include "controller/kube_desk.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace gf {
namespace {

constexpr const char* kActor = "kubernetes";

}  // namespace

std::vector<GpuUuid> KubeDesk::GpusOn(const NodeId& node, const KubePod& pod) const {
  std::vector<GpuUuid> out;
  const NodeEntry* entry = p_.nodes.Find(node);
  if (entry == nullptr) {
    return out;
  }
  for (const KubePodContainer& container : pod.containers) {
    for (const GpuUuid& gpu : container.gpus) {
      const bool here = std::any_of(entry->node.gpus.begin(),
                                    entry->node.gpus.end(),
                                    [&gpu](const Gpu& g) { return g.uuid == gpu; });
      if (here && std::find(out.begin(), out.end(), gpu) == out.end()) {
        out.push_back(gpu);
      }
    }
  }
  return out;
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

Job KubeDesk::Adopt(const KubePod& pod, JobId id, const std::vector<GpuUuid>& gpus) const {
  Job job;
  job.id = id;
  job.owner.user = pod.pod_namespace;  // until the API server names its service account
  job.spec.name = pod.name;
  job.spec.argv = {"pod " + pod.pod_namespace + "/" + pod.name};
  job.spec.team = pod.pod_namespace;
  job.spec.priority = PriorityClass{std::string(kKubernetesClass)};
  job.spec.env = KubePodJobEnv(pod);
  job.spec.request.gpus = static_cast<int>(gpus.size());
  job.spec.request.nodes = 1;
  job.submit_time = p_.clock.Now();
  job.state = JobState::kPending;
  return job;
}

void KubeDesk::Apply(const NodeId& node, const std::vector<KubePod>& pods) {
  std::set<JobId> listed;
  for (const KubePod& pod : pods) {
    const std::optional<JobId> id = KubeJobIdOfPod(pod.uid);
    const std::vector<GpuUuid> gpus = GpusOn(node, pod);
    if (!id || gpus.empty()) {
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
      p_.jobs.Add(Adopt(pod, *id, gpus));
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
    Allocation allocation;
    allocation.node = node;
    allocation.gpus = gpus;
    p_.jobs.Start(
        *job, allocation, /*preemptible=*/false, "started by Kubernetes on " + node.value());
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
  for (const JobId id : gone) {
    Job& job = p_.jobs.At(id);
    job.exit_code = 0;
    job.end_time = p_.clock.Now();
    p_.jobs.Transition(
        job,
        JobState::kCompleted,
        "its pod is no longer on " + node.value() + " (its kubelet lists it no more)",
        kActor);
  }
}

}  // namespace gf
