// Internal to gf_api: the output helpers that json_mapping.cpp shares with the files split
// from it (gpu_json.cpp, explanation_json.cpp): optional fields as null, GPU amounts. Include
// it from those files alone.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "model/job.h"

namespace gf {

nlohmann::json OptionalTime(const std::optional<Time>& t);
nlohmann::json OptionalMillis(const std::optional<Time>& t);
template <typename T>
nlohmann::json OptionalValue(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}
nlohmann::json OptionalId(const std::optional<JobId>& id);
// A pending job's estimated start as a range with its basis (model/start_estimate.h), or null:
// {"basis", "earliest", "earliest_ms", "latest", "latest_ms"}.
nlohmann::json StartEstimateJson(const std::optional<StartEstimate>& start);
// Milli-GPUs as GPUs: an integer when whole (2000 → 2), else a number (250 → 0.25).
nlohmann::json GpuAmountJson(std::int64_t milli);
// GPU memory in MiB: null when not asked or not limited (0: the whole GPU's).
nlohmann::json GpuMemJson(std::int64_t mib);

}  // namespace gf
