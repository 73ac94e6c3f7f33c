#include "monitor/series_ring.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#include "core/check.h"

namespace gf {
namespace {

// The "no sample" value of a storage type: its maximum, which no clamped value reaches.
template <typename T>
constexpr T kEmpty = std::numeric_limits<T>::max();

std::size_t IndexOf(Metric metric) {
  return static_cast<std::size_t>(metric);
}

// a / b rounded toward plus infinity (b > 0); never overflows.
std::int64_t CeilDiv(std::int64_t a, std::int64_t b) {
  return a / b + ((a % b != 0 && a > 0) ? 1 : 0);
}

std::optional<std::int64_t> Percent(std::optional<int> pct) {
  if (!pct) {
    return std::nullopt;
  }
  return std::clamp(*pct, 0, 100);
}

// Milliwatts to deciwatts, rounded to nearest (computed without the overflow of mw + 50).
std::optional<std::int64_t> Deciwatts(std::optional<std::int64_t> mw) {
  if (!mw) {
    return std::nullopt;
  }
  const std::int64_t positive = std::max<std::int64_t>(*mw, 0);
  return positive / 100 + (positive % 100 >= 50 ? 1 : 0);
}

}  // namespace

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0 && a < 0) ? 1 : 0);
}

Readings ReadingsOf(const GpuSample& sample) {
  Readings readings{};
  if (sample.lost) {
    return readings;  // a lost GPU answers nothing: a gap in every series
  }
  readings[IndexOf(Metric::kUtilGpu)] = Percent(sample.util_gpu_pct);
  readings[IndexOf(Metric::kUtilMemory)] = Percent(sample.util_memory_pct);
  readings[IndexOf(Metric::kMemoryUsedMib)] = std::max<std::int64_t>(sample.memory_used_mib, 0);
  readings[IndexOf(Metric::kPowerW)] = Deciwatts(sample.power_mw);
  if (sample.temperature_c) {
    readings[IndexOf(Metric::kTemperatureC)] = std::max(*sample.temperature_c, 0);
  }
  return readings;
}

double ToSeriesValue(Metric metric, std::int64_t stored) {
  const auto value = static_cast<double>(stored);
  return metric == Metric::kPowerW ? value / 10.0 : value;
}

SeriesRing::SeriesRing(int slots, Millis step) : slots_(slots), step_ms_(step.count()) {
  GF_CHECK(slots >= 1 && step.count() > 0);
  const auto size = static_cast<std::size_t>(slots);
  util_gpu_.assign(size, kEmpty<std::uint8_t>);
  util_memory_.assign(size, kEmpty<std::uint8_t>);
  memory_mib_.assign(size, kEmpty<std::uint32_t>);
  power_dw_.assign(size, kEmpty<std::uint16_t>);
  temperature_c_.assign(size, kEmpty<std::uint8_t>);
}

template <typename Self, typename F>
decltype(auto) SeriesRing::WithColumn(Self& self, Metric metric, F&& f) {
  switch (metric) {
    case Metric::kUtilGpu:
      return f(self.util_gpu_);
    case Metric::kUtilMemory:
      return f(self.util_memory_);
    case Metric::kMemoryUsedMib:
      return f(self.memory_mib_);
    case Metric::kPowerW:
      return f(self.power_dw_);
    case Metric::kTemperatureC:
      break;
  }
  return f(self.temperature_c_);
}

std::int64_t SeriesRing::SlotOf(Time t) const {
  return FloorDiv(ToUnixMillis(t), step_ms_);
}

std::size_t SeriesRing::CellOf(std::int64_t slot) const {
  return static_cast<std::size_t>((slot % slots_ + slots_) % slots_);
}

void SeriesRing::Set(std::size_t cell, Metric metric, std::optional<std::int64_t> value) {
  WithColumn(*this, metric, [&](auto& column) {
    using T = typename std::remove_reference_t<decltype(column)>::value_type;
    const std::int64_t top = static_cast<std::int64_t>(kEmpty<T>) - 1;
    column[cell] = value ? static_cast<T>(std::clamp<std::int64_t>(*value, 0, top)) : kEmpty<T>;
  });
}

std::optional<std::int64_t> SeriesRing::Get(std::size_t cell, Metric metric) const {
  return WithColumn(*this, metric, [&](const auto& column) -> std::optional<std::int64_t> {
    using T = typename std::remove_reference_t<decltype(column)>::value_type;
    if (column[cell] == kEmpty<T>) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(column[cell]);
  });
}

void SeriesRing::Clear(std::size_t cell) {
  for (Metric metric : kMetrics) {
    Set(cell, metric, std::nullopt);
  }
}

void SeriesRing::Put(std::int64_t slot, const Readings& values) {
  if (!newest_ || slot > *newest_) {
    if (newest_) {
      // Empty the slots skipped since the newest one (at most one lap of the ring), so that
      // what they held a lap ago does not pass for a reading of theirs.
      for (std::int64_t s = std::max(*newest_ + 1, slot - slots_ + 1); s < slot; ++s) {
        Clear(CellOf(s));
      }
    }
    newest_ = slot;
  } else if (slot <= *newest_ - slots_) {
    return;  // older than everything the ring keeps
  }
  const std::size_t cell = CellOf(slot);
  for (Metric metric : kMetrics) {
    Set(cell, metric, values[IndexOf(metric)]);
  }
}

void SeriesRing::AppendPoints(Metric metric,
                              Time from,
                              Time to,
                              std::vector<SeriesPoint>& out) const {
  if (!newest_) {
    return;
  }
  // Slot s starts at s * step: from <= s * step < to  <=>  ceil(from/step) <= s < ceil(to/step).
  const std::int64_t first = std::max(CeilDiv(ToUnixMillis(from), step_ms_), *newest_ - slots_ + 1);
  const std::int64_t last = std::min(CeilDiv(ToUnixMillis(to), step_ms_) - 1, *newest_);
  for (std::int64_t slot = first; slot <= last; ++slot) {
    if (auto value = Get(CellOf(slot), metric)) {
      out.push_back(SeriesPoint{FromUnixMillis(slot * step_ms_), ToSeriesValue(metric, *value)});
    }
  }
}

std::size_t SeriesRing::Bytes() const {
  std::size_t bytes = 0;
  for (Metric metric : kMetrics) {
    bytes += WithColumn(
        *this, metric, [](const auto& column) { return column.capacity() * sizeof(column[0]); });
  }
  return bytes;
}

void SlotMean::Add(std::int64_t slot, const Readings& values) {
  if (slot != slot_) {
    slot_ = slot;
    sum_ = {};
    count_ = {};
  }
  for (std::size_t i = 0; i < kMetricCount; ++i) {
    if (values[i]) {
      sum_[i] += *values[i];
      ++count_[i];
    }
  }
}

Readings SlotMean::Means() const {
  Readings means{};
  for (std::size_t i = 0; i < kMetricCount; ++i) {
    if (count_[i] > 0) {
      // Readings are never negative (ReadingsOf clamps them), so this rounds half up.
      means[i] = (sum_[i] + count_[i] / 2) / count_[i];
    }
  }
  return means;
}

}  // namespace gf
