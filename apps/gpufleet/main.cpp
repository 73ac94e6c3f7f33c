// gpufleet: one binary for the whole product. This file only declares the flags and wires
// the subcommands to the modules that do the work.
#include <algorithm>
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/admin_commands.h"
#include "cli/client_commands.h"
#include "cli/command_names.h"
#include "cli/man_page.h"
#include "cli/notify_commands.h"
#include "cli/report_command.h"
#include "cli/top.h"
#include "executor/executor.h"
#include "sim/sim_command.h"
#include "store/schema_steps.h"

#include "backup.h"
#include "cluster.h"
#include "daemon.h"
#include "tune/tune_command.h"
#include "up.h"

namespace {

// A flag that names a file, a folder, a server or a node: "" would quietly mean its default
// (`--data-dir "$UNSET"` another instance's data dir, `--config ""` the stock settings), so it
// is refused as the settings file refuses "".
const CLI::Validator kNotEmpty(
    [](const std::string& value) {
      return value.empty() ? std::string("an empty value; give one, or leave the flag out")
                           : std::string();
    },
    "");

// --log-level: checked while parsing, so that a bad level stops gpufleet before any command
// runs (client commands run as CLI11 callbacks, inside app.parse).
const CLI::Validator kLogLevel(
    [](const std::string& value) {
      if (spdlog::level::from_str(value) == spdlog::level::off && value != "off") {
        return "'" + value + "' is not a level; use trace, debug, info, warn or error";
      }
      return std::string();
    },
    "");

// The word a user typed as a command when gpufleet knows none by that name (`gpufleet hold 21`),
// once parsing failed: CLI11 keeps it among the unparsed words and only says that a subcommand
// is required, which sends the user looking for a missing word instead of a wrong one.
std::optional<std::string> UnknownCommand(CLI::App& app) {
  if (!app.get_subcommands().empty()) {
    return std::nullopt;
  }
  for (const std::string& word : app.remaining()) {
    if (word.rfind('-', 0) != 0) {
      return word;
    }
  }
  return std::nullopt;
}

// The commands `gpufleet --help` lists (not the internal, hidden ones), sorted.
std::vector<std::string> VisibleCommands(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* command :
       app.get_subcommands([](const CLI::App* c) { return !c->get_group().empty(); })) {
    names.push_back(command->get_name());
  }
  std::sort(names.begin(), names.end());
  return names;
}

int Main(int argc, char** argv) {
  CLI::App app("gpufleet: a GPU compute manager — queue, place, share and watch GPU work",
               "gpufleet");
  app.require_subcommand(1);
  // The schema too: what an admin compares before an upgrade or a restore (docs/install.md).
  app.set_version_flag("--version",
                       std::string("gpufleet ") + GF_VERSION + " (database schema " +
                           std::to_string(gf::LatestSchemaVersion()) + ")");
  gf::ClientContext client;
  // Client settings: the environment and ~/.config/gpufleet/client.toml fill in what these
  // leave out (src/cli/client_settings.h), so they carry no envname here.
  // Every global option is checked by a validator, which CLI11 runs before any subcommand's
  // callback: a bad one must stop gpufleet before a command acts (issue #20: `--log-level
  // bogus submit` submitted the job, then exited 2, and a retrying script submitted twice).
  app.add_option(
         "--socket", client.flags.socket, "API socket of a local gpufleet (env GPUFLEET_SOCKET)")
      ->check(kNotEmpty);
  app.add_option("--server",
                 client.flags.server,
                 "URL[,URL...] of the gpufleet servers, tried in order: https://HOST:PORT or "
                 "http://HOST:PORT (env GPUFLEET_SERVER)")
      ->check(kNotEmpty);
  app.add_option("--token-file",
                 client.flags.token_file,
                 "file holding your API token, readable by you alone (env GPUFLEET_TOKEN_FILE, "
                 "or GPUFLEET_TOKEN with the token itself)")
      ->check(kNotEmpty);
  app.add_option("--ca-file",
                 client.flags.ca_file,
                 "PEM file of the CA that signed the servers' certificates (env "
                 "GPUFLEET_CA_FILE; default: the system's CAs)")
      ->check(kNotEmpty);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")->check(kLogLevel);

  gf::UpOptions up;
  auto* up_cmd = app.add_subcommand("up", "run gpufleet on this server (controller + agent + API)");
  up_cmd
      ->add_option("--config",
                   up.config,
                   "settings file (default /etc/gpufleet/gpufleet.toml when it exists)")
      ->check(kNotEmpty);
  up_cmd->add_option("--gpus", up.gpus, "nvml (real GPUs), nvml:PATH, or sim:4xH100-80GB")
      ->capture_default_str();
  up_cmd
      ->add_option("--data-dir",
                   up.data_dir,
                   "state and job logs (default /var/lib/gpufleet, or ~/.local/share/gpufleet)")
      ->check(kNotEmpty);
  up_cmd
      ->add_option("--db",
                   up.db,
                   "the store: a SQLite file (default DATA_DIR/state.db), sqlite:PATH, or "
                   "postgresql://USER@HOST:PORT/DB[?schema=NAME]")
      ->check(kNotEmpty);
  up_cmd->add_option("--listen-socket", up.socket, "Unix socket to listen on (default: see docs)")
      ->check(kNotEmpty);
  up_cmd->add_option("--host", up.host, "TCP address to listen on")->capture_default_str();
  up_cmd->add_option("--port", up.port, "TCP port (0 = any free port, -1 = none)")
      ->capture_default_str();
  up_cmd->add_option("--tls-cert", up.tls_cert, "PEM certificate: the TCP port speaks TLS only")
      ->check(kNotEmpty);
  up_cmd->add_option("--tls-key", up.tls_key, "PEM private key of --tls-cert")->check(kNotEmpty);
  up_cmd->add_option("--kill-grace", up.kill_grace_s, "seconds between SIGTERM and SIGKILL")
      ->capture_default_str()
      ->check(CLI::Range(0, gf::kMaxKillGraceS));
  up_cmd->add_option("--node-name", up.node_name, "this node's name (default: hostname)")
      ->check(kNotEmpty);
  up_cmd->add_option(
      "--label", up.labels, "KEY=VALUE label of this node, for jobs' --constraint (repeatable)");
  up_cmd->add_option("--node-cpus", up.node_cpus, "CPUs of this node (default: online CPUs)");
  up_cmd->add_option("--node-mem", up.node_mem, "memory of this node: 256G (default: MemTotal)");
  up_cmd->add_option(
      "--reserve-cpus", up.reserve_cpus, "CPUs kept from jobs' --cpus for the system (default 0)");
  up_cmd->add_option("--reserve-mem",
                     up.reserve_mem,
                     "memory kept from jobs' --mem for the system (default: a tenth, at most 4G)");
  up_cmd
      ->add_option("--sample-interval", up.sample_interval, "how often GPUs are sampled (1s .. 1h)")
      ->capture_default_str();
  up_cmd
      ->add_option("--no-process-after",
                   up.no_process_after,
                   "report a GPU held by a job with no process on it after this long")
      ->capture_default_str();
  up_cmd
      ->add_option("--idle-power-limit",
                   up.idle_power_limit_w,
                   "cap GPUs without a job to this many watts (needs root; 0 = off)")
      ->capture_default_str();
  up_cmd
      ->add_option("--idle-power-after",
                   up.idle_power_after,
                   "how long a GPU is without a job before it is capped (1s .. 24h)")
      ->capture_default_str();
  up_cmd->add_option("--gpu-self-test",
                     up.gpu_self_test,
                     "shell command run on a failed GPU with no process; exit 0 returns it");
  up_cmd
      ->add_option("--mps-control",
                   up.mps_control,
                   "MPS control program for GPUs in mps mode: auto (nvidia-cuda-mps-control "
                   "with NVIDIA GPUs), none, or a path")
      ->capture_default_str();
  up_cmd
      ->add_option("--gpu-self-test-interval",
                   up.gpu_self_test_interval,
                   "how often a failed GPU is tested (1m .. 7d)")
      ->capture_default_str();

  gf::ServerOptions server;
  auto* server_cmd =
      app.add_subcommand("server", "run the controller of a cluster; node agents join it");
  server_cmd
      ->add_option("--config",
                   server.config,
                   "settings file: classes, teams, quotas (default /etc/gpufleet/gpufleet.toml)")
      ->check(kNotEmpty);
  server_cmd->add_option("--data-dir", server.data_dir, "state (default /var/lib/gpufleet)")
      ->check(kNotEmpty);
  server_cmd
      ->add_option("--db",
                   server.db,
                   "the store: sqlite:PATH (default: state.db in --data-dir) or "
                   "postgresql://USER@HOST/DB for several servers")
      ->check(kNotEmpty);
  server_cmd->add_option("--listen-socket", server.socket, "Unix socket to listen on")
      ->check(kNotEmpty);
  server_cmd->add_option("--host", server.host, "TCP address to listen on (0.0.0.0: all)")
      ->capture_default_str();
  server_cmd->add_option("--port", server.port, "TCP port (0 = any free port)")
      ->capture_default_str();
  server_cmd->add_option("--tls-cert", server.tls_cert, "PEM certificate: TCP speaks TLS only")
      ->check(kNotEmpty);
  server_cmd->add_option("--tls-key", server.tls_key, "PEM private key of --tls-cert")
      ->check(kNotEmpty);
  server_cmd->add_option("--heartbeat", server.heartbeat, "how often idle agents report")
      ->capture_default_str();
  server_cmd
      ->add_option("--node-timeout",
                   server.node_timeout,
                   "a node whose agent is silent this long is down; its jobs requeue")
      ->capture_default_str();
  server_cmd
      ->add_option("--lease-ttl",
                   server.lease_ttl,
                   "servers on one database: a standby leads this long after the "
                   "leader's last renewal")
      ->capture_default_str();
  server_cmd->add_option("--kill-grace", server.kill_grace_s, "seconds between SIGTERM and SIGKILL")
      ->capture_default_str()
      ->check(CLI::Range(0, gf::kMaxKillGraceS));

  gf::AgentOptions agent;
  auto* agent_cmd = app.add_subcommand("agent", "run this node's agent, joined to a server");
  agent_cmd
      ->add_option("--server",
                   agent.servers,
                   "server URL(s), comma-separated: https://head:7460[,https://standby:7460]")
      ->required();
  agent_cmd
      ->add_option("--token-file",
                   agent.token_file,
                   "file holding this node's token (gpufleet node token create)")
      ->check(kNotEmpty);
  agent_cmd->add_option("--ca-file", agent.ca_file, "CA certificate of the server's TLS cert")
      ->check(kNotEmpty);
  agent_cmd->add_option("--gpus", agent.gpus, "nvml (real GPUs), nvml:PATH, or sim:4xH100-80GB")
      ->capture_default_str();
  agent_cmd
      ->add_option(
          "--data-dir", agent.data_dir, "job folders and logs (default /var/lib/gpufleet/agent)")
      ->check(kNotEmpty);
  agent_cmd->add_option("--node-name", agent.node_name, "this node's name (default: hostname)")
      ->check(kNotEmpty);
  agent_cmd->add_option("--label", agent.labels, "KEY=VALUE label of this node (repeatable)");
  agent_cmd->add_option("--node-cpus", agent.node_cpus, "CPUs of this node (default: online CPUs)");
  agent_cmd->add_option(
      "--node-mem", agent.node_mem, "memory of this node: 256G (default: MemTotal)");
  agent_cmd->add_option("--reserve-cpus",
                        agent.reserve_cpus,
                        "CPUs kept from jobs' --cpus for the system (default 0)");
  agent_cmd->add_option(
      "--reserve-mem",
      agent.reserve_mem,
      "memory kept from jobs' --mem for the system (default: a tenth, at most 4G)");
  agent_cmd
      ->add_option(
          "--sample-interval", agent.sample_interval, "how often GPUs are sampled (1s .. 1h)")
      ->capture_default_str();
  agent_cmd
      ->add_option("--idle-power-limit",
                   agent.idle_power_limit_w,
                   "cap GPUs without a job to this many watts (needs root; 0 = off)")
      ->capture_default_str();
  agent_cmd
      ->add_option("--idle-power-after",
                   agent.idle_power_after,
                   "how long a GPU is without a job before it is capped (1s .. 24h)")
      ->capture_default_str();
  agent_cmd->add_option("--gpu-self-test",
                        agent.gpu_self_test,
                        "shell command run on a failed GPU with no process; exit 0 returns it");
  agent_cmd
      ->add_option("--mps-control",
                   agent.mps_control,
                   "MPS control program for GPUs in mps mode: auto (nvidia-cuda-mps-control "
                   "with NVIDIA GPUs), none, or a path")
      ->capture_default_str();
  agent_cmd
      ->add_option("--gpu-self-test-interval",
                   agent.gpu_self_test_interval,
                   "how often a failed GPU is tested (1m .. 7d)")
      ->capture_default_str();

  gf::StoreFileOptions backup;
  auto* backup_cmd = app.add_subcommand(
      "backup", "copy this machine's SQLite store to a file, while gpufleet runs or not");
  gf::StoreFileOptions restore;
  auto* restore_cmd = app.add_subcommand(
      "restore", "replace this machine's SQLite store with a backup (gpufleet stopped)");
  for (auto [command, options] :
       {std::pair{backup_cmd, &backup}, std::pair{restore_cmd, &restore}}) {
    command
        ->add_option("--config",
                     options->config,
                     "settings file whose [up] data_dir and db name the store (default "
                     "/etc/gpufleet/gpufleet.toml when it exists)")
        ->check(kNotEmpty);
    command->add_option("--data-dir", options->data_dir, "the daemon's data dir")->check(kNotEmpty);
    command->add_option("--db", options->db, "the daemon's --db (default DATA_DIR/state.db)")
        ->check(kNotEmpty);
  }
  backup_cmd->add_option("--output", backup.file, "the file to write (replaced if it exists)")
      ->required()
      ->check(kNotEmpty);
  restore_cmd->add_option("--input", restore.file, "a file gpufleet backup wrote")
      ->required()
      ->check(kNotEmpty);

  std::string job_dir;
  auto* shim = app.add_subcommand("shim", "internal: supervise one job (started by the agent)");
  shim->group("");  // hidden from --help
  shim->add_option("--job-dir", job_dir)->required();
  int shim_server_fd = -1;
  auto* shim_server = app.add_subcommand(
      "shim-server", "internal: start shims by fork for the agent (ExecutorOptions::fork_server)");
  shim_server->group("");  // hidden from --help
  shim_server->add_option("--fd", shim_server_fd, "the agent's socket")->required();

  // The manual page, from the commands above and below (gpufleet.1.gz, built with the binary).
  auto* man_page = app.add_subcommand("man-page", "internal: print the gpufleet(1) manual page");
  man_page->group("");  // hidden from --help

  gf::AddClientCommands(app, client);
  gf::AddAdminCommands(app, client);
  gf::AddNotifyCommands(app, client);
  gf::AddReportCommand(app, client);
  gf::AddTopCommand(app, client);
  gf::sim::AddSimCommand(app, client.exit_code);
  gf::tune::AddTuneCommand(app,
                           client.exit_code,
                           gf::tune::TuneEnvironment{.settings_file = gf::SettingsFile,
                                                     .default_data_dir = gf::DefaultDataDir,
                                                     .progress = false});

  // Everything after the first "--" is a job's command: kept away from CLI11, so that its
  // words are never taken for gpufleet's options.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto dashes = std::find(args.begin(), args.end(), "--"); dashes != args.end()) {
    client.command_after_dashes.emplace(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }
  // Runs once every option is parsed and validated, before any subcommand's callback: what
  // holds for every command is settled here, not after one has already run.
  app.parse_complete_callback([&app, &client, &log_level] {
    spdlog::set_level(spdlog::level::from_str(log_level));  // checked by kLogLevel
    gf::EscapeControlInLogs();
    if (client.command_after_dashes && !app.got_subcommand("submit")) {
      throw CLI::ValidationError("--",
                                 "only gpufleet submit takes a command after it "
                                 "(gpufleet submit [OPTIONS] -- CMD ARGS)");
    }
  });
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (const std::optional<std::string> word = UnknownCommand(app)) {
      std::cerr << "gpufleet: " << gf::UnknownCommandMessage(*word, VisibleCommands(app)) << '\n';
      return 2;
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // --help/--version exit 0; bad usage exits 2
  }
  if (up_cmd->parsed()) {
    for (const CLI::Option* option : up_cmd->get_options()) {
      if (option->count() > 0) {
        up.flags_given.insert(option->get_name());
      }
    }
    return gf::RunUp(up);
  }
  if (server_cmd->parsed()) {
    return gf::RunServer(server);
  }
  if (agent_cmd->parsed()) {
    return gf::RunAgent(agent);
  }
  if (man_page->parsed()) {
    std::cout << gf::ManPage(app, GF_VERSION);
    return 0;
  }
  if (backup_cmd->parsed()) {
    return gf::RunBackup(backup);
  }
  if (restore_cmd->parsed()) {
    return gf::RunRestore(restore);
  }
  if (shim->parsed()) {
    return gf::ShimMain(job_dir);
  }
  if (shim_server->parsed()) {
    return gf::ShimServerMain(shim_server_fd);
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
