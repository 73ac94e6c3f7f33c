#include "predict/load_forecast.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace gf {

std::vector<double> HourlyDemand(const std::vector<DemandSpan>& spans, Time first_hour, int hours) {
  std::vector<double> demand(static_cast<std::size_t>(std::max(hours, 0)), 0.0);
  if (hours <= 0) {
    return demand;
  }
  // Whole hours inside a span add its GPUs through a difference array; the partial first and
  // last hours add their share directly: O(1) per span however long.
  std::vector<double> whole(demand.size() + 1, 0.0);
  const std::int64_t first = ToUnixMillis(first_hour);
  const std::int64_t end = first + std::int64_t{hours} * kHourMs;
  const auto at = [&](std::int64_t h) -> double& {
    return demand[static_cast<std::size_t>(h)];
  };
  for (const DemandSpan& span : spans) {
    const std::int64_t a = std::max(ToUnixMillis(span.from), first);
    const std::int64_t b = std::min(ToUnixMillis(span.to), end);
    if (b <= a || span.gpus <= 0) {
      continue;
    }
    const std::int64_t ha = (a - first) / kHourMs;
    const std::int64_t hb = (b - first) / kHourMs;  // may be `hours` when b == end
    const auto share = [&](std::int64_t ms) {
      return span.gpus * static_cast<double>(ms) / static_cast<double>(kHourMs);
    };
    if (ha == hb) {
      at(ha) += share(b - a);
      continue;
    }
    at(ha) += share(first + (ha + 1) * kHourMs - a);
    whole[static_cast<std::size_t>(ha + 1)] += span.gpus;
    whole[static_cast<std::size_t>(hb)] -= span.gpus;
    if (hb < hours) {
      at(hb) += share(b - (first + hb * kHourMs));
    }
  }
  double running = 0;
  for (std::size_t h = 0; h < demand.size(); ++h) {
    running += whole[h];
    demand[h] += running;
  }
  return demand;
}

Time HourOf(Time t) {
  const std::int64_t ms = ToUnixMillis(t);
  // Floor, also before 1970 (a test's clock may start at 0).
  const std::int64_t hour = ms >= 0 ? ms / kHourMs : -((-ms + kHourMs - 1) / kHourMs);
  return FromUnixMillis(hour * kHourMs);
}

int HourOfWeek(Time hour) {
  const std::int64_t h = ToUnixMillis(HourOf(hour)) / kHourMs;
  const std::int64_t day = h >= 0 ? h / 24 : -((-h + 23) / 24);
  // 1970-01-01 was a Thursday (3 with Monday 0).
  const std::int64_t weekday = ((day + 3) % 7 + 7) % 7;
  const std::int64_t hour_of_day = ((h % 24) + 24) % 24;
  return static_cast<int>(weekday * 24 + hour_of_day);
}

LoadForecast::LoadForecast(LoadForecastConfig config)
    : config_(config), recent_(static_cast<std::size_t>(std::max(config.trend_hours, 1))) {
  GF_CHECK(config_.profile_weight > 0 && config_.profile_weight <= 1 && config_.trend_cap >= 1);
}

void LoadForecast::Observe(Time hour, double gpus) {
  hour = HourOf(hour);
  if (last_ && hour <= *last_) {
    return;
  }
  gpus = std::max(gpus, 0.0);
  const auto slot = static_cast<std::size_t>(HourOfWeek(hour));
  recent_[static_cast<std::size_t>(next_)] =
      Recent{.seen = gpus, .expected = seen_[slot] ? profile_[slot] : -1};
  next_ = (next_ + 1) % static_cast<int>(recent_.size());
  recent_count_ = std::min(recent_count_ + 1, static_cast<int>(recent_.size()));
  profile_[slot] =
      seen_[slot] ? profile_[slot] + config_.profile_weight * (gpus - profile_[slot]) : gpus;
  seen_[slot] = true;
  ++observed_;
  last_ = hour;
}

double LoadForecast::Trend() const {
  double seen = 0;
  double expected = 0;
  int compared = 0;
  for (int i = 0; i < recent_count_; ++i) {
    const Recent& r = recent_[static_cast<std::size_t>(i)];
    if (r.expected >= 0) {
      seen += r.seen;
      expected += r.expected;
      ++compared;
    }
  }
  if (compared == 0) {
    return 1.0;  // no recent hour had a profile to compare with
  }
  if (expected <= 0) {
    return seen > 0 ? config_.trend_cap : 1.0;  // demand where the profile had none
  }
  return std::clamp(seen / expected, 1.0 / config_.trend_cap, config_.trend_cap);
}

std::vector<double> LoadForecast::Forecast(Time hour, int hours) const {
  std::vector<double> out;
  if (observed_ == 0 || hours <= 0) {
    return out;
  }
  double level = 0;  // the recent hours' mean: for slots with no profile yet
  for (int i = 0; i < recent_count_; ++i) {
    level += recent_[static_cast<std::size_t>(i)].seen;
  }
  level /= std::max(recent_count_, 1);
  const double trend = Trend();
  const std::int64_t first = ToUnixMillis(HourOf(hour));
  out.reserve(static_cast<std::size_t>(hours));
  for (int h = 0; h < hours; ++h) {
    const auto slot =
        static_cast<std::size_t>(HourOfWeek(FromUnixMillis(first + std::int64_t{h} * kHourMs)));
    out.push_back(seen_[slot] ? profile_[slot] * trend : level);
  }
  return out;
}

std::optional<int> GpusToKeepReady(
    const LoadForecast& forecast, Time now, int lead_hours, int gpus_in_use, int gpus_total) {
  const std::vector<double> ahead = forecast.Forecast(now, std::max(lead_hours, 0) + 1);
  if (ahead.empty()) {
    return std::nullopt;
  }
  const double peak = *std::max_element(ahead.begin(), ahead.end());
  const int idle = std::max(gpus_total - gpus_in_use, 0);
  const auto wanted = static_cast<int>(std::ceil(peak - 1e-9));
  return std::clamp(wanted - gpus_in_use, 0, idle);
}

}  // namespace gf
