// Recommendations of the monthly report (report.h): advice a person can act on, each with the
// figures behind it, derived from the report's own rows (so a user's report advises only on
// what that user may see). The thresholds are report.h's named constants. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/report.h"

namespace gf {

// Idle, overloaded and unhealthy GPUs; teams that used little of what they held or went past
// their budget; users whose jobs left most of their GPUs' memory unused (they could share
// GPUs) or held GPUs idle. In that order, GPUs by node and index, teams and users by name.
std::vector<Recommendation> Recommend(const Report& report);

// The capacity advice (issue #22): the period's demand (GPUs held or waited for, `hourly`: one
// mean per hour from `first_hour`, HourlyDemand) taught to a LoadForecast, which forecasts the
// week after it. Advice when the forecast's busiest hour wants more than the cluster's
// `cluster_gpus` ("capacity_short": add GPUs, or expect queueing then), or less than
// kSpareCapacityPct of them ("capacity_spare": cap or lend the rest). nullopt with less than a
// day of hours, no demand at all, or a forecast within those bounds.
std::optional<Recommendation> CapacityAdvice(const std::vector<double>& hourly,
                                             Time first_hour,
                                             int cluster_gpus);

// The --gpu-mem a job that peaked at `peak_mib` could ask for: the peak plus a quarter of
// headroom, rounded up to a multiple of 4 GiB ("16G" for a 12 GiB peak).
std::string SuggestedGpuMem(std::int64_t peak_mib);

}  // namespace gf
