// The HTML rendering of `gpufleet report` (report_view.h): one file, no external resources, no
// scripts; charts are inline SVG drawn here. Every text from the server goes through
// HtmlEscape, so a job named "<script>" is shown, never run.
#include <algorithm>
#include <string>
#include <vector>

#include "cli/report_view.h"
#include "cli/views.h"
#include "core/gpu_hours.h"
#include "core/svg.h"
#include "model/team.h"

namespace gf {
namespace {

using nlohmann::json;

// Chart geometry, in SVG user units: one unit is one CSS pixel, so a chart of kChartWidth fills
// an A4 page's width inside its margins (210 mm - 2 x 12 mm = 186 mm = 703 px at 96 px an inch)
// and its 11-unit text prints at about 8 pt.
constexpr double kChartWidth = 680;
constexpr double kLegendTop = 4;
constexpr double kPlotTop = 44;  // below the legend and the unit above the y axis
constexpr double kDayPlotHeight = 180;
constexpr double kDayLeft = 44;          // room for the y ticks
constexpr double kBarLabelWidth = 140;   // a team's or job's name, left of its bar
constexpr double kBarValueWidth = 220;   // the figures written after the longest bar
constexpr std::size_t kValueBytes = 36;  // about what kBarValueWidth holds
constexpr double kBarRow = 22;
constexpr double kBarHeight = 14;
constexpr double kAxisRoom = 34;          // x ticks and the axis' name under a plot
constexpr std::size_t kMaxTeamBars = 15;  // the rest are in the table below the chart
constexpr std::size_t kLabelBytes = 22;

// The page's look: kept small and inline (the file must stand alone). The print rules make it an
// A4 document: white paper, no chart cut by a page break, headings kept with what follows, table
// headers repeated on each page; the chart colours (Okabe-Ito blues and vermilion) stay apart in
// grey too, and are printed even where the browser drops background colours.
constexpr const char* kStyle =
    R"(body{font-family:"DejaVu Sans",Arial,sans-serif;margin:2em;color:#222;background:#fff}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
thead{display:table-header-group}tr{break-inside:avoid}
h2{break-after:avoid}li{margin:0.3em 0}
.chart{break-inside:avoid;page-break-inside:avoid;margin:0 0 1.5em}
.chart p{margin:0.2em 0 0.5em;color:#444}
.chart svg{width:100%;max-width:680px;height:auto;display:block}
svg{print-color-adjust:exact;-webkit-print-color-adjust:exact}
svg text{font-size:11px;fill:#222}
.cap{fill:#e8e8e8;stroke:#999;stroke-width:0.5}.alloc{fill:#56b4e9}.used{fill:#0a3d91}
.idle{fill:#d55e00}.axis{stroke:#bbb;stroke-width:0.5}.base{stroke:#444;stroke-width:1}
@page{size:A4;margin:12mm}
@media print{body{margin:0;font-size:10pt;color:#000}h1{font-size:16pt}h2{font-size:12.5pt}
table{font-size:7.5pt}th,td{padding:1px 3px}th{background:none}})";

double Num(const json& j, const char* key) {
  return JsonNumber(j, key).value_or(0);
}

const json& Sub(const json& j, const char* key) {
  static const json none = json::object();
  auto it = j.find(key);
  return it != j.end() && (it->is_object() || it->is_array()) ? *it : none;
}

using svg::Text;

// A chart's frame: its heading and a sentence on how to read it, kept on one page in print.
std::string Chart(std::string_view id,
                  std::string_view title,
                  std::string_view note,
                  const std::string& body) {
  return "<section class=\"chart\" id=\"" + HtmlEscape(id) + "\"><h2>" + HtmlEscape(title) +
         "</h2>\n<p>" + HtmlEscape(note) + "</p>\n" + body + "</section>\n";
}

// Horizontal gridlines and their ticks for a value axis from 0 to `top`, in GPU-hours, with the
// unit written above the axis (a printed chart has no tooltip to say it).
std::string ValueAxisY(double left, double right, double top, double height, double max) {
  std::string out = Text(0, top - 10, "GPU-hours");
  const double step = svg::NiceStep(max, 4);
  // Counted in whole steps (a sum of doubles drifts); none above the top.
  for (int i = 0; i * step <= max * (1 + 1e-9); ++i) {
    const double v = i * step;
    const double y = top + height * (1 - v / max);
    out += svg::Line(v == 0 ? "base" : "axis", left, y, right, y) +
           Text(left - 4, y + 4, svg::Tick(v), "end");
  }
  return out;
}

// Vertical gridlines and ticks for a horizontal bar chart's GPU-hours axis (0 to `max` over
// `width` from `left`), its name under the ticks.
std::string ValueAxisX(
    double left, double width, double top, double height, double max, std::string_view name) {
  std::string out;
  const double step = svg::NiceStep(max, 5);
  for (int i = 0; i * step <= max * (1 + 1e-9); ++i) {
    const double v = i * step;
    const double x = left + width * v / max;
    out += svg::Line(v == 0 ? "base" : "axis", x, top, x, top + height) +
           Text(x, top + height + 13, svg::Tick(v), "middle");
  }
  return out + Text(left + width, top + height + 28, name, "end");
}

// A name for the left of a bar: control characters escaped (JsonText), cut to fit its column.
std::string BarLabel(std::string text) {
  return Truncate(std::move(text), kLabelBytes);
}

// Per day, in GPU-hours: the capacity observed (GPU-minutes with samples / 60: what the GPUs
// could have given), the part jobs held (allocated) and the part they used (allocated x their
// mean utilisation). Three bars from one baseline, each narrower than the one behind it, so
// that used sits inside allocated inside capacity, as the figures do. A day without samples
// has no bars: a gap, not a zero.
std::string DayChart(const json& report) {
  const json& days = Sub(report, "days");
  if (days.empty()) {
    return "<p>No GPU was observed in this period.</p>\n";
  }
  double most = 0;
  for (const json& day : days) {
    const json& f = Sub(day, "figures");
    most = std::max({most, Num(f, "minutes_observed") / 60, Num(f, "allocated_gpu_hours")});
  }
  const double top = svg::NiceTop(most, 4);
  const double plot_width = kChartWidth - kDayLeft - 8;
  const double slot = plot_width / static_cast<double>(days.size());
  const double bottom = kPlotTop + kDayPlotHeight;
  std::string out = svg::Open(kChartWidth, bottom + kAxisRoom) +
                    svg::Legend({{"cap", "capacity (GPU-hours observed)"},
                                 {"alloc", "allocated to jobs"},
                                 {"used", "used by them"}},
                                kDayLeft,
                                kLegendTop) +
                    ValueAxisY(kDayLeft, kDayLeft + plot_width, kPlotTop, kDayPlotHeight, top);
  const auto height_of = [&](double hours) {
    return kDayPlotHeight * std::clamp(hours / top, 0.0, 1.0);
  };
  // A label under every day when two digits fit in a slot, else under every other one.
  const std::size_t label_every = slot >= 14 ? 1 : 2;
  double x = kDayLeft;
  std::size_t index = 0;
  for (const json& day : days) {
    const json& f = Sub(day, "figures");
    const std::string label = JsonText(day, "day");
    const double observed = Num(f, "minutes_observed") / 60;
    const double allocated = Num(f, "allocated_gpu_hours");
    const double used = Num(f, "used_gpu_hours");
    if (observed > 0) {
      const std::string tip = label + ": " + FormatGpuHours(allocated) + " GPU-h allocated of " +
                              FormatGpuHours(observed) + " observed, " + FormatGpuHours(used) +
                              " used";
      const auto bar = [&](const char* cls, double hours, double inset) {
        return svg::Rect(cls,
                         x + inset,
                         bottom - height_of(hours),
                         slot - 2 * inset,
                         height_of(hours),
                         tip,
                         FormatGpuHours(hours));
      };
      out += bar("cap", observed, slot * 0.08) + bar("alloc", allocated, slot * 0.2) +
             bar("used", used, slot * 0.33);
    }
    if (index % label_every == 0) {
      out += Text(
          x + slot / 2, bottom + 13, label.size() >= 10 ? label.substr(8, 2) : label, "middle");
    }
    x += slot;
    ++index;
  }
  return out +
         Text(kDayLeft + plot_width,
              bottom + 28,
              "day of " + JsonText(report, "period") + " (UTC)",
              "end") +
         "</svg>\n";
}

// Per team, one bar of its allocated GPU-hours, stacked: the part used (dark) and the part held
// but not used (light). The largest allocations first; past kMaxTeamBars, the table has them.
std::string TeamChart(const json& report) {
  std::vector<const json*> teams;
  for (const json& team : Sub(report, "teams")) {
    teams.push_back(&team);
  }
  const auto allocated_of = [](const json* team) {
    return Num(Sub(*team, "usage"), "allocated_gpu_hours");
  };
  std::stable_sort(teams.begin(), teams.end(), [&](const json* a, const json* b) {
    return allocated_of(a) > allocated_of(b);
  });
  const std::size_t left_out = teams.size() > kMaxTeamBars ? teams.size() - kMaxTeamBars : 0;
  teams.resize(teams.size() - left_out);
  if (teams.empty()) {
    return "<p>No team ran a job in this period.</p>\n";
  }
  const double max = svg::NiceTop(teams.empty() ? 0 : allocated_of(teams.front()), 5);
  const double plot_width = kChartWidth - kBarLabelWidth - kBarValueWidth;
  const double rows_height = kBarRow * static_cast<double>(teams.size());
  std::string out =
      svg::Open(kChartWidth, kPlotTop + rows_height + kAxisRoom) +
      svg::Legend(
          {{"used", "used"}, {"alloc", "allocated, not used"}}, kBarLabelWidth, kLegendTop) +
      ValueAxisX(kBarLabelWidth, plot_width, kPlotTop - 4, rows_height + 4, max, "GPU-hours");
  const double scale = plot_width / max;
  double y = kPlotTop;
  for (const json* team : teams) {
    const json& u = Sub(*team, "usage");
    const std::string name = TeamLabel(JsonText(*team, "team", ""));
    const double allocated = Num(u, "allocated_gpu_hours");
    const double used = std::min(Num(u, "used_gpu_hours"), allocated);
    const std::string figures = FormatGpuHours(used) + " of " + FormatGpuHours(allocated) +
                                " GPU-h used (" + FixedDecimals(Num(u, "used_pct"), 1) + " %)";
    std::string tip = name;  // the figures are beside the bar too: they fit
    tip += ": ";
    tip += figures;
    out += Text(kBarLabelWidth - 6, y + kBarHeight - 3, BarLabel(name), "end");
    out +=
        svg::Rect("used", kBarLabelWidth, y, used * scale, kBarHeight, tip, FormatGpuHours(used));
    out += svg::Rect("alloc",
                     kBarLabelWidth + used * scale,
                     y,
                     (allocated - used) * scale,
                     kBarHeight,
                     tip,
                     FormatGpuHours(allocated - used));
    out += Text(kBarLabelWidth + allocated * scale + 6, y + kBarHeight - 3, figures);
    y += kBarRow;
  }
  out += "</svg>\n";
  if (left_out > 0) {
    out += "<p>And " + std::to_string(left_out) + " smaller teams: see the table below.</p>\n";
  }
  return out;
}

// The jobs that held GPUs idle longest (the report's waste list, largest first): one bar each
// of its allocated-but-idle GPU-hours, its share of the job's GPU time and its owner after it.
std::string WasteChart(const json& report) {
  const json& jobs = Sub(Sub(report, "waste"), "jobs");
  if (jobs.empty()) {
    return "<p>No job held a GPU idle in this period.</p>\n";
  }
  double most = 0;
  for (const json& job : jobs) {
    most = std::max(most, Num(job, "idle_gpu_hours"));
  }
  const double max = svg::NiceTop(most, 5);
  const double plot_width = kChartWidth - kBarLabelWidth - kBarValueWidth;
  const double rows_height = kBarRow * static_cast<double>(jobs.size());
  std::string out =
      svg::Open(kChartWidth, kPlotTop + rows_height + kAxisRoom) +
      svg::Legend({{"idle", "GPU-hours allocated but idle (under the idle threshold)"}},
                  kBarLabelWidth,
                  kLegendTop) +
      ValueAxisX(kBarLabelWidth, plot_width, kPlotTop - 4, rows_height + 4, max, "GPU-hours idle");
  double y = kPlotTop;
  for (const json& job : jobs) {
    const double idle = Num(job, "idle_gpu_hours");
    const std::string name = JsonText(job, "name", "");
    const std::string label = "job " + JsonText(job, "job") + (name.empty() ? "" : " " + name);
    const std::string owner = JsonText(job, "user") + ", " + TeamLabel(JsonText(job, "team", ""));
    const std::string share = FormatGpuHours(idle) + " of " +
                              FormatGpuHours(Num(job, "allocated_gpu_hours")) + " GPU-h (" +
                              FixedDecimals(Num(job, "idle_pct"), 0) + " %)";
    std::string tip = label;
    tip += ": ";
    tip += share;
    tip += ", ";
    tip += owner;
    out += Text(kBarLabelWidth - 6, y + kBarHeight - 3, BarLabel(label), "end");
    out += svg::Rect(
        "idle", kBarLabelWidth, y, plot_width * idle / max, kBarHeight, tip, FormatGpuHours(idle));
    // Beside the bar, the figures a reader compares first; the whole sentence is the tooltip.
    out += Text(kBarLabelWidth + plot_width * idle / max + 6,
                y + kBarHeight - 3,
                Truncate(FormatGpuHours(idle) + " GPU-h, " +
                             FixedDecimals(Num(job, "idle_pct"), 0) + " % · " + owner,
                         kValueBytes));
    y += kBarRow;
  }
  return out + "</svg>\n";
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
  const json& cluster = Sub(report, "cluster");
  const json& figures = Sub(cluster, "figures");
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
      << "<title>gpufleet report " << HtmlEscape(period) << "</title><style>" << kStyle
      << "</style></head><body>\n<h1>Where the compute went: " << HtmlEscape(period)
      << "</h1>\n<p>Figures up to " << HtmlEscape(JsonText(report, "covered_until")) << ": "
      << HtmlEscape(JsonText(cluster, "gpus")) << " GPUs on "
      << HtmlEscape(JsonText(cluster, "nodes"))
      << (Num(cluster, "nodes") == 1 ? " node; " : " nodes; ")
      << HtmlEscape(FormatGpuHours(Num(figures, "allocated_gpu_hours"))) << " GPU-hours allocated, "
      << HtmlEscape(FormatGpuHours(Num(figures, "used_gpu_hours"))) << " used, "
      << HtmlEscape(FormatGpuHours(Num(figures, "idle_gpu_hours")))
      << " idle while allocated. Allocated: GPU-minutes a job held; used: allocated times the "
         "GPUs' mean utilisation while held (docs/reports.md).</p>\n";
  out << Chart("chart-days",
               "Allocated vs used per day",
               "GPU-hours each day (UTC): what the GPUs could give, what jobs held, and what "
               "they used of it. A day without samples has no bars.",
               DayChart(report));
  out << Chart("chart-teams",
               "GPU-hours per team",
               "Each team's allocated GPU-hours: the dark part used, the light part held but "
               "not used. Largest first.",
               TeamChart(report));
  out << Chart("chart-waste",
               "Top wasters",
               "The jobs that held GPUs idle longest (allocated minutes under " +
                   FixedDecimals(Num(Sub(report, "thresholds"), "idle_util_pct"), 0) +
                   " % utilisation), with the share of their GPU time and whose they are.",
               WasteChart(report));
  out << Recommendations(report);
  for (const ReportTable& table : ReportTables(report)) {
    if (table.id != "recommendations") {
      out << HtmlTable(table);
    }
  }
  out << "</body></html>\n";
}

}  // namespace gf
