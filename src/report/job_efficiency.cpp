#include "report/job_efficiency.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/duration.h"
#include "core/gpu_hours.h"
#include "report/recommend.h"
#include "report/report.h"

namespace gf {
namespace {

constexpr double kSecondsPerHour = 3600;
constexpr double kMibPerGib = 1024;

std::string Percent(double pct) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f %%", pct);
  return text;
}

std::string Gib(std::int64_t mib) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(mib) / kMibPerGib);
  return text;
}

// The first advice that applies, most costly waste first.
std::string Advice(const JobEfficiencyInput& in, const JobEfficiency& eff) {
  if (in.held_gpus <= 0) {
    return "it held no GPU: nothing to judge";
  }
  if (!in.mean_util_pct) {
    return in.running ? "no GPU samples yet: look again in a minute"
                      : "no GPU samples were recorded: nothing to judge";
  }
  if (eff.gpu_hours_allocated < kMinRecommendGpuHours) {
    // As the report gives no advice on so little GPU time: a few minutes do not make a pattern.
    return std::string(in.running ? "too early to judge" : "too short to judge") + " (" +
           FormatGpuHours(eff.gpu_hours_allocated) + " GPU-h, under the report's " +
           FormatGpuHours(kMinRecommendGpuHours) + ")";
  }
  const double util = *in.mean_util_pct;
  const std::string so_far = in.running ? " so far" : "";
  if (util < kIdleUtilPct) {
    return "its GPUs were idle" + so_far + " (" + Percent(util) +
           " mean utilisation): check that it runs on the GPU it was given, and end jobs whose "
           "work is done";
  }
  if (util < kLowTeamUsePct) {
    const double enough = std::max(1.0, std::ceil(in.held_gpus * util / 100.0));
    std::string advice = "used " + Percent(util) + " of its GPUs" + so_far + ": ";
    if (in.held_gpus >= 2 && enough < in.held_gpus) {
      char text[64];
      std::snprintf(text, sizeof text, "ask for fewer (--gpus %.0f would do)", enough);
      return advice + text + ", or feed them faster (data loading, CPU)";
    }
    return advice + "feed it faster (data loading, CPU, batch size)";
  }
  if (eff.memory_pct && *eff.memory_pct < kSmallMemoryPct && in.held_gpus <= 1) {
    return "peaked at " + Gib(*in.peak_memory_mib) + " of the card's " + Gib(in.card_memory_mib) +
           ": a share of a GPU would do (--gpu-mem " + SuggestedGpuMem(*in.peak_memory_mib) + ")";
  }
  if (!in.running && eff.time_limit_pct && *eff.time_limit_pct < kShortRunOfLimitPct) {
    const auto ask = std::chrono::seconds(
        static_cast<std::int64_t>(std::ceil(in.elapsed_s * 100.0 / kShortRunOfLimitPct / 60)) * 60);
    return "ran " + Percent(*eff.time_limit_pct) + " of its time limit: a --time nearer its run (" +
           FormatDuration(ask) + ") lets backfill start it sooner";
  }
  return "GPUs well used" + so_far + " (" + Percent(util) + " mean utilisation): nothing to change";
}

}  // namespace

JobEfficiency ComputeJobEfficiency(const JobEfficiencyInput& in) {
  JobEfficiency eff;
  eff.gpu_hours_allocated = in.held_gpus * in.elapsed_s / kSecondsPerHour;
  if (in.mean_util_pct) {
    eff.gpu_hours_used = eff.gpu_hours_allocated * *in.mean_util_pct / 100.0;
  }
  if (in.peak_memory_mib && in.card_memory_mib > 0) {
    eff.memory_pct =
        100.0 * static_cast<double>(*in.peak_memory_mib) / static_cast<double>(in.card_memory_mib);
  }
  if (in.time_limit_s && *in.time_limit_s > 0) {
    eff.time_limit_pct = 100.0 * in.elapsed_s / *in.time_limit_s;
  }
  eff.core_seconds = in.cpus > 0 ? static_cast<double>(in.cpus) * in.elapsed_s : 0;
  if (in.cpu_ms && eff.core_seconds > 0) {
    eff.cpu_pct = 100.0 * static_cast<double>(*in.cpu_ms) / 1000.0 / eff.core_seconds;
  }
  if (in.peak_host_memory_kib && in.host_memory_mib > 0) {
    eff.host_memory_pct = 100.0 * static_cast<double>(*in.peak_host_memory_kib) / 1024.0 /
                          static_cast<double>(in.host_memory_mib);
  }
  eff.advice = Advice(in, eff);
  return eff;
}

std::string FormatKib(std::int64_t kib) {
  char text[32];
  const double mib = static_cast<double>(kib) / 1024.0;
  if (mib < kMibPerGib) {
    std::snprintf(text, sizeof text, "%.1f MiB", mib);
  } else {
    std::snprintf(text, sizeof text, "%.1f GiB", mib / kMibPerGib);
  }
  return text;
}

std::string FormatCpuTime(std::int64_t ms) {
  if (ms < 60'000) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1fs", static_cast<double>(ms) / 1000.0);
    return text;
  }
  return FormatDuration(std::chrono::seconds(ms / 1000));
}

std::string CpuEfficiencyText(const JobEfficiencyInput& in, const JobEfficiency& eff) {
  const std::string so_far = in.running ? " (measured when the run ends)" : "";
  if (!in.cpu_ms) {
    return "not measured" + so_far;
  }
  const std::string used = FormatCpuTime(*in.cpu_ms);
  if (!eff.cpu_pct) {
    return used + " of CPU (no --cpus to compare with)";
  }
  return used + " of " +
         FormatCpuTime(static_cast<std::int64_t>(std::llround(eff.core_seconds * 1000.0))) +
         " core-time (" + Percent(*eff.cpu_pct) + ")";
}

std::string HostMemoryText(const JobEfficiencyInput& in, const JobEfficiency& eff) {
  if (!in.peak_host_memory_kib) {
    return in.running ? "not measured (measured when the run ends)" : "not measured";
  }
  const std::string peak = FormatKib(*in.peak_host_memory_kib);
  if (!eff.host_memory_pct) {
    return peak + " (no --mem to compare with)";
  }
  return peak + " of " + FormatMib(in.host_memory_mib) + " requested (" +
         Percent(*eff.host_memory_pct) + ")";
}

}  // namespace gf
