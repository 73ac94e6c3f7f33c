#include "report/recommend.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "core/gpu_hours.h"
#include "model/team.h"
#include "predict/load_forecast.h"

namespace gf {
namespace {

constexpr double kMibPerGib = 1024;
// Headroom over a job's peak memory when it asks for a share of a GPU, and the step its ask is
// rounded up to (GPU sharing hands out memory in such steps).
constexpr double kMemoryHeadroom = 1.25;
constexpr double kGpuMemStepGib = 4;

// printf into a std::string (messages carry rounded figures).
template <typename... Args>
std::string Format(const char* format, Args... args) {
  char text[512];
  std::snprintf(text, sizeof text, format, args...);
  return text;
}

std::string GpuName(const GpuFigures& gpu) {
  return gpu.node + "/" + (gpu.index >= 0 ? std::to_string(gpu.index) : gpu.uuid);
}

std::string TeamName(const std::string& team) {
  return TeamLabel(team);
}

void AddGpuAdvice(const GpuFigures& gpu, std::vector<Recommendation>& out) {
  const MinuteFigures& f = gpu.figures;
  const std::vector<std::pair<std::string, double>> figures = {
      {"idle_pct", f.idle_pct}, {"allocated_pct", f.allocated_pct}, {"used_pct", f.used_pct}};
  if (gpu.idle) {
    out.push_back(Recommendation{
        .kind = "idle_gpu",
        .subject = GpuName(gpu),
        .message = Format(
            "GPU %s (%s) was idle %.0f %% of the time it was observed: allocated %.0f %% of its "
            "minutes, used %.0f %% while allocated; move it where work waits, or "
            "let the power policy cap it",
            GpuName(gpu).c_str(),
            gpu.model.c_str(),
            f.idle_pct,
            f.allocated_pct,
            f.used_pct),
        .figures = figures});
  }
  if (gpu.overloaded) {
    out.push_back(Recommendation{
        .kind = "overloaded_gpu",
        .subject = GpuName(gpu),
        .message = Format("GPU %s (%s) was allocated %.0f %% of the period at %.0f %% "
                          "utilisation: work queues for it; more GPUs of this model would help",
                          GpuName(gpu).c_str(),
                          gpu.model.c_str(),
                          f.allocated_pct,
                          f.used_pct),
        .figures = figures});
  }
  if (gpu.unhealthy) {
    out.push_back(Recommendation{
        .kind = "unhealthy_gpu",
        .subject = GpuName(gpu),
        .message =
            Format("GPU %s was degraded or failed %" PRId64 " minutes (%.1f %% of its minutes): "
                   "check its cooling and health events (gpufleet gpus)",
                   GpuName(gpu).c_str(),
                   static_cast<std::int64_t>(f.minutes_unhealthy),
                   100.0 * static_cast<double>(f.minutes_unhealthy) /
                       static_cast<double>(f.minutes_observed)),
        .figures = {{"unhealthy_minutes", static_cast<double>(f.minutes_unhealthy)}}});
  }
}

void AddTeamAdvice(const TeamFigures& team, std::vector<Recommendation>& out) {
  const UsageFigures& u = team.usage;
  if (u.gpu_hours_allocated >= kMinRecommendGpuHours && u.mean_util_pct < kLowTeamUsePct) {
    out.push_back(Recommendation{
        .kind = "low_team_use",
        .subject = "team " + TeamName(team.team),
        .message = Format("team %s used %.0f %% of the GPU time it was allocated (%s of %s "
                          "GPU-h): look at its idle jobs below, or give it fewer GPUs",
                          TeamName(team.team).c_str(),
                          u.mean_util_pct,
                          FormatGpuHours(u.gpu_hours_used).c_str(),
                          FormatGpuHours(u.gpu_hours_allocated).c_str()),
        .figures = {{"used_pct", u.mean_util_pct},
                    {"gpu_hours_used", u.gpu_hours_used},
                    {"gpu_hours_allocated", u.gpu_hours_allocated}}});
  }
  if (team.budget_used_pct && *team.budget_used_pct > 100) {
    out.push_back(Recommendation{
        .kind = "over_budget",
        .subject = "team " + TeamName(team.team),
        .message = Format("team %s used %.0f %% of its %s GPU-h budget (%s GPU-h): raise "
                          "the budget or plan for less",
                          TeamName(team.team).c_str(),
                          *team.budget_used_pct,
                          FormatGpuHours(*team.budget_gpu_hours).c_str(),
                          FormatGpuHours(u.gpu_hours_allocated).c_str()),
        .figures = {{"budget_used_pct", *team.budget_used_pct},
                    {"budget_gpu_hours", *team.budget_gpu_hours}}});
  }
}

void AddUserAdvice(const UserFigures& user, std::vector<Recommendation>& out) {
  const UsageFigures& u = user.usage;
  const double peak_gib = static_cast<double>(user.peak_memory_mib) / kMibPerGib;
  const double gpu_gib = static_cast<double>(user.gpu_memory_mib) / kMibPerGib;
  if (u.jobs >= kMinJobsForSharing && user.peak_memory_mib > 0 && user.gpu_memory_mib > 0 &&
      100.0 * peak_gib / gpu_gib < kSmallMemoryPct) {
    out.push_back(Recommendation{
        .kind = "share_gpus",
        .subject = "user " + user.user,
        .message = Format("user %s's %d jobs peaked at %.1f GiB of %.1f GiB GPUs: they could "
                          "share GPUs (--gpu-mem %s once GPU sharing ships)",
                          user.user.c_str(),
                          u.jobs,
                          peak_gib,
                          gpu_gib,
                          SuggestedGpuMem(user.peak_memory_mib).c_str()),
        .figures = {{"jobs", u.jobs}, {"peak_gib", peak_gib}, {"gpu_gib", gpu_gib}}});
  }
  const double idle_pct =
      u.gpu_hours_allocated > 0 ? 100.0 * u.gpu_hours_idle / u.gpu_hours_allocated : 0;
  if (u.gpu_hours_idle >= kMinRecommendGpuHours && idle_pct >= kLowTeamUsePct) {
    out.push_back(Recommendation{
        .kind = "waste",
        .subject = "user " + user.user,
        .message = Format("user %s's jobs held GPUs idle for %s GPU-h (%.0f %% of their %s "
                          "GPU-h): end jobs when their work is done, and check the idle reaper's "
                          "threshold for their class (docs/automation.md)",
                          user.user.c_str(),
                          FormatGpuHours(u.gpu_hours_idle).c_str(),
                          idle_pct,
                          FormatGpuHours(u.gpu_hours_allocated).c_str()),
        .figures = {{"gpu_hours_idle", u.gpu_hours_idle}, {"idle_pct", idle_pct}}});
  }
}

}  // namespace

std::string SuggestedGpuMem(std::int64_t peak_mib) {
  const double gib = static_cast<double>(peak_mib) / kMibPerGib * kMemoryHeadroom;
  const double rounded = std::max(1.0, std::ceil(gib / kGpuMemStepGib)) * kGpuMemStepGib;
  return std::to_string(static_cast<std::int64_t>(rounded)) + "G";
}

std::vector<Recommendation> Recommend(const Report& report) {
  std::vector<Recommendation> out;
  for (const GpuFigures& gpu : report.gpus) {
    AddGpuAdvice(gpu, out);
  }
  for (const TeamFigures& team : report.teams) {
    AddTeamAdvice(team, out);
  }
  for (const UserFigures& user : report.users) {
    AddUserAdvice(user, out);
  }
  return out;
}

std::optional<Recommendation> CapacityAdvice(const std::vector<double>& hourly,
                                             Time first_hour,
                                             int cluster_gpus) {
  // Nothing ran, or too little of it to forecast from: no advice rather than "all spare".
  if (static_cast<int>(hourly.size()) < kForecastMinHours || cluster_gpus <= 0 ||
      std::all_of(hourly.begin(), hourly.end(), [](double gpus) { return gpus <= 0; })) {
    return std::nullopt;
  }
  LoadForecast forecast;
  for (std::size_t h = 0; h < hourly.size(); ++h) {
    forecast.Observe(first_hour + std::chrono::hours(h), hourly[h]);
  }
  const Time after = first_hour + std::chrono::hours(hourly.size());
  const std::vector<double> ahead = forecast.Forecast(after, kForecastHours);
  const double peak = *std::max_element(ahead.begin(), ahead.end());
  const double seen_peak = *std::max_element(hourly.begin(), hourly.end());
  const double gpus = cluster_gpus;
  const std::vector<std::pair<std::string, double>> figures = {
      {"forecast_peak_gpus", peak}, {"period_peak_gpus", seen_peak}, {"cluster_gpus", gpus}};
  if (peak > gpus) {
    return Recommendation{
        .kind = "capacity_short",
        .subject = "cluster",
        .message = Format(
            "demand is forecast to reach %.0f GPUs (held or waited for) at the busiest hour of "
            "the next 7 days, above the cluster's %d (this period's busiest hour wanted %.0f): "
            "add about %.0f GPUs, or expect jobs to queue at those hours",
            peak,
            cluster_gpus,
            seen_peak,
            std::ceil(peak - gpus)),
        .figures = figures};
  }
  if (peak < gpus * kSpareCapacityPct / 100) {
    return Recommendation{
        .kind = "capacity_spare",
        .subject = "cluster",
        .message = Format(
            "demand is forecast to reach at most %.0f of the cluster's %d GPUs over the next 7 "
            "days (this period's busiest hour wanted %.0f): let the idle power policy cap the "
            "rest, or lend them",
            peak,
            cluster_gpus,
            seen_peak),
        .figures = figures};
  }
  return std::nullopt;
}

}  // namespace gf
