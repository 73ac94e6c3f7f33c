#include "cli/views.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <vector>

#include "cli/table.h"
#include "core/duration.h"
#include "core/printable_text.h"
#include "model/slice.h"
#include "model/team.h"

namespace gf {
namespace {

using nlohmann::json;

// Room for the health word and the start of its cause, so the table stays near 80 columns;
// the full cause is in --json.
constexpr std::size_t kHealthWidth = 32;

// j[key] when it is an object, else an empty object (a GPU without a sample yet).
const json& Object(const json& j, std::string_view key) {
  static const json empty_object = json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty_object;
}

const json& Array(const json& j, std::string_view key) {
  static const json empty_array = json::array();
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty_array;
}

std::optional<double> Number(const json& j, std::string_view key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) {
    return std::nullopt;
  }
  return it->get<double>();
}

bool Flag(const json& j, std::string_view key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// `v` with `decimals` digits after the point, e.g. Fixed(63.456, 1) == "63.5".
std::string Fixed(double v, int decimals) {
  std::array<char, 64> buf{};
  std::snprintf(buf.data(), buf.size(), "%.*f", decimals, v);
  return buf.data();
}

// A whole number followed by its unit ("55%", "71C"), or "-" when unknown.
std::string WithUnit(std::optional<double> v, std::string_view unit) {
  return v ? Fixed(*v, 0) + std::string(unit) : "-";
}

// "612/700W" (draw/limit), "612W" without a limit, "-" without a reading.
std::string Power(const json& sample) {
  const auto draw = Number(sample, "power_mw");
  if (!draw) {
    return "-";
  }
  const auto limit = Number(sample, "power_limit_mw");
  return Fixed(*draw / 1000, 0) + (limit ? "/" + Fixed(*limit / 1000, 0) : "") + "W";
}

// "40000/81920MiB": used from the sample, total from the inventory (known even when lost).
std::string Memory(const json& gpu, const json& sample) {
  const auto used = Number(sample, "memory_used_mib");
  return (used ? Fixed(*used, 0) : "-") + "/" + JsonText(gpu, "memory_mib") + "MiB";
}

bool IsLost(const json& gpu) {
  return Flag(Object(gpu, "sample"), "lost");
}

// "ok", "degraded: cause", and in upper case what needs a person now: "FAILED: cause",
// "LOST: cause" (the GPU fell off the bus).
std::string Health(const json& gpu) {
  std::string word = IsLost(gpu) ? "LOST" : JsonText(gpu, "health");
  if (word == "failed") {
    word = "FAILED";
  }
  const std::string cause = JsonText(gpu, "health_cause", "");
  return Truncate(cause.empty() || word == "ok" ? word : word + ": " + cause, kHealthWidth);
}

bool NeedsAttention(const json& gpu) {
  return IsLost(gpu) || JsonText(gpu, "health") == "failed";
}

// The API's condition names in words.
std::string ConditionText(const json& gpu) {
  std::string text;
  for (const auto& c : Array(gpu, "conditions")) {
    const std::string name = c.is_string() ? c.get<std::string>() : c.dump();
    const std::string words = name == "allocated_no_process"    ? "allocated, no process"
                              : name == "unallocated_process"   ? "process, not allocated"
                              : name == "gpu_memory_over_limit" ? "a job over its memory limit"
                                                                : name;
    text += (text.empty() ? "" : "; ") + words;
  }
  return text;
}

// Milli-GPUs as GPUs without trailing zeros: 750 -> "0.75", 2000 -> "2".
std::string GpuAmount(double milli) {
  std::string text = Fixed(milli / 1000, 3);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') {
    text.pop_back();
  }
  return text;
}

std::vector<std::string> GpuRow(const json& gpu) {
  const json& sample = Object(gpu, "sample");
  return {JsonText(gpu, "node"),
          JsonText(gpu, "index"),
          JsonText(gpu, "model"),
          WithUnit(Number(sample, "util_gpu_pct"), "%"),
          Memory(gpu, sample),
          WithUnit(Number(sample, "temperature_c"), "C"),
          Power(sample),
          Health(gpu),
          GpuJobText(gpu),
          GpuUserText(gpu)};
}

// "2 of 8 GPUs need attention (failed or lost); full causes: gpufleet gpus --json".
void PrintAttentionLine(const json& gpus, std::ostream& out) {
  std::size_t bad = 0;
  for (const auto& gpu : gpus) {
    bad += NeedsAttention(gpu) ? 1 : 0;
  }
  if (bad > 0) {
    out << bad << " of " << gpus.size() << (gpus.size() == 1 ? " GPU needs" : " GPUs need")
        << " attention (failed or lost); full causes: gpufleet gpus --json\n";
  }
}

// "alice", else "uid 1001", else "-".
std::string ProcessUser(const json& p) {
  std::string user = JsonText(p, "user", "");
  if (!user.empty()) {
    return user;
  }
  const std::string uid = JsonText(p, "uid", "");
  return uid.empty() ? "-" : "uid " + uid;
}

std::string ProcessJob(const json& p) {
  return Flag(p, "unmanaged") ? "unmanaged" : JsonText(p, "job");
}

void Line(std::ostream& out, std::string_view label, const std::string& value) {
  constexpr std::size_t kLabelWidth = 12;
  out << label << std::string(kLabelWidth - label.size(), ' ') << value << '\n';
}

// The usage lines of `show`: what the job's GPUs did, so far while it runs.
void PrintUsage(const json& job, std::ostream& out) {
  const json& usage = Object(job, "usage");
  if (usage.empty()) {
    Line(out, "GPU usage", JsonText(job, "gpus") == "0" ? "none (CPU-only job)" : "-");
    return;
  }
  const bool running = JsonText(job, "state") == "RUNNING";
  const auto mean = Number(usage, "mean_util_pct");
  Line(out,
       "GPU usage",
       "mean " + (mean ? Fixed(*mean, 1) + "%" : "-") + ", peak " +
           WithUnit(Number(usage, "peak_util_pct"), "%") + " over " + JsonText(usage, "samples") +
           " GPU samples" + (running ? " (so far, running)" : ""));
  Line(out, "GPU memory", "peak " + JsonText(usage, "peak_memory_mib") + " MiB on one GPU");
  const auto joules = Number(usage, "energy_j");
  const auto kwh = Number(usage, "energy_kwh");
  std::string energy =
      (joules ? Fixed(*joules, 0) + " J" : "-") + (kwh ? " (" + Fixed(*kwh, 3) + " kWh)" : "");
  const json& charge = Object(job, "energy");
  if (const std::string cost = EnergyCost(charge); cost != "-") {
    energy += ", cost " + cost;
  }
  if (const std::string co2 = EnergyCo2(charge); co2 != "-") {
    energy += ", " + co2 + " CO2";
  }
  Line(out, "Energy", energy);
}

}  // namespace

std::optional<double> JsonNumber(const json& j, std::string_view key) {
  return Number(j, key);
}

std::string FixedDecimals(double v, int decimals) {
  return Fixed(v, decimals);
}

std::string EnergyKwh(const json& charge) {
  const auto kwh = Number(charge, "energy_kwh");
  return kwh ? Fixed(*kwh, 3) : "-";
}

std::string EnergyCost(const json& charge) {
  const auto cost = Number(charge, "cost");
  return cost ? Fixed(*cost, 2) + " " + JsonText(charge, "currency", "") : "-";
}

std::string EnergyCo2(const json& charge) {
  const auto co2 = Number(charge, "co2_kg");
  return co2 ? Fixed(*co2, 3) + " kg" : "-";
}

bool IsEndState(std::string_view state) {
  const Result<JobState> parsed = ParseJobState(state);
  return parsed.ok() && IsTerminal(*parsed);
}

std::string JsonText(const json& j, std::string_view key, std::string_view none) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty())) {
    return std::string(none);
  }
  return EscapeControl(it->is_string() ? it->get<std::string>() : it->dump());
}

std::string JsonJoined(const json& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : std::string(separator)) +
           EscapeControl(item.is_string() ? item.get<std::string>() : item.dump());
  }
  return out;
}

std::string Truncate(std::string text, std::size_t max) {
  if (text.size() <= max) {
    return text;
  }
  return TruncateUtf8(text, max - 3) + "...";
}

std::string GpuJobText(const json& gpu) {
  const json& holders = Array(gpu, "holders");
  if (holders.empty()) {
    return JsonText(gpu, "job");
  }
  double milli = 0;
  for (const json& holder : holders) {
    milli += Number(holder, "share_milli").value_or(kWholeGpuMilli);
  }
  if (holders.size() > 1) {
    return std::to_string(holders.size()) + " jobs (" + GpuAmount(milli) + ")";
  }
  const std::string job = JsonText(holders[0], "job");
  return milli < kWholeGpuMilli ? job + " (" + GpuAmount(milli) + ")" : job;
}

std::string GpuUserText(const json& gpu) {
  const json& holders = Array(gpu, "holders");
  if (holders.empty()) {
    return JsonText(gpu, "user");
  }
  std::vector<std::string> users;
  for (const json& holder : holders) {
    // A pod (Kubernetes mode) by its namespace and name: its user is not known.
    const std::string pod = holder.value("pod", std::string());
    const std::string user = pod.empty() ? JsonText(holder, "user")
                                         : holder.value("namespace", std::string()) + "/" + pod;
    if (std::find(users.begin(), users.end(), user) == users.end()) {
      users.push_back(user);
    }
  }
  std::string text;
  for (const std::string& user : users) {
    text += (text.empty() ? "" : ",") + user;
  }
  return text;
}

std::string GpuModeText(const json& gpu) {
  const std::string mode = JsonText(gpu, "sharing", "exclusive");
  if (mode == "mig") {  // its MIG devices, and a layout that waits for them to free
    const auto layout = [](const json& profiles) {
      const std::string text = JsonJoined(profiles, ",");
      return text.empty() ? std::string("none") : text;
    };
    json profiles = json::array();
    for (const json& device : Array(gpu, "mig_instances")) {
      profiles.push_back(JsonText(device, "profile"));
    }
    const bool waiting = gpu.contains("mig_layout_next") && gpu.at("mig_layout_next").is_array();
    return "mig " + layout(profiles) + (waiting ? "→" + layout(Array(gpu, "mig_layout_next")) : "");
  }
  const std::string next = JsonText(gpu, "sharing_next", "");
  return next.empty() ? mode : mode + "→" + next;
}

namespace {

// "now" or "in 25m": a time ahead of `now_ms`, for a person.
std::string InTime(std::int64_t at_ms, std::int64_t now_ms) {
  const std::int64_t secs = (at_ms - now_ms) / 1000;
  return secs <= 0 ? "now" : "in " + FormatDuration(std::chrono::seconds(secs));
}

}  // namespace

std::string EstimatedStartText(const json& job, std::int64_t now_ms) {
  const std::optional<double> latest = JsonNumber(job, "estimated_start_ms");
  if (!latest) {
    return "";
  }
  const auto latest_ms = static_cast<std::int64_t>(*latest);
  const auto found = job.find("start_estimate");
  const json none;
  const json& start = found != job.end() && found->is_object() ? *found : none;
  const std::string basis = JsonText(start, "basis", "");
  if (basis == "time_limits") {
    return InTime(latest_ms, now_ms) + " (limits)";
  }
  if (basis == "preemption") {
    return InTime(latest_ms, now_ms) + " (preempting)";
  }
  const std::optional<double> earliest = JsonNumber(start, "earliest_ms");
  if (basis != "predictions" || !earliest) {
    return InTime(latest_ms, now_ms);
  }
  const std::string upto = InTime(latest_ms, now_ms);
  const std::string from = InTime(static_cast<std::int64_t>(*earliest), now_ms);
  if (from == upto) {
    return upto + " (predicted)";
  }
  if (from == "now") {
    return "within " + upto.substr(3) + " (predicted)";
  }
  return from + "-" + upto.substr(3) + " (predicted)";
}

std::string JobGpusText(const json& job) {
  const std::string share = JsonText(job, "gpu_share", "");
  return share.empty() ? JsonText(job, "gpus") : share;
}

void PrintGpuTable(const json& answer, std::ostream& out) {
  const json& gpus = Array(answer, "gpus");
  bool any_condition = false;
  bool any_mode = false;  // a cluster without sharing keeps the table it had
  for (const auto& gpu : gpus) {
    any_condition = any_condition || !Array(gpu, "conditions").empty();
    any_mode = any_mode || GpuModeText(gpu) != "exclusive";
  }
  constexpr std::ptrdiff_t kModeColumn = 8;  // after HEALTH
  std::vector<std::string> header = {
      "NODE", "GPU", "MODEL", "UTIL", "MEM", "TEMP", "POWER", "HEALTH", "JOB", "USER"};
  if (any_mode) {
    header.insert(header.begin() + kModeColumn, "MODE");
  }
  if (any_condition) {
    header.emplace_back("CONDITIONS");  // last: long text does not push other columns
  }
  Table table(std::move(header));
  for (const auto& gpu : gpus) {
    std::vector<std::string> row = GpuRow(gpu);
    if (any_mode) {
      row.insert(row.begin() + kModeColumn, GpuModeText(gpu));
    }
    if (any_condition) {
      row.push_back(ConditionText(gpu));
    }
    table.AddRow(std::move(row));
  }
  table.Print(out);
  PrintAttentionLine(gpus, out);
}

void PrintGpuProcesses(const json& answer, std::ostream& out) {
  Table table(
      {"NODE", "GPU", "PID", "USER", "JOB", "MEMORY", "UTIL", "CPU", "HOST-MEM", "COMMAND"});
  std::size_t count = 0;
  for (const auto& gpu : Array(answer, "gpus")) {
    for (const auto& p : Array(Object(gpu, "sample"), "processes")) {
      const auto memory = Number(p, "used_memory_mib");
      table.AddRow({JsonText(gpu, "node"),
                    JsonText(gpu, "index"),
                    JsonText(p, "pid"),
                    ProcessUser(p),
                    ProcessJob(p),
                    memory ? Fixed(*memory, 0) + "MiB" : "-",
                    WithUnit(Number(p, "sm_util_pct"), "%"),
                    WithUnit(Number(p, "cpu_pct"), "%"),
                    WithUnit(Number(p, "host_memory_mib"), "MiB"),
                    JsonText(p, "command")});
      ++count;
    }
  }
  if (count == 0) {
    out << "No processes on any GPU.\n";
    return;
  }
  table.Print(out);
}

std::string ArrayTaskLabel(const json& job) {
  const std::string array = JsonText(job, "array_job", "");
  const std::string index = JsonText(job, "array_index", "");
  return array.empty() || index.empty() ? "" : array + "_" + index;
}

std::string DependencyText(const json& job) {
  std::string out;
  for (const auto& d : Array(job, "after")) {
    out += (out.empty() ? "" : ", ") + JsonText(d, "job") +
           (JsonText(d, "kind") == "ok" ? " (ok)" : "");
  }
  return out;
}

namespace {

// A fractional job's part of its GPU: "0.25 of GPU-x (20480 MiB limit)", what it holds once
// placed, else what it asks for ("0.25 of one shared GPU, asked"). Nothing for a whole-GPU job.
void PrintShare(const json& job, const std::string& gpus, std::ostream& out) {
  // A MIG job: its profile, then the device it holds ("3g.40gb: MIG-x of GPU-y").
  if (const std::string mig = JsonText(job, "mig", ""); !mig.empty()) {
    const std::string device = JsonText(job, "alloc_mig", "");
    Line(out, "MIG device", mig + (device.empty() ? ", asked" : ": " + device + " of " + gpus));
    return;
  }
  const std::string asked = JsonText(job, "gpu_share", "");
  const std::string asked_mem = JsonText(job, "gpu_mem_mib", "");
  if (asked.empty() && asked_mem.empty()) {
    return;
  }
  const bool placed = !gpus.empty();
  const std::string share = placed ? JsonText(job, "alloc_gpu_share", "1") : asked;
  const std::string mem = placed ? JsonText(job, "alloc_gpu_mem_mib", "") : asked_mem;
  Line(out,
       "GPU share",
       (share.empty() ? std::string("a part") : share) + " of " +
           (placed ? gpus : std::string("one shared GPU, asked")) +
           (mem.empty() ? "" : " (" + mem + " MiB limit)"));
}

// Host CPUs and memory on each node (issue #24): "8 CPUs, 64 GiB memory"; "none reserved" when
// the job asked for neither (and the cluster gave no per-GPU default).
void PrintHost(const json& job, std::ostream& out) {
  const std::string host = DescribeHostRequest(HostRequest(job));
  Line(out, "CPUs/memory", host.empty() ? std::string("none reserved (not limited)") : host);
}

// A job's time limit as typed: "1h", "90s"; "none".
std::string TimeLimitText(const json& job) {
  const std::optional<double> limit = JsonNumber(job, "time_limit_s");
  return limit ? FormatDuration(std::chrono::seconds(static_cast<std::int64_t>(*limit))) : "none";
}

// How long a job has run, "12m30s, 47m30s left of its 1h time limit" while it runs, "3m" once it
// ended; "" before it started. Counted at `now_ms` (reading time), never stored.
std::string ElapsedText(const json& job, std::int64_t now_ms) {
  const std::optional<double> start = JsonNumber(job, "start_time_ms");
  if (!start) {
    return "";
  }
  const std::optional<double> end = JsonNumber(job, "end_time_ms");
  const auto until = end ? static_cast<std::int64_t>(*end) : now_ms;
  const std::int64_t elapsed_s =
      std::max<std::int64_t>(until - static_cast<std::int64_t>(*start), 0) / 1000;
  std::string out = FormatDuration(std::chrono::seconds(elapsed_s));
  if (end || JsonText(job, "state") != "RUNNING") {
    return out;
  }
  const std::optional<double> limit = JsonNumber(job, "time_limit_s");
  if (!limit) {
    return out + ", no time limit";
  }
  const std::int64_t left_s =
      std::max<std::int64_t>(static_cast<std::int64_t>(*limit) - elapsed_s, 0);
  return out + ", " + FormatDuration(std::chrono::seconds(left_s)) + " left of its " +
         TimeLimitText(job) + " time limit";
}

// "ok", or how many GPUs are not: "1 failed, 2 degraded" (details: gpufleet gpus).
std::string GpuHealthSummary(const json& gpus) {
  int failed = 0;
  int degraded = 0;
  for (const auto& gpu : gpus) {
    const std::string health = gpu.value("health", "ok");
    failed += health == "failed" ? 1 : 0;
    degraded += health == "degraded" ? 1 : 0;
  }
  std::string out;
  if (failed > 0) {
    out = std::to_string(failed) + " failed";
  }
  if (degraded > 0) {
    out += (out.empty() ? "" : ", ") + std::to_string(degraded) + " degraded";
  }
  return out.empty() ? "ok" : out;
}

}  // namespace

JobRequest HostRequest(const json& job) {
  JobRequest request;
  request.cpus = static_cast<int>(job.value("cpus", std::int64_t{0}));
  request.memory_mib = job.value("mem_mib", std::int64_t{0});
  return request;
}

void PrintNodes(const json& answer, std::ostream& out) {
  const json& nodes = Array(answer, "nodes");
  // REASON (why a node is not up: its drain's reason, or what took it down) only when a node
  // has one, as the queue's ARRAY column.
  const bool reasons = std::any_of(nodes.begin(), nodes.end(), [](const json& node) {
    return !JsonText(node, "state_reason", "").empty();
  });
  // CPUS and MEMORY as sinfo's CPUS(A/T): what running jobs hold (their --cpus, --mem) of what
  // jobs may hold.
  std::vector<std::string> header = {
      "NODE", "STATE", "GPUS", "GPU HEALTH", "CPUS(A/T)", "MEMORY(A/T)", "BACKEND", "CONTAINMENT"};
  if (reasons) {
    header.emplace_back("REASON");
  }
  Table table(std::move(header));
  for (const json& node : nodes) {
    const json& gpus = Array(node, "gpus");
    std::vector<std::string> row = {
        JsonText(node, "name"),
        JsonText(node, "state"),
        std::to_string(gpus.size()),
        GpuHealthSummary(gpus),
        JsonText(node, "cpus_in_use", "0") + "/" + JsonText(node, "cpus"),
        FormatMib(node.value("memory_mib_in_use", std::int64_t{0})) + "/" +
            FormatMib(node.value("memory_mib", std::int64_t{0})),
        JsonText(node, "gpu_backend"),
        JsonText(node, "containment", "?")};
    if (reasons) {
      row.push_back(JsonText(node, "state_reason", ""));
    }
    table.AddRow(std::move(row));
  }
  table.Print(out);
}

void PrintJob(const json& job, std::int64_t now_ms, std::ostream& out) {
  const std::string gpus = JsonJoined(Array(job, "gpu_uuids"), ",");
  const std::string exit_code = JsonText(job, "exit_code", "");
  Line(out, "Job", JsonText(job, "id") + " (" + JsonText(job, "name") + ")");
  Line(out, "User", JsonText(job, "user") + "  team " + TeamLabel(JsonText(job, "team", "")));
  if (const auto pod = job.find("pod"); pod != job.end() && pod->is_object()) {
    // Kubernetes mode: the pod the job is, and which container holds which GPU.
    std::string containers;
    for (const json& c : pod->value("containers", json::array())) {
      containers += (containers.empty() ? "" : ", ") + c.value("name", std::string()) + " (" +
                    JsonJoined(c.value("gpus", json::array()), ",") + ")";
    }
    Line(out,
         "Pod",
         pod->value("namespace", std::string()) + "/" + pod->value("name", std::string()) +
             "  uid " + pod->value("uid", std::string()) + "  containers " + containers);
  }
  Line(
      out, "State", JsonText(job, "state") + (exit_code.empty() ? "" : "  exit code " + exit_code));
  Line(out, "Reason", JsonText(job, "reason"));
  if (const std::string code = JsonText(job, "reason_code", ""); !code.empty()) {
    Line(out, "Reason code", code + " (stage " + JsonText(job, "reason_stage") + ")");
  }
  Line(out,
       "Priority",
       JsonText(job, "priority") +
           (job.value("preemptible", false) ? "  preemptible (borrowed GPUs)" : "") +
           "  checkpoint signal " + JsonText(job, "checkpoint_signal", "TERM"));
  const std::string host = DescribeHostRequest(HostRequest(job));
  Line(out,
       "Request",
       JobGpusText(job) + " GPU(s), type " + JsonText(job, "gpu_type", "any") +
           (host.empty() ? "" : ", " + host) + ", time limit " + TimeLimitText(job));
  if (!job.value("requeue", true)) {  // the default (requeue) goes without saying
    Line(
        out, "Requeue", "no (--no-requeue): ends CANCELLED if preempted, FAILED if its node fails");
  }
  if (!job.value("idle_reap", true)) {  // likewise the defaults of the idle reaper
    Line(out, "Idle reaper", "exempt (--no-reap): left alone even when its GPUs stay idle");
  } else if (job.value("interactive", false)) {
    Line(out, "Idle reaper", "interactive (--interactive): its class's interactive threshold");
  }
  if (const std::string task = ArrayTaskLabel(job); !task.empty()) {
    const std::string limit = JsonText(job, "array_max_running", "");
    Line(out,
         "Array",
         "task " + task + " of array " + JsonText(job, "array_job") +
             (limit.empty() ? "" : ", at most " + limit + " running at once"));
  }
  if (const std::string gang = JsonText(job, "gang_job", ""); !gang.empty()) {
    const std::int64_t rank = job.value("gang_rank", std::int64_t{0});
    const std::int64_t nodes = job.value("nodes", std::int64_t{1});
    Line(out,
         "Gang",
         "node " + std::to_string(rank + 1) + " of " + std::to_string(nodes) + " of job " + gang +
             " (members: jobs " + gang + "-" + std::to_string(std::stoll(gang) + nodes - 1) + ")");
  }
  if (const std::string after = DependencyText(job); !after.empty()) {
    Line(out, "After", after);
  }
  Line(out, "Node", JsonText(job, "node") + (gpus.empty() ? "" : "  GPUs " + gpus));
  PrintShare(job, gpus, out);
  PrintHost(job, out);
  Line(out, "Command", JsonJoined(Array(job, "command"), " "));
  Line(out, "Workdir", JsonText(job, "workdir"));
  Line(out, "Submitted", JsonText(job, "submit_time"));
  Line(out, "Started", JsonText(job, "start_time"));
  if (const std::string elapsed = ElapsedText(job, now_ms); !elapsed.empty()) {
    Line(out, "Elapsed", elapsed);
  }
  if (const std::string saved = JsonText(job, "last_checkpoint", ""); !saved.empty()) {
    Line(out, "Checkpoint", saved + "  (a preemption loses only the work since)");
  }
  Line(out, "Ended", JsonText(job, "end_time"));
  if (job.value("budget_approved", false)) {
    Line(out, "Budget", "approved past its team's GPU-hour budget");
  }
  PrintUsage(job, out);
}

void PrintJobEvents(const json& body, std::ostream& out) {
  const json& events = Array(body, "events");
  if (events.empty()) {
    return;
  }
  const std::size_t skipped = events.size() > kShownEvents ? events.size() - kShownEvents : 0;
  out << "Events" << (skipped > 0 ? " (latest " + std::to_string(kShownEvents) + ")" : "") << '\n';
  for (std::size_t i = skipped; i < events.size(); ++i) {
    const json& e = events[i];
    out << "  " << JsonText(e, "time") << "  " << JsonText(e, "kind") << " ("
        << JsonText(e, "actor") << "): " << JsonText(e, "message") << '\n';
  }
}

}  // namespace gf
