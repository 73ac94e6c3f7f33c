#include "cli/report_command.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "api/api_client.h"
#include "cli/report_pdf.h"
#include "cli/report_view.h"
#include "core/hex.h"
#include "report/report.h"

namespace gf {
namespace {

void Render(ReportFormat format, const nlohmann::json& report, std::ostream& out) {
  switch (format) {
    case ReportFormat::kText:
      PrintReportText(report, out);
      break;
    case ReportFormat::kJson:
      out << report.dump(2) << '\n';
      break;
    case ReportFormat::kCsv:
      WriteReportCsv(report, out);
      break;
    case ReportFormat::kHtml:
    case ReportFormat::kPdf:  // the page Chromium prints (RunReport)
      WriteReportHtml(report, out);
      break;
  }
}

// How long Chromium may take to print: a second or two for a month of a small cluster; a large
// one's tables take longer, a hung browser never ends.
constexpr Millis kPrintTimeout{120'000};

// Writes `text` to `path` whole: to a temporary file beside it, then renamed over it, so a
// reader never sees half a report.
Status WriteFile(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << text;
    file.flush();
    if (!file) {
      return IoError("--output: cannot write " + temporary +
                     "; check the folder exists and "
                     "is writable");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return IoError("--output: cannot replace " + path);
  }
  return OkStatus();
}

int RunReport(const ClientContext& ctx, const ReportFlags& flags) {
  const Result<ReportFormat> format = ParseReportFormat(flags.format);
  if (!format.ok()) {
    return Fail(format.error());
  }
  const Result<std::string> target = ReportTarget(flags, SystemClock().Now());
  if (!target.ok()) {
    return Fail(target.error());
  }
  // A PDF is bytes for a file, not a terminal; and without Chromium there is no point asking
  // the server for a month of figures first.
  std::string chromium;
  if (*format == ReportFormat::kPdf) {
    if (flags.output.empty()) {
      return Fail(InvalidArgument("--format pdf writes a file: add --output FILE.pdf"));
    }
    // NOLINTNEXTLINE(concurrency-mt-unsafe): read before the client starts any thread
    const Result<std::string> found = FindChromium(std::getenv("CHROMIUM"), std::getenv("PATH"));
    if (!found.ok()) {
      return Fail(found.error());
    }
    chromium = *found;
  }
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  const Result<nlohmann::json> report = (*opened)->CallJson("GET", *target, std::nullopt);
  if (!report.ok()) {
    return Fail(report.error());
  }
  if (flags.output.empty()) {
    Render(*format, *report, std::cout);
    return 0;
  }
  std::ostringstream text;
  Render(*format, *report, text);
  std::string bytes = text.str();
  if (*format == ReportFormat::kPdf) {
    Result<std::string> pdf = PrintHtmlToPdf(chromium, bytes, kPrintTimeout);
    if (!pdf.ok()) {
      return Fail(pdf.error());
    }
    bytes = std::move(*pdf);
  }
  if (const Status written = WriteFile(flags.output, bytes); !written.ok()) {
    return Fail(written.error());
  }
  std::cerr << "gpufleet: report for " << (*report).value("period", "") << " written to "
            << flags.output << '\n';
  return 0;
}

}  // namespace

Result<std::string> ReportTarget(const ReportFlags& flags, Time now) {
  const std::string period = flags.period.empty() ? MonthLabel(now) : flags.period;
  const Result<Time> month = ParseMonth(period);
  if (!month.ok()) {
    return InvalidArgument("--" + month.error().message);
  }
  std::string target = "/api/v1/report?period=" + period;
  if (!flags.team.empty()) {
    target += "&team=" + PercentEncode(flags.team);
  }
  return target;
}

void AddReportCommand(CLI::App& app, ClientContext& context) {
  auto flags = std::make_shared<ReportFlags>();
  auto* report = app.add_subcommand(
      "report",
      "the monthly audit: utilisation allocated vs used, idle and overloaded GPUs, "
      "GPU-hours per team and user, budgets, waste, queueing, failures, energy, "
      "recommendations (docs/reports.md)");
  report->add_option("--period", flags->period, "the month, YYYY-MM (default: this month, UTC)");
  report->add_option("--team", flags->team, "only this team (a user: one of their teams)");
  report
      ->add_option("--format",
                   flags->format,
                   "text, json, csv, html, or pdf (the HTML printed on A4 by Chromium: "
                   "$CHROMIUM, else chromium on PATH; needs --output)")
      ->capture_default_str();
  report->add_option("-o,--output", flags->output, "write to FILE instead of standard output");
  report->callback([&context, flags] { context.exit_code = RunReport(context, *flags); });
}

}  // namespace gf
