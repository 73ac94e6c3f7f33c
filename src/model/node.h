// Node and Gpu: the inventory of one server as the agent reports it.
// Plain value types; the controller thread owns the live copies.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"

namespace gf {

enum class GpuHealth { kOk, kDegraded, kFailed };
std::string_view ToString(GpuHealth h);  // "ok", "degraded", "failed"
Result<GpuHealth> ParseGpuHealth(std::string_view s);
// 0 ok, 1 degraded, 2 failed: the worse, the larger (the gpufleet_gpu_health value).
int Severity(GpuHealth h);
// The cause of a GPU kept degraded while processes of an ended job that could not be stopped
// still live (issue #20): "held by processes of job 7 that could not be stopped (pid 101, 102);
// no new work until they end". The agent's samples and the controller say it alike.
std::string LeftoverHoldCause(JobId job, const std::vector<std::int64_t>& pids);

// How a GPU is shared (issue #7), set by an admin per GPU (`gpufleet gpu mode NODE GPU MODE`):
// - exclusive: one job holds it whole (the default);
// - shared: time-sliced among fractional jobs (`--gpu-share`, `--gpu-mem`), each held to its
//   memory by the controller's watch of its processes;
// - mps: like shared, through an MPS daemon per GPU that caps each job's threads and memory;
//   MPS serves one Unix user at a time, so only one user's jobs share it at once;
// - mig: split into MIG instances (placement by profile).
// Whole-GPU jobs go only to exclusive GPUs; fractional jobs only to shared and mps ones.
enum class SharingMode { kExclusive, kShared, kMps, kMig };
std::string_view ToString(SharingMode m);  // "exclusive", "shared", "mps", "mig"
// Errors: kInvalidArgument naming `field` and the choices.
Result<SharingMode> ParseSharingMode(std::string_view s, std::string_view field = "mode");
// Shared and mps GPUs hold fractions of themselves.
inline bool HoldsFractions(SharingMode m) {
  return m == SharingMode::kShared || m == SharingMode::kMps;
}

// What the controller does when a fractional job's processes on its GPU use more memory than
// its limit (`[sharing] memory_breach`): kill the job's largest process there (the default: the
// other jobs on the GPU must keep their memory), or only warn (an event and a notification).
enum class MemoryBreach { kKill, kWarn };
std::string_view ToString(MemoryBreach b);  // "kill", "warn"
// Errors: kInvalidArgument naming `field` and the choices.
Result<MemoryBreach> ParseMemoryBreach(std::string_view s, std::string_view field);

// `[sharing]`: how the controller holds fractional jobs to their GPU memory.
struct SharingConfig {
  MemoryBreach memory_breach = MemoryBreach::kKill;
  // With kKill: a job still over its limit this long after its largest process was killed
  // (other processes of its own hold the memory, or the kill failed) is stopped whole, so
  // that the GPU's other jobs get their memory back in bounded time.
  std::chrono::seconds memory_breach_grace{30};
  bool operator==(const SharingConfig&) const = default;
};

// One MIG device (a GPU instance with its one compute instance) of a GPU in MIG mode (issue
// #7), as the driver reports it.
struct MigInstance {
  std::string profile{};  // NVIDIA's name of the GPU instance profile: "3g.40gb", "1g.10gb"
  GpuUuid uuid{};         // "MIG-...": what CUDA_VISIBLE_DEVICES takes to run on it
  int gpu_instance_id = -1;
  int compute_instance_id = -1;
  int slices = 0;  // compute slices: the 3 of "3g.40gb"
  std::int64_t memory_mib = 0;
  bool operator==(const MigInstance&) const = default;
};

// A MIG GPU instance profile name as NVIDIA writes it: compute slices, "g.", memory, "gb",
// and an optional "+" suffix ("3g.40gb", "1g.10gb", "1g.12gb+me"). Errors: kInvalidArgument
// naming `field`, with an example.
Status ValidateMigProfile(std::string_view profile, std::string_view field);
// The compute slices of a valid profile name: 3 for "3g.40gb".
int MigProfileSlices(std::string_view profile);
// "3g.40gb,2g.20gb,1g.10gb,1g.10gb" → its profiles, each valid; "" or "none" → none (MIG mode
// on, no device). Errors: kInvalidArgument naming `field`.
Result<std::vector<std::string>> ParseMigLayout(std::string_view text, std::string_view field);

// A MIG GPU instance profile a GPU offers.
struct MigProfile {
  std::string name;   // "3g.40gb"
  int slices = 0;     // compute slices
  int max_count = 0;  // at most this many instances of it at once; 0: not known, not checked
  std::int64_t memory_mib = 0;
};

// The checks on a MIG layout before anything changes, made by every GPU backend (with what the
// driver offers) and by the controller when an admin sets one (with the profile names a GPU
// reported, so without max_count): each name offered, at most max_count of each, and the
// compute slices within the GPU's (its largest profile's). Returns indexes into `offered`, one
// per wanted instance, largest first (the order to create them in: large instances have the
// fewest places). Errors: kInvalidArgument starting with `gpu` ("GPU 0"), naming the profile
// and the offered ones, or the slices needed and had.
Result<std::vector<std::size_t>> PlanMigLayout(const std::vector<MigProfile>& offered,
                                               std::string_view gpu,
                                               const std::vector<std::string>& wanted);

struct Gpu {
  int index = 0;  // NVML index on its node
  GpuUuid uuid;
  std::string model;  // normalized model name, e.g. "H100-80GB"
  std::int64_t memory_mib = 0;
  GpuHealth health = GpuHealth::kOk;
  std::string health_cause;  // why it is not ok; "" when ok
  // Topology, for placement (issue #4): what NVML tells, or what the sim backend makes up.
  // -1 / empty = unknown, which placement treats as "not connected".
  int numa_node = -1;    // the NUMA node the GPU hangs off
  int pcie_switch = -1;  // GPUs with the same id share a PCIe switch (id: their lowest index)
  std::vector<int> nvlink_peers{};  // indexes of the node's GPUs it has an NVLink to, sorted
  // The admin's choice, kept by the controller across agent reconnects (agents report
  // kExclusive). A change waits until no job holds the GPU: `sharing_next` until then.
  SharingMode sharing = SharingMode::kExclusive;
  std::optional<SharingMode> sharing_next{};
  // MIG, as the agent found it (issue #7): the hardware's current mode (a change is pending
  // until the GPU is reset), its MIG devices by gpu_instance_id, and the GPU instance profiles
  // the card offers ("1g.10gb", ...; empty while MIG mode is off, as NVML tells them only then).
  bool mig_enabled = false;
  std::vector<MigInstance> mig_instances{};
  std::vector<std::string> mig_profiles{};
  // The admin's MIG layout (`gpufleet gpu mig-layout`), kept by the controller like `sharing`:
  // it waits until no job holds the GPU, then the agent applies it; set until the GPU reports
  // that layout (or the agent's refusal).
  std::optional<std::vector<std::string>> mig_layout_next{};
  bool operator==(const Gpu&) const = default;
};

// Whether the scheduler may place new work on the GPU: a failed GPU is drained, and a degraded
// one (a recent XID, too hot, throttled by the hardware) is kept free until it recovers, so
// that a job does not start on a card that is about to fail (issue #8). Jobs already running
// on a degraded GPU go on.
inline bool TakesWork(const Gpu& gpu) {
  return gpu.health == GpuHealth::kOk;
}
// Whether new work of each kind may go to the GPU: whole-GPU jobs to exclusive GPUs, fractional
// jobs to shared and mps ones; neither while a change of its mode waits (it empties first).
// A GPU with MIG on in the hardware runs work only on its MIG devices.
inline bool TakesWholeJobs(const Gpu& gpu) {
  return TakesWork(gpu) && gpu.sharing == SharingMode::kExclusive &&
         !gpu.sharing_next.has_value() && !gpu.mig_enabled;
}
inline bool TakesFractions(const Gpu& gpu) {
  return TakesWork(gpu) && HoldsFractions(gpu.sharing) && !gpu.sharing_next.has_value() &&
         !gpu.mig_enabled;
}
// MIG jobs go to the MIG devices of GPUs in mig mode, but not while a new layout waits.
inline bool TakesMigJobs(const Gpu& gpu) {
  return TakesWork(gpu) && gpu.sharing == SharingMode::kMig && gpu.mig_enabled &&
         !gpu.sharing_next.has_value() && !gpu.mig_layout_next.has_value();
}

// Node labels (`gpufleet up --label rack=a`, `[up] labels`) and the constraints jobs put on
// them (`gpufleet submit --constraint rack=a`): key and value each 1..63 characters of letters,
// digits, '-', '_', '.' and '/'. `field` names the flag or key in errors ("constraint").
// Errors: kInvalidArgument naming the field, the label and the form.
Status ValidateLabel(const std::string& key, const std::string& value, std::string_view field);
// "rack=a" → {"rack", "a"}, validated as above.
Result<std::pair<std::string, std::string>> ParseLabel(std::string_view text,
                                                       std::string_view field);

enum class NodeState { kUp, kDraining, kDrained, kDown };
std::string_view ToString(NodeState s);  // "up", "draining", "drained", "down"
Result<NodeState> ParseNodeState(std::string_view s);

struct Node {
  NodeId name;
  std::vector<Gpu> gpus;
  int cpus = 0;
  std::int64_t memory_mib = 0;
  // What the jobs holding GPUs here (STARTING, RUNNING) hold of cpus and memory_mib (their
  // allocations' --cpus, --mem). Filled in when the nodes are listed (ClusterService::ListNodes);
  // neither stored nor sent by agents.
  int cpus_in_use = 0;
  std::int64_t memory_mib_in_use = 0;
  std::map<std::string, std::string> labels;
  NodeState state = NodeState::kUp;
  std::string state_reason{};  // why it is not up: a drain's reason, or what took it down
  std::string gpu_backend;     // "nvml", "sim:4xH100-80GB"
  // How the agent contains its jobs' processes: "cgroup-v2", "cgroup-v1", "none"
  // (executor/cgroup.h Containment); "" = not reported. Sent in each hello, not stored.
  std::string containment;
  Time last_seen{};
  bool operator==(const Node&) const = default;
};

}  // namespace gf
