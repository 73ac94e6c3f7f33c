// GpuMinute: one GPU's activity over one wall-clock minute, rolled up from its samples by
// monitor/telemetry and persisted in the store, where reports (issue #9) read it.
// Plain value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/ids.h"
#include "model/node.h"

namespace gf {

struct GpuMinute {
  NodeId node{};
  GpuUuid uuid{};
  Time minute{};               // start of the minute (a multiple of 60 s since the epoch)
  std::optional<JobId> job{};  // the job that held the GPU at the minute's last sample
  std::string user{};          // that job's owner; "" when unallocated
  std::string team{};          // that job's team; "" when unallocated
  int samples = 0;             // samples that fell in the minute
  // How much of the minute a job held the GPU, in ms (0..60,000): the time from each sample
  // back to the previous one (within the minute) while a job held the GPU at that sample. A job
  // that starts or ends within the minute holds only part of it; a GPU observed for part of the
  // minute (its agent started) is allocated for that part at most.
  int allocated_ms = 0;
  double util_mean_pct = 0;
  int util_max_pct = 0;
  std::int64_t memory_used_max_mib = 0;
  double power_mean_w = 0;
  std::int64_t energy_mj = 0;         // energy counter delta within the minute
  GpuHealth health = GpuHealth::kOk;  // worst health seen in the minute
  bool operator==(const GpuMinute&) const = default;
};

}  // namespace gf
