#include "scheduler/ordering/usage_ledger.h"

#include <cmath>
#include <numbers>

#include "scheduler/policy.h"

namespace gf {
namespace {

// GPU-seconds that `gpus` held for `seconds` are worth at the end of that interval, each
// instant decayed by its own age: the integral of gpus * 2^(-(t_end - t) / h) over the
// interval, gpus * h / ln 2 * (1 - 2^(-seconds / h)). Adding gpus * seconds undecayed instead
// would overcount long intervals (a whole half-life of use would count double its worth).
double DecayedHeld(double gpus, double seconds, double half_life_s) {
  return gpus * half_life_s / std::numbers::ln2 * (1 - std::exp2(-seconds / half_life_s));
}

}  // namespace

void UsageLedger::Advance(Time now, const std::map<std::string, double>& held) {
  if (!as_of_) {
    as_of_ = now;
    return;
  }
  if (now <= *as_of_) {
    return;
  }
  const Millis elapsed = std::chrono::duration_cast<Millis>(now - *as_of_);
  as_of_ = now;
  if (half_life_.count() <= 0) {  // no decay configured: plain sums
    for (const auto& [key, gpus] : held) {
      sums_[key] += gpus * std::chrono::duration<double>(elapsed).count();
    }
    return;
  }
  for (auto& [key, sum] : sums_) {
    sum = DecayedUsage(sum, elapsed, half_life_);
  }
  const double seconds = std::chrono::duration<double>(elapsed).count();
  const auto half_life_s = static_cast<double>(half_life_.count());
  for (const auto& [key, gpus] : held) {
    sums_[key] += DecayedHeld(gpus, seconds, half_life_s);
  }
}

}  // namespace gf
