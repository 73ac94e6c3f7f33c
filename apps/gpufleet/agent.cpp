#include <iostream>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "agent/local_agent.h"
#include "agent/remote_link.h"
#include "api/credential_file.h"
#include "executor/executor.h"
#include "gpu/gpu_backend.h"
#include "model/node.h"

#include "cluster.h"
#include "daemon.h"
#include "kube/pod_resources_client.h"

namespace gf {
namespace {

constexpr std::string_view kCommand = "agent";
// How long a round waits for the kubelet's pod-resources: well under the 1 s sampling period,
// far over the kubelet's answer from memory (tens of microseconds).
constexpr std::chrono::milliseconds kPodResourcesTimeout{500};

}  // namespace

int RunAgent(const AgentOptions& options) {
  if (options.servers.empty()) {
    return Die(kCommand,
               InvalidArgument("--server: missing; give the server's URL, e.g. "
                               "--server https://gpu-head:7460"));
  }
  RemoteLinkOptions link_options{.servers = options.servers};
  link_options.client.ca_file = options.ca_file;
  link_options.client.timeout = std::chrono::seconds(30);
  if (!options.token_file.empty()) {
    Result<std::string> token = ReadTokenFile(options.token_file);
    if (!token.ok()) {
      return Die(kCommand, Error{token.error().code, "--token-file: " + token.error().message});
    }
    link_options.client.token = *token;
  }
  std::map<std::string, std::string> labels;
  if (Status s = AddLabelFlags(options.labels, labels); !s.ok()) {
    return Die(kCommand, s.error());
  }
  auto sample_interval = ParseFlagDuration(
      "--sample-interval", options.sample_interval, std::chrono::seconds(1), std::chrono::hours(1));
  if (!sample_interval.ok()) {
    return Die(kCommand, sample_interval.error());
  }
  auto power = PowerPolicyFromFlags("--idle-power-limit",
                                    options.idle_power_limit_w,
                                    "--idle-power-after",
                                    options.idle_power_after);
  if (!power.ok()) {
    return Die(kCommand, power.error());
  }
  auto self_test = SelfTestFromFlags("--gpu-self-test",
                                     options.gpu_self_test,
                                     "--gpu-self-test-interval",
                                     options.gpu_self_test_interval);
  if (!self_test.ok()) {
    return Die(kCommand, self_test.error());
  }
  auto host = HostCapacityFromFlags(
      options.node_cpus, options.node_mem, options.reserve_cpus, options.reserve_mem);
  if (!host.ok()) {
    return Die(kCommand, host.error());
  }
  const sigset_t stop_signals = BlockStopSignals();
  const std::filesystem::path data_dir = options.data_dir.empty()
                                             ? DefaultDataDir() / "agent"
                                             : std::filesystem::path(options.data_dir);
  Result<int> lock = LockDataDir(data_dir, kCommand);
  if (!lock.ok()) {
    return Die(kCommand, lock.error());
  }
  SystemClock clock;
  const NodeId node(options.node_name.empty() ? Hostname() : options.node_name);
  auto backend = MakeGpuBackend(options.gpus,
                                clock,
                                node.value() + ":" + data_dir.string(),
                                options.slurm ? node.value() : std::string());
  if (!backend.ok()) {
    return Die(kCommand, backend.error());
  }
  Executor executor(data_dir / "jobs", SelfExe(), clock, ExecutorOptionsFromEnvironment());
  RemoteLink link(link_options);
  LocalAgentOptions agent_options{node};
  agent_options.labels = labels;
  agent_options.host = *host;
  agent_options.sample_interval = std::chrono::duration_cast<Millis>(*sample_interval);
  agent_options.power = *power;
  agent_options.self_test = *self_test;
  agent_options.mps = MpsFromFlags(options.mps_control, options.gpus, data_dir);
  agent_options.jobs_from = options.slurm        ? JobSource::kSlurm
                            : options.kubernetes ? JobSource::kKubernetes
                                                 : JobSource::kGpufleet;
  agent_options.proc_root = options.proc_root;
  // The kubelet's pod-resources, read by the sampler thread alone (kube_watch.h).
  PodResourcesClient pod_resources(options.pod_resources_socket);
  if (options.kubernetes) {
    agent_options.list_pod_gpus = [&pod_resources] {
      return pod_resources.List(kPodResourcesTimeout);
    };
    agent_options.kubelet_log_root = options.kubelet_logs;
  }
  LocalAgent agent(agent_options, **backend, executor, link, clock);
  link.Attach(&agent, [&agent] { agent.SayHelloAgain(); });
  link.Start();
  if (Status s = agent.Start(); !s.ok()) {
    return Die(kCommand, s.error());
  }
  std::cout << "gpufleet agent: node " << node.value() << ", GPUs from " << (*backend)->Describe()
            << ", jobs in " << (data_dir / "jobs").string() << ", server " << options.servers
            << "\n"
            << ContainmentBannerLine(executor.DescribeContainment()) << std::flush;
  const int sig = WaitForStopSignal(stop_signals);
  spdlog::info("gpufleet agent: signal {}, stopping (jobs keep running)", sig);
  agent.Stop();
  link.Stop();
  close(*lock);
  return 0;
}

}  // namespace gf
