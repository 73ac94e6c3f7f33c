#include "tune/report.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace gf::tune {
namespace {

std::string Figure(const Goal& goal, const Measured& m, std::size_t g) {
  std::string text = m.values[g] ? FormatValue(goal.metric, *m.values[g]) : "n/a";
  if (goal.kind == GoalKind::kBound) {
    text += m.met[g] ? " ok" : " MISSED";
  }
  return text;
}

std::string Pad(std::string text, std::size_t width) {
  text.resize(std::max(width, text.size() + 1), ' ');
  return text;
}

std::string InputLine(const TuneInput& input) {
  return Count(input.jobs, "job") + " from " + input.source + ", on " + Count(input.nodes, "node") +
         " with " + Count(input.gpus, "GPU");
}

std::string GoalList(const std::vector<Goal>& goals) {
  std::string list;
  for (const Goal& goal : goals) {
    list += (list.empty() ? "" : ", ") + goal.text;
  }
  return list;
}

std::string FiguresLine(const TuneOutcome& o, std::size_t c) {
  std::string line;
  for (std::size_t g = 0; g < o.goals.size(); ++g) {
    line +=
        (line.empty() ? "" : "; ") + o.goals[g].text + ": " + Figure(o.goals[g], o.measured[c], g);
  }
  return line;
}

}  // namespace

// "1 node", "16 nodes".
std::string Count(int n, const std::string& thing) {
  return std::to_string(n) + " " + thing + (n == 1 ? "" : "s");
}

std::string FormatTable(const TuneInput& input, const TuneOutcome& o) {
  std::vector<std::string> header = {"candidate"};
  for (const Goal& goal : o.goals) {
    header.push_back(goal.text);
  }
  std::vector<std::vector<std::string>> rows;
  for (std::size_t c = 0; c < o.candidates.size(); ++c) {
    std::vector<std::string> row = {(c == o.choice.index ? "* " : "  ") + o.candidates[c].name};
    for (std::size_t g = 0; g < o.goals.size(); ++g) {
      row.push_back(Figure(o.goals[g], o.measured[c], g));
    }
    rows.push_back(std::move(row));
  }
  header[0] = "  " + header[0];
  std::vector<std::size_t> widths(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) {
    widths[i] = header[i].size() + 2;
    for (const auto& row : rows) {
      widths[i] = std::max(widths[i], row[i].size() + 2);
    }
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      text += Pad(cells[i], widths[i]);
    }
    return text.substr(0, text.find_last_not_of(' ') + 1) + "\n";
  };
  std::string out = "replayed " + InputLine(input) + "\n\n" + line(header);
  for (const auto& row : rows) {
    out += line(row);
  }
  const Candidate& chosen = o.candidates[o.choice.index];
  out += "\n";
  if (o.choice.meets_all) {
    out += "recommended: " + chosen.name +
           (chosen.changes.empty() ? " (the current policy meets the goals best; nothing to change)"
                                   : "") +
           "\n";
  } else {
    out += "no candidate meets every goal; the closest: " + chosen.name +
           " (loosen a goal, or look beyond the scheduler: more GPUs, quotas)\n";
  }
  return out;
}

std::string TuneJson(const TuneInput& input, const TuneOutcome& o) {
  nlohmann::json goals = nlohmann::json::array();
  for (const Goal& goal : o.goals) {
    goals.push_back(goal.text);
  }
  nlohmann::json candidates = nlohmann::json::array();
  for (std::size_t c = 0; c < o.candidates.size(); ++c) {
    nlohmann::json changes = nlohmann::json::object();
    for (const Change& change : o.candidates[c].changes) {
      changes[change.key] = change.value;
    }
    nlohmann::json figures = nlohmann::json::array();
    for (std::size_t g = 0; g < o.goals.size(); ++g) {
      const std::optional<double> v = o.measured[c].values[g];
      figures.push_back({{"goal", o.goals[g].text},
                         {"value", v ? nlohmann::json(*v) : nlohmann::json(nullptr)},
                         {"met", static_cast<bool>(o.measured[c].met[g])}});
    }
    candidates.push_back({{"name", o.candidates[c].name},
                          {"changes", changes},
                          {"figures", figures},
                          {"meets_all", o.measured[c].missed == 0}});
  }
  const nlohmann::json out = {{"input",
                               {{"source", input.source},
                                {"jobs", input.jobs},
                                {"nodes", input.nodes},
                                {"gpus", input.gpus}}},
                              {"goals", goals},
                              {"candidates", candidates},
                              {"recommended", o.candidates[o.choice.index].name},
                              {"meets_all", o.choice.meets_all}};
  return out.dump(2) + "\n";
}

std::string SettingsFile(const TuneInput& input, const TuneOutcome& o) {
  const Candidate& chosen = o.candidates[o.choice.index];
  std::string out = "# Written by gpufleet tune: " + chosen.name + "\n";
  out += "# Replayed " + InputLine(input) + ".\n";
  out += "# Goals: " + GoalList(o.goals) + "\n";
  out += "# Figures: " + FiguresLine(o, o.choice.index) + "\n";
  if (!o.choice.meets_all) {
    out += "# It does NOT meet every goal: no candidate did; it is the closest.\n";
  }
  out +=
      "# Put this [scheduler] table in place of the settings file's own (docs/config.md), then\n"
      "# restart gpufleet: nothing changes in the running cluster until then.\n";
  return out + SchedulerToml(chosen.policy);
}

}  // namespace gf::tune
