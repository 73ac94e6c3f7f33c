// GpuSample: one reading of one GPU's counters, as a GpuBackend returns it.
// Plain value type. Fields a driver does not offer stay nullopt (never a fake zero).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"

namespace gf {

struct GpuProcessSample {
  std::uint32_t pid = 0;
  std::int64_t used_memory_mib = 0;
  bool operator==(const GpuProcessSample&) const = default;
};

struct GpuSample {
  GpuUuid uuid;
  Time time{};
  std::int64_t memory_total_mib = 0;
  std::int64_t memory_used_mib = 0;
  std::optional<int> util_gpu_pct;      // 0..100, over the driver's last sample period
  std::optional<int> util_memory_pct;   // 0..100
  std::optional<int> temperature_c;
  std::optional<std::int64_t> power_mw;       // current draw, milliwatts
  std::optional<std::int64_t> energy_mj;      // total since driver load, millijoules
  std::vector<GpuProcessSample> processes;    // compute processes on this GPU
  bool operator==(const GpuSample&) const = default;
};

}  // namespace gf
