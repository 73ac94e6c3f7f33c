#include "model/start_estimate.h"

namespace gf {

std::string_view ToString(StartBasis basis) {
  switch (basis) {
    case StartBasis::kTimeLimits:
      return "time_limits";
    case StartBasis::kPredictions:
      return "predictions";
    case StartBasis::kPreemption:
      return "preemption";
  }
  return "time_limits";
}

}  // namespace gf
