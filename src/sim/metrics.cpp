#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "core/duration.h"
#include "core/svg.h"
#include "model/slice.h"

namespace gf::sim {
namespace {

double Seconds(Millis d) {
  return std::chrono::duration<double>(d).count();
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) {
    return 0;
  }
  double sum = 0;
  for (const double v : values) {
    sum += v;
  }
  return sum / static_cast<double>(values.size());
}

Spread SpreadOf(const std::vector<double>& values) {
  return Spread{.avg = Mean(values),
                .median = Percentile(values, 50),
                .p95 = Percentile(values, 95),
                .p99 = Percentile(values, 99)};
}

// Per-job figures, split per team as they are gathered.
struct Samples {
  std::vector<double> jct;
  std::vector<double> queueing;
  std::vector<double> slowdown;
  int jobs = 0;
  double gpu_seconds = 0;
};

void Add(const JobOutcome& job, Samples& samples) {
  samples.jobs += 1;
  samples.gpu_seconds += job.gpu_seconds;
  if (job.first_start) {
    samples.queueing.push_back(Seconds(*job.first_start - job.submit));
  }
  if (job.fate == JobFate::kCompleted || job.fate == JobFate::kTimeout) {
    const double jct = Seconds(*job.end - job.submit);
    samples.jct.push_back(jct);
    samples.slowdown.push_back(jct / std::max(1.0, Seconds(job.duration)));
  }
}

std::string Fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

nlohmann::json SpreadJson(const Spread& s) {
  return {{"avg", s.avg}, {"median", s.median}, {"p95", s.p95}, {"p99", s.p99}};
}

std::string Row(const std::string& name, const std::string& value) {
  std::string line = name;
  line.resize(std::max<std::size_t>(line.size() + 1, 22), ' ');
  return line + value + "\n";
}

std::string SpreadRow(const std::string& name, const Spread& s, int decimals) {
  return Row(name,
             "avg " + Fixed(s.avg, decimals) + "  median " + Fixed(s.median, decimals) + "  p95 " +
                 Fixed(s.p95, decimals) + "  p99 " + Fixed(s.p99, decimals));
}

// "median error 41 %, p90 230 % (9,120 of 9,500 completed jobs had one)", or why there is none.
std::string StartErrorText(const StartError& e) {
  if (e.of == 0) {
    return "no job waited at its arrival";
  }
  if (e.jobs == 0) {
    return "none of the " + std::to_string(e.of) + " jobs that waited was given one";
  }
  return "median error " + Fixed(e.median_s, 0) + " s, p90 " + Fixed(e.p90_s, 0) + " s (" +
         std::to_string(e.jobs) + " of " + std::to_string(e.of) + " jobs that waited had one)";
}

std::string EstimateText(const EstimateError& e) {
  if (e.jobs == 0) {
    return "no estimate (no run had ended before, or no users)";
  }
  return "median error " + Fixed(100 * e.median, 0) + " %, p90 " + Fixed(100 * e.p90, 0) + " % (" +
         std::to_string(e.jobs) + " of " + std::to_string(e.of) + " completed jobs had one)";
}

// The series' step: the shortest round length that cuts `span_s` into at most kMaxPoints.
constexpr double kMaxPoints = 400;
double SeriesStep(double span_s) {
  for (const double step : {1.0,
                            2.0,
                            5.0,
                            10.0,
                            15.0,
                            30.0,
                            60.0,
                            120.0,
                            300.0,
                            600.0,
                            900.0,
                            1800.0,
                            3600.0,
                            7200.0,
                            10800.0,
                            21600.0,
                            43200.0,
                            86400.0}) {
    if (span_s / step <= kMaxPoints) {
      return step;
    }
  }
  return 86400 * std::ceil(span_s / kMaxPoints / 86400);
}

// Sums of weight x time per step, for intervals given in seconds from the origin.
class StepSums {
 public:
  StepSums(double span_s, double step_s)
      : span_(span_s),
        step_(step_s),
        sums_(static_cast<std::size_t>(std::max(1.0, std::ceil(span_s / step_s)))),
        full_(sums_.size() + 1) {}

  // Adds `weight` over [a, b) (clamped to the span): the steps it covers whole through a
  // difference array, the partial ones at its ends directly.
  void Add(double a, double b, double weight) {
    a = std::clamp(a, 0.0, span_);
    b = std::clamp(b, 0.0, span_);
    if (!(b > a)) {
      return;
    }
    const std::size_t first = Index(a);
    const std::size_t last = Index(b);
    if (first == last) {
      sums_[first] += (b - a) * weight;
      return;
    }
    sums_[first] += (Start(first + 1) - a) * weight;
    if (last < sums_.size()) {
      sums_[last] += (b - Start(last)) * weight;
    }
    full_[first + 1] += step_ * weight;
    full_[last] -= step_ * weight;
  }

  // Per step, the mean weight over it (the last step may be shorter than the others).
  std::vector<double> Means(double scale) const {
    std::vector<double> out(sums_.size());
    double whole = 0;
    for (std::size_t k = 0; k < sums_.size(); ++k) {
      whole += full_[k];
      const double length = std::min(step_, span_ - Start(k));
      out[k] = length > 0 ? (sums_[k] + whole) / length / scale : 0;
    }
    return out;
  }

  double Start(std::size_t k) const { return static_cast<double>(k) * step_; }

 private:
  std::size_t Index(double t) const {
    return std::min(sums_.size() - 1, static_cast<std::size_t>(t / step_));
  }

  double span_;
  double step_;
  std::vector<double> sums_;
  std::vector<double> full_;
};

TimeSeries SeriesOf(const SimResult& result, Millis origin, double span_s) {
  TimeSeries series{.step_s = SeriesStep(span_s), .t_s = {}, .utilisation = {}, .queue = {}};
  if (!(span_s > 0) || result.total_gpus <= 0) {
    return series;
  }
  StepSums held(span_s, series.step_s);
  StepSums waiting(span_s, series.step_s);
  const auto at = [&](Millis t) {
    return Seconds(t - origin);
  };
  for (const JobOutcome& job : result.jobs) {
    if (job.fate == JobFate::kRejected) {
      continue;
    }
    Millis waits_from = job.submit;
    for (const auto& [start, end] : job.runs) {
      waiting.Add(at(waits_from), at(start), 1);
      held.Add(at(start), at(end), job.gpu_milli > 0 ? job.gpu_milli / 1000.0 : job.gpus);
      waits_from = end;  // waits again only if it was preempted: another run follows
    }
    if (job.runs.empty()) {
      waiting.Add(at(job.submit), span_s, 1);  // never started: waits to the end
    }
  }
  series.utilisation = held.Means(result.total_gpus);
  series.queue = waiting.Means(1);
  for (std::size_t k = 0; k < series.utilisation.size(); ++k) {
    series.t_s.push_back(held.Start(k));
  }
  return series;
}

// Rounded for the JSON: the series is for plotting, not for sums.
std::vector<double> Rounded(const std::vector<double>& values, double unit) {
  std::vector<double> out;
  out.reserve(values.size());
  for (const double v : values) {
    out.push_back(std::round(v / unit) * unit);
  }
  return out;
}

// A job's GPUs in the per-job CSV: "2", or its share "0.46".
std::string GpusText(const JobOutcome& job) {
  return job.gpu_milli > 0 ? GpuAmountText(job.gpu_milli) : std::to_string(job.gpus);
}

nlohmann::json InflationJson(const std::vector<InflationRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const InflationRow& row : rows) {
    out.push_back({{"step_pct", row.step_pct},
                   {"arrived_pct", row.arrived_pct},
                   {"unallocated_pct", row.unallocated_pct},
                   {"allocation_rate", row.allocation_rate},
                   {"placeable_rate", row.placeable_rate},
                   {"fragmented_pct", row.fragmented_pct}});
  }
  return out;
}

nlohmann::json EstimateJson(const EstimateError& e) {
  return {{"jobs", e.jobs}, {"of", e.of}, {"median", e.median}, {"p90", e.p90}};
}

nlohmann::json StartErrorJson(const StartError& e) {
  return {{"jobs", e.jobs}, {"of", e.of}, {"median_s", e.median_s}, {"p90_s", e.p90_s}};
}

nlohmann::json SummaryObject(const Summary& s) {
  nlohmann::json teams = nlohmann::json::array();
  for (const TeamFigures& t : s.teams) {
    teams.push_back({{"team", t.team},
                     {"jobs", t.jobs},
                     {"gpu_seconds", t.gpu_seconds},
                     {"share", t.share},
                     {"avg_jct_s", t.avg_jct_s},
                     {"avg_queueing_s", t.avg_queueing_s},
                     {"avg_slowdown", t.avg_slowdown}});
  }
  nlohmann::json classes = nlohmann::json::array();
  for (const ClassFigures& c : s.classes) {
    classes.push_back({{"class", c.name},
                       {"jobs", c.jobs},
                       {"finished", c.finished},
                       {"jct_s", SpreadJson(c.jct_s)},
                       {"queueing_s", SpreadJson(c.queueing_s)},
                       {"slowdown", SpreadJson(c.slowdown)}});
  }
  return {
      {"jobs", s.jobs},
      {"finished", s.finished},
      {"timeouts", s.timeouts},
      {"rejected", s.rejected},
      {"never_started", s.never_started},
      {"cancelled", s.cancelled},
      {"total_gpus", s.total_gpus},
      {"makespan_s", s.makespan_s},
      {"gpu_seconds", s.gpu_seconds},
      {"utilisation", s.utilisation},
      {"jct_s", SpreadJson(s.jct_s)},
      {"queueing_s", SpreadJson(s.queueing_s)},
      {"slowdown", SpreadJson(s.slowdown)},
      {"preemptions", s.preemptions},
      {"jobs_preempted", s.jobs_preempted},
      {"node_failures", s.node_failures},
      {"teams", teams},
      {"classes", classes},
      {"jain_fairness", s.jain_fairness},
      {"prediction_error", EstimateJson(s.prediction)},
      {"last_two_error", EstimateJson(s.last_two)},
      {"start_estimate_error", StartErrorJson(s.start_estimate)},
      {"decide_calls", s.decide_calls},
      {"max_queue", s.max_queue},
      {"running", s.running},
      {"never_started_multi_gpu", s.never_started_multi_gpu},
      {"inflation", InflationJson(s.inflation)},
      {"series",
       {{"step_s", s.series.step_s},
        {"t_s", s.series.t_s},
        {"utilisation", Rounded(s.series.utilisation, 1e-4)},
        {"queue", Rounded(s.series.queue, 1e-2)}}},
  };
}

}  // namespace

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  const double rank = p / 100 * static_cast<double>(values.size() - 1);
  const auto low = static_cast<std::size_t>(std::floor(rank));
  const std::size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (values[high] - values[low]) * (rank - static_cast<double>(low));
}

double JainIndex(const std::vector<double>& values) {
  double sum = 0;
  double squares = 0;
  for (const double v : values) {
    sum += v;
    squares += v * v;
  }
  return squares == 0 ? 1 : sum * sum / (static_cast<double>(values.size()) * squares);
}

namespace {

EstimateError ErrorOf(const SimResult& result, std::optional<Millis> JobOutcome::*estimate) {
  EstimateError e;
  std::vector<double> errors;
  for (const JobOutcome& job : result.jobs) {
    if (job.fate != JobFate::kCompleted) {
      continue;
    }
    ++e.of;
    if (const std::optional<Millis>& guess = job.*estimate) {
      const double actual = std::max(1.0, Seconds(job.duration));
      errors.push_back(std::abs(Seconds(*guess) - actual) / actual);
    }
  }
  e.jobs = static_cast<int>(errors.size());
  e.median = Percentile(errors, 50);
  e.p90 = Percentile(std::move(errors), 90);
  return e;
}

StartError StartErrorOf(const SimResult& result) {
  StartError e;
  std::vector<double> errors;
  for (const JobOutcome& job : result.jobs) {
    if (!job.waited_at_arrival || !job.first_start) {
      continue;
    }
    ++e.of;
    if (job.estimated_start) {
      errors.push_back(std::abs(Seconds(*job.estimated_start - *job.first_start)));
    }
  }
  e.jobs = static_cast<int>(errors.size());
  e.median_s = Percentile(errors, 50);
  e.p90_s = Percentile(std::move(errors), 90);
  return e;
}

}  // namespace

Summary Summarize(const SimResult& result) {
  Summary s{.jobs = static_cast<int>(result.jobs.size()),
            .total_gpus = result.total_gpus,
            .decide_calls = result.decide_calls,
            .max_queue = result.max_queue};
  Samples all;
  std::map<std::string, Samples> by_team;
  std::map<std::string, Samples> by_class;
  std::optional<Millis> first_submit;
  Millis last_end{0};
  for (const JobOutcome& job : result.jobs) {
    s.rejected += job.fate == JobFate::kRejected ? 1 : 0;
    s.never_started += job.fate == JobFate::kNeverStarted ? 1 : 0;
    s.cancelled += job.fate == JobFate::kCancelled ? 1 : 0;
    s.running += job.fate == JobFate::kRunning ? 1 : 0;
    s.never_started_multi_gpu +=
        job.fate == JobFate::kNeverStarted && job.gpu_milli == 0 && job.gpus > 1 ? 1 : 0;
    s.timeouts += job.fate == JobFate::kTimeout ? 1 : 0;
    s.preemptions += job.preemptions;
    s.jobs_preempted += job.preemptions > 0 ? 1 : 0;
    s.node_failures += job.failures;
    if (job.fate == JobFate::kRejected) {
      continue;  // never part of the workload the cluster ran
    }
    first_submit = std::min(first_submit.value_or(job.submit), job.submit);
    if (job.end) {
      last_end = std::max(last_end, *job.end);
    }
    Add(job, all);
    Add(job, by_team[job.team]);
    Add(job, by_class[job.priority]);
  }
  s.finished = static_cast<int>(all.jct.size());
  s.gpu_seconds = all.gpu_seconds;
  s.makespan_s = first_submit ? std::max(0.0, Seconds(last_end - *first_submit)) : 0;
  s.utilisation =
      s.makespan_s > 0 && s.total_gpus > 0 ? s.gpu_seconds / (s.makespan_s * s.total_gpus) : 0;
  s.jct_s = SpreadOf(all.jct);
  s.queueing_s = SpreadOf(all.queueing);
  s.slowdown = SpreadOf(all.slowdown);
  std::vector<double> team_slowdowns;
  for (const auto& [team, samples] : by_team) {
    s.teams.push_back(
        TeamFigures{.team = team,
                    .jobs = samples.jobs,
                    .gpu_seconds = samples.gpu_seconds,
                    .share = all.gpu_seconds > 0 ? samples.gpu_seconds / all.gpu_seconds : 0,
                    .avg_jct_s = Mean(samples.jct),
                    .avg_queueing_s = Mean(samples.queueing),
                    .avg_slowdown = Mean(samples.slowdown)});
    if (!samples.slowdown.empty()) {
      team_slowdowns.push_back(Mean(samples.slowdown));
    }
  }
  s.jain_fairness = JainIndex(team_slowdowns);
  for (const auto& [name, samples] : by_class) {
    s.classes.push_back(ClassFigures{.name = name,
                                     .jobs = samples.jobs,
                                     .finished = static_cast<int>(samples.jct.size()),
                                     .jct_s = SpreadOf(samples.jct),
                                     .queueing_s = SpreadOf(samples.queueing),
                                     .slowdown = SpreadOf(samples.slowdown)});
  }
  if (first_submit) {
    s.series = SeriesOf(result, *first_submit, s.makespan_s);
  }
  s.inflation = InflationRows(result);
  s.prediction = ErrorOf(result, &JobOutcome::predicted);
  s.last_two = ErrorOf(result, &JobOutcome::last_two);
  s.start_estimate = StartErrorOf(result);
  return s;
}

namespace {
double Ratio(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 1;
}
}  // namespace

std::vector<InflationRow> InflationRows(const SimResult& result) {
  std::vector<InflationRow> rows;
  const double capacity = result.total_gpus * 1000.0;
  if (capacity <= 0) {
    return rows;
  }
  int step = 1;
  for (const SimResult::InflationPoint& point : result.inflation) {
    const double arrived_pct = 100 * static_cast<double>(point.arrived_milli) / capacity;
    // A row for each step this point is the first to reach (a large job may pass several).
    for (; arrived_pct + 1e-9 >= step; ++step) {
      rows.push_back(InflationRow{
          .step_pct = step,
          .arrived_pct = arrived_pct,
          .unallocated_pct =
              100 * (capacity - static_cast<double>(point.allocated_milli)) / capacity,
          .allocation_rate = Ratio(point.allocated_milli, point.arrived_milli),
          .placeable_rate =
              Ratio(point.allocated_milli, point.arrived_milli - point.arrived_unplaceable_milli),
          .fragmented_pct = 100 * point.fragmented_milli / capacity});
    }
  }
  return rows;
}

std::string FormatSummary(const Summary& s) {
  std::string out;
  out += Row(
      "jobs",
      std::to_string(s.jobs) + " (" + std::to_string(s.finished) + " finished, " +
          std::to_string(s.timeouts) + " of them by time limit; " + std::to_string(s.rejected) +
          " rejected, " + std::to_string(s.never_started) + " never started" +
          (s.cancelled > 0 ? ", " + std::to_string(s.cancelled) + " cancelled (a dependency broke)"
                           : std::string()) +
          ")");
  out += Row("cluster GPUs", std::to_string(s.total_gpus));
  out +=
      Row("makespan", Fixed(s.makespan_s, 0) + " s (" + Fixed(s.makespan_s / 86400, 2) + " days)");
  out += Row("utilisation", Fixed(100 * s.utilisation, 1) + " % of GPU time");
  out += SpreadRow("JCT (s)", s.jct_s, 0);
  out += SpreadRow("queueing (s)", s.queueing_s, 0);
  out += SpreadRow("slowdown", s.slowdown, 2);
  out += Row("preemptions",
             std::to_string(s.preemptions) + " (" + std::to_string(s.jobs_preempted) + " jobs)");
  if (s.node_failures > 0) {
    out += Row("node failures", std::to_string(s.node_failures) + " runs stopped and requeued");
  }
  out += Row("Jain's fairness", Fixed(s.jain_fairness, 3) + " (over teams' mean slowdown)");
  out += Row("run-time prediction", EstimateText(s.prediction));
  out += Row("user's last 2 runs", EstimateText(s.last_two));
  out += Row("estimated start", StartErrorText(s.start_estimate));
  if (s.running > 0 || !s.inflation.empty()) {
    out += Row("still running", std::to_string(s.running) + " (no departures)");
  }
  out +=
      Row("scheduler passes",
          std::to_string(s.decide_calls) + " (deepest queue " + std::to_string(s.max_queue) + ")");
  if (s.teams.size() > 1 || (s.teams.size() == 1 && !s.teams[0].team.empty())) {
    out += "\nteam                  jobs  GPU share  avg JCT (s)  avg queueing (s)  avg slowdown\n";
    for (const TeamFigures& t : s.teams) {
      char line[160];
      std::snprintf(line,
                    sizeof line,
                    "%-20s %5d  %8.1f%%  %11.0f  %16.0f  %12.2f\n",
                    t.team.empty() ? "(none)" : t.team.c_str(),
                    t.jobs,
                    100 * t.share,
                    t.avg_jct_s,
                    t.avg_queueing_s,
                    t.avg_slowdown);
      out += line;
    }
  }
  if (s.classes.size() > 1) {
    out +=
        "\nclass                 jobs  avg JCT (s)  p95 JCT (s)  avg queueing (s)  p95 queueing "
        "(s)\n";
    for (const ClassFigures& c : s.classes) {
      char line[160];
      std::snprintf(line,
                    sizeof line,
                    "%-20s %5d  %11.0f  %11.0f  %16.0f  %16.0f\n",
                    c.name.c_str(),
                    c.jobs,
                    c.jct_s.avg,
                    c.jct_s.p95,
                    c.queueing_s.avg,
                    c.queueing_s.p95);
      out += line;
    }
  }
  if (!s.inflation.empty()) {
    out += "\n" + FormatInflation({NamedSummary{.policy = "", .summary = s}});
  }
  return out;
}

std::string FormatInflation(const std::vector<NamedSummary>& runs) {
  std::string head = "| arrived demand |";
  std::string rule = "|---|";
  for (const NamedSummary& run : runs) {
    const std::string name = run.policy.empty() ? "" : run.policy + ": ";
    head += ' ';
    for (const char* column :
         {"unallocated | ", "allocation rate (of placeable) | ", "fragmented |"}) {
      head += name;
      head += column;
    }
    rule += "---|---|---|";
  }
  std::string out = head + "\n" + rule + "\n";
  const auto row_at = [](const Summary& s, int step) -> const InflationRow* {
    for (const InflationRow& row : s.inflation) {
      if (row.step_pct == step) {
        return &row;
      }
    }
    return nullptr;
  };
  int last = 0;
  for (const NamedSummary& run : runs) {
    if (!run.summary.inflation.empty()) {
      last = std::max(last, run.summary.inflation.back().step_pct);
    }
  }
  for (int step = 10; step <= last; step += 10) {
    std::string line = "| " + std::to_string(step) + " % |";
    for (const NamedSummary& run : runs) {
      const InflationRow* row = row_at(run.summary, step);
      if (row == nullptr) {
        line += " | | |";
        continue;
      }
      line += " " + Fixed(row->unallocated_pct, 1) + " % | " +
              Fixed(100 * row->allocation_rate, 1) + " % (" + Fixed(100 * row->placeable_rate, 1) +
              " %) | " + Fixed(row->fragmented_pct, 1) + " % |";
    }
    out += line + "\n";
  }
  out +=
      "(unallocated, fragmented: % of cluster GPU capacity; allocation rate: allocated / "
      "arrived GPU demand; of placeable: / the arrived demand of jobs of a kind the cluster has "
      "GPUs for)\n";
  for (const NamedSummary& run : runs) {
    const Summary& s = run.summary;
    out += (run.policy.empty() ? "" : run.policy + ": ") + std::to_string(s.jobs) +
           " jobs: " + std::to_string(s.running) + " placed, " + std::to_string(s.never_started) +
           " not placed (" + std::to_string(s.never_started_multi_gpu) +
           " of them of 2 GPUs or more), " + std::to_string(s.rejected) + " rejected\n";
  }
  return out;
}

std::string SummaryJson(const Summary& s) {
  return SummaryObject(s).dump(2) + "\n";
}

std::string FormatComparison(const std::vector<NamedSummary>& runs) {
  std::size_t name_width = 6;
  for (const NamedSummary& run : runs) {
    name_width = std::max(name_width, run.policy.size());
  }
  char line[256];
  std::snprintf(line,
                sizeof line,
                "%-*s  %6s  %9s  %9s  %9s  %9s  %9s  %8s  %7s  %5s\n",
                static_cast<int>(name_width),
                "policy",
                "util %",
                "JCT avg",
                "median",
                "p95",
                "p99",
                "queueing",
                "slowdown",
                "preempt",
                "Jain");
  std::string out = line;
  for (const NamedSummary& run : runs) {
    const Summary& s = run.summary;
    std::snprintf(line,
                  sizeof line,
                  "%-*s  %6.1f  %9.0f  %9.0f  %9.0f  %9.0f  %9.0f  %8.2f  %7d  %5.3f\n",
                  static_cast<int>(name_width),
                  run.policy.c_str(),
                  100 * s.utilisation,
                  s.jct_s.avg,
                  s.jct_s.median,
                  s.jct_s.p95,
                  s.jct_s.p99,
                  s.queueing_s.avg,
                  s.slowdown.avg,
                  s.preemptions,
                  s.jain_fairness);
    out += line;
  }
  return out + "(times in seconds; JCT, queueing and slowdown over finished jobs)\n";
}

std::string ComparisonJson(const std::vector<NamedSummary>& runs) {
  nlohmann::json out = nlohmann::json::array();
  for (const NamedSummary& run : runs) {
    nlohmann::json object = SummaryObject(run.summary);
    object["policy"] = run.policy;
    out.push_back(std::move(object));
  }
  return out.dump(2) + "\n";
}

std::string SeriesSvg(const std::vector<NamedSummary>& runs) {
  double span_s = 0;
  for (const NamedSummary& run : runs) {
    span_s = std::max(span_s, run.summary.makespan_s);
  }
  // Days on the x axis for a long trace, hours otherwise.
  const bool days = span_s > 2 * 86400;
  const double unit = days ? 86400 : 3600;
  const double step_s = runs.empty() ? 0 : runs[0].summary.series.step_s;
  const std::string per =
      " (mean per " +
      FormatDuration(std::chrono::seconds(static_cast<std::int64_t>(std::llround(step_s)))) + ")";
  svg::LineChart utilisation{.title = "GPU utilisation" + per,
                             .x_label = days ? "days" : "hours",
                             .y_unit = "%",
                             .y_max = 100,
                             .series = {}};
  svg::LineChart queue{.title = "jobs waiting" + per,
                       .x_label = utilisation.x_label,
                       .y_unit = "",
                       .y_max = 0,
                       .series = {}};
  for (const NamedSummary& run : runs) {
    const TimeSeries& series = run.summary.series;
    std::vector<double> x;
    std::vector<double> util;
    for (std::size_t k = 0; k < series.t_s.size(); ++k) {
      x.push_back(series.t_s[k] / unit);
      util.push_back(100 * series.utilisation[k]);
    }
    utilisation.series.push_back(svg::Series{.name = run.policy, .x = x, .y = util});
    queue.series.push_back(svg::Series{.name = run.policy, .x = x, .y = series.queue});
  }
  constexpr double kWidth = 760;
  constexpr double kLeft = 50;
  constexpr double kPlotWidth = 600;
  constexpr double kPlotHeight = 200;
  constexpr double kPanel = kPlotHeight + 70;
  return svg::Open(kWidth, 2 * kPanel + 10) +
         "<style>.axis{stroke:#999;stroke-width:0.5}text{font:10px sans-serif;fill:#333}"
         "</style><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>" +
         svg::DrawLineChart(utilisation, kLeft, 30, kPlotWidth, kPlotHeight) +
         svg::DrawLineChart(queue, kLeft, 30 + kPanel, kPlotWidth, kPlotHeight) + "</svg>\n";
}

std::string JobsCsv(const SimResult& result) {
  std::string out = "id,team,user,gpus,submit_s,start_s,end_s,jct_s,queueing_s,preemptions,fate\n";
  auto seconds = [](std::optional<Millis> t) {
    return t ? Fixed(Seconds(*t), 3) : "";
  };
  for (const JobOutcome& job : result.jobs) {
    const std::optional<Millis> jct = job.end ? std::optional(*job.end - job.submit) : std::nullopt;
    const std::optional<Millis> queueing =
        job.first_start ? std::optional(*job.first_start - job.submit) : std::nullopt;
    out += job.id + "," + job.team + "," + job.user + "," + GpusText(job) + "," +
           seconds(job.submit) + "," + seconds(job.first_start) + "," + seconds(job.end) + "," +
           seconds(jct) + "," + seconds(queueing) + "," + std::to_string(job.preemptions) + "," +
           std::string(ToString(job.fate)) + "\n";
  }
  return out;
}

}  // namespace gf::sim
