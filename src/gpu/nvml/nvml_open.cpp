// Loading the driver: NvmlGpuBackend::Open resolves NVML's entry points from libnvidia-ml
// with dlopen/dlsym (the required ones, then those newer drivers export), initialises NVML,
// and hands the library to the backend, which shuts NVML down and closes it when destroyed.
// Split from nvml_gpu_backend.cpp, which reads the GPUs.
#include <initializer_list>
#include <string_view>
#include <utility>

#include <dlfcn.h>

#include "gpu/nvml/nvml_gpu_backend.h"

namespace gf {
namespace {

// Resolves one entry point. The cast from dlsym's void* to a function pointer is what POSIX
// requires dlsym to support.
template <typename Fn>
Status LoadSymbol(void* handle, const char* name, const std::string& library, Fn& out) {
  // dlerror keeps its state per thread in glibc, so these calls are safe here.
  dlerror();  // NOLINT(concurrency-mt-unsafe): clears a stale error so the one below is ours
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    const char* why = dlerror();  // NOLINT(concurrency-mt-unsafe): per-thread in glibc
    return Unavailable("no usable NVIDIA driver: " + library + " has no entry point " + name +
                       " (" + (why != nullptr ? why : "symbol is null") +
                       "; the driver may be older than gpufleet supports); " +
                       std::string(kSimGpusHint));
  }
  out = reinterpret_cast<Fn>(symbol);
  return OkStatus();
}

// Resolves an entry point newer drivers export, trying each name in turn (a renamed function
// keeps its old name as an alias for a while). Null when none is exported: the counters it
// reads are then absent. Returns the name that was found ("" when none).
template <typename Fn>
std::string_view LoadOptionalSymbol(void* handle,
                                    std::initializer_list<std::string_view> names,
                                    Fn& out) {
  for (std::string_view name : names) {
    // The names are string literals, so data() is NUL-terminated.
    if (void* symbol = dlsym(handle, name.data()); symbol != nullptr) {
      out = reinterpret_cast<Fn>(symbol);
      return name;
    }
  }
  out = nullptr;
  return {};
}

}  // namespace

Result<std::unique_ptr<NvmlGpuBackend>> NvmlGpuBackend::Open(std::string library,
                                                             const Clock& clock) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();  // NOLINT(concurrency-mt-unsafe): per-thread in glibc
    return Unavailable("no NVIDIA driver: " + library + " could not be loaded (" +
                       (why != nullptr ? why : "unknown dlopen error") + "); " +
                       std::string(kSimGpusHint));
  }
  // Closes the library on every early return below.
  std::unique_ptr<void, int (*)(void*)> guard(handle, dlclose);

  Api api;
  for (const Status& s : {
           LoadSymbol(handle, "nvmlInit_v2", library, api.init),
           LoadSymbol(handle, "nvmlShutdown", library, api.shutdown),
           LoadSymbol(handle, "nvmlErrorString", library, api.error_string),
           LoadSymbol(handle, "nvmlSystemGetDriverVersion", library, api.system_get_driver_version),
           LoadSymbol(handle, "nvmlDeviceGetCount_v2", library, api.device_get_count),
           LoadSymbol(
               handle, "nvmlDeviceGetHandleByIndex_v2", library, api.device_get_handle_by_index),
           LoadSymbol(handle, "nvmlDeviceGetIndex", library, api.device_get_index),
           LoadSymbol(handle, "nvmlDeviceGetUUID", library, api.device_get_uuid),
           LoadSymbol(handle, "nvmlDeviceGetName", library, api.device_get_name),
           LoadSymbol(handle, "nvmlDeviceGetMemoryInfo", library, api.device_get_memory_info),
           LoadSymbol(
               handle, "nvmlDeviceGetUtilizationRates", library, api.device_get_utilization_rates),
           LoadSymbol(handle, "nvmlDeviceGetTemperature", library, api.device_get_temperature),
           LoadSymbol(handle, "nvmlDeviceGetPowerUsage", library, api.device_get_power_usage),
           LoadSymbol(handle,
                      "nvmlDeviceGetTotalEnergyConsumption",
                      library,
                      api.device_get_total_energy_consumption),
           LoadSymbol(handle,
                      "nvmlDeviceGetComputeRunningProcesses_v3",
                      library,
                      api.device_get_compute_running_processes),
       }) {
    if (!s.ok()) {
      return s.error();
    }
  }
  LoadOptionalSymbols(handle, api);
  api.mig.error_string = api.error_string;
  api.mig.uuid = api.device_get_uuid;
  api.mig.memory_info = api.device_get_memory_info;
  api.mig.running_processes = api.device_get_compute_running_processes;

  nvml::Return rc = api.init();
  if (rc != nvml::kSuccess) {
    const char* text = api.error_string(rc);
    return Unavailable("no NVIDIA driver: NVML could not be initialised (nvmlInit_v2 failed: " +
                       std::string(text != nullptr ? text : "unknown error") + ", code " +
                       std::to_string(rc) + "); " + std::string(kSimGpusHint));
  }

  char version[nvml::kSystemDriverVersionBufferSize] = {};
  std::string driver_version = "unknown";
  if (api.system_get_driver_version(version, sizeof(version)) == nvml::kSuccess) {
    driver_version = nvml::StringIn(version, sizeof(version));
  }

  static_cast<void>(guard.release());  // the backend owns the handle from here
  std::unique_ptr<NvmlGpuBackend> backend(
      new NvmlGpuBackend(handle, api, std::move(library), std::move(driver_version), clock));
  backend->WatchXids();
  return backend;
}

void NvmlGpuBackend::LoadOptionalSymbols(void* handle, Api& api) {
  LoadOptionalSymbol(
      handle, {"nvmlDeviceGetEnforcedPowerLimit"}, api.device_get_enforced_power_limit);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetClockInfo"}, api.device_get_clock_info);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetPcieThroughput"}, api.device_get_pcie_throughput);
  LoadOptionalSymbol(
      handle, {"nvmlDeviceGetPcieReplayCounter"}, api.device_get_pcie_replay_counter);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetTotalEccErrors"}, api.device_get_total_ecc_errors);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetRemappedRows"}, api.device_get_remapped_rows);
  // Renamed in R535; the old name stays exported by newer drivers but may one day go.
  api.clocks_event_reasons_call = LoadOptionalSymbol(
      handle,
      {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
      api.device_get_clocks_event_reasons);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetFanSpeed"}, api.device_get_fan_speed);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetPerformanceState"}, api.device_get_performance_state);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetFieldValues"}, api.device_get_field_values);
  LoadOptionalSymbol(
      handle, {"nvmlDeviceGetProcessUtilization"}, api.device_get_process_utilization);
  LoadOptionalSymbol(handle, {"nvmlEventSetCreate"}, api.event_set_create);
  LoadOptionalSymbol(handle, {"nvmlDeviceRegisterEvents"}, api.device_register_events);
  LoadOptionalSymbol(handle, {"nvmlEventSetWait_v2"}, api.event_set_wait);
  LoadOptionalSymbol(handle, {"nvmlEventSetFree"}, api.event_set_free);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetPciInfo_v3"}, api.topology.pci_info);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetTopologyCommonAncestor"}, api.topology.common_ancestor);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetNvLinkState"}, api.topology.nvlink_state);
  LoadOptionalSymbol(
      handle, {"nvmlDeviceGetNvLinkRemotePciInfo_v2"}, api.topology.nvlink_remote_pci_info);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetNumaNodeId"}, api.topology.numa_node_id);
  // Power management (nvml_power.cpp): every driver gpufleet supports has them, but a
  // missing one only turns the power policy off.
  LoadOptionalSymbol(handle, {"nvmlDeviceGetPowerManagementLimit"}, api.device_get_power_limit);
  LoadOptionalSymbol(
      handle, {"nvmlDeviceGetPowerManagementDefaultLimit"}, api.device_get_power_default_limit);
  LoadOptionalSymbol(handle,
                     {"nvmlDeviceGetPowerManagementLimitConstraints"},
                     api.device_get_power_limit_constraints);
  LoadOptionalSymbol(handle, {"nvmlDeviceSetPowerManagementLimit"}, api.device_set_power_limit);
  // MIG (nvml_mig.h): R470 and later.
  NvmlMigApi& mig = api.mig;
  LoadOptionalSymbol(handle, {"nvmlDeviceGetMigMode"}, mig.mig_mode);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetMaxMigDeviceCount"}, mig.max_mig_device_count);
  LoadOptionalSymbol(
      handle, {"nvmlDeviceGetMigDeviceHandleByIndex"}, mig.mig_device_handle_by_index);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetGpuInstanceId"}, mig.gpu_instance_id);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetComputeInstanceId"}, mig.compute_instance_id);
  LoadOptionalSymbol(
      handle, {"nvmlDeviceGetGpuInstanceProfileInfoV"}, mig.gpu_instance_profile_info);
  LoadOptionalSymbol(handle, {"nvmlDeviceGetGpuInstances"}, mig.gpu_instances);
  LoadOptionalSymbol(handle, {"nvmlGpuInstanceGetInfo"}, mig.gpu_instance_info);
  LoadOptionalSymbol(handle, {"nvmlDeviceCreateGpuInstance"}, mig.create_gpu_instance);
  LoadOptionalSymbol(handle, {"nvmlGpuInstanceDestroy"}, mig.destroy_gpu_instance);
  LoadOptionalSymbol(
      handle, {"nvmlGpuInstanceGetComputeInstanceProfileInfo"}, mig.compute_instance_profile_info);
  LoadOptionalSymbol(handle, {"nvmlGpuInstanceCreateComputeInstance"}, mig.create_compute_instance);
  LoadOptionalSymbol(handle, {"nvmlGpuInstanceGetComputeInstances"}, mig.compute_instances);
  LoadOptionalSymbol(handle, {"nvmlComputeInstanceDestroy"}, mig.destroy_compute_instance);
}

NvmlGpuBackend::NvmlGpuBackend(void* library_handle,
                               Api api,
                               std::string library,
                               std::string driver_version,
                               const Clock& clock)
    : library_handle_(library_handle),
      api_(api),
      library_(std::move(library)),
      driver_version_(std::move(driver_version)),
      clock_(clock) {}

NvmlGpuBackend::~NvmlGpuBackend() {
  // Nothing useful to do with a failed free or shutdown at this point: the process lets go.
  if (xid_events_ != nullptr) {
    static_cast<void>(api_.event_set_free(xid_events_));
  }
  static_cast<void>(api_.shutdown());
  dlclose(library_handle_);
}

}  // namespace gf
