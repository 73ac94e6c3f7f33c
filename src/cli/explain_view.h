// The text of `gpufleet explain JOB`: a GET /api/v1/jobs/{id}/explain answer (model/
// explanation.h as api/json_mapping.cpp writes it) for a person, in sections: the outcome,
// the jobs ahead, Priority (factor by factor, in the order they are compared), Quota, and
// Placement per node.
//
// A pure function of the JSON and the current time, so tests compare the text. Reads
// defensively like views.h (a missing or null field prints "-", never throws).
// Stateless; safe to call from any thread.
#pragma once

#include <cstdint>
#include <ostream>

#include <nlohmann/json.hpp>

namespace gf {

// `now_ms` (unix milliseconds) turns times into "in 50m" / "25m ago".
void PrintExplanation(const nlohmann::json& explanation, std::int64_t now_ms, std::ostream& out);

}  // namespace gf
