#include "tune/tune_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "config/config.h"
#include "core/duration.h"
#include "sim/cluster.h"
#include "sim/csv.h"
#include "sim/engine.h"
#include "sim/metrics.h"
#include "store/open_store.h"

#include "tune/choose.h"
#include "tune/history.h"
#include "tune/replay.h"
#include "tune/report.h"

namespace gf::tune {
namespace {

// A bar on a terminal, redrawn in place: "[#####.....] 5/10 backfill = false".
class ProgressBar {
 public:
  ProgressBar(std::ostream& err, bool shown, std::size_t total)
      : err_(err), shown_(shown), total_(total) {}
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() {
    if (shown_) {
      err_ << "\r\033[K" << std::flush;  // leave the line as it was
    }
  }

  // `done` of the total replays have ended, `name` the last of them ("" before the first).
  void Show(std::size_t done, const std::string& name) {
    if (!shown_) {
      return;
    }
    constexpr std::size_t kWidth = 20;
    const std::size_t filled = total_ == 0 ? kWidth : done * kWidth / total_;
    err_ << "\r\033[Kgpufleet tune: [" << std::string(filled, '#')
         << std::string(kWidth - filled, '.') << "] " << done << "/" << total_ << " " << name
         << std::flush;
  }

 private:
  std::ostream& err_;
  bool shown_;
  std::size_t total_;
};

// One replay per core (the machine's count; 1 where it cannot tell).
int DefaultJobs() {
  return static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
}

struct Loaded {
  std::vector<sim::TraceJob> jobs;
  std::vector<Node> nodes;
  std::string source;
};

// A PostgreSQL URL, not a SQLite file (store/open_store.h's forms).
bool IsPostgres(const std::string& db) {
  return db.starts_with("postgresql://") || db.starts_with("postgres://");
}

Result<Loaded> FromTrace(const TuneCommandOptions& o) {
  if (o.cluster.empty()) {
    return InvalidArgument(
        "--cluster: required with --trace; give NODESxGPUSxMODEL (e.g. 32x4xV100), a "
        "machine-list .csv or a cluster .toml, as gpufleet sim takes");
  }
  GF_ASSIGN_OR_RETURN(sim::Trace trace, sim::ReadTraceAs(o.trace, o.format));
  GF_ASSIGN_OR_RETURN(std::vector<Node> nodes, sim::LoadCluster(o.cluster));
  return Loaded{
      .jobs = std::move(trace.jobs), .nodes = std::move(nodes), .source = "trace " + o.trace};
}

Result<Loaded> FromStore(const TuneCommandOptions& o,
                         const TuneEnvironment& env,
                         const Config& config,
                         std::ostream& err) {
  Result<std::chrono::seconds> since = ParseDuration(o.since);
  if (!since.ok()) {
    return InvalidArgument("--since: " + since.error().message);
  }
  const std::string db = !o.db.empty() ? o.db : config.up.db ? config.up.db->value : "";
  const std::filesystem::path data_dir = !o.data_dir.empty() ? std::filesystem::path(o.data_dir)
                                         : config.up.data_dir
                                             ? std::filesystem::path(config.up.data_dir->value)
                                             : env.default_data_dir();
  const std::filesystem::path default_file = data_dir / "state.db";
  const std::string where = DescribeStore(db, default_file);
  // Opening a SQLite store creates a missing file: a tune must not leave an empty one behind.
  if (!IsPostgres(db) && !std::filesystem::exists(where)) {
    return NotFound("no store at " + where +
                    ": give --db (the store gpufleet up or server keeps, as its --db) or "
                    "--data-dir, or replay a trace with --trace FILE --cluster SPEC");
  }
  GF_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(db, default_file));
  GF_ASSIGN_OR_RETURN(std::unique_ptr<StoreReader> reader, store->OpenReader());
  store.reset();  // only the read-only connection reads
  const Time now = std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
  GF_ASSIGN_OR_RETURN(History history, ReadHistory(*reader, now - *since));
  std::vector<Node> nodes;
  if (!o.cluster.empty()) {
    GF_ASSIGN_OR_RETURN(nodes, sim::LoadCluster(o.cluster));
  } else {
    GF_ASSIGN_OR_RETURN(std::vector<Node> stored, reader->ListNodes());
    nodes = ReplayCluster(std::move(stored));
    if (nodes.empty()) {
      return FailedPrecondition("the store at " + where +
                                " has no node with GPUs; give the cluster with --cluster "
                                "NODESxGPUSxMODEL (e.g. 4x8xA100)");
    }
  }
  if (history.unfinished + history.never_ran > 0) {
    err << "gpufleet tune: left out " << history.unfinished << " jobs still pending or running and "
        << history.never_ran << " that ended without running\n";
  }
  return Loaded{
      .jobs = std::move(history.jobs),
      .nodes = std::move(nodes),
      .source = "the store " + where + " (submitted since " + FormatUtcSeconds(now - *since) + ")"};
}

}  // namespace

Status RunTune(const TuneCommandOptions& o,
               const TuneEnvironment& env,
               std::ostream& out,
               std::ostream& err) {
  if (o.jobs < 0) {
    return InvalidArgument("--jobs: " + std::to_string(o.jobs) +
                           " is not a number of threads; give 1 or more (default: one per core, " +
                           std::to_string(DefaultJobs()) + " here)");
  }
  if (o.goals.empty()) {
    return InvalidArgument(
        "--goal: give at least one, e.g. --goal \"high.p95_wait<30m\" --goal \"maximize "
        "utilisation\" (docs/tune.md)");
  }
  Config config;
  if (const std::string file = env.settings_file(o.config); !file.empty()) {
    GF_ASSIGN_OR_RETURN(config, LoadConfig(file));
  }
  GF_ASSIGN_OR_RETURN(const std::vector<Goal> goals, ParseGoals(o.goals, config.policy));
  if (!o.trace.empty() && (!o.db.empty() || !o.data_dir.empty())) {
    return InvalidArgument("--trace: not with --db or --data-dir; replay a trace or the store");
  }
  GF_ASSIGN_OR_RETURN(Loaded input,
                      o.trace.empty() ? FromStore(o, env, config, err) : FromTrace(o));
  if (input.jobs.empty()) {
    return FailedPrecondition(
        "no job to replay in " + input.source +
        (o.trace.empty() ? "; look further back with --since (e.g. 30d)" : ""));
  }
  const auto began = std::chrono::steady_clock::now();
  TuneOutcome outcome{
      .goals = goals, .candidates = CandidatesFrom(config.policy), .measured = {}, .choice = {}};
  const int threads = o.jobs > 0 ? o.jobs : DefaultJobs();
  {
    ProgressBar bar(err, env.progress, outcome.candidates.size());
    bar.Show(0, "");
    GF_ASSIGN_OR_RETURN(
        outcome.measured,
        ReplayCandidates(
            ReplayInput{
                .nodes = input.nodes, .jobs = input.jobs, .team_of_user = config.team_of_user},
            outcome.candidates,
            goals,
            threads,
            [&bar](std::size_t done, const std::string& name) { bar.Show(done, name); }));
  }
  outcome.choice = Choose(goals, outcome.candidates, outcome.measured);
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - began;
  const TuneInput described{.source = input.source,
                            .jobs = static_cast<int>(input.jobs.size()),
                            .nodes = static_cast<int>(input.nodes.size()),
                            .gpus = sim::TotalGpus(input.nodes)};
  out << (o.json ? TuneJson(described, outcome) : FormatTable(described, outcome));
  char took[32];
  std::snprintf(took, sizeof took, "%.2f", wall.count());
  // Never fewer than two policies (the current one and its variants); jobs may be one.
  err << "gpufleet tune: " << outcome.candidates.size() << " policies replayed on "
      << Count(described.jobs, "job") << " in " << took << " s on "
      << std::min<std::size_t>(static_cast<std::size_t>(threads), outcome.candidates.size())
      << (threads == 1 ? " thread\n" : " threads\n");
  if (!o.write.empty()) {
    if (!outcome.choice.meets_all) {
      return FailedPrecondition("--write: nothing written to " + o.write +
                                ": no candidate meets every goal");
    }
    GF_TRY(sim::WriteWholeFile("--write", o.write, SettingsFile(described, outcome)));
    if (!o.json) {
      out << "written to " << o.write
          << ": put its [scheduler] table in the settings file and restart gpufleet to use it\n";
    }
  } else if (!o.json && outcome.choice.meets_all &&
             !outcome.candidates[outcome.choice.index].changes.empty()) {
    out << "to use it: gpufleet tune ... --write FILE, then put FILE's [scheduler] table in the "
           "settings file and restart gpufleet\n";
  }
  return OkStatus();
}

void AddTuneCommand(CLI::App& app, int& exit_code, const TuneEnvironment& environment) {
  auto* tune = app.add_subcommand(
      "tune",
      "replay the cluster's history under variants of its policy and recommend one for your "
      "goals (docs/tune.md)");
  tune->footer(
      "Examples:\n"
      "  gpufleet tune --goal \"high.p95_wait<30m\" --goal \"maximize utilisation\"\n"
      "  gpufleet tune --since 30d --goal \"p95_wait<2h\" --goal \"minimize avg_jct\" "
      "--write tuned.toml\n"
      "  gpufleet tune --trace week.csv --cluster 32x4xV100 --goal \"minimize avg_jct\"\n"
      "Candidates: the current policy and variants of it, one [scheduler] key changed each. "
      "Chosen: every bound met, then the objectives in order (within 1 % counts as a tie), then "
      "the fewest changes. Nothing changes in the running cluster: put the --write file's "
      "[scheduler] table in the settings file and restart gpufleet. docs/tune.md");
  auto o = std::make_shared<TuneCommandOptions>();
  tune->add_option("--goal",
                   o->goals,
                   "a goal, repeatable: CLASS.METRIC<VALUE (high.p95_wait<30m), METRIC>VALUE "
                   "(utilisation>0.8), maximize|minimize METRIC (maximize utilisation); metrics: "
                   "avg_wait, median_wait, p95_wait, p99_wait, avg_jct, median_jct, p95_jct, "
                   "p99_jct, avg_slowdown, p95_slowdown, utilisation, fairness, preemptions");
  tune->add_option("--config",
                   o->config,
                   "settings file with the current policy (default /etc/gpufleet/gpufleet.toml "
                   "when it exists)");
  tune->add_option("--db",
                   o->db,
                   "the store to read history from (default: the settings file's [up] db, else "
                   "DATA_DIR/state.db); read only");
  tune->add_option("--data-dir", o->data_dir, "where the default SQLite store is");
  tune->add_option("--since", o->since, "replay the jobs submitted this long ago and since")
      ->capture_default_str();
  tune->add_option(
      "--trace", o->trace, "replay this trace file instead of the store (as gpufleet sim)");
  tune->add_option(
      "--format", o->format, "--trace's format: normalized or tiresias (default: from the header)");
  tune->add_option("--cluster",
                   o->cluster,
                   "the cluster, as gpufleet sim takes it (32x4xV100, a .csv, a .toml); default: "
                   "the store's nodes");
  tune->add_option("--write",
                   o->write,
                   "write the recommended policy's [scheduler] table to this settings file");
  tune->add_flag("--json", o->json, "print the candidates and the recommendation as JSON");
  tune->add_option("--jobs",
                   o->jobs,
                   "replays run side by side (default: one per core); the result is the same for "
                   "any number")
      ->type_name("N");
  tune->callback([o, &exit_code, environment] {
    TuneEnvironment env = environment;
    env.progress = ::isatty(STDERR_FILENO) != 0;
    const Status status = RunTune(*o, env, std::cout, std::cerr);
    if (!status.ok()) {
      std::cerr << "gpufleet tune: " << status.error().message << '\n';
      exit_code = 1;
    }
  });
}

}  // namespace gf::tune
