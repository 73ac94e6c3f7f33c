// SeriesRing: a fixed-size ring of time slots holding the Telemetry metrics of one GPU at one
// resolution, in compact storage units; SlotMean: the running mean that feeds a coarse ring.
//
// A slot is a multiple of the ring's step since the epoch (slot s covers [s*step, (s+1)*step)).
// The ring keeps the newest `slots` slots: slot s lives in cell s mod slots, and the cell of a
// slot that got no sample holds a sentinel, so a gap stays a gap instead of showing the value
// of a slot one lap older. Storage per slot and metric (kBytesPerSlot in all):
//   utilisation GPU / memory: uint8 percent;  temperature: uint8 °C;
//   power: uint16 deciwatts (0.1 W, up to 6553.4 W);  memory used: uint32 MiB.
// Each type's maximum is its "no sample" sentinel; values are clamped below it.
//
// Owned by Telemetry, under its mutex: not thread-safe by itself.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "model/gpu_sample.h"
#include "monitor/telemetry.h"

namespace gf {

inline constexpr std::size_t kMetricCount = 5;  // the values of Metric
inline constexpr std::array<Metric, kMetricCount> kMetrics = {Metric::kUtilGpu,
                                                              Metric::kUtilMemory,
                                                              Metric::kMemoryUsedMib,
                                                              Metric::kPowerW,
                                                              Metric::kTemperatureC};

// a / b rounded toward minus infinity (b > 0), so that a time before the epoch falls in the
// slot or minute that contains it. Never overflows.
std::int64_t FloorDiv(std::int64_t a, std::int64_t b);

// One sample's metrics in storage units (percent, percent, MiB, deciwatts, °C), indexed by
// Metric; nullopt where the sample has no reading (a lost GPU has none).
using Readings = std::array<std::optional<std::int64_t>, kMetricCount>;

Readings ReadingsOf(const GpuSample& sample);
// A stored value in the unit Series() returns: percent, MiB, watts, °C.
double ToSeriesValue(Metric metric, std::int64_t stored);

class SeriesRing {
 public:
  static constexpr std::size_t kBytesPerSlot = 1 + 1 + 4 + 2 + 1;
  // The heap memory of a ring of `slots` slots.
  static constexpr std::size_t BytesFor(int slots) {
    return kBytesPerSlot * static_cast<std::size_t>(slots);
  }

  // Requires: slots >= 1, step > 0.
  SeriesRing(int slots, Millis step);

  // The slot that holds time t.
  std::int64_t SlotOf(Time t) const;
  // Stores `values` as slot `slot`, replacing what the slot held. Moving to a newer slot
  // empties the slots skipped on the way (gaps); a slot older than the ring keeps is dropped.
  void Put(std::int64_t slot, const Readings& values);
  // Appends the points of `metric` whose slot start is in [from, to), oldest first, skipping
  // empty slots.
  void AppendPoints(Metric metric, Time from, Time to, std::vector<SeriesPoint>& out) const;
  // Heap bytes held now (the storage's capacity); BytesFor(slots) after construction.
  std::size_t Bytes() const;

 private:
  std::size_t CellOf(std::int64_t slot) const;
  void Clear(std::size_t cell);
  void Set(std::size_t cell, Metric metric, std::optional<std::int64_t> value);
  std::optional<std::int64_t> Get(std::size_t cell, Metric metric) const;
  // Calls f with the column of `self` that stores `metric` (its element type differs per
  // metric); one template for the const and the mutable ring.
  template <typename Self, typename F>
  static decltype(auto) WithColumn(Self& self, Metric metric, F&& f);

  std::int64_t slots_;
  std::int64_t step_ms_;
  std::optional<std::int64_t> newest_{};  // the newest slot written; nullopt while empty
  std::vector<std::uint8_t> util_gpu_{};
  std::vector<std::uint8_t> util_memory_{};
  std::vector<std::uint32_t> memory_mib_{};
  std::vector<std::uint16_t> power_dw_{};
  std::vector<std::uint8_t> temperature_c_{};
};

// The mean of the samples that fell in one slot of a coarse ring, per metric, in storage
// units; a coarse slot shows the mean of the samples seen so far in it.
class SlotMean {
 public:
  // Adds a sample of `slot`; a sample of another slot than the current one starts afresh
  // (Telemetry feeds samples in time order).
  void Add(std::int64_t slot, const Readings& values);
  // The rounded means; nullopt for a metric no sample of the slot had.
  Readings Means() const;

 private:
  std::int64_t slot_ = 0;
  std::array<std::int64_t, kMetricCount> sum_{};
  std::array<std::int64_t, kMetricCount> count_{};
};

}  // namespace gf
