// The slice of the NVIDIA Management Library's C ABI that gpufleet uses, declared by the
// project itself: no NVIDIA header exists in the build, and none may be used.
//
// Everything here must match libnvidia-ml.so.1 exactly (return codes, struct layouts, entry
// point signatures), because NvmlGpuBackend resolves these entry points with dlsym from the
// real library, and tests/fakenvml implements them for tests. Both sides use these
// declarations, and the fake static_asserts its functions against the pointer types below.
// Header-only, no state: safe from any thread.
#pragma once

#include <cstddef>

namespace gf::nvml {

// NVML's C types are kept as declared (unsigned long long, not uint64_t): this is its ABI.
// NOLINTBEGIN(google-runtime-int)

// nvmlReturn_t: a C enum, int-sized on every platform NVML ships for.
using Return = int;

inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorAlreadyInitialized = 5;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorInsufficientPower = 8;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorTimeout = 10;
inline constexpr Return kErrorIrqIssue = 11;
inline constexpr Return kErrorLibraryNotFound = 12;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorCorruptedInforom = 14;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorResetRequired = 16;
inline constexpr Return kErrorOperatingSystem = 17;
inline constexpr Return kErrorLibRmVersionMismatch = 18;
inline constexpr Return kErrorInUse = 19;
inline constexpr Return kErrorMemory = 20;
inline constexpr Return kErrorNoData = 21;
inline constexpr Return kErrorUnknown = 999;

// nvmlTemperatureSensors_t (a C enum): the GPU die sensor.
inline constexpr int kTemperatureGpu = 0;

// Buffer sizes NVML documents as always large enough (the *_V2_BUFFER_SIZE constants).
inline constexpr unsigned int kDeviceUuidBufferSize = 96;
inline constexpr unsigned int kDeviceNameBufferSize = 96;
inline constexpr unsigned int kSystemDriverVersionBufferSize = 80;

// NVML_VALUE_NOT_AVAILABLE: what usedGpuMemory holds when the driver cannot tell
// (for example under Windows WDDM, or without permission).
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;

// nvmlDevice_t: an opaque handle owned by the library; valid between init and shutdown.
struct DeviceOpaque;
using Device = DeviceOpaque*;

// nvmlMemory_t (v1): bytes.
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(Memory) == 24);

// nvmlUtilization_t: percent over the driver's last sample period.
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
static_assert(sizeof(Utilization) == 8);

// nvmlProcessInfo_v2_t, which is what the _v3 process queries fill in.
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;  // bytes, or kValueNotAvailable
  unsigned int gpu_instance_id;        // MIG only; 0xFFFFFFFF otherwise
  unsigned int compute_instance_id;    // MIG only; 0xFFFFFFFF otherwise
};
static_assert(sizeof(ProcessInfo) == 24);
static_assert(offsetof(ProcessInfo, used_gpu_memory) == 8);
static_assert(offsetof(ProcessInfo, gpu_instance_id) == 16);

// Entry points. The comment above each type names the exported symbol(s) it is resolved as.

// nvmlInit_v2
using InitFn = Return (*)();
// nvmlShutdown
using ShutdownFn = Return (*)();
// nvmlErrorString: a static string owned by the library.
using ErrorStringFn = const char* (*)(Return);
// nvmlSystemGetDriverVersion(version, length)
using SystemGetDriverVersionFn = Return (*)(char*, unsigned int);
// nvmlDeviceGetCount_v2(count)
using DeviceGetCountFn = Return (*)(unsigned int*);
// nvmlDeviceGetHandleByIndex_v2(index, device)
using DeviceGetHandleByIndexFn = Return (*)(unsigned int, Device*);
// nvmlDeviceGetIndex(device, index)
using DeviceGetIndexFn = Return (*)(Device, unsigned int*);
// nvmlDeviceGetUUID(device, uuid, length) and nvmlDeviceGetName(device, name, length)
using DeviceGetStringFn = Return (*)(Device, char*, unsigned int);
// nvmlDeviceGetMemoryInfo(device, memory)
using DeviceGetMemoryInfoFn = Return (*)(Device, Memory*);
// nvmlDeviceGetUtilizationRates(device, utilization)
using DeviceGetUtilizationRatesFn = Return (*)(Device, Utilization*);
// nvmlDeviceGetTemperature(device, sensor, temperature in C)
using DeviceGetTemperatureFn = Return (*)(Device, int, unsigned int*);
// nvmlDeviceGetPowerUsage(device, power in mW)
using DeviceGetPowerUsageFn = Return (*)(Device, unsigned int*);
// nvmlDeviceGetTotalEnergyConsumption(device, energy in mJ since the driver loaded)
using DeviceGetTotalEnergyConsumptionFn = Return (*)(Device, unsigned long long*);
// nvmlDeviceGetComputeRunningProcesses_v3(device, count in/out, infos)
using DeviceGetComputeRunningProcessesFn = Return (*)(Device, unsigned int*, ProcessInfo*);
// NOLINTEND(google-runtime-int)

}  // namespace gf::nvml
