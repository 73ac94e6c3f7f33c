// LoadForecast: how many GPUs will be wanted over the next hours, learned from the hours that
// passed (issue #22, item 4). Demand on a shared cluster follows people: a working-day profile
// (busy from the morning, quiet at night and at the weekend) that moves with deadlines. So:
//   - a profile by hour of the week (168 slots, UTC): each slot an exponentially weighted mean
//     of the demand seen in that hour in past weeks (the newest week weighs `profile_weight`);
//   - a trend: over the last `trend_hours` hours, how the demand seen compares with what the
//     profile said for those hours (their ratio, within [1/trend_cap, trend_cap]): a deadline
//     week runs above its profile, a holiday below, and the forecast follows for the next hours.
// The forecast for an hour is its slot's profile times the trend; a slot not seen yet takes the
// mean of the recent hours instead (a new cluster forecasts its recent level).
//
// Demand is GPUs wanted, held or waiting: the mean over an hour of the GPUs that running jobs
// hold and pending jobs ask for (HourlyDemand), so that a queue shows as demand a bigger
// cluster would have served, and a forecast of it says when capacity is needed.
//
// Pure (no I/O, no clock): the controller (seeded from the store's jobs at start, told each hour
// that passes), the simulator and `gpufleet report` feed it alike. Observe is O(1); the memory is
// fixed (168 slots and a ring of `trend_hours`). Not thread-safe: its owner serialises calls.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/clock.h"

namespace gf {

inline constexpr int kHoursPerWeek = 168;
inline constexpr std::int64_t kHourMs = 3'600'000;

struct LoadForecastConfig {
  double profile_weight = 0.3;  // of the newest week in an hour-of-week slot
  int trend_hours = 6;          // the recent hours the trend compares (>= 1)
  double trend_cap = 3.0;       // the trend factor stays within [1/cap, cap]
};

// A span of demand: `gpus` GPUs wanted from `from` to `to` (a job, from its submission to its
// end; still wanted at `to` = the time the demand is measured to, for a job not ended).
struct DemandSpan {
  Time from{};
  Time to{};
  double gpus = 0;
};

// The mean GPUs wanted in each of `hours` whole hours from `first_hour` (which the caller
// floors to an hour): the spans' GPU-time inside each hour / 1 hour. O(spans + hours).
std::vector<double> HourlyDemand(const std::vector<DemandSpan>& spans, Time first_hour, int hours);

// The hour that contains `t` (UTC), and its slot in the week (0 = Monday 00:00-01:00 UTC).
Time HourOf(Time t);
int HourOfWeek(Time hour);

class LoadForecast {
 public:
  explicit LoadForecast(LoadForecastConfig config = {});

  // The demand seen over the hour beginning at `hour` (HourOf). Hours come in order; an hour
  // older than the last one observed is ignored (a duplicate after a restart), a gap is fine.
  void Observe(Time hour, double gpus);

  // The forecast demand for each of the `hours` hours from `hour` (HourOf; the current hour
  // first). Empty before any hour was observed.
  std::vector<double> Forecast(Time hour, int hours) const;

  // The trend factor now (1: on profile), and how many hours have been observed.
  double Trend() const;
  std::int64_t HoursObserved() const { return observed_; }
  // The last hour observed; nullopt before any.
  std::optional<Time> LastHour() const { return last_; }

 private:
  LoadForecastConfig config_;
  std::array<double, kHoursPerWeek> profile_{};
  std::array<bool, kHoursPerWeek> seen_{};
  // The last trend_hours hours: what was seen, and what the profile said before it was seen
  // (a negative `expected`: the slot had no profile yet). A ring: `next_` is the oldest.
  struct Recent {
    double seen = 0;
    double expected = -1;
  };
  std::vector<Recent> recent_;
  int next_ = 0;
  int recent_count_ = 0;
  std::int64_t observed_ = 0;
  std::optional<Time> last_;
};

// What the idle power policy does with a forecast (docs/automation.md, "Idle power"): how many
// idle GPUs to keep ready (uncapped) now. Demand forecast within the next `lead` hours beyond
// the GPUs held now needs that many GPUs ready when it comes; the rest of the idle GPUs may be
// capped at once instead of after the idle wait. nullopt: no forecast yet (the plain rule).
std::optional<int> GpusToKeepReady(
    const LoadForecast& forecast, Time now, int lead_hours, int gpus_in_use, int gpus_total);

}  // namespace gf
