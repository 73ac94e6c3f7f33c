#include "gpu/nvml/nvml_gpu_backend.h"

#include <optional>
#include <utility>

#include <dlfcn.h>

#include "gpu/gpu_model_name.h"

namespace gf {
namespace {

constexpr std::int64_t kBytesPerMib = std::int64_t{1024} * 1024;
// Processes can start between the size query and the fill: retry a few times, with slack.
constexpr int kProcessQueryAttempts = 5;
constexpr unsigned int kProcessSlack = 8;

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

// Trims a C string out of a fixed buffer NVML filled (it always NUL-terminates on success, but
// never trust a foreign library with the end of a buffer).
std::string FromBuffer(const char* buffer, std::size_t size) {
  std::size_t n = 0;
  while (n < size && buffer[n] != '\0') {
    ++n;
  }
  return std::string(buffer, n);
}

ErrorCode CodeFor(nvml::Return rc) {
  switch (rc) {
    case nvml::kErrorInvalidArgument:
    case nvml::kErrorNotFound:
      return ErrorCode::kNotFound;
    case nvml::kErrorNoPermission:
      return ErrorCode::kPermissionDenied;
    case nvml::kErrorUnknown:
    case nvml::kErrorInsufficientSize:
      return ErrorCode::kInternal;
    default:
      // Lost GPUs, resets, a driver gone or timing out: the dependency is not there right now.
      return ErrorCode::kUnavailable;
  }
}

// Counters that some cards or some permission setups do not offer are absent, not errors.
bool IsAbsentCounter(nvml::Return rc) {
  return rc == nvml::kErrorNotSupported || rc == nvml::kErrorNoPermission;
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
    driver_version = FromBuffer(version, sizeof(version));
  }

  static_cast<void>(guard.release());  // the backend owns the handle from here
  return std::unique_ptr<NvmlGpuBackend>(
      new NvmlGpuBackend(handle, api, std::move(library), std::move(driver_version), clock));
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
  // Nothing useful to do with a failed shutdown at this point: the process is letting go.
  static_cast<void>(api_.shutdown());
  dlclose(library_handle_);
}

std::string NvmlGpuBackend::Describe() const {
  std::string name = library_ == kNvmlDefaultLibrary ? "nvml" : "nvml:" + library_;
  return name + " (driver " + driver_version_ + ")";
}

std::string NvmlGpuBackend::ErrorText(nvml::Return rc) const {
  const char* text = api_.error_string(rc);
  return text != nullptr ? std::string(text) : "NVML error " + std::to_string(rc);
}

Error NvmlGpuBackend::CallError(nvml::Return rc,
                                std::string_view context,
                                std::string_view call) const {
  std::string message =
      std::string(context) + ": " + std::string(call) + " failed: " + ErrorText(rc);
  if (rc == nvml::kErrorGpuIsLost) {
    message += " (the GPU has fallen off the bus; it needs a reset or a reboot)";
  }
  return MakeError(CodeFor(rc), std::move(message));
}

Result<nvml::Device> NvmlGpuBackend::Handle(int index) const {
  std::string context = "GPU " + std::to_string(index);
  if (index < 0) {
    return NotFound(context + ": no such GPU (indexes start at 0)");
  }
  nvml::Device device = nullptr;
  nvml::Return rc = api_.device_get_handle_by_index(static_cast<unsigned int>(index), &device);
  if (rc == nvml::kErrorInvalidArgument) {
    unsigned int count = 0;
    static_cast<void>(api_.device_get_count(&count));
    return NotFound(context + ": no such GPU (NVML sees " + std::to_string(count) + ")");
  }
  if (rc != nvml::kSuccess) {
    return CallError(rc, context, "nvmlDeviceGetHandleByIndex_v2");
  }
  return device;
}

Result<std::string> NvmlGpuBackend::DeviceString(nvml::DeviceGetStringFn fn,
                                                 std::string_view call,
                                                 nvml::Device device,
                                                 std::string_view context) const {
  char buffer[nvml::kDeviceUuidBufferSize > nvml::kDeviceNameBufferSize
                  ? nvml::kDeviceUuidBufferSize
                  : nvml::kDeviceNameBufferSize] = {};
  nvml::Return rc = fn(device, buffer, sizeof(buffer));
  if (rc != nvml::kSuccess) {
    return CallError(rc, context, call);
  }
  return FromBuffer(buffer, sizeof(buffer));
}

Result<std::vector<GpuProcessSample>> NvmlGpuBackend::Processes(nvml::Device device,
                                                                std::string_view context) const {
  // Ask for the count first (count 0, no buffer), then fill; the list can grow in between.
  unsigned int count = 0;
  std::vector<nvml::ProcessInfo> infos;
  for (int attempt = 0; attempt < kProcessQueryAttempts; ++attempt) {
    unsigned int capacity = count;
    infos.assign(capacity, nvml::ProcessInfo{});
    nvml::Return rc = api_.device_get_compute_running_processes(
        device, &capacity, infos.empty() ? nullptr : infos.data());
    if (rc == nvml::kSuccess) {
      infos.resize(capacity);
      std::vector<GpuProcessSample> out;
      out.reserve(infos.size());
      for (const nvml::ProcessInfo& info : infos) {
        // Memory the driver cannot attribute counts as 0 MiB: GpuProcessSample has no "unknown".
        std::int64_t used_mib =
            info.used_gpu_memory == nvml::kValueNotAvailable
                ? 0
                : static_cast<std::int64_t>(info.used_gpu_memory / kBytesPerMib);
        out.push_back(GpuProcessSample{info.pid, used_mib});
      }
      return out;
    }
    if (IsAbsentCounter(rc)) {
      return std::vector<GpuProcessSample>{};
    }
    if (rc != nvml::kErrorInsufficientSize) {
      return CallError(rc, context, "nvmlDeviceGetComputeRunningProcesses_v3");
    }
    count = capacity + kProcessSlack;  // NVML wrote the size it needs into capacity
  }
  return Unavailable(std::string(context) +
                     ": the process list kept growing while it was read; try again");
}

Result<std::vector<Gpu>> NvmlGpuBackend::Discover() {
  unsigned int count = 0;
  nvml::Return rc = api_.device_get_count(&count);
  if (rc != nvml::kSuccess) {
    return CallError(rc, "nvml", "nvmlDeviceGetCount_v2");
  }

  std::vector<Gpu> gpus;
  gpus.reserve(count);
  for (unsigned int i = 0; i < count; ++i) {
    std::string context = "GPU " + std::to_string(i);
    GF_ASSIGN_OR_RETURN(nvml::Device device, Handle(static_cast<int>(i)));
    Gpu gpu;
    unsigned int nvml_index = i;
    rc = api_.device_get_index(device, &nvml_index);
    if (rc != nvml::kSuccess) {
      return CallError(rc, context, "nvmlDeviceGetIndex");
    }
    gpu.index = static_cast<int>(nvml_index);
    GF_ASSIGN_OR_RETURN(std::string uuid,
                        DeviceString(api_.device_get_uuid, "nvmlDeviceGetUUID", device, context));
    gpu.uuid = GpuUuid(std::move(uuid));
    context += " (" + gpu.uuid.value() + ")";
    GF_ASSIGN_OR_RETURN(std::string name,
                        DeviceString(api_.device_get_name, "nvmlDeviceGetName", device, context));

    nvml::Memory memory{};
    rc = api_.device_get_memory_info(device, &memory);
    if (rc == nvml::kSuccess) {
      gpu.memory_mib = static_cast<std::int64_t>(memory.total / kBytesPerMib);
    } else if (rc == nvml::kErrorGpuIsLost || rc == nvml::kErrorResetRequired) {
      // Still named, so list it: the controller must learn that this card is gone.
      gpu.health = GpuHealth::kFailed;
      gpu.health_cause = "NVML: " + ErrorText(rc);
    } else {
      return CallError(rc, context, "nvmlDeviceGetMemoryInfo");
    }
    gpu.model = NormalizeGpuModel(name, gpu.memory_mib);
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

Result<GpuSample> NvmlGpuBackend::Sample(int index) {
  GF_ASSIGN_OR_RETURN(nvml::Device device, Handle(index));
  std::string context = "GPU " + std::to_string(index);
  GpuSample sample;
  sample.time = clock_.Now();
  GF_ASSIGN_OR_RETURN(std::string uuid,
                      DeviceString(api_.device_get_uuid, "nvmlDeviceGetUUID", device, context));
  sample.uuid = GpuUuid(std::move(uuid));
  context += " (" + sample.uuid.value() + ")";

  nvml::Memory memory{};
  nvml::Return rc = api_.device_get_memory_info(device, &memory);
  if (rc != nvml::kSuccess) {
    return CallError(rc, context, "nvmlDeviceGetMemoryInfo");
  }
  sample.memory_total_mib = static_cast<std::int64_t>(memory.total / kBytesPerMib);
  sample.memory_used_mib = static_cast<std::int64_t>(memory.used / kBytesPerMib);

  nvml::Utilization utilization{};
  rc = api_.device_get_utilization_rates(device, &utilization);
  if (rc == nvml::kSuccess) {
    sample.util_gpu_pct = static_cast<int>(utilization.gpu);
    sample.util_memory_pct = static_cast<int>(utilization.memory);
  } else if (!IsAbsentCounter(rc)) {
    return CallError(rc, context, "nvmlDeviceGetUtilizationRates");
  }

  unsigned int temperature = 0;
  rc = api_.device_get_temperature(device, nvml::kTemperatureGpu, &temperature);
  if (rc == nvml::kSuccess) {
    sample.temperature_c = static_cast<int>(temperature);
  } else if (!IsAbsentCounter(rc)) {
    return CallError(rc, context, "nvmlDeviceGetTemperature");
  }

  unsigned int power_mw = 0;
  rc = api_.device_get_power_usage(device, &power_mw);
  if (rc == nvml::kSuccess) {
    sample.power_mw = static_cast<std::int64_t>(power_mw);
  } else if (!IsAbsentCounter(rc)) {
    return CallError(rc, context, "nvmlDeviceGetPowerUsage");
  }

  unsigned long long energy_mj = 0;  // NOLINT(google-runtime-int): NVML's out type
  rc = api_.device_get_total_energy_consumption(device, &energy_mj);
  if (rc == nvml::kSuccess) {
    sample.energy_mj = static_cast<std::int64_t>(energy_mj);
  } else if (!IsAbsentCounter(rc)) {
    return CallError(rc, context, "nvmlDeviceGetTotalEnergyConsumption");
  }

  GF_ASSIGN_OR_RETURN(sample.processes, Processes(device, context));
  return sample;
}

}  // namespace gf
