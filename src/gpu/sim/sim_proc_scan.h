// Which processes "use" which simulated GPU, found the way CUDA picks its devices: a process
// uses GPU U when its initial environment (/proc/<pid>/environ) has CUDA_VISIBLE_DEVICES or
// NVIDIA_VISIBLE_DEVICES listing U's UUID. gpufleet's shim sets both to the job's GPU UUIDs,
// so a job's processes show up on its simulated GPUs without any hardware.
//
// Only "GPU-..." and "MIG-..." (a MIG device of a simulated GPU) UUID entries count: an index such
// as CUDA_VISIBLE_DEVICES=0 refers to a real card, never to a simulated one. Processes whose
// environ cannot be read (other users' when not root, or gone mid-scan) are skipped. Thread-safety:
// a pure function of the file tree; safe from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gf {

// GPU UUID → pids (ascending) of the processes that name it.
using SimGpuProcessTable = std::map<std::string, std::vector<std::uint32_t>, std::less<>>;

// pid → GPU memory limit (MiB) of the processes whose environment has
// GPUFLEET_GPU_MEMORY_LIMIT_MIB (a fractional job's, issue #7).
using SimMemoryLimits = std::map<std::uint32_t, std::int64_t>;

// A simulated node that stands for a Slurm compute node (`gpufleet agent --slurm`, issue #23):
// Slurm names a job's GPUs by index in CUDA_VISIBLE_DEVICES (as on a node without
// ConstrainDevices, where the index is the node's own), so an index entry N counts as this
// node's GPU N, but only for a process whose SLURMD_NODENAME is `node` (several slurmd, each a
// node, may share one test host).
struct SimSlurmNode {
  std::string node;
  std::vector<std::string> uuid_of_index;  // the node's simulated GPUs, by index
};

// Scans every numeric directory under `proc_root` ("/proc", or a fake tree in tests).
// A missing or unreadable root gives an empty table. With `limits`, also fills it.
SimGpuProcessTable ScanSimGpuProcesses(const std::filesystem::path& proc_root,
                                       SimMemoryLimits* limits = nullptr,
                                       const SimSlurmNode* slurm = nullptr);

// The GPU UUIDs that the index entries of CUDA_VISIBLE_DEVICES name on `slurm`'s node, for a
// process of that node (SLURMD_NODENAME); empty otherwise.
std::vector<std::string> SlurmIndexedGpuUuids(std::string_view environ_block,
                                              const SimSlurmNode& slurm);

// The GPUFLEET_GPU_MEMORY_LIMIT_MIB of one environment block; nullopt when absent or not a
// number.
std::optional<std::int64_t> MemoryLimitMib(std::string_view environ_block);

// The GPU UUIDs named by one NUL-separated environment block (the content of an environ
// file), each once, in first-seen order.
std::vector<std::string> VisibleGpuUuids(std::string_view environ_block);

}  // namespace gf
