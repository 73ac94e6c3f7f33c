// `gpufleet sim`: the command line of the simulator (docs/sim.md). Reads a trace (or makes a
// synthetic one), a cluster spec and a policy file, runs the engine and prints the summary
// table or JSON, and the per-job CSV when asked. Runs in the calling process; talks to no
// gpufleet server.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace gf::sim {

struct SimCommandOptions {
  std::string trace;                   // --trace FILE
  std::string format;                  // --format normalized|tiresias; "" = from the header
  std::optional<int> synthetic;        // --synthetic N
  std::uint64_t seed = 1;              // --seed
  double load = 0.9;                   // --load (synthetic)
  std::string cluster;                 // --cluster SPEC or machine-list .csv
  std::string policy;                  // --policy FILE.toml; "" = the stock policy
  std::string checkpoint_interval;     // --checkpoint-interval DURATION; "" = none
  std::string kill_grace;              // --kill-grace DURATION; "" = 0 (a victim stops at once)
  std::string launch_lag;              // --launch-lag DURATION; "" = 0 (a job runs at once)
  bool no_fair_share = false;          // --no-fair-share
  std::string confine_teams;           // --confine-teams LABEL; "" = teams share every node
  std::string node_mtbf;               // --node-mtbf DURATION; "" = nodes never fail
  std::string node_repair = "1h";      // --node-repair DURATION
  bool json = false;                   // --json
  std::string jobs_csv;                // --jobs-csv FILE
  std::vector<std::string> compare{};  // --compare A.toml B.toml ...: one run per policy file
  std::string svg{};                   // --svg FILE: utilisation and queue over time
  std::string gpu_sharing{};           // --gpu-sharing shared|mps|exclusive: every GPU; "" = spec's
  bool no_departures = false;          // --no-departures: inflation (jobs never end)
  double inflate_to = 0;               // --inflate-to X: resample the trace to X x capacity
  std::string idle_power_after{};      // --idle-power-after D: idle power caps (idle_power.h)
  int forecast_lead_hours = 2;         // --forecast-lead-hours H: how far ahead caps are lifted
};

// Runs one simulation (or, with --compare, one per policy file on the same trace and cluster)
// and writes its outputs: the summary (or the comparison table) to stdout, the per-job CSV and
// the SVG to their files, a line per run with the wall time to stderr. Errors name the flag or
// file and the fix.
Status RunSim(const SimCommandOptions& options);

// Registers `sim`; its callback sets `exit_code` (0, or 1 after printing the error).
void AddSimCommand(CLI::App& app, int& exit_code);

}  // namespace gf::sim
