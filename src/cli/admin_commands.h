// The administration subcommands (issue #6): `gpufleet token create|list|revoke`,
// `gpufleet node token create`, `gpufleet node drain|resume`. Same rules as client_commands.h:
// they talk to the server over the API and print a table, or JSON with --json.
#pragma once

#include "cli/client_commands.h"

namespace gf {

void AddAdminCommands(CLI::App& app, ClientContext& context);

}  // namespace gf
