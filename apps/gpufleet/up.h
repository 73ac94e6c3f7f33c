// `gpufleet up`: everything for one GPU server in one process — controller, node agent,
// SQLite store and the API — wired together. Runs until SIGINT/SIGTERM; jobs keep running
// across a stop or crash and are re-attached by the next `gpufleet up` on the same data dir.
#pragma once

#include <string>

namespace gf {

struct UpOptions {
  std::string gpus = "nvml";  // GpuBackend spec: nvml, nvml:PATH, sim:4xH100-80GB
  std::string data_dir;       // "" = default (root: /var/lib/gpufleet, else ~/.local/share/gpufleet)
  std::string socket;         // "" = ServerSocketPath()
  std::string host = "127.0.0.1";
  int port = 7460;            // 0 = any free port, -1 = no TCP
  int kill_grace_s = 10;
  std::string node_name;      // "" = hostname
  std::string sample_interval = "1s";  // how often the agent samples its GPUs
  std::string no_process_after = "60s";  // allocated GPU without a process → condition
};

// Returns the process exit code.
int RunUp(const UpOptions& options);

}  // namespace gf
