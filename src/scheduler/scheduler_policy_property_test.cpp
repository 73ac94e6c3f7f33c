// Property tests of Decide() with the policy rules on (issue #4): random clusters with running
// jobs (teams, classes, time limits, borrowed, stopping), random policies (quotas, budgets,
// preemption, backfill depth) and random queues.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "scheduler/estimates.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_property_gen.h"

namespace gf {
namespace {

using namespace gf::testing;  // NOLINT(google-build-using-namespace): the generators

Decisions DecideAt(const ClusterSnapshot& cluster, const Queue& queue, const PolicyConfig& p) {
  return Decide(cluster, queue, p, FromUnixMillis(kNowMs));
}

const QueuedJob& FindJob(const Queue& queue, JobId id) {
  return *std::find_if(
      queue.pending.begin(), queue.pending.end(), [&](const QueuedJob& j) { return j.id == id; });
}

RC_GTEST_PROP(SchedulerPolicyProperty, NeverOverAllocatesNorPreemptsWrongly, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const PolicyConfig policy = GenPolicy();
  const Decisions decisions = DecideAt(cluster, GenQueue(), policy);
  std::set<GpuUuid> held;
  for (const NodeSnapshot& node : cluster.nodes) {
    held.insert(node.allocated.begin(), node.allocated.end());
  }
  std::set<GpuUuid> given;
  for (const StartDecision& start : decisions.starts) {
    for (const GpuUuid& uuid : start.allocation.gpus) {
      RC_ASSERT(!held.contains(uuid));  // victims' GPUs are not free until they stop
      RC_ASSERT(given.insert(uuid).second);
    }
  }
  std::set<JobId> victims;
  for (const PreemptDecision& p : decisions.preemptions) {
    RC_ASSERT(policy.preemption.enabled);
    RC_ASSERT(victims.insert(p.victim).second);  // each victim once
    const auto victim = std::find_if(cluster.running.begin(),
                                     cluster.running.end(),
                                     [&](const RunningJob& r) { return r.id == p.victim; });
    RC_ASSERT(victim != cluster.running.end());
    RC_ASSERT(!victim->stopping);
    RC_ASSERT(FromUnixMillis(kNowMs) - victim->start_time >= policy.preemption.min_run_time);
  }
}

// A multi-node job starts whole or not at all: every queued member of its gang, each on a node
// of its own, or none; and every member not started has a pending decision.
RC_GTEST_PROP(SchedulerPolicyProperty, GangsStartWholeOnDistinctNodes, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const Queue queue = GenQueue();
  const Decisions decisions = DecideAt(cluster, queue, GenPolicy());
  std::map<JobId, const StartDecision*> started;
  for (const StartDecision& start : decisions.starts) {
    started[start.job] = &start;
  }
  std::set<JobId> pending;
  for (const PendingDecision& p : decisions.pending) {
    pending.insert(p.job);
  }
  std::map<JobId, std::vector<const QueuedJob*>> gangs;
  for (const QueuedJob& job : queue.pending) {
    RC_ASSERT(started.contains(job.id) != pending.contains(job.id));
    if (job.gang.has_value()) {
      gangs[*job.gang].push_back(&job);
    }
  }
  for (const auto& [gang, members] : gangs) {
    std::set<NodeId> nodes;
    int members_started = 0;
    for (const QueuedJob* member : members) {
      if (const auto it = started.find(member->id); it != started.end()) {
        ++members_started;
        RC_ASSERT(nodes.insert(it->second->allocation.node).second);
        RC_ASSERT(static_cast<int>(it->second->allocation.gpus.size()) == member->request.gpus);
      }
    }
    RC_ASSERT(members_started == 0 || members_started == static_cast<int>(members.size()));
  }
}

// Listing::kLookedAt leaves out only jobs that change nothing: the same starts and
// preemptions as the full listing, and every job it lists has the decision the full listing
// gives it (reason, estimated start, reservation). Deep queues, small backfill depths and few
// preemptors per pass, so that passes reach the point where jobs are passed over.
RC_GTEST_PROP(SchedulerPolicyProperty, LookedAtListingDecidesAsTheFullOne, ()) {
  ClusterSnapshot cluster = GenCluster();
  PolicyConfig policy = GenPolicy();
  policy.preemption.max_preemptors_per_pass = PickInt(0, 4);
  Queue queue = GenQueue(40);
  if (PickInt(0, 3) == 0) {
    AddHostResources(cluster, queue);
  }
  const Time now = FromUnixMillis(kNowMs);
  const Decisions every = Decide(cluster, queue, policy, now, Listing::kEveryJob);
  const Decisions looked = Decide(cluster, queue, policy, now, Listing::kLookedAt);
  RC_ASSERT(looked.starts.size() == every.starts.size());
  for (std::size_t i = 0; i < every.starts.size(); ++i) {
    RC_ASSERT(looked.starts[i].job == every.starts[i].job);
    RC_ASSERT(looked.starts[i].allocation == every.starts[i].allocation);
    RC_ASSERT(looked.starts[i].preemptible == every.starts[i].preemptible);
  }
  RC_ASSERT(looked.preemptions.size() == every.preemptions.size());
  for (std::size_t i = 0; i < every.preemptions.size(); ++i) {
    RC_ASSERT(looked.preemptions[i].victim == every.preemptions[i].victim);
    RC_ASSERT(looked.preemptions[i].for_job == every.preemptions[i].for_job);
    RC_ASSERT(looked.preemptions[i].cause == every.preemptions[i].cause);
  }
  std::map<JobId, const PendingDecision*> full;
  for (const PendingDecision& pending : every.pending) {
    full.emplace(pending.job, &pending);
  }
  RC_ASSERT(looked.pending.size() <= every.pending.size());
  RC_ASSERT(looked.pending.empty() == every.pending.empty());  // a caller sees that jobs wait
  for (const PendingDecision& pending : looked.pending) {
    const auto it = full.find(pending.job);
    RC_ASSERT(it != full.end());
    RC_ASSERT(pending.reason == it->second->reason);
    RC_ASSERT(pending.estimated_start == it->second->estimated_start);
    RC_ASSERT(pending.reservation == it->second->reservation);
  }
  RC_TAG(looked.pending.size() < every.pending.size() ? "jobs passed over" : "every job listed");
}

RC_GTEST_PROP(SchedulerPolicyProperty, SameInputSameDecisionsInAnyListOrder, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const PolicyConfig policy = GenPolicy();
  const Queue queue = GenQueue();
  const Decisions first = DecideAt(cluster, queue, policy);
  std::mt19937 rng(*rc::gen::arbitrary<std::uint32_t>());
  ClusterSnapshot shuffled = cluster;
  Queue shuffled_queue = queue;
  std::shuffle(shuffled.nodes.begin(), shuffled.nodes.end(), rng);
  std::shuffle(shuffled.running.begin(), shuffled.running.end(), rng);
  std::shuffle(shuffled_queue.pending.begin(), shuffled_queue.pending.end(), rng);
  const Decisions second = DecideAt(shuffled, shuffled_queue, policy);
  RC_ASSERT(first.starts.size() == second.starts.size());
  for (std::size_t i = 0; i < first.starts.size(); ++i) {
    RC_ASSERT(first.starts[i].job == second.starts[i].job);
    RC_ASSERT(first.starts[i].allocation == second.starts[i].allocation);
    RC_ASSERT(first.starts[i].preemptible == second.starts[i].preemptible);
  }
  RC_ASSERT(first.pending.size() == second.pending.size());
  for (std::size_t i = 0; i < first.pending.size(); ++i) {
    RC_ASSERT(first.pending[i].job == second.pending[i].job);
    RC_ASSERT(first.pending[i].reason == second.pending[i].reason);
    RC_ASSERT(first.pending[i].estimated_start == second.pending[i].estimated_start);
  }
  RC_ASSERT(first.preemptions.size() == second.preemptions.size());
  for (std::size_t i = 0; i < first.preemptions.size(); ++i) {
    RC_ASSERT(first.preemptions[i].victim == second.preemptions[i].victim);
    RC_ASSERT(first.preemptions[i].cause == second.preemptions[i].cause);
  }
}

// Backfill never delays a reservation: a job that starts on a GPU reserved for a waiting job
// gives it back (its time limit or high estimate ends: its planned end) by the reservation's start.
RC_GTEST_PROP(SchedulerPolicyProperty, StartsRespectReservations, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const PolicyConfig policy = GenPolicy();
  const Queue queue = GenQueue();
  const Decisions decisions = DecideAt(cluster, queue, policy);
  std::map<GpuUuid, Time> reserved_from;
  for (const PendingDecision& pending : decisions.pending) {
    if (pending.reservation.has_value() && pending.estimated_start.has_value()) {
      for (const GpuUuid& uuid : pending.reservation->gpus) {
        const auto [it, added] = reserved_from.emplace(uuid, *pending.estimated_start);
        it->second = std::min(it->second, *pending.estimated_start);
      }
    }
  }
  for (const StartDecision& start : decisions.starts) {
    const QueuedJob& job = FindJob(queue, start.job);
    // Its planned length: its limit, or its high estimate where shorter (estimates.h).
    const std::optional<std::chrono::seconds> limit = PlannedLength(
        job, EffectiveTimeLimit(ClassPolicyFor(policy, job.priority), job.time_limit), policy);
    for (const GpuUuid& uuid : start.allocation.gpus) {
      const auto it = reserved_from.find(uuid);
      if (it != reserved_from.end()) {
        RC_ASSERT(limit.has_value());
        RC_ASSERT(FromUnixMillis(kNowMs) + *limit <= it->second);
      }
    }
  }
}

// Host CPUs and memory (issue #24) are never given beyond a node's capacity: on every node that
// reports them, what the running jobs hold plus what the starts take fits
// (where the running jobs alone fit: a node may report less than it once did).
RC_GTEST_PROP(SchedulerPolicyProperty, StartsNeverOverCommitHostCpusOrMemory, ()) {
  ClusterSnapshot cluster = GenCluster();
  Queue queue = GenQueue();
  AddHostResources(cluster, queue);
  const Decisions decisions = DecideAt(cluster, queue, GenPolicy());
  for (const NodeSnapshot& node : cluster.nodes) {
    std::int64_t cpus = 0;
    std::int64_t mib = 0;
    for (const RunningJob& job : cluster.running) {
      if (job.allocation.node == node.node.name) {  // victims of a preemption still hold theirs
        cpus += job.allocation.cpus;
        mib += job.allocation.memory_mib;
      }
    }
    const bool cpus_fit = node.node.cpus == 0 || cpus <= node.node.cpus;
    const bool mib_fit = node.node.memory_mib == 0 || mib <= node.node.memory_mib;
    for (const StartDecision& start : decisions.starts) {
      if (start.allocation.node == node.node.name) {
        cpus += start.allocation.cpus;
        mib += start.allocation.memory_mib;
      }
    }
    RC_ASSERT(!cpus_fit || node.node.cpus == 0 || cpus <= node.node.cpus);
    RC_ASSERT(!mib_fit || node.node.memory_mib == 0 || mib <= node.node.memory_mib);
  }
}

// Preemption never jumps a reservation: the GPUs a preempting job will get, and every GPU of
// its victims, are outside every other waiting job's reservation.
RC_GTEST_PROP(SchedulerPolicyProperty, PreemptionsKeepOffReservedGpus, ()) {
  const ClusterSnapshot cluster = GenCluster();
  const Decisions decisions = DecideAt(cluster, GenQueue(), GenPolicy());
  std::set<JobId> preemptors;
  for (const PreemptDecision& p : decisions.preemptions) {
    preemptors.insert(p.for_job);
  }
  std::map<GpuUuid, JobId> reserved;  // by jobs that do not preempt
  for (const PendingDecision& pending : decisions.pending) {
    if (pending.reservation.has_value() && !preemptors.contains(pending.job)) {
      for (const GpuUuid& uuid : pending.reservation->gpus) {
        reserved.emplace(uuid, pending.job);
      }
    }
  }
  for (const PendingDecision& pending : decisions.pending) {
    if (preemptors.contains(pending.job)) {
      RC_ASSERT(pending.reservation.has_value());
      for (const GpuUuid& uuid : pending.reservation->gpus) {
        RC_ASSERT(!reserved.contains(uuid));
      }
    }
  }
  for (const PreemptDecision& p : decisions.preemptions) {
    const auto victim = std::find_if(cluster.running.begin(),
                                     cluster.running.end(),
                                     [&](const RunningJob& r) { return r.id == p.victim; });
    for (const GpuUuid& uuid : victim->allocation.gpus) {
      RC_ASSERT(!reserved.contains(uuid));
    }
  }
}

// A team below its guarantee gets it within one preemption round: on a cluster full of other
// teams' borrowed work (and their guaranteed work, within their guarantees), one pass
// preempts enough, and the next pass, once the victims have stopped, starts every one of its
// one-GPU jobs up to its guarantee.
RC_GTEST_PROP(SchedulerPolicyProperty, GuaranteeReachableWithinOnePreemptionRound, ()) {
  const int nodes = PickInt(1, 5);
  ClusterSnapshot cluster;
  const int guarantee_b = PickInt(0, nodes * 8 + 1);
  int b_guaranteed_left = guarantee_b;
  std::int64_t next_id = 1000;
  for (int n = 0; n < nodes; ++n) {
    NodeSnapshot node;
    node.node.name = NodeId("node" + std::to_string(n));
    for (int i = 0; i < 8; ++i) {
      node.node.gpus.push_back(
          Gpu{.index = i,
              .uuid = GpuUuid("GPU-" + std::to_string(n) + "-" + std::to_string(i)),
              .model = "H100",
              .memory_mib = 0,
              .health = GpuHealth::kOk,
              .health_cause = ""});
    }
    for (int i = 0; i < 8;) {  // the node is full of team b's work
      const int size = PickInt(1, 9 - i);
      RunningJob job;
      job.id = JobId(next_id++);
      job.team = "b";
      job.priority = PickOf(kClasses);
      job.allocation.node = node.node.name;
      for (int k = i; k < i + size; ++k) {
        job.allocation.gpus.push_back(node.node.gpus[static_cast<std::size_t>(k)].uuid);
        node.allocated.insert(job.allocation.gpus.back());
      }
      job.preemptible = size > b_guaranteed_left;
      b_guaranteed_left -= job.preemptible ? 0 : size;
      job.start_time = FromUnixMillis(0);
      cluster.running.push_back(std::move(job));
      i += size;
    }
    cluster.nodes.push_back(std::move(node));
  }
  const int b_guaranteed_held = guarantee_b - b_guaranteed_left;
  const int guarantee_a = PickInt(0, nodes * 8 - b_guaranteed_held + 1);
  PolicyConfig policy;
  policy.teams = {TeamPolicy{.name = "a", .guaranteed_gpus = guarantee_a},
                  TeamPolicy{.name = "b", .guaranteed_gpus = guarantee_b}};
  Queue queue;
  for (int i = 0; i < guarantee_a; ++i) {
    QueuedJob job;
    job.id = JobId(i + 1);
    job.priority = PickOf(kClasses);
    job.team = "a";
    queue.pending.push_back(job);
  }
  const Decisions round = DecideAt(cluster, queue, policy);
  RC_ASSERT(round.starts.empty());
  // The victims stop.
  for (const PreemptDecision& p : round.preemptions) {
    const auto victim = std::find_if(cluster.running.begin(),
                                     cluster.running.end(),
                                     [&](const RunningJob& r) { return r.id == p.victim; });
    for (NodeSnapshot& node : cluster.nodes) {
      if (node.node.name == victim->allocation.node) {
        for (const GpuUuid& uuid : victim->allocation.gpus) {
          node.allocated.erase(uuid);
        }
      }
    }
    cluster.running.erase(victim);
  }
  const Decisions next = DecideAt(cluster, queue, policy);
  RC_ASSERT(static_cast<int>(next.starts.size()) == guarantee_a);
  RC_ASSERT(next.preemptions.empty());
  for (const StartDecision& start : next.starts) {
    RC_ASSERT(!start.preemptible);
  }
}

}  // namespace
}  // namespace gf
