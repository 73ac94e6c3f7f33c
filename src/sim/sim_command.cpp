#include "sim/sim_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "config/config.h"
#include "core/duration.h"
#include "sim/cluster.h"
#include "sim/csv.h"
#include "sim/engine.h"
#include "sim/idle_power.h"
#include "sim/metrics.h"
#include "sim/synthetic.h"
#include "sim/trace.h"

namespace gf::sim {
namespace {

int LargestNode(const std::vector<Node>& nodes) {
  std::size_t largest = 0;
  for (const Node& node : nodes) {
    largest = std::max(largest, node.gpus.size());
  }
  return static_cast<int>(largest);
}

Result<Trace> LoadJobs(const SimCommandOptions& o, const std::vector<Node>& nodes) {
  if (o.synthetic.has_value() == !o.trace.empty()) {
    return InvalidArgument("give either --trace FILE or --synthetic N (not both)");
  }
  if (o.synthetic) {
    if (*o.synthetic < 0) {
      return InvalidArgument("--synthetic: the job count must be 0 or more, got " +
                             std::to_string(*o.synthetic));
    }
    if (!(o.load > 0)) {
      return InvalidArgument(
          "--load: must be above 0 (1 offers as much GPU time as the cluster has)");
    }
    return Trace{.jobs = GenerateSynthetic(SyntheticOptions{.jobs = *o.synthetic,
                                                            .seed = o.seed,
                                                            .cluster_gpus = TotalGpus(nodes),
                                                            .max_gpus_per_job = LargestNode(nodes),
                                                            .load = o.load}),
                 .unknown_duration = 0};
  }
  // Without departures a job needs no duration: the rows with none (pods that never ran)
  // are tasks as well.
  return ReadTraceAs(o.trace, o.format, /*keep_unknown_duration=*/o.no_departures);
}

Result<Millis> FlagDuration(const std::string& flag, const std::string& text) {
  auto parsed = ParseDuration(text);
  if (!parsed.ok()) {
    return InvalidArgument(flag + ": " + parsed.error().message);
  }
  return std::chrono::duration_cast<Millis>(*parsed);
}

// The options of one run: the policy file `policy` ("" = the stock policy) and the flags.
Result<SimOptions> LoadSimOptions(const SimCommandOptions& o, const std::string& policy) {
  SimOptions options;
  if (!policy.empty()) {
    GF_ASSIGN_OR_RETURN(Config config, LoadConfig(policy));
    options.policy = std::move(config.policy);
    options.team_of_user = std::move(config.team_of_user);
  }
  if (o.checkpoint_interval == "0" || o.checkpoint_interval == "0s") {
    options.checkpoint_interval = Millis(0);  // suspend and resume: nothing lost
  } else if (!o.checkpoint_interval.empty()) {
    GF_ASSIGN_OR_RETURN(options.checkpoint_interval,
                        FlagDuration("--checkpoint-interval", o.checkpoint_interval));
  }
  if (!o.kill_grace.empty()) {
    GF_ASSIGN_OR_RETURN(options.kill_grace, FlagDuration("--kill-grace", o.kill_grace));
  }
  if (!o.launch_lag.empty()) {
    GF_ASSIGN_OR_RETURN(options.launch_lag, FlagDuration("--launch-lag", o.launch_lag));
  }
  options.fair_share = !o.no_fair_share;
  options.team_label = o.confine_teams;
  options.no_departures = o.no_departures;
  return options;
}

// --node-mtbf: each node's failures, drawn with --seed, until every job could have run one
// after the other (no run lasts longer).
Result<std::vector<NodeFailure>> NodeFailures(const SimCommandOptions& o,
                                              std::size_t nodes,
                                              const std::vector<TraceJob>& jobs) {
  if (o.node_mtbf.empty()) {
    return std::vector<NodeFailure>{};
  }
  GF_ASSIGN_OR_RETURN(const Millis mtbf, FlagDuration("--node-mtbf", o.node_mtbf));
  GF_ASSIGN_OR_RETURN(const Millis repair, FlagDuration("--node-repair", o.node_repair));
  if (mtbf.count() <= 0) {
    return InvalidArgument("--node-mtbf: must be above 0 (e.g. 30d), got " + o.node_mtbf);
  }
  Millis until = jobs.empty() ? Millis(0) : jobs.back().submit;
  for (const TraceJob& job : jobs) {
    until += job.duration + repair;
  }
  return GenerateNodeFailures(nodes, mtbf, repair, until, o.seed);
}

// A policy's name in the comparison: its file name without directory and ".toml", or the whole
// path when two files share a name; "stock" for no file.
std::vector<std::string> PolicyNames(const std::vector<std::string>& files) {
  std::vector<std::string> names;
  names.reserve(files.size());
  for (const std::string& file : files) {
    names.push_back(file.empty() ? "stock" : std::filesystem::path(file).stem().string());
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (std::count(names.begin(), names.end(), names[i]) > 1) {
      names[i] = files[i];
    }
  }
  return names;
}

}  // namespace

Status RunSim(const SimCommandOptions& o) {
  if (o.cluster.empty()) {
    return InvalidArgument(
        "--cluster: required; give NODESxGPUSxMODEL (e.g. 32x4xV100) or a "
        "machine-list .csv file");
  }
  const bool comparing = !o.compare.empty();
  if (comparing && !o.policy.empty()) {
    return InvalidArgument("--policy: not with --compare; list every policy file after --compare");
  }
  if (comparing && !o.jobs_csv.empty()) {
    return InvalidArgument(
        "--jobs-csv: not with --compare; run the policy alone with --policy to get its jobs");
  }
  const std::vector<std::string> files = comparing ? o.compare : std::vector<std::string>{o.policy};
  std::vector<SimOptions> options;
  for (const std::string& file : files) {  // every file checked before the first run
    GF_ASSIGN_OR_RETURN(SimOptions one, LoadSimOptions(o, file));
    options.push_back(std::move(one));
  }
  GF_ASSIGN_OR_RETURN(std::vector<Node> nodes, LoadCluster(o.cluster));
  if (!o.gpu_sharing.empty()) {
    Result<SharingMode> sharing = ParseSharingMode(o.gpu_sharing, "--gpu-sharing");
    if (!sharing.ok() || *sharing == SharingMode::kMig) {
      return InvalidArgument("--gpu-sharing: '" + o.gpu_sharing +
                             "' is not a sharing mode here; use shared, mps or exclusive");
    }
    ShareEveryGpu(nodes, *sharing);
  }
  if (o.inflate_to != 0 && (!o.no_departures || !(o.inflate_to > 0))) {
    return InvalidArgument(
        "--inflate-to: a multiple of the cluster's GPUs above 0 (e.g. 1.3), with --no-departures");
  }
  GF_ASSIGN_OR_RETURN(Trace trace, LoadJobs(o, nodes));
  if (o.inflate_to > 0) {
    ResampleTo(trace.jobs, o.inflate_to * TotalGpus(nodes), o.seed);
  }
  GF_ASSIGN_OR_RETURN(const std::vector<NodeFailure> failures,
                      NodeFailures(o, nodes.size(), trace.jobs));
  for (SimOptions& one : options) {
    one.node_failures = failures;
  }
  if (trace.unknown_duration > 0 && !o.no_departures) {
    std::cerr << "gpufleet sim: left out " << trace.unknown_duration
              << " jobs with no duration in the trace (they never ran in the source)\n";
  }
  std::optional<IdlePowerOptions> power;
  if (!o.idle_power_after.empty()) {
    power.emplace();
    GF_ASSIGN_OR_RETURN(power->idle_after, FlagDuration("--idle-power-after", o.idle_power_after));
    if (o.forecast_lead_hours < 0 || o.forecast_lead_hours > 7 * 24) {
      return InvalidArgument("--forecast-lead-hours: " + std::to_string(o.forecast_lead_hours) +
                             " is out of range; give 0 to 168 (hours)");
    }
    power->lead_hours = o.forecast_lead_hours;
  }
  const std::vector<std::string> names = PolicyNames(files);
  std::vector<NamedSummary> runs;
  std::string power_text;  // the idle power section of each run
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto began = std::chrono::steady_clock::now();
    GF_ASSIGN_OR_RETURN(const SimResult result, Simulate(nodes, trace.jobs, options[i]));
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - began;
    runs.push_back(NamedSummary{.policy = names[i], .summary = Summarize(result)});
    if (power) {
      power_text += (comparing ? "\n" + names[i] + ":" : "") +
                    FormatIdlePower(CompareIdlePower(result, *power), *power);
    }
    if (!o.jobs_csv.empty()) {
      GF_TRY(WriteWholeFile("--jobs-csv", o.jobs_csv, JobsCsv(result)));
    }
    char took[32];
    std::snprintf(took, sizeof took, "%.2f", wall.count());
    std::cerr << "gpufleet sim: " << (comparing ? names[i] + ": " : "") << trace.jobs.size()
              << " jobs on " << result.total_gpus << " GPUs simulated in " << took << " s ("
              << result.decide_calls << " scheduler passes, " << result.full_passes
              << " of them full)\n";
  }
  if (comparing && o.no_departures && !o.json) {
    std::cout << FormatInflation(runs);
  } else if (comparing) {
    std::cout << (o.json ? ComparisonJson(runs) : FormatComparison(runs));
  } else {
    std::cout << (o.json ? SummaryJson(runs[0].summary) : FormatSummary(runs[0].summary));
  }
  if (!o.json) {
    std::cout << power_text;
  }
  if (!o.svg.empty()) {
    GF_TRY(WriteWholeFile("--svg", o.svg, SeriesSvg(runs)));
  }
  return OkStatus();
}

void AddSimCommand(CLI::App& app, int& exit_code) {
  auto* sim = app.add_subcommand(
      "sim", "replay a trace through the scheduler on a simulated cluster (docs/sim.md)");
  auto o = std::make_shared<SimCommandOptions>();
  sim->add_option("--trace", o->trace, "job trace CSV (normalized or Tiresias format)");
  sim->add_option("--format",
                  o->format,
                  "trace format: normalized or tiresias (default: from "
                  "the header)");
  sim->add_option("--synthetic", o->synthetic, "simulate N synthetic jobs instead of a trace");
  sim->add_option("--seed", o->seed, "--synthetic: random seed")->capture_default_str();
  sim->add_option("--load", o->load, "--synthetic: offered GPU time / cluster capacity")
      ->capture_default_str();
  sim->add_option(
      "--cluster", o->cluster, "NODESxGPUSxMODEL[,...] (e.g. 32x4xV100) or a machine-list .csv");
  sim->add_option("--policy", o->policy, "settings file (TOML) with the scheduling policy");
  sim->add_option("--checkpoint-interval",
                  o->checkpoint_interval,
                  "preempted jobs keep their work up to their last checkpoint (e.g. 30m; 0: "
                  "all of it)");
  sim->add_option("--kill-grace",
                  o->kill_grace,
                  "a preempted job holds its GPUs this long before it is killed and requeued, "
                  "as the product's kill grace (its default: 10s); default 0: at once");
  sim->add_option("--launch-lag",
                  o->launch_lag,
                  "a started job's processes run this long after the start decision (its GPUs "
                  "held from it), as the launch through the node's agent takes; default 0");
  sim->add_flag("--no-fair-share",
                o->no_fair_share,
                "give the scheduler no usage (order by class, then submit time)");
  sim->add_option("--confine-teams",
                  o->confine_teams,
                  "run each job only on nodes whose label LABEL is its team (teams in "
                  "partitions of the cluster file's nodes)");
  sim->add_option("--node-mtbf",
                  o->node_mtbf,
                  "nodes fail, each after a random up time of this mean (e.g. 30d; --seed "
                  "draws them); their jobs are requeued");
  sim->add_option("--node-repair", o->node_repair, "--node-mtbf: how long a failed node is down")
      ->capture_default_str();
  sim->add_option("--gpu-sharing",
                  o->gpu_sharing,
                  "put every GPU of the cluster in this mode: shared, mps or exclusive "
                  "(shares go to shared and mps GPUs)");
  sim->add_flag("--no-departures",
                o->no_departures,
                "inflation: jobs never end, a job not placed at its arrival is dropped; "
                "report unallocated, allocated and fragmented capacity as demand grows");
  sim->add_option("--inflate-to",
                  o->inflate_to,
                  "--no-departures: resample the trace (--seed) until its GPU demand is X "
                  "times the cluster's GPUs (e.g. 1.3)");
  sim->add_option("--idle-power-after",
                  o->idle_power_after,
                  "also print what capping idle GPUs costs: GPU-hours capped and the queueing "
                  "added, for GPUs capped after this idle wait (gpufleet up --idle-power-after) "
                  "and with the load forecast (docs/sim.md)")
      ->type_name("DURATION");
  sim->add_option("--forecast-lead-hours",
                  o->forecast_lead_hours,
                  "--idle-power-after: how many hours ahead the load forecast lifts caps")
      ->capture_default_str();
  sim->add_flag("--json", o->json, "print the summary as JSON");
  sim->add_option("--jobs-csv", o->jobs_csv, "write one line per job to this file");
  sim->add_option("--compare",
                  o->compare,
                  "run each policy file on the same trace and cluster; print one table");
  sim->add_option("--svg", o->svg, "draw utilisation and queue length over time to this SVG file");
  sim->callback([o, &exit_code] {
    const Status status = RunSim(*o);
    if (!status.ok()) {
      std::cerr << "gpufleet sim: " << status.error().message << '\n';
      exit_code = 1;
    }
  });
}

}  // namespace gf::sim
