// ClusterReader (read_side.h): the monthly report (ClusterService::MonthlyReport, issue #9). The
// figures are report/report.h's pure arithmetic; here the caller's thread reads the month from
// the store in pages (GPU minutes, usage records, events, the jobs they name) through a read
// connection of its own and adds the runs still going from the published view (view.h).
//
// Nothing of it runs on the state thread, so a report of a large month holds no other command;
// the pages bound its memory, not its time.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "controller/authorization.h"
#include "controller/read_side.h"
#include "model/team.h"

namespace gf {
namespace {

// Rows per store read. A minute page must hold at least one minute of every GPU (see
// FeedReportMinutes): 50,000 is 50 minutes of 1,000 GPUs.
constexpr int kMinutePage = 50'000;
constexpr int kRunPage = 10'000;
constexpr int kEventPage = 10'000;

std::string Joined(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    out += (out.empty() ? "" : ", ") + TeamLabel(name);
  }
  return out.empty() ? "none" : out;
}

}  // namespace

Result<Report> ClusterReader::MonthlyReport(const Caller& caller,
                                            const ReportRequest& request) const {
  return reports_.Run<Result<Report>>([&]() -> Result<Report> {
    GF_ASSIGN_OR_RETURN(const std::shared_ptr<const ControllerView> view, Read());
    GF_ASSIGN_OR_RETURN(ReadConnections::Lease reader, readers_.Acquire());
    return DoReport(*view, *reader, caller, request);
  });
}

Result<Report> ClusterReader::DoReport(const ControllerView& view,
                                       StoreReader& reader,
                                       const Caller& caller,
                                       const ReportRequest& request) const {
  GF_TRY(Authorize(caller, Resource::kReport, Action::kRead, Ownership::kNone, "report"));
  if (request.team && request.team->empty()) {
    return InvalidArgument("team: empty; name a team, or leave --team out for every team");
  }
  GF_ASSIGN_OR_RETURN(const Time first, ParseMonth(request.period));
  const Period period = MonthOf(first);
  // The figures run to the start of the current minute: every GPU minute before it has closed
  // (with the GPU's first sample of the next), and the runs are cut at the same instant, so that
  // the teams' GPU-hours (from runs) and the cluster's (from minutes) count the same time.
  const Time until = std::chrono::floor<std::chrono::minutes>(clock_.Now());
  ReportContext context{.period = request.period,
                        .start = period.start,
                        .end = period.end,
                        .now = until,
                        .price = options_.energy_price};
  for (const auto& node : view.nodes) {
    context.nodes.push_back(*node);
  }
  for (const TeamPolicy& team : options_.policy.teams) {
    context.teams.push_back(TeamAllowance{.team = team.name,
                                          .guaranteed_gpus = team.guaranteed_gpus,
                                          .max_gpus = team.max_gpus,
                                          .budget_gpu_hours = team.gpu_hour_budget});
  }
  ReportBuilder builder(std::move(context));
  GF_ASSIGN_OR_RETURN(const std::set<std::string> ran_in,
                      FeedReportRuns(view, reader, builder, period, until, caller.user));
  GF_ASSIGN_OR_RETURN(const ReportScope scope, ReportScopeFor(view, caller, request, ran_in));
  GF_TRY(FeedReportMinutes(reader, builder, period));
  GF_TRY(FeedReportEvents(reader, builder, period));
  GF_TRY(FeedReportJobs(view, reader, builder));
  return builder.Finish(scope);
}

// Operators see everything (or the one team asked for); a user their own teams (TeamsOf, and
// those they ran in during the month) and their own rows.
Result<ReportScope> ClusterReader::ReportScopeFor(const ControllerView& view,
                                                  const Caller& caller,
                                                  const ReportRequest& request,
                                                  const std::set<std::string>& ran_in) const {
  ReportScope scope{.team_filter = request.team};
  if (Allows(caller, Resource::kTeam, Action::kRead, Ownership::kOther)) {
    if (request.team) {
      scope.teams = std::set<std::string>{*request.team};
    }
    return scope;
  }
  // TeamsOf's, from the view: the caller's configured team and those of its active jobs.
  std::set<std::string> mine;
  if (auto team = options_.team_of_user.find(caller.user); team != options_.team_of_user.end()) {
    mine.insert(team->second);
  }
  view.ForEach([&](const Job& job) {
    if (job.owner.uid == caller.uid) {
      mine.insert(job.spec.team);
    }
  });
  mine.insert(ran_in.begin(), ran_in.end());
  if (request.team && !mine.contains(*request.team)) {
    GF_TRY(
        Authorize(caller,
                  Resource::kTeam,
                  Action::kRead,
                  Ownership::kOther,
                  "team: '" + *request.team + "' is not one of your teams (" + Joined(mine) + ")"));
  }
  scope.teams = request.team ? std::set<std::string>{*request.team} : mine;
  scope.user = caller.user;
  return scope;
}

// Minutes come ordered by (minute, node, uuid). A full page may end inside a minute: its rows
// of that last minute are read again with the next page, which starts at that minute.
Status ClusterReader::FeedReportMinutes(StoreReader& reader,
                                        ReportBuilder& builder,
                                        const Period& period) {
  Time from = period.start;
  while (true) {
    GF_ASSIGN_OR_RETURN(std::vector<GpuMinute> page,
                        reader.ListGpuMinutes(from, period.end, kMinutePage));
    if (static_cast<int>(page.size()) < kMinutePage) {
      builder.AddMinutes(page);
      return OkStatus();
    }
    const Time last = page.back().minute;
    if (page.front().minute == last) {
      return Internal("report: more than " + std::to_string(kMinutePage) +
                      " GPUs in one minute; the report reads at most that many at once");
    }
    std::erase_if(page, [last](const GpuMinute& m) { return m.minute == last; });
    builder.AddMinutes(page);
    from = last;
  }
}

// The stored runs that overlap the month, each clipped to it (and to `until`) as `gpufleet
// quota` counts them, and the runs still going (to `until`) as the view shows them, less those
// that ended and were stored since. Returns the teams `user` ran in.
Result<std::set<std::string>> ClusterReader::FeedReportRuns(const ControllerView& view,
                                                            StoreReader& reader,
                                                            ReportBuilder& builder,
                                                            const Period& period,
                                                            Time until,
                                                            const std::string& user) const {
  const Time to = std::min(period.end, until);
  std::set<std::pair<JobId, Time>> stored;  // the stored runs, by job and start
  std::set<std::string> teams;
  auto add = [&](std::vector<UsageRecord> records) {
    std::vector<ReportRun> runs;
    for (UsageRecord& record : records) {
      if (record.start >= to) {
        continue;
      }
      if (record.user == user) {
        teams.insert(record.team);
      }
      const double seconds = ClippedGpuSeconds(record, period.start, to);
      // Energy is what the run's counters measured, all of it before now: only the month cuts
      // it (pro rata, as budgets do); cutting it at `until` too would scale a measurement.
      const std::int64_t energy = ClippedEnergyMj(record, period.start, period.end);
      runs.push_back(
          ReportRun{.run = std::move(record), .gpu_seconds = seconds, .energy_mj = energy});
    }
    builder.AddRuns(runs);
  };
  std::int64_t after_seq = 0;
  while (true) {
    GF_ASSIGN_OR_RETURN(std::vector<UsageRecord> page,
                        reader.ListUsage(period.start, after_seq, kRunPage));
    if (page.empty()) {
      break;
    }
    after_seq = page.back().seq;
    for (const UsageRecord& record : page) {
      stored.emplace(record.job, record.start);
    }
    add(std::move(page));
  }
  std::vector<UsageRecord> running;
  std::map<NodeId, const Node*> nodes;
  for (const auto& node : view.nodes) {
    nodes.emplace(node->name, node.get());
  }
  view.ForEach([&](const Job& job) {
    if (!HoldsGpus(job) || !job.start_time || *job.start_time >= to ||
        stored.contains({job.id, *job.start_time})) {
      return;
    }
    const std::optional<JobUsage> usage = telemetry_.Usage(job.id);
    auto node = nodes.find(job.allocation->node);
    running.push_back(RunRecord(job,
                                until,
                                usage ? usage->energy_mj : 0,
                                GpuModelsOn(node != nodes.end() ? node->second : nullptr, job)));
  });
  add(std::move(running));
  return teams;
}

// Events are stored in time order (by seq): read until the first one past the month.
Status ClusterReader::FeedReportEvents(StoreReader& reader,
                                       ReportBuilder& builder,
                                       const Period& period) {
  std::int64_t after_seq = 0;
  while (true) {
    GF_ASSIGN_OR_RETURN(std::vector<Event> page,
                        reader.ListEvents(std::nullopt, after_seq, kEventPage));
    if (page.empty()) {
      return OkStatus();
    }
    after_seq = page.back().seq;
    builder.AddEvents(page);
    if (page.back().time >= period.end) {
      return OkStatus();
    }
  }
}

// The jobs the runs, minutes and events name: names and submit times.
Status ClusterReader::FeedReportJobs(const ControllerView& view,
                                     StoreReader& reader,
                                     ReportBuilder& builder) {
  std::vector<Job> jobs;
  for (const JobId id : builder.JobsWanted()) {
    if (const Job* live = view.Find(id)) {
      jobs.push_back(*live);
      continue;
    }
    GF_ASSIGN_OR_RETURN(std::optional<Job> stored, reader.GetJob(id));
    if (stored) {
      jobs.push_back(std::move(*stored));
    }
  }
  builder.AddJobs(jobs);
  return OkStatus();
}

}  // namespace gf
