// UsageLedger: fair-share usage (GPU-seconds, decayed with a half-life) per key — a team or a
// user — kept incrementally from the GPUs running jobs hold: by the controller, and by
// `gpufleet sim` on its virtual clock (one formula for both).
//
// The sums are not stored: at start the controller seeds them (Seed) from the usage records
// of the store, decayed to now (controller/accounting.h), so a restart keeps fair share.
// State thread only.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/clock.h"

namespace gf {

class UsageLedger {
 public:
  explicit UsageLedger(std::chrono::seconds half_life) : half_life_(half_life) {}

  // Brings every sum to `now`: decays it by the time since the last call and adds what `held`
  // (GPUs per key, each weighted by its model: FairSharePolicy::model_weights) used in between.
  // `held` is taken as held for the whole interval, so call this before anything that changes which
  // jobs hold GPUs. The first call only sets the start; a call with a time not after the last one
  // changes nothing.
  void Advance(Time now, const std::map<std::string, double>& held);

  // Replaces the sums with `sums`, decayed GPU-seconds as of `as_of`; the next Advance counts
  // from there. For the start-up seed, before the first Advance.
  void Seed(Time as_of, std::map<std::string, double> sums) {
    as_of_ = as_of;
    sums_ = std::move(sums);
  }

  // Decayed GPU-seconds by key, as of the last Advance.
  const std::map<std::string, double>& Sums() const { return sums_; }

 private:
  std::chrono::seconds half_life_;
  std::optional<Time> as_of_;
  std::map<std::string, double> sums_;
};

}  // namespace gf
