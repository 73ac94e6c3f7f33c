#include "up.h"

#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "agent/local_agent.h"
#include "api/api_server.h"
#include "api/socket_path.h"
#include "api/webhook_sender.h"
#include "config/config.h"
#include "controller/controller.h"
#include "core/duration.h"
#include "executor/executor.h"
#include "gpu/gpu_backend.h"
#include "metrics/cluster_series.h"
#include "monitor/telemetry.h"
#include "scheduler/idle_policy.h"
#include "store/open_store.h"

#include "daemon.h"

namespace gf {
namespace {

int Die(const Error& e) {
  return Die("up", e);
}

// The settings `gpufleet up` runs with: its flags, the [up] keys of the settings file for the
// flags not given, and the file's scheduling policy.
struct UpSettings {
  UpOptions options;
  PolicyConfig policy;
  std::map<std::string, std::string> team_of_user;  // [team.NAME] members
  NotifyConfig notify;                              // [notify]
  std::string source;                               // the settings file read; "" = none
  std::map<std::string, std::string> labels;  // [up] labels, then --label (which wins per key)
  // flag → where the file set it ("gpufleet.toml:5: [up] sample_interval"), so that a check
  // of its value names the key rather than a flag nobody typed.
  std::map<std::string, std::string> origin;
  EnergyPrice energy;     // [energy]
  SharingConfig sharing;  // [sharing]
  ApiConfig api;          // [api]

  std::string Name(const std::string& flag) const {
    auto it = origin.find(flag);
    return it == origin.end() ? flag : it->second;
  }

  // Takes the file's value for `flag` unless the command line gave the flag.
  template <typename T, typename Field, typename Convert>
  void Take(const std::string& flag,
            const std::optional<ConfigValue<T>>& value,
            Field& field,
            Convert convert) {
    if (value.has_value() && !options.flags_given.contains(flag)) {
      field = convert(value->value);
      origin[flag] = value->where;
    }
  }
};

// --config, or the default file when it exists; no file is the stock policy and the flags.
Result<UpSettings> ReadSettings(const UpOptions& flags) {
  UpSettings settings{flags, PolicyConfig{}, {}, {}, "", {}, {}, {}, SharingConfig{}, ApiConfig{}};
  const std::string path = SettingsFile(flags.config);
  if (path.empty()) {
    return settings;
  }
  GF_ASSIGN_OR_RETURN(const Config config, LoadConfig(path));
  GF_TRY(CheckPodActions(config.policy, /*kubernetes=*/false));  // `up` follows no pods
  settings.policy = config.policy;
  settings.team_of_user = config.team_of_user;
  settings.notify = config.notify;
  settings.energy = config.energy;
  settings.sharing = config.sharing;
  settings.api = config.api;
  settings.source = config.source;
  const auto same = [](const auto& v) {
    return v;
  };
  const auto text = [](std::chrono::seconds d) {
    return FormatDuration(d);
  };
  UpOptions& o = settings.options;
  const UpConfig& up = config.up;
  settings.Take("--gpus", up.gpus, o.gpus, same);
  settings.Take("--data-dir", up.data_dir, o.data_dir, same);
  settings.Take("--db", up.db, o.db, same);
  settings.Take("--listen-socket", up.listen_socket, o.socket, same);
  settings.Take("--host", up.host, o.host, same);
  settings.Take("--port", up.port, o.port, same);
  settings.Take("--tls-cert", up.tls_cert, o.tls_cert, same);
  settings.Take("--tls-key", up.tls_key, o.tls_key, same);
  settings.Take("--node-name", up.node_name, o.node_name, same);
  settings.Take("--sample-interval", up.sample_interval, o.sample_interval, text);
  settings.Take("--no-process-after", up.no_process_after, o.no_process_after, text);
  settings.Take("--idle-power-limit", up.idle_power_limit, o.idle_power_limit_w, same);
  settings.Take("--idle-power-after", up.idle_power_after, o.idle_power_after, text);
  settings.Take("--gpu-self-test", up.gpu_self_test, o.gpu_self_test, same);
  settings.Take("--mps-control", up.mps_control, o.mps_control, same);
  settings.Take("--node-cpus", up.node_cpus, o.node_cpus, same);
  settings.Take("--node-mem", up.node_mem, o.node_mem, same);
  settings.Take("--reserve-cpus", up.reserve_cpus, o.reserve_cpus, same);
  settings.Take("--reserve-mem", up.reserve_mem, o.reserve_mem, same);
  settings.Take(
      "--gpu-self-test-interval", up.gpu_self_test_interval, o.gpu_self_test_interval, text);
  settings.Take("--kill-grace", up.kill_grace, o.kill_grace_s, [](std::chrono::seconds d) {
    return static_cast<int>(d.count());
  });
  if (up.labels.has_value()) {
    settings.labels = up.labels->value;
  }
  if (o.kill_grace_s > kMaxKillGraceS) {
    return InvalidArgument(settings.Name("--kill-grace") + ": " + std::to_string(o.kill_grace_s) +
                           "s is above the most, " + std::to_string(kMaxKillGraceS) + "s");
  }
  return settings;
}

// --label KEY=VALUE flags, on top of the file's [up] labels (a flag wins for its key).
Status ApplyLabelFlags(UpSettings& settings) {
  return AddLabelFlags(settings.options.labels, settings.labels);
}

}  // namespace

int RunUp(const UpOptions& flags) {
  // The settings file first: a mistake in it stops `gpufleet up` before it takes anything.
  Result<UpSettings> settings = ReadSettings(flags);
  if (!settings.ok()) {
    return Die(settings.error());
  }
  if (Status labels = ApplyLabelFlags(*settings); !labels.ok()) {
    return Die(labels.error());
  }
  const UpOptions& options = settings->options;
  // Block the stop signals before any thread starts, so that only the wait below sees them.
  const sigset_t stop_signals = BlockStopSignals();
  // Read the environment (getenv) before any thread starts.
  const SocketPathEnv socket_env = CurrentSocketPathEnv();

  const std::filesystem::path data_dir =
      options.data_dir.empty() ? DefaultDataDir() : std::filesystem::path(options.data_dir);
  auto sample_interval = ParseFlagDuration(settings->Name("--sample-interval"),
                                           options.sample_interval,
                                           std::chrono::seconds(1),
                                           std::chrono::hours(1));
  if (!sample_interval.ok()) {
    return Die(sample_interval.error());
  }
  auto no_process_after = ParseFlagDuration(settings->Name("--no-process-after"),
                                            options.no_process_after,
                                            std::chrono::seconds(1),
                                            std::chrono::hours(24));
  if (!no_process_after.ok()) {
    return Die(no_process_after.error());
  }
  auto host = HostCapacityFromFlags(
      options.node_cpus, options.node_mem, options.reserve_cpus, options.reserve_mem);
  if (!host.ok()) {
    return Die(host.error());
  }
  auto power = PowerPolicyFromFlags(settings->Name("--idle-power-limit"),
                                    options.idle_power_limit_w,
                                    settings->Name("--idle-power-after"),
                                    options.idle_power_after);
  if (!power.ok()) {
    return Die(power.error());
  }
  auto self_test = SelfTestFromFlags(settings->Name("--gpu-self-test"),
                                     options.gpu_self_test,
                                     settings->Name("--gpu-self-test-interval"),
                                     options.gpu_self_test_interval);
  if (!self_test.ok()) {
    return Die(self_test.error());
  }
  Result<NotifierOptions> notify = NotifierOptionsFromConfig(settings->notify);
  if (!notify.ok()) {
    return Die(notify.error());
  }
  // Every setting is checked before the data dir is taken.
  Result<int> lock = LockDataDir(data_dir, "up");
  if (!lock.ok()) {
    return Die(lock.error());
  }
  SystemClock clock;
  const NodeId node(options.node_name.empty() ? Hostname() : options.node_name);
  auto backend = MakeGpuBackend(options.gpus, clock, node.value() + ":" + data_dir.string());
  if (!backend.ok()) {
    return Die(backend.error());
  }
  auto store = OpenStore(options.db, data_dir / "state.db");
  if (!store.ok()) {
    return Die(store.error());
  }
  TelemetryOptions topts;
  topts.no_process_after = std::chrono::duration_cast<Millis>(*no_process_after);
  Telemetry telemetry(topts);
  ControllerOptions copts;
  copts.telemetry = &telemetry;
  copts.kill_grace = std::chrono::seconds(options.kill_grace_s);
  copts.policy = settings->policy;
  copts.energy_price = settings->energy;
  copts.sharing = settings->sharing;
  copts.team_of_user = settings->team_of_user;
  copts.webhook_allow = settings->notify.webhook_allow;
  if (geteuid() != 0) {
    copts.only_uid = geteuid();
  }
  Notifier notifier(*notify, SendWebhook);  // outlives the controller: drains after it stops
  copts.notifier = &notifier;
  Controller controller(std::move(*store), clock, copts);
  if (Status s = controller.Load(); !s.ok()) {
    return Die(s.error());
  }
  Executor executor(data_dir / "jobs", SelfExe(), clock, ExecutorOptionsFromEnvironment());
  LocalAgentOptions agent_options{node};
  agent_options.labels = settings->labels;
  agent_options.host = *host;
  agent_options.sample_interval = std::chrono::duration_cast<Millis>(*sample_interval);
  agent_options.power = *power;
  agent_options.self_test = *self_test;
  agent_options.mps = MpsFromFlags(options.mps_control, options.gpus, data_dir);
  LocalAgent agent(agent_options, **backend, executor, controller, clock);
  controller.AttachAgent(node, &agent);
  controller.Start();
  if (Status s = agent.Start(); !s.ok()) {
    return Die(s.error());
  }
  // The overview's series (GET /api/v1/cluster/series): stopped before the controller it reads.
  ClusterSeries cluster_series;
  std::optional<ClusterSeriesRecorder> recorder;
  recorder.emplace(cluster_series, controller, telemetry, clock);
  ApiServerOptions aopts;
  aopts.unix_socket_path = options.socket.empty() ? ServerSocketPath(socket_env) : options.socket;
  aopts.tcp_host = options.host;
  aopts.tcp_port = options.port;
  aopts.telemetry = &telemetry;  // GET /metrics
  aopts.cluster_series = &cluster_series;
  aopts.tls_cert_file = options.tls_cert;
  aopts.tls_key_file = options.tls_key;
  aopts.authenticate = [&controller](std::string_view token) {
    return controller.Authenticate(token);  // API tokens (gpufleet token create) on TCP
  };
  ApiServer server(controller, WithApiConfig(aopts, settings->api));
  if (Status s = server.Start(); !s.ok()) {
    return Die(s.error());
  }
  std::cout << "gpufleet up: node " << node.value() << ", GPUs from " << (*backend)->Describe()
            << ", data in " << data_dir.string() << "\n"
            << "  store:      " << DescribeStore(options.db, data_dir / "state.db") << "\n"
            << "  API socket: " << *aopts.unix_socket_path << "\n"
            << ContainmentBannerLine(executor.DescribeContainment());
  if (!settings->source.empty()) {
    std::cout << "  settings:   " << settings->source << "\n";
  }
  if (server.tcp_port() > 0) {
    std::cout << "  API URL:    " << (options.tls_cert.empty() ? "http" : "https") << "://"
              << options.host << ":" << server.tcp_port() << "/api/v1\n";
  }
  if (*aopts.unix_socket_path != DefaultSocketPath(socket_env)) {
    std::cout << "  clients:    export GPUFLEET_SOCKET=" << *aopts.unix_socket_path << "\n";
  }
  std::cout << "Submit a job: gpufleet submit --gpus 1 -- sh -c 'echo $CUDA_VISIBLE_DEVICES'\n"
            << "Then:         gpufleet queue; gpufleet logs JOB\n"
            << "Stop with Ctrl-C (running jobs keep running and are re-attached on the next up)."
            << std::endl;
  const int sig = WaitForStopSignal(stop_signals);
  spdlog::info("gpufleet up: signal {}, stopping (jobs keep running)", sig);
  server.Stop();
  recorder.reset();
  agent.Stop();
  controller.Stop();
  close(*lock);
  return 0;
}

}  // namespace gf
