#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "api/api_server.h"
#include "api/socket_path.h"
#include "api/webhook_sender.h"
#include "config/config.h"
#include "controller/agent_hub.h"
#include "controller/controller.h"
#include "controller/slurm_link.h"
#include "core/duration.h"
#include "metrics/cluster_series.h"
#include "monitor/telemetry.h"
#include "scheduler/idle_policy.h"
#include "store/open_store.h"

#include "cluster.h"
#include "daemon.h"
#include "kube/kube_api_watch.h"
#include "kube/kube_pod_stopper.h"
#include "slurm/slurm_control.h"

namespace gf {
namespace {

constexpr std::string_view kCommand = "server";
constexpr int kExitControllerFailed = 3;

// --kubernetes: where the API server is, from --kube-api or from the service account of the pod
// the server runs in.
Result<KubeApiConfig> KubeApiConfigOf(const ServerOptions& options) {
  if (!options.kube_api.empty()) {
    return KubeApiConfig{.endpoint = options.kube_api,
                         .token_file = options.kube_token_file,
                         .ca_file = options.kube_ca_file};
  }
  return InClusterKubeApiConfig([](const char* name) -> std::optional<std::string> {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): read before the server's threads start
    const char* value = std::getenv(name);
    return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
  });
}

// The API server's list+watch of pods and their owners. Without a line to it the server still
// follows its agents' pods, only without service accounts and workloads: said once in the log.
std::unique_ptr<KubeApiWatch> StartKubeApiWatch(const Result<KubeApiConfig>& config) {
  if (!config.ok()) {
    spdlog::warn("kubernetes: pods are followed without their service accounts and workloads: {}",
                 config.error().message);
    return nullptr;
  }
  spdlog::info("kubernetes: reading pods, replicasets and jobs from {}", config->endpoint);
  auto watch = std::make_unique<KubeApiWatch>(*config);
  watch->Start();
  return watch;
}

// Waits until this server holds the store's lease (the leader), polling every second: a
// standby does nothing else, not even listen, so that clients and agents given several server
// URLs find the leader. nullopt when a stop signal came first.
Result<std::optional<std::int64_t>> BecomeLeader(Store& store,
                                                 const std::string& holder,
                                                 std::chrono::milliseconds ttl,
                                                 const Clock& clock,
                                                 const sigset_t& signals) {
  bool told = false;
  while (true) {
    GF_ASSIGN_OR_RETURN(LeaseAttempt attempt, store.AcquireLease(holder, clock.Now(), ttl));
    if (attempt.acquired) {
      spdlog::info("gpufleet server: leading (epoch {})", attempt.lease.epoch);
      return std::optional<std::int64_t>(attempt.lease.epoch);
    }
    if (!told) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          attempt.lease.expires - clock.Now());
      std::cout << "gpufleet server: standby; " << attempt.lease.holder << " leads (its lease "
                << "ends in " << fmt::format("{:.1f}", static_cast<double>(left.count()) / 1000)
                << " s unless renewed; this server takes over then)" << std::endl;
      told = true;
    }
    if (WaitForStopSignal(signals, std::chrono::seconds(1)) != 0) {
      return std::optional<std::int64_t>();
    }
  }
}

// The scheduling policy and teams of the settings file (the [up] keys are `up`'s own).
Result<Config> ReadPolicy(const std::string& flag) {
  const std::string path = SettingsFile(flag);
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
  if (Status s = CheckPodActions(config->policy, options.kubernetes); !s.ok()) {
    return Die(kCommand, s.error());
  }
  const Result<KubeApiConfig> kube_api_config =
      options.kubernetes ? KubeApiConfigOf(options) : FailedPrecondition("not --kubernetes");
  if (options.kubernetes && AnyPodAction(config->policy) && !kube_api_config.ok()) {
    // An opt-in to stopping idle pods that could never be carried out: said now, not at the
    // first idle pod.
    return Die(kCommand,
               FailedPrecondition("idle_action \"delete_pod\" or \"scale_owner\" stops pods "
                                  "through the API server, which this server cannot reach: " +
                                  kube_api_config.error().message));
  }
  Result<NotifierOptions> notify = NotifierOptionsFromConfig(config->notify);
  if (!notify.ok()) {
    return Die(kCommand, notify.error());
  }
  const sigset_t stop_signals = BlockStopSignals();
  const std::uint64_t open_files = RaiseOpenFileLimit();
  const SocketPathEnv socket_env = CurrentSocketPathEnv();
  auto heartbeat = ParseFlagDuration(
      "--heartbeat", options.heartbeat, std::chrono::seconds(1), std::chrono::minutes(10));
  if (!heartbeat.ok()) {
    return Die(kCommand, heartbeat.error());
  }
  auto node_timeout = ParseFlagDuration(
      "--node-timeout", options.node_timeout, std::chrono::seconds(2), std::chrono::hours(1));
  if (!node_timeout.ok()) {
    return Die(kCommand, node_timeout.error());
  }
  auto lease_ttl = ParseFlagDuration(
      "--lease-ttl", options.lease_ttl, std::chrono::seconds(2), std::chrono::minutes(10));
  if (!lease_ttl.ok()) {
    return Die(kCommand, lease_ttl.error());
  }
  auto slurm_poll = ParseFlagDuration(
      "--slurm-poll", options.slurm_poll, std::chrono::seconds(1), std::chrono::minutes(10));
  if (!slurm_poll.ok()) {
    return Die(kCommand, slurm_poll.error());
  }
  if (*node_timeout <= *heartbeat) {
    return Die(kCommand,
               InvalidArgument("--node-timeout (" + options.node_timeout +
                               ") must be longer than --heartbeat (" + options.heartbeat +
                               "), or every node goes down"));
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
  const std::string holder = Hostname() + ":" + std::to_string(getpid());
  auto epoch = BecomeLeader(**store, holder, *lease_ttl, clock, stop_signals);
  if (!epoch.ok()) {
    return Die(kCommand, epoch.error());
  }
  if (!epoch->has_value()) {
    return 0;  // stopped while standing by
  }
  // Remote agents send their newest sample round once per heartbeat: a fine ring of 1 s slots
  // would stay mostly empty (four fifths at the stock 5 s), at 9 bytes a slot per GPU. The
  // same hour of history at the heartbeat's resolution.
  const TelemetryOptions defaults;
  const Millis fine_step =
      std::max(defaults.fine_step, std::chrono::duration_cast<Millis>(*heartbeat));
  Telemetry telemetry(TelemetryOptions{
      .fine_slots = static_cast<int>(defaults.fine_step * defaults.fine_slots / fine_step),
      .fine_step = fine_step,
      .coarse_slots = defaults.coarse_slots,
      .coarse_step = defaults.coarse_step,
      .no_process_after = defaults.no_process_after});
  ControllerOptions copts;
  copts.telemetry = &telemetry;
  copts.kill_grace = std::chrono::seconds(options.kill_grace_s);
  copts.policy = config->policy;
  copts.energy_price = config->energy;
  copts.sharing = config->sharing;
  copts.team_of_user = config->team_of_user;
  copts.webhook_allow = config->notify.webhook_allow;
  copts.node_timeout = std::chrono::duration_cast<Millis>(*node_timeout);
  copts.lease_epoch = **epoch;
  copts.lease_ttl = std::chrono::duration_cast<Millis>(*lease_ttl);
  if (geteuid() != 0) {
    copts.only_uid = geteuid();
  }
  Notifier notifier(*notify, SendWebhook);  // outlives the controller: drains after it stops
  copts.notifier = &notifier;
  std::optional<SlurmLink> slurm;  // outlives the controller, which queues actions on it
  if (options.slurm) {
    slurm.emplace(MakeSlurmCommands(), std::chrono::duration_cast<Millis>(*slurm_poll));
    copts.slurm = &*slurm;
  }
  copts.kubernetes = options.kubernetes;
  // Both outlive the controller, which asks the watch on its state thread and queues stops on
  // the stopper (shut down before the controller stops: no answer reaches a stopped one).
  std::unique_ptr<KubeApiWatch> kube_api =
      options.kubernetes ? StartKubeApiWatch(kube_api_config) : nullptr;
  std::unique_ptr<KubePodStopper> kube_stopper;
  if (kube_api) {
    copts.kube_pod_facts = [watch = kube_api.get()](std::string_view uid) {
      return watch->Facts(uid);
    };
    kube_stopper = std::make_unique<KubePodStopper>(*kube_api_config);
    copts.kube_stop_pod = [stopper = kube_stopper.get()](KubePodStop stop,
                                                         std::function<void(Status)> done) {
      stopper->Stop(std::move(stop), std::move(done));
    };
  }
  Controller controller(std::move(*store), clock, copts);
  if (Status s = controller.Load(); !s.ok()) {
    return Die(kCommand, s.error());
  }
  AgentHub hub(
      controller,
      [&controller](const NodeId& node, NodeAgent* agent) { controller.AttachAgent(node, agent); },
      AgentHubOptions{.heartbeat = *heartbeat, .node_timeout = *node_timeout});
  controller.Start();
  if (slurm) {
    slurm->Start(
        [&controller](std::vector<SlurmJob> jobs) { controller.OnSlurmJobs(std::move(jobs)); });
  }
  // The overview's series (GET /api/v1/cluster/series): stopped before the controller it reads.
  ClusterSeries cluster_series;
  std::optional<ClusterSeriesRecorder> recorder;
  recorder.emplace(cluster_series, controller, telemetry, clock);
  ApiServerOptions aopts;
  aopts.unix_socket_path = options.socket.empty() ? ServerSocketPath(socket_env) : options.socket;
  aopts.tcp_host = options.host;
  aopts.tcp_port = options.port;
  aopts.telemetry = &telemetry;
  aopts.cluster_series = &cluster_series;
  aopts.tls_cert_file = options.tls_cert;
  aopts.tls_key_file = options.tls_key;
  aopts.agent_link = &hub;
  aopts.authenticate = [&controller](std::string_view token) {
    return controller.Authenticate(token);  // user and node tokens (gpufleet token create)
  };
  aopts.max_watches = 20'000;  // every agent holds a command stream
  ApiServer server(controller, WithApiConfig(aopts, config->api));
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
  std::cout << "Agents join with: gpufleet agent --server " << scheme
            << "://HOST:" << server.tcp_port() << " --token-file FILE" << std::endl;
  int sig = 0;
  while (sig == 0 && !controller.Failed()) {
    sig = WaitForStopSignal(stop_signals, std::chrono::seconds(1));
  }
  if (sig != 0) {
    spdlog::info("gpufleet server: signal {}, stopping (jobs keep running on their nodes)", sig);
  } else {
    spdlog::critical("gpufleet server: the controller failed; exiting so that a standby leads");
  }
  hub.Close();
  server.Stop();
  recorder.reset();
  if (slurm) {
    slurm->Stop();  // no reading is handed to a stopped controller
  }
  if (kube_stopper) {
    kube_stopper->Shutdown();  // nor an answer
  }
  controller.Stop();
  close(*lock);
  return sig != 0 ? 0 : kExitControllerFailed;
}

}  // namespace gf
