#include "scheduler/scenario.h"

#include <algorithm>
#include <charconv>
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

Result<ScenarioAction> ParseNode(const std::vector<Token>& t) {
  if (t.size() < 3 || t.size() > 4) {
    return InvalidArgument("use: node <name> <count>x<model>[+...] [state=<state>]");
  }
  Node node;
  node.name = NodeId(t[1].text);
  GF_ASSIGN_OR_RETURN(node.gpus, ParseGpuSpec(t[2].text, t[1].text));
  if (t.size() == 4) {
    const auto [key, value] = SplitKeyValue(t[3].text);
    if (key != "state") {
      return InvalidArgument("unknown node option '" + t[3].text + "'; use state=<state>");
    }
    GF_ASSIGN_OR_RETURN(node.state, ParseNodeState(value));
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
    } else {
      return InvalidArgument("unknown job option '" + t[i].text +
                             "'; use gpus=, type=, priority=, submit= or user=");
    }
  }
  return ScenarioAction(std::move(step));
}

Result<ScenarioAction> ParseExpect(const std::vector<Token>& t) {
  const std::string usage =
      "use: expect start <id> on <node> [gpus <i>,...] | expect pending <id> [\"<text>\"] | "
      "expect reason <id> \"<text>\" | expect starts <count>";
  if (t.size() < 3) {
    return InvalidArgument(usage);
  }
  const std::string& what = t[1].text;
  if (what == "starts" && t.size() == 3) {
    GF_ASSIGN_OR_RETURN(const int count, ParseSmallInt(t[2].text, "count"));
    return ScenarioAction(ExpectStartCountStep{count});
  }
  GF_ASSIGN_OR_RETURN(const std::int64_t id, ParseInt(t[2].text, "job id"));
  if (what == "start" && (t.size() == 5 || t.size() == 7) && t[3].text == "on") {
    ExpectStartStep step{.job = JobId(id), .node = NodeId(t[4].text), .gpus = std::nullopt};
    if (t.size() == 7) {
      if (t[5].text != "gpus") {
        return InvalidArgument(usage);
      }
      GF_ASSIGN_OR_RETURN(step.gpus, ParseIndexList(t[6].text));
    }
    return ScenarioAction(std::move(step));
  }
  if (what == "pending" && t.size() == 3) {
    return ScenarioAction(
        ExpectPendingStep{.job = JobId(id), .text = std::nullopt, .exact = false});
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
                         "' here; steps are node, state, health, allocate, job, advance, "
                         "decide [at <t>], finish <id>, expect ...");
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
