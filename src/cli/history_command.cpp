#include "cli/history_command.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "api/api_client.h"
#include "cli/job_ref.h"
#include "cli/report_view.h"
#include "cli/table.h"
#include "cli/views.h"
#include "core/duration.h"
#include "core/gpu_hours.h"
#include "core/hex.h"
#include "model/job.h"
#include "report/job_efficiency.h"

namespace gf {
namespace {

using nlohmann::json;

struct FieldName {
  HistoryField field;
  std::string_view name;    // --format and the CSV header
  std::string_view header;  // the table's
  std::string_view key;     // the job's JSON field printed as is; "" for a figure computed here
};
constexpr std::array<FieldName, 20> kFields = {{
    {HistoryField::kId, "id", "JOBID", ""},
    {HistoryField::kName, "name", "NAME", "name"},
    {HistoryField::kUser, "user", "USER", "user"},
    {HistoryField::kTeam, "team", "TEAM", "team"},
    {HistoryField::kState, "state", "STATE", "state"},
    {HistoryField::kExit, "exit", "EXIT", "exit_code"},
    {HistoryField::kSubmit, "submit", "SUBMIT", "submit_time"},
    {HistoryField::kStart, "start", "START", "start_time"},
    {HistoryField::kEnd, "end", "END", "end_time"},
    {HistoryField::kElapsed, "elapsed", "ELAPSED", ""},
    {HistoryField::kTimeLimit, "timelimit", "TIMELIMIT", ""},
    {HistoryField::kGpus, "gpus", "GPUS", ""},
    {HistoryField::kGpuHours, "gpu_hours", "GPU-H", ""},
    {HistoryField::kUtil, "util", "UTIL", ""},
    {HistoryField::kPeakMem, "peak_mem", "PEAK MEM", ""},
    {HistoryField::kCpuTime, "cpu_time", "CPU TIME", ""},
    {HistoryField::kMaxRss, "max_rss", "MAXRSS", ""},
    {HistoryField::kEnergy, "energy", "ENERGY", ""},
    {HistoryField::kNode, "node", "NODE", "node"},
    {HistoryField::kReason, "reason", "REASON", "reason"},
}};
constexpr std::string_view kDefaultFormat =
    "id,name,user,state,exit,start,elapsed,gpus,gpu_hours,util,peak_mem,energy,node";

std::string KnownFields() {
  std::string out;
  for (const FieldName& f : kFields) {
    out += (out.empty() ? "" : ",") + std::string(f.name);
  }
  return out;
}

const FieldName& Named(HistoryField field) {
  return *std::find_if(
      kFields.begin(), kFields.end(), [field](const FieldName& f) { return f.field == field; });
}

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return out;
}

std::vector<std::string_view> SplitCommas(std::string_view text) {
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t comma = text.find(',');
    out.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) {
      return out;
    }
    text.remove_prefix(comma + 1);
  }
}

const json& Object(const json& j, std::string_view key) {
  static const json empty_object = json::object();
  const auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty_object;
}

// Seconds the job ran: start to end, or to now while it runs; nullopt before it started.
std::optional<double> ElapsedSeconds(const json& job, std::int64_t now_ms) {
  const std::optional<double> start = JsonNumber(job, "start_time_ms");
  if (!start) {
    return std::nullopt;
  }
  const double end = JsonNumber(job, "end_time_ms").value_or(static_cast<double>(now_ms));
  return std::max(end - *start, 0.0) / 1000.0;
}

// The GPUs it held: its GPU count times its share of each (0.25 of one); 0 before it started.
double HeldGpus(const json& job) {
  const auto uuids = job.find("gpu_uuids");
  const auto count = uuids != job.end() && uuids->is_array() ? uuids->size() : 0;
  return static_cast<double>(count) * JsonNumber(job, "alloc_gpu_share").value_or(1.0);
}

std::optional<double> GpuHours(const json& job, std::int64_t now_ms) {
  const std::optional<double> elapsed = ElapsedSeconds(job, now_ms);
  if (!elapsed) {
    return std::nullopt;
  }
  return HeldGpus(job) * *elapsed / 3600.0;
}

std::string Or(const std::optional<double>& v, int decimals, std::string_view unit, bool csv) {
  if (!v) {
    return csv ? "" : "-";
  }
  return FixedDecimals(*v, decimals) + (csv ? "" : std::string(unit));
}

// Whole seconds as `show` prints a duration ("1h30m"), or for CSV as a number.
std::string DurationCell(const std::optional<double>& seconds, bool csv) {
  if (!seconds) {
    return csv ? "" : "-";
  }
  const auto whole = static_cast<std::int64_t>(*seconds);
  return csv ? std::to_string(whole) : FormatDuration(std::chrono::seconds(whole));
}

// The job's GPU usage, empty (unknown) when no sample was counted: a job that ended before the
// first sample has a usage of zeros, which is no reading.
const json& Usage(const json& job) {
  const json& usage = Object(job, "usage");
  static const json none = json::object();
  return JsonNumber(usage, "samples").value_or(0) > 0 ? usage : none;
}

std::string Text(const json& job, std::string_view key, bool csv) {
  return JsonText(job, key, csv ? "" : "-");
}

// What its processes used of the host (measured when a run ends); nullopt when not measured.
std::optional<std::int64_t> HostFigure(const json& job, std::string_view key) {
  const std::optional<double> v = JsonNumber(Object(job, "host_usage"), key);
  return v ? std::optional<std::int64_t>(static_cast<std::int64_t>(*v)) : std::nullopt;
}

}  // namespace

Result<std::vector<HistoryField>> ParseHistoryFormat(std::string_view text) {
  if (text.empty()) {
    text = kDefaultFormat;
  }
  std::vector<HistoryField> out;
  for (std::string_view name : SplitCommas(text)) {
    const std::string lower = Lower(name);
    const auto* const it = std::find_if(
        kFields.begin(), kFields.end(), [&](const FieldName& f) { return f.name == lower; });
    if (it == kFields.end()) {
      return InvalidArgument("--format: unknown field '" + std::string(name) +
                             "'; use a comma-separated list of " + KnownFields());
    }
    out.push_back(it->field);
  }
  return out;
}

Result<Time> ParseHistoryTime(std::string_view text, Time now, std::string_view flag) {
  const std::string forms = std::string(flag) + ": '" + std::string(text) +
                            "' is not a time; use a UTC date and time like 2026-12-01 or "
                            "2026-12-01T08:30:00Z, now, or a duration ago like 2d or 12h";
  if (text == "now") {
    return now;
  }
  if (text.size() >= 10 && std::isdigit(static_cast<unsigned char>(text[0])) != 0 &&
      text[4] == '-') {
    std::string s(text);
    if (s.back() == 'Z') {
      s.pop_back();
    }
    std::tm tm{};
    int consumed = 0;
    const int n =
        std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &consumed);
    if (n != 3) {
      return InvalidArgument(forms);
    }
    const std::string_view whole = s;
    std::string_view rest = whole.substr(static_cast<std::size_t>(consumed));
    if (!rest.empty()) {
      if (rest[0] != 'T' && rest[0] != ' ') {
        return InvalidArgument(forms);
      }
      int more = 0;
      const std::string clock(rest.substr(1));
      const int m = std::sscanf(
          clock.c_str(), "%2d:%2d%n:%2d%n", &tm.tm_hour, &tm.tm_min, &more, &tm.tm_sec, &more);
      if (m < 2 || static_cast<std::size_t>(more) != clock.size()) {
        return InvalidArgument(forms);
      }
    }
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60) {
      return InvalidArgument(forms);
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    const std::time_t t = timegm(&tm);
    return std::chrono::time_point_cast<Time::duration>(std::chrono::system_clock::from_time_t(t));
  }
  const Result<std::chrono::seconds> ago = ParseDuration(text);
  if (!ago.ok()) {
    return InvalidArgument(forms);
  }
  return now - *ago;
}

Result<std::string> ParseHistoryStates(std::string_view text) {
  // Slurm's short names (sacct's and squeue's ST column) for the states gpufleet has.
  constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kShort = {{
      {"PD", "PENDING"},
      {"ST", "STARTING"},
      {"R", "RUNNING"},
      {"CD", "COMPLETED"},
      {"F", "FAILED"},
      {"CA", "CANCELLED"},
      {"TO", "TIMEOUT"},
      {"PR", "PREEMPTED"},
      {"NF", "NODE_FAIL"},
  }};
  std::string out;
  for (std::string_view name : SplitCommas(text)) {
    std::string upper(name);
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) {
      return static_cast<char>(std::toupper(c));
    });
    std::string found;
    for (const auto& [abbrev, full] : kShort) {
      if (upper == abbrev || upper == full) {
        found = full;
      }
    }
    if (found.empty()) {
      return InvalidArgument("--state: unknown state '" + std::string(name) +
                             "'; use PENDING (PD), STARTING (ST), RUNNING (R), COMPLETED (CD), "
                             "FAILED (F), CANCELLED (CA), TIMEOUT (TO), PREEMPTED (PR) or "
                             "NODE_FAIL (NF), comma-separated");
    }
    out += (out.empty() ? "" : ",") + found;
  }
  return out;
}

Result<std::string> HistoryTarget(const HistoryFlags& flags,
                                  Time now,
                                  std::optional<std::int64_t> cursor,
                                  int limit) {
  std::string target = "/api/v1/history?limit=" + std::to_string(limit);
  if (!flags.since.empty()) {
    GF_ASSIGN_OR_RETURN(const Time since, ParseHistoryTime(flags.since, now, "--since"));
    target += "&since_ms=" + std::to_string(ToUnixMillis(since));
  }
  if (!flags.until.empty()) {
    GF_ASSIGN_OR_RETURN(const Time until, ParseHistoryTime(flags.until, now, "--until"));
    target += "&until_ms=" + std::to_string(ToUnixMillis(until));
  }
  if (!flags.state.empty()) {
    GF_ASSIGN_OR_RETURN(const std::string states, ParseHistoryStates(flags.state));
    target += "&state=" + PercentEncode(states);
  }
  if (!flags.user.empty()) {
    target += "&user=" + PercentEncode(flags.user);
  }
  if (flags.team) {
    target += "&team=" + PercentEncode(*flags.team);
  }
  if (cursor) {
    target += "&cursor=" + std::to_string(*cursor);
  }
  return target;
}

std::string HistoryHeader(HistoryField field, bool csv) {
  const FieldName& f = Named(field);
  return std::string(csv ? f.name : f.header);
}

std::string HistoryCell(const json& job, HistoryField field, std::int64_t now_ms, bool csv) {
  if (const std::string_view key = Named(field).key; !key.empty()) {
    return Text(job, key, csv);
  }
  const json& usage = Usage(job);
  switch (field) {
    case HistoryField::kId: {
      const std::string task = ArrayTaskLabel(job);
      return task.empty() ? Text(job, "id", csv) : task;
    }
    case HistoryField::kElapsed:
      return DurationCell(ElapsedSeconds(job, now_ms), csv);
    case HistoryField::kTimeLimit:
      return DurationCell(JsonNumber(job, "time_limit_s"), csv);
    case HistoryField::kGpus:
      return JobGpusText(job);
    case HistoryField::kGpuHours: {
      const std::optional<double> hours = GpuHours(job, now_ms);
      return hours ? FormatGpuHours(*hours) : (csv ? "" : "-");
    }
    case HistoryField::kUtil:
      return Or(JsonNumber(usage, "mean_util_pct"), 1, "%", csv);
    case HistoryField::kPeakMem:
      return Or(JsonNumber(usage, "peak_memory_mib"), 0, " MiB", csv);
    case HistoryField::kEnergy:
      return Or(JsonNumber(usage, "energy_kwh"), 3, " kWh", csv);
    case HistoryField::kCpuTime: {
      const std::optional<std::int64_t> ms = HostFigure(job, "cpu_ms");
      if (!ms) {
        return csv ? "" : "-";
      }
      return csv ? FixedDecimals(static_cast<double>(*ms) / 1000.0, 3) : FormatCpuTime(*ms);
    }
    case HistoryField::kMaxRss: {
      const std::optional<std::int64_t> kib = HostFigure(job, "peak_memory_kib");
      if (!kib) {
        return csv ? "" : "-";
      }
      return csv ? FixedDecimals(static_cast<double>(*kib) / 1024.0, 1) : FormatKib(*kib);
    }
    default:  // the fields printed as is, above
      return "";
  }
}

namespace {

enum class HistoryOutput { kTable, kCsv, kJson };

// Writes pages until the history ends or `max_jobs` (0: no bound) were written; `row` gets
// each job. Returns whether jobs were left unwritten.
Result<bool> ForEachHistoryJob(ApiClient& client,
                               const HistoryFlags& flags,
                               Time now,
                               int max_jobs,
                               const std::function<void(const json&)>& row) {
  std::optional<std::int64_t> cursor;
  int written = 0;
  while (true) {
    const int want =
        max_jobs > 0 ? std::min(kHistoryPageSize, max_jobs - written) : kHistoryPageSize;
    GF_ASSIGN_OR_RETURN(const std::string target, HistoryTarget(flags, now, cursor, want));
    GF_ASSIGN_OR_RETURN(const json page, client.CallJson("GET", target, std::nullopt));
    const auto jobs = page.find("jobs");
    if (jobs != page.end() && jobs->is_array()) {
      for (const json& job : *jobs) {
        row(job);
        ++written;
      }
    }
    const std::optional<double> next = JsonNumber(page, "next_cursor");
    if (!next) {
      return false;
    }
    if (max_jobs > 0 && written >= max_jobs) {
      return true;
    }
    cursor = static_cast<std::int64_t>(*next);
  }
}

int RunHistory(const ClientContext& ctx, const HistoryFlags& flags) {
  const Result<std::vector<HistoryField>> fields = ParseHistoryFormat(flags.format);
  if (!fields.ok()) {
    return Fail(fields.error());
  }
  if (flags.limit < 0) {
    return Fail(InvalidArgument("--limit: must be a positive number of jobs"));
  }
  const Time now = SystemClock().Now();
  // Checked before connecting, so that a typo is reported as such even without a server.
  if (const Result<std::string> target = HistoryTarget(flags, now, std::nullopt, 1); !target.ok()) {
    return Fail(target.error());
  }
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  const std::int64_t now_ms = ToUnixMillis(now);
  const HistoryOutput output = flags.json  ? HistoryOutput::kJson
                               : flags.csv ? HistoryOutput::kCsv
                                           : HistoryOutput::kTable;
  if (output == HistoryOutput::kTable) {
    std::vector<std::string> header;
    for (const HistoryField f : *fields) {
      header.push_back(HistoryHeader(f, false));
    }
    Table table(std::move(header));
    const int max_jobs = flags.limit > 0 ? flags.limit : kHistoryTableRows;
    const Result<bool> more =
        ForEachHistoryJob(**opened, flags, now, max_jobs, [&](const json& job) {
          std::vector<std::string> row;
          for (const HistoryField f : *fields) {
            row.push_back(HistoryCell(job, f, now_ms, false));
          }
          table.AddRow(std::move(row));
        });
    if (!more.ok()) {
      return Fail(more.error());
    }
    table.Print(std::cout);
    if (*more) {
      std::cout << "(the newest " << max_jobs
                << " jobs; more with --limit N, or every one with --csv or --json)\n";
    }
    return 0;
  }
  bool first = true;
  if (output == HistoryOutput::kCsv) {
    for (std::size_t i = 0; i < fields->size(); ++i) {
      std::cout << (i == 0 ? "" : ",") << HistoryHeader((*fields)[i], true);
    }
    std::cout << '\n';
  } else {
    std::cout << "[";
  }
  const Result<bool> more =
      ForEachHistoryJob(**opened, flags, now, flags.limit, [&](const json& job) {
        if (output == HistoryOutput::kJson) {
          std::cout << (first ? "\n" : ",\n")
                    << job.dump(-1, ' ', false, json::error_handler_t::replace);
          first = false;
          return;
        }
        for (std::size_t i = 0; i < fields->size(); ++i) {
          std::cout << (i == 0 ? "" : ",")
                    << CsvField(HistoryCell(job, (*fields)[i], now_ms, true));
        }
        std::cout << '\n';
      });
  if (output == HistoryOutput::kJson) {
    std::cout << (first ? "]\n" : "\n]\n");
  }
  std::cout.flush();
  return more.ok() ? 0 : Fail(more.error());
}

// The memory of the job's first GPU on `node` (GET /nodes' node), 0 when not found.
std::int64_t CardMemoryMib(const json& job, const json& node) {
  const auto uuids = job.find("gpu_uuids");
  const auto gpus = node.find("gpus");
  if (uuids == job.end() || !uuids->is_array() || uuids->empty() || gpus == node.end() ||
      !gpus->is_array()) {
    return 0;
  }
  for (const json& gpu : *gpus) {
    if (gpu.value("uuid", "") == (*uuids)[0].get<std::string>()) {
      return gpu.value("memory_mib", std::int64_t{0});
    }
  }
  return 0;
}

int RunEff(const ClientContext& ctx, const std::string& id_text, bool as_json) {
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  ApiClient& client = **opened;
  const Result<std::int64_t> id = ResolveJobId(client, id_text);
  if (!id.ok()) {
    return Fail(id.error());
  }
  const Result<json> job =
      client.CallJson("GET", "/api/v1/jobs/" + std::to_string(*id), std::nullopt);
  if (!job.ok()) {
    return Fail(job.error());
  }
  json node = json::object();
  if (const std::string name = JsonText(*job, "node", ""); !name.empty()) {
    const Result<json> nodes = client.CallJson("GET", "/api/v1/nodes", std::nullopt);
    if (nodes.ok() && nodes->contains("nodes") && (*nodes)["nodes"].is_array()) {
      for (const json& n : (*nodes)["nodes"]) {
        if (n.value("name", "") == name) {
          node = n;
        }
      }
    }
  }
  const std::int64_t now_ms = ToUnixMillis(SystemClock().Now());
  if (as_json) {
    std::cout << EfficiencyJson(*job, node, now_ms).dump(2) << '\n';
  } else {
    PrintEfficiency(*job, node, now_ms, std::cout);
  }
  return 0;
}

void Line(std::ostream& out, std::string_view label, const std::string& value) {
  out << label << ':' << std::string(label.size() < 20 ? 20 - label.size() : 1, ' ') << value
      << '\n';
}

std::string Pct(const std::optional<double>& pct) {
  return pct ? " (" + FixedDecimals(*pct, 0) + " %)" : "";
}

}  // namespace

namespace {

bool IsRunning(const json& job) {
  const std::string state = JsonText(job, "state");
  return state == "RUNNING" || state == "STARTING";
}

JobEfficiencyInput EfficiencyInput(const json& job, const json& node, std::int64_t now_ms) {
  const json& usage = Usage(job);
  JobEfficiencyInput in{.held_gpus = HeldGpus(job),
                        .elapsed_s = ElapsedSeconds(job, now_ms).value_or(0),
                        .time_limit_s = JsonNumber(job, "time_limit_s"),
                        .mean_util_pct = JsonNumber(usage, "mean_util_pct"),
                        .peak_memory_mib = std::nullopt,
                        .card_memory_mib = CardMemoryMib(job, node),
                        .running = IsRunning(job),
                        .cpus = static_cast<int>(job.value("cpus", std::int64_t{0})),
                        .host_memory_mib = job.value("mem_mib", std::int64_t{0}),
                        .cpu_ms = HostFigure(job, "cpu_ms"),
                        .peak_host_memory_kib = HostFigure(job, "peak_memory_kib")};
  if (const auto peak = JsonNumber(usage, "peak_memory_mib")) {
    in.peak_memory_mib = static_cast<std::int64_t>(*peak);
  }
  return in;
}

json Optional(const std::optional<double>& v) {
  return v ? json(*v) : json();
}

// Whether the job ended at its host memory limit (the shim's OUT_OF_MEMORY cause).
bool OutOfMemory(const json& job) {
  return JsonText(job, "reason", "").rfind("OUT_OF_MEMORY", 0) == 0;
}

// Its host CPUs and memory (issue #24): what it reserved (their use: the CPU and memory lines).
std::string HostText(const json& job) {
  const std::string host = DescribeHostRequest(HostRequest(job));
  if (host.empty()) {
    return "none reserved";
  }
  return host + " reserved" +
         (OutOfMemory(job) ? "; killed at its memory limit (OUT_OF_MEMORY): ask for more --mem"
                           : "");
}

}  // namespace

json EfficiencyJson(const json& job, const json& node, std::int64_t now_ms) {
  const JobEfficiencyInput in = EfficiencyInput(job, node, now_ms);
  const JobEfficiency eff = ComputeJobEfficiency(in);
  return json{
      {"id", job.value("id", json())},
      {"state", job.value("state", json())},
      {"exit_code", job.value("exit_code", json())},
      {"running", in.running},
      {"elapsed_s", in.elapsed_s},
      {"time_limit_s", Optional(in.time_limit_s)},
      {"time_limit_pct", Optional(eff.time_limit_pct)},
      {"gpus", in.held_gpus},
      {"node", job.value("node", json())},
      {"gpu_hours_allocated", eff.gpu_hours_allocated},
      {"gpu_hours_used", Optional(eff.gpu_hours_used)},
      {"mean_util_pct", Optional(in.mean_util_pct)},
      {"peak_memory_mib", in.peak_memory_mib ? json(*in.peak_memory_mib) : json()},
      {"card_memory_mib", in.card_memory_mib > 0 ? json(in.card_memory_mib) : json()},
      {"memory_pct", Optional(eff.memory_pct)},
      {"energy_kwh", Optional(JsonNumber(Usage(job), "energy_kwh"))},
      {"cpus", job.value("cpus", std::int64_t{0})},
      {"mem_mib", job.value("mem_mib", std::int64_t{0})},
      {"cpu_time_s", in.cpu_ms ? json(static_cast<double>(*in.cpu_ms) / 1000.0) : json()},
      {"core_time_s", eff.core_seconds > 0 ? json(eff.core_seconds) : json()},
      {"cpu_pct", Optional(eff.cpu_pct)},
      {"peak_host_memory_mib",
       in.peak_host_memory_kib ? json(static_cast<double>(*in.peak_host_memory_kib) / 1024.0)
                               : json()},
      {"host_memory_pct", Optional(eff.host_memory_pct)},
      {"out_of_memory", OutOfMemory(job)},
      {"advice", eff.advice}};
}

void PrintEfficiency(const json& job, const json& node, std::int64_t now_ms, std::ostream& out) {
  const JobEfficiencyInput in = EfficiencyInput(job, node, now_ms);
  const bool running = in.running;
  const JobEfficiency eff = ComputeJobEfficiency(in);
  const std::string so_far = running ? " (so far, running)" : "";
  Line(out,
       "Job",
       JsonText(job, "id") + " (" + JsonText(job, "name") + ")  user " + JsonText(job, "user"));
  const std::string exit_code = JsonText(job, "exit_code", "");
  Line(
      out, "State", JsonText(job, "state") + (exit_code.empty() ? "" : "  exit code " + exit_code));
  const std::string limit = HistoryCell(job, HistoryField::kTimeLimit, now_ms, false);
  Line(out,
       "Elapsed",
       HistoryCell(job, HistoryField::kElapsed, now_ms, false) + " of time limit " +
           (limit == "-" ? "none" : limit) + Pct(eff.time_limit_pct) + so_far);
  Line(out, "GPUs", JobGpusText(job) + " on " + JsonText(job, "node"));
  Line(out,
       "GPU-hours",
       FormatGpuHours(eff.gpu_hours_allocated) + " allocated, " +
           (eff.gpu_hours_used ? FormatGpuHours(*eff.gpu_hours_used) : std::string("-")) + " used" +
           (in.mean_util_pct ? " (mean utilisation " + FixedDecimals(*in.mean_util_pct, 1) + " %)"
                             : ""));
  const std::string card = in.card_memory_mib > 0
                               ? " of " + std::to_string(in.card_memory_mib) + " MiB on the card"
                               : "";
  Line(out,
       "GPU memory",
       (in.peak_memory_mib ? "peak " + std::to_string(*in.peak_memory_mib) + " MiB"
                           : std::string("-")) +
           card + Pct(eff.memory_pct));
  Line(out, "CPUs/memory", HostText(job));
  Line(out, "CPU efficiency", CpuEfficiencyText(in, eff));
  Line(out, "Peak host memory", HostMemoryText(in, eff));
  Line(
      out, "Energy", HistoryCell(job, HistoryField::kEnergy, now_ms, false) + [&] {
        const std::string cost = EnergyCost(Object(job, "energy"));
        return cost == "-" ? std::string() : ", cost " + cost;
      }());
  Line(out, "Advice", eff.advice);
}

void AddHistoryCommands(CLI::App& app, ClientContext& ctx) {
  auto flags = std::make_shared<HistoryFlags>();
  auto* history = app.add_subcommand(
      "history",
      "past and present jobs, like sacct: elapsed, GPU-hours, GPU utilisation, peak GPU memory, "
      "CPU time, peak host memory, energy, exit code, node");
  history->add_option(
      "-S,--since",
      flags->since,
      "jobs not ended before this (UTC: 2026-12-01, 2026-12-01T08:00:00Z, now, or 2d ago)");
  history->add_option("-E,--until", flags->until, "jobs submitted before this (same forms)");
  history->add_option("-s,--state",
                      flags->state,
                      "only these states, comma-separated (COMPLETED or CD, FAILED or F, ...)");
  history->add_option(
      "-u,--user", flags->user, "only this user's jobs (another's: operators and admins)");
  history->add_option("-A,--team", flags->team, "only this team's jobs");
  history->add_option("-o,--format",
                      flags->format,
                      "columns, comma-separated, of: " + KnownFields() + " (default " +
                          std::string(kDefaultFormat) + ")");
  history->add_option("--limit",
                      flags->limit,
                      "at most N jobs (default: " + std::to_string(kHistoryTableRows) +
                          " in the table, every one with --csv or --json)");
  auto* csv = history->add_flag(
      "--csv", flags->csv, "CSV of the --format columns, every job, page by page");
  history->add_flag("--json", flags->json, "a JSON array of the jobs, every job, page by page")
      ->excludes(csv);
  history->callback([&ctx, flags] { ctx.exit_code = RunHistory(ctx, *flags); });

  auto id = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto* eff = app.add_subcommand("eff",
                                 "one job's efficiency, like seff: time, GPU-hours used of "
                                 "allocated, GPU memory, CPU and host memory used of reserved, "
                                 "energy, advice");
  eff->add_option("JOB", *id, "job id, or array task ID_INDEX (17_1)")->required();
  eff->add_flag("--json", *as_json, "the figures as JSON");
  eff->callback([&ctx, id, as_json] { ctx.exit_code = RunEff(ctx, *id, *as_json); });
}

}  // namespace gf
