// `gpufleet server` and `gpufleet agent`: gpufleet over many servers (issue #6,
// docs/cluster.md). The server runs the controller, the store and the API, and takes node
// agents over the network (AgentHub); each agent runs its node's jobs and GPUs (LocalAgent)
// and reports to the server (RemoteLink). Same controller and agent code as `gpufleet up`.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace gf {

struct ServerOptions {
  std::string config;    // settings file: policy, classes, teams (docs/config.md)
  std::string data_dir;  // "" = default (DefaultDataDir())
  std::string db;        // "" = SQLite in the data dir; postgresql://... (docs/cluster.md)
  std::string socket;    // "" = ServerSocketPath()
  std::string host = "127.0.0.1";
  int port = 7460;
  std::string tls_cert;  // PEM; with tls_key, the TCP listener speaks TLS only
  std::string tls_key;
  std::string heartbeat = "5s";      // how often agents report when idle
  std::string node_timeout = "30s";  // silent agent → node down, its jobs requeued
  std::string lease_ttl = "8s";      // a standby takes over this long after the leader dies
  int kill_grace_s = 10;
  // Slurm companion mode (issue #23, docs/slurm.md): follow Slurm's jobs, schedule nothing.
  bool slurm = false;
  std::string slurm_poll = "5s";  // how often Slurm's jobs are read (scontrol show job)
  // Kubernetes mode (issue #27, docs/kubernetes.md): pods are the jobs, schedule nothing.
  bool kubernetes = false;
  // --kubernetes: the API server that names pods' service accounts and workloads; "" = the one
  // of the pod the server runs in (its service account), if any.
  std::string kube_api;
  std::string kube_token_file;
  std::string kube_ca_file;
};

struct AgentOptions {
  std::string servers;              // --server URL[,URL...]
  std::string token_file;           // the node token (gpufleet node token create)
  std::string ca_file;              // CA of the server's certificate, for https://
  std::string gpus = "nvml";        // GpuBackend spec
  std::string data_dir;             // "" = DefaultDataDir()/agent
  std::string node_name;            // "" = hostname
  std::vector<std::string> labels;  // KEY=VALUE
  std::string sample_interval = "1s";
  int idle_power_limit_w = 0;                  // power policy: idle GPUs capped to this; 0 = off
  std::string idle_power_after = "10m";        // ... once without a job this long
  std::string gpu_self_test;                   // run on failed idle GPUs; exit 0 returns them
  std::string gpu_self_test_interval = "10m";  // ... at most this often per GPU
  std::string mps_control = "auto";  // nvidia-cuda-mps-control for mps GPUs (MpsFromFlags)
  // The node's capacity for jobs' --cpus / --mem (issue #24); "" = detected, default reserve.
  std::string node_cpus;
  std::string node_mem;
  std::string reserve_cpus;
  std::string reserve_mem;
  // Slurm companion mode: GPU processes belong to Slurm jobs (their cgroup or SLURM_JOB_ID);
  // --node-name must be the node's Slurm name.
  bool slurm = false;
  // Kubernetes mode: GPU processes belong to pods (their cgroup, the kubelet's pod-resources
  // and log names); the node's pods that hold GPUs are reported as jobs.
  bool kubernetes = false;
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string kubelet_logs = "/var/log";  // holds the kubelet's pods/ and containers/
  // Where the host's processes are read (a containerised agent with the host's /proc mounted
  // elsewhere; tests: a synthetic tree).
  std::string proc_root = "/proc";
};

// Both return the process exit code and run until SIGINT/SIGTERM. RunServer also returns (3)
// when its controller fails (the store, or the lease lost to another server).
int RunServer(const ServerOptions& options);
int RunAgent(const AgentOptions& options);

}  // namespace gf
