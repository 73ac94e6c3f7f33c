// NvmlGpuBackend: real GPUs, read through libnvidia-ml.so.1 loaded with dlopen at run time.
//
// gpufleet has no build dependency on NVIDIA: the entry points it uses are declared in
// nvml_abi.h and resolved with dlsym, so one binary runs on GPU servers and on machines without
// a driver (where Open says so and points at the simulated backend). Tests load the stand-in
// library from tests/fakenvml through the same path.
//
// Ownership: the backend owns the library handle and one NVML initialisation reference; the
// destructor shuts NVML down and unloads the library. The Clock passed to Open must outlive it.
// Thread-safety: the backend keeps no mutable state after Open and NVML is itself thread-safe,
// so calls from several threads are safe; the agent makes them from one.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "gpu/gpu_backend.h"
#include "gpu/nvml/nvml_abi.h"

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

  // Every GPU in NVML index order. A GPU that has fallen off the bus but can still be named is
  // listed with health kFailed and the cause. Errors: kUnavailable when NVML cannot list or
  // identify the devices.
  Result<std::vector<Gpu>> Discover() override;

  // One reading. Counters the card does not offer (NOT_SUPPORTED, NO_PERMISSION) are nullopt.
  // Errors: kNotFound for an index NVML does not know; kUnavailable when the GPU is lost or the
  // driver fails; the message names the GPU, the NVML call and NVML's own error text.
  Result<GpuSample> Sample(int index) override;

 private:
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
  };

  NvmlGpuBackend(void* library_handle,
                 Api api,
                 std::string library,
                 std::string driver_version,
                 const Clock& clock);

  // NVML's text for a return code ("GPU is lost"), never null.
  std::string ErrorText(nvml::Return rc) const;
  // An Error for a failed call: "<context>: <call> failed: <NVML text>", coded by rc.
  Error CallError(nvml::Return rc, std::string_view context, std::string_view call) const;
  Result<nvml::Device> Handle(int index) const;
  Result<std::string> DeviceString(nvml::DeviceGetStringFn fn,
                                   std::string_view call,
                                   nvml::Device device,
                                   std::string_view context) const;
  Result<std::vector<GpuProcessSample>> Processes(nvml::Device device,
                                                  std::string_view context) const;

  void* library_handle_;  // from dlopen; closed in the destructor
  Api api_;
  std::string library_;
  std::string driver_version_;
  const Clock& clock_;
};

}  // namespace gf
