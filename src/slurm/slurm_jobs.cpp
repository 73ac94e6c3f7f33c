#include "slurm/slurm_jobs.h"

#include <cctype>
#include <charconv>
#include <utility>

#include "slurm/slurm_time.h"

namespace gf {
namespace {

using Field = std::pair<std::string_view, std::string>;

// Whether `key` can be a field name of scontrol's one-line output: a letter, then letters,
// digits, '_', ':' and '/' ("AllocNode:Sid", "CPUs/Task", "JOB_GRES").
bool IsKey(std::string_view key) {
  if (key.empty() || std::isalpha(static_cast<unsigned char>(key.front())) == 0) {
    return false;
  }
  for (const char c : key) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != ':' && c != '/') {
      return false;
    }
  }
  return true;
}

// The fields of one line in order (Nodes= and GRES= repeat, one pair per node group). A
// blank-separated word that does not start a field belongs to the value before it: values such
// as a job name may hold blanks.
std::vector<Field> Fields(std::string_view line) {
  std::vector<Field> fields;
  std::size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && line[pos] == ' ') {
      ++pos;
    }
    if (pos >= line.size()) {
      break;
    }
    std::size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) {
      end = line.size();
    }
    const std::string_view word = line.substr(pos, end - pos);
    const std::size_t eq = word.find('=');
    if (eq != std::string_view::npos && IsKey(word.substr(0, eq))) {
      fields.emplace_back(word.substr(0, eq), std::string(word.substr(eq + 1)));
    } else if (!fields.empty()) {
      fields.back().second += ' ';
      fields.back().second += word;
    }
    pos = end;
  }
  return fields;
}

// "(null)", "None" and "N/A" are how scontrol writes an absent value.
std::string Present(std::string value) {
  if (value == "(null)" || value == "None" || value == "N/A") {
    return "";
  }
  return value;
}

// "name(uid)" → name, uid.
void ReadUser(std::string_view text, SlurmJob& job) {
  const std::size_t open = text.find('(');
  if (open == std::string_view::npos || text.back() != ')') {
    job.user = std::string(text);
    return;
  }
  job.user = std::string(text.substr(0, open));
  if (const auto uid = SlurmNumber(text.substr(open + 1, text.size() - open - 2));
      uid && *uid >= 0 && *uid <= 0xffffffffLL) {
    job.uid = static_cast<std::uint32_t>(*uid);
  }
}

// ExitCode=N:S → N, or 128 + S when a signal ended it (as a shell reports it).
std::optional<int> ExitCode(std::string_view text) {
  const std::size_t colon = text.find(':');
  const auto code = SlurmNumber(text.substr(0, colon));
  const auto signal = colon == std::string_view::npos ? std::optional<std::int64_t>(0)
                                                      : SlurmNumber(text.substr(colon + 1));
  if (!code || !signal) {
    return std::nullopt;
  }
  return static_cast<int>(*signal != 0 ? 128 + *signal : *code);
}

// "0-1,3" → 0 1 3.
std::vector<int> IndexList(std::string_view list) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    std::size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) {
      comma = list.size();
    }
    const std::string_view item = list.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    const auto lo = SlurmNumber(item.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : SlurmNumber(item.substr(dash + 1));
    if (lo && hi && *lo >= 0 && *hi >= *lo && *hi - *lo < 4096) {
      for (std::int64_t i = *lo; i <= *hi; ++i) {
        out.push_back(static_cast<int>(i));
      }
    }
    pos = comma + 1;
  }
  return out;
}

Result<SlurmJob> ParseLine(std::string_view line) {
  SlurmJob job;
  std::optional<std::int64_t> id;
  std::vector<std::string> group_nodes;  // the last Nodes= of the detail groups, for its GRES=
  for (auto& [key, value] : Fields(line)) {
    if (key == "JobId") {
      id = SlurmNumber(value);
    } else if (key == "ArrayJobId") {
      job.array_job_id = SlurmNumber(value);
    } else if (key == "ArrayTaskId") {
      job.array_task_id = SlurmNumber(value);  // a pending range ("3-9%2") is no one task
    } else if (key == "JobName") {
      job.name = std::move(value);
    } else if (key == "UserId") {
      ReadUser(value, job);
    } else if (key == "Account") {
      job.account = Present(std::move(value));
    } else if (key == "Partition") {
      job.partition = Present(std::move(value));
    } else if (key == "QOS") {
      job.qos = Present(std::move(value));
    } else if (key == "JobState") {
      job.state = std::move(value);
    } else if (key == "Reason") {
      job.reason = Present(std::move(value));
    } else if (key == "TimeLimit") {
      if (auto limit = ParseSlurmTime(value); limit.ok()) {
        job.time_limit = *limit;
      }
    } else if (key == "SubmitTime") {
      job.submit_time = ParseSlurmTimestamp(value);
    } else if (key == "StartTime") {
      job.start_time = ParseSlurmTimestamp(value);
    } else if (key == "EndTime") {
      job.end_time = ParseSlurmTimestamp(value);
    } else if (key == "ExitCode") {
      job.exit_code = ExitCode(value);
    } else if (key == "WorkDir") {
      job.work_dir = std::move(value);
    } else if (key == "Command") {
      job.command = Present(std::move(value));
    } else if (key == "Restarts") {
      job.restarts = static_cast<int>(SlurmNumber(value).value_or(0));
    } else if (key == "NodeList") {
      if (auto nodes = ExpandHostList(Present(std::move(value))); nodes.ok()) {
        job.nodes = std::move(*nodes);
      }
    } else if (key == "Nodes") {
      group_nodes.clear();
      if (auto nodes = ExpandHostList(value); nodes.ok()) {
        group_nodes = std::move(*nodes);
      }
    } else if (key == "GRES") {
      // The GPUs of the group just named: the same indices on each of its nodes.
      const std::vector<int> indices = GpuIndicesOfGres(value);
      if (!indices.empty()) {
        for (const std::string& node : group_nodes) {
          job.gpus.push_back(SlurmNodeGpus{.node = node, .gpu_indices = indices});
        }
      }
      group_nodes.clear();
    }
  }
  if (!id || *id <= 0) {
    const std::string_view head = line.substr(0, std::min<std::size_t>(line.size(), 60));
    return InvalidArgument("scontrol show job: a line without a job id: '" + std::string(head) +
                           "'");
  }
  job.id = *id;
  return job;
}

}  // namespace

std::optional<std::int64_t> SlurmNumber(std::string_view text) {
  std::int64_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return std::nullopt;
  }
  return n;
}

Result<std::vector<SlurmJob>> ParseShowJobs(std::string_view text) {
  std::vector<SlurmJob> jobs;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.starts_with("JobId=")) {
      continue;  // "No jobs in the system", a warning, a blank line
    }
    GF_ASSIGN_OR_RETURN(SlurmJob job, ParseLine(line));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::vector<std::string>> ExpandHostList(std::string_view list) {
  std::vector<std::string> out;
  const Error bad = InvalidArgument("'" + std::string(list) + "' is not a Slurm host list");
  std::size_t pos = 0;
  while (pos < list.size()) {
    // One item: a prefix, then an optional [ranges], then an optional suffix, up to a comma
    // outside brackets.
    const std::size_t open = list.find_first_of("[,", pos);
    if (open == std::string_view::npos || list[open] == ',') {
      const std::size_t end = open == std::string_view::npos ? list.size() : open;
      if (end > pos) {
        out.emplace_back(list.substr(pos, end - pos));
      }
      pos = end + 1;
      continue;
    }
    const std::size_t close = list.find(']', open);
    if (close == std::string_view::npos) {
      return bad;
    }
    const std::string_view prefix = list.substr(pos, open - pos);
    std::size_t after = list.find(',', close);
    if (after == std::string_view::npos) {
      after = list.size();
    }
    const std::string_view suffix = list.substr(close + 1, after - close - 1);
    if (suffix.find('[') != std::string_view::npos) {
      return bad;  // two bracket groups in one name: not a form Slurm prints for nodes
    }
    const std::string_view ranges = list.substr(open + 1, close - open - 1);
    std::size_t r = 0;
    while (r <= ranges.size()) {
      std::size_t comma = ranges.find(',', r);
      if (comma == std::string_view::npos) {
        comma = ranges.size();
      }
      const std::string_view item = ranges.substr(r, comma - r);
      const std::size_t dash = item.find('-');
      const std::string_view lo_text = item.substr(0, dash);
      const auto lo = SlurmNumber(lo_text);
      const auto hi = dash == std::string_view::npos ? lo : SlurmNumber(item.substr(dash + 1));
      if (!lo || !hi || *lo < 0 || *hi < *lo || *hi - *lo > 100000) {
        return bad;
      }
      for (std::int64_t n = *lo; n <= *hi; ++n) {
        std::string digits = std::to_string(n);
        if (digits.size() < lo_text.size()) {
          digits.insert(0, lo_text.size() - digits.size(), '0');  // gpu[01-03] keeps its width
        }
        out.push_back(std::string(prefix) + digits + std::string(suffix));
      }
      r = comma + 1;
    }
    pos = after + 1;
  }
  return out;
}

std::vector<int> GpuIndicesOfGres(std::string_view gres) {
  // Items are comma-separated, but an item's "(IDX:0,3)" holds commas too: split outside
  // parentheses.
  std::vector<int> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= gres.size(); ++i) {
    if (i < gres.size() && gres[i] == '(') {
      ++depth;
    } else if (i < gres.size() && gres[i] == ')') {
      --depth;
    } else if (i == gres.size() || (gres[i] == ',' && depth == 0)) {
      const std::string_view item = gres.substr(start, i - start);
      start = i + 1;
      const std::size_t idx = item.find("(IDX:");
      if (!item.starts_with("gpu") || (item.size() > 3 && item[3] != ':' && item[3] != '(') ||
          idx == std::string_view::npos) {
        continue;
      }
      const std::size_t close = item.find(')', idx);
      const std::vector<int> indices = IndexList(
          item.substr(idx + 5, close == std::string_view::npos ? close : close - idx - 5));
      out.insert(out.end(), indices.begin(), indices.end());
    }
  }
  return out;
}

std::optional<JobState> JobStateOfSlurm(std::string_view state) {
  struct Pair {
    std::string_view slurm;
    JobState state;
  };
  static constexpr Pair kStates[] = {
      {"RUNNING", JobState::kRunning},       {"COMPLETING", JobState::kRunning},
      {"SUSPENDED", JobState::kRunning},     {"STAGE_OUT", JobState::kRunning},
      {"PENDING", JobState::kPending},       {"REQUEUED", JobState::kPending},
      {"REQUEUE_HOLD", JobState::kPending},  {"REQUEUE_FED", JobState::kPending},
      {"RESV_DEL_HOLD", JobState::kPending}, {"CONFIGURING", JobState::kPending},
      {"COMPLETED", JobState::kCompleted},   {"FAILED", JobState::kFailed},
      {"OUT_OF_MEMORY", JobState::kFailed},  {"BOOT_FAIL", JobState::kFailed},
      {"DEADLINE", JobState::kFailed},       {"CANCELLED", JobState::kCancelled},
      {"REVOKED", JobState::kCancelled},     {"TIMEOUT", JobState::kTimeout},
      {"PREEMPTED", JobState::kPreempted},   {"NODE_FAIL", JobState::kNodeFail},
  };
  for (const Pair& p : kStates) {
    if (p.slurm == state) {
      return p.state;
    }
  }
  return std::nullopt;
}

}  // namespace gf
