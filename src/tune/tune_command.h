// `gpufleet tune` (docs/tune.md): replays the cluster's recorded history (the store's finished
// jobs, or a trace file) through the simulator under the current policy and a handful of
// variants of it (candidates.h), measures each against the goals the admin states (goal.h),
// prints the table and the recommendation (choose.h), and writes the recommended policy as a
// settings file on request. Reads the store through a read-only connection and changes nothing
// in the running cluster. Runs in the calling process; the replays run side by side on
// `--jobs` threads (replay.h), the rest on the calling thread.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/result.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace gf::tune {

struct TuneCommandOptions {
  std::vector<std::string> goals{};  // --goal (repeatable), at least one
  std::string config{};              // --config: the settings file with the current policy
  std::string db{};                  // --db: the store; "" = [up] db, else DATA_DIR/state.db
  std::string data_dir{};            // --data-dir; "" = [up] data_dir, else the default
  std::string since = "7d";          // --since: the history of the jobs submitted this long ago
  std::string trace{};               // --trace FILE: replay a trace instead of the store
  std::string format{};              // --format normalized|tiresias; "" = from the header
  std::string cluster{};             // --cluster: as `gpufleet sim`'s; "" = the store's nodes
  std::string write{};               // --write FILE: the recommended policy's settings file
  bool json = false;                 // --json
  int jobs = 0;                      // --jobs: replays side by side; 0 = one per core
};

// What the binary knows that a module does not: where the settings file and the data are by
// default (apps/gpufleet/daemon.h SettingsFile and DefaultDataDir).
struct TuneEnvironment {
  std::function<std::string(const std::string&)> settings_file;  // --config's value → the file
  std::function<std::filesystem::path()> default_data_dir;
  bool progress = false;  // draw a progress bar on `err` (it is a terminal)
};

// Runs the tune: the table (or JSON) to `out`; the progress bar and a closing line with the
// wall time to `err`. Errors name the flag, the goal or the file and the fix; with --write,
// kFailedPrecondition when no candidate meets every goal (the table is printed, nothing is
// written).
Status RunTune(const TuneCommandOptions& options,
               const TuneEnvironment& environment,
               std::ostream& out,
               std::ostream& err);

// Registers `tune`; its callback sets `exit_code` (0, or 1 after printing the error).
void AddTuneCommand(CLI::App& app, int& exit_code, const TuneEnvironment& environment);

}  // namespace gf::tune
