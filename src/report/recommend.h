// Recommendations of the monthly report (report.h): advice a person can act on, each with the
// figures behind it, derived from the report's own rows (so a user's report advises only on
// what that user may see). The thresholds are report.h's named constants. Pure.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace gf {

// Idle, overloaded and unhealthy GPUs; teams that used little of what they held or went past
// their budget; users whose jobs left most of their GPUs' memory unused (they could share
// GPUs) or held GPUs idle. In that order, GPUs by node and index, teams and users by name.
std::vector<Recommendation> Recommend(const Report& report);

// The --gpu-mem a job that peaked at `peak_mib` could ask for: the peak plus a quarter of
// headroom, rounded up to a multiple of 4 GiB ("16G" for a 12 GiB peak).
std::string SuggestedGpuMem(std::int64_t peak_mib);

}  // namespace gf
