// Job efficiency (`gpufleet eff JOB`, issue #24, Slurm's seff with the GPU figures it lacks):
// what one job held and what it used of it, and one line of advice, judged by the monthly
// report's thresholds (report.h) so that `eff` and `report` never disagree about a job.
//
// Pure: plain numbers in, figures out; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gf {

// A job that ended using less than this share of its time limit is told to ask for less time
// (backfill starts short jobs sooner); the other thresholds are report.h's.
inline constexpr double kShortRunOfLimitPct = 25.0;

// What is known of a job, ended or running (its figures so far).
struct JobEfficiencyInput {
  double held_gpus = 0;  // GPUs held (0.25 for a quarter of one); 0 = never started
  double elapsed_s = 0;  // run time (to now while running)
  std::optional<double> time_limit_s{};
  // The GPU usage the job's samples gave (nullopt: none yet, or a CPU-only job).
  std::optional<double> mean_util_pct{};
  std::optional<std::int64_t> peak_memory_mib{};
  std::int64_t card_memory_mib = 0;  // memory of one of its GPUs (0 = unknown)
  bool running = false;
};

struct JobEfficiency {
  double gpu_hours_allocated = 0;          // held GPUs x elapsed
  std::optional<double> gpu_hours_used{};  // allocated x mean utilisation
  std::optional<double> memory_pct{};      // peak memory of the card's
  std::optional<double> time_limit_pct{};  // elapsed of the time limit
  // One line a person can act on: "used 12 % of its GPUs: ask for fewer ...".
  std::string advice;
};

JobEfficiency ComputeJobEfficiency(const JobEfficiencyInput& in);

}  // namespace gf
