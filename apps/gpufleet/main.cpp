// gpufleetd: every gpufleet command, the daemons (up, server, agent, shim) and the local tools
// (sim, tune, backup, restore) with the client commands. Users type `gpufleet`, the small client
// (client_main.cpp), which runs the client commands itself and execs this binary, installed in
// libexec, for the rest (docs/decisions/0011). This file only declares the flags and wires the
// subcommands to the modules that do the work.
#include <algorithm>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/client_commands.h"
#include "cli/man_page.h"
#include "executor/executor.h"
#include "sim/sim_command.h"
#include "store/schema_steps.h"

#include "backup.h"
#include "cluster.h"
#include "command_line.h"
#include "daemon.h"
#include "tune/tune_command.h"
#include "up.h"

namespace {

// The full daemon logs through spdlog: every line escaped (daemon.h).
void SetLogLevel(const std::string& level) {
  spdlog::set_level(spdlog::level::from_str(level));
  gf::EscapeControlInLogs();
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
  std::string log_level = "info";
  gf::AddGlobalOptions(app, client, log_level);
  using gf::kNotEmpty;

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
  server_cmd->add_flag("--slurm",
                       server.slurm,
                       "companion mode on a Slurm cluster: follow Slurm's jobs (scontrol), "
                       "schedule nothing, act through Slurm (docs/slurm.md)");
  server_cmd
      ->add_option("--slurm-poll", server.slurm_poll, "--slurm: how often Slurm's jobs are read")
      ->capture_default_str();
  server_cmd
      ->add_flag("--kubernetes",
                 server.kubernetes,
                 "beside Kubernetes: the pods that hold GPUs (as --kubernetes agents report "
                 "them) are the jobs; schedule nothing, stop no pod (docs/kubernetes.md)")
      ->excludes("--slurm");
  server_cmd->add_option("--kube-api",
                         server.kube_api,
                         "--kubernetes: the API server that names pods' service accounts and "
                         "workloads, https://HOST:PORT (default: in a pod, its cluster's)");
  server_cmd->add_option(
      "--kube-token-file", server.kube_token_file, "--kube-api: the bearer token's file");
  server_cmd->add_option(
      "--kube-ca-file", server.kube_ca_file, "--kube-api: the cluster's CA certificate");

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
  agent_cmd->add_flag("--slurm",
                      agent.slurm,
                      "beside slurmd: GPU processes belong to Slurm jobs (their cgroup or "
                      "SLURM_JOB_ID); --node-name is the node's Slurm name");
  agent_cmd
      ->add_flag("--kubernetes",
                 agent.kubernetes,
                 "on a Kubernetes node (a DaemonSet with hostPID): GPU processes belong to pods "
                 "(their cgroup, the kubelet's pod-resources and log names); reports the "
                 "node's pods that hold GPUs (docs/kubernetes.md)")
      ->excludes("--slurm");
  agent_cmd
      ->add_option("--pod-resources-socket",
                   agent.pod_resources_socket,
                   "--kubernetes: the kubelet's pod-resources socket")
      ->capture_default_str()
      ->check(kNotEmpty);
  agent_cmd
      ->add_option("--kubelet-logs",
                   agent.kubelet_logs,
                   "--kubernetes: the folder holding the kubelet's pods/ and containers/ logs")
      ->capture_default_str()
      ->check(kNotEmpty);
  agent_cmd
      ->add_option("--proc-root",
                   agent.proc_root,
                   "where the host's processes are read (the host's /proc mounted elsewhere)")
      ->capture_default_str()
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

  gf::AddClientSideCommands(app, client);
  gf::sim::AddSimCommand(app, client.exit_code);
  gf::tune::AddTuneCommand(app,
                           client.exit_code,
                           gf::tune::TuneEnvironment{.settings_file = gf::SettingsFile,
                                                     .default_data_dir = gf::DefaultDataDir,
                                                     .progress = false});

  if (std::optional<int> rc = gf::ParseCommandLine(
          app, client, log_level, SetLogLevel, gf::SplitJobCommand(argc, argv, client))) {
    return *rc;
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

int main(int argc, char** argv) {
  return gf::RunGuarded(Main, argc, argv);
}
