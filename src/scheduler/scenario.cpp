#include "scheduler/scenario.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>

#include "scheduler/scheduler.h"

namespace gf {
namespace {

// ---------------------------------------------------------------- parsing

struct Token {
  std::string text;
  bool quoted = false;
};

// Splits a line into words and "quoted strings", dropping a '#' comment.
Result<std::vector<Token>> Tokenize(std::string_view line) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#') {
      break;
    } else if (c == '"') {
      const std::size_t end = line.find('"', i + 1);
      if (end == std::string_view::npos) {
        return InvalidArgument("unterminated quote");
      }
      tokens.push_back({std::string(line.substr(i + 1, end - i - 1)), true});
      i = end + 1;
    } else {
      std::size_t end = i;
      while (end < line.size() && line[end] != ' ' && line[end] != '\t' && line[end] != '\r' &&
             line[end] != '#' && line[end] != '"') {
        ++end;
      }
      tokens.push_back({std::string(line.substr(i, end - i)), false});
      i = end;
    }
  }
  return tokens;
}

Result<std::int64_t> ParseInt(std::string_view s, std::string_view what) {
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    return InvalidArgument(std::string(what) + " '" + std::string(s) + "' is not an integer");
  }
  return value;
}

Result<int> ParseSmallInt(std::string_view s, std::string_view what) {
  GF_ASSIGN_OR_RETURN(const std::int64_t value, ParseInt(s, what));
  if (value < -1'000'000 || value > 1'000'000) {
    return InvalidArgument(std::string(what) + " " + std::string(s) + " is out of range");
  }
  return static_cast<int>(value);
}

// "0s", "90s", "1h30m", "250ms": integers with units, added up.
Result<Millis> ParseTime(std::string_view s) {
  const Error bad = InvalidArgument("time '" + std::string(s) +
                                    "' is not <integer><unit>..., units ms, s, m, h, d; e.g. 90s");
  if (s.empty()) {
    return bad;
  }
  std::int64_t total_ms = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t digits = i;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') {
      ++digits;
    }
    std::size_t unit_end = digits;
    while (unit_end < s.size() && (s[unit_end] < '0' || s[unit_end] > '9')) {
      ++unit_end;
    }
    if (digits == i || digits - i > 9) {
      return bad;
    }
    const std::int64_t n = ParseInt(s.substr(i, digits - i), "time").value_or(0);
    const std::string_view unit = s.substr(digits, unit_end - digits);
    static const std::map<std::string_view, std::int64_t> unit_ms = {
        {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
    const auto it = unit_ms.find(unit);
    if (it == unit_ms.end()) {
      return bad;
    }
    total_ms += n * it->second;
    i = unit_end;
  }
  return Millis(total_ms);
}

Result<std::vector<int>> ParseIndexList(std::string_view s) {
  std::vector<int> indexes;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t comma = s.find(',', start);
    if (comma == std::string_view::npos) {
      comma = s.size();
    }
    GF_ASSIGN_OR_RETURN(const int index, ParseSmallInt(s.substr(start, comma - start), "index"));
    indexes.push_back(index);
    start = comma + 1;
  }
  return indexes;
}

Result<std::vector<Gpu>> ParseGpuSpec(std::string_view spec, const std::string& node) {
  std::vector<Gpu> gpus;
  if (spec == "0") {
    return gpus;
  }
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t plus = spec.find('+', start);
    if (plus == std::string_view::npos) {
      plus = spec.size();
    }
    const std::string_view part = spec.substr(start, plus - start);
    const std::size_t x = part.find('x');
    if (x == std::string_view::npos || x + 1 >= part.size()) {
      return InvalidArgument("GPU spec '" + std::string(part) + "' is not <count>x<model>");
    }
    GF_ASSIGN_OR_RETURN(const int count, ParseSmallInt(part.substr(0, x), "GPU count"));
    for (int i = 0; i < count; ++i) {
      const int index = static_cast<int>(gpus.size());
      gpus.push_back(Gpu{.index = index,
                         .uuid = GpuUuid("GPU-" + node + "-" + std::to_string(index)),
                         .model = std::string(part.substr(x + 1)),
                         .memory_mib = 0,
                         .health = GpuHealth::kOk,
                         .health_cause = ""});
    }
    start = plus + 1;
  }
  return gpus;
}

// Splits "key=value"; the key is empty when there is no '='.
std::pair<std::string, std::string> SplitKeyValue(const std::string& word) {
  const std::size_t eq = word.find('=');
  if (eq == std::string::npos) {
    return {"", word};
  }
  return {word.substr(0, eq), word.substr(eq + 1)};
}

Result<double> ParseDouble(std::string_view s, std::string_view what) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || value < 0) {
    return InvalidArgument(std::string(what) + " '" + std::string(s) +
                           "' is not a number of 0 or more");
  }
  return value;
}

Result<std::chrono::seconds> ParseSeconds(std::string_view s) {
  GF_ASSIGN_OR_RETURN(const Millis ms, ParseTime(s));
  return std::chrono::duration_cast<std::chrono::seconds>(ms);
}

// "a,b,c" → {a, b, c}; `none_word` ("none", "any") → {}.
std::vector<std::string> ParseNameList(const std::string& s, std::string_view none_word) {
  std::vector<std::string> names;
  if (s == none_word) {
    return names;
  }
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t comma = s.find(',', start);
    if (comma == std::string::npos) {
      comma = s.size();
    }
    names.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

Result<bool> ParseOnOff(const std::string& word, std::string_view verb) {
  if (word == "on" || word == "off") {
    return word == "on";
  }
  return InvalidArgument(std::string(verb) + " takes on or off, not '" + word + "'");
}

// "rack=a" of label=rack=a and constraint=rack=a.
Result<std::pair<std::string, std::string>> ParseLabelOption(const std::string& value) {
  const auto [key, label_value] = SplitKeyValue(value);
  if (key.empty() || label_value.empty()) {
    return InvalidArgument("label '" + value + "' is not <key>=<value>");
  }
  return std::make_pair(key, label_value);
}

// nvlink=0,1,2,3/4,5,6,7: each '/'-separated group is all-to-all NVLink.
Status ParseNvlinkGroups(const std::string& value, std::vector<Gpu>& gpus) {
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t slash = value.find('/', start);
    slash = slash == std::string::npos ? value.size() : slash;
    std::vector<int> members;
    for (const std::string& word : ParseNameList(value.substr(start, slash - start), "")) {
      GF_ASSIGN_OR_RETURN(const int index, ParseSmallInt(word, "nvlink GPU index"));
      if (index >= static_cast<int>(gpus.size())) {
        return InvalidArgument("nvlink: the node has no GPU " + word);
      }
      members.push_back(index);
    }
    for (const int a : members) {
      for (const int b : members) {
        if (a != b) {
          gpus[static_cast<std::size_t>(a)].nvlink_peers.push_back(b);
        }
      }
    }
    start = slash + 1;
  }
  for (Gpu& gpu : gpus) {
    std::sort(gpu.nvlink_peers.begin(), gpu.nvlink_peers.end());
  }
  return OkStatus();
}

// numa=0,0,1,1 and switch=0,0,2,2: one value per GPU, in index order.
Status ParsePerGpu(const std::string& value,
                   std::string_view what,
                   std::vector<Gpu>& gpus,
                   int Gpu::*field) {
  const std::vector<std::string> words = ParseNameList(value, "");
  if (words.size() != gpus.size()) {
    return InvalidArgument(std::string(what) + ": give one value per GPU (" +
                           std::to_string(gpus.size()) + ")");
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    GF_ASSIGN_OR_RETURN(gpus[i].*field, ParseSmallInt(words[i], what));
  }
  return OkStatus();
}

Status ParseNodeOption(const Token& token, Node& node) {
  const auto [key, value] = SplitKeyValue(token.text);
  if (key == "state") {
    GF_ASSIGN_OR_RETURN(node.state, ParseNodeState(value));
  } else if (key == "label") {
    GF_ASSIGN_OR_RETURN(const auto label, ParseLabelOption(value));
    node.labels[label.first] = label.second;
  } else if (key == "nvlink") {
    GF_TRY(ParseNvlinkGroups(value, node.gpus));
  } else if (key == "numa") {
    GF_TRY(ParsePerGpu(value, "numa", node.gpus, &Gpu::numa_node));
  } else if (key == "switch") {
    GF_TRY(ParsePerGpu(value, "switch", node.gpus, &Gpu::pcie_switch));
  } else if (key == "mem") {
    GF_ASSIGN_OR_RETURN(const std::int64_t mib, ParseInt(value, "mem"));
    for (Gpu& gpu : node.gpus) {
      gpu.memory_mib = mib;
    }
  } else if (key == "cpus") {
    GF_ASSIGN_OR_RETURN(node.cpus, ParseSmallInt(value, "cpus"));
  } else if (key == "host_mem") {
    GF_ASSIGN_OR_RETURN(node.memory_mib, ParseMemoryMib(value, "host_mem"));
  } else if (key == "shared" || key == "mps") {
    GF_ASSIGN_OR_RETURN(const std::vector<int> indexes, ParseIndexList(value));
    for (const int index : indexes) {
      if (index < 0 || static_cast<std::size_t>(index) >= node.gpus.size()) {
        return InvalidArgument(key + ": no GPU " + std::to_string(index));
      }
      node.gpus[static_cast<std::size_t>(index)].sharing =
          key == "mps" ? SharingMode::kMps : SharingMode::kShared;
    }
  } else {
    return InvalidArgument("unknown node option '" + token.text +
                           "'; use state=, label=<k>=<v>, nvlink=, numa=, switch=, mem=, "
                           "cpus=, host_mem=, shared= or mps=");
  }
  return OkStatus();
}

Result<ScenarioAction> ParseNode(const std::vector<Token>& t) {
  if (t.size() < 3) {
    return InvalidArgument(
        "use: node <name> <count>x<model>[+...] [state=<state>] [label=<k>=<v>]... "
        "[nvlink=<i>,<i>/<i>,<i>] [numa=<n>,...] [switch=<n>,...]");
  }
  Node node;
  node.name = NodeId(t[1].text);
  GF_ASSIGN_OR_RETURN(node.gpus, ParseGpuSpec(t[2].text, t[1].text));
  for (std::size_t i = 3; i < t.size(); ++i) {
    GF_TRY(ParseNodeOption(t[i], node));
  }
  return ScenarioAction(AddNodeStep{std::move(node)});
}

Result<ScenarioAction> ParseJob(const std::vector<Token>& t) {
  if (t.size() < 2) {
    return InvalidArgument("use: job <id> [gpus=<n>] [type=<model>] [priority=<p>] [submit=<t>]");
  }
  SubmitStep step;
  GF_ASSIGN_OR_RETURN(const std::int64_t id, ParseInt(t[1].text, "job id"));
  step.job.id = JobId(id);
  for (std::size_t i = 2; i < t.size(); ++i) {
    const auto [key, value] = SplitKeyValue(t[i].text);
    if (key == "gpus") {
      GF_ASSIGN_OR_RETURN(step.job.request.gpus, ParseSmallInt(value, "gpus"));
    } else if (key == "type") {
      step.job.request.gpu_type = value;
    } else if (key == "priority") {
      GF_ASSIGN_OR_RETURN(step.job.priority, ParsePriorityClass(value));
    } else if (key == "submit") {
      GF_ASSIGN_OR_RETURN(step.submit, ParseTime(value));
    } else if (key == "user") {
      step.job.user = value;
    } else if (key == "team") {
      step.job.team = value;
    } else if (key == "limit") {
      GF_ASSIGN_OR_RETURN(step.job.time_limit, ParseSeconds(value));
    } else if (key.empty() && value == "approved") {
      step.job.budget_approved = true;
    } else if (key == "constraint") {
      GF_ASSIGN_OR_RETURN(const auto label, ParseLabelOption(value));
      step.job.request.node_labels[label.first] = label.second;
    } else if (key == "nodes") {
      GF_ASSIGN_OR_RETURN(step.job.request.nodes, ParseSmallInt(value, "nodes"));
    } else if (key == "expected") {
      GF_ASSIGN_OR_RETURN(step.job.expected_duration, ParseTime(value));
    } else if (key == "attained") {
      GF_ASSIGN_OR_RETURN(step.job.attained_gpu_seconds, ParseDouble(value, "attained"));
    } else if (key == "share") {
      GF_ASSIGN_OR_RETURN(step.job.request.gpu_milli, ParseGpuShare(value, "share"));
    } else if (key == "mem") {
      GF_ASSIGN_OR_RETURN(step.job.request.gpu_memory_mib, ParseMemoryMib(value, "mem"));
    } else if (key == "cpus") {
      GF_ASSIGN_OR_RETURN(step.job.request.cpus, ParseSmallInt(value, "cpus"));
    } else if (key == "host_mem") {
      GF_ASSIGN_OR_RETURN(step.job.request.memory_mib, ParseMemoryMib(value, "host_mem"));
    } else {
      return InvalidArgument("unknown job option '" + t[i].text +
                             "'; use gpus=, type=, priority=, submit=, user=, team=, limit=, "
                             "nodes=, expected=, attained=, share=, mem=, cpus=, host_mem=, "
                             "constraint=<k>=<v> or approved");
    }
  }
  return ScenarioAction(std::move(step));
}

Result<ScenarioAction> ParseRun(const std::vector<Token>& t) {
  const std::string usage =
      "use: run <id> on <node> gpus <i>,... [priority=<p>] [team=<t>] [user=<u>] [start=<t>] "
      "[limit=<d>] [checkpoint=<t>] [borrowed] [stopping] [expected=<d>] [attained=<gpu-s>] "
      "[share=<0.25> mem=<MiB>] [cpus=<n>] [host_mem=<size>]";
  if (t.size() < 6 || t[2].text != "on" || t[4].text != "gpus") {
    return InvalidArgument(usage);
  }
  RunStep step;
  GF_ASSIGN_OR_RETURN(const std::int64_t id, ParseInt(t[1].text, "job id"));
  step.job.id = JobId(id);
  step.job.allocation.node = NodeId(t[3].text);
  GF_ASSIGN_OR_RETURN(step.indexes, ParseIndexList(t[5].text));
  for (std::size_t i = 6; i < t.size(); ++i) {
    const auto [key, value] = SplitKeyValue(t[i].text);
    if (key == "priority") {
      GF_ASSIGN_OR_RETURN(step.job.priority, ParsePriorityClass(value));
    } else if (key == "team") {
      step.job.team = value;
    } else if (key == "user") {
      step.job.user = value;
    } else if (key == "start") {
      GF_ASSIGN_OR_RETURN(step.start, ParseTime(value));
    } else if (key == "limit") {
      GF_ASSIGN_OR_RETURN(step.job.time_limit, ParseSeconds(value));
    } else if (key == "checkpoint") {
      GF_ASSIGN_OR_RETURN(step.checkpoint, ParseTime(value));
    } else if (key.empty() && value == "borrowed") {
      step.job.preemptible = true;
    } else if (key.empty() && value == "stopping") {
      step.job.stopping = true;
    } else if (key == "expected") {
      GF_ASSIGN_OR_RETURN(step.job.expected_duration, ParseTime(value));
    } else if (key == "attained") {
      GF_ASSIGN_OR_RETURN(step.job.attained_gpu_seconds, ParseDouble(value, "attained"));
    } else if (key == "share") {
      GF_ASSIGN_OR_RETURN(step.job.allocation.gpu_milli, ParseGpuShare(value, "share"));
    } else if (key == "mem") {
      GF_ASSIGN_OR_RETURN(step.job.allocation.gpu_memory_mib, ParseInt(value, "mem"));
    } else if (key == "cpus") {
      GF_ASSIGN_OR_RETURN(step.job.allocation.cpus, ParseSmallInt(value, "cpus"));
    } else if (key == "host_mem") {
      GF_ASSIGN_OR_RETURN(step.job.allocation.memory_mib, ParseMemoryMib(value, "host_mem"));
    } else {
      return InvalidArgument("unknown run option '" + t[i].text + "'; " + usage);
    }
  }
  return ScenarioAction(std::move(step));
}

Result<ScenarioAction> ParseClass(const std::vector<Token>& t) {
  if (t.size() < 2) {
    return InvalidArgument(
        "use: class <name> [rank=<n>] [preempts=...] [users=...] [max_gpus_per_user=<n>] "
        "[default_limit=<d>] [max_limit=<d>], or class <name> remove");
  }
  ClassStep step;
  step.name = t[1].text;
  if (t.size() == 3 && t[2].text == "remove") {
    step.remove = true;
    return ScenarioAction(std::move(step));
  }
  for (std::size_t i = 2; i < t.size(); ++i) {
    const auto [key, value] = SplitKeyValue(t[i].text);
    if (key == "rank") {
      GF_ASSIGN_OR_RETURN(const std::int64_t rank, ParseInt(value, "rank"));
      step.rank = static_cast<int>(rank);
    } else if (key == "preempts") {
      step.preempts = ParseNameList(value, "none");
    } else if (key == "users") {
      step.users = ParseNameList(value, "any");
    } else if (key == "max_gpus_per_user") {
      GF_ASSIGN_OR_RETURN(step.max_gpus_per_user, ParseSmallInt(value, "max_gpus_per_user"));
    } else if (key == "default_limit") {
      GF_ASSIGN_OR_RETURN(step.default_limit, ParseSeconds(value));
    } else if (key == "max_limit") {
      GF_ASSIGN_OR_RETURN(step.max_limit, ParseSeconds(value));
    } else {
      return InvalidArgument("unknown class option '" + t[i].text +
                             "'; use rank=, preempts=, users=, max_gpus_per_user=, "
                             "default_limit=, max_limit= or remove");
    }
  }
  return ScenarioAction(std::move(step));
}

Result<ScenarioAction> ParseTeam(const std::vector<Token>& t) {
  if (t.size() < 2) {
    return InvalidArgument(
        "use: team <name> [guarantee=<n>] [max=<n>] [budget=<h>] "
        "[over_budget=borrow_only|hold] [weight=<w>]");
  }
  TeamStep step;
  step.team.name = t[1].text;
  for (std::size_t i = 2; i < t.size(); ++i) {
    const auto [key, value] = SplitKeyValue(t[i].text);
    if (key == "guarantee") {
      GF_ASSIGN_OR_RETURN(step.team.guaranteed_gpus, ParseSmallInt(value, "guarantee"));
    } else if (key == "max") {
      GF_ASSIGN_OR_RETURN(step.team.max_gpus, ParseSmallInt(value, "max"));
    } else if (key == "budget") {
      GF_ASSIGN_OR_RETURN(step.team.gpu_hour_budget, ParseDouble(value, "budget"));
    } else if (key == "weight") {
      GF_ASSIGN_OR_RETURN(step.team.fair_share_weight, ParseDouble(value, "weight"));
    } else if (key == "over_budget" && (value == "borrow_only" || value == "hold")) {
      step.team.over_budget = value == "hold" ? OverBudget::kHold : OverBudget::kBorrowOnly;
    } else {
      return InvalidArgument("unknown team option '" + t[i].text +
                             "'; use guarantee=, max=, budget=, over_budget=borrow_only|hold "
                             "or weight=");
    }
  }
  return ScenarioAction(std::move(step));
}

Result<ScenarioAction> ParseSwitch(const std::vector<Token>& t) {
  const std::string& verb = t[0].text;
  if (t.size() < 2 || t.size() > 3) {
    return InvalidArgument(verb == "preemption" ? "use: preemption on|off [min_run=<d>]"
                                                : "use: backfill on|off [depth=<n>]");
  }
  GF_ASSIGN_OR_RETURN(const bool on, ParseOnOff(t[1].text, verb));
  const auto [key, value] =
      t.size() == 3 ? SplitKeyValue(t[2].text) : std::pair<std::string, std::string>{};
  if (verb == "preemption") {
    PreemptionStep step;
    step.preemption.enabled = on;
    if (key == "min_run") {
      GF_ASSIGN_OR_RETURN(step.preemption.min_run_time, ParseSeconds(value));
    } else if (t.size() == 3) {
      return InvalidArgument("unknown preemption option '" + t[2].text + "'; use min_run=");
    }
    return ScenarioAction(step);
  }
  BackfillStep step;
  step.backfill.enabled = on;
  if (key == "depth") {
    GF_ASSIGN_OR_RETURN(step.backfill.depth, ParseSmallInt(value, "depth"));
  } else if (t.size() == 3) {
    return InvalidArgument("unknown backfill option '" + t[2].text + "'; use depth=");
  }
  return ScenarioAction(step);
}

Result<ScenarioAction> ParseOrder(const std::vector<Token>& t) {
  const std::string usage = "use: order priority|fifo|sjf|srtf|las [thresholds=<n>,<n>...]";
  if (t.size() < 2 || t.size() > 3) {
    return InvalidArgument(usage);
  }
  OrderStep step;
  GF_ASSIGN_OR_RETURN(step.ordering.order, ParseQueueOrder(t[1].text));
  if (t.size() == 3) {
    const auto [key, value] = SplitKeyValue(t[2].text);
    if (key != "thresholds") {
      return InvalidArgument("unknown order option '" + t[2].text + "'; " + usage);
    }
    step.ordering.las_thresholds.clear();
    std::size_t start = 0;
    while (start <= value.size()) {
      const std::size_t comma = std::min(value.find(',', start), value.size());
      GF_ASSIGN_OR_RETURN(const double threshold,
                          ParseDouble(value.substr(start, comma - start), "thresholds"));
      step.ordering.las_thresholds.push_back(threshold);
      start = comma + 1;
    }
  }
  return ScenarioAction(std::move(step));
}

Result<ScenarioAction> ParseUsage(const std::vector<Token>& t) {
  const std::string usage =
      "use: usage team <name> [decayed=<gpu-seconds>] [period_hours=<h>] | "
      "usage user <name> decayed=<gpu-seconds>";
  if (t.size() < 4 || (t[1].text != "team" && t[1].text != "user")) {
    return InvalidArgument(usage);
  }
  UsageStep step{.team = t[1].text == "team",
                 .name = t[2].text,
                 .decayed_gpu_seconds = std::nullopt,
                 .period_gpu_hours = std::nullopt};
  for (std::size_t i = 3; i < t.size(); ++i) {
    const auto [key, value] = SplitKeyValue(t[i].text);
    if (key == "decayed") {
      GF_ASSIGN_OR_RETURN(step.decayed_gpu_seconds, ParseDouble(value, "decayed"));
    } else if (key == "period_hours" && step.team) {
      GF_ASSIGN_OR_RETURN(step.period_gpu_hours, ParseDouble(value, "period_hours"));
    } else {
      return InvalidArgument(usage);
    }
  }
  return ScenarioAction(std::move(step));
}

// expect borrowed|preempt|preemptions|estimate ...: the policy expectations.
Result<ScenarioAction> ParsePolicyExpect(const std::vector<Token>& t, const std::string& usage) {
  const std::string& what = t[1].text;
  if (what == "preemptions" && t.size() == 3) {
    GF_ASSIGN_OR_RETURN(const int count, ParseSmallInt(t[2].text, "count"));
    return ScenarioAction(ExpectPreemptCountStep{count});
  }
  GF_ASSIGN_OR_RETURN(const std::int64_t id, ParseInt(t[2].text, "job id"));
  if (what == "borrowed" && t.size() == 4 && (t[3].text == "yes" || t[3].text == "no")) {
    return ScenarioAction(ExpectBorrowedStep{.job = JobId(id), .borrowed = t[3].text == "yes"});
  }
  if (what == "preempt" && (t.size() == 5 || (t.size() == 6 && t[5].quoted)) &&
      t[3].text == "for") {
    GF_ASSIGN_OR_RETURN(const std::int64_t for_id, ParseInt(t[4].text, "job id"));
    return ScenarioAction(
        ExpectPreemptStep{.victim = JobId(id),
                          .for_job = JobId(for_id),
                          .text = t.size() == 6 ? std::optional(t[5].text) : std::nullopt});
  }
  if (what == "estimate" && t.size() == 4) {
    ExpectEstimateStep step{.job = JobId(id), .at = std::nullopt};
    if (t[3].text != "none") {
      GF_ASSIGN_OR_RETURN(step.at, ParseTime(t[3].text));
    }
    return ScenarioAction(step);
  }
  return InvalidArgument(usage);
}

Result<ScenarioAction> ParseExpect(const std::vector<Token>& t) {
  const std::string usage =
      "use: expect start <id> on <node> [gpus <i>,...] [share=<s>] [mem=<MiB>] | expect pending "
      "<id> [\"<text>\"] | "
      "expect reason <id> \"<text>\" | expect code <id> <stage>/<code> ever|never | "
      "expect starts <count> | expect borrowed <id> yes|no | "
      "expect preempt <victim> for <id> [\"<text>\"] | expect preemptions <count> | "
      "expect estimate <id> <time>|none";
  if (t.size() < 3) {
    return InvalidArgument(usage);
  }
  const std::string& what = t[1].text;
  if (what == "borrowed" || what == "preempt" || what == "preemptions" || what == "estimate") {
    return ParsePolicyExpect(t, usage);
  }
  if (what == "starts" && t.size() == 3) {
    GF_ASSIGN_OR_RETURN(const int count, ParseSmallInt(t[2].text, "count"));
    return ScenarioAction(ExpectStartCountStep{count});
  }
  GF_ASSIGN_OR_RETURN(const std::int64_t id, ParseInt(t[2].text, "job id"));
  if (what == "start" && t.size() >= 5 && t[3].text == "on") {
    ExpectStartStep step{.job = JobId(id), .node = NodeId(t[4].text), .gpus = std::nullopt};
    std::size_t i = 5;
    if (t.size() >= 7 && t[5].text == "gpus") {
      GF_ASSIGN_OR_RETURN(step.gpus, ParseIndexList(t[6].text));
      i = 7;
    }
    for (; i < t.size(); ++i) {
      const auto [key, value] = SplitKeyValue(t[i].text);
      if (key == "share") {
        GF_ASSIGN_OR_RETURN(step.milli, ParseGpuShare(value, "share"));
      } else if (key == "mem") {
        GF_ASSIGN_OR_RETURN(step.memory_mib, ParseInt(value, "mem"));
      } else {
        return InvalidArgument(usage);
      }
    }
    return ScenarioAction(std::move(step));
  }
  if (what == "pending" && t.size() == 3) {
    return ScenarioAction(
        ExpectPendingStep{.job = JobId(id), .text = std::nullopt, .exact = false});
  }
  if (what == "code" && t.size() == 5 && (t[4].text == "ever" || t[4].text == "never")) {
    return ScenarioAction(ExpectPendingStep{.job = JobId(id),
                                            .text = std::nullopt,
                                            .exact = false,
                                            .code = t[3].text,
                                            .can_ever_fit = t[4].text == "ever"});
  }
  if ((what == "pending" || what == "reason") && t.size() == 4 && t[3].quoted) {
    return ScenarioAction(
        ExpectPendingStep{.job = JobId(id), .text = t[3].text, .exact = what == "reason"});
  }
  return InvalidArgument(usage);
}

Result<ScenarioAction> ParseNodeIndex(const std::vector<Token>& t) {
  if (t[0].text == "state") {
    if (t.size() != 3) {
      return InvalidArgument("use: state <node> up|draining|drained|down");
    }
    GF_ASSIGN_OR_RETURN(const NodeState state, ParseNodeState(t[2].text));
    return ScenarioAction(SetStateStep{NodeId(t[1].text), state});
  }
  if (t[0].text == "health") {
    if (t.size() != 4) {
      return InvalidArgument("use: health <node> <index> ok|degraded|failed");
    }
    GF_ASSIGN_OR_RETURN(const int index, ParseSmallInt(t[2].text, "index"));
    GF_ASSIGN_OR_RETURN(const GpuHealth health, ParseGpuHealth(t[3].text));
    return ScenarioAction(SetHealthStep{NodeId(t[1].text), index, health});
  }
  if (t.size() != 3) {
    return InvalidArgument("use: allocate <node> <index>[,<index>...]");
  }
  GF_ASSIGN_OR_RETURN(std::vector<int> indexes, ParseIndexList(t[2].text));
  return ScenarioAction(AllocateStep{NodeId(t[1].text), std::move(indexes)});
}

Result<ScenarioAction> ParseLine(const std::vector<Token>& t) {
  const std::string& verb = t[0].text;
  if (verb == "node") {
    return ParseNode(t);
  }
  if (verb == "state" || verb == "health" || verb == "allocate") {
    return ParseNodeIndex(t);
  }
  if (verb == "job") {
    return ParseJob(t);
  }
  if (verb == "expect") {
    return ParseExpect(t);
  }
  if (verb == "run") {
    return ParseRun(t);
  }
  if (verb == "class") {
    return ParseClass(t);
  }
  if (verb == "team") {
    return ParseTeam(t);
  }
  if (verb == "preemption" || verb == "backfill") {
    return ParseSwitch(t);
  }
  if (verb == "usage") {
    return ParseUsage(t);
  }
  if (verb == "order") {
    return ParseOrder(t);
  }
  if (verb == "share_placement" && t.size() == 2) {
    GF_ASSIGN_OR_RETURN(const SharePlacement placement, ParseSharePlacement(t[1].text));
    return ScenarioAction(SharePlacementStep{placement});
  }
  if (verb == "advance" && t.size() == 2) {
    GF_ASSIGN_OR_RETURN(const Millis by, ParseTime(t[1].text));
    return ScenarioAction(AdvanceStep{by});
  }
  if (verb == "decide" && t.size() == 1) {
    return ScenarioAction(DecideStep{std::nullopt});
  }
  if (verb == "decide" && t.size() == 3 && t[1].text == "at") {
    GF_ASSIGN_OR_RETURN(const Millis at, ParseTime(t[2].text));
    return ScenarioAction(DecideStep{at});
  }
  if (verb == "finish" && t.size() == 2) {
    GF_ASSIGN_OR_RETURN(const std::int64_t id, ParseInt(t[1].text, "job id"));
    return ScenarioAction(FinishStep{JobId(id)});
  }
  return InvalidArgument("cannot read '" + verb +
                         "' here; steps are node, state, health, allocate, job, run, advance, "
                         "decide [at <t>], finish <id>, class, team, preemption, backfill, "
                         "order, usage, expect ...");
}

}  // namespace

Result<Scenario> ParseScenario(std::string_view text) {
  Scenario scenario;
  int line_number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    ++line_number;
    const auto prefix = [&](const Error& e) {
      return InvalidArgument("line " + std::to_string(line_number) + ": " + e.message);
    };
    Result<std::vector<Token>> tokens = Tokenize(text.substr(start, end - start));
    start = end + 1;
    if (!tokens.ok()) {
      return prefix(tokens.error());
    }
    if (tokens->empty()) {
      continue;
    }
    Result<ScenarioAction> action = ParseLine(*tokens);
    if (!action.ok()) {
      return prefix(action.error());
    }
    scenario.steps.push_back(ScenarioStep{line_number, std::move(*action)});
  }
  return scenario;
}

}  // namespace gf
