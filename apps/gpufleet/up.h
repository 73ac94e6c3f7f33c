// `gpufleet up`: everything for one GPU server in one process — controller, node agent,
// SQLite store and the API — wired together. Runs until SIGINT/SIGTERM; jobs keep running
// across a stop or crash and are re-attached by the next `gpufleet up` on the same data dir.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace gf {

inline constexpr int kMaxKillGraceS = 3600;  // --kill-grace and [up] kill_grace

struct UpOptions {
  // The settings file (docs/config.md); "" = /etc/gpufleet/gpufleet.toml when it exists.
  std::string config;
  // The flags given on the command line ("--port"): they win over the file's [up] keys.
  std::set<std::string> flags_given;
  std::string gpus = "nvml";  // GpuBackend spec: nvml, nvml:PATH, sim:4xH100-80GB
  std::string data_dir;  // "" = default (root: /var/lib/gpufleet, else ~/.local/share/gpufleet)
  std::string db;        // the store (store/open_store.h); "" = SQLite in data_dir
  std::string socket;    // "" = ServerSocketPath()
  std::string host = "127.0.0.1";
  int port = 7460;       // 0 = any free port, -1 = no TCP
  std::string tls_cert;  // PEM certificate chain: the TCP port speaks TLS only; "" = plain
  std::string tls_key;   // its PEM private key
  int kill_grace_s = 10;
  std::string node_name;                 // "" = hostname
  std::vector<std::string> labels;       // --label KEY=VALUE, repeatable: on top of [up] labels
  std::string sample_interval = "1s";    // how often the agent samples its GPUs
  std::string no_process_after = "60s";  // allocated GPU without a process → condition
  int idle_power_limit_w = 0;            // power policy: idle GPUs capped to this; 0 = off
  std::string idle_power_after = "10m";  // ... once without a job this long
  std::string gpu_self_test;             // run on failed idle GPUs; exit 0 returns them
  std::string gpu_self_test_interval = "10m";  // ... at most this often per GPU
  std::string mps_control = "auto";  // nvidia-cuda-mps-control for mps GPUs (MpsFromFlags)
  // The node's capacity for jobs' --cpus / --mem (issue #24); "" = detected, default reserve.
  std::string node_cpus;
  std::string node_mem;
  std::string reserve_cpus;
  std::string reserve_mem;
};

// Returns the process exit code.
int RunUp(const UpOptions& options);

}  // namespace gf
