// gf_sim_bench: the simulator's speed on real traces (issue #5's benchmark). Replays
// - the whole philly_pollux trace (82,247 jobs) on the Philly cluster of its machine list
//   (552 machines, 2,490 GPUs) under the stock policy, as `gpufleet sim` runs it (the
//   incremental scheduler told each instant's events) and with a full pass (Decide) at every
//   instant, as before: the same results, and what the incremental scheduler saves, and
// - the Tiresias week (VC 6214e9, 2,650 jobs) under FIFO on 32 x 4 GPUs, with the figures of
//   the Tiresias simulator's FIFO run beside ours,
// and prints a markdown table: wall time, scheduler passes, the deepest queue, JCT, utilisation,
// then the process's peak RSS. The traces are read from ../shared/traces (or the directory given
// as the first argument); when it is absent the bench says so and exits 0.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <sys/resource.h>

#include "sim/cluster.h"
#include "sim/engine.h"
#include "sim/metrics.h"
#include "sim/trace.h"

namespace {

struct Case {
  std::string name;
  std::string trace;    // relative to the traces directory
  std::string cluster;  // a spec, or a machine list relative to the traces directory
  bool fifo = false;
  bool full_passes_only = false;  // Decide's full pass at every instant, as before the engine
                                  // drove the incremental scheduler
};

gf::sim::SimOptions OptionsFor(const Case& c) {
  gf::sim::SimOptions options;
  if (c.fifo) {
    options.policy.backfill.enabled = false;
    options.policy.preemption.enabled = false;
    options.policy.prediction.enabled = false;  // submit order: no job's place moves
    options.fair_share = false;
  }
  options.full_passes_only = c.full_passes_only;
  return options;
}

bool RunCase(const Case& c, const std::filesystem::path& dir) {
  const std::string cluster = c.cluster.ends_with(".csv") ? (dir / c.cluster).string() : c.cluster;
  auto nodes = gf::sim::LoadCluster(cluster);
  auto jobs = gf::sim::ReadTrace((dir / c.trace).string(), std::nullopt);
  if (!nodes.ok() || !jobs.ok()) {
    std::fprintf(stderr,
                 "%s: %s\n",
                 c.name.c_str(),
                 (!nodes.ok() ? nodes.error() : jobs.error()).message.c_str());
    return false;
  }
  const auto began = std::chrono::steady_clock::now();
  auto result = gf::sim::Simulate(*nodes, jobs->jobs, OptionsFor(c));
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - began;
  if (!result.ok()) {
    std::fprintf(stderr, "%s: %s\n", c.name.c_str(), result.error().message.c_str());
    return false;
  }
  const gf::sim::Summary s = gf::sim::Summarize(*result);
  std::printf(
      "| %s | %d (%d rejected) | %d | %.2f s | %lld (%lld full) | %lld | %.0f | %.0f | %.0f | %.0f "
      "| %.1f %% |\n",
      c.name.c_str(),
      s.jobs,
      s.rejected,
      s.total_gpus,
      wall.count(),
      static_cast<long long>(s.decide_calls),
      static_cast<long long>(result->full_passes),
      static_cast<long long>(s.max_queue),
      s.jct_s.avg,
      s.jct_s.median,
      s.jct_s.p99,
      s.queueing_s.avg,
      100 * s.utilisation);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path dir = argc > 1 ? argv[1] : GF_TRACES_DIR;
  if (!std::filesystem::is_directory(dir / "philly_pollux")) {
    std::printf(
        "gf_sim_bench: skipped: no traces at %s (give the traces directory as the "
        "first argument)\n",
        dir.c_str());
    return 0;
  }
  const Case cases[] = {
      {.name = "philly_pollux, stock policy",
       .trace = "philly_pollux/normalized.csv",
       .cluster = "philly_pollux/cluster_machine_list.csv"},
      {.name = "philly_pollux, stock policy, full passes only",
       .trace = "philly_pollux/normalized.csv",
       .cluster = "philly_pollux/cluster_machine_list.csv",
       .full_passes_only = true},
      {.name = "Tiresias week, FIFO, 32x4",
       .trace = "philly_pollux/tiresias_runs/input_philly_6214e9_wk.csv",
       .cluster = "32x4xV100",
       .fifo = true},
      {.name = "Tiresias week, FIFO, 16x8",
       .trace = "philly_pollux/tiresias_runs/input_philly_6214e9_wk.csv",
       .cluster = "16x8xV100",
       .fifo = true},
  };
  std::printf(
      "| case | jobs | GPUs | wall | passes | deepest queue | avg JCT (s) | median JCT | "
      "p99 JCT | avg queueing (s) | utilisation |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n");
  bool ok = true;
  for (const Case& c : cases) {
    ok = RunCase(c, dir) && ok;
  }
  std::printf(
      "| Tiresias simulator, FIFO (its README) | 2,650 | 128 | 3.2 s | | | 19,709 | 9,984 | "
      "123,966 | 7,133 | |\n");
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("\npeak RSS: %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024);
  return ok ? 0 : 1;
}
