// UsageLedger: fair-share usage (GPU-seconds, decayed with a half-life) per key — a team or a
// user — kept incrementally by the controller from the GPUs its running jobs hold.
//
// The sums start from zero when the controller starts (they are not stored): after a restart
// fair share forgets past usage until it builds up again. State thread only.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "core/clock.h"

namespace gf {

class UsageLedger {
 public:
  explicit UsageLedger(std::chrono::seconds half_life) : half_life_(half_life) {}

  // Brings every sum to `now`: decays it by the time since the last call and adds what `held`
  // (GPUs per key) used in between. `held` is taken as held for the whole interval, so call
  // this before anything that changes which jobs hold GPUs. The first call only sets the start;
  // a call with a time not after the last one changes nothing.
  void Advance(Time now, const std::map<std::string, int>& held);

  // Decayed GPU-seconds by key, as of the last Advance.
  const std::map<std::string, double>& Sums() const { return sums_; }

 private:
  std::chrono::seconds half_life_;
  std::optional<Time> as_of_;
  std::map<std::string, double> sums_;
};

}  // namespace gf
