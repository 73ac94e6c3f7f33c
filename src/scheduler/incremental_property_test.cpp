// Property test of the IncrementalScheduler (incremental.h): over random clusters, policies,
// queues and sequences of arrivals, ends of running jobs and cancellations, every incremental
// pass gives exactly Decide()'s starts and preemptions on the same state, and every pending
// decision it gives is Decide()'s for that job.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "scheduler/incremental.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_property_gen.h"

namespace gf {
namespace {

using namespace gf::testing;  // NOLINT(google-build-using-namespace): the generators

// Small limits make the paths that skip jobs (incremental.h) common: with a backfill depth and
// max_preemptors_per_pass of a few, a pass soon reaches the point where only starts are left.
PolicyConfig GenIncrementalPolicy() {
  PolicyConfig policy = GenPolicy();
  policy.preemption.max_preemptors_per_pass = PickInt(0, 3);
  policy.backfill.depth = PickInt(0, 3);
  return policy;
}

// The state an event leads to, as the test keeps it (what Decide() is given).
void ApplyArrival(Queue& queue, const QueuedJob& job) {
  queue.pending.push_back(job);
}

void ApplyEnd(ClusterSnapshot& cluster, Queue& queue, JobId id) {
  const auto running = std::find_if(cluster.running.begin(),
                                    cluster.running.end(),
                                    [&](const RunningJob& r) { return r.id == id; });
  if (running != cluster.running.end()) {
    for (NodeSnapshot& node : cluster.nodes) {
      if (node.node.name == running->allocation.node) {
        for (const GpuUuid& gpu : running->allocation.gpus) {
          node.allocated.erase(gpu);
        }
      }
    }
    cluster.running.erase(running);
    return;
  }
  std::erase_if(queue.pending, [&](const QueuedJob& job) { return job.id == id; });
}

// An id to end: a running job's, a queued job's (a cancellation), or one nobody has.
JobId PickEnd(const ClusterSnapshot& cluster, const Queue& queue) {
  std::vector<JobId> ids;
  for (const RunningJob& job : cluster.running) {
    ids.push_back(job.id);
  }
  for (const QueuedJob& job : queue.pending) {
    ids.push_back(job.id);
  }
  if (ids.empty() || PickInt(0, 10) == 0) {
    return JobId(999'999);
  }
  return PickOf(ids);
}

using StartKey = std::tuple<std::int64_t, std::string, std::vector<GpuUuid>, bool>;
std::set<StartKey> Starts(const Decisions& d) {
  std::set<StartKey> keys;
  for (const StartDecision& s : d.starts) {
    keys.emplace(s.job.value(), s.allocation.node.value(), s.allocation.gpus, s.preemptible);
  }
  return keys;
}
using PreemptKey = std::tuple<std::int64_t, std::int64_t, std::string>;
std::set<PreemptKey> Preemptions(const Decisions& d) {
  std::set<PreemptKey> keys;
  for (const PreemptDecision& p : d.preemptions) {
    keys.emplace(p.victim.value(), p.for_job.value(), p.cause);
  }
  return keys;
}

// Each pending decision `got` returns is Decide()'s for that job.
void AssertPendingAsDecide(const IncrementalResult& got, const Decisions& want) {
  std::map<std::int64_t, const PendingDecision*> pending;
  for (const PendingDecision& p : want.pending) {
    pending[p.job.value()] = &p;
  }
  for (const PendingDecision& p : got.decisions.pending) {
    const auto it = pending.find(p.job.value());
    RC_ASSERT(it != pending.end());
    RC_ASSERT(p.reason == it->second->reason);
    RC_ASSERT(p.estimated_start == it->second->estimated_start);
    RC_ASSERT(p.reservation == it->second->reservation);
  }
}

// kHead (a running job's end): the head of the queue as Decide() decides it. Its starts and
// preemptions are some of Decide()'s, it decides at most one job that does not start, and no
// job after that one: every start is a job ahead of every pending decision.
void AssertHeadOfDecide(const IncrementalResult& got, const Decisions& want, const Queue& queue) {
  const std::set<StartKey> all_starts = Starts(want);
  for (const StartKey& start : Starts(got.decisions)) {
    RC_ASSERT(all_starts.contains(start));
  }
  const std::set<PreemptKey> all_preemptions = Preemptions(want);
  for (const PreemptKey& preemption : Preemptions(got.decisions)) {
    RC_ASSERT(all_preemptions.contains(preemption));
  }
  AssertPendingAsDecide(got, want);
  RC_ASSERT(got.decisions.pending.size() <= 1U);
  RC_ASSERT(got.considered ==
            static_cast<int>(got.decisions.starts.size() + got.decisions.pending.size()));
  RC_ASSERT(got.considered >= std::min(1, static_cast<int>(queue.pending.size())));
}

void AssertSameAsDecide(const IncrementalResult& got, const Decisions& want) {
  RC_ASSERT(Starts(got.decisions) == Starts(want));
  RC_ASSERT(Preemptions(got.decisions) == Preemptions(want));
  AssertPendingAsDecide(got, want);
}

bool Decided(const Decisions& decisions, JobId job) {
  return std::any_of(decisions.starts.begin(),
                     decisions.starts.end(),
                     [&](const StartDecision& s) { return s.job == job; }) ||
         std::any_of(decisions.pending.begin(),
                     decisions.pending.end(),
                     [&](const PendingDecision& p) { return p.job == job; });
}

std::set<std::int64_t> Ids(const Queue& queue) {
  std::set<std::int64_t> ids;
  for (const QueuedJob& job : queue.pending) {
    ids.insert(job.id.value());
  }
  return ids;
}

// After every event the incremental decisions are Decide()'s on the same state: all of them,
// or for a running job's end (kHead) those of the head of the queue.
RC_GTEST_PROP(IncrementalProperty, EveryEventDecidesAsDecide, ()) {
  const PolicyConfig policy = GenIncrementalPolicy();
  IncrementalScheduler scheduler;
  std::int64_t now_ms = kNowMs;
  // Half the cases count host CPUs and memory too: the pool kept between passes patches
  // their holds over time as it does the GPUs'.
  const bool host = PickInt(0, 2) == 0;
  {
    ClusterSnapshot cluster = GenCluster();
    Queue queue = GenQueue(30);
    if (host) {
      AddHostResources(cluster, queue);
    }
    const Decisions want = Decide(cluster, queue, policy, FromUnixMillis(now_ms));
    const Decisions got = scheduler.Full(cluster, queue, policy, FromUnixMillis(now_ms));
    AssertSameAsDecide(IncrementalResult{.decisions = got}, want);
    RC_ASSERT(got.pending.size() == want.pending.size());
  }
  std::int64_t next_id = 100;
  std::set<std::string> paths;  // what the case exercised
  const int events = PickInt(1, 15);
  for (int e = 0; e < events; ++e) {
    if (PickInt(0, 3) == 0) {
      now_ms += PickInt(0, 20) * std::int64_t{60'000};  // most events at the same instant
    }
    const Time now = FromUnixMillis(now_ms);
    ClusterSnapshot cluster = scheduler.Cluster();
    Queue queue = scheduler.CurrentQueue();
    IncrementalResult got;
    if (PickInt(0, 2) == 0) {
      QueuedJob job = GenJob(next_id++);
      if (host) {
        AddHostRequest(job);
      }
      ApplyArrival(queue, job);
      got = scheduler.OnArrival(job, now);
      RC_ASSERT(Decided(got.decisions, job.id));
    } else {
      const JobId id = PickEnd(cluster, queue);
      ApplyEnd(cluster, queue, id);
      got = scheduler.OnCompletion(id, now);
    }
    const Decisions want = Decide(cluster, queue, policy, now);
    RC_LOG() << "event " << e << ": " << ToString(got.path) << ", considered " << got.considered
             << " of " << queue.pending.size() << "\n";
    paths.insert(std::string(ToString(got.path)));
    if ((got.path == IncrementalPath::kReplay || got.path == IncrementalPath::kHead) &&
        got.considered < static_cast<int>(queue.pending.size())) {
      paths.insert(std::string(ToString(got.path)) + " skipped jobs");
    }
    // A running job's end decides the head of the queue only (kHead); every other event
    // decides as Decide() does.
    const bool head = got.path == IncrementalPath::kHead;
    if (head) {
      AssertHeadOfDecide(got, want, queue);
    } else {
      AssertSameAsDecide(got, want);
    }
    // Its copy moved on as the caller's does: started jobs run, the rest still wait.
    const std::vector<StartDecision>& started = head ? got.decisions.starts : want.starts;
    std::set<std::int64_t> waiting = Ids(queue);
    for (const StartDecision& start : started) {
      waiting.erase(start.job.value());
    }
    RC_ASSERT(Ids(scheduler.CurrentQueue()) == waiting);
    RC_ASSERT(scheduler.Cluster().running.size() == cluster.running.size() + started.size());
  }
  for (const std::string& path : paths) {
    RC_TAG(path);
  }
}

}  // namespace
}  // namespace gf
