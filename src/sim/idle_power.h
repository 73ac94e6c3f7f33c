// What capping idle GPUs costs and saves over a replay (issue #22, item 4): `gpufleet sim
// --idle-power-after D`. Worked out from a replay's runs after the fact, so the engine is
// untouched: the GPUs held over time (each run's start and end), an idle pool in which a start
// takes the GPUs freed last (the warmest, as best fit tends to), and two rules for capping:
//
//   - idle wait only (`gpufleet up --idle-power-after`, agent/power_saver.h): a GPU idle for
//     `idle_after` is capped;
//   - with the load forecast (predict/load_forecast.h): the forecast learns each hour's demand
//     (the GPUs held or waited for) as the hour ends, and an idle GPU is capped once it has been
//     idle `settle` unless it is among the GPUs the forecast wants ready within `lead_hours`
//     (GpusToKeepReady); caps are lifted ahead of forecast demand. Until the first hour ends
//     there is no forecast, and the idle wait decides.
//
// A start that gets a capped GPU waits `lift` for its limit to be restored: the added queueing.
// The replay itself did not wait (an estimate beside the replay, not inside it). Shares of a GPU
// count as one GPU held. Trace time 0 is taken as 1970-01-01 00:00 UTC (a Thursday) for the
// forecast's hour of the week. Pure.
#pragma once

#include <string>

#include "core/clock.h"
#include "sim/engine.h"

namespace gf::sim {

struct IdlePowerOptions {
  Millis idle_after{std::chrono::minutes(10)};  // the idle wait before a cap
  Millis settle{std::chrono::minutes(1)};       // with a forecast: idle this long first
  Millis lift{std::chrono::seconds(30)};        // a capped GPU's restore before a start
  int lead_hours = 2;                           // how far ahead the forecast is read
};

struct IdlePowerFigures {
  double idle_gpu_hours = 0;    // GPU-hours no job held
  double capped_gpu_hours = 0;  // of them, capped
  int starts = 0;               // runs started
  int starts_delayed = 0;       // of them, on a capped GPU: waited `lift`
  double added_queueing_s = 0;  // starts_delayed x lift
};

struct IdlePowerComparison {
  IdlePowerFigures idle_wait;  // the idle wait only
  IdlePowerFigures forecast;   // with the load forecast
};

IdlePowerComparison CompareIdlePower(const SimResult& result, const IdlePowerOptions& options);

// The section `gpufleet sim` prints: a row per rule.
std::string FormatIdlePower(const IdlePowerComparison& comparison, const IdlePowerOptions& options);

}  // namespace gf::sim
