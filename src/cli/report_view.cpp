#include "cli/report_view.h"

#include <algorithm>
#include <cmath>

#include "cli/table.h"
#include "cli/views.h"
#include "core/gpu_hours.h"
#include "model/team.h"

namespace gf {
namespace {

using nlohmann::json;

const json& Obj(const json& j, const char* key) {
  static const json none = json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : none;
}

const json& List(const json& j, const char* key) {
  static const json none = json::array();
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : none;
}

// A percentage with one decimal, "-" when unknown.
std::string Pct(const json& j, const char* key) {
  const auto v = JsonNumber(j, key);
  return v ? FixedDecimals(*v, 1) : "-";
}

std::string Hours(const json& j, const char* key) {
  const auto v = JsonNumber(j, key);
  return v ? FormatGpuHours(*v) : "-";
}

std::string Seconds(const json& j, const char* key) {
  const auto v = JsonNumber(j, key);
  return v ? FixedDecimals(*v, 0) : "-";
}

std::string Gib(const json& j, const char* key) {
  const auto v = JsonNumber(j, key);
  return v ? FixedDecimals(*v / 1024.0, 1) : "-";
}

std::string TeamName(const json& row) {
  return TeamLabel(JsonText(row, "team", ""));
}

// Cost without its currency (the header names it) and CO2 in kg, for tables.
std::string Cost(const json& energy) {
  const auto v = JsonNumber(energy, "cost");
  return v ? FixedDecimals(*v, 2) : "-";
}
std::string Co2(const json& energy) {
  const auto v = JsonNumber(energy, "co2_kg");
  return v ? FixedDecimals(*v, 3) : "-";
}

// The currency of the first priced figure, for headers ("COST EUR"); "" without a price.
std::string Currency(const json& report) {
  return JsonText(Obj(Obj(Obj(report, "cluster"), "figures"), "energy"), "currency", "");
}

std::vector<std::string> Energy(const json& energy) {
  return {EnergyKwh(energy), Cost(energy), Co2(energy)};
}

void Append(std::vector<std::string>& row, const std::vector<std::string>& more) {
  row.insert(row.end(), more.begin(), more.end());
}

std::vector<std::string> EnergyHeader(const json& report) {
  const std::string currency = Currency(report);
  return {"KWH", currency.empty() ? "COST" : "COST " + currency, "CO2 KG"};
}

// The columns every set of GPU-minutes has (cluster, node, GPU, day).
std::vector<std::string> FigureCells(const json& f) {
  return {Pct(f, "allocated_pct"),
          Pct(f, "used_pct"),
          Pct(f, "idle_pct"),
          Hours(f, "allocated_gpu_hours"),
          Hours(f, "used_gpu_hours"),
          Hours(f, "idle_gpu_hours")};
}
const std::vector<std::string> kFigureHeader = {
    "ALLOCATED %", "USED %", "IDLE %", "ALLOC GPU-H", "USED GPU-H", "IDLE GPU-H"};

std::vector<std::string> Header(std::vector<std::string> first,
                                const std::vector<std::string>& more) {
  Append(first, more);
  return first;
}

ReportTable ClusterTable(const json& r) {
  const json& c = Obj(r, "cluster");
  const json& f = Obj(c, "figures");
  ReportTable t{
      .id = "cluster",
      .title = "Cluster",
      .header = Header(Header({"NODES", "GPUS", "GPU-MINUTES"}, kFigureHeader), EnergyHeader(r))};
  std::vector<std::string> row = {
      JsonText(c, "nodes"), JsonText(c, "gpus"), JsonText(f, "minutes_observed")};
  Append(row, FigureCells(f));
  Append(row, Energy(Obj(f, "energy")));
  t.rows.push_back(std::move(row));
  return t;
}

ReportTable NodeTable(const json& r) {
  ReportTable t{.id = "nodes",
                .title = "Nodes",
                .header = Header(Header({"NODE", "GPUS"}, kFigureHeader), {"KWH"})};
  for (const json& n : List(r, "nodes")) {
    std::vector<std::string> row = {JsonText(n, "node"), JsonText(n, "gpus")};
    Append(row, FigureCells(Obj(n, "figures")));
    row.push_back(EnergyKwh(Obj(Obj(n, "figures"), "energy")));
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string GpuFlags(const json& g) {
  std::string flags;
  for (const char* flag : {"idle", "overloaded", "unhealthy"}) {
    auto it = g.find(flag);
    if (it != g.end() && it->is_boolean() && it->get<bool>()) {
      flags += (flags.empty() ? "" : " ") + std::string(flag);
    }
  }
  return flags.empty() ? "-" : flags;
}

ReportTable GpuTable(const json& r) {
  ReportTable t{.id = "gpus",
                .title = "GPUs",
                .header = Header(Header({"NODE", "GPU", "MODEL"}, kFigureHeader),
                                 {"UNHEALTHY MIN", "FLAGS"})};
  for (const json& g : List(r, "gpus")) {
    std::vector<std::string> row = {
        JsonText(g, "node"), JsonText(g, "index"), JsonText(g, "model")};
    Append(row, FigureCells(Obj(g, "figures")));
    row.push_back(JsonText(Obj(g, "figures"), "minutes_unhealthy"));
    row.push_back(GpuFlags(g));
    t.rows.push_back(std::move(row));
  }
  return t;
}

ReportTable DayTable(const json& r) {
  ReportTable t{.id = "days", .title = "Days", .header = Header({"DAY"}, kFigureHeader)};
  for (const json& d : List(r, "days")) {
    std::vector<std::string> row = {JsonText(d, "day")};
    Append(row, FigureCells(Obj(d, "figures")));
    t.rows.push_back(std::move(row));
  }
  return t;
}

const std::vector<std::string> kUsageHeader = {
    "JOBS", "ALLOC GPU-H", "USED %", "USED GPU-H", "IDLE GPU-H"};
std::vector<std::string> UsageCells(const json& u) {
  return {JsonText(u, "jobs"),
          Hours(u, "allocated_gpu_hours"),
          Pct(u, "used_pct"),
          Hours(u, "used_gpu_hours"),
          Hours(u, "idle_gpu_hours")};
}

ReportTable TeamTable(const json& r) {
  ReportTable t{
      .id = "teams",
      .title = "Teams: GPU-hours allocated vs used, quota and budget",
      .header =
          Header(Header(Header({"TEAM"}, kUsageHeader),
                        {"GUARANTEED GPUS", "GUARANTEE USED %", "BUDGET GPU-H", "BUDGET USED %"}),
                 EnergyHeader(r))};
  for (const json& team : List(r, "teams")) {
    const json& u = Obj(team, "usage");
    std::vector<std::string> row = {TeamName(team)};
    Append(row, UsageCells(u));
    Append(row,
           {JsonText(team, "guaranteed_gpus"),
            Pct(team, "guarantee_used_pct"),
            Hours(team, "budget_gpu_hours"),
            Pct(team, "budget_used_pct")});
    Append(row, Energy(Obj(u, "energy")));
    t.rows.push_back(std::move(row));
  }
  return t;
}

ReportTable UserTable(const json& r) {
  ReportTable t{.id = "users",
                .title = "Users",
                .header = Header(
                    Header(Header({"USER", "TEAM"}, kUsageHeader), {"PEAK MEM GIB", "GPU MEM GIB"}),
                    EnergyHeader(r))};
  for (const json& user : List(r, "users")) {
    const json& u = Obj(user, "usage");
    std::vector<std::string> row = {JsonText(user, "user"), TeamName(user)};
    Append(row, UsageCells(u));
    Append(row, {Gib(user, "peak_memory_mib"), Gib(user, "gpu_memory_mib")});
    Append(row, Energy(Obj(u, "energy")));
    t.rows.push_back(std::move(row));
  }
  return t;
}

// Kubernetes mode's workloads (docs/kubernetes.md); "" is the pods whose owner is not known.
ReportTable WorkloadTable(const json& r) {
  ReportTable t{.id = "workloads",
                .title = "Kubernetes workloads: their pods' GPU-hours, by namespace",
                .header = Header(Header({"WORKLOAD", "NAMESPACE"}, kUsageHeader), EnergyHeader(r))};
  for (const json& workload : List(r, "workloads")) {
    const json& u = Obj(workload, "usage");
    const std::string name = JsonText(workload, "workload", "");
    std::vector<std::string> row = {name.empty() ? "(owner not known)" : name, TeamName(workload)};
    Append(row, UsageCells(u));
    Append(row, Energy(Obj(u, "energy")));
    t.rows.push_back(std::move(row));
  }
  return t;
}

ReportTable WasteTable(const json& r) {
  const json& waste = Obj(r, "waste");
  ReportTable t{.id = "waste",
                .title = "Waste: " + Hours(waste, "idle_gpu_hours") +
                         " GPU-h allocated but idle; the jobs behind the most of it",
                .header = {"JOB", "NAME", "USER", "TEAM", "ALLOC GPU-H", "IDLE GPU-H", "IDLE %"}};
  for (const json& j : List(waste, "jobs")) {
    t.rows.push_back({JsonText(j, "job"),
                      JsonText(j, "name"),
                      JsonText(j, "user"),
                      TeamName(j),
                      Hours(j, "allocated_gpu_hours"),
                      Hours(j, "idle_gpu_hours"),
                      Pct(j, "idle_pct")});
  }
  return t;
}

ReportTable QueueTable(const json& r) {
  ReportTable t{.id = "queue",
                .title = "Queueing delay by class (seconds)",
                .header = {"CLASS", "RUNS", "MEAN S", "P50 S", "P95 S", "MAX S"}};
  for (const json& q : List(r, "queue")) {
    t.rows.push_back({JsonText(q, "priority"),
                      JsonText(q, "runs"),
                      Seconds(q, "mean_s"),
                      Seconds(q, "p50_s"),
                      Seconds(q, "p95_s"),
                      Seconds(q, "max_s")});
  }
  return t;
}

const std::vector<std::string> kEventKeys = {
    "preemptions", "failed", "timeouts", "node_failures", "gpu_failovers", "idle_reaps"};

ReportTable EventTable(const json& r) {
  ReportTable t{.id = "events",
                .title = "Preemptions and failures",
                .header = {"TEAM",
                           "PREEMPTIONS",
                           "FAILED",
                           "TIMEOUTS",
                           "NODE FAILURES",
                           "GPU FAILOVERS",
                           "IDLE REAPS"}};
  auto row = [&](const std::string& name, const json& counts) {
    std::vector<std::string> cells = {name};
    for (const std::string& key : kEventKeys) {
      cells.push_back(JsonText(counts, key));
    }
    t.rows.push_back(std::move(cells));
  };
  for (const json& team : List(r, "teams")) {
    row(TeamName(team), Obj(team, "events"));
  }
  row("total", Obj(r, "events"));
  return t;
}

ReportTable RecommendationTable(const json& r) {
  ReportTable t{.id = "recommendations",
                .title = "Recommendations",
                .header = {"KIND", "SUBJECT", "MESSAGE"}};
  for (const json& rec : List(r, "recommendations")) {
    t.rows.push_back({JsonText(rec, "kind"), JsonText(rec, "subject"), JsonText(rec, "message")});
  }
  return t;
}

}  // namespace

Result<ReportFormat> ParseReportFormat(std::string_view text) {
  if (text == "text") {
    return ReportFormat::kText;
  }
  if (text == "json") {
    return ReportFormat::kJson;
  }
  if (text == "csv") {
    return ReportFormat::kCsv;
  }
  if (text == "html") {
    return ReportFormat::kHtml;
  }
  if (text == "pdf") {
    return ReportFormat::kPdf;
  }
  return InvalidArgument("--format: '" + std::string(text) +
                         "' is not a report format; use text, json, csv, html or pdf");
}

std::vector<ReportTable> ReportTables(const json& report) {
  std::vector<ReportTable> tables = {ClusterTable(report),
                                     NodeTable(report),
                                     GpuTable(report),
                                     DayTable(report),
                                     TeamTable(report),
                                     UserTable(report)};
  if (!List(report, "workloads").empty()) {  // a Kubernetes site's; no empty table elsewhere
    tables.push_back(WorkloadTable(report));
  }
  tables.push_back(WasteTable(report));
  tables.push_back(QueueTable(report));
  tables.push_back(EventTable(report));
  tables.push_back(RecommendationTable(report));
  return tables;
}

bool ReportHasData(const json& report) {
  const auto ran = [&report](const char* rows) {
    const json& list = List(report, rows);
    return std::any_of(list.begin(), list.end(), [](const json& row) {
      return Obj(row, "usage").value("jobs", 0) > 0;
    });
  };
  return Obj(Obj(report, "cluster"), "figures").value("minutes_observed", std::int64_t{0}) > 0 ||
         !List(report, "queue").empty() || ran("teams") || ran("users");
}

void PrintReportText(const json& report, std::ostream& out) {
  out << "Report for " << JsonText(report, "period") << " (UTC), figures up to "
      << JsonText(report, "covered_until").substr(0, 16) << "Z";
  if (const std::string team = JsonText(report, "team", ""); !team.empty()) {
    out << ", team " << team;
  }
  out << '\n';
  auto all = report.find("all_teams");
  if (all != report.end() && all->is_boolean() && !all->get<bool>()) {
    out << "(your teams and your own jobs only; the cluster, node and GPU figures are the "
           "whole cluster's)\n";
  }
  if (!ReportHasData(report)) {
    out << "No data for " << JsonText(report, "period")
        << ": no GPU-minute was recorded and no job ran in it (figures start when gpufleet "
           "first ran; choose a later period)\n";
    return;
  }
  out << "ALLOCATED % = GPU-minutes held by a job; USED % = mean GPU utilisation while "
         "held (docs/reports.md)\n";
  for (const ReportTable& table : ReportTables(report)) {
    if (table.id == "recommendations") {
      continue;
    }
    out << '\n' << table.title << '\n';
    Table text(table.header);
    for (const auto& row : table.rows) {
      text.AddRow(row);
    }
    text.Print(out);
  }
  out << "\nRecommendations\n";
  const json& recs = List(report, "recommendations");
  if (recs.empty()) {
    out << "  none: nothing crossed a threshold\n";
  }
  for (const json& rec : recs) {
    out << "- " << JsonText(rec, "message") << '\n';
  }
}

std::string CsvField(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    return std::string(text);
  }
  std::string out = "\"";
  for (const char c : text) {
    out += c;
    if (c == '"') {
      out += '"';
    }
  }
  return out + "\"";
}

void WriteReportCsv(const json& report, std::ostream& out) {
  auto line = [&](const std::vector<std::string>& fields) {
    for (std::size_t i = 0; i < fields.size(); ++i) {
      out << (i == 0 ? "" : ",") << CsvField(fields[i]);
    }
    out << "\r\n";
  };
  for (const ReportTable& table : ReportTables(report)) {
    line({table.id});
    line(table.header);
    for (const auto& row : table.rows) {
      line(row);
    }
    out << "\r\n";
  }
}

}  // namespace gf
