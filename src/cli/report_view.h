// The renderings of `gpufleet report` (docs/reports.md) from the JSON of GET /api/v1/report
// (api/report_json.h): text tables, CSV, and one self-contained HTML file with inline SVG
// charts. The figures are tabulated once (ReportTables) and each format writes those tables,
// so the formats cannot disagree. They read defensively like views.h: a missing or null field
// prints as "-", never throws. Pure; any thread.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace gf {

// kPdf is the HTML printed by Chromium (report_pdf.h), written by the command, not here.
enum class ReportFormat { kText, kJson, kCsv, kHtml, kPdf };
// "text", "json", "csv", "html", "pdf". Errors: kInvalidArgument naming --format and the
// choices.
Result<ReportFormat> ParseReportFormat(std::string_view text);

// One table of the report: cells are plain figures without units (the header says them), so
// that CSV stays machine-readable.
struct ReportTable {
  std::string id{};     // "cluster", "teams", ...: the CSV section name
  std::string title{};  // a heading for people
  std::vector<std::string> header{};
  std::vector<std::vector<std::string>> rows{};
};
std::vector<ReportTable> ReportTables(const nlohmann::json& report);

// Tables under their titles, then the recommendations, one a paragraph.
// A period with no data at all (before the server kept any, or when nothing ran) says so in
// one line instead of printing empty tables.
void PrintReportText(const nlohmann::json& report, std::ostream& out);

// Whether `report` holds any figure: an observed GPU-minute, a job's run, a queued start.
bool ReportHasData(const nlohmann::json& report);

// RFC 4180: each table is a section: a line with its id, its header row, its rows, and an empty
// line. Fields with a comma, quote, CR or LF are quoted, quotes doubled; lines end in CRLF.
void WriteReportCsv(const nlohmann::json& report, std::ostream& out);
std::string CsvField(std::string_view text);

// One HTML file with no external resources (no scripts at all): inline CSS with a print
// stylesheet (A4, no chart split across pages), three inline SVG charts sized for an A4 page
// (GPU-hours per day: capacity, allocated, used; per team: used and held-unused stacked; the
// top wasting jobs), the recommendations and the tables. Every bar carries its figure in
// data-value, as the tables print it. Every text from the server is escaped. Well-formed as XML
// too, so strict parsers read it.
void WriteReportHtml(const nlohmann::json& report, std::ostream& out);
// & < > " ' as entities.
std::string HtmlEscape(std::string_view text);

}  // namespace gf
