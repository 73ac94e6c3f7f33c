// The JSON of GET /api/v1/report (ClusterService::MonthlyReport, report/report.h): what the CLI
// renders in its four formats and the dashboard will draw. Every field of the report goes out
// with its unit in its name (_pct, _gpu_hours, _s, _mib, _mj); optional figures are null
// (no budget, no guarantee, no energy price). docs/openapi.json (Report) describes it.
// Pure; any thread.
#pragma once

#include <nlohmann/json.hpp>

#include "model/audit_report.h"

namespace gf {

nlohmann::json ReportToJson(const Report& report);

}  // namespace gf
