// GpuSample: one reading of one GPU's counters, as a GpuBackend returns it, plus what the
// agent's monitor adds before reporting it (process attribution, health verdict).
// Plain value types. Fields a driver does not offer stay nullopt (never a fake zero).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "model/node.h"

namespace gf {

inline constexpr std::size_t kProcessCommandMaxBytes = 256;

struct GpuProcessSample {
  std::uint32_t pid = 0;
  std::optional<std::int64_t> used_memory_mib{};  // nullopt when the driver cannot tell
  std::optional<int> sm_util_pct{};   // per-process utilisation, where the driver offers it
  std::optional<int> mem_util_pct{};  // (nvmlDeviceGetProcessUtilization), 0..100
  // On a GPU in MIG mode: the MIG device (GpuSample::mig) the process runs on; empty otherwise
  // or when the driver does not say.
  GpuUuid mig_uuid{};

  // Attribution, filled by the agent's monitor (backends leave these empty):
  std::optional<JobId> job{};          // the gpufleet job the process belongs to
  std::optional<std::uint32_t> uid{};  // the process owner, from /proc/<pid>/status
  std::string user{};                  // that uid's login name ("uid1234" when unknown)
  bool unmanaged = false;              // true: gpufleet did not start it (no job)
  // Kubernetes mode (`gpufleet agent --kubernetes`): the pod ("namespace/name") and container
  // the process runs in, "" when in none. Set with job empty and unmanaged true: a process of
  // a pod whose container does not hold this GPU, running outside its allocation.
  std::string pod{};
  std::string container{};
  // What the process does on the host (top's process panel), from /proc as well:
  std::optional<double> cpu_pct{};  // CPU time over the last sampling interval, in % of one
                                    // core (like top: 250 = two and a half cores); nullopt
                                    // on the first sample of a pid
  std::optional<std::int64_t> host_memory_mib{};  // resident set size (VmRSS)
  // Its command line (/proc/<pid>/cmdline, arguments joined by spaces), at most
  // kProcessCommandMaxBytes. The API shows it only to the process owner and to operators and
  // admins: an argument may hold a secret.
  std::string command{};
  bool operator==(const GpuProcessSample&) const = default;
};

// One XID error reported by the driver (NVML event set, nvmlEventTypeXidCriticalError).
struct XidEvent {
  int xid = 0;
  Time time{};
  bool operator==(const XidEvent&) const = default;
};

// ECC error counters (nvmlDeviceGetTotalEccErrors). Volatile: since the last driver load;
// aggregate: over the card's life. nullopt where ECC is off or unsupported.
struct EccCounters {
  std::optional<std::int64_t> volatile_corrected{};
  std::optional<std::int64_t> volatile_uncorrected{};
  std::optional<std::int64_t> aggregate_corrected{};
  std::optional<std::int64_t> aggregate_uncorrected{};
  bool operator==(const EccCounters&) const = default;
};

// Row remapping (Ampere and later, nvmlDeviceGetRemappedRows).
struct RemappedRows {
  std::int64_t correctable = 0;    // rows remapped after correctable errors
  std::int64_t uncorrectable = 0;  // rows remapped after uncorrectable errors
  bool pending = false;            // a remap waits for the next GPU reset
  bool failure = false;            // a remap failed: the card needs service
  bool operator==(const RemappedRows&) const = default;
};

// One MIG device of a GPU in MIG mode at sample time: its identity, as Gpu::mig_instances has
// it, and its own memory (nvmlDeviceGetMemoryInfo on the MIG handle; nullopt if unreadable).
// NVML offers no utilisation per MIG device.
struct MigSample {
  MigInstance instance{};
  std::optional<std::int64_t> memory_used_mib{};
  std::optional<std::int64_t> memory_total_mib{};
  bool operator==(const MigSample&) const = default;
};

struct GpuSample {
  GpuUuid uuid{};
  Time time{};
  // The GPU fell off the bus / NVML answers GPU_IS_LOST: only uuid, time and lost are set.
  bool lost = false;

  std::int64_t memory_total_mib = 0;  // framebuffer
  std::int64_t memory_used_mib = 0;
  std::int64_t memory_free_mib = 0;
  std::optional<int> util_gpu_pct{};             // 0..100, over the driver's last sample period
  std::optional<int> util_memory_pct{};          // memory-copy utilisation, 0..100
  std::optional<int> temperature_c{};            // GPU die
  std::optional<int> memory_temperature_c{};     // HBM, where the driver offers it
  std::optional<std::int64_t> power_mw{};        // current draw, milliwatts
  std::optional<std::int64_t> power_limit_mw{};  // enforced power limit, milliwatts
  std::optional<std::int64_t> energy_mj{};       // total since driver load, millijoules
  std::optional<int> sm_clock_mhz{};
  std::optional<int> mem_clock_mhz{};
  std::optional<std::int64_t> pcie_tx_kbps{};  // KB/s over the driver's last period
  std::optional<std::int64_t> pcie_rx_kbps{};
  std::optional<std::int64_t> pcie_replay_count{};  // total since driver load
  EccCounters ecc{};
  std::optional<RemappedRows> remapped_rows{};
  // NVML's nvmlClocksEventReasons bitmask (clocks throttle reasons): 0x1 GPU idle, 0x4 SW
  // power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake.
  std::optional<std::uint64_t> throttle_reasons{};
  std::optional<int> fan_speed_pct{};         // nullopt on passively cooled cards
  std::optional<int> pstate{};                // 0 (P0, fastest) .. 15; nullopt when unknown
  std::vector<XidEvent> xids{};               // XID errors since the previous sample of this GPU
  std::vector<GpuProcessSample> processes{};  // compute processes on this GPU
  // MIG: the current mode and, when on, the MIG devices by gpu_instance_id. A layout applied
  // since the last Discover shows here first.
  bool mig_enabled = false;
  std::vector<MigSample> mig{};
  // Set by the agent on the sample after a MIG layout it was told to apply failed: why ("" when
  // none failed). Once: the next round's sample has it empty again.
  std::string mig_layout_error{};

  // Set by the agent's monitor (HealthTracker) from this and earlier samples.
  GpuHealth health = GpuHealth::kOk;
  std::string health_cause{};  // "" when ok; "XID 79: GPU has fallen off the bus", ...
  bool operator==(const GpuSample&) const = default;
};

// NVML's clocks event (throttle) reason bits that gpufleet names, lowest bit first:
// "gpu_idle" (0x1), "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
// "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
// "display_clock_setting" (0x100). One table for the API, /metrics and the health rules.
struct ThrottleReason {
  std::uint64_t bit = 0;
  std::string_view name;
};
std::span<const ThrottleReason> KnownThrottleReasons();
// The bits above, or-ed: a bit outside it is one a newer driver added.
std::uint64_t KnownThrottleBits();
// The names of the bits set in `reasons`, lowest first; an unknown bit is "unknown_0x200" (its
// value), shown rather than dropped so the list never hides a reason.
std::vector<std::string> ThrottleReasonNames(std::uint64_t reasons);

}  // namespace gf
