// UsageRecord: the GPU-time of one run of a job (from its start to its end, however it ended:
// completed, failed, cancelled, timed out, preempted, lost with its node), written by the
// controller when the run ends and kept by the store for accounting: GPU-hour budgets per
// period and the fair-share usage a restart starts from (controller/accounting.h).
// Plain value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"

namespace gf {

struct UsageRecord {
  std::int64_t seq = 0;  // assigned by the store (ignored in a batch), increasing
  JobId job{};
  Time start{};            // the run's start
  Time end{};              // the run's end; >= start
  std::string team{};      // the job's team as the scheduler keys it ("" = no team)
  std::string user{};      // the job's owner
  std::string priority{};  // the job's class name at the time ("high", ...)
  int gpus = 0;
  std::vector<std::string> gpu_models{};  // distinct models of its GPUs, sorted
  double gpu_seconds = 0;                 // gpus x (end - start) in seconds
  std::int64_t energy_mj = 0;             // energy its GPUs used during the run, millijoules
  bool operator==(const UsageRecord&) const = default;
};

// GPU-seconds of one (team, user) within a time range (Store::SumUsage).
struct UsageSum {
  std::string team{};
  std::string user{};
  double gpu_seconds = 0;
  // Energy of those runs, each counted for its part inside the range like gpu_seconds
  // (pro rata to its time), millijoules.
  std::int64_t energy_mj = 0;
  bool operator==(const UsageSum&) const = default;
};

}  // namespace gf
