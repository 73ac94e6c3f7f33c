#include "tune/goal.h"

#include <array>
#include <cmath>
#include <cstdlib>

#include "core/duration.h"

namespace gf::tune {
namespace {

struct MetricInfo {
  Metric metric;
  std::string_view name;
  MetricUnit unit;
  bool per_class;
};

constexpr std::array<MetricInfo, 13> kMetrics = {{
    {Metric::kAvgWait, "avg_wait", MetricUnit::kSeconds, true},
    {Metric::kMedianWait, "median_wait", MetricUnit::kSeconds, true},
    {Metric::kP95Wait, "p95_wait", MetricUnit::kSeconds, true},
    {Metric::kP99Wait, "p99_wait", MetricUnit::kSeconds, true},
    {Metric::kAvgJct, "avg_jct", MetricUnit::kSeconds, true},
    {Metric::kMedianJct, "median_jct", MetricUnit::kSeconds, true},
    {Metric::kP95Jct, "p95_jct", MetricUnit::kSeconds, true},
    {Metric::kP99Jct, "p99_jct", MetricUnit::kSeconds, true},
    {Metric::kAvgSlowdown, "avg_slowdown", MetricUnit::kCount, true},
    {Metric::kP95Slowdown, "p95_slowdown", MetricUnit::kCount, true},
    {Metric::kUtilisation, "utilisation", MetricUnit::kRatio, false},
    {Metric::kFairness, "fairness", MetricUnit::kRatio, false},
    {Metric::kPreemptions, "preemptions", MetricUnit::kCount, false},
}};

// Other spellings people write for the same figure.
constexpr std::array<std::pair<std::string_view, Metric>, 5> kAliases = {{
    {"utilization", Metric::kUtilisation},
    {"wait", Metric::kAvgWait},
    {"jct", Metric::kAvgJct},
    {"slowdown", Metric::kAvgSlowdown},
    {"jain_fairness", Metric::kFairness},
}};

const MetricInfo& InfoOf(Metric metric) {
  return kMetrics.at(static_cast<std::size_t>(metric));
}

std::string MetricList() {
  std::string list;
  for (const MetricInfo& info : kMetrics) {
    list += (list.empty() ? "" : ", ") + std::string(info.name);
  }
  return list;
}

std::string_view Trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

Error GoalError(std::string_view text, const std::string& what) {
  return InvalidArgument("goal '" + std::string(text) + "': " + what +
                         "; write [CLASS.]METRIC<VALUE (also <=, >, >=: high.p95_wait<30m, "
                         "utilisation>0.8) or maximize|minimize [CLASS.]METRIC (maximize "
                         "utilisation); metrics: " +
                         MetricList());
}

std::optional<Metric> FindMetric(std::string_view name) {
  for (const MetricInfo& info : kMetrics) {
    if (info.name == name) {
      return info.metric;
    }
  }
  for (const auto& [alias, metric] : kAliases) {
    if (alias == name) {
      return metric;
    }
  }
  return std::nullopt;
}

// "[CLASS.]METRIC" into the goal's class and metric.
Status ParseSubject(std::string_view text, std::string_view subject, Goal& goal) {
  subject = Trim(subject);
  const std::size_t dot = subject.rfind('.');
  const std::string_view name = dot == std::string_view::npos ? subject : subject.substr(dot + 1);
  if (dot != std::string_view::npos) {
    goal.class_name = std::string(subject.substr(0, dot));
    if (goal.class_name.empty()) {
      return GoalError(text, "no class before '.'");
    }
  }
  const std::optional<Metric> metric = FindMetric(name);
  if (!metric) {
    return GoalError(text, name.empty() ? "no metric" : "no metric '" + std::string(name) + "'");
  }
  goal.metric = *metric;
  if (!goal.class_name.empty() && !PerClass(goal.metric)) {
    return GoalError(text,
                     std::string(NameOf(goal.metric)) +
                         " is a figure of the whole cluster, not of one class; leave out '" +
                         goal.class_name + ".'");
  }
  return OkStatus();
}

// A number written in full ("0.8", "17"), nothing after it.
std::optional<double> Number(std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

Result<double> ParseBound(std::string_view text, Metric metric, std::string_view value) {
  switch (UnitOf(metric)) {
    case MetricUnit::kSeconds: {
      Result<std::chrono::seconds> d = ParseDuration(value);
      if (!d.ok()) {
        return GoalError(text, "'" + std::string(value) + "' is not a duration (30m, 2h, 1d, 90s)");
      }
      return static_cast<double>(d->count());
    }
    case MetricUnit::kRatio: {
      const bool percent = !value.empty() && value.back() == '%';
      const std::optional<double> number =
          Number(Trim(percent ? value.substr(0, value.size() - 1) : value));
      const double ratio = number.value_or(-1) / (percent ? 100 : 1);
      if (!number || ratio < 0 || ratio > 1) {
        return GoalError(text,
                         "'" + std::string(value) +
                             "' is not a ratio; give a number from 0 to 1 or a percentage (0.8, "
                             "80%)");
      }
      return ratio;
    }
    case MetricUnit::kCount: {
      const std::optional<double> number = Number(value);
      if (!number || *number < 0) {
        return GoalError(text, "'" + std::string(value) + "' is not a number (0 or more)");
      }
      return *number;
    }
  }
  return GoalError(text, "unknown unit");
}

}  // namespace

std::string_view NameOf(Metric metric) {
  return InfoOf(metric).name;
}

MetricUnit UnitOf(Metric metric) {
  return InfoOf(metric).unit;
}

bool PerClass(Metric metric) {
  return InfoOf(metric).per_class;
}

Result<Goal> ParseGoal(std::string_view raw) {
  const std::string_view text = Trim(raw);
  Goal goal{.text = std::string(text)};
  if (text.empty()) {
    return GoalError(text, "empty");
  }
  for (const auto& [verb, kind] :
       {std::pair<std::string_view, GoalKind>{"maximize", GoalKind::kMaximize},
        {"maximise", GoalKind::kMaximize},
        {"minimize", GoalKind::kMinimize},
        {"minimise", GoalKind::kMinimize}}) {
    if (text.starts_with(verb) && (text.size() == verb.size() || text[verb.size()] == ' ')) {
      goal.kind = kind;
      GF_TRY(ParseSubject(text, text.substr(verb.size()), goal));
      return goal;
    }
  }
  const std::size_t op = text.find_first_of("<>");
  if (op == std::string_view::npos) {
    return GoalError(text, "no comparison (<, <=, >, >=) and no maximize or minimize");
  }
  const bool or_equal = op + 1 < text.size() && text[op + 1] == '=';
  goal.comparison = text[op] == '<' ? (or_equal ? Comparison::kAtMost : Comparison::kBelow)
                                    : (or_equal ? Comparison::kAtLeast : Comparison::kAbove);
  GF_TRY(ParseSubject(text, text.substr(0, op), goal));
  const std::string_view value = Trim(text.substr(op + (or_equal ? 2 : 1)));
  if (value.empty()) {
    return GoalError(text, "no value after the comparison");
  }
  GF_ASSIGN_OR_RETURN(goal.bound, ParseBound(text, goal.metric, value));
  return goal;
}

Result<std::vector<Goal>> ParseGoals(const std::vector<std::string>& texts,
                                     const PolicyConfig& policy) {
  std::vector<Goal> goals;
  for (const std::string& text : texts) {
    GF_ASSIGN_OR_RETURN(Goal goal, ParseGoal(text));
    if (!goal.class_name.empty()) {
      if (const Status exists = CheckClassExists(policy, PriorityClass{goal.class_name});
          !exists.ok()) {
        // It says "priority: no class 'x'; the classes are ...": the goal, not a flag, named it.
        const std::string& message = exists.error().message;
        const std::size_t colon = message.find(": ");
        return InvalidArgument("goal '" + goal.text + "': " +
                               (colon == std::string::npos ? message : message.substr(colon + 2)));
      }
    }
    goals.push_back(std::move(goal));
  }
  return goals;
}

std::optional<double> ValueOf(const Goal& goal, const sim::Summary& summary) {
  const sim::Spread* jct = &summary.jct_s;
  const sim::Spread* wait = &summary.queueing_s;
  const sim::Spread* slowdown = &summary.slowdown;
  if (!goal.class_name.empty()) {
    const sim::ClassFigures* figures = nullptr;
    for (const sim::ClassFigures& c : summary.classes) {
      figures = c.name == goal.class_name ? &c : figures;
    }
    if (figures == nullptr || figures->jobs == 0) {
      return std::nullopt;
    }
    jct = &figures->jct_s;
    wait = &figures->queueing_s;
    slowdown = &figures->slowdown;
  }
  switch (goal.metric) {
    case Metric::kAvgWait:
      return wait->avg;
    case Metric::kMedianWait:
      return wait->median;
    case Metric::kP95Wait:
      return wait->p95;
    case Metric::kP99Wait:
      return wait->p99;
    case Metric::kAvgJct:
      return jct->avg;
    case Metric::kMedianJct:
      return jct->median;
    case Metric::kP95Jct:
      return jct->p95;
    case Metric::kP99Jct:
      return jct->p99;
    case Metric::kAvgSlowdown:
      return slowdown->avg;
    case Metric::kP95Slowdown:
      return slowdown->p95;
    case Metric::kUtilisation:
      return summary.utilisation;
    case Metric::kFairness:
      return summary.jain_fairness;
    case Metric::kPreemptions:
      return static_cast<double>(summary.preemptions);
  }
  return std::nullopt;
}

bool Meets(const Goal& goal, double value) {
  switch (goal.comparison) {
    case Comparison::kBelow:
      return value < goal.bound;
    case Comparison::kAtMost:
      return value <= goal.bound;
    case Comparison::kAbove:
      return value > goal.bound;
    case Comparison::kAtLeast:
      return value >= goal.bound;
  }
  return false;
}

std::string FormatValue(Metric metric, double value) {
  char text[64];
  switch (UnitOf(metric)) {
    case MetricUnit::kSeconds:
      return FormatDuration(std::chrono::seconds(std::llround(value)));
    case MetricUnit::kRatio:
      std::snprintf(text, sizeof text, "%.1f %%", 100 * value);
      return text;
    case MetricUnit::kCount:
      if (value == std::floor(value)) {
        std::snprintf(text, sizeof text, "%.0f", value);
      } else {
        std::snprintf(text, sizeof text, "%.2f", value);
      }
      return text;
  }
  return {};
}

}  // namespace gf::tune
