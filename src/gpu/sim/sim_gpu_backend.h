// SimGpuBackend: simulated GPUs for demos, tests and machines without an NVIDIA driver.
//
// Built from a spec such as "sim:8xH100-80GB" or "sim:2xA100-40GB,4xL4-24GB". The cards idle
// (0 % utilisation, ~30 C, a plausible idle draw) until a test or a later simulator sets a load
// with the Set* calls; the energy counter integrates power over the injected Clock's time, so a
// ManualClock drives it exactly. UUIDs derive from the hostname, index and model, so they are
// the same every time the process starts on the same host (the controller keys GPUs by UUID).
//
// Ownership: the Clock must outlive the backend. Thread-safety: all methods are thread-safe
// (one mutex), so a test thread may set a load while the agent samples.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "gpu/gpu_backend.h"

namespace gf {

// One "COUNTxMODEL-NNGB" item of a sim spec.
struct SimGpuGroup {
  int count = 1;
  std::string model;            // "H100-80GB"
  std::int64_t memory_mib = 0;  // NN * 1024
  bool operator==(const SimGpuGroup&) const = default;
};

// The most simulated GPUs one node may have (per item and in total).
inline constexpr int kMaxSimGpus = 64;

// Parses "sim:ITEM[,ITEM...]" with ITEM = [COUNTx]MODEL-NNGB, COUNT in 1..64 (default 1), MODEL
// letters, digits, '.', '_' and '-'. Errors: kInvalidArgument naming the spec, the bad item and
// the accepted form.
Result<std::vector<SimGpuGroup>> ParseSimGpuSpec(std::string_view spec);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from a stable (FNV-1a) hash of the three inputs:
// the same on every run and build, different across hosts, indexes and models.
std::string SimGpuUuid(std::string_view hostname, int index, std::string_view model);

class SimGpuBackend final : public GpuBackend {
 public:
  // Uses this machine's hostname for the UUIDs. Errors: those of ParseSimGpuSpec.
  static Result<std::unique_ptr<SimGpuBackend>> Create(std::string_view spec, const Clock& clock);
  // Same, with the hostname given (tests, and the simulator's many virtual nodes).
  static Result<std::unique_ptr<SimGpuBackend>> Create(std::string_view spec,
                                                       const Clock& clock,
                                                       std::string_view hostname);

  // The spec as given: "sim:4xH100-80GB".
  std::string Describe() const override;
  Result<std::vector<Gpu>> Discover() override;
  // Errors: kNotFound for an unknown index; kUnavailable for a GPU marked lost.
  Result<GpuSample> Sample(int index) override;

  // Load controls. Each returns kNotFound for an unknown index and kInvalidArgument for an
  // out-of-range value. Utilisation also drives power (idle..max linearly) and temperature.
  Status SetUtilization(int index, int util_pct);          // 0..100
  Status SetMemoryUsed(int index, std::int64_t used_mib);  // 0..memory_mib
  Status SetProcesses(int index, std::vector<GpuProcessSample> processes);
  // A lost GPU fails Sample (like NVML's GPU_IS_LOST) and shows as kFailed in Discover.
  Status SetLost(int index, bool lost);

 private:
  struct SimGpu {
    Gpu gpu;
    std::int64_t idle_power_mw = 0;
    std::int64_t max_power_mw = 0;
    int util_pct = 0;
    std::int64_t memory_used_mib = 0;
    std::vector<GpuProcessSample> processes;
    bool lost = false;
    std::int64_t energy_uj = 0;  // microjoules: mW x ms sums exactly, no truncation per sample
    Time last_accrual{};
  };

  SimGpuBackend(std::string spec, std::vector<SimGpu> gpus, const Clock& clock);

  // REQUIRES: mu_ held. Adds the energy used since the last accrual at the current power.
  void Accrue(SimGpu& gpu, Time now);
  // REQUIRES: mu_ held.
  static std::int64_t PowerMw(const SimGpu& gpu);
  // REQUIRES: mu_ held. The GPU or kNotFound.
  Result<SimGpu*> Find(int index);

  const std::string spec_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<SimGpu> gpus_;  // GUARDED_BY(mu_), in index order
};

}  // namespace gf
