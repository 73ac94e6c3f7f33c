#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

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

Summary Summarize(const SimResult& result) {
  Summary s{.jobs = static_cast<int>(result.jobs.size()),
            .total_gpus = result.total_gpus,
            .decide_calls = result.decide_calls,
            .max_queue = result.max_queue};
  Samples all;
  std::map<std::string, Samples> by_team;
  std::optional<Millis> first_submit;
  Millis last_end{0};
  for (const JobOutcome& job : result.jobs) {
    s.rejected += job.fate == JobFate::kRejected ? 1 : 0;
    s.never_started += job.fate == JobFate::kNeverStarted ? 1 : 0;
    s.timeouts += job.fate == JobFate::kTimeout ? 1 : 0;
    s.preemptions += job.preemptions;
    s.jobs_preempted += job.preemptions > 0 ? 1 : 0;
    if (job.fate == JobFate::kRejected) {
      continue;  // never part of the workload the cluster ran
    }
    first_submit = std::min(first_submit.value_or(job.submit), job.submit);
    if (job.end) {
      last_end = std::max(last_end, *job.end);
    }
    Add(job, all);
    Add(job, by_team[job.team]);
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
  return s;
}

std::string FormatSummary(const Summary& s) {
  std::string out;
  out +=
      Row("jobs",
          std::to_string(s.jobs) + " (" + std::to_string(s.finished) + " finished, " +
              std::to_string(s.timeouts) + " of them by time limit; " + std::to_string(s.rejected) +
              " rejected, " + std::to_string(s.never_started) + " never started)");
  out += Row("cluster GPUs", std::to_string(s.total_gpus));
  out +=
      Row("makespan", Fixed(s.makespan_s, 0) + " s (" + Fixed(s.makespan_s / 86400, 2) + " days)");
  out += Row("utilisation", Fixed(100 * s.utilisation, 1) + " % of GPU time");
  out += SpreadRow("JCT (s)", s.jct_s, 0);
  out += SpreadRow("queueing (s)", s.queueing_s, 0);
  out += SpreadRow("slowdown", s.slowdown, 2);
  out += Row("preemptions",
             std::to_string(s.preemptions) + " (" + std::to_string(s.jobs_preempted) + " jobs)");
  out += Row("Jain's fairness", Fixed(s.jain_fairness, 3) + " (over teams' mean slowdown)");
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
  return out;
}

std::string SummaryJson(const Summary& s) {
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
  const nlohmann::json out = {
      {"jobs", s.jobs},
      {"finished", s.finished},
      {"timeouts", s.timeouts},
      {"rejected", s.rejected},
      {"never_started", s.never_started},
      {"total_gpus", s.total_gpus},
      {"makespan_s", s.makespan_s},
      {"gpu_seconds", s.gpu_seconds},
      {"utilisation", s.utilisation},
      {"jct_s", SpreadJson(s.jct_s)},
      {"queueing_s", SpreadJson(s.queueing_s)},
      {"slowdown", SpreadJson(s.slowdown)},
      {"preemptions", s.preemptions},
      {"jobs_preempted", s.jobs_preempted},
      {"teams", teams},
      {"jain_fairness", s.jain_fairness},
      {"decide_calls", s.decide_calls},
      {"max_queue", s.max_queue},
  };
  return out.dump(2) + "\n";
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
    out += job.id + "," + job.team + "," + job.user + "," + std::to_string(job.gpus) + "," +
           seconds(job.submit) + "," + seconds(job.first_start) + "," + seconds(job.end) + "," +
           seconds(jct) + "," + seconds(queueing) + "," + std::to_string(job.preemptions) + "," +
           std::string(ToString(job.fate)) + "\n";
  }
  return out;
}

}  // namespace gf::sim
