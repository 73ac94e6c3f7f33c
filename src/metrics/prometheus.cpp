// /metrics in the Prometheus text format (prometheus.h): the format itself (escaping, family
// headers, samples; shared through prometheus_text.h), the gpufleet_* job, team, queue and
// cluster families, and the API server's. The GPU families are prometheus_gpu.cpp.
#include "metrics/prometheus.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "metrics/prometheus_text.h"

namespace gf::exposition {
namespace {

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kGauge:
      return "gauge";
    case Kind::kCounter:
      return "counter";
    case Kind::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// ---- Label values ----

// Length of the well-formed UTF-8 sequence starting at s[i] (1..4), or 0 if it is not one:
// truncated, a stray continuation byte, overlong, a surrogate or beyond U+10FFFF.
std::size_t Utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(s[k]));
  };
  const std::uint32_t lead = byte(i);
  std::size_t length = 0;
  std::uint32_t code_point = 0;
  std::uint32_t smallest = 0;  // below this the same code point had a shorter encoding
  if (lead < 0x80) {
    return 1;
  }
  if ((lead & 0xE0U) == 0xC0) {
    length = 2;
    code_point = lead & 0x1FU;
    smallest = 0x80;
  } else if ((lead & 0xF0U) == 0xE0) {
    length = 3;
    code_point = lead & 0x0FU;
    smallest = 0x800;
  } else if ((lead & 0xF8U) == 0xF0) {
    length = 4;
    code_point = lead & 0x07U;
    smallest = 0x10000;
  } else {
    return 0;
  }
  if (i + length > s.size()) {
    return 0;
  }
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0U) != 0x80) {
      return 0;
    }
    code_point = (code_point << 6U) | (byte(i + k) & 0x3FU);
  }
  const bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
  return code_point < smallest || code_point > 0x10FFFF || surrogate ? 0 : length;
}

void AppendEscaped(std::string& out, std::string_view value) {
  for (std::size_t i = 0; i < value.size();) {
    const char c = value[i];
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (const std::size_t length = Utf8SequenceLength(value, i); length > 0) {
      out.append(value.substr(i, length));
      i += length;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    }
  }
}

}  // namespace

// Appends `name="value"` to a label list (the text between the braces).
void AppendLabel(std::string& labels, std::string_view name, std::string_view value) {
  if (!labels.empty()) {
    labels += ',';
  }
  labels.append(name);
  labels += "=\"";
  AppendEscaped(labels, value);
  labels += '"';
}

// ClusterStats and the assignment use "" for the user's default team.
std::string_view TeamName(std::string_view team) {
  return team.empty() ? "default" : team;
}

namespace {

// ---- Lines ----

void Append(Buffer& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

}  // namespace

void WriteFamily(Buffer& out, const Family& family) {
  fmt::format_to(std::back_inserter(out),
                 "# HELP {0} {1}\n# TYPE {0} {2}\n",
                 family.name,
                 family.help,
                 KindName(family.kind));
}

// Numbers as the format spells them: shortest round-trip decimal, NaN, +Inf, -Inf.
void WriteNumber(Buffer& out, double value) {
  if (std::isnan(value)) {
    Append(out, "NaN");
  } else if (std::isinf(value)) {
    Append(out, value > 0 ? "+Inf" : "-Inf");
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

// `name{labels,extra} value`; `labels` and `extra` are label lists, either may be empty.
void WriteSample(Buffer& out,
                 std::string_view name,
                 std::string_view labels,
                 double value,
                 std::string_view extra) {
  Append(out, name);
  if (!labels.empty() || !extra.empty()) {
    out.push_back('{');
    Append(out, labels);
    if (!labels.empty() && !extra.empty()) {
      out.push_back(',');
    }
    Append(out, extra);
    out.push_back('}');
  }
  out.push_back(' ');
  WriteNumber(out, value);
  out.push_back('\n');
}

namespace {

// ---- Job, team, queue and cluster families ----

const std::array<Column<JobLive>, 7> kJobColumns = {{
    {{"gpufleet_job_gpus", Kind::kGauge, "GPUs the running job holds."},
     [](const JobLive& j) {
       return std::optional<double>(j.gpus);
     }},
    {{"gpufleet_job_gpu_utilization_percent",
      Kind::kGauge,
      "Mean GPU utilization over the job's GPUs, latest samples (in %)."},
     [](const JobLive& j) {
       return std::optional<double>(j.util_now_pct);
     }},
    {{"gpufleet_job_gpu_utilization_mean_percent",
      Kind::kGauge,
      "Mean GPU utilization of the job's GPUs since it started (in %)."},
     [](const JobLive& j) {
       return std::optional<double>(j.usage.mean_util_pct);
     }},
    {{"gpufleet_job_gpu_utilization_peak_percent",
      Kind::kGauge,
      "Highest GPU utilization one of the job's GPUs reached (in %)."},
     [](const JobLive& j) {
       return std::optional<double>(j.usage.peak_util_pct);
     }},
    {{"gpufleet_job_gpu_memory_used_bytes",
      Kind::kGauge,
      "GPU memory the job uses now, summed over its GPUs."},
     [](const JobLive& j) {
       return std::optional<double>(static_cast<double>(j.memory_now_mib) * kBytesPerMib);
     }},
    {{"gpufleet_job_gpu_memory_peak_bytes",
      Kind::kGauge,
      "Highest GPU memory the job used on one GPU."},
     [](const JobLive& j) {
       return std::optional<double>(static_cast<double>(j.usage.peak_memory_mib) * kBytesPerMib);
     }},
    {{"gpufleet_job_gpu_energy_joules_total",
      Kind::kCounter,
      "Energy the job's GPUs consumed since it started, in joules."},
     [](const JobLive& j) {
       return std::optional<double>(static_cast<double>(j.usage.energy_mj) / kMilliPerUnit);
     }},
}};

const std::array<Column<TeamStats>, 4> kTeamColumns = {{
    {{"gpufleet_team_allocated_gpus", Kind::kGauge, "GPUs held by the team's jobs now."},
     [](const TeamStats& t) {
       return std::optional<double>(t.allocated_gpus);
     }},
    {{"gpufleet_team_running_jobs", Kind::kGauge, "The team's running jobs."},
     [](const TeamStats& t) {
       return std::optional<double>(t.running_jobs);
     }},
    {{"gpufleet_team_pending_jobs", Kind::kGauge, "The team's pending jobs."},
     [](const TeamStats& t) {
       return std::optional<double>(t.pending_jobs);
     }},
    {{"gpufleet_team_gpu_seconds_total",
      Kind::kCounter,
      "GPU-seconds allocated to the team's jobs, ended and running."},
     [](const TeamStats& t) {
       return std::optional<double>(t.gpu_seconds_total);
     }},
}};

const std::array<Column<QueueStats>, 2> kQueueColumns = {{
    {{"gpufleet_queue_pending_jobs", Kind::kGauge, "Pending jobs in the priority class."},
     [](const QueueStats& q) {
       return std::optional<double>(q.pending);
     }},
    {{"gpufleet_queue_oldest_wait_seconds",
      Kind::kGauge,
      "How long the oldest pending job of the priority class has waited (0 when none)."},
     [](const QueueStats& q) {
       return std::optional<double>(q.oldest_wait_seconds);
     }},
}};

const std::array<Column<PassStats>, 2> kPassColumns = {{
    {{"gpufleet_scheduler_passes_total",
      Kind::kCounter,
      "Scheduling passes since the controller started, by kind (incremental: one per arrival "
      "or end)."},
     [](const PassStats& p) {
       return std::optional<double>(static_cast<double>(p.count));
     }},
    {{"gpufleet_scheduler_pass_seconds_total",
      Kind::kCounter,
      "Time spent in those scheduling passes, by kind."},
     [](const PassStats& p) {
       return std::optional<double>(p.seconds);
     }},
}};

using StateCount = std::pair<std::string, int>;
const std::array<Column<StateCount>, 1> kStateColumns = {{
    {{"gpufleet_jobs", Kind::kGauge, "Jobs the controller holds, by state."},
     [](const StateCount& s) {
       return std::optional<double>(s.second);
     }},
}};

const std::array<Column<ClusterStats>, 6> kClusterColumns = {{
    {{"gpufleet_nodes", Kind::kGauge, "Nodes known to the controller."},
     [](const ClusterStats& c) {
       return std::optional<double>(c.nodes);
     }},
    {{"gpufleet_gpus", Kind::kGauge, "GPUs on those nodes."},
     [](const ClusterStats& c) {
       return std::optional<double>(c.gpus);
     }},
    {{"gpufleet_gpus_allocated", Kind::kGauge, "GPUs held by jobs now."},
     [](const ClusterStats& c) {
       return std::optional<double>(c.gpus_allocated);
     }},
    {{"gpufleet_store_commits_total",
      Kind::kCounter,
      "Durable commits of the controller's turns (group commit: one per turn that changed "
      "anything)."},
     [](const ClusterStats& c) {
       return std::optional<double>(static_cast<double>(c.commits));
     }},
    {{"gpufleet_store_commit_seconds_total",
      Kind::kCounter,
      "Time spent in those commits: the store's writes and their flush to disk."},
     [](const ClusterStats& c) {
       return std::optional<double>(c.commit_seconds);
     }},
    {{"gpufleet_store_committed_requests_total",
      Kind::kCounter,
      "Requests answered after those commits; per commit, how many callers shared one."},
     [](const ClusterStats& c) {
       return std::optional<double>(static_cast<double>(c.committed_requests));
     }},
}};

template <typename T>
std::vector<const T*> RowsOf(const std::vector<T>& items) {
  std::vector<const T*> rows;
  rows.reserve(items.size());
  for (const T& item : items) {
    rows.push_back(&item);
  }
  return rows;
}

// One label per row: `name` = label_of(row).
template <typename T, typename LabelOf>
std::vector<std::string> LabelRows(const std::vector<T>& items,
                                   std::string_view name,
                                   LabelOf label_of) {
  std::vector<std::string> labels(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    AppendLabel(labels[i], name, label_of(items[i]));
  }
  return labels;
}

void WriteJobFamilies(Buffer& out, const std::vector<JobLive>& jobs) {
  std::vector<std::string> labels(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    AppendLabel(labels[i], "job", fmt::format("{}", jobs[i].job.value()));
    AppendLabel(labels[i], "user", jobs[i].user);
    AppendLabel(labels[i], "team", TeamName(jobs[i].team));
  }
  WriteColumns(out, kJobColumns, RowsOf(jobs), labels);
}

std::string NumberText(double value) {
  Buffer text;
  WriteNumber(text, value);
  return fmt::to_string(text);
}

// The bucket counts arrive cumulative (ClusterStats' contract), as the format wants them.
void WriteWaitHistogram(Buffer& out, const ClusterStats& stats) {
  constexpr std::string_view kName = "gpufleet_queue_wait_seconds";
  WriteFamily(out,
              {kName,
               Kind::kHistogram,
               "Time from submit to start of the jobs started since the controller "
               "started."});
  GF_CHECK(stats.wait_bucket_bounds.size() == stats.wait_bucket_counts.size());
  const std::string bucket = std::string(kName) + "_bucket";
  std::string le;
  for (std::size_t i = 0; i < stats.wait_bucket_bounds.size(); ++i) {
    le.clear();
    AppendLabel(le, "le", NumberText(stats.wait_bucket_bounds[i]));
    WriteSample(out, bucket, le, static_cast<double>(stats.wait_bucket_counts[i]));
  }
  WriteSample(out, bucket, R"(le="+Inf")", static_cast<double>(stats.wait_count));
  WriteSample(out, std::string(kName) + "_sum", {}, stats.wait_sum_seconds);
  WriteSample(out, std::string(kName) + "_count", {}, static_cast<double>(stats.wait_count));
}

// Deliveries by channel and outcome (ClusterStats::notifications); absent without a notifier.
void WriteNotifications(Buffer& out, const std::vector<NotificationCount>& counts) {
  if (counts.empty()) {
    return;
  }
  constexpr std::string_view kName = "gpufleet_notifications_total";
  WriteFamily(out,
              {kName,
               Kind::kCounter,
               "Notifications delivered since the server started, by channel (webhook, "
               "email) and outcome (sent, failed, dropped)."});
  std::string labels;
  for (const NotificationCount& c : counts) {
    labels.clear();
    AppendLabel(labels, "channel", c.channel);
    AppendLabel(labels, "outcome", c.outcome);
    WriteSample(out, kName, labels, static_cast<double>(c.count));
  }
}

void WriteClusterFamilies(Buffer& out, const ClusterStats& stats) {
  WriteColumns(out,
               kStateColumns,
               RowsOf(stats.jobs_by_state),
               LabelRows(stats.jobs_by_state, "state", [](const StateCount& s) {
                 return std::string_view{s.first};
               }));
  WriteColumns(out,
               kQueueColumns,
               RowsOf(stats.queue),
               LabelRows(stats.queue, "priority", [](const QueueStats& q) {
                 return std::string_view{q.priority};
               }));
  WriteWaitHistogram(out, stats);
  WriteColumns(
      out,
      kPassColumns,
      RowsOf(stats.passes),
      LabelRows(stats.passes, "kind", [](const PassStats& p) { return std::string_view{p.kind}; }));
  WriteColumns(out,
               kTeamColumns,
               RowsOf(stats.teams),
               LabelRows(stats.teams, "team", [](const TeamStats& t) { return TeamName(t.team); }));
  WriteColumns(
      out, kClusterColumns, std::vector<const ClusterStats*>{&stats}, std::vector<std::string>(1));
  WriteNotifications(out, stats.notifications);
}

}  // namespace
}  // namespace gf::exposition

namespace gf {

using exposition::AppendEscaped;
using exposition::AppendLabel;
using exposition::Buffer;
using exposition::Kind;
using exposition::WriteClusterFamilies;
using exposition::WriteFamily;
using exposition::WriteGpuFamilies;
using exposition::WriteJobFamilies;
using exposition::WriteSample;

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  AppendEscaped(out, value);
  return out;
}

std::string RenderApiServerMetrics(const ApiServerCounts& counts) {
  Buffer out;
  constexpr std::string_view kRefusals = "gpufleet_api_refusals_total";
  WriteFamily(out,
              {kRefusals,
               Kind::kCounter,
               "Connections, watches and requests the API server refused since it "
               "started, by the limit that refused them ([api] settings)."});
  const std::array<std::pair<std::string_view, std::int64_t>, 5> refusals = {{
      {"max_connections", counts.connections_refused},
      {"connections_per_client", counts.client_connections_refused},
      {"max_watches", counts.watches_refused},
      {"watches_per_client", counts.client_watches_refused},
      {"rate_limit", counts.requests_limited},
  }};
  std::string labels;
  for (const auto& [limit, count] : refusals) {
    labels.clear();
    AppendLabel(labels, "limit", limit);
    WriteSample(out, kRefusals, labels, static_cast<double>(count));
  }
  constexpr std::string_view kAcceptErrors = "gpufleet_api_accept_errors_total";
  WriteFamily(out,
              {kAcceptErrors,
               Kind::kCounter,
               "Failed accepts of API connections since the server started (e.g. no file "
               "descriptor left); each pauses accepting, 100 ms doubling to 1 s."});
  WriteSample(out, kAcceptErrors, {}, static_cast<double>(counts.accept_errors));
  constexpr std::string_view kOpen = "gpufleet_api_open";
  WriteFamily(out,
              {kOpen,
               Kind::kGauge,
               "Open API connections and watches (agent command streams included), by "
               "listener."});
  const std::array<std::tuple<std::string_view, std::string_view, int>, 4> open = {{
      {"connections", "socket", counts.socket_connections},
      {"connections", "tcp", counts.tcp_connections},
      {"watches", "socket", counts.socket_watches},
      {"watches", "tcp", counts.tcp_watches},
  }};
  for (const auto& [resource, listener, count] : open) {
    labels.clear();
    AppendLabel(labels, "resource", resource);
    AppendLabel(labels, "listener", listener);
    WriteSample(out, kOpen, labels, static_cast<double>(count));
  }
  return fmt::to_string(out);
}

std::string RenderPrometheus(const TelemetrySnapshot& telemetry, const ClusterStats& stats) {
  Buffer out;
  WriteGpuFamilies(out, telemetry);
  WriteJobFamilies(out, telemetry.jobs);
  WriteClusterFamilies(out, stats);
  return fmt::to_string(out);
}

}  // namespace gf
