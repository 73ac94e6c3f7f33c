// The client subcommands of gpufleet: submit, queue, show, explain, cancel, logs, nodes, gpus,
// and the job control ones (job_control_commands.h).
//
// AddClientCommands registers them on the binary's CLI11 app; each one talks to a running
// gpufleet over the API (ApiClient) and prints a table, or JSON with --json. Exit codes that
// scripts can trust: 0 done, 1 the server refused or could not be reached, 2 bad usage.
// Single-threaded, like the process that runs them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/client_settings.h"
#include "cli/submit_request.h"
#include "core/result.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace gf {

struct ClientContext {
  // --server, --socket, --token-file, --ca-file as given; the environment and the client
  // settings file fill in the rest (client_settings.h).
  ClientFlags flags;
  // The words after the first "--" of the command line (the job's command for submit). The
  // binary splits them off before CLI11 parses the rest, so they are never read as options.
  std::optional<std::vector<std::string>> command_after_dashes;
  int exit_code = 0;  // set by the subcommand that ran
};

// Where and how this command connects (client_settings.h, over the process environment).
Result<ClientSettings> ResolveSettings(const ClientContext& ctx);

// A client built from ResolveSettings; the error says which flag, variable or file is wrong.
Result<std::unique_ptr<ApiClient>> OpenClient(const ClientContext& ctx);

// Prints "gpufleet: MESSAGE" to stderr and returns the exit code for it: 2 for bad input (the
// caller can fix the command), 1 otherwise.
int Fail(const Error& e);

// GET `target` and print the answer: as JSON with --json, else through `render`. The exit code.
int RunRead(const ClientContext& ctx,
            const std::string& target,
            bool json,
            const std::function<void(const nlohmann::json&)>& render);

// `gpufleet submit SCRIPT`: fills the options of `o` the command line left unset from the
// script's #GPUFLEET lines, then from its #SBATCH lines (sbatch_script.h), read with the
// [slurm] tables `mapping` returns (called only for a script with #SBATCH lines). Precedence:
// the command line, then #GPUFLEET, then #SBATCH. Returns the warning line naming the #SBATCH
// directives not honoured ("" when none). Errors: kInvalidArgument naming the line, the
// directive and the fix; the mapping's errors.
Result<std::string> ApplyScriptDirectives(SubmitOptions& o,
                                          const std::string& cwd,
                                          const std::function<Result<SlurmMapping>()>& mapping);

// POSTs /api/v1/jobs/ID/`action` for each job named (an id or an array task ID_INDEX) and
// prints "Job 12: `done` (state PENDING)" for each. The exit code: 0 when every one was done.
int RunJobAction(const ClientContext& ctx,
                 const std::vector<std::string>& ids,
                 const std::string& action,
                 const std::string& done);

// The options of a job submission (--gpus, --time, --env, ...), shared by `submit` and `run`.
void AddSubmitOptions(CLI::App& cmd, SubmitOptions& o);

// The job's command of `submit` / `run` (`command` names it in messages): the words CLI11 left
// (`rest`), or those after '--'. Errors: kInvalidArgument for an unknown option or words on
// both sides of '--'.
Status TakeJobCommand(const ClientContext& ctx,
                      std::vector<std::string> rest,
                      std::string_view command,
                      SubmitOptions& o);

// This process's environment, as a submission sends it (--export=ALL).
std::map<std::string, std::string> CurrentEnvironment();

void AddClientCommands(CLI::App& app, ClientContext& context);

}  // namespace gf
