// fakenvml: a stand-in libnvidia-ml.so.1, written from gpufleet's own sources, so the real
// dlopen-and-sample code of NvmlGpuBackend runs in CI without a GPU.
//
// It exports, with C linkage and NVML's real signatures (checked against nvml_abi.h below), the
// entry points gpufleet uses. What the "driver" reports comes from a JSON scenario file named by
// GF_FAKENVML_SCENARIO (format: README.md next to this file). The file is re-read whenever its
// inode, size or mtime changes, so a test can change the scenario between two samples (write a
// temporary file and rename it over the old one). Thread-safety: every entry point takes one
// mutex, like a driver serialising access.
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "gpu/nvml/nvml_abi.h"

namespace nvml = gf::nvml;

// NVML's ABI types (unsigned long long) and exported names (nvmlInit_v2) are not ours to rename.
// NOLINTBEGIN(google-runtime-int, readability-identifier-naming)

// The handle type's definition lives here: a handle is a pointer to the device's slot.
struct gf::nvml::DeviceOpaque {
  unsigned int index;
};

namespace {

constexpr unsigned int kMaxDevices = 64;
constexpr unsigned long long kBytesPerMib = 1024ULL * 1024ULL;

struct FakeProcess {
  unsigned int pid = 0;
  unsigned long long used_bytes = nvml::kValueNotAvailable;
};

struct FakeDevice {
  std::string name;
  std::string uuid;
  unsigned long long memory_total_bytes = 0;
  unsigned long long memory_used_bytes = 0;
  unsigned int util_gpu = 0;
  unsigned int util_memory = 0;
  unsigned int temperature_c = 0;
  unsigned int power_mw = 0;
  unsigned long long energy_mj = 0;
  std::set<std::string> unsupported;
  bool lost = false;
  std::vector<FakeProcess> processes;
};

struct Scenario {
  std::string driver_version = "550.54.15";
  std::optional<int> init_error;
  std::vector<FakeDevice> devices;
};

// Identity of the file's content as far as stat can tell.
struct FileStamp {
  ino_t inode = 0;
  off_t size = -1;
  long long mtime_ns = -1;
  bool operator==(const FileStamp&) const = default;
};

struct State {
  std::mutex mu;
  int init_count = 0;
  std::string path;
  FileStamp stamp;
  std::optional<Scenario> scenario;       // nullopt when the file is missing or broken
  std::string problem;                    // why scenario is nullopt
  std::array<char, 1024> problem_text{};  // what nvmlErrorString(kErrorUnknown) returns
  std::array<nvml::DeviceOpaque, kMaxDevices> handles{};
};

State& GetState() {
  static State state;
  return state;
}

const std::set<std::string>& KnownCounters() {
  static const std::set<std::string> counters = {
      "memory", "utilization", "temperature", "power", "energy", "processes"};
  return counters;
}

FakeDevice ParseDevice(const nlohmann::json& j, std::size_t i) {
  FakeDevice d;
  d.name = j.at("name").get<std::string>();
  d.uuid = j.at("uuid").get<std::string>();
  d.memory_total_bytes = j.at("memory_total_mib").get<unsigned long long>() * kBytesPerMib;
  d.memory_used_bytes = j.value("memory_used_mib", 0ULL) * kBytesPerMib;
  d.util_gpu = j.value("util_gpu", 0U);
  d.util_memory = j.value("util_memory", 0U);
  d.temperature_c = j.value("temperature_c", 0U);
  d.power_mw = j.value("power_mw", 0U);
  d.energy_mj = j.value("energy_mj", 0ULL);
  d.lost = j.value("lost", false);
  for (const auto& counter : j.value("unsupported", nlohmann::json::array())) {
    std::string name = counter.get<std::string>();
    if (KnownCounters().count(name) == 0) {
      throw std::runtime_error("devices[" + std::to_string(i) + "].unsupported: unknown counter '" +
                               name +
                               "' (known: memory, utilization, temperature, power, "
                               "energy, processes)");
    }
    d.unsupported.insert(name);
  }
  for (const auto& p : j.value("processes", nlohmann::json::array())) {
    FakeProcess process;
    process.pid = p.at("pid").get<unsigned int>();
    if (p.contains("used_memory_mib")) {
      process.used_bytes = p.at("used_memory_mib").get<unsigned long long>() * kBytesPerMib;
    }
    d.processes.push_back(process);
  }
  return d;
}

// Throws (nlohmann or runtime_error) on a broken file; the caller turns that into a message.
Scenario ParseScenario(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  Scenario s;
  s.driver_version = j.value("driver_version", s.driver_version);
  if (j.contains("init_error") && !j.at("init_error").is_null()) {
    s.init_error = j.at("init_error").get<int>();
  }
  const nlohmann::json& devices = j.value("devices", nlohmann::json::array());
  if (devices.size() > kMaxDevices) {
    throw std::runtime_error("more than 64 devices");
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    s.devices.push_back(ParseDevice(devices[i], i));
  }
  return s;
}

void SetProblem(State& st, const std::string& problem) {
  st.scenario.reset();
  st.problem = "fakenvml: " + problem;
  std::snprintf(st.problem_text.data(), st.problem_text.size(), "%s", st.problem.c_str());
}

// REQUIRES: st.mu held. Re-reads the scenario if the file changed since the last read.
void Refresh(State& st) {
  // Tests set the variable before loading the library, not while it runs.
  const char* env = std::getenv("GF_FAKENVML_SCENARIO");  // NOLINT(concurrency-mt-unsafe)
  if (env == nullptr || *env == '\0') {
    st.stamp = FileStamp{};
    SetProblem(st,
               "GF_FAKENVML_SCENARIO is not set; point it at a scenario JSON file "
               "(see tests/fakenvml/README.md)");
    return;
  }
  struct stat info {};
  if (stat(env, &info) != 0) {
    st.stamp = FileStamp{};
    SetProblem(st,
               std::string("cannot read scenario ") + env + ": " +
                   std::strerror(errno));  // NOLINT(concurrency-mt-unsafe): under st.mu
    return;
  }
  FileStamp stamp{
      info.st_ino,
      info.st_size,
      static_cast<long long>(info.st_mtim.tv_sec) * 1'000'000'000LL + info.st_mtim.tv_nsec};
  if (st.path == env && stamp == st.stamp) {
    return;
  }
  st.path = env;
  st.stamp = stamp;
  std::ifstream in(env);
  std::stringstream text;
  text << in.rdbuf();
  try {
    st.scenario = ParseScenario(text.str());
    st.problem.clear();
  } catch (const std::exception& e) {
    SetProblem(st, std::string("broken scenario ") + env + ": " + e.what());
  }
}

// REQUIRES: st.mu held. The device behind a handle after a refresh, or an NVML error code.
nvml::Return Lookup(State& st, nvml::Device device, const FakeDevice** out) {
  if (st.init_count == 0) {
    return nvml::kErrorUninitialized;
  }
  Refresh(st);
  if (!st.scenario) {
    return nvml::kErrorUnknown;
  }
  if (device == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  if (device->index >= st.scenario->devices.size()) {
    return nvml::kErrorGpuIsLost;
  }
  *out = &st.scenario->devices[device->index];
  return nvml::kSuccess;
}

// The body of a per-device entry point: takes st.mu, looks the device up (when `counter` is not
// null, also applying the scenario's "lost" and "unsupported" switches for that counter), and
// returns the lookup's error or `fill(device)`, called under the lock.
template <typename Fill>
nvml::Return WithDevice(nvml::Device device, const char* counter, Fill fill) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  const FakeDevice* d = nullptr;
  nvml::Return rc = Lookup(st, device, &d);
  if (rc != nvml::kSuccess) {
    return rc;
  }
  if (counter != nullptr) {
    if (d->lost) {
      return nvml::kErrorGpuIsLost;
    }
    if (d->unsupported.count(counter) != 0) {
      return nvml::kErrorNotSupported;
    }
  }
  return fill(*d);
}

// A counter that is one field of the device: copies `field` to `*out` (null: invalid argument).
template <typename T>
nvml::Return ReadCounter(nvml::Device device, const char* counter, T FakeDevice::*field, T* out) {
  return WithDevice(device, counter, [&](const FakeDevice& d) {
    if (out == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *out = d.*field;
    return nvml::kSuccess;
  });
}

nvml::Return CopyString(const std::string& value, char* buffer, unsigned int length) {
  if (buffer == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  if (value.size() + 1 > length) {
    return nvml::kErrorInsufficientSize;
  }
  std::memcpy(buffer, value.c_str(), value.size() + 1);
  return nvml::kSuccess;
}

const char* StandardErrorString(nvml::Return rc) {
  switch (rc) {
    case nvml::kSuccess:
      return "Success";
    case nvml::kErrorUninitialized:
      return "Uninitialized";
    case nvml::kErrorInvalidArgument:
      return "Invalid Argument";
    case nvml::kErrorNotSupported:
      return "Not Supported";
    case nvml::kErrorNoPermission:
      return "Insufficient Permissions";
    case nvml::kErrorAlreadyInitialized:
      return "Already Initialized";
    case nvml::kErrorNotFound:
      return "Not Found";
    case nvml::kErrorInsufficientSize:
      return "Insufficient Size";
    case nvml::kErrorInsufficientPower:
      return "Insufficient External Power";
    case nvml::kErrorDriverNotLoaded:
      return "Driver Not Loaded";
    case nvml::kErrorTimeout:
      return "Timeout";
    case nvml::kErrorIrqIssue:
      return "Interrupt Request Issue";
    case nvml::kErrorLibraryNotFound:
      return "NVML Shared Library Not Found";
    case nvml::kErrorFunctionNotFound:
      return "Function Not Found";
    case nvml::kErrorCorruptedInforom:
      return "Corrupted infoROM";
    case nvml::kErrorGpuIsLost:
      return "GPU is lost";
    case nvml::kErrorResetRequired:
      return "GPU requires reset";
    case nvml::kErrorOperatingSystem:
      return "GPU access blocked by the operating system";
    case nvml::kErrorLibRmVersionMismatch:
      return "Driver/library version mismatch";
    case nvml::kErrorInUse:
      return "In use by another client";
    case nvml::kErrorMemory:
      return "Insufficient Memory";
    case nvml::kErrorNoData:
      return "No data";
    default:
      return "Unknown Error";
  }
}

}  // namespace

#define GF_FAKENVML_EXPORT extern "C" __attribute__((visibility("default")))

GF_FAKENVML_EXPORT nvml::Return nvmlInit_v2() {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  Refresh(st);
  if (!st.scenario) {
    return nvml::kErrorUnknown;
  }
  if (st.scenario->init_error) {
    return *st.scenario->init_error;
  }
  if (st.init_count == 0) {
    for (unsigned int i = 0; i < kMaxDevices; ++i) {
      st.handles[i].index = i;
    }
  }
  ++st.init_count;
  return nvml::kSuccess;
}

GF_FAKENVML_EXPORT nvml::Return nvmlShutdown() {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.init_count == 0) {
    return nvml::kErrorUninitialized;
  }
  --st.init_count;
  return nvml::kSuccess;
}

GF_FAKENVML_EXPORT const char* nvmlErrorString(nvml::Return rc) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  // The scenario's own problem is the clearest text for the catch-all code.
  if (rc == nvml::kErrorUnknown && !st.problem.empty()) {
    return st.problem_text.data();
  }
  return StandardErrorString(rc);
}

GF_FAKENVML_EXPORT nvml::Return nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.init_count == 0) {
    return nvml::kErrorUninitialized;
  }
  Refresh(st);
  if (!st.scenario) {
    return nvml::kErrorUnknown;
  }
  return CopyString(st.scenario->driver_version, version, length);
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetCount_v2(unsigned int* count) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.init_count == 0) {
    return nvml::kErrorUninitialized;
  }
  if (count == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  Refresh(st);
  if (!st.scenario) {
    return nvml::kErrorUnknown;
  }
  *count = static_cast<unsigned int>(st.scenario->devices.size());
  return nvml::kSuccess;
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                              nvml::Device* device) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.init_count == 0) {
    return nvml::kErrorUninitialized;
  }
  if (device == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  Refresh(st);
  if (!st.scenario) {
    return nvml::kErrorUnknown;
  }
  if (index >= st.scenario->devices.size()) {
    return nvml::kErrorInvalidArgument;
  }
  *device = &st.handles[index];
  return nvml::kSuccess;
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetIndex(nvml::Device device, unsigned int* index) {
  return WithDevice(device, nullptr, [&](const FakeDevice&) {
    if (index == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *index = device->index;
    return nvml::kSuccess;
  });
}

// Identity (UUID, name) stays readable on a lost GPU, as NVML caches it at attach time.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetUUID(nvml::Device device,
                                                  char* uuid,
                                                  unsigned int length) {
  return WithDevice(
      device, nullptr, [&](const FakeDevice& d) { return CopyString(d.uuid, uuid, length); });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetName(nvml::Device device,
                                                  char* name,
                                                  unsigned int length) {
  return WithDevice(
      device, nullptr, [&](const FakeDevice& d) { return CopyString(d.name, name, length); });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetMemoryInfo(nvml::Device device, nvml::Memory* memory) {
  return WithDevice(device, "memory", [&](const FakeDevice& d) {
    if (memory == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    memory->total = d.memory_total_bytes;
    memory->used = d.memory_used_bytes;
    memory->free =
        d.memory_total_bytes > d.memory_used_bytes ? d.memory_total_bytes - d.memory_used_bytes : 0;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetUtilizationRates(nvml::Device device,
                                                              nvml::Utilization* utilization) {
  return WithDevice(device, "utilization", [&](const FakeDevice& d) {
    if (utilization == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    utilization->gpu = d.util_gpu;
    utilization->memory = d.util_memory;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetTemperature(nvml::Device device,
                                                         int sensor,
                                                         unsigned int* temperature) {
  return WithDevice(device, "temperature", [&](const FakeDevice& d) {
    if (temperature == nullptr || sensor != nvml::kTemperatureGpu) {
      return nvml::kErrorInvalidArgument;
    }
    *temperature = d.temperature_c;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetPowerUsage(nvml::Device device,
                                                        unsigned int* power_mw) {
  return ReadCounter(device, "power", &FakeDevice::power_mw, power_mw);
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetTotalEnergyConsumption(nvml::Device device,
                                                                    unsigned long long* energy_mj) {
  return ReadCounter(device, "energy", &FakeDevice::energy_mj, energy_mj);
}

// NVML's contract: with *count too small (0 and a null buffer to ask for the size), return
// INSUFFICIENT_SIZE and write the needed count; otherwise fill and write the count used.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetComputeRunningProcesses_v3(nvml::Device device,
                                                                        unsigned int* count,
                                                                        nvml::ProcessInfo* infos) {
  return WithDevice(device, "processes", [&](const FakeDevice& d) {
    if (count == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    auto needed = static_cast<unsigned int>(d.processes.size());
    if (*count < needed) {
      *count = needed;
      return nvml::kErrorInsufficientSize;
    }
    if (needed > 0 && infos == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    for (unsigned int i = 0; i < needed; ++i) {
      infos[i] = nvml::ProcessInfo{
          d.processes[i].pid, d.processes[i].used_bytes, 0xFFFFFFFFU, 0xFFFFFFFFU};
    }
    *count = needed;
    return nvml::kSuccess;
  });
}

// The exported functions must have exactly the types gpufleet resolves them as.
static_assert(std::is_same_v<decltype(&nvmlInit_v2), nvml::InitFn>);
static_assert(std::is_same_v<decltype(&nvmlShutdown), nvml::ShutdownFn>);
static_assert(std::is_same_v<decltype(&nvmlErrorString), nvml::ErrorStringFn>);
static_assert(
    std::is_same_v<decltype(&nvmlSystemGetDriverVersion), nvml::SystemGetDriverVersionFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetCount_v2), nvml::DeviceGetCountFn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetHandleByIndex_v2), nvml::DeviceGetHandleByIndexFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetIndex), nvml::DeviceGetIndexFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetUUID), nvml::DeviceGetStringFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetName), nvml::DeviceGetStringFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMemoryInfo), nvml::DeviceGetMemoryInfoFn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetUtilizationRates), nvml::DeviceGetUtilizationRatesFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTemperature), nvml::DeviceGetTemperatureFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPowerUsage), nvml::DeviceGetPowerUsageFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTotalEnergyConsumption),
                             nvml::DeviceGetTotalEnergyConsumptionFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetComputeRunningProcesses_v3),
                             nvml::DeviceGetComputeRunningProcessesFn>);

// NOLINTEND(google-runtime-int, readability-identifier-naming)
