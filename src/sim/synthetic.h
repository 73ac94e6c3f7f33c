// A synthetic trace (`gpufleet sim --synthetic N --seed S`), so tests and quick experiments need
// no outside file.
//
// Model (the usual one of GPU-cluster studies: Philly, Helios):
// - Poisson arrivals, at the rate that offers `load` x the cluster's GPU capacity on average:
//   rate = load * cluster_gpus / (mean GPUs a job * mean duration).
// - Heavy-tailed durations: log-normal with the given median and sigma (sigma 1.5 gives a mean
//   3x the median and a p99 ~33x it, close to Philly's spread), whole seconds, at least 1 s.
// - GPUs per job: 1 (70 %), 2 (10 %), 4 (12 %), 8 (8 %), capped at `max_gpus_per_job` so that
//   every job fits on some node.
// - `teams` teams of `users_per_team` users each, chosen uniformly ("t0", users "t0-u0").
//
// The generator is std::mt19937_64 (the same numbers on every platform) with its own uniform,
// exponential and normal transforms rather than <random>'s distributions, whose output the
// standard leaves to the library: so the same seed gives the same trace everywhere.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine.h"
#include "sim/trace.h"

namespace gf::sim {

struct SyntheticOptions {
  int jobs = 1000;
  std::uint64_t seed = 1;
  int cluster_gpus = 128;    // capacity that `load` is relative to
  int max_gpus_per_job = 8;  // the largest node's GPU count
  double load = 0.9;         // offered GPU-time / capacity
  double median_duration_s = 1800;
  double duration_sigma = 1.5;  // of the log of the duration
  int teams = 4;
  int users_per_team = 3;
};

// Requires jobs >= 0, cluster_gpus >= 1, max_gpus_per_job >= 1, load > 0, median > 0,
// sigma >= 0, teams >= 1, users_per_team >= 1 (the CLI checks them). Ids are "s0", "s1", ...
std::vector<TraceJob> GenerateSynthetic(const SyntheticOptions& options);

// Failures of each of `nodes` nodes, from time 0 until `until` (`--node-mtbf`): up times drawn
// from an exponential distribution of mean `mtbf` (each node independently, a Poisson process
// of failures while it is up), each failure down for `repair`. Sorted by time, then node. The
// same seed gives the same list everywhere (the generator of GenerateSynthetic). Requires
// mtbf > 0 and repair >= 0.
std::vector<NodeFailure> GenerateNodeFailures(
    std::size_t nodes, Millis mtbf, Millis repair, Millis until, std::uint64_t seed);

// `--inflate-to X`: while the GPU demand of `jobs` (a share counting its fraction) is below
// `target_gpus`, appends a job drawn uniformly from the original ones (the generator above,
// seeded with `seed`), submitted 1 s after the last, id "<its id>~r<n>". Nothing is drawn
// when the jobs have no GPU demand. The same seed gives the same jobs everywhere.
void ResampleTo(std::vector<TraceJob>& jobs, double target_gpus, std::uint64_t seed);

}  // namespace gf::sim
