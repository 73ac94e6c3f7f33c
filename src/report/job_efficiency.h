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
  // Its host side (issue #24): what it reserved (--cpus, --mem; 0 = none) and what its processes
  // used, measured at the end of each run (nullopt: not measured, or still running).
  int cpus = 0;
  std::int64_t host_memory_mib = 0;
  std::optional<std::int64_t> cpu_ms{};
  std::optional<std::int64_t> peak_host_memory_kib{};
};

struct JobEfficiency {
  double gpu_hours_allocated = 0;          // held GPUs x elapsed
  std::optional<double> gpu_hours_used{};  // allocated x mean utilisation
  std::optional<double> memory_pct{};      // peak memory of the card's
  std::optional<double> time_limit_pct{};  // elapsed of the time limit
  // Slurm seff's two: CPU time of the core-time reserved (cpus x elapsed), and peak host memory
  // of the memory reserved; nullopt when either side is unknown.
  double core_seconds = 0;  // cpus x elapsed (0 without --cpus)
  std::optional<double> cpu_pct{};
  std::optional<double> host_memory_pct{};
  // One line a person can act on: "used 12 % of its GPUs: ask for fewer ...".
  std::string advice;
};

JobEfficiency ComputeJobEfficiency(const JobEfficiencyInput& in);

// `eff`'s host lines, as seff says them: "CPU efficiency: 1h2m of 2h core-time (52 %)" and
// "Peak host memory: 1.2 GiB of 4 GiB requested (30 %)", or what is known without a
// reservation ("3.4s of CPU (no --cpus to compare with)") or a measure ("not measured").
std::string CpuEfficiencyText(const JobEfficiencyInput& in, const JobEfficiency& eff);
std::string HostMemoryText(const JobEfficiencyInput& in, const JobEfficiency& eff);
// 1'258'291 KiB → "1.2 GiB", 53'248 → "52.0 MiB"; `history`'s MAXRSS cells say it the same way.
std::string FormatKib(std::int64_t kib);
// 1'234 ms → "1.2s" (under a minute, tenths), 3'723'000 → "1h2m3s"; `history`'s CPU cells too.
std::string FormatCpuTime(std::int64_t ms);

}  // namespace gf
