// HealthTracker: the agent's verdict on each GPU (ok / degraded / failed, with its cause),
// decided from each sample and the GPU's earlier samples, and written into the sample
// (GpuSample::health, health_cause) before it is reported.
//
// Rules (HealthPolicy holds the numbers):
//   failed    the GPU is lost ("fell off the bus");
//             a fatal XID (48, 63, 64, 74, 79, 92, 94, 95: the card needs a reset or service),
//               sticky: it stays failed until the agent restarts or Reset(uuid), since an
//               admin decides when the card may be used again;
//             the volatile uncorrectable ECC count rose since the previous sample (sticky);
//             a row remap failed.
//   degraded  any other XID, for `xid_degraded_for` after the last one (application XIDs,
//               13 31 43 45 68 69, are the job's fault and change nothing);
//             the aggregate uncorrectable ECC count is above `aggregate_uncorrectable_limit`;
//             a row remap is pending (applied at the next GPU reset);
//             the die is at or above `temperature_limit_c`, or the memory at or above
//               `memory_temperature_limit_c`; it stays degraded until the reading falls to
//               `temperature_hysteresis_c` below the limit, so a card hovering at the limit
//               does not flap;
//             a hardware throttle reason (HW slowdown, HW thermal, HW power brake) is set.
// The worst state wins. The cause names every active reason, worst first, in the order above,
// joined by "; ", e.g. "XID 79 (GPU has fallen off the bus); temperature 93 C ≥ 90 C".
// A reading the sample lacks (nullopt) neither raises nor clears its rule.
//
// Thread-safety: not thread-safe; one agent thread feeds it, each GPU's samples in time order.
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
#include "model/gpu_sample.h"
#include "model/node.h"

namespace gf {

// Bits of GpuSample::throttle_reasons (NVML's nvmlClocksEventReasons) that mean the hardware
// itself is slowing the GPU down.
inline constexpr std::uint64_t kThrottleHwSlowdown = 0x8;
inline constexpr std::uint64_t kThrottleHwThermal = 0x40;
inline constexpr std::uint64_t kThrottleHwPowerBrake = 0x80;

struct HealthPolicy {
  // Need a reset or service: failed, sticky.
  std::vector<int> fatal_xids{48, 63, 64, 74, 79, 92, 94, 95};
  // Raised by what the application did (illegal address, page fault, ...): ignored.
  std::vector<int> application_xids{13, 31, 43, 45, 68, 69};
  // Every other XID: degraded this long after its last occurrence.
  Millis xid_degraded_for{10 * 60 * 1000};
  // Row remapping absorbs a few uncorrectable errors over a card's life; more is a sign of
  // failing memory.
  std::int64_t aggregate_uncorrectable_limit = 10;
  int temperature_limit_c = 90;
  int memory_temperature_limit_c = 95;
  int temperature_hysteresis_c = 5;
  std::uint64_t degrading_throttle_reasons =
      kThrottleHwSlowdown | kThrottleHwThermal | kThrottleHwPowerBrake;
};

// What NVIDIA's documentation calls the XID ("GPU has fallen off the bus"); "" when unknown.
std::string_view XidDescription(int xid);

class HealthTracker {
 public:
  explicit HealthTracker(HealthPolicy policy = {});

  // Sets sample.health and sample.health_cause from this sample and the earlier samples of
  // the same GPU (by uuid).
  void Update(GpuSample& sample);

  // Forgets what was learnt about the GPU (sticky failures, ECC baseline, XID windows,
  // temperature state): an admin has dealt with the card. Unknown uuids are ignored.
  void Reset(const GpuUuid& uuid);

 private:
  struct Reason {
    GpuHealth severity = GpuHealth::kOk;
    std::string text;
  };
  struct GpuState {
    // Sticky failures: fatal XIDs in the order first seen; the volatile uncorrectable ECC
    // count when it first rose (from) and its latest value (to).
    std::vector<int> fatal_xids;
    std::optional<std::pair<std::int64_t, std::int64_t>> ecc_rise;
    std::map<int, Time> xid_last_seen;                 // non-fatal, non-application XIDs
    std::optional<std::int64_t> volatile_uncorrected;  // as of the previous sample
    bool hot = false;         // die temperature rule active (hysteresis state)
    bool memory_hot = false;  // memory temperature rule active
  };

  void LearnXids(const GpuSample& sample, GpuState& state) const;
  void LearnEcc(const GpuSample& sample, GpuState& state) const;
  std::vector<Reason> ActiveReasons(const GpuSample& sample, GpuState& state) const;
  void AddXidReasons(const GpuSample& sample,
                     const GpuState& state,
                     std::vector<Reason>& out) const;
  void AddEccAndRemapReasons(const GpuSample& sample, std::vector<Reason>& out) const;
  void AddTemperatureReasons(const GpuSample& sample,
                             GpuState& state,
                             std::vector<Reason>& out) const;

  HealthPolicy policy_;
  std::map<GpuUuid, GpuState> gpus_;
};

}  // namespace gf
