// SubmitRequest: what `gpufleet submit` sends, built from flags and #GPUFLEET directives.
//
// A script's directives are lines `#GPUFLEET --gpus=2 --time=1h` at its top (as #SBATCH);
// options given on the command line override them. Plain functions; no shared state.
#pragma once

#include <istream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "model/job.h"
#include "model/terminal.h"
#include "service/service.h"

namespace gf {

struct SubmitOptions {
  std::optional<std::string> gpus;   // text as typed, so errors can quote it
  std::optional<std::string> nodes;  // --nodes N: a multi-node job, `gpus` GPUs on each node
  std::optional<std::string> gpu_type;
  // --gpu-share 0.25 / --gpu-mem 20G: a part of one GPU (issue #7), text as typed.
  std::optional<std::string> gpu_share;
  std::optional<std::string> gpu_mem;
  // --mig 3g.40gb: a MIG device of that profile (issue #7).
  std::optional<std::string> mig;
  // --cpus 8 / --mem 64G: host CPUs and memory on each node (issue #24; Slurm's
  // --cpus-per-task and --mem), text as typed.
  std::optional<std::string> cpus;
  std::optional<std::string> mem;
  std::optional<std::string> priority;
  std::optional<std::string> team;
  std::optional<std::string> time;
  std::optional<std::string> checkpoint_signal;  // USR1, SIGUSR1, 10, ...
  // --requeue / --no-requeue; nullopt = the server's default (requeue).
  std::optional<bool> requeue;
  // --interactive (a notebook or shell: the idle reaper's interactive threshold); nullopt = no.
  std::optional<bool> interactive;
  // --reap / --no-reap (opt out of idle reaping, where the class allows); nullopt = reaped.
  std::optional<bool> reap;
  std::optional<std::string> name;
  std::optional<std::string> workdir;
  std::vector<std::string> after;    // JOB[:ok], each possibly a comma-separated list
  std::optional<std::string> array;  // 0-99%4, 1,3,5-7, 0-15:4
  std::vector<std::string> env;      // KEY=VALUE
  // KEY=VALUE node labels the job needs (repeatable); a later one for the same key wins.
  std::vector<std::string> constraints;
  // --export as sbatch has it: ALL (the default: the submitter's environment goes along),
  // NONE, or NAME=VALUE / NAME items after ALL or alone (ParseExportSpec).
  std::optional<std::string> export_env;
  // #SBATCH --mail-user / --mail-type (issue #23): once the job is submitted, a subscription to
  // it (`gpufleet notify add --job ID --email USER --events EVENTS`); events as gpufleet names
  // them, comma-separated ("" = none: no subscription). Not flags of `gpufleet submit`.
  std::optional<std::string> mail_user;
  std::optional<std::string> mail_events;
  // --output / --error: the job's own stdout / stderr file, a pattern such as slurm-%j.out
  // (model/output_pattern.h); unset = gpufleet's log (gpufleet logs).
  std::optional<std::string> output;
  std::optional<std::string> error;
  // `gpufleet run`: the job runs on a terminal of this first size (model/terminal.h; the job's
  // GPUFLEET_PTY). Not a flag: `run` sets it from the user's terminal.
  std::optional<TerminalSize> terminal;
  std::vector<std::string> command;
  // True when `command` came after '--' (gpufleet submit [OPTIONS] -- CMD ARGS): its first word
  // is then a command, found as a shell finds it, not a script in the current directory.
  bool command_after_dashes = false;
};

// The script a submission runs, as an absolute path, or nullopt when its first word is a
// command. A first word with a '/' that names a regular file is a script in either form. A bare
// name is a script only in the SCRIPT form (no '--') and when it names a regular file in `cwd`,
// the submitter's working directory, as sbatch finds its script; after '--' a bare name stays a
// command, looked up on PATH as a shell would.
std::optional<std::string> ScriptPath(const SubmitOptions& options, const std::string& cwd);

// Fills the fields of `into` that are unset with those of `from`: options given in a place
// that wins (the command line) keep their value over one that yields (a #GPUFLEET or #SBATCH
// line). The lists add up, `from`'s first (its --env given first, so `into`'s wins).
void FillUnset(SubmitOptions& into, const SubmitOptions& from);

// --export: "ALL", "NONE", "ALL,NAME=VALUE,NAME", "NAME=VALUE,NAME" (sbatch's forms). Without
// ALL only the named variables go along; a bare NAME takes the submitter's value (and is left
// out when the submitter has none).
struct ExportSpec {
  bool all = true;
  std::vector<std::pair<std::string, std::optional<std::string>>> variables;
};
// Errors: kInvalidArgument "--export: ..." naming the item and the forms.
Result<ExportSpec> ParseExportSpec(const std::string& text);

// `--after` values: "12", "12:ok", "12,13:ok" (and ":any", the default), as Slurm's
// afterany / afterok. Errors: kInvalidArgument naming --after and the fix.
Result<std::vector<Dependency>> ParseAfter(const std::vector<std::string>& values);

// `--array` text: comma-separated items, each INDEX, FIRST-LAST or FIRST-LAST:STEP, then
// optionally %N (at most N tasks at once). Indices come out sorted, each once. At most
// kMaxArrayTasks tasks, indices 0..kMaxArrayIndex (service/service.h); counted before anything is
// expanded, so "0-2000000000" fails at once. Errors: kInvalidArgument naming --array.
Result<ArrayRequest> ParseArraySpec(const std::string& text);

// Checks every option and builds the JSON body of POST /api/v1/jobs. `cwd` is the default
// workdir; `environ_vars` the submitter's environment (used with --export ALL).
// Errors: kInvalidArgument naming the option and the fix.
Result<nlohmann::json> BuildSubmitBody(const SubmitOptions& options,
                                       const std::string& cwd,
                                       const std::map<std::string, std::string>& environ_vars);

}  // namespace gf
