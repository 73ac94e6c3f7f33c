#include <unistd.h>

#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "api/api_server.h"
#include "api/socket_path.h"
#include "cluster.h"
#include "config/config.h"
#include "controller/agent_hub.h"
#include "controller/controller.h"
#include "core/duration.h"
#include "daemon.h"
#include "monitor/telemetry.h"
#include "store/open_store.h"

namespace gf {
namespace {

constexpr std::string_view kCommand = "server";

// The scheduling policy and teams of the settings file (the [up] keys are `up`'s own).
Result<Config> ReadPolicy(const std::string& flag) {
  std::string path = flag;
  if (path.empty() && std::filesystem::exists(std::string(kDefaultConfigPath))) {
    path = std::string(kDefaultConfigPath);
  }
  if (path.empty()) {
    return Config{};
  }
  return LoadConfig(path);
}

}  // namespace

int RunServer(const ServerOptions& options) {
  Result<Config> config = ReadPolicy(options.config);
  if (!config.ok()) {
    return Die(kCommand, config.error());
  }
  const sigset_t stop_signals = BlockStopSignals();
  const std::uint64_t open_files = RaiseOpenFileLimit();
  const SocketPathEnv socket_env = CurrentSocketPathEnv();
  auto heartbeat = ParseFlagDuration("--heartbeat", options.heartbeat, std::chrono::seconds(1),
                                     std::chrono::minutes(10));
  if (!heartbeat.ok()) {
    return Die(kCommand, heartbeat.error());
  }
  auto node_timeout = ParseFlagDuration("--node-timeout", options.node_timeout,
                                        std::chrono::seconds(2), std::chrono::hours(1));
  if (!node_timeout.ok()) {
    return Die(kCommand, node_timeout.error());
  }
  if (*node_timeout <= *heartbeat) {
    return Die(kCommand, InvalidArgument("--node-timeout (" + options.node_timeout +
                                         ") must be longer than --heartbeat (" +
                                         options.heartbeat + "), or every node goes down"));
  }
  const std::filesystem::path data_dir =
      options.data_dir.empty() ? DefaultDataDir() : std::filesystem::path(options.data_dir);
  Result<int> lock = LockDataDir(data_dir, kCommand);
  if (!lock.ok()) {
    return Die(kCommand, lock.error());
  }
  auto store = OpenStore(options.db, data_dir / "state.db");
  if (!store.ok()) {
    return Die(kCommand, store.error());
  }
  SystemClock clock;
  Telemetry telemetry;
  ControllerOptions copts;
  copts.telemetry = &telemetry;
  copts.kill_grace = std::chrono::seconds(options.kill_grace_s);
  copts.policy = config->policy;
  copts.team_of_user = config->team_of_user;
  copts.node_timeout = std::chrono::duration_cast<Millis>(*node_timeout);
  if (geteuid() != 0) {
    copts.only_uid = geteuid();
  }
  Controller controller(std::move(*store), clock, copts);
  if (Status s = controller.Load(); !s.ok()) {
    return Die(kCommand, s.error());
  }
  AgentHub hub(
      controller, [&controller](const NodeId& node, NodeAgent* agent) {
        controller.AttachAgent(node, agent);
      },
      AgentHubOptions{.heartbeat = *heartbeat, .node_timeout = *node_timeout});
  controller.Start();
  ApiServerOptions aopts;
  aopts.unix_socket_path = options.socket.empty() ? ServerSocketPath(socket_env) : options.socket;
  aopts.tcp_host = options.host;
  aopts.tcp_port = options.port;
  aopts.telemetry = &telemetry;
  aopts.tls_cert_file = options.tls_cert;
  aopts.tls_key_file = options.tls_key;
  aopts.agent_link = &hub;
  aopts.authenticate = [&controller](std::string_view token) {
    return controller.Authenticate(token);  // user and node tokens (gpufleet token create)
  };
  aopts.max_watches = 20'000;  // every agent holds a command stream
  aopts.worker_threads = 8;
  ApiServer server(controller, aopts);
  if (Status s = server.Start(); !s.ok()) {
    return Die(kCommand, s.error());
  }
  const std::string scheme = options.tls_cert.empty() ? "http" : "https";
  std::cout << "gpufleet server: state in " << DescribeStore(options.db, data_dir / "state.db")
            << "\n"
            << "  API socket: " << *aopts.unix_socket_path << "\n";
  if (server.tcp_port() > 0) {
    std::cout << "  API URL:    " << scheme << "://" << options.host << ":" << server.tcp_port()
              << "/api/v1\n";
  }
  std::cout << "  open files: up to " << open_files << " (two per agent)\n";
  std::cout << "Agents join with: gpufleet agent --server " << scheme << "://HOST:"
            << server.tcp_port() << " --token-file FILE" << std::endl;
  const int sig = WaitForStopSignal(stop_signals);
  spdlog::info("gpufleet server: signal {}, stopping (jobs keep running on their nodes)", sig);
  hub.Close();
  server.Stop();
  controller.Stop();
  close(*lock);
  return 0;
}

}  // namespace gf
