// `gpufleet report [--period YYYY-MM] [--team T] [--format text|json|csv|html] [--output FILE]`
// (issue #9, docs/reports.md): the monthly audit report, computed by the server
// (GET /api/v1/report) and rendered here (report_view.h).
#pragma once

#include <string>

#include "cli/client_commands.h"
#include "core/clock.h"
#include "core/result.h"

namespace gf {

struct ReportFlags {
  std::string period{};  // "" = the month of now (UTC)
  std::string team{};    // "" = every team the caller may see
  std::string format = "text";
  std::string output{};  // "" = standard output
};

// The GET target for these flags, e.g. "/api/v1/report?period=2026-11&team=cv" (the team
// percent-encoded). Errors: kInvalidArgument naming --period (not YYYY-MM).
Result<std::string> ReportTarget(const ReportFlags& flags, Time now);

void AddReportCommand(CLI::App& app, ClientContext& context);

}  // namespace gf
