#include "report/report.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "model/job_run.h"
#include "model/kube_pod.h"
#include "report/recommend.h"

namespace gf {
namespace {

constexpr double kMinutesPerHour = 60;
constexpr double kSecondsPerHour = 3600;
constexpr double kMinuteMillis = 60'000;

// part / whole in percent; 0 when whole is 0 (nothing observed: nothing to say).
double Pct(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0;
}
double Pct(std::int64_t part, std::int64_t whole) {
  return Pct(static_cast<double>(part), static_cast<double>(whole));
}

// "2026-11-03" for the UTC day holding `t`.
std::string DayLabel(Time t) {
  const std::chrono::year_month_day day(std::chrono::floor<std::chrono::days>(t));
  char text[16];
  std::snprintf(text,
                sizeof text,
                "%04d-%02u-%02u",
                static_cast<int>(day.year()),
                static_cast<unsigned>(day.month()),
                static_cast<unsigned>(day.day()));
  return text;
}

// "RUNNING -> FAILED: cause" (a "state" event) → "FAILED"; "" when not that shape.
std::string TargetState(const std::string& message) {
  const std::optional<StateChange> change = ParseStateChange(message);
  return change ? change->to : "";
}

// A "gpu_health" event an agent recorded for a GPU getting worse ("... ok -> failed: XID 79"),
// not a person's `gpu resume` or a recovery.
bool IsGpuFault(const Event& event) {
  if (event.actor.rfind("agent:", 0) != 0) {
    return false;
  }
  const std::string to = TargetState(event.message);
  return to == "degraded" || to == "failed";
}

// The event kinds the report counts; the rest of the audit log is not kept.
bool Counted(const Event& event) {
  return event.kind == "preempt" || event.kind == "state" || event.kind == "gpu_failover" ||
         event.kind == "gpu_health" || event.kind == "idle_reap";
}

// Nearest-rank percentile of sorted, non-empty values.
double Percentile(const std::vector<double>& sorted, double pct) {
  const auto rank =
      static_cast<std::size_t>(std::ceil(pct / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

void AddCounts(EventCounts& total, const EventCounts& more) {
  total.preemptions += more.preemptions;
  total.failed += more.failed;
  total.timeouts += more.timeouts;
  total.node_failures += more.node_failures;
  total.gpu_failovers += more.gpu_failovers;
  total.idle_reaps += more.idle_reaps;
}

// One job event into `counts` (gpu_health is counted apart: it has no job).
void CountJobEvent(const Event& event, EventCounts& counts) {
  if (event.kind == "preempt") {
    counts.preemptions += 1;
  } else if (event.kind == "gpu_failover") {
    counts.gpu_failovers += 1;
  } else if (event.kind == "idle_reap") {
    counts.idle_reaps += 1;
  } else if (event.kind == "state") {
    const std::string to = TargetState(event.message);
    counts.failed += to == "FAILED" ? 1 : 0;
    counts.timeouts += to == "TIMEOUT" ? 1 : 0;
    counts.node_failures += to == "NODE_FAIL" ? 1 : 0;
  }
}

}  // namespace

// ---- months -------------------------------------------------------------------------------

Result<Time> ParseMonth(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument("period: '" + std::string(text) +
                           "' is not a month; use YYYY-MM, e.g. 2026-11");
  };
  if (text.size() != 7 || text[4] != '-') {
    return bad();
  }
  int year = 0;
  unsigned month = 0;
  const char* begin = text.data();
  if (std::from_chars(begin, begin + 4, year).ptr != begin + 4 ||
      std::from_chars(begin + 5, begin + 7, month).ptr != begin + 7 || month < 1 || month > 12 ||
      year < 1970) {
    return bad();
  }
  const std::chrono::sys_days first{std::chrono::year(year) / std::chrono::month(month) / 1};
  return std::chrono::time_point_cast<Millis>(first);
}

std::string MonthLabel(Time t) {
  return DayLabel(t).substr(0, 7);
}

// ---- per-minute sums ------------------------------------------------------------------------

void MinuteSums::Add(const GpuMinute& minute) {
  observed += 1;
  util_sum += minute.util_mean_pct;
  energy_mj += minute.energy_mj;
  unhealthy += minute.health != GpuHealth::kOk ? 1 : 0;
  const double held =
      std::clamp(static_cast<double>(minute.allocated_ms) / kMinuteMillis, 0.0, 1.0);
  allocated += held;
  util_sum_allocated += held * minute.util_mean_pct;
  idle_allocated += minute.util_mean_pct < kIdleUtilPct ? held : 0;
}

void MinuteSums::Add(const MinuteSums& other) {
  observed += other.observed;
  allocated += other.allocated;
  idle_allocated += other.idle_allocated;
  unhealthy += other.unhealthy;
  util_sum += other.util_sum;
  util_sum_allocated += other.util_sum_allocated;
  energy_mj += other.energy_mj;
}

MinuteFigures MinuteSums::Figures(const EnergyPrice& price) const {
  MinuteFigures f{.minutes_observed = observed,
                  .minutes_allocated = allocated,
                  .minutes_idle_allocated = idle_allocated,
                  .minutes_unhealthy = unhealthy,
                  .allocated_pct = Pct(allocated, static_cast<double>(observed)),
                  .used_pct = allocated > 0 ? util_sum_allocated / allocated : 0,
                  .util_pct = observed > 0 ? util_sum / static_cast<double>(observed) : 0,
                  .idle_pct = Pct(static_cast<double>(observed) - allocated + idle_allocated,
                                  static_cast<double>(observed)),
                  .gpu_hours_allocated = allocated / kMinutesPerHour,
                  .gpu_hours_idle = idle_allocated / kMinutesPerHour,
                  .energy = ChargeFor(energy_mj, price)};
  f.gpu_hours_used = f.gpu_hours_allocated * f.used_pct / 100.0;
  return f;
}

// ---- feeding --------------------------------------------------------------------------------

ReportBuilder::ReportBuilder(ReportContext context) : context_(std::move(context)) {
  for (const Node& node : context_.nodes) {
    for (const Gpu& gpu : node.gpus) {
      gpu_memory_mib_[gpu.uuid.value()] = gpu.memory_mib;
    }
  }
}

std::int64_t ReportBuilder::GpuMemoryMib(const std::string& uuid) const {
  const auto it = gpu_memory_mib_.find(uuid);
  return it == gpu_memory_mib_.end() ? 0 : it->second;
}

void ReportBuilder::AddMinutes(const std::vector<GpuMinute>& minutes) {
  for (const GpuMinute& minute : minutes) {
    if (minute.minute < context_.start || minute.minute >= context_.end) {
      continue;
    }
    gpus_[{minute.node.value(), minute.uuid.value()}].Add(minute);
    days_[DayLabel(minute.minute)].Add(minute);
    if (!minute.job) {
      continue;
    }
    users_minutes_[{minute.team, minute.user}].Add(minute);
    JobMinutes& job = jobs_minutes_[*minute.job];
    job.sums.Add(minute);
    job.team = minute.team;
    job.user = minute.user;
    job.peak_memory_mib = std::max(job.peak_memory_mib, minute.memory_used_max_mib);
    job.gpu_memory_mib = std::max(job.gpu_memory_mib, GpuMemoryMib(minute.uuid.value()));
  }
}

void ReportBuilder::AddRuns(const std::vector<ReportRun>& runs) {
  for (const ReportRun& run : runs) {
    if (run.run.end >= context_.start && run.run.start < context_.end) {
      runs_.push_back(run);
    }
  }
}

void ReportBuilder::AddEvents(const std::vector<Event>& events) {
  for (const Event& event : events) {
    if (event.time >= context_.start && event.time < context_.end && Counted(event)) {
      events_.push_back(event);
    }
  }
}

std::set<JobId> ReportBuilder::JobsWanted() const {
  std::set<JobId> wanted;
  for (const ReportRun& run : runs_) {
    wanted.insert(run.run.job);
  }
  for (const auto& [id, minutes] : jobs_minutes_) {
    wanted.insert(id);
  }
  for (const Event& event : events_) {
    if (event.job) {
      wanted.insert(*event.job);
    }
  }
  for (const auto& [id, job] : jobs_) {
    wanted.erase(id);
  }
  return wanted;
}

void ReportBuilder::AddJobs(const std::vector<Job>& jobs) {
  for (const Job& job : jobs) {
    jobs_[job.id] = job;
  }
}

// ---- figures --------------------------------------------------------------------------------

// (team, user) of a job: the stored job's, else what its runs or minutes recorded.
std::pair<std::string, std::string> ReportBuilder::OwnerOf(JobId job) const {
  if (auto it = jobs_.find(job); it != jobs_.end()) {
    return {it->second.spec.team, it->second.owner.user};
  }
  for (const ReportRun& run : runs_) {
    if (run.run.job == job) {
      return {run.run.team, run.run.user};
    }
  }
  if (auto it = jobs_minutes_.find(job); it != jobs_minutes_.end()) {
    return {it->second.team, it->second.user};
  }
  return {"", ""};
}

// Every GPU of the inventory, and those only the minutes know (since removed), by node and
// index (unknown indexes last).
std::vector<GpuFigures> ReportBuilder::GpuRows() const {
  std::map<GpuKey, GpuFigures> rows;
  for (const Node& node : context_.nodes) {
    for (const Gpu& gpu : node.gpus) {
      rows[{node.name.value(), gpu.uuid.value()}] = GpuFigures{.node = node.name.value(),
                                                               .index = gpu.index,
                                                               .uuid = gpu.uuid.value(),
                                                               .model = gpu.model,
                                                               .memory_mib = gpu.memory_mib};
    }
  }
  for (const auto& [key, sums] : gpus_) {
    GpuFigures& row = rows[key];
    row.node = key.first;
    row.uuid = key.second;
    row.figures = sums.Figures(context_.price);
  }
  std::vector<GpuFigures> out;
  for (auto& [key, row] : rows) {
    const MinuteFigures& f = row.figures;
    const bool observed = f.minutes_observed > 0;
    row.idle = observed && (f.allocated_pct < kIdleGpuAllocatedPct || f.used_pct < kIdleGpuUsedPct);
    row.overloaded =
        observed && f.allocated_pct >= kOverloadedAllocatedPct && f.used_pct >= kOverloadedUsedPct;
    row.unhealthy = observed && Pct(f.minutes_unhealthy, f.minutes_observed) >= kUnhealthyPct;
    out.push_back(std::move(row));
  }
  std::stable_sort(out.begin(), out.end(), [](const GpuFigures& a, const GpuFigures& b) {
    const auto index = [](const GpuFigures& g) {
      return g.index < 0 ? 1 << 30 : g.index;
    };
    return std::pair(a.node, index(a)) < std::pair(b.node, index(b));
  });
  return out;
}

// Every day of the period up to covered_until, days without minutes as zeros (the chart shows
// them as gaps).
std::vector<DayFigures> ReportBuilder::DayRows() const {
  std::vector<DayFigures> out;
  const Time until = std::min(context_.now, context_.end);
  for (Time day = context_.start; day < until; day += std::chrono::days(1)) {
    const std::string label = DayLabel(day);
    const auto it = days_.find(label);
    out.push_back(DayFigures{
        .day = label,
        .figures = (it == days_.end() ? MinuteSums{} : it->second).Figures(context_.price)});
  }
  return out;
}

// Every (team, user) with a run or an allocated minute in the period, unfiltered.
std::vector<UserFigures> ReportBuilder::UserRows() const {
  struct Sums {
    std::set<JobId> jobs;
    double gpu_seconds = 0;
    std::int64_t energy_mj = 0;
  };
  std::map<TeamUser, Sums> by_user;
  for (const ReportRun& run : runs_) {
    Sums& sums = by_user[{run.run.team, run.run.user}];
    sums.jobs.insert(run.run.job);
    sums.gpu_seconds += run.gpu_seconds;
    sums.energy_mj += run.energy_mj;
  }
  for (const auto& [key, minutes] : users_minutes_) {
    by_user[key];
  }
  std::map<TeamUser, std::pair<std::int64_t, std::int64_t>> memory;  // peak, GPU's
  for (const auto& [id, job] : jobs_minutes_) {
    auto& [peak, gpu] = memory[{job.team, job.user}];
    peak = std::max(peak, job.peak_memory_mib);
    gpu = std::max(gpu, job.gpu_memory_mib);
  }
  std::vector<UserFigures> out;
  for (const auto& [key, sums] : by_user) {
    UserFigures row{.team = key.first, .user = key.second};
    const auto minutes = users_minutes_.find(key);
    row.usage = Usage(sums.jobs.size(),
                      sums.gpu_seconds,
                      sums.energy_mj,
                      minutes == users_minutes_.end() ? MinuteSums{} : minutes->second);
    std::tie(row.peak_memory_mib, row.gpu_memory_mib) = memory[key];
    out.push_back(std::move(row));
  }
  return out;
}

UsageFigures ReportBuilder::Usage(std::size_t jobs,
                                  double gpu_seconds,
                                  std::int64_t energy_mj,
                                  const MinuteSums& held) const {
  const MinuteFigures f = held.Figures(context_.price);
  return UsageFigures{.jobs = static_cast<int>(jobs),
                      .gpu_hours_allocated = gpu_seconds / kSecondsPerHour,
                      .minutes_allocated = f.minutes_allocated,
                      .mean_util_pct = f.used_pct,
                      .gpu_hours_used = gpu_seconds / kSecondsPerHour * f.used_pct / 100,
                      .gpu_hours_idle = f.gpu_hours_idle,
                      .energy = ChargeFor(energy_mj, context_.price)};
}

// Kubernetes workloads: each pod's job counted to the workload the server named for it
// (POD_WORKLOAD, kube_desk.h), by namespace (its team); jobs that are not pods count to none.
// The rows of the jobs `shown` lets the reader see.
std::vector<WorkloadFigures> ReportBuilder::WorkloadRows(
    const std::function<bool(const std::string&, const std::string&)>& shown) const {
  struct Sums {
    std::set<JobId> jobs;
    double gpu_seconds = 0;
    std::int64_t energy_mj = 0;
    MinuteSums held;
  };
  std::map<std::pair<std::string, std::string>, Sums> rows;  // (namespace, workload)
  // The row a job counts to; none for a job that is not a pod or that the reader may not see.
  const auto row_of = [&](JobId id) -> Sums* {
    const auto job = jobs_.find(id);
    if (job == jobs_.end() || !KubePodOfJobEnv(job->second.spec.env)) {
      return nullptr;
    }
    const auto [team, user] = OwnerOf(id);
    if (!shown(team, user)) {
      return nullptr;
    }
    return &rows[{team, EnvValue(job->second.spec.env, kPodWorkloadEnv)}];
  };
  for (const ReportRun& run : runs_) {
    if (Sums* sums = row_of(run.run.job)) {
      sums->jobs.insert(run.run.job);
      sums->gpu_seconds += run.gpu_seconds;
      sums->energy_mj += run.energy_mj;
    }
  }
  for (const auto& [id, job] : jobs_minutes_) {
    if (Sums* sums = row_of(id)) {
      sums->held.Add(job.sums);
    }
  }
  std::vector<WorkloadFigures> out;
  out.reserve(rows.size());
  for (const auto& [key, sums] : rows) {
    out.push_back(WorkloadFigures{
        .team = key.first,
        .workload = key.second,
        .usage = Usage(sums.jobs.size(), sums.gpu_seconds, sums.energy_mj, sums.held)});
  }
  return out;
}

// Teams: every configured team and every team of a user row, their users summed.
std::vector<TeamFigures> ReportBuilder::TeamRows(const std::vector<UserFigures>& users) const {
  std::map<std::string, TeamFigures> rows;
  std::map<std::string, MinuteSums> held;
  std::map<std::string, std::int64_t> energy_mj;
  for (const TeamAllowance& allowance : context_.teams) {
    rows[allowance.team].team = allowance.team;
  }
  for (const UserFigures& user : users) {
    TeamFigures& row = rows[user.team];
    row.team = user.team;
    row.usage.jobs += user.usage.jobs;
    row.usage.gpu_hours_allocated += user.usage.gpu_hours_allocated;
    energy_mj[user.team] += user.usage.energy.energy_mj;
    if (auto it = users_minutes_.find({user.team, user.user}); it != users_minutes_.end()) {
      held[user.team].Add(it->second);
    }
  }
  const double period_hours =
      std::chrono::duration<double>(std::min(context_.now, context_.end) - context_.start).count() /
      kSecondsPerHour;
  std::vector<TeamFigures> out;
  for (auto& [name, row] : rows) {
    const MinuteFigures f = held[name].Figures(context_.price);
    row.usage.minutes_allocated = f.minutes_allocated;
    row.usage.mean_util_pct = f.used_pct;
    row.usage.gpu_hours_used = row.usage.gpu_hours_allocated * f.used_pct / 100;
    row.usage.gpu_hours_idle = f.gpu_hours_idle;
    row.usage.energy = ChargeFor(energy_mj[name], context_.price);
    for (const TeamAllowance& allowance : context_.teams) {
      if (allowance.team != name) {
        continue;
      }
      row.guaranteed_gpus = allowance.guaranteed_gpus;
      row.max_gpus = allowance.max_gpus;
      row.guaranteed_gpu_hours = allowance.guaranteed_gpus * std::max(0.0, period_hours);
      if (row.guaranteed_gpu_hours > 0) {
        row.guarantee_used_pct = Pct(row.usage.gpu_hours_allocated, row.guaranteed_gpu_hours);
      }
      row.budget_gpu_hours = allowance.budget_gpu_hours;
      if (allowance.budget_gpu_hours && *allowance.budget_gpu_hours > 0) {
        row.budget_used_pct = Pct(row.usage.gpu_hours_allocated, *allowance.budget_gpu_hours);
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

// Event counts of the teams shown, each team's into `by_team`; GPU faults cluster-wide.
EventCounts ReportBuilder::CountEvents(const std::function<bool(const std::string&)>& team_shown,
                                       std::map<std::string, EventCounts>* by_team) const {
  EventCounts total;
  for (const Event& event : events_) {
    if (event.kind == "gpu_health") {
      total.gpu_faults += IsGpuFault(event) ? 1 : 0;
      continue;
    }
    if (!event.job) {
      continue;
    }
    const std::string team = OwnerOf(*event.job).first;
    if (team_shown(team)) {
      CountJobEvent(event, (*by_team)[team]);
    }
  }
  for (const auto& [team, counts] : *by_team) {
    AddCounts(total, counts);
  }
  return total;
}

// Queue delay of each run that started in the period: from its submission, or for a job's
// later run (requeued after a preemption or failure) from the end of its previous run.
std::map<JobId, std::vector<const UsageRecord*>> ReportBuilder::RunsByJob() const {
  std::map<JobId, std::vector<const UsageRecord*>> by_job;
  for (const ReportRun& run : runs_) {
    by_job[run.run.job].push_back(&run.run);
  }
  for (auto& [id, runs] : by_job) {
    std::sort(runs.begin(), runs.end(), [](const UsageRecord* a, const UsageRecord* b) {
      return a->start < b->start;
    });
  }
  return by_job;
}

std::vector<DemandSpan> ReportBuilder::Demand() const {
  std::vector<DemandSpan> spans;
  for (const auto& [id, runs] : RunsByJob()) {
    const auto job = jobs_.find(id);
    // Waited for from its submission (or its last run's end) to each run's start, then held.
    std::optional<Time> queued;
    if (job != jobs_.end()) {
      queued = job->second.submit_time;
    }
    for (const UsageRecord* run : runs) {
      const auto gpus = static_cast<double>(std::max(run->gpus, 1));
      if (queued && *queued < run->start) {
        spans.push_back(DemandSpan{.from = *queued, .to = run->start, .gpus = gpus});
      }
      spans.push_back(DemandSpan{.from = run->start, .to = run->end, .gpus = gpus});
      queued = run->end;
    }
  }
  return spans;
}

std::vector<QueueFigures> ReportBuilder::QueueRows(
    const std::function<bool(const std::string&)>& team_shown) const {
  std::map<std::string, std::vector<double>> waits;
  for (const auto& [id, runs] : RunsByJob()) {
    const auto job = jobs_.find(id);
    if (job == jobs_.end() || !team_shown(job->second.spec.team)) {
      continue;  // no submit time known (the job row is gone)
    }
    Time queued = job->second.submit_time;
    for (const UsageRecord* run : runs) {
      if (run->start >= context_.start && run->start < context_.end) {
        waits[run->priority].push_back(
            std::max(0.0, std::chrono::duration<double>(run->start - queued).count()));
      }
      queued = run->end;
    }
  }
  std::vector<QueueFigures> out;
  for (auto& [priority, values] : waits) {
    std::sort(values.begin(), values.end());
    double sum = 0;
    for (const double v : values) {
      sum += v;
    }
    out.push_back(QueueFigures{.priority = priority,
                               .runs = static_cast<int>(values.size()),
                               .mean_s = sum / static_cast<double>(values.size()),
                               .p50_s = Percentile(values, 50),
                               .p95_s = Percentile(values, 95),
                               .max_s = values.back()});
  }
  return out;
}

// The jobs behind the most allocated-but-idle GPU time, among those `shown`.
std::vector<WasteJob> ReportBuilder::WasteJobs(
    const std::function<bool(const std::string&, const std::string&)>& shown) const {
  std::vector<WasteJob> out;
  for (const auto& [id, job] : jobs_minutes_) {
    const auto [team, user] = OwnerOf(id);
    if (job.sums.idle_allocated <= 0 || !shown(team, user)) {
      continue;
    }
    const auto stored = jobs_.find(id);
    const MinuteFigures f = job.sums.Figures(context_.price);
    out.push_back(WasteJob{.job = id.value(),
                           .name = stored == jobs_.end() ? "" : stored->second.spec.name,
                           .team = team,
                           .user = user,
                           .gpu_hours_allocated = f.gpu_hours_allocated,
                           .gpu_hours_idle = f.gpu_hours_idle,
                           .idle_pct = Pct(job.sums.idle_allocated, job.sums.allocated)});
  }
  std::stable_sort(out.begin(), out.end(), [](const WasteJob& a, const WasteJob& b) {
    return a.gpu_hours_idle > b.gpu_hours_idle;
  });
  if (out.size() > kWasteJobs) {
    out.resize(kWasteJobs);
  }
  return out;
}

Report ReportBuilder::Finish(const ReportScope& scope) const {
  const auto team_shown = [&](const std::string& team) {
    return !scope.teams || scope.teams->contains(team);
  };
  const auto shown = [&](const std::string& team, const std::string& user) {
    return team_shown(team) && (!scope.user || *scope.user == user);
  };
  Report report{.period = context_.period,
                .start = context_.start,
                .end = context_.end,
                .covered_until = std::min(context_.now, context_.end),
                .team_filter = scope.team_filter,
                .all_teams = !scope.teams && !scope.user};
  MinuteSums cluster;
  std::map<std::string, std::pair<int, MinuteSums>> nodes;
  for (const Node& node : context_.nodes) {
    nodes[node.name.value()].first = static_cast<int>(node.gpus.size());
    report.cluster.gpus += static_cast<int>(node.gpus.size());
  }
  report.cluster.nodes = static_cast<int>(context_.nodes.size());
  for (const auto& [key, sums] : gpus_) {
    cluster.Add(sums);
    nodes[key.first].second.Add(sums);
  }
  report.cluster.figures = cluster.Figures(context_.price);
  for (const auto& [name, node] : nodes) {
    report.nodes.push_back(NodeFigures{
        .node = name, .gpus = node.first, .figures = node.second.Figures(context_.price)});
  }
  report.gpus = GpuRows();
  report.days = DayRows();
  const std::vector<UserFigures> users = UserRows();
  for (const UserFigures& user : users) {
    if (shown(user.team, user.user)) {
      report.users.push_back(user);
    }
  }
  report.workloads = WorkloadRows(shown);
  std::map<std::string, EventCounts> team_events;
  report.events = CountEvents(team_shown, &team_events);
  for (TeamFigures& team : TeamRows(users)) {
    if (team_shown(team.team)) {
      team.events = team_events[team.team];
      report.waste_gpu_hours += team.usage.gpu_hours_idle;
      report.teams.push_back(std::move(team));
    }
  }
  report.waste_jobs = WasteJobs(shown);
  report.queue = QueueRows(team_shown);
  report.recommendations = Recommend(report);
  // The cluster's demand, held or waited for, hour by hour: what the capacity advice forecasts
  // from (cluster figures, as the GPU and day rows, visible to all).
  const Time first_hour = HourOf(context_.start);
  const auto hours =
      static_cast<int>((ToUnixMillis(report.covered_until) - ToUnixMillis(first_hour)) / kHourMs);
  if (std::optional<Recommendation> capacity = CapacityAdvice(
          HourlyDemand(Demand(), first_hour, hours), first_hour, report.cluster.gpus)) {
    report.recommendations.push_back(std::move(*capacity));
  }
  return report;
}

Report ComputeReport(const ReportInput& input) {
  ReportBuilder builder(input.context);
  builder.AddMinutes(input.minutes);
  builder.AddRuns(input.runs);
  builder.AddEvents(input.events);
  builder.AddJobs(input.jobs);
  return builder.Finish(input.scope);
}

}  // namespace gf
