// What both gpufleet executables share about the command line: the global options, the job's
// command after "--", and parsing with gpufleet's exit codes (docs/decisions/0011).
//
// `gpufleet` (client_main.cpp) is the small client users type: it declares the global options
// and the client commands (submit, queue, ...) and runs those itself; any other command line
// (up, server, agent, sim, tune, backup, --help, --version, a mistyped word) it hands, unchanged,
// to `gpufleetd` (main.cpp), which declares every command. Both declare the global options and
// the client commands with the functions here and in src/cli, so a client command parses the
// same in either. Plain functions; nothing here is shared between threads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/client_commands.h"

namespace gf {

// A flag that names a file, a folder, a server or a node: "" would quietly mean its default
// (`--data-dir "$UNSET"` another instance's data dir, `--config ""` the stock settings), so it
// is refused as the settings file refuses "".
extern const CLI::Validator kNotEmpty;

// The words --log-level takes: spdlog's level names (spdlog::level::from_str), listed here so
// that the client, which does not log, checks them without linking spdlog.
bool IsLogLevel(const std::string& word);

// The global options (--socket, --server, --token-file, --ca-file, --log-level) on `app`,
// each checked by a validator, which CLI11 runs before any subcommand's callback: a bad one
// must stop gpufleet before a command acts (issue #20: `--log-level bogus submit` submitted
// the job, then exited 2, and a retrying script submitted twice).
void AddGlobalOptions(CLI::App& app, ClientContext& client, std::string& log_level);

// The commands the client runs itself, on `app`: those of src/cli (submit, queue, show, ...,
// token, node, notify, report, top). Both executables declare them with this one call.
void AddClientSideCommands(CLI::App& app, ClientContext& client);

// The command line after argv[0], with everything after the first "--" (a job's command) moved
// into `client.command_after_dashes`, so that its words are never taken for gpufleet's options.
std::vector<std::string> SplitJobCommand(int argc, char** argv, ClientContext& client);

// The command of `args` (SplitJobCommand's): the first word after the global options of `app`
// that take a value and their values ("submit" in `gpufleet --socket S submit -- true`).
// nullopt when there is none, or when a flag (--help, --version) or an unknown option comes
// before it: then the line is about gpufleet as a whole.
std::optional<std::string> CommandWord(CLI::App& app, const std::vector<std::string>& args);

// Whether `app` has a command called `name`.
bool HasCommand(CLI::App& app, const std::string& name);

// Parses `args` into `app`, whose client commands run as CLI11 callbacks inside the parse. Sets
// spdlog's level first when `set_log_level` is given (the client does not log). Returns the exit
// code when parsing ended the run: 0 for --help and --version, 2 for bad usage (with CLI11's
// message, or UnknownCommandMessage for a word that is no command); nullopt when a command was
// parsed and the caller runs it (or a client command ran: client.exit_code holds its code).
std::optional<int> ParseCommandLine(CLI::App& app,
                                    ClientContext& client,
                                    const std::string& log_level,
                                    void (*set_log_level)(const std::string& level),
                                    std::vector<std::string> args);

// Both executables' main: `run(argc, argv)` inside the boundary for exceptions no module caught
// (bad_alloc, a library's own), reported as "gpufleet: internal error: ..." with exit code 1
// rather than left to std::terminate.
int RunGuarded(int (*run)(int argc, char** argv), int argc, char** argv);

}  // namespace gf
