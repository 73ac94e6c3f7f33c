// The route table and the job, node and GPU handlers of /api/v1, the watch and command-stream
// requests, and the only ErrorCode → HTTP status table. The administration and agent-link
// handlers are admin_routes.cpp.
#include "api/routes.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/admin_json.h"
#include "api/agent_wire.h"
#include "api/job_rows.h"
#include "api/json_mapping.h"
#include "api/report_json.h"
#include "api/routes_internal.h"
#include "api/web_assets.h"
#include "core/hex.h"
#include "json/json_text.h"
#include "metrics/prometheus.h"
#include "monitor/telemetry.h"

#ifndef GF_VERSION
#define GF_VERSION "0.0.0-dev"
#endif

namespace gf {
namespace {

using nlohmann::json;

using Handler = Result<HttpResponse> (*)(ClusterService&, const RequestContext&);

struct RouteEntry {
  RouteInfo info;
  std::string_view query_params;  // comma-separated names this route accepts
  Handler handler;
};

}  // namespace

HttpResponse JsonResponse(int status, const json& body) {
  // Error messages quote what the client sent (path, query values), which need not be UTF-8:
  // such bytes become U+FFFD instead of a type_error from dump() (found by routes_fuzz).
  return JsonTextResponse(status, body.dump(-1, ' ', false, json::error_handler_t::replace));
}

HttpResponse JsonTextResponse(int status, std::string text) {
  HttpResponse response;
  response.status = status;
  response.headers.emplace_back("Content-Type", "application/json");
  response.body = std::move(text);
  response.body += '\n';
  return response;
}

namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = std::min(s.find(sep, start), s.size());
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  if (query.empty()) {
    return out;
  }
  for (std::string_view pair : Split(query, '&')) {
    if (pair.empty()) {
      continue;
    }
    const std::size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1));
    out[std::move(key)] = std::move(value);
  }
  return out;
}

// Matches "/api/v1/jobs/12/cancel" against "/api/v1/jobs/{id}/cancel", filling `params`.
bool MatchPath(std::string_view templ,
               std::string_view path,
               std::map<std::string, std::string>& params) {
  const auto t = Split(templ, '/');
  const auto p = Split(path, '/');
  if (t.size() != p.size()) {
    return false;
  }
  std::map<std::string, std::string> found;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].size() > 2 && t[i].front() == '{' && t[i].back() == '}') {
      if (p[i].empty()) {
        return false;
      }
      found[std::string(t[i].substr(1, t[i].size() - 2))] = PercentDecode(p[i]);
    } else if (t[i] != p[i]) {
      return false;
    }
  }
  params = std::move(found);
  return true;
}

}  // namespace

Result<std::int64_t> ParseInt(std::string_view name,
                              std::string_view text,
                              std::int64_t min,
                              std::int64_t max,
                              std::string_view what) {
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < min ||
      value > max) {
    return InvalidArgument(std::string(name) + ": must be " + std::string(what) + ", got \"" +
                           std::string(text) + "\"");
  }
  return value;
}

namespace {

Result<JobId> JobIdParam(const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(
      const std::int64_t id,
      ParseInt("job id", ctx.params.at("id"), 1, INT64_MAX, "a positive whole number (e.g. 12)"));
  return JobId(id);
}

}  // namespace

std::optional<std::string> QueryValue(const RequestContext& ctx, const std::string& name) {
  const auto it = ctx.query.find(name);
  return it == ctx.query.end() ? std::nullopt : std::optional<std::string>(it->second);
}

namespace {

// A boolean query parameter: absent, 0 or false → false; present empty, 1 or true → true.
Result<bool> ParseBoolParam(const std::string& name, const std::optional<std::string>& v) {
  if (!v || *v == "0" || *v == "false") {
    return false;
  }
  if (v->empty() || *v == "1" || *v == "true") {
    return true;
  }
  return InvalidArgument(name + ": must be 1, 0, true or false, got \"" + *v + "\"");
}

Result<bool> BoolQuery(const RequestContext& ctx, const std::string& name) {
  return ParseBoolParam(name, QueryValue(ctx, name));
}

// ---- Handlers ----

Result<HttpResponse> Health(ClusterService&, const RequestContext&) {
  return JsonResponse(200, json{{"status", "ok"}, {"version", ApiVersion()}});
}

}  // namespace

// Any local user can send a body to the root daemon: it is read with the depth limit and
// without duplicate keys (json/json_text.h), so nothing recursive ever sees a deep value.
Result<json> JsonBody(const RequestContext& ctx) {
  return ParseJsonText(ctx.request.body, "request body");
}

namespace {

// {"ids": [...]}: the jobs of a multi-job submission, in the order sent, each PENDING. Ids
// alone: a batch is thousands of jobs, and the caller sent their specs.
HttpResponse BatchAnswer(const std::vector<Job>& jobs) {
  std::string body = R"({"ids":[)";
  body.reserve(body.size() + jobs.size() * 8);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (i > 0) {
      body += ',';
    }
    body += std::to_string(jobs[i].id.value());
  }
  body += "]}";
  return JsonTextResponse(201, std::move(body));
}

Result<HttpResponse> SubmitJob(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(Submission submission, SubmissionFromJson(body));
  if (!submission.batch.empty()) {
    GF_ASSIGN_OR_RETURN(const std::vector<Job> jobs,
                        service.SubmitBatch(ctx.caller, std::move(submission.batch)));
    return BatchAnswer(jobs);
  }
  Job job;
  if (submission.array) {
    // An array answers with its first task (its id is the array's); the others follow it
    // with consecutive ids, one per index in the order sent.
    GF_ASSIGN_OR_RETURN(
        const std::vector<Job> tasks,
        service.SubmitArray(ctx.caller, std::move(submission.spec), std::move(*submission.array)));
    job = tasks.front();
  } else {
    GF_ASSIGN_OR_RETURN(job, service.Submit(ctx.caller, std::move(submission.spec)));
  }
  HttpResponse response = JsonResponse(201, JobToJson(job));
  response.headers.emplace_back("Location", "/api/v1/jobs/" + std::to_string(job.id.value()));
  return response;
}

// A page's `cursor` (GET /jobs, /history): the next_cursor of the page before, if given.
Result<std::optional<JobId>> CursorQuery(const RequestContext& ctx) {
  const std::optional<std::string> cursor = QueryValue(ctx, "cursor");
  if (!cursor) {
    return std::optional<JobId>();
  }
  GF_ASSIGN_OR_RETURN(
      const std::int64_t id,
      ParseInt("cursor", *cursor, 1, INT64_MAX, "the next_cursor of the page before"));
  return std::optional<JobId>(JobId(id));
}

// GET /jobs?all&user&limit&cursor: {"jobs": [...], "next_cursor": ID or null}, newest first,
// each job's row (JobRowToJson) with its queue_position. Written as text, not as one json value:
// a pending job's row comes from the Router's cache (job_rows.h), rendered once per change of
// the job, so that listing a long queue costs copying its rows, not building its JSON again.
Result<HttpResponse> ListJobs(ClusterService& service, const RequestContext& ctx) {
  JobFilter filter;
  GF_ASSIGN_OR_RETURN(filter.include_finished, BoolQuery(ctx, "all"));
  filter.user = QueryValue(ctx, "user");
  if (const auto limit = QueryValue(ctx, "limit")) {
    GF_ASSIGN_OR_RETURN(const std::int64_t n,
                        ParseInt("limit", *limit, 1, 100000, "a whole number from 1 to 100000"));
    filter.limit = static_cast<int>(n);
  }
  GF_ASSIGN_OR_RETURN(filter.before, CursorQuery(ctx));
  GF_ASSIGN_OR_RETURN(const JobListing page, service.ListSharedJobs(ctx.caller, filter));
  const std::vector<std::shared_ptr<const Job>>& jobs = page.jobs;
  // A pending job's 1-based place in the scheduling order (null until a pass has seen it).
  std::unordered_map<std::int64_t, int> positions;
  if (std::any_of(
          jobs.begin(), jobs.end(), [](const auto& j) { return j->state == JobState::kPending; })) {
    GF_ASSIGN_OR_RETURN(const std::vector<JobId> order, service.QueueOrder(ctx.caller));
    positions.reserve(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      positions.emplace(order[i].value(), static_cast<int>(i) + 1);
    }
  }
  std::string body = R"({"jobs":[)";
  for (const auto& job : jobs) {
    if (&job != &jobs.front()) {
      body += ',';
    }
    // Only a pending job is the view's own copy from one listing to the next (a running one
    // comes with its live usage, a finished one from the store): only its row is kept.
    if (job->state == JobState::kPending) {
      ctx.rows.AppendRow(job, body);
    } else {
      AppendOpenRow(*job, body);
    }
    const auto at = positions.find(job->id.value());
    body += R"(,"queue_position":)";
    body += job->state == JobState::kPending && at != positions.end() ? std::to_string(at->second)
                                                                      : "null";
    body += '}';
  }
  body += R"(],"next_cursor":)";
  body += page.next ? std::to_string(page.next->value()) : "null";
  body += '}';
  return JsonTextResponse(200, std::move(body));
}

// A time given as Unix milliseconds in query parameter `name`, if there.
Result<std::optional<Time>> TimeQuery(const RequestContext& ctx, const std::string& name) {
  const std::optional<std::string> text = QueryValue(ctx, name);
  if (!text) {
    return std::optional<Time>();
  }
  GF_ASSIGN_OR_RETURN(const std::int64_t ms,
                      ParseInt(name, *text, INT64_MIN, INT64_MAX, "Unix milliseconds"));
  return std::optional<Time>(FromUnixMillis(ms));
}

Result<HistoryFilter> HistoryFilterFromQuery(const RequestContext& ctx) {
  HistoryFilter filter;
  GF_ASSIGN_OR_RETURN(filter.since, TimeQuery(ctx, "since_ms"));
  GF_ASSIGN_OR_RETURN(filter.until, TimeQuery(ctx, "until_ms"));
  if (const auto states = QueryValue(ctx, "state"); states && !states->empty()) {
    for (std::string_view name : Split(*states, ',')) {
      auto state = ParseJobState(name);
      if (!state.ok()) {
        return InvalidArgument("state: " + state.error().message);
      }
      filter.states.push_back(*state);
    }
  }
  filter.user = QueryValue(ctx, "user");
  filter.team = QueryValue(ctx, "team");
  GF_ASSIGN_OR_RETURN(filter.before, CursorQuery(ctx));
  if (const auto limit = QueryValue(ctx, "limit")) {
    GF_ASSIGN_OR_RETURN(const std::int64_t n,
                        ParseInt("limit",
                                 *limit,
                                 1,
                                 kMaxHistoryPage,
                                 "a whole number from 1 to " + std::to_string(kMaxHistoryPage)));
    filter.limit = static_cast<int>(n);
  }
  return filter;
}

// A list of jobs as every route that answers with several shows them: rows, without env.
json JobsToJson(const std::vector<Job>& jobs) {
  json out = json::array();
  for (const auto& job : jobs) {
    out.push_back(JobRowToJson(job));
  }
  return out;
}

// GET /history?since_ms&until_ms&state=A,B&user&team&cursor&limit: a page of job history
// (ClusterService::JobHistory), {"jobs": [...], "next_cursor": ID or null}.
Result<HttpResponse> JobHistory(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const HistoryFilter filter, HistoryFilterFromQuery(ctx));
  GF_ASSIGN_OR_RETURN(const HistoryPage page, service.JobHistory(ctx.caller, filter));
  json out = JobsToJson(page.jobs);
  return JsonResponse(200,
                      json{{"jobs", std::move(out)},
                           {"next_cursor", page.next ? json(page.next->value()) : json()}});
}

// The routes that act on one job and answer with the job as it is afterwards:
// GET /jobs/{id}, POST /jobs/{id}/cancel, /approve (root: the job may run past its team's
// GPU-hour budget), /checkpoint (owner or root: the running job saved a checkpoint now), /hold,
// /release and /requeue (job control, ClusterService::HoldJob ..).
using JobAction = Result<Job> (ClusterService::*)(const Caller&, JobId);
template <JobAction kAction>
Result<HttpResponse> OnJob(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const JobId id, JobIdParam(ctx));
  GF_ASSIGN_OR_RETURN(const Job job, (service.*kAction)(ctx.caller, id));
  return JsonResponse(200, JobToJson(job));
}

// GET /quota: teams' quotas and budgets, and users' GPU-hours this period (as the caller may
// see them: ClusterService::Quota).
Result<HttpResponse> GetQuota(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const QuotaReport report, service.Quota(ctx.caller));
  return JsonResponse(200, QuotaToJson(report));
}

// GET /report?period=YYYY-MM[&team=T]: the monthly audit report (ClusterService::MonthlyReport).
Result<HttpResponse> GetReport(ClusterService& service, const RequestContext& ctx) {
  const std::optional<std::string> period = QueryValue(ctx, "period");
  if (!period) {
    return InvalidArgument("period: missing; add ?period=YYYY-MM, e.g. ?period=2026-11");
  }
  const ReportRequest request{.period = *period, .team = QueryValue(ctx, "team")};
  GF_ASSIGN_OR_RETURN(const Report report, service.MonthlyReport(ctx.caller, request));
  return JsonResponse(200, ReportToJson(report));
}

// {"jobs": [...]}: the array's unfinished tasks as they are after the cancel was recorded.
Result<HttpResponse> CancelArray(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const JobId id, JobIdParam(ctx));
  GF_ASSIGN_OR_RETURN(const auto jobs, service.CancelArray(ctx.caller, id));
  json out = JobsToJson(jobs);
  return JsonResponse(200, json{{"jobs", std::move(out)}});
}

// POST /jobs/cancel {"user", "state", "name", "team"}: {"jobs": [...]}, the jobs the filter
// matched among those the caller may cancel, as they are after the cancel was recorded.
Result<HttpResponse> CancelJobs(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(const JobSelector selector, JobSelectorFromJson(body));
  GF_ASSIGN_OR_RETURN(const auto jobs, service.CancelJobs(ctx.caller, selector));
  json out = JobsToJson(jobs);
  return JsonResponse(200, json{{"jobs", std::move(out)}});
}

// POST /jobs/{id}/signal {"signal": "USR1"}: the job (still running) once the signal is on its
// way to its node (`gpufleet cancel --signal`).
Result<HttpResponse> SignalJob(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const JobId id, JobIdParam(ctx));
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(const SignalRequest request, SignalRequestFromJson(body));
  if (!request.selector.Empty()) {
    return InvalidArgument(
        "signal: a filter (user, state, name, team) goes to POST "
        "/api/v1/jobs/signal, not to one job's");
  }
  GF_ASSIGN_OR_RETURN(const Job job, service.SignalJob(ctx.caller, id, request.signal));
  return JsonResponse(200, JobToJson(job));
}

// POST /jobs/signal {"signal", "user", "state", "name", "team"}: {"jobs": [...], "skipped":
// [...]}, the running jobs the filter matched (signalled) and the others it matched (pending or
// starting: not signalled), among those the caller may cancel.
Result<HttpResponse> SignalJobs(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(const SignalRequest request, SignalRequestFromJson(body));
  GF_ASSIGN_OR_RETURN(const SignalOutcome outcome,
                      service.SignalJobs(ctx.caller, request.selector, request.signal));
  json jobs = JobsToJson(outcome.signalled);
  json skipped = JobsToJson(outcome.skipped);
  return JsonResponse(200, json{{"jobs", std::move(jobs)}, {"skipped", std::move(skipped)}});
}

// POST /jobs/{id}/update {"gpus", "time_limit", "priority", "team", "name"}: the job after.
Result<HttpResponse> UpdateJob(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const JobId id, JobIdParam(ctx));
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(const JobUpdate update, JobUpdateFromJson(body));
  GF_ASSIGN_OR_RETURN(const Job job, service.UpdateJob(ctx.caller, id, update));
  return JsonResponse(200, JobToJson(job));
}

Result<HttpResponse> ExplainJob(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const JobId id, JobIdParam(ctx));
  GF_ASSIGN_OR_RETURN(const Explanation explanation, service.ExplainJob(ctx.caller, id));
  return JsonResponse(200, ExplanationToJson(explanation));
}

Result<HttpResponse> JobEvents(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const JobId id, JobIdParam(ctx));
  GF_ASSIGN_OR_RETURN(const auto events, service.JobEvents(ctx.caller, id));
  json out = json::array();
  for (const auto& event : events) {
    out.push_back(EventToJson(event));
  }
  return JsonResponse(200, json{{"events", std::move(out)}});
}

// GET /jobs/{id}/runs: {"job", "runs": [...]}, every run of the job (model/job_run.h), oldest
// first; its events decide who may ask (a job the caller may not see is a 404).
Result<HttpResponse> JobRunsRoute(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const JobId id, JobIdParam(ctx));
  GF_ASSIGN_OR_RETURN(const auto events, service.JobEvents(ctx.caller, id));
  GF_ASSIGN_OR_RETURN(const Job job, service.GetJob(ctx.caller, id));
  GF_ASSIGN_OR_RETURN(const auto nodes, service.ListNodes(ctx.caller));
  json out = json::array();
  for (const JobRun& run : JobRuns(job, events, nodes)) {
    out.push_back(JobRunToJson(run));
  }
  return JsonResponse(200, json{{"job", id.value()}, {"runs", std::move(out)}});
}

// A chunk of a job's output as text/plain, with where it stands in the file: the whole
// file's size (X-Gpufleet-Log-Size) and where the next read continues (X-Gpufleet-Next-Offset).
// A chunk may be shorter than the limit asked for (a remote node sends at most 512 KiB a
// read): clients read on while next offset < size.
HttpResponse LogChunkResponse(LogChunk chunk) {
  HttpResponse response;
  response.headers.emplace_back("Content-Type", "text/plain; charset=utf-8");
  response.headers.emplace_back("X-Gpufleet-Log-Size", std::to_string(chunk.size));
  response.headers.emplace_back("X-Gpufleet-Next-Offset", std::to_string(chunk.next_offset));
  response.body = std::move(chunk.data);
  return response;
}

Result<HttpResponse> JobLogsChunk(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const JobId id, JobIdParam(ctx));
  LogRequest request{
      .job = id, .stream = LogStream::kStdout, .offset = 0, .limit = kDefaultLogChunkBytes};
  const std::string stream = QueryValue(ctx, "stream").value_or("stdout");
  if (stream != "stdout" && stream != "stderr") {
    return InvalidArgument("stream: must be stdout or stderr, got \"" + stream + "\"");
  }
  request.stream = stream == "stdout" ? LogStream::kStdout : LogStream::kStderr;
  if (const auto v = QueryValue(ctx, "offset")) {
    GF_ASSIGN_OR_RETURN(request.offset,
                        ParseInt("offset", *v, 0, INT64_MAX / 2, "a byte offset ≥ 0"));
  }
  if (const auto v = QueryValue(ctx, "limit")) {
    GF_ASSIGN_OR_RETURN(
        request.limit,
        ParseInt("limit", *v, 0, kMaxLogChunkBytes, "a byte count from 0 to 8388608 (8 MiB)"));
  }
  GF_ASSIGN_OR_RETURN(LogChunk chunk, service.ReadJobLog(ctx.caller, request));
  return LogChunkResponse(std::move(chunk));
}

// POST /jobs/{id}/terminal {"input_base64", "rows", "cols"}: what `gpufleet run` sends.
Result<HttpResponse> WriteTerminal(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const JobId id, JobIdParam(ctx));
  GF_ASSIGN_OR_RETURN(const json body, JsonBody(ctx));
  GF_ASSIGN_OR_RETURN(const TerminalInput input, TerminalInputFromJson(body, "body"));
  GF_TRY(service.WriteTerminal(ctx.caller, id, input));
  return JsonResponse(200, json{{"job", id.value()}});
}

Result<HttpResponse> ListNodes(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const auto nodes, service.ListNodes(ctx.caller));
  json out = json::array();
  for (const auto& node : nodes) {
    out.push_back(NodeToJson(node));
  }
  return JsonResponse(200, json{{"nodes", std::move(out)}});
}

Result<HttpResponse> ListGpus(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const auto gpus, service.ListGpus(ctx.caller));
  json out = json::array();
  for (const auto& gpu : gpus) {
    out.push_back(GpuStatusToJson(gpu));
  }
  return JsonResponse(200, json{{"gpus", std::move(out)}});
}

namespace {

// A reading of a stored per-minute rollup (GpuMinute), for the coarse series past the ring;
// nullopt for readings the store does not keep (memory utilisation, temperature).
std::optional<double> StoredReading(Metric metric, const GpuMinute& minute) {
  switch (metric) {
    case Metric::kUtilGpu:
      return minute.util_mean_pct;
    case Metric::kMemoryUsedMib:
      return static_cast<double>(minute.memory_used_max_mib);
    case Metric::kPowerW:
      return minute.power_mean_w;
    case Metric::kUtilMemory:
    case Metric::kTemperatureC:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

// GET /gpus/{uuid}/series?metric=M[&from_ms=&to_ms=&resolution=fine|coarse]: one reading of
// one GPU over time, for the dashboard's charts. Fine: the Telemetry's fine ring (1 s, or the
// heartbeat's step, for an hour). Coarse: 1 min means, the recent hours from the coarse ring
// and what is older from the store's per-minute rollups (ClusterService::GpuHistory), so the
// server holds only recent history in memory (issue #26). As public as GET /gpus.
Result<HttpResponse> GpuSeries(ClusterService& service, const RequestContext& ctx) {
  struct MetricName {
    std::string_view name;
    Metric metric;
  };
  static constexpr std::array<MetricName, 5> kMetrics = {{
      {"util_gpu_pct", Metric::kUtilGpu},
      {"util_memory_pct", Metric::kUtilMemory},
      {"memory_used_mib", Metric::kMemoryUsedMib},
      {"power_w", Metric::kPowerW},
      {"temperature_c", Metric::kTemperatureC},
  }};
  const std::string name = QueryValue(ctx, "metric").value_or("");
  const auto* const found = std::find_if(
      kMetrics.begin(), kMetrics.end(), [&](const MetricName& m) { return m.name == name; });
  if (found == kMetrics.end()) {
    return InvalidArgument(
        "metric: must be util_gpu_pct, util_memory_pct, memory_used_mib, "
        "power_w or temperature_c, got \"" +
        name + "\"");
  }
  const std::string resolution = QueryValue(ctx, "resolution").value_or("fine");
  if (resolution != "fine" && resolution != "coarse") {
    return InvalidArgument("resolution: must be fine or coarse, got \"" + resolution + "\"");
  }
  std::int64_t from_ms = 0;
  std::int64_t to_ms = INT64_MAX / 2;
  if (const auto v = QueryValue(ctx, "from_ms")) {
    GF_ASSIGN_OR_RETURN(from_ms, ParseInt("from_ms", *v, 0, INT64_MAX / 2, "Unix milliseconds"));
  }
  if (const auto v = QueryValue(ctx, "to_ms")) {
    GF_ASSIGN_OR_RETURN(to_ms, ParseInt("to_ms", *v, 0, INT64_MAX / 2, "Unix milliseconds"));
  }
  if (ctx.telemetry == nullptr) {
    return Unavailable("this server keeps no GPU telemetry");
  }
  const GpuUuid uuid(ctx.params.at("uuid"));
  if (!ctx.telemetry->Find(uuid)) {
    return NotFound("gpu " + uuid.value() + " not found (GET /api/v1/gpus lists them)");
  }
  const std::vector<SeriesPoint> ring =
      ctx.telemetry->Series(uuid,
                            found->metric,
                            resolution == "fine" ? Resolution::kFine : Resolution::kCoarse,
                            FromUnixMillis(from_ms),
                            FromUnixMillis(to_ms));
  json points = json::array();
  // Older than the ring's first point: the store's minutes (those it keeps the reading of).
  const std::int64_t ring_from = ring.empty() ? to_ms : ToUnixMillis(ring.front().time);
  if (resolution == "coarse" && from_ms < ring_from &&
      StoredReading(found->metric, GpuMinute{}).has_value()) {
    GF_ASSIGN_OR_RETURN(
        const std::vector<GpuMinute> stored,
        service.GpuHistory(ctx.caller, uuid, FromUnixMillis(from_ms), FromUnixMillis(ring_from)));
    for (const GpuMinute& minute : stored) {
      points.push_back(
          json::array({ToUnixMillis(minute.minute), *StoredReading(found->metric, minute)}));
    }
  }
  for (const SeriesPoint& p : ring) {
    points.push_back(json::array({ToUnixMillis(p.time), p.value}));
  }
  return JsonResponse(200,
                      json{{"uuid", uuid.value()},
                           {"metric", name},
                           {"resolution", resolution},
                           {"points", std::move(points)}});
}

// GET /metrics, for Prometheus: outside /api/v1 and open to every caller (cluster-wide counts
// only, as Stats() allows). GPU families come from the Telemetry, empty without one.
Result<HttpResponse> Metrics(ClusterService& service, const RequestContext& ctx) {
  GF_ASSIGN_OR_RETURN(const ClusterStats stats, service.Stats(ctx.caller));
  const TelemetrySnapshot telemetry =
      ctx.telemetry != nullptr ? ctx.telemetry->Snapshot() : TelemetrySnapshot{};
  HttpResponse response;
  response.headers.emplace_back("Content-Type", std::string(kPrometheusContentType));
  response.body = RenderPrometheus(telemetry, stats);
  return response;
}

// The route table. Job routes need an identity: on plain TCP there is none yet (bearer tokens
// come later), and the service must never see an anonymous submit.
const std::array<RouteEntry, 43> kRoutes = {{
    {{"GET", "/api/v1/health", false}, "", &Health},
    {{"POST", "/api/v1/jobs", true}, "", &SubmitJob},
    {{"GET", "/api/v1/jobs", true}, "all,user,limit,cursor,watch", &ListJobs},
    {{"GET", "/api/v1/jobs/{id}", true}, "", &OnJob<&ClusterService::GetJob>},
    {{"POST", "/api/v1/jobs/{id}/cancel", true}, "", &OnJob<&ClusterService::CancelJob>},
    {{"POST", "/api/v1/jobs/{id}/approve", true}, "", &OnJob<&ClusterService::ApproveJob>},
    {{"POST", "/api/v1/jobs/{id}/checkpoint", true}, "", &OnJob<&ClusterService::CheckpointJob>},
    {{"POST", "/api/v1/arrays/{id}/cancel", true}, "", &CancelArray},
    {{"POST", "/api/v1/jobs/{id}/hold", true}, "", &OnJob<&ClusterService::HoldJob>},
    {{"POST", "/api/v1/jobs/{id}/release", true}, "", &OnJob<&ClusterService::ReleaseJob>},
    {{"POST", "/api/v1/jobs/{id}/requeue", true}, "", &OnJob<&ClusterService::RequeueJob>},
    {{"POST", "/api/v1/jobs/{id}/update", true}, "", &UpdateJob},
    {{"POST", "/api/v1/jobs/cancel", true}, "", &CancelJobs},
    {{"POST", "/api/v1/jobs/{id}/signal", true}, "", &SignalJob},
    {{"POST", "/api/v1/jobs/signal", true}, "", &SignalJobs},
    {{"GET", "/api/v1/jobs/{id}/events", true}, "", &JobEvents},
    {{"GET", "/api/v1/jobs/{id}/runs", true}, "", &JobRunsRoute},
    {{"GET", "/api/v1/history", true},
     "since_ms,until_ms,state,user,team,cursor,limit",
     &JobHistory},
    {{"GET", "/api/v1/jobs/{id}/explain", true}, "", &ExplainJob},
    {{"GET", "/api/v1/jobs/{id}/logs", true}, "stream,offset,limit", &JobLogsChunk},
    {{"POST", "/api/v1/jobs/{id}/terminal", true}, "", &WriteTerminal},
    {{"GET", "/api/v1/quota", true}, "", &GetQuota},
    {{"GET", "/api/v1/report", true}, "period,team", &GetReport},
    {{"GET", "/api/v1/nodes", false}, "watch", &ListNodes},
    {{"GET", "/api/v1/gpus", false}, "watch", &ListGpus},
    {{"GET", "/api/v1/gpus/{uuid}/series", false}, "metric,from_ms,to_ms,resolution", &GpuSeries},
    {{"GET", "/api/v1/cluster/series", false}, "window", &ClusterSeriesRoute},
    {{"GET", "/metrics", false}, "", &Metrics},
    {{"POST", "/api/v1/tokens", true}, "", &CreateToken},
    {{"GET", "/api/v1/tokens", true}, "", &ListTokens},
    {{"POST", "/api/v1/tokens/{id}/revoke", true}, "", &RevokeToken},
    {{"POST", "/api/v1/nodes/{name}/drain", true}, "", &DrainNode},
    {{"POST", "/api/v1/nodes/{name}/resume", true}, "", &ResumeNode},
    {{"POST", "/api/v1/nodes/{name}/gpus/{gpu}/resume", true}, "", &ResumeGpu},
    {{"POST", "/api/v1/nodes/{name}/gpus/{gpu}/mode", true}, "", &SetGpuMode},
    {{"POST", "/api/v1/nodes/{name}/gpus/{gpu}/mig-layout", true}, "", &SetMigLayout},
    {{"POST", "/api/v1/subscriptions", true}, "", &CreateSubscription},
    {{"GET", "/api/v1/subscriptions", true}, "", &ListSubscriptions},
    {{"DELETE", "/api/v1/subscriptions/{id}", true}, "", &DeleteSubscription},
    // Node agents authenticate with node tokens, not as users: the link checks them itself.
    {{"POST", "/api/v1/agent/hello", false}, "", &AgentHelloRoute},
    {{"POST", "/api/v1/agent/reports", false}, "session", &AgentReportsRoute},
    {{"GET", "/api/v1/agent/commands", false}, "session,after", &AgentCommandsRoute},
    {{"POST", "/api/v1/agent/logs", false}, "session", &AgentLogsRoute},
}};

// The lists a client may watch (?watch=1), with the server-sent event name of each. The
// transport streams them (api_server.h); the handlers above answer each re-read.
struct WatchableList {
  std::string_view path;
  std::string_view event;
};
constexpr std::array<WatchableList, 3> kWatchable = {{
    {"/api/v1/jobs", "jobs"},
    {"/api/v1/gpus", "gpus"},
    {"/api/v1/nodes", "nodes"},
}};

// `watch` is a boolean; checked here once for every route that accepts it.
Result<bool> WatchRequested(const std::map<std::string, std::string>& query) {
  const auto it = query.find("watch");
  return ParseBoolParam("watch",
                        it == query.end() ? std::nullopt : std::optional<std::string>(it->second));
}

Status CheckQueryNames(const RouteEntry& route, const std::map<std::string, std::string>& query) {
  const auto allowed = Split(route.query_params, ',');
  for (const auto& [name, value] : query) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return InvalidArgument("unknown query parameter \"" + name + "\" for " +
                             std::string(route.info.method) + " " + std::string(route.info.path) +
                             (route.query_params.empty()
                                  ? std::string("; it takes none")
                                  : "; known: " + std::string(route.query_params)));
    }
  }
  return OkStatus();
}

// A request body is JSON, and says so: Content-Type application/json (any case, parameters
// such as "; charset=utf-8" allowed). Every client of ours labels its bodies (ApiClient does for
// the CLI and the agent link; the dashboard sends none), so a missing Content-Type is
// refused too: guessing would accept a form post (curl -d's default) or a browser's text/plain
// as if it were meant for us. Requests without a body are not checked.
std::optional<HttpResponse> CheckBodyMediaType(const HttpRequest& request, std::string_view path) {
  if (request.body.empty()) {
    return std::nullopt;
  }
  const std::optional<std::string> type = FindHeader(request.headers, "Content-Type");
  std::string_view media = type ? std::string_view{*type} : std::string_view{};
  media = media.substr(0, media.find(';'));
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) {
    media.remove_suffix(1);
  }
  constexpr std::string_view kJson = "application/json";
  if (std::equal(media.begin(), media.end(), kJson.begin(), kJson.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == b;
      })) {
    return std::nullopt;
  }
  return ErrorResponse(
      415,
      "unsupported_media_type",
      request.method + " " + std::string(path) + ": the body must be JSON sent with " +
          "Content-Type: application/json" +
          (type ? ", not \"" + TextPreview(*type, 60) + "\"" : std::string(" (none was sent)")) +
          " (e.g. curl -H 'Content-Type: application/json' -d @job.json)");
}

HttpResponse Dispatch(ClusterService& service,
                      const Telemetry* telemetry,
                      const ClusterSeries* cluster_series,
                      AgentLinkService* agent_link,
                      JobRowCache& rows,
                      const Caller& caller,
                      const HttpRequest& request) {
  const std::string_view target = request.target;
  const std::size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const auto query = ParseQuery(q == std::string_view::npos ? "" : target.substr(q + 1));

  std::string allow;
  for (const auto& route : kRoutes) {
    std::map<std::string, std::string> params;
    if (!MatchPath(route.info.path, path, params)) {
      continue;
    }
    if (route.info.method != request.method) {
      allow += allow.empty() ? "" : ", ";
      allow += route.info.method;
      continue;
    }
    if (route.info.requires_identity && !caller.authenticated) {
      HttpResponse r = ErrorResponse(
          401,
          "unauthenticated",
          caller.node
              ? std::string("a node token is only for gpufleet agent (the agent link); "
                            "users need a user token (gpufleet token create --user)")
              : std::string("job endpoints need to know who you are: over TCP send an API "
                            "token (--token-file, GPUFLEET_TOKEN_FILE or GPUFLEET_TOKEN), or use "
                            "the Unix socket (--socket, GPUFLEET_SOCKET), where the caller's uid "
                            "is its identity"));
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return r;
    }
    if (std::optional<HttpResponse> refused = CheckBodyMediaType(request, path)) {
      return *std::move(refused);
    }
    if (Status s = CheckQueryNames(route, query); !s.ok()) {
      return ErrorResponse(s.error());
    }
    if (Result<bool> watch = WatchRequested(query); !watch.ok()) {
      return ErrorResponse(watch.error());
    }
    RequestContext ctx{
        caller, request, std::move(params), query, telemetry, cluster_series, agent_link, rows};
    Result<HttpResponse> result = route.handler(service, ctx);
    return result.ok() ? std::move(result).value() : ErrorResponse(result.error());
  }
  if (!allow.empty()) {
    HttpResponse r = ErrorResponse(
        405,
        "method_not_allowed",
        request.method + " is not allowed on " + std::string(path) + "; allowed: " + allow);
    r.headers.emplace_back("Allow", allow);
    return r;
  }
  return ErrorResponse(
      404, "not_found", "no route for " + std::string(path) + " (see docs/openapi.json)");
}

}  // namespace

std::span<const RouteInfo> RouteTable() {
  static const std::vector<RouteInfo> table = [] {
    std::vector<RouteInfo> out;
    out.reserve(kRoutes.size());
    for (const auto& route : kRoutes) {
      out.push_back(route.info);
    }
    return out;
  }();
  return table;
}

HttpResponse ErrorResponse(const Error& error) {
  return ErrorResponse(HttpStatusFor(error.code), ErrorCodeName(error.code), error.message);
}

HttpResponse ErrorResponse(int status, std::string_view code_name, std::string_view message) {
  return JsonResponse(status, ErrorToJson(code_name, message));
}

std::optional<std::string_view> Router::WatchEvent(const HttpRequest& request) const {
  if (request.method != "GET") {
    return std::nullopt;
  }
  const std::string_view target = request.target;
  const std::size_t q = target.find('?');
  if (q == std::string_view::npos) {
    return std::nullopt;
  }
  const Result<bool> watch = WatchRequested(ParseQuery(target.substr(q + 1)));
  if (!watch.ok() || !watch.value()) {
    return std::nullopt;  // a bad value is answered by Handle (400)
  }
  for (const auto& list : kWatchable) {
    if (target.substr(0, q) == list.path) {
      return list.event;
    }
  }
  return std::nullopt;
}

bool Router::IsCommandStream(const HttpRequest& request) const {
  const std::string_view target = request.target;
  return request.method == "GET" && target.substr(0, target.find('?')) == "/api/v1/agent/commands";
}

Result<std::shared_ptr<CommandStream>> Router::OpenCommandStream(const Caller& caller,
                                                                 const HttpRequest& request) const {
  const std::string_view target = request.target;
  const std::size_t q = target.find('?');
  const auto query = ParseQuery(q == std::string_view::npos ? "" : target.substr(q + 1));
  RequestContext ctx{caller, request, {}, query, telemetry_, cluster_series_, agent_link_, *rows_};
  GF_ASSIGN_OR_RETURN(AgentLinkService * link, AgentLink(ctx));
  GF_ASSIGN_OR_RETURN(const std::int64_t session, SessionParam(ctx));
  std::int64_t after = 0;
  if (const auto a = QueryValue(ctx, "after")) {
    GF_ASSIGN_OR_RETURN(after, ParseInt("after", *a, 0, INT64_MAX, "a whole number >= 0"));
  }
  return link->Commands(caller, session, after);
}

HttpResponse Router::Handle(const Caller& caller, const HttpRequest& request) const {
  // The handler boundary: nothing a library throws may reach the transport's threads.
  try {
    // The dashboard's files (web/) at / need no identity; every call they make is an API call.
    if (std::optional<HttpResponse> asset = ServeWebAsset(request)) {
      return *std::move(asset);
    }
    return Dispatch(service_, telemetry_, cluster_series_, agent_link_, *rows_, caller, request);
  } catch (const std::bad_alloc&) {
    return ErrorResponse(Internal("out of memory while handling " + request.target));
  } catch (const std::exception& e) {
    return ErrorResponse(
        Internal(std::string("internal error while handling ") + request.target + ": " + e.what()));
  }
}

}  // namespace gf
