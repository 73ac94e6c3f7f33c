// Random inputs for the scheduler's property tests with the policy rules on (issue #4):
// clusters with running jobs (teams, classes, time limits, borrowed, stopping), policies
// (quotas, budgets, preemption, backfill depth) and queues. Test code only; rapidcheck
// generators, called from inside a property.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <rapidcheck.h>

#include "model/snapshot.h"
#include "scheduler/policy.h"

namespace gf::testing {

inline constexpr std::int64_t kNowMs = std::int64_t{3} * 3'600'000;  // the pass runs at 3h
inline const std::vector<std::string> kTeams = {"a", "b", "c", ""};
inline const std::vector<PriorityClass> kClasses = {
    PriorityClass::kHigh, PriorityClass::kNormal, PriorityClass::kLow};

template <typename T>
inline T Pick(rc::Gen<T> gen) {
  return *rc::gen::resize(rc::kNominalSize, std::move(gen));
}

inline int PickInt(int min, int max_exclusive) {
  return Pick(rc::gen::inRange(min, max_exclusive));
}

template <typename T>
inline const T& PickOf(const std::vector<T>& items) {
  return items[static_cast<std::size_t>(PickInt(0, static_cast<int>(items.size())))];
}

inline std::optional<std::chrono::seconds> PickLimit() {
  if (PickInt(0, 3) == 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(PickInt(1, 240) * 60);
}

// Up to 4 nodes of 8 GPUs (two models); every held GPU belongs to a running job.
inline ClusterSnapshot GenCluster() {
  ClusterSnapshot cluster;
  const int nodes = PickInt(1, 5);
  std::int64_t next_id = 1000;
  for (int n = 0; n < nodes; ++n) {
    NodeSnapshot node;
    node.node.name = NodeId("node" + std::to_string(n));
    node.node.state = PickInt(0, 6) == 0 ? NodeState::kDraining : NodeState::kUp;
    const std::string model = n % 2 == 0 ? "H100" : "A100";
    for (int i = 0; i < 8; ++i) {
      Gpu gpu;
      gpu.index = i;
      gpu.uuid = GpuUuid("GPU-" + std::to_string(n) + "-" + std::to_string(i));
      gpu.model = model;
      gpu.health = PickInt(0, 12) == 0 ? GpuHealth::kFailed : GpuHealth::kOk;
      node.node.gpus.push_back(gpu);
    }
    int i = 0;
    while (i < 8) {
      const int size = PickInt(1, 9 - i);
      if (PickInt(0, 3) != 0) {
        RunningJob job;
        job.id = JobId(next_id++);
        job.team = PickOf(kTeams);
        job.user = "u" + std::to_string(PickInt(0, 3));
        job.priority = PickOf(kClasses);
        job.allocation.node = node.node.name;
        for (int k = i; k < i + size; ++k) {
          job.allocation.gpus.push_back(node.node.gpus[static_cast<std::size_t>(k)].uuid);
          node.allocated.insert(node.node.gpus[static_cast<std::size_t>(k)].uuid);
        }
        job.start_time = FromUnixMillis(kNowMs - PickInt(0, 180) * std::int64_t{60'000});
        job.time_limit = PickLimit();
        job.preemptible = PickInt(0, 2) == 0;
        job.stopping = PickInt(0, 10) == 0;
        if (PickInt(0, 2) == 0) {  // predicted: some past their high estimate already
          const auto high = Millis(PickInt(1, 240) * std::int64_t{60'000});
          job.estimate = RunEstimate{.expected = high / 2, .high = high};
        }
        cluster.running.push_back(std::move(job));
      }
      i += size;
    }
    cluster.nodes.push_back(std::move(node));
  }
  cluster.team_usage["a"] = TeamUsage{.decayed_gpu_seconds = PickInt(0, 1000) * 1.0,
                                      .period_gpu_hours = PickInt(0, 200) * 1.0};
  cluster.team_usage["b"] = TeamUsage{.decayed_gpu_seconds = PickInt(0, 1000) * 1.0,
                                      .period_gpu_hours = PickInt(0, 200) * 1.0};
  return cluster;
}

inline PolicyConfig GenPolicy() {
  PolicyConfig policy;
  if (PickInt(0, 3) != 0) {
    const int guarantee_a = PickInt(0, 17);
    policy.teams.push_back(TeamPolicy{
        .name = "a",
        .guaranteed_gpus = guarantee_a,
        .max_gpus = PickInt(0, 2) == 0 ? std::optional(guarantee_a + PickInt(0, 8)) : std::nullopt,
        .gpu_hour_budget = 100.0,
        .over_budget = OverBudget::kBorrowOnly,
        .fair_share_weight = 1});
    policy.teams.push_back(TeamPolicy{.name = "b",
                                      .guaranteed_gpus = PickInt(0, 9),
                                      .max_gpus = std::nullopt,
                                      .gpu_hour_budget = 100.0,
                                      .over_budget = OverBudget::kHold,
                                      .fair_share_weight = 2});
  }
  policy.classes[0].default_time_limit = PickLimit();
  policy.preemption.enabled = PickInt(0, 4) != 0;
  policy.preemption.min_run_time = std::chrono::seconds(PickInt(0, 60) * 60);
  policy.backfill.enabled = PickInt(0, 4) != 0;
  policy.backfill.depth = PickInt(0, 6);
  policy.prediction.enabled = PickInt(0, 3) != 0;
  policy.prediction.max_delay = std::chrono::hours(PickInt(0, 3));
  return policy;
}

// A queued job of a random class, size, type, user, team and limit, submitted in the last
// 100 s before kNowMs.
inline QueuedJob GenJob(std::int64_t id) {
  QueuedJob job;
  job.id = JobId(id);
  job.priority = PickOf(kClasses);
  job.submit_time = FromUnixMillis(kNowMs - PickInt(0, 100) * std::int64_t{1000});
  job.request.gpus = PickInt(0, 9);
  if (PickInt(0, 3) == 0) {
    job.request.gpu_type = PickInt(0, 2) == 0 ? "h100" : "A100";
  }
  job.user = "u" + std::to_string(PickInt(0, 3));
  job.team = PickOf(kTeams);
  job.time_limit = PickLimit();
  if (PickInt(0, 1) == 0) {
    const auto expected = Millis(PickInt(1, 120) * std::int64_t{60'000});
    job.estimate = RunEstimate{.expected = expected, .high = expected * 2};
  }
  return job;
}

// Appends GenJob(next_id), or now and then the members of a multi-node job (2 or 3 of them,
// consecutive ids, one gang), as the controller queues `gpufleet submit --nodes N`.
inline void PushGenJobs(std::vector<QueuedJob>& pending, std::int64_t& next_id) {
  QueuedJob job = GenJob(next_id);
  const int members = PickInt(0, 6) == 0 ? PickInt(2, 4) : 1;
  job.request.nodes = members;
  for (int rank = 0; rank < members; ++rank) {
    QueuedJob member = job;
    member.id = JobId(next_id++);
    if (members > 1) {
      member.gang = job.id;
    }
    pending.push_back(std::move(member));
  }
}

// Now and then host CPUs and memory in `job`'s request (AddHostResources).
inline void AddHostRequest(QueuedJob& job) {
  if (PickInt(0, 2) == 0) {
    job.request.cpus = PickInt(0, 25);
    job.request.memory_mib = PickInt(0, 3) * std::int64_t{32'768};
  }
}

// Host CPUs and memory (issue #24) on some nodes, running jobs and queued jobs: capacities a
// few jobs fill, so that jobs wait for them, reserve them and backfill around them. Left out
// of GenCluster and GenJob so that properties about GPUs alone keep their distributions.
inline void AddHostResources(ClusterSnapshot& cluster, Queue& queue) {
  for (NodeSnapshot& node : cluster.nodes) {
    if (PickInt(0, 3) != 0) {
      node.node.cpus = PickInt(0, 2) == 0 ? 0 : 32;
      node.node.memory_mib = PickInt(0, 2) == 0 ? 0 : 131'072;
    }
  }
  for (RunningJob& job : cluster.running) {
    if (PickInt(0, 2) == 0) {
      job.allocation.cpus = PickInt(0, 17);
      job.allocation.memory_mib = PickInt(0, 3) * std::int64_t{32'768};
    }
  }
  for (QueuedJob& job : queue.pending) {
    AddHostRequest(job);
  }
}

// Up to `max_jobs` jobs, some of them multi-node.
inline Queue GenQueue(int max_jobs = 14) {
  Queue queue;
  const int jobs = PickInt(0, max_jobs);
  std::int64_t next_id = 1;
  for (int i = 0; i < jobs; ++i) {
    PushGenJobs(queue.pending, next_id);
  }
  return queue;
}

}  // namespace gf::testing
