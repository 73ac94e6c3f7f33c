// The client subcommands of gpufleet: submit, queue, show, explain, cancel, logs, nodes, gpus.
//
// AddClientCommands registers them on the binary's CLI11 app; each one talks to a running
// gpufleet over the API (ApiClient) and prints a table, or JSON with --json. Exit codes that
// scripts can trust: 0 done, 1 the server refused or could not be reached, 2 bad usage.
// Single-threaded, like the process that runs them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/client_settings.h"
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
  int exit_code = 0;   // set by the subcommand that ran
};

// Where and how this command connects (client_settings.h, over the process environment).
Result<ClientSettings> ResolveSettings(const ClientContext& ctx);

// A client built from ResolveSettings; the error says which flag, variable or file is wrong.
Result<std::unique_ptr<ApiClient>> OpenClient(const ClientContext& ctx);

void AddClientCommands(CLI::App& app, ClientContext& context);

}  // namespace gf
