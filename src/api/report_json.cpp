#include "api/report_json.h"

#include <optional>

#include "api/json_mapping.h"
#include "report/report.h"

namespace gf {
namespace {

using nlohmann::json;

template <typename T>
json Optional(const std::optional<T>& value) {
  return value ? json(*value) : json();
}

json FiguresToJson(const MinuteFigures& f) {
  return json{{"minutes_observed", f.minutes_observed},
              {"minutes_allocated", f.minutes_allocated},
              {"minutes_idle_allocated", f.minutes_idle_allocated},
              {"minutes_unhealthy", f.minutes_unhealthy},
              {"allocated_pct", f.allocated_pct},
              {"used_pct", f.used_pct},
              {"util_pct", f.util_pct},
              {"idle_pct", f.idle_pct},
              {"allocated_gpu_hours", f.gpu_hours_allocated},
              {"used_gpu_hours", f.gpu_hours_used},
              {"idle_gpu_hours", f.gpu_hours_idle},
              {"energy", EnergyChargeToJson(f.energy)}};
}

json UsageToJson(const UsageFigures& u) {
  return json{{"jobs", u.jobs},
              {"allocated_gpu_hours", u.gpu_hours_allocated},
              {"minutes_allocated", u.minutes_allocated},
              {"used_pct", u.mean_util_pct},
              {"used_gpu_hours", u.gpu_hours_used},
              {"idle_gpu_hours", u.gpu_hours_idle},
              {"energy", EnergyChargeToJson(u.energy)}};
}

json EventsToJson(const EventCounts& e) {
  return json{{"preemptions", e.preemptions},
              {"failed", e.failed},
              {"timeouts", e.timeouts},
              {"node_failures", e.node_failures},
              {"gpu_failovers", e.gpu_failovers},
              {"idle_reaps", e.idle_reaps},
              {"gpu_faults", e.gpu_faults}};
}

json GpusToJson(const std::vector<GpuFigures>& gpus) {
  json out = json::array();
  for (const GpuFigures& g : gpus) {
    out.push_back(json{{"node", g.node},
                       {"index", g.index >= 0 ? json(g.index) : json()},
                       {"uuid", g.uuid},
                       {"model", g.model},
                       {"memory_mib", g.memory_mib},
                       {"figures", FiguresToJson(g.figures)},
                       {"idle", g.idle},
                       {"overloaded", g.overloaded},
                       {"unhealthy", g.unhealthy}});
  }
  return out;
}

json TeamsToJson(const std::vector<TeamFigures>& teams) {
  json out = json::array();
  for (const TeamFigures& t : teams) {
    out.push_back(json{{"team", t.team},
                       {"usage", UsageToJson(t.usage)},
                       {"guaranteed_gpus", t.guaranteed_gpus},
                       {"max_gpus", Optional(t.max_gpus)},
                       {"guaranteed_gpu_hours", t.guaranteed_gpu_hours},
                       {"guarantee_used_pct", Optional(t.guarantee_used_pct)},
                       {"budget_gpu_hours", Optional(t.budget_gpu_hours)},
                       {"budget_used_pct", Optional(t.budget_used_pct)},
                       {"events", EventsToJson(t.events)}});
  }
  return out;
}

json UsersToJson(const std::vector<UserFigures>& users) {
  json out = json::array();
  for (const UserFigures& u : users) {
    out.push_back(json{{"team", u.team},
                       {"user", u.user},
                       {"usage", UsageToJson(u.usage)},
                       {"peak_memory_mib", u.peak_memory_mib},
                       {"gpu_memory_mib", u.gpu_memory_mib}});
  }
  return out;
}

json WorkloadsToJson(const std::vector<WorkloadFigures>& workloads) {
  json out = json::array();
  for (const WorkloadFigures& w : workloads) {
    out.push_back(
        json{{"team", w.team}, {"workload", w.workload}, {"usage", UsageToJson(w.usage)}});
  }
  return out;
}

json WasteToJson(const Report& r) {
  json jobs = json::array();
  for (const WasteJob& w : r.waste_jobs) {
    jobs.push_back(json{{"job", w.job},
                        {"name", w.name},
                        {"team", w.team},
                        {"user", w.user},
                        {"allocated_gpu_hours", w.gpu_hours_allocated},
                        {"idle_gpu_hours", w.gpu_hours_idle},
                        {"idle_pct", w.idle_pct}});
  }
  return json{{"idle_gpu_hours", r.waste_gpu_hours}, {"jobs", std::move(jobs)}};
}

json QueueToJson(const std::vector<QueueFigures>& queue) {
  json out = json::array();
  for (const QueueFigures& q : queue) {
    out.push_back(json{{"priority", q.priority},
                       {"runs", q.runs},
                       {"mean_s", q.mean_s},
                       {"p50_s", q.p50_s},
                       {"p95_s", q.p95_s},
                       {"max_s", q.max_s}});
  }
  return out;
}

json RecommendationsToJson(const std::vector<Recommendation>& recs) {
  json out = json::array();
  for (const Recommendation& r : recs) {
    json figures = json::object();
    for (const auto& [name, value] : r.figures) {
      figures[name] = value;
    }
    out.push_back(json{{"kind", r.kind},
                       {"subject", r.subject},
                       {"message", r.message},
                       {"figures", std::move(figures)}});
  }
  return out;
}

}  // namespace

json ReportToJson(const Report& report) {
  json nodes = json::array();
  for (const NodeFigures& n : report.nodes) {
    nodes.push_back(
        json{{"node", n.node}, {"gpus", n.gpus}, {"figures", FiguresToJson(n.figures)}});
  }
  json days = json::array();
  for (const DayFigures& d : report.days) {
    days.push_back(json{{"day", d.day}, {"figures", FiguresToJson(d.figures)}});
  }
  return json{{"period", report.period},
              {"period_start", FormatRfc3339(report.start)},
              {"period_start_ms", ToUnixMillis(report.start)},
              {"period_end", FormatRfc3339(report.end)},
              {"period_end_ms", ToUnixMillis(report.end)},
              {"covered_until", FormatRfc3339(report.covered_until)},
              {"covered_until_ms", ToUnixMillis(report.covered_until)},
              {"team", Optional(report.team_filter)},
              {"all_teams", report.all_teams},
              {"cluster",
               json{{"nodes", report.cluster.nodes},
                    {"gpus", report.cluster.gpus},
                    {"figures", FiguresToJson(report.cluster.figures)}}},
              {"nodes", std::move(nodes)},
              {"gpus", GpusToJson(report.gpus)},
              {"days", std::move(days)},
              {"teams", TeamsToJson(report.teams)},
              {"users", UsersToJson(report.users)},
              {"workloads", WorkloadsToJson(report.workloads)},
              {"waste", WasteToJson(report)},
              {"queue", QueueToJson(report.queue)},
              {"events", EventsToJson(report.events)},
              {"recommendations", RecommendationsToJson(report.recommendations)},
              {"thresholds",
               json{{"idle_util_pct", kIdleUtilPct},
                    {"idle_gpu_allocated_pct", kIdleGpuAllocatedPct},
                    {"idle_gpu_used_pct", kIdleGpuUsedPct},
                    {"overloaded_allocated_pct", kOverloadedAllocatedPct},
                    {"overloaded_used_pct", kOverloadedUsedPct},
                    {"unhealthy_pct", kUnhealthyPct}}}};
}

}  // namespace gf
