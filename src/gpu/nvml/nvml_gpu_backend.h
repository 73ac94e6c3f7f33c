// NvmlGpuBackend: real GPUs, read through libnvidia-ml.so.1 loaded with dlopen at run time.
//
// gpufleet has no build dependency on NVIDIA: the entry points it uses are declared in
// nvml_abi.h and resolved with dlsym, so one binary runs on GPU servers and on machines without
// a driver (where Open says so and points at the simulated backend). Tests load the stand-in
// library from tests/fakenvml through the same path.
//
// Entry points that only newer drivers export (remapped rows, field values, event sets, ...) are
// optional: without one, the counters it reads are nullopt. XID errors come from one NVML event
// set opened with the backend; each Sample drains it without waiting and hands every GPU the
// XIDs seen since its previous sample.
//
// Ownership: the backend owns the library handle, one NVML initialisation reference and the XID
// event set; the destructor frees the set, shuts NVML down and unloads the library. The Clock
// passed to Open must outlive it.
// Thread-safety: Discover and Sample serialise on one mutex (they share the pending XIDs, the
// per-GPU time stamps of per-process utilisation and the known UUIDs), so calls from several
// threads are safe; the agent makes them from one.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "gpu/gpu_backend.h"
#include "gpu/nvml/nvml_abi.h"
#include "gpu/nvml/nvml_mig.h"
#include "gpu/nvml/nvml_topology.h"

namespace gf {

// The library file dlopen looks for when the spec is plain "nvml".
inline constexpr std::string_view kNvmlDefaultLibrary = "libnvidia-ml.so.1";
// Appended to every "no driver" error, so a person trying gpufleet knows what to do next.
inline constexpr std::string_view kSimGpusHint =
    "to try gpufleet without GPUs, use --gpus sim:4xH100-80GB";

class NvmlGpuBackend final : public GpuBackend {
 public:
  // Loads the library (a file name dlopen searches for, or a path), resolves the entry points and
  // initialises NVML. Errors: kUnavailable when the library cannot be loaded, lacks an entry
  // point, or nvmlInit_v2 fails; the message carries the cause and kSimGpusHint.
  static Result<std::unique_ptr<NvmlGpuBackend>> Open(std::string library, const Clock& clock);

  ~NvmlGpuBackend() override;
  NvmlGpuBackend(const NvmlGpuBackend&) = delete;
  NvmlGpuBackend& operator=(const NvmlGpuBackend&) = delete;

  // "nvml (driver 550.54.15)"; "nvml:/path/libnvidia-ml.so.1 (driver ...)" for another file.
  std::string Describe() const override;

  // Every GPU in NVML index order, with its topology where the driver tells it
  // (nvml_topology.h). A GPU that has fallen off the bus but can still be named is
  // listed with health kFailed and the cause. Errors: kUnavailable when NVML cannot list or
  // identify the devices.
  Result<std::vector<Gpu>> Discover() override;

  // One reading. Counters the card does not offer (NOT_SUPPORTED, NO_PERMISSION) or the driver
  // is too old to export are nullopt. A GPU that answers GPU_IS_LOST to any call is data, not an
  // error: the sample has lost = true, uuid, time and the XIDs already drained for it, nothing
  // else. Errors: kNotFound for an index NVML does not know; kUnavailable when the driver fails
  // (or a lost GPU was never identified); the message names the GPU, the NVML call and NVML's
  // own error text.
  Result<GpuSample> Sample(int index) override;

  // Power limits (nvml_power.cpp). Optional entry points: a driver without them answers
  // kFailedPrecondition, as does a card without power management (NOT_SUPPORTED);
  // NO_PERMISSION is kPermissionDenied ("needs root"); a limit outside the card's constraints is
  // kInvalidArgument naming the range, checked before NVML is asked. They do not take mu_ (NVML
  // is thread-safe and they touch no state of the backend), so a restore before a launch never
  // waits behind a slow sample.
  Result<GpuPowerLimits> PowerLimits(int index) override;
  Status SetPowerLimit(int index, std::int64_t limit_mw) override;

  // MIG (nvml_mig.h): the contract of GpuBackend::ApplyMigLayout. Takes mu_, so a sample never
  // sees half a layout.
  Status ApplyMigLayout(int index, const std::vector<std::string>& profiles) override;

 private:
  class CounterReader;
  struct Api {
    nvml::InitFn init = nullptr;
    nvml::ShutdownFn shutdown = nullptr;
    nvml::ErrorStringFn error_string = nullptr;
    nvml::SystemGetDriverVersionFn system_get_driver_version = nullptr;
    nvml::DeviceGetCountFn device_get_count = nullptr;
    nvml::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
    nvml::DeviceGetIndexFn device_get_index = nullptr;
    nvml::DeviceGetStringFn device_get_uuid = nullptr;
    nvml::DeviceGetStringFn device_get_name = nullptr;
    nvml::DeviceGetMemoryInfoFn device_get_memory_info = nullptr;
    nvml::DeviceGetUtilizationRatesFn device_get_utilization_rates = nullptr;
    nvml::DeviceGetTemperatureFn device_get_temperature = nullptr;
    nvml::DeviceGetPowerUsageFn device_get_power_usage = nullptr;
    nvml::DeviceGetTotalEnergyConsumptionFn device_get_total_energy_consumption = nullptr;
    nvml::DeviceGetComputeRunningProcessesFn device_get_compute_running_processes = nullptr;
    // Optional: null where the driver predates them.
    nvml::DeviceGetUIntFn device_get_enforced_power_limit = nullptr;
    nvml::DeviceGetEnumUIntFn device_get_clock_info = nullptr;
    nvml::DeviceGetEnumUIntFn device_get_pcie_throughput = nullptr;
    nvml::DeviceGetUIntFn device_get_pcie_replay_counter = nullptr;
    nvml::DeviceGetTotalEccErrorsFn device_get_total_ecc_errors = nullptr;
    nvml::DeviceGetRemappedRowsFn device_get_remapped_rows = nullptr;
    nvml::DeviceGetULongLongFn device_get_clocks_event_reasons = nullptr;
    std::string_view clocks_event_reasons_call;  // the name it was found under
    nvml::DeviceGetUIntFn device_get_fan_speed = nullptr;
    nvml::DeviceGetPerformanceStateFn device_get_performance_state = nullptr;
    nvml::DeviceGetFieldValuesFn device_get_field_values = nullptr;
    nvml::DeviceGetProcessUtilizationFn device_get_process_utilization = nullptr;
    nvml::EventSetCreateFn event_set_create = nullptr;
    nvml::DeviceRegisterEventsFn device_register_events = nullptr;
    nvml::EventSetWaitFn event_set_wait = nullptr;
    nvml::EventSetFreeFn event_set_free = nullptr;
    nvml::DeviceGetUIntFn device_get_power_limit = nullptr;  // the limit set now
    nvml::DeviceGetUIntFn device_get_power_default_limit = nullptr;
    nvml::DeviceGetPowerLimitConstraintsFn device_get_power_limit_constraints = nullptr;
    nvml::DeviceSetPowerLimitFn device_set_power_limit = nullptr;
    NvmlTopologyApi topology{};  // NVLink, PCIe switch, NUMA (nvml_topology.h)
    NvmlMigApi mig{};            // MIG (nvml_mig.h); its required entries copied from above
  };

  // Resolves the entry points newer drivers export; each missing one stays null.
  static void LoadOptionalSymbols(void* handle, Api& api);

  // The error of a failed power call, coded for the power policy: NOT_SUPPORTED is
  // kFailedPrecondition, NO_PERMISSION kPermissionDenied with the "needs root" hint.
  Error PowerCallError(nvml::Return rc, std::string_view context, std::string_view call) const;

  NvmlGpuBackend(void* library_handle,
                 Api api,
                 std::string library,
                 std::string driver_version,
                 const Clock& clock);

  // NVML's text for a return code ("GPU is lost"), never null.
  std::string ErrorText(nvml::Return rc) const;
  // An Error for a failed call: "<context>: <call> failed: <NVML text>", coded by rc.
  Error CallError(nvml::Return rc, std::string_view context, std::string_view call) const;
  // The failure a reader recorded, as CallError plus the reader's note.
  Error ReaderError(const CounterReader& reader, std::string_view context) const;
  Result<nvml::Device> Handle(int index) const;
  Result<std::string> DeviceString(nvml::DeviceGetStringFn fn,
                                   std::string_view call,
                                   nvml::Device device,
                                   std::string_view context) const;
  std::optional<std::string> DeviceString(nvml::DeviceGetStringFn fn,
                                          std::string_view call,
                                          nvml::Device device,
                                          CounterReader& reader) const;

  // The counters of one GPU into `sample`; failures are left in `reader`.
  void ReadCounters(nvml::Device device, CounterReader& reader, GpuSample& sample) const;
  void ReadHealthCounters(nvml::Device device, CounterReader& reader, GpuSample& sample) const;
  std::optional<int> MemoryTemperature(nvml::Device device, CounterReader& reader) const;
  std::optional<RemappedRows> ReadRemappedRows(nvml::Device device, CounterReader& reader) const;
  // The GPU's compute processes; on a GPU in MIG mode each gets the UUID of its MIG device.
  std::vector<GpuProcessSample> Processes(nvml::Device device,
                                          const std::vector<MigSample>& mig,
                                          CounterReader& reader) const;
  // REQUIRES: mu_ held. Adds each process's newest utilisation since the previous call for uuid.
  void AddProcessUtilization(nvml::Device device,
                             const std::string& uuid,
                             CounterReader& reader,
                             std::vector<GpuProcessSample>& processes);

  // Creates the XID event set and registers every GPU that supports it; no set when the driver
  // lacks the entry points or no GPU can be registered (XIDs are then never reported).
  void WatchXids();
  // REQUIRES: mu_ held. Moves every event waiting in the set into pending_xids_.
  void DrainXids();
  // REQUIRES: mu_ held. The XIDs drained for uuid since its previous sample.
  std::vector<XidEvent> TakeXids(const std::string& uuid);
  // REQUIRES: mu_ held. How Sample ends when a call failed: a lost sample for GPU_IS_LOST on a
  // GPU whose UUID is known, else the reader's error.
  Result<GpuSample> FailedSample(int index,
                                 GpuSample sample,
                                 const CounterReader& reader,
                                 std::string_view context);

  void* library_handle_;  // from dlopen; closed in the destructor
  Api api_;
  std::string library_;
  std::string driver_version_;
  const Clock& clock_;

  std::mutex mu_;
  nvml::EventSet xid_events_ = nullptr;                        // null: XIDs are not watched
  std::map<nvml::Device, std::string> watched_;                // registered handle -> UUID
  std::map<std::string, std::vector<XidEvent>> pending_xids_;  // GUARDED_BY(mu_), by UUID
  // GUARDED_BY(mu_): per UUID, the newest per-process utilisation time stamp seen (us).
  std::map<std::string, unsigned long long> process_util_seen_us_;  // NOLINT(google-runtime-int)
  std::map<int, std::string> known_uuids_;  // GUARDED_BY(mu_): index -> UUID, for lost GPUs
};

}  // namespace gf
