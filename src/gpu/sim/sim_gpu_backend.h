// SimGpuBackend: simulated GPUs for demos, tests and machines without an NVIDIA driver.
//
// Built from a spec such as "sim:8xH100-80GB" or "sim:2xA100-40GB,4xL4-24GB". Every field of
// GpuSample is filled the way the model's driver would (sim_gpu_model.h): a card idles
// (0 %, 30 C, idle draw, idle clocks, P8, throttle reason "idle") until a process uses it, then
// runs at a utilisation that wanders between 55 and 98 %, with memory held by its processes,
// power, clocks, PCIe traffic and fan following the load and the temperature lagging behind
// the power. A process uses a simulated GPU when its environment names the GPU's UUID in
// CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES (sim_proc_scan.h), as gpufleet's shim sets
// them, so `gpufleet up --gpus sim:...` shows its jobs' load end to end.
//
// Everything is a function of the injected Clock and the process table (no global RNG): two
// backends fed the same clock and processes report the same samples; the energy counter is
// exactly the sum of each sample's power times the time until the next. Set*/InjectXid
// override the model for tests and fault injection; ClearOverrides returns to it.
// UUIDs derive from the hostname, index and model, so they are the same every time the
// process starts on the same host (the controller keys GPUs by UUID).
//
// Ownership: the Clock must outlive the backend. Thread-safety: all methods are thread-safe
// (one mutex), so a test thread may set a load while the agent samples.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "gpu/gpu_backend.h"
#include "gpu/sim/sim_gpu_model.h"
#include "gpu/sim/sim_proc_scan.h"

namespace gf {

// One "COUNTxMODEL-NNGB" item of a sim spec.
struct SimGpuGroup {
  int count = 1;
  std::string model;            // "H100-80GB"
  std::int64_t memory_mib = 0;  // NN * 1024
  bool mig = false;             // ":mig": the GPUs start in MIG mode (SimDefaultMigLayout)
  bool operator==(const SimGpuGroup&) const = default;
};

// MIG on simulated GPUs (issue #7). The GPU instance profiles of a MIG-capable model (A100,
// H100, H200, B200: 7 compute slices, 8 memory slices), named as NVIDIA names them from the
// card's memory: 1g (one memory slice, 7 at most), 1g (two, 4), 2g (two, 3), 3g (four, 2), 4g
// (four, 1), 7g (all, 1); for an H100-80GB 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb,
// 7g.80gb. Empty for other models.
std::vector<MigProfile> SimMigProfiles(std::string_view model, std::int64_t memory_mib);
// The layout a ":mig" GPU starts with: 3g, 2g, 1g, 1g (the smaller 1g), e.g. 3g.40gb,
// 2g.20gb, 1g.10gb, 1g.10gb, which fits the real cards' placement rules too.
std::vector<std::string> SimDefaultMigLayout(std::string_view model, std::int64_t memory_mib);
// "MIG-..." from a stable hash of the GPU's UUID and the GPU instance id.
std::string SimMigUuid(const GpuUuid& gpu, int gpu_instance_id);

// A simulated GPU's least power limit is its TDP divided by this (datacenter boards allow
// roughly a quarter to a third of their default).
inline constexpr std::int64_t kSimMinPowerLimitDivisor = 4;

// The most simulated GPUs one node may have (per item and in total).
inline constexpr int kMaxSimGpus = 64;

// The topology simulated GPUs get, per spec item, like an HGX board: NVLink among each run of
// kSimNvlinkGroup consecutive GPUs (an 8-GPU item: two quads, 0-3 and 4-7), one PCIe switch
// per pair (0-1, 2-3, ...), and for items of 8 or more GPUs the first half on NUMA node 0 and
// the second on 1 (smaller items: all on 0). `first` is the item's first index, `count` its
// size; requires first <= gpu.index < first + count.
inline constexpr int kSimNvlinkGroup = 4;
void SetSimTopology(Gpu& gpu, int first, int count);

// Parses "sim:ITEM[,ITEM...]" with ITEM = [COUNTx]MODEL-NNGB[:mig], COUNT in 1..64 (default 1),
// MODEL letters, digits, '.', '_' and '-'; ":mig" only on a MIG-capable model. Errors:
// kInvalidArgument naming the spec, the bad item and the accepted form.
Result<std::vector<SimGpuGroup>> ParseSimGpuSpec(std::string_view spec);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from a stable (FNV-1a) hash of the three inputs:
// the same on every run and build, different across hosts, indexes and models.
std::string SimGpuUuid(std::string_view hostname, int index, std::string_view model);

struct SimGpuOptions {
  std::string hostname{};  // for the UUIDs; empty: this machine's hostname
  // Where processes are found; empty: nowhere (only the Set* calls make a GPU busy).
  std::filesystem::path proc_root = "/proc";
  // A scan serves every GPU sampled within this long of it, so one sampling round of all
  // GPUs reads /proc once; a round slower than this rescans (the agent samples at 1 Hz).
  Millis proc_scan_interval{500};
  // Non-empty: the node stands for this Slurm compute node (sim_proc_scan.h SimSlurmNode):
  // CUDA_VISIBLE_DEVICES index entries of its Slurm jobs' processes name its GPUs.
  std::string slurm_node{};
};

class SimGpuBackend final : public GpuBackend {
 public:
  // This machine's hostname and /proc: what `gpufleet up --gpus sim:...` uses.
  // Errors: those of ParseSimGpuSpec.
  static Result<std::unique_ptr<SimGpuBackend>> Create(std::string_view spec, const Clock& clock);
  // The hostname given and no process scan (the simulator's many virtual nodes, fuzzing):
  // only the Set* calls make a GPU busy.
  static Result<std::unique_ptr<SimGpuBackend>> Create(std::string_view spec,
                                                       const Clock& clock,
                                                       std::string_view hostname);
  static Result<std::unique_ptr<SimGpuBackend>> Create(std::string_view spec,
                                                       const Clock& clock,
                                                       const SimGpuOptions& options);

  // The spec as given: "sim:4xH100-80GB".
  std::string Describe() const override;
  Result<std::vector<Gpu>> Discover() override;
  // Errors: kNotFound for an unknown index. A lost GPU is not an error: its sample has
  // lost = true and only uuid and time (like NvmlGpuBackend on GPU_IS_LOST).
  Result<GpuSample> Sample(int index) override;

  // Overrides for tests and fault injection; each wins over the load model until
  // ClearOverrides. Each returns kNotFound for an unknown index and kInvalidArgument, naming
  // the value and the accepted range, for an out-of-range one. Changes take effect at the
  // clock's current time (energy until then is billed at the previous draw).
  // Utilisation; power, clocks, pstate, PCIe, fan and temperature follow it.
  Status SetUtilization(int index, int util_pct);          // 0..100
  Status SetMemoryUsed(int index, std::int64_t used_mib);  // 0..memory_mib
  // Reported verbatim instead of the scanned processes; the GPU counts as busy when non-empty.
  Status SetProcesses(int index, std::vector<GpuProcessSample> processes);
  Status SetTemperature(int index, int temperature_c);          // die, -40..150; HBM follows it
  Status SetThrottleReasons(int index, std::uint64_t reasons);  // NVML bitmask
  Status SetEcc(int index, EccCounters ecc);                    // counts >= 0
  Status SetRemappedRows(int index, RemappedRows rows);         // counts >= 0
  // Drops every override above: the GPU follows its processes again.
  Status ClearOverrides(int index);

  // Power limits: the default and the most are the model's TDP, the least a quarter of it
  // (kSimMinPowerLimitDivisor). A set limit caps the simulated draw (and so the energy) and is
  // the sample's power_limit_mw; it is not an override (ClearOverrides keeps it). A lost GPU
  // answers kUnavailable, like NVML's GPU_IS_LOST.
  Result<GpuPowerLimits> PowerLimits(int index) override;
  Status SetPowerLimit(int index, std::int64_t limit_mw) override;

  // MIG (GpuBackend::ApplyMigLayout's contract): a GPU of a ":mig" item takes a new layout
  // when no process uses it; its MIG devices get GPU instance ids from 1, largest first, and
  // UUIDs from SimMigUuid. A process whose CUDA_VISIBLE_DEVICES names a MIG device's UUID runs
  // on that device (its memory counts there; GpuProcessSample::mig_uuid). Others: MIG mode off.
  Status ApplyMigLayout(int index, const std::vector<std::string>& profiles) override;

  // One XID error, reported once, in the next sample that is not lost. xid >= 1.
  Status InjectXid(int index, int xid);
  // A lost GPU reports lost samples (see Sample) and shows as kFailed in Discover.
  Status SetLost(int index, bool lost);

 private:
  struct Overrides {
    std::optional<int> util_pct{};
    std::optional<std::int64_t> memory_used_mib{};
    std::optional<std::vector<GpuProcessSample>> processes{};
    std::optional<int> temperature_c{};
    std::optional<std::uint64_t> throttle_reasons{};
    std::optional<EccCounters> ecc{};
    std::optional<RemappedRows> remapped_rows{};
  };
  // What the GPU is doing from its last step on (held constant until the next step).
  struct Load {
    int util_pct = 0;
    int mem_util_pct = 0;
    std::int64_t memory_used_mib = 0;
    std::int64_t power_mw = 0;
    std::vector<GpuProcessSample> processes{};
    std::vector<MigSample> mig{};  // each MIG device with the memory its processes hold
  };
  struct SimGpu {
    Gpu gpu{};
    const SimGpuProfile* profile = nullptr;
    std::uint64_t seed = 0;  // hash of the UUID: this card's wander
    Overrides overrides{};
    Load load{};
    Time last_step{};
    std::int64_t energy_uj = 0;  // microjoules: mW x ms sums exactly, no truncation per step
    double temperature_c = 0;    // die, before any override
    std::vector<XidEvent> pending_xids{};
    bool lost = false;
    std::int64_t power_limit_mw = 0;  // enforced; starts at the model's TDP
  };

  SimGpuBackend(std::string spec,
                std::vector<SimGpu> gpus,
                const Clock& clock,
                const SimGpuOptions& options);

  // REQUIRES: mu_ held. The GPU or kNotFound.
  Result<SimGpu*> Find(int index);
  // REQUIRES: mu_ held. The process table, rescanned when older than the scan interval.
  const SimGpuProcessTable& Processes(Time now);
  // REQUIRES: mu_ held. Bills energy and moves the temperature over [last step, now] at the
  // load held since then, then computes the load at `now`.
  void Step(SimGpu& gpu, Time now);
  // REQUIRES: mu_ held. The limits of a GPU that answers, or kUnavailable for a lost one.
  static Result<GpuPowerLimits> Limits(int index, const SimGpu& gpu);
  // REQUIRES: mu_ held. The load at `now` from overrides, processes and the wander.
  Load ComputeLoad(const SimGpu& gpu, Time now);
  // REQUIRES: mu_ held, Step(gpu, now) done. The sample at the current load.
  static GpuSample Render(SimGpu& gpu, Time now);
  // Locks, finds the GPU, steps it to now, applies `change` (which may refuse with an
  // error), and recomputes its load so the change counts from now on.
  Status Change(int index, const std::function<Status(SimGpu&)>& change);

  const std::string spec_;
  const Clock& clock_;
  const std::filesystem::path proc_root_;
  const Millis proc_scan_interval_;
  std::optional<SimSlurmNode> slurm_;  // set when SimGpuOptions::slurm_node is
  mutable std::mutex mu_;
  std::vector<SimGpu> gpus_;            // GUARDED_BY(mu_), in index order
  SimGpuProcessTable processes_;        // GUARDED_BY(mu_): the latest scan
  SimMemoryLimits memory_limits_;       // GUARDED_BY(mu_): of that scan
  std::optional<Time> processes_time_;  // GUARDED_BY(mu_): when it was taken
};

}  // namespace gf
