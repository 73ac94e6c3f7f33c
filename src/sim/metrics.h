// What a simulation measured: the summary `gpufleet sim` prints (a table, or JSON) and the
// per-job CSV (`--jobs-csv`).
//
// Definitions (docs/sim.md repeats them for users):
// - finished: completed or stopped by its time limit. JCT = end - submit, over finished jobs.
// - queueing delay = first start - submit, over jobs that started.
// - slowdown = JCT / the job's trace duration (at least 1 s), over finished jobs.
// - makespan = last end - first submit; utilisation = GPU time held by jobs (work lost to
//   preemption included) / (cluster GPUs x makespan).
// - estimate error: |estimate at submit - run time| / run time, over completed jobs that had an
//   estimate (EstimateError).
// - percentiles interpolate linearly between the closest ranks (numpy's default, as the
//   Tiresias figures are computed), so a median of an even count is the mean of the middle two.
// - the time series: from the first submit to the last end, cut into steps of a round length
//   (1 s .. 1 day, the shortest that gives at most 400 points): per step, the mean utilisation
//   (GPUs held / cluster GPUs) and the mean number of jobs waiting (submitted, not rejected,
//   not running, not ended; a preempted job waits again until its next start).
// - per class: the JCT, queueing and slowdown spreads of its jobs.
// - per team: its share of all GPU time held, and its mean JCT, queueing and slowdown. Jain's
//   fairness index (sum x)^2 / (n sum x^2) over the teams' mean slowdowns: 1 when every team
//   waits the same relative to its jobs' length, 1/n when one team bears all the waiting.
// - inflation (--no-departures), at the first point where the arrived GPU demand reaches each
//   1 % of cluster capacity: unallocated = free capacity / capacity; allocation rate =
//   allocated / arrived demand (and / the arrived demand of jobs of a kind the cluster has GPUs
//   for: not multi-GPU jobs on a cluster with no exclusive GPU); fragmented = the free
//   capacity the workload's task shapes
//   cannot use (fragmentation.h) / capacity.
//
// Pure functions over plain values: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine.h"

namespace gf::sim {

struct Spread {
  double avg = 0;
  double median = 0;
  double p95 = 0;
  double p99 = 0;
};

struct TeamFigures {
  std::string team;  // "" = no team
  int jobs = 0;
  double gpu_seconds = 0;
  double share = 0;  // of all GPU time held
  double avg_jct_s = 0;
  double avg_queueing_s = 0;
  double avg_slowdown = 0;
};

// The figures of one priority class's jobs (JobOutcome::priority): how each class fared, so
// that a goal can name one (`gpufleet tune --goal "high.p95_wait<30m"`).
struct ClassFigures {
  std::string name;
  int jobs = 0;      // not rejected
  int finished = 0;  // completed or stopped by its time limit
  Spread jct_s{};
  Spread queueing_s{};
  Spread slowdown{};
};

struct TimeSeries {
  double step_s = 0;
  std::vector<double> t_s;          // each step's start, seconds from the first submit
  std::vector<double> utilisation;  // mean over the step, 0..1
  std::vector<double> queue;        // mean jobs waiting over the step
};

struct InflationRow {
  int step_pct = 0;            // the arrived demand the row is for: 10 = 10 % of capacity
  double arrived_pct = 0;      // the arrived demand there (the first point at or past step_pct)
  double unallocated_pct = 0;  // of capacity
  double allocation_rate = 0;  // allocated / arrived demand, 0..1
  // allocated / the arrived demand of a kind the cluster has GPUs for (SimResult::
  // InflationPoint::arrived_unplaceable_milli left out), 0..1
  double placeable_rate = 0;
  double fragmented_pct = 0;  // of capacity
};

// A row per 1 % of capacity the arrived demand reaches (SimResult::inflation).
std::vector<InflationRow> InflationRows(const SimResult& result);

// How well run times were known at submit: |estimate - run time| / run time over the completed
// jobs that had an estimate (JobOutcome::predicted or last_two; the run time is the trace's
// duration), as a median and a 90th percentile; `of` is all completed jobs.
struct EstimateError {
  int jobs = 0;
  int of = 0;
  double median = 0;
  double p90 = 0;
};

// How well start times were known when a job had to wait: |estimated start - start| over the
// jobs whose first pass left them waiting and gave them an estimated start (a reservation,
// JobOutcome::estimated_start), in seconds, as a median and a 90th percentile; `of` is every job
// that waited at its arrival and started.
struct StartError {
  int jobs = 0;
  int of = 0;
  double median_s = 0;
  double p90_s = 0;
};

struct Summary {
  int jobs = 0;
  int finished = 0;
  int timeouts = 0;  // among finished
  int rejected = 0;
  int never_started = 0;
  int cancelled = 0;                // a dependency broke (TraceJob::after)
  int running = 0;                  // still running at the end (--no-departures)
  int never_started_multi_gpu = 0;  // of never_started: jobs of 2 whole GPUs or more
  int total_gpus = 0;
  double makespan_s = 0;
  double gpu_seconds = 0;
  double utilisation = 0;  // 0..1
  Spread jct_s{};
  Spread queueing_s{};
  Spread slowdown{};
  int preemptions = 0;
  int jobs_preempted = 0;
  int node_failures = 0;                // runs stopped by a failure of their node (--node-mtbf)
  std::vector<TeamFigures> teams{};     // by name
  std::vector<ClassFigures> classes{};  // by name; rejected jobs left out
  double jain_fairness = 1;
  std::int64_t decide_calls = 0;
  std::int64_t max_queue = 0;
  EstimateError prediction{};  // the run-time predictor's, learned online
  EstimateError last_two{};    // the mean of the user's last two runs (a baseline)
  StartError start_estimate{};
  TimeSeries series{};
  std::vector<InflationRow> inflation{};  // --no-departures only
};

Summary Summarize(const SimResult& result);

// The value at percentile `p` (0..100) of `values`, interpolating linearly; 0 when empty.
double Percentile(std::vector<double> values, double p);
// Jain's fairness index of `values`: 1 when empty or all zero.
double JainIndex(const std::vector<double>& values);

std::string FormatSummary(const Summary& summary);  // a table for people
std::string SummaryJson(const Summary& summary);    // the same figures, JSON (one object)

// Several policies on one trace (`--compare`): one row a policy, named.
struct NamedSummary {
  std::string policy;
  Summary summary;
};
// A table: policy, utilisation, JCT avg / median / p95 / p99, queueing avg, slowdown avg,
// preemptions, Jain's index.
std::string FormatComparison(const std::vector<NamedSummary>& runs);
// --no-departures: one row per 10 % of arrived demand, each policy's unallocated %,
// allocation rate and fragmented % side by side (a markdown table).
std::string FormatInflation(const std::vector<NamedSummary>& runs);
// A JSON array of SummaryJson's objects, each with "policy" added.
std::string ComparisonJson(const std::vector<NamedSummary>& runs);
// A self-contained SVG: utilisation and jobs waiting over time, one line per run.
std::string SeriesSvg(const std::vector<NamedSummary>& runs);
// One line a job: id,team,user,gpus,submit_s,start_s,end_s,jct_s,queueing_s,preemptions,fate
// (start/end/jct/queueing blank when it did not happen).
std::string JobsCsv(const SimResult& result);

}  // namespace gf::sim
