// The text of `gpufleet quota`: a GET /api/v1/quota answer (api/json_mapping.cpp QuotaToJson)
// for a person: the budget period, one row per team (guarantee, max, GPUs held and borrowed,
// budget, used, left, over-budget policy) and one row per user with their GPU-hours.
//
// A pure function of the JSON, so tests compare the text. Reads defensively like views.h (a
// missing or null field prints "-", never throws). Stateless; safe from any thread.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace gf {

void PrintQuota(const nlohmann::json& quota, std::ostream& out);

}  // namespace gf
