// gf_scheduler_bench: one full scheduling pass (Decide) at issue #4's size: 1,000 nodes of
// 8 GPUs and 100,000 pending jobs of mixed classes, teams, users, sizes, GPU types and time
// limits, with quotas, preemption and backfill on. Three cluster states: idle (the pass starts
// thousands of jobs), half busy (it starts some, reserves, may preempt) and full (every job
// waits: the cost of explaining a deep queue); the queue in submit order (as the controller
// builds it) and shuffled. Google Benchmark; how to run it and the figures
// measured: bench/README.md.
#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <thread>

#include <benchmark/benchmark.h>

#include "scheduler/incremental.h"
#include "scheduler/ordering/fair_share.h"
#include "scheduler/quota/ledger.h"
#include "scheduler/scheduler.h"

namespace gf {
namespace {

constexpr int kNodes = 1000;
constexpr int kGpusPerNode = 8;
constexpr int kTeams = 10;
constexpr int kUsers = 200;
constexpr std::int64_t kNowMs = 1'700'000'000'000;

const std::array<PriorityClass, 10> kClassMix = {PriorityClass::kHigh,
                                                 PriorityClass::kNormal,
                                                 PriorityClass::kNormal,
                                                 PriorityClass::kNormal,
                                                 PriorityClass::kNormal,
                                                 PriorityClass::kNormal,
                                                 PriorityClass::kNormal,
                                                 PriorityClass::kLow,
                                                 PriorityClass::kLow,
                                                 PriorityClass::kLow};
const std::array<int, 8> kSizeMix = {1, 1, 1, 1, 2, 2, 4, 8};

std::string Model(int node) {
  return node % 4 == 3 ? "A100-80GB" : "H100-80GB";  // a quarter of the nodes are A100s
}

std::optional<std::chrono::seconds> Limit(std::mt19937& rng) {
  if (rng() % 10 < 3) {
    return std::nullopt;  // 30 % give none (and their class none)
  }
  return std::chrono::seconds(600 + static_cast<int>(rng() % (8 * 3600)));
}

// `busy_percent` of the GPUs held by running jobs of random teams and classes.
ClusterSnapshot MakeCluster(int busy_percent, std::mt19937& rng) {
  ClusterSnapshot cluster;
  std::int64_t next_id = 1'000'000;
  for (int n = 0; n < kNodes; ++n) {
    NodeSnapshot node;
    node.node.name = NodeId("gpu" + std::to_string(10000 + n));
    for (int i = 0; i < kGpusPerNode; ++i) {
      node.node.gpus.push_back(
          Gpu{.index = i,
              .uuid = GpuUuid("GPU-" + std::to_string(n) + "-" + std::to_string(i)),
              .model = Model(n),
              .memory_mib = 81920,
              .health = GpuHealth::kOk,
              .health_cause = ""});
    }
    const int busy =
        kGpusPerNode * busy_percent / 100 + (rng() % 2 == 0 && busy_percent % 100 != 0 ? 1 : 0);
    for (int i = 0; i < std::min(busy, kGpusPerNode);) {
      const int size = std::min(kSizeMix[rng() % kSizeMix.size()], busy - i);
      RunningJob job;
      job.id = JobId(next_id++);
      job.team = "team" + std::to_string(rng() % kTeams);
      job.user = "user" + std::to_string(rng() % kUsers);
      job.priority = kClassMix[rng() % kClassMix.size()];
      job.allocation.node = node.node.name;
      for (int k = i; k < i + size; ++k) {
        job.allocation.gpus.push_back(node.node.gpus[static_cast<std::size_t>(k)].uuid);
        node.allocated.insert(job.allocation.gpus.back());
      }
      job.start_time = FromUnixMillis(kNowMs - static_cast<std::int64_t>(rng() % 7'200'000));
      job.time_limit = Limit(rng);
      job.preemptible = rng() % 3 == 0;
      cluster.running.push_back(std::move(job));
      i += size;
    }
    cluster.nodes.push_back(std::move(node));
  }
  for (int t = 0; t < kTeams; ++t) {
    cluster.team_usage["team" + std::to_string(t)] =
        TeamUsage{.decayed_gpu_seconds = static_cast<double>(rng() % 10'000'000),
                  .period_gpu_hours = static_cast<double>(rng() % 50'000)};
  }
  for (int u = 0; u < kUsers; ++u) {
    cluster.user_decayed_gpu_seconds["user" + std::to_string(u)] =
        static_cast<double>(rng() % 1'000'000);
  }
  return cluster;
}

Queue MakeQueue(int jobs, std::mt19937& rng) {
  Queue queue;
  queue.pending.reserve(static_cast<std::size_t>(jobs));
  for (int i = 0; i < jobs; ++i) {
    QueuedJob job;
    job.id = JobId(i + 1);
    job.priority = kClassMix[rng() % kClassMix.size()];
    job.submit_time = FromUnixMillis(kNowMs - jobs + i);
    job.request.gpus = kSizeMix[rng() % kSizeMix.size()];
    if (rng() % 5 == 0) {
      job.request.gpu_type = rng() % 2 == 0 ? "H100-80GB" : "a100-80gb";
    }
    job.user = "user" + std::to_string(rng() % kUsers);
    job.team = "team" + std::to_string(rng() % kTeams);
    job.time_limit = Limit(rng);
    queue.pending.push_back(std::move(job));
  }
  return queue;
}

// Ten teams sharing 8,000 GPUs: 600 guaranteed each, borrowing up to 2,000; two of them
// with budgets they have used up (one borrow-only, one hold).
PolicyConfig MakePolicy() {
  PolicyConfig policy;
  for (int t = 0; t < kTeams; ++t) {
    TeamPolicy team{.name = "team" + std::to_string(t), .guaranteed_gpus = 600, .max_gpus = 2000};
    if (t < 2) {
      team.gpu_hour_budget = 1.0;
      team.over_budget = t == 0 ? OverBudget::kBorrowOnly : OverBudget::kHold;
    }
    policy.teams.push_back(std::move(team));
  }
  policy.classes[1].default_time_limit = std::chrono::hours(24);
  return policy;
}

void BM_FullPass(benchmark::State& state) {
  std::mt19937 rng(42);
  const int busy_percent = static_cast<int>(state.range(0));
  const ClusterSnapshot cluster = MakeCluster(busy_percent, rng);
  Queue queue = MakeQueue(static_cast<int>(state.range(1)), rng);
  if (state.range(2) == 0) {  // not in submit order: the ordering stage must sort
    std::shuffle(queue.pending.begin(), queue.pending.end(), rng);
  }
  const PolicyConfig policy = MakePolicy();
  Decisions decisions;
  for (auto _ : state) {
    decisions = Decide(cluster, queue, policy, FromUnixMillis(kNowMs));
    benchmark::DoNotOptimize(decisions);
  }
  state.counters["busy_pct"] = busy_percent;
  state.counters["running"] = static_cast<double>(cluster.running.size());
  state.counters["starts"] = static_cast<double>(decisions.starts.size());
  state.counters["preempts"] = static_cast<double>(decisions.preemptions.size());
  state.counters["pending"] = static_cast<double>(decisions.pending.size());
}
BENCHMARK(BM_FullPass)
    ->ArgNames({"busy_pct", "jobs", "in_order"})
    ->Args({0, 100'000, 1})
    ->Args({50, 100'000, 1})
    ->Args({100, 100'000, 1})
    ->Args({50, 100'000, 0})
    ->Unit(benchmark::kMillisecond);

// The ordering stage alone (fair share over 100,000 jobs): the part of a pass that does not
// depend on the cluster's state.
void BM_OrderOnly(benchmark::State& state) {
  std::mt19937 rng(42);
  const ClusterSnapshot cluster = MakeCluster(50, rng);
  const Queue queue = MakeQueue(static_cast<int>(state.range(0)), rng);
  const PolicyConfig policy = MakePolicy();
  const ClassTable classes(policy, cluster);
  const Ledger ledger(policy, cluster, classes);
  for (auto _ : state) {
    // The classes are resolved in the same sweep (FairShareOrdering), as in a pass.
    std::vector<const QueuedJob*> order = FairShareOrder(queue, cluster, policy, ledger);
    benchmark::DoNotOptimize(order);
  }
}
BENCHMARK(BM_OrderOnly)->ArgNames({"jobs"})->Arg(100'000)->Unit(benchmark::kMillisecond);

// The incremental pass (IncrementalScheduler) on the full cluster with 100,000 pending jobs.
// Each repetition builds the scheduler (a full pass and a Refresh, untimed, as the controller's
// periodic pass leaves it) and times one event; the median over repetitions is the p50 of one
// event. Cases: 0 an arrival of a normal job (it goes after the pass's frontier: kFast), 1 an
// arrival of a high job (after the older high jobs: also kFast), 2 the end of a running 1-GPU
// job, 3 of an 8-GPU job (kHead: the head of the queue in order while it starts, and the first
// job that does not; at the same `now` as the passes before, so on a copy of the kept pool), 4
// the 1-GPU job's end 1 ms later (a new controller turn: the pool is built from the snapshot),
// 5 an arrival right after a job's end (kReplay: an end keeps no pass to reuse).
struct IncrementalInput {
  ClusterSnapshot cluster;
  Queue queue;
  PolicyConfig policy;
};

const IncrementalInput& FullClusterInput() {
  static const IncrementalInput input = [] {
    std::mt19937 rng(42);
    IncrementalInput made;
    made.cluster = MakeCluster(100, rng);
    made.queue = MakeQueue(100'000, rng);
    made.policy = MakePolicy();
    return made;
  }();
  return input;
}

// A running job of `gpus` GPUs that the full pass did not stop.
JobId RunningJobOf(const ClusterSnapshot& cluster, std::size_t gpus) {
  for (const RunningJob& job : cluster.running) {
    if (job.allocation.gpus.size() == gpus && !job.stopping) {
      return job.id;
    }
  }
  return JobId(0);
}

QueuedJob Arrival(PriorityClass priority) {
  QueuedJob job;
  job.id = JobId(500'000);
  job.priority = std::move(priority);
  job.submit_time = FromUnixMillis(kNowMs);
  job.request.gpus = 1;
  job.user = "user7";
  job.team = "team5";
  job.time_limit = std::chrono::hours(1);
  return job;
}

void BM_IncrementalPass(benchmark::State& state) {
  const IncrementalInput& input = FullClusterInput();
  const Time now = FromUnixMillis(kNowMs);
  IncrementalScheduler scheduler;
  scheduler.Full(input.cluster, input.queue, input.policy, now);
  // Its preemptions were applied (the victims are stopping): decide the new state until it
  // settles, as the controller's loop would between events.
  int refreshes = 0;
  while (refreshes < 50 && scheduler.Refresh(now).path != IncrementalPath::kFast) {
    ++refreshes;  // each stopping victim taken by an earlier preemptor leaves one to choose anew
  }
  const JobId one_gpu = RunningJobOf(scheduler.Cluster(), 1);
  const JobId eight_gpus = RunningJobOf(scheduler.Cluster(), 8);
  IncrementalResult result;
  for (auto _ : state) {
    switch (state.range(0)) {
      case 0:
        result = scheduler.OnArrival(Arrival(PriorityClass::kNormal), now);
        break;
      case 1:
        result = scheduler.OnArrival(Arrival(PriorityClass::kHigh), now);
        break;
      case 2:
        result = scheduler.OnCompletion(one_gpu, now);
        break;
      case 3:
        result = scheduler.OnCompletion(eight_gpus, now);
        break;
      case 4:  // a later turn: its pool is built from the snapshot, not copied
        result = scheduler.OnCompletion(one_gpu, now + std::chrono::milliseconds(1));
        break;
      default: {  // the end is untimed; the arrival after it is what is measured
        state.PauseTiming();
        scheduler.OnCompletion(one_gpu, now);
        state.ResumeTiming();
        result = scheduler.OnArrival(Arrival(PriorityClass::kNormal), now);
        break;
      }
    }
    benchmark::DoNotOptimize(result);
  }
  state.counters["settle"] = refreshes;
  state.counters["replay"] = result.path == IncrementalPath::kReplay ? 1 : 0;
  state.counters["head"] = result.path == IncrementalPath::kHead ? 1 : 0;
  state.counters["considered"] = result.considered;
  state.counters["starts"] = static_cast<double>(result.decisions.starts.size());
}
BENCHMARK(BM_IncrementalPass)
    ->ArgNames({"event"})
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Arg(4)
    ->Arg(5)
    ->Iterations(1)
    ->Repetitions(21)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gf

int main(int argc, char** argv) {
  benchmark::AddCustomContext("cores", std::to_string(std::thread::hardware_concurrency()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
