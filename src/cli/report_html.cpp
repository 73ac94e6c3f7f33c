// The HTML rendering of `gpufleet report` (report_view.h): one file, no external resources, no
// scripts; charts are inline SVG drawn here. Every text from the server goes through
// HtmlEscape, so a job named "<script>" is shown, never run.
#include <algorithm>

#include "cli/report_view.h"
#include "cli/views.h"
#include "core/gpu_hours.h"
#include "core/svg.h"
#include "model/team.h"

namespace gf {
namespace {

using nlohmann::json;

// Chart geometry, in SVG user units (the browser scales the SVG to the page).
constexpr double kChartHeight = 160;
constexpr double kChartTop = 10;
constexpr double kChartLeft = 40;
constexpr double kDayWidth = 18;
constexpr double kBarHeight = 16;
constexpr double kTeamRow = 40;
constexpr double kTeamLabel = 120;
constexpr double kTeamBarsWidth = 480;

// The page's look: kept small and inline (the file must stand alone).
constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
.alloc{fill:#9ecae1}.used{fill:#08519c}.axis{stroke:#999;stroke-width:0.5}
svg text{font-size:10px;fill:#333}li{margin:0.3em 0})";

double Num(const json& j, const char* key) {
  return JsonNumber(j, key).value_or(0);
}

std::string N(double v) {
  return svg::Num(v);
}

const json& Sub(const json& j, const char* key) {
  static const json none = json::object();
  auto it = j.find(key);
  return it != j.end() && (it->is_object() || it->is_array()) ? *it : none;
}

using svg::Text;

// <rect> with a tooltip (<title>).
std::string Bar(
    const char* cls, double x, double y, double width, double height, const std::string& tip) {
  return svg::Rect(cls, x, y, width, height, tip);
}

// Per day: the share of GPU-minutes allocated (light) and the mean utilisation over all
// minutes (dark: the part of the capacity actually used), 0-100 %.
std::string DayChart(const json& report) {
  const json& days = Sub(report, "days");
  const double width = kChartLeft + kDayWidth * static_cast<double>(days.size()) + 10;
  std::string out = svg::Open(width, kChartHeight + 30);
  for (const double pct : {0.0, 50.0, 100.0}) {
    const double y = kChartTop + kChartHeight * (1 - pct / 100);
    out += svg::Line("axis", kChartLeft, y, width, y) +
           Text(kChartLeft - 4, y + 3, N(pct) + "%", "end");
  }
  double x = kChartLeft;
  for (const json& day : days) {
    const json& f = Sub(day, "figures");
    const std::string label = JsonText(day, "day");
    const double allocated = std::clamp(Num(f, "allocated_pct"), 0.0, 100.0);
    const double used = std::clamp(Num(f, "util_pct"), 0.0, 100.0);
    const std::string tip =
        label + ": allocated " + N(allocated) + " %, used " + N(used) + " % of the GPU capacity";
    const double bottom = kChartTop + kChartHeight;
    out += Bar("alloc",
               x + 1,
               bottom - kChartHeight * allocated / 100,
               kDayWidth - 2,
               kChartHeight * allocated / 100,
               tip);
    out += Bar("used",
               x + 4,
               bottom - kChartHeight * used / 100,
               kDayWidth - 8,
               kChartHeight * used / 100,
               tip);
    out += Text(
        x + kDayWidth / 2, bottom + 12, label.size() >= 10 ? label.substr(8, 2) : label, "middle");
    x += kDayWidth;
  }
  return out + "</svg>";
}

// Per team: GPU-hours allocated (light) and used (dark), scaled to the largest allocation.
std::string TeamChart(const json& report) {
  const json& teams = Sub(report, "teams");
  double most = 0;
  for (const json& team : teams) {
    most = std::max(most, Num(Sub(team, "usage"), "allocated_gpu_hours"));
  }
  const double height = kTeamRow * static_cast<double>(teams.size()) + 10;
  const double width = kTeamLabel + kTeamBarsWidth + 120;
  std::string out = svg::Open(width, height);
  double y = 5;
  for (const json& team : teams) {
    const json& u = Sub(team, "usage");
    const std::string name = TeamLabel(JsonText(team, "team", ""));
    const double allocated = Num(u, "allocated_gpu_hours");
    const double used = Num(u, "used_gpu_hours");
    const double scale = most > 0 ? kTeamBarsWidth / most : 0;
    const std::string tip = name + ": " + FormatGpuHours(allocated) + " GPU-h allocated, " +
                            FormatGpuHours(used) + " used";
    out += Text(kTeamLabel - 6, y + kBarHeight - 4, name, "end");
    out += Bar("alloc", kTeamLabel, y, allocated * scale, kBarHeight, tip);
    out += Bar("used", kTeamLabel, y + kBarHeight, used * scale, kBarHeight, tip);
    out += Text(kTeamLabel + allocated * scale + 6,
                y + kBarHeight - 4,
                FormatGpuHours(allocated) + " / " + FormatGpuHours(used) + " GPU-h");
    y += kTeamRow;
  }
  return out + "</svg>";
}

std::string HtmlTable(const ReportTable& table) {
  std::string out = "<h2>" + HtmlEscape(table.title) + "</h2>\n<table id=\"" +
                    HtmlEscape(table.id) + "\"><thead><tr>";
  for (const std::string& cell : table.header) {
    out += "<th>" + HtmlEscape(cell) + "</th>";
  }
  out += "</tr></thead><tbody>\n";
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (const std::string& cell : row) {
      out += "<td>" + HtmlEscape(cell) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string Recommendations(const json& report) {
  std::string out = "<h2>Recommendations</h2>\n<ul id=\"recommendations\">\n";
  const json& recs = Sub(report, "recommendations");
  if (recs.empty()) {
    out += "<li>None: nothing crossed a threshold.</li>\n";
  }
  for (const json& rec : recs) {
    out += "<li>" + HtmlEscape(JsonText(rec, "message")) + "</li>\n";
  }
  return out + "</ul>\n";
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  return svg::Escape(text);
}

void WriteReportHtml(const json& report, std::ostream& out) {
  const std::string period = JsonText(report, "period");
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
      << "<title>gpufleet report " << HtmlEscape(period) << "</title><style>" << kStyle
      << "</style></head><body>\n<h1>Where the compute went: " << HtmlEscape(period)
      << "</h1>\n<p>Figures up to " << HtmlEscape(JsonText(report, "covered_until"))
      << ". Allocated: GPU-minutes a job held; used: the GPUs' mean utilisation while held "
         "(docs/reports.md).</p>\n";
  out << Recommendations(report);
  out << "<h2>Utilisation per day</h2>\n<p>Light: share of GPU-minutes allocated; dark: share "
         "of the capacity actually used.</p>\n"
      << DayChart(report) << '\n';
  out << "<h2>GPU-hours per team</h2>\n<p>Light: allocated; dark: used.</p>\n"
      << TeamChart(report) << '\n';
  for (const ReportTable& table : ReportTables(report)) {
    if (table.id != "recommendations") {
      out << HtmlTable(table);
    }
  }
  out << "</body></html>\n";
}

}  // namespace gf
