// gpufleet: the command users type. A small client: it runs the client commands (submit, queue,
// show, cancel, top, token, ...) itself, over the API, and hands every other command line (up,
// server, agent, sim, tune, backup, restore, --help, --version, a mistyped word) unchanged to
// gpufleetd, the executable with every command, by exec: same process, same arguments, same
// exit code, so `gpufleet up` under systemd is `gpufleet up` as before.
//
// Why two executables (docs/decisions/0011): a `gpufleet submit` process is started once per job
// by users' scripts, and most of its time went to the dynamic loader bringing in what only the
// daemons use (libpq with GnuTLS, LDAP and Kerberos; SQLite; spdlog) from a very large binary.
// This one links the client commands and the API client, and nothing from the store, the
// controller, the agent or the simulator.
#include <cerrno>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "cli/client_commands.h"
#include "core/result.h"

#include "command_line.h"

namespace {

// Where gpufleetd is, relative to this executable's folder: beside it in the build tree, and in
// GF_LIBEXEC_FROM_BIN (../libexec/gpufleet) when installed, whatever the prefix.
std::vector<std::filesystem::path> ServerSideCandidates() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return {};
  }
  const std::filesystem::path dir = self.parent_path();
  return {dir / "gpufleetd", (dir / GF_LIBEXEC_FROM_BIN / "gpufleetd").lexically_normal()};
}

// Replaces this process with gpufleetd and the same arguments; returns only when it cannot.
int ExecServerSide(char** argv) {
  const std::vector<std::filesystem::path> candidates = ServerSideCandidates();
  std::string tried;
  for (const std::filesystem::path& path : candidates) {
    if (access(path.c_str(), X_OK) == 0) {
      execv(path.c_str(), argv);
      const int err = errno;
      std::cerr << "gpufleet: cannot run " << path.string() << ": " << gf::ErrnoText(err) << '\n';
      return 1;
    }
    tried += (tried.empty() ? "" : ", ") + path.string();
  }
  std::cerr << "gpufleet: this command is run by gpufleetd, which is not installed with this "
               "gpufleet (looked for "
            << (tried.empty() ? std::string("it beside /proc/self/exe") : tried)
            << "); reinstall the gpufleet package\n";
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app("gpufleet: a GPU compute manager — queue, place, share and watch GPU work",
               "gpufleet");
  app.require_subcommand(1);
  gf::ClientContext client;
  std::string log_level = "info";
  gf::AddGlobalOptions(app, client, log_level);
  gf::AddClientSideCommands(app, client);

  std::vector<std::string> args = gf::SplitJobCommand(argc, argv, client);
  const std::optional<std::string> command = gf::CommandWord(app, args);
  if (!command || !gf::HasCommand(app, *command)) {
    return ExecServerSide(argv);
  }
  if (std::optional<int> rc =
          gf::ParseCommandLine(app, client, log_level, nullptr, std::move(args))) {
    return *rc;
  }
  return client.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  return gf::RunGuarded(Main, argc, argv);
}
