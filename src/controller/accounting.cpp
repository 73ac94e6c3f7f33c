#include "controller/accounting.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <set>
#include <string>
#include <utility>

namespace gf {
namespace {

constexpr double kSecondsPerHour = 3600;
// After ten half-lives a GPU-second is worth 2^-10 < 0.1 %: not worth reading at start-up.
constexpr int kSeedHalfLives = 10;

double Seconds(Time from, Time to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

Period MonthOf(Time t) {
  namespace chrono = std::chrono;
  // floor, not a cast: a time before 1970 belongs to the day that started before it.
  const chrono::year_month_day day(chrono::floor<chrono::days>(t));
  const chrono::year_month month = day.year() / day.month();
  const chrono::sys_days first{month / 1};
  const chrono::sys_days next{(month + chrono::months(1)) / 1};
  return Period{.start = chrono::time_point_cast<Millis>(first),
                .end = chrono::time_point_cast<Millis>(next)};
}

double OverlapGpuSeconds(Time start, Time end, double gpus, Time from, Time to) {
  const Time lo = std::max(start, from);
  const Time hi = std::min(end, to);
  return hi > lo ? Seconds(lo, hi) * gpus : 0;
}

double ClippedGpuSeconds(const UsageRecord& run, Time from, Time to) {
  if (run.end == run.start) {
    return run.start >= from && run.start < to ? run.gpu_seconds : 0;
  }
  const double inside = OverlapGpuSeconds(run.start, run.end, 1, from, to);
  return run.gpu_seconds * inside / Seconds(run.start, run.end);
}

std::int64_t ClippedEnergyMj(const UsageRecord& run, Time from, Time to) {
  if (run.end == run.start) {
    return run.start >= from && run.start < to ? run.energy_mj : 0;
  }
  const double inside = OverlapGpuSeconds(run.start, run.end, 1, from, to);
  return std::llround(static_cast<double>(run.energy_mj) * inside / Seconds(run.start, run.end));
}

double DecayedRunGpuSeconds(const UsageRecord& run, Time now, std::chrono::seconds half_life) {
  const auto h = static_cast<double>(half_life.count());
  const double age_end = Seconds(run.end, now);
  if (run.end <= run.start) {
    return run.gpu_seconds * std::exp2(-age_end / h);
  }
  // The integral of rate * 2^(-(now - t) / h) over [start, end], rate = gpu_seconds / length.
  const double rate = run.gpu_seconds / Seconds(run.start, run.end);
  const double age_start = Seconds(run.start, now);
  return rate * h / std::numbers::ln2 * (std::exp2(-age_end / h) - std::exp2(-age_start / h));
}

Time SeedHorizon(Time now, std::chrono::seconds half_life) {
  return now - std::chrono::duration_cast<Millis>(half_life * kSeedHalfLives);
}

FairShareSeed SeedFairShare(const std::vector<UsageRecord>& runs,
                            const std::vector<RunningSpan>& running,
                            Time now,
                            const FairSharePolicy& fair_share) {
  const std::chrono::seconds half_life = fair_share.half_life;
  FairShareSeed seed;
  auto add = [&seed](const std::string& team, const std::string& user, double value) {
    seed.teams[team] += value;
    seed.users[user] += value;
  };
  for (const UsageRecord& run : runs) {
    add(run.team,
        run.user,
        ModelWeight(fair_share, run.gpu_models) * DecayedRunGpuSeconds(run, now, half_life));
  }
  for (const RunningSpan& span : running) {
    const UsageRecord so_far{
        .start = span.start,
        .end = std::max(span.start, now),
        .gpus = static_cast<int>(std::ceil(span.gpus)),
        .gpu_seconds = OverlapGpuSeconds(span.start, now, span.gpus, span.start, now)};
    add(span.team,
        span.user,
        ModelWeight(fair_share, span.gpu_models) * DecayedRunGpuSeconds(so_far, now, half_life));
  }
  return seed;
}

UsageRecord RunRecord(const Job& job,
                      Time now,
                      std::int64_t energy_mj,
                      std::vector<std::string> gpu_models) {
  const Time start = *job.start_time;
  const Time end = std::max(start, job.end_time.value_or(now));
  const auto gpus = static_cast<int>(job.allocation->gpus.size());
  // Charged by what it held: a fractional job its share of its GPU (issue #7).
  const double held = HeldGpus(*job.allocation);
  return UsageRecord{.job = job.id,
                     .start = start,
                     .end = end,
                     .team = job.spec.team,
                     .user = job.owner.user,
                     .priority = std::string(ToString(job.spec.priority)),
                     .gpus = gpus,
                     .gpu_models = std::move(gpu_models),
                     .gpu_seconds = OverlapGpuSeconds(start, end, held, start, end),
                     .energy_mj = energy_mj};
}

std::vector<std::string> GpuModelsOn(const Node* node, const Job& job) {
  std::set<std::string> models;
  if (node != nullptr) {
    for (const Gpu& gpu : node->gpus) {
      if (std::find(job.allocation->gpus.begin(), job.allocation->gpus.end(), gpu.uuid) !=
          job.allocation->gpus.end()) {
        models.insert(gpu.model);
      }
    }
  }
  return {models.begin(), models.end()};
}

void Accounting::Reset(Time now, const std::vector<UsageSum>& stored) {
  period_ = MonthOf(now);
  ended_gpu_seconds_.clear();
  ended_energy_mj_.clear();
  for (const UsageSum& sum : stored) {
    ended_gpu_seconds_[{sum.team, sum.user}] += sum.gpu_seconds;
    ended_energy_mj_[{sum.team, sum.user}] += sum.energy_mj;
  }
}

void Accounting::Roll(Time now) {
  if (now >= period_.start && now < period_.end) {
    return;
  }
  period_ = MonthOf(now);
  ended_gpu_seconds_.clear();
  ended_energy_mj_.clear();
}

void Accounting::AddRun(const UsageRecord& run, Time now) {
  Roll(now);
  const double inside = ClippedGpuSeconds(run, period_.start, period_.end);
  if (inside > 0) {
    ended_gpu_seconds_[{run.team, run.user}] += inside;
  }
  if (const std::int64_t energy = ClippedEnergyMj(run, period_.start, period_.end); energy > 0) {
    ended_energy_mj_[{run.team, run.user}] += energy;
  }
}

std::map<TeamUser, std::int64_t> Accounting::UserEnergyMj(const std::vector<RunningSpan>& running,
                                                          Time now) const {
  std::map<TeamUser, std::int64_t> energy = ended_energy_mj_;
  for (const RunningSpan& span : running) {
    const UsageRecord so_far{
        .start = span.start, .end = std::max(span.start, now), .energy_mj = span.energy_mj};
    energy[{span.team, span.user}] += ClippedEnergyMj(so_far, period_.start, period_.end);
  }
  return energy;
}

std::map<TeamUser, double> Accounting::UserHours(const std::vector<RunningSpan>& running,
                                                 Time now) const {
  std::map<TeamUser, double> seconds = ended_gpu_seconds_;
  for (const RunningSpan& span : running) {
    seconds[{span.team, span.user}] +=
        OverlapGpuSeconds(span.start, now, span.gpus, period_.start, period_.end);
  }
  for (auto& [key, value] : seconds) {
    value /= kSecondsPerHour;
  }
  return seconds;
}

std::map<std::string, double> Accounting::TeamHours(const std::vector<RunningSpan>& running,
                                                    Time now) const {
  std::map<std::string, double> hours;
  for (const auto& [key, value] : UserHours(running, now)) {
    hours[key.first] += value;
  }
  return hours;
}

}  // namespace gf
