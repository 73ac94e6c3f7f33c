// gpufleet: one binary for the whole product. This file only declares the flags and wires
// the subcommands to the modules that do the work.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <iostream>

#include <spdlog/spdlog.h>

#include "cli/client_commands.h"
#include "cli/top.h"
#include "executor/executor.h"
#include "sim/sim_command.h"
#include "up.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app("gpufleet: a GPU compute manager — queue, place, share and watch GPU work",
               "gpufleet");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("gpufleet ") + GF_VERSION);
  gf::ClientContext client;
  app.add_option("--socket", client.socket, "API socket of the gpufleet to talk to")
      ->envname("GPUFLEET_SOCKET");
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");

  gf::UpOptions up;
  auto* up_cmd = app.add_subcommand("up", "run gpufleet on this server (controller + agent + API)");
  up_cmd->add_option("--config", up.config,
                     "settings file (default /etc/gpufleet/gpufleet.toml when it exists)");
  up_cmd->add_option("--gpus", up.gpus, "nvml (real GPUs), nvml:PATH, or sim:4xH100-80GB")
      ->capture_default_str();
  up_cmd->add_option("--data-dir", up.data_dir,
                     "state and job logs (default /var/lib/gpufleet, or ~/.local/share/gpufleet)");
  up_cmd->add_option("--listen-socket", up.socket, "Unix socket to listen on (default: see docs)");
  up_cmd->add_option("--host", up.host, "TCP address to listen on")->capture_default_str();
  up_cmd->add_option("--port", up.port, "TCP port (0 = any free port, -1 = none)")
      ->capture_default_str();
  up_cmd->add_option("--kill-grace", up.kill_grace_s, "seconds between SIGTERM and SIGKILL")
      ->capture_default_str()
      ->check(CLI::Range(0, gf::kMaxKillGraceS));
  up_cmd->add_option("--node-name", up.node_name, "this node's name (default: hostname)");
  up_cmd->add_option("--label", up.labels,
                     "KEY=VALUE label of this node, for jobs' --constraint (repeatable)");
  up_cmd->add_option("--sample-interval", up.sample_interval,
                     "how often GPUs are sampled (1s .. 1h)")
      ->capture_default_str();
  up_cmd->add_option("--no-process-after", up.no_process_after,
                     "report a GPU held by a job with no process on it after this long")
      ->capture_default_str();

  std::string job_dir;
  auto* shim = app.add_subcommand("shim", "internal: supervise one job (started by the agent)");
  shim->group("");  // hidden from --help
  shim->add_option("--job-dir", job_dir)->required();

  gf::AddClientCommands(app, client);
  gf::AddTopCommand(app, client);
  gf::sim::AddSimCommand(app, client.exit_code);

  // Everything after the first "--" is a job's command: kept away from CLI11, so that its
  // words are never taken for gpufleet's options.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto dashes = std::find(args.begin(), args.end(), "--"); dashes != args.end()) {
    client.command_after_dashes.emplace(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // --help/--version exit 0; bad usage exits 2
  }
  // up and shim run after parsing (not as CLI11 callbacks) so that --log-level applies first.
  auto level = spdlog::level::from_str(log_level);
  if (level == spdlog::level::off && log_level != "off") {
    std::cerr << "gpufleet: --log-level: '" << log_level
              << "' is not a level; use trace, debug, info, warn or error\n";
    return 2;
  }
  spdlog::set_level(level);
  if (client.command_after_dashes && !app.got_subcommand("submit")) {
    std::cerr << "gpufleet: '--' is only for gpufleet submit -- CMD ARGS\n";
    return 2;
  }
  if (up_cmd->parsed()) {
    for (const CLI::Option* option : up_cmd->get_options()) {
      if (option->count() > 0) {
        up.flags_given.insert(option->get_name());
      }
    }
    return gf::RunUp(up);
  }
  if (shim->parsed()) {
    return gf::ShimMain(job_dir);
  }
  return client.exit_code;
}

}  // namespace

// The boundary for exceptions no module caught (bad_alloc, a library's own): reported, not
// left to std::terminate.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gpufleet: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "gpufleet: internal error: unknown exception\n";
  }
  return 1;
}
