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
#include <string>

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
inline constexpr Return kErrorInsufficientResources = 23;    // e.g. no room for a MIG instance
inline constexpr Return kErrorArgumentVersionMismatch = 25;  // a versioned struct's version
inline constexpr Return kErrorUnknown = 999;

// nvmlTemperatureSensors_t (a C enum): the GPU die sensor.
inline constexpr int kTemperatureGpu = 0;

// nvmlClockType_t (a C enum): the clock domains nvmlDeviceGetClockInfo reads, in MHz.
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;

// nvmlPcieUtilCounter_t (a C enum): nvmlDeviceGetPcieThroughput's direction, in KB/s.
inline constexpr int kPcieUtilTxBytes = 0;
inline constexpr int kPcieUtilRxBytes = 1;

// nvmlMemoryErrorType_t and nvmlEccCounterType_t (C enums) for nvmlDeviceGetTotalEccErrors.
inline constexpr int kMemoryErrorCorrected = 0;
inline constexpr int kMemoryErrorUncorrected = 1;
inline constexpr int kVolatileEcc = 0;   // since the driver loaded
inline constexpr int kAggregateEcc = 1;  // over the card's life

// nvmlPstates_t (a C enum): 0 (P0, fastest) .. 15, and this for "unknown".
inline constexpr int kPstateUnknown = 32;

// nvmlEventType bit for XID errors (nvmlEventTypeXidCriticalError).
inline constexpr unsigned long long kEventTypeXidCriticalError = 0x8ULL;

// NVML_FI_DEV_MEMORY_TEMP: the field id of the memory (HBM) temperature, for
// nvmlDeviceGetFieldValues. GDDR boards answer it with NOT_SUPPORTED.
inline constexpr unsigned int kFieldMemoryTemperature = 82;

// nvmlValueType_t (a C enum): which member of Value a FieldValue holds.
inline constexpr int kValueTypeDouble = 0;
inline constexpr int kValueTypeUnsignedInt = 1;
inline constexpr int kValueTypeUnsignedLong = 2;
inline constexpr int kValueTypeUnsignedLongLong = 3;
inline constexpr int kValueTypeSignedLongLong = 4;
inline constexpr int kValueTypeSignedInt = 5;

// Buffer sizes NVML documents as always large enough (the *_V2_BUFFER_SIZE constants).
inline constexpr unsigned int kDeviceUuidBufferSize = 96;
inline constexpr unsigned int kDeviceNameBufferSize = 96;
inline constexpr unsigned int kSystemDriverVersionBufferSize = 80;

// NVML_VALUE_NOT_AVAILABLE: what usedGpuMemory holds when the driver cannot tell
// (for example under Windows WDDM, or without permission).
inline constexpr unsigned long long kValueNotAvailable = ~0ULL;

// nvmlGpuTopologyLevel_t (a C enum): the nearest common ancestor of two GPUs on the PCIe tree.
inline constexpr int kTopologyInternal = 0;     // one board (e.g. a K80's two GPUs)
inline constexpr int kTopologySingle = 10;      // one PCIe switch
inline constexpr int kTopologyMultiple = 20;    // several switches, no host bridge
inline constexpr int kTopologyHostbridge = 30;  // one host bridge
inline constexpr int kTopologyNode = 40;        // one NUMA node (CPU socket)
inline constexpr int kTopologySystem = 50;      // across sockets

// NVML_NVLINK_MAX_LINKS of current drivers (older ones have 6 or 12 and answer
// INVALID_ARGUMENT for links beyond theirs).
inline constexpr unsigned int kNvlinkMaxLinks = 18;
// nvmlEnableState_t (a C enum).
inline constexpr int kFeatureEnabled = 1;

// Buffer sizes of nvmlPciInfo_t's bus ids (NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE and _SIZE).
inline constexpr unsigned int kPciBusIdLegacySize = 16;
inline constexpr unsigned int kPciBusIdSize = 32;

// MIG (Multi-Instance GPU). nvmlDeviceGetMigMode's modes (NVML_DEVICE_MIG_DISABLE/_ENABLE).
inline constexpr unsigned int kMigDisable = 0;
inline constexpr unsigned int kMigEnable = 1;
// GPU instance profile ids (NVML_GPU_INSTANCE_PROFILE_*) run 0..16 in current drivers (1_SLICE
// = 0 .. 2_SLICE_ALL_ME = 16); an older driver answers INVALID_ARGUMENT or NOT_SUPPORTED for
// the ids it does not know, so gpufleet asks for each of them.
inline constexpr unsigned int kGpuInstanceProfileCount = 17;
// Compute instance profile ids (NVML_COMPUTE_INSTANCE_PROFILE_*: 1_SLICE = 0 .. 1_SLICE_REV1 =
// 7) and the one engine profile (NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED).
inline constexpr unsigned int kComputeInstanceProfileCount = 8;
inline constexpr unsigned int kComputeInstanceEngineProfileShared = 0;

// nvmlDevice_t: an opaque handle owned by the library; valid between init and shutdown.
struct DeviceOpaque;
using Device = DeviceOpaque*;

// nvmlEventSet_t: an opaque handle owned by the library; freed with nvmlEventSetFree.
struct EventSetOpaque;
using EventSet = EventSetOpaque*;

// nvmlGpuInstance_t and nvmlComputeInstance_t: opaque MIG handles owned by the library; valid
// until the instance is destroyed. (A MIG *device* handle, one per compute instance, is a
// Device: nvmlDeviceGetMigDeviceHandleByIndex.)
struct GpuInstanceOpaque;
using GpuInstance = GpuInstanceOpaque*;
struct ComputeInstanceOpaque;
using ComputeInstance = ComputeInstanceOpaque*;

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

// nvmlProcessUtilizationSample_t: one process's utilisation over one driver sample period.
struct ProcessUtilizationSample {
  unsigned int pid;
  unsigned long long time_stamp_us;  // CPU time stamp of the period, microseconds
  unsigned int sm_util;              // percent
  unsigned int mem_util;             // frame buffer (memory) percent
  unsigned int enc_util;
  unsigned int dec_util;
};
static_assert(sizeof(ProcessUtilizationSample) == 32);
static_assert(offsetof(ProcessUtilizationSample, time_stamp_us) == 8);
static_assert(offsetof(ProcessUtilizationSample, sm_util) == 16);

// nvmlEventData_t (the layout nvmlEventSetWait_v2 fills).
struct EventData {
  Device device;                  // the device the event happened on
  unsigned long long event_type;  // one nvmlEventType bit
  unsigned long long event_data;  // the XID for kEventTypeXidCriticalError (999: unknown XID)
  unsigned int gpu_instance_id;   // MIG only; 0xFFFFFFFF otherwise
  unsigned int compute_instance_id;
};
static_assert(sizeof(EventData) == 32);
static_assert(offsetof(EventData, event_data) == 16);

// nvmlValue_t: the value of a FieldValue, tagged by FieldValue::value_type.
union Value {
  double d_val;
  unsigned int ui_val;
  unsigned long ul_val;
  unsigned long long ull_val;
  long long sll_val;
  int si_val;
};
static_assert(sizeof(Value) == 8);

// nvmlFieldValue_t: one field of nvmlDeviceGetFieldValues; the caller sets field_id (and zeroes
// the rest), NVML fills the others. value is valid only when nvml_return is kSuccess.
struct FieldValue {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp_us;
  long long latency_us;
  int value_type;  // nvmlValueType_t
  Return nvml_return;
  Value value;
};
static_assert(sizeof(FieldValue) == 40);
static_assert(offsetof(FieldValue, value_type) == 24);
static_assert(offsetof(FieldValue, value) == 32);

// nvmlPciInfo_t: where a device (or the far end of an NVLink) sits on the PCI bus.
struct PciInfo {
  char bus_id_legacy[kPciBusIdLegacySize];  // "0000:3B:00.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[kPciBusIdSize];  // "00000000:3B:00.0"
};
static_assert(sizeof(PciInfo) == 68);
static_assert(offsetof(PciInfo, bus_id) == 36);

// nvmlGpuInstanceProfileInfo_v2_t: one GPU instance profile a MIG-enabled GPU offers. The
// caller sets `version` to kGpuInstanceProfileInfoV2Version (NVML_STRUCT_VERSION: the size,
// with the version number in the top byte).
struct GpuInstanceProfileInfoV2 {
  unsigned int version;
  unsigned int id;  // the profile id (NVML_GPU_INSTANCE_PROFILE_*)
  unsigned int is_p2p_supported;
  unsigned int slice_count;     // compute slices: the 3 of "3g.40gb"
  unsigned int instance_count;  // how many instances of it the GPU can hold at most
  unsigned int multiprocessor_count;
  unsigned int copy_engine_count;
  unsigned int decoder_count;
  unsigned int encoder_count;
  unsigned int jpeg_count;
  unsigned int ofa_count;
  unsigned long long memory_size_mb;  // MiB
  char name[kDeviceNameBufferSize];   // "MIG 3g.40gb" (also "MIG 1g.10gb+me")
};
static_assert(sizeof(GpuInstanceProfileInfoV2) == 152);
static_assert(offsetof(GpuInstanceProfileInfoV2, memory_size_mb) == 48);
static_assert(offsetof(GpuInstanceProfileInfoV2, name) == 56);
inline constexpr unsigned int kGpuInstanceProfileInfoV2Version =
    static_cast<unsigned int>(sizeof(GpuInstanceProfileInfoV2)) | (2U << 24U);

// nvmlGpuInstancePlacement_t: where an instance sits among the GPU's memory slices.
struct GpuInstancePlacement {
  unsigned int start;
  unsigned int size;
};

// nvmlGpuInstanceInfo_t (nvmlGpuInstanceGetInfo).
struct GpuInstanceInfo {
  Device device;  // the parent GPU
  unsigned int id;
  unsigned int profile_id;
  GpuInstancePlacement placement;
};
static_assert(sizeof(GpuInstanceInfo) == 24);
static_assert(offsetof(GpuInstanceInfo, profile_id) == 12);

// nvmlComputeInstanceProfileInfo_t (v1): one compute instance profile a GPU instance offers.
struct ComputeInstanceProfileInfo {
  unsigned int id;  // NVML_COMPUTE_INSTANCE_PROFILE_*
  unsigned int slice_count;
  unsigned int instance_count;
  unsigned int multiprocessor_count;
  unsigned int shared_copy_engine_count;
  unsigned int shared_decoder_count;
  unsigned int shared_encoder_count;
  unsigned int shared_jpeg_count;
  unsigned int shared_ofa_count;
};
static_assert(sizeof(ComputeInstanceProfileInfo) == 36);

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
// One unsigned counter chosen by a C enum argument:
// nvmlDeviceGetTemperature(device, sensor, temperature in C),
// nvmlDeviceGetClockInfo(device, clock type, MHz),
// nvmlDeviceGetPcieThroughput(device, counter, KB/s).
using DeviceGetEnumUIntFn = Return (*)(Device, int, unsigned int*);
using DeviceGetTemperatureFn = DeviceGetEnumUIntFn;
// One unsigned counter: nvmlDeviceGetPowerUsage (mW), nvmlDeviceGetEnforcedPowerLimit (mW),
// nvmlDeviceGetPcieReplayCounter (count), nvmlDeviceGetFanSpeed (percent).
using DeviceGetUIntFn = Return (*)(Device, unsigned int*);
using DeviceGetPowerUsageFn = DeviceGetUIntFn;
// One 64-bit counter: nvmlDeviceGetTotalEnergyConsumption (mJ since the driver loaded),
// nvmlDeviceGetCurrentClocksEventReasons and its older name
// nvmlDeviceGetCurrentClocksThrottleReasons (a bitmask).
using DeviceGetULongLongFn = Return (*)(Device, unsigned long long*);
using DeviceGetTotalEnergyConsumptionFn = DeviceGetULongLongFn;
// nvmlDeviceGetComputeRunningProcesses_v3(device, count in/out, infos)
using DeviceGetComputeRunningProcessesFn = Return (*)(Device, unsigned int*, ProcessInfo*);
// nvmlDeviceGetTotalEccErrors(device, memory error type, counter type, count)
using DeviceGetTotalEccErrorsFn = Return (*)(Device, int, int, unsigned long long*);
// nvmlDeviceGetRemappedRows(device, correctable rows, uncorrectable rows, pending, failure)
using DeviceGetRemappedRowsFn =
    Return (*)(Device, unsigned int*, unsigned int*, unsigned int*, unsigned int*);
// nvmlDeviceGetPerformanceState(device, pstate): nvmlPstates_t is an int-sized C enum.
using DeviceGetPerformanceStateFn = Return (*)(Device, int*);
// nvmlDeviceGetFieldValues(device, count, values in/out)
using DeviceGetFieldValuesFn = Return (*)(Device, int, FieldValue*);
// nvmlDeviceGetProcessUtilization(device, samples, count in/out, last seen time stamp in us):
// only samples newer than the time stamp; a null buffer asks for the count.
using DeviceGetProcessUtilizationFn = Return (*)(Device,
                                                 ProcessUtilizationSample*,
                                                 unsigned int*,
                                                 unsigned long long);
// nvmlEventSetCreate(set out)
using EventSetCreateFn = Return (*)(EventSet*);
// nvmlDeviceRegisterEvents(device, event type mask, set)
using DeviceRegisterEventsFn = Return (*)(Device, unsigned long long, EventSet);
// nvmlEventSetWait_v2(set, data out, timeout in ms): kErrorTimeout when no event came.
using EventSetWaitFn = Return (*)(EventSet, EventData*, unsigned int);
// nvmlEventSetFree(set)
using EventSetFreeFn = Return (*)(EventSet);
// nvmlDeviceGetPciInfo_v3(device, pci)
using DeviceGetPciInfoFn = Return (*)(Device, PciInfo*);
// nvmlDeviceGetTopologyCommonAncestor(device1, device2, level): nvmlGpuTopologyLevel_t is an
// int-sized C enum.
using DeviceGetTopologyCommonAncestorFn = Return (*)(Device, Device, int*);
// nvmlDeviceGetNvLinkState(device, link, is active): nvmlEnableState_t is an int-sized C enum.
using DeviceGetNvLinkStateFn = Return (*)(Device, unsigned int, int*);
// nvmlDeviceGetNvLinkRemotePciInfo_v2(device, link, pci of the far end: a GPU or an NVSwitch)
using DeviceGetNvLinkRemotePciInfoFn = Return (*)(Device, unsigned int, PciInfo*);
// nvmlDeviceGetNumaNodeId(device, node) (R545 and later) has DeviceGetUIntFn's shape.
// Power management limits, in mW: nvmlDeviceGetPowerManagementLimit (the limit set now) and
// nvmlDeviceGetPowerManagementDefaultLimit (the board's default) have DeviceGetUIntFn's shape.
// nvmlDeviceGetPowerManagementLimitConstraints(device, min, max): the range a limit may take.
using DeviceGetPowerLimitConstraintsFn = Return (*)(Device, unsigned int*, unsigned int*);
// nvmlDeviceSetPowerManagementLimit(device, limit): needs root (else NO_PERMISSION); a value
// outside the constraints is INVALID_ARGUMENT. Lasts until the driver unloads or a reboot.
using DeviceSetPowerLimitFn = Return (*)(Device, unsigned int);

// MIG (R470 and later; every one optional: NOT_SUPPORTED on a card without MIG).
// nvmlDeviceGetMigMode(device, current mode, pending mode): kMigDisable / kMigEnable; a change
// is pending until the GPU is reset.
using DeviceGetMigModeFn = Return (*)(Device, unsigned int*, unsigned int*);
// nvmlDeviceGetMaxMigDeviceCount(device, count) has DeviceGetUIntFn's shape: the indexes
// nvmlDeviceGetMigDeviceHandleByIndex may be asked for. On a MIG device handle,
// nvmlDeviceGetGpuInstanceId and nvmlDeviceGetComputeInstanceId (the instance ids) have it too;
// nvmlDeviceGetUUID ("MIG-...") and nvmlDeviceGetMemoryInfo (the instance's memory) answer.
// nvmlDeviceGetMigDeviceHandleByIndex(device, index, MIG device): NOT_FOUND for an index with
// no MIG device (the indexes need not be dense).
using DeviceGetMigDeviceHandleByIndexFn = Return (*)(Device, unsigned int, Device*);
// nvmlDeviceGetGpuInstanceProfileInfoV(device, profile id, info with version set):
// NOT_SUPPORTED when MIG mode is off or the profile is not offered; INVALID_ARGUMENT for an id
// this driver does not know.
using DeviceGetGpuInstanceProfileInfoVFn = Return (*)(Device,
                                                      unsigned int,
                                                      GpuInstanceProfileInfoV2*);
// nvmlDeviceGetGpuInstances(device, profile id, instances, count out): the buffer holds the
// profile's instance_count entries; no size query.
using DeviceGetGpuInstancesFn = Return (*)(Device, unsigned int, GpuInstance*, unsigned int*);
// nvmlDeviceCreateGpuInstance(device, profile id, instance out): needs root;
// INSUFFICIENT_RESOURCES when the profile does not fit beside the existing instances.
using DeviceCreateGpuInstanceFn = Return (*)(Device, unsigned int, GpuInstance*);
// nvmlGpuInstanceDestroy(instance): IN_USE while it has compute instances or processes.
using GpuInstanceDestroyFn = Return (*)(GpuInstance);
// nvmlGpuInstanceGetInfo(instance, info)
using GpuInstanceGetInfoFn = Return (*)(GpuInstance, GpuInstanceInfo*);
// nvmlGpuInstanceGetComputeInstanceProfileInfo(instance, profile id, engine profile, info)
using GpuInstanceGetComputeInstanceProfileInfoFn = Return (*)(GpuInstance,
                                                              unsigned int,
                                                              unsigned int,
                                                              ComputeInstanceProfileInfo*);
// nvmlGpuInstanceCreateComputeInstance(instance, profile id, compute instance out)
using GpuInstanceCreateComputeInstanceFn = Return (*)(GpuInstance, unsigned int, ComputeInstance*);
// nvmlGpuInstanceGetComputeInstances(instance, profile id, compute instances, count out): the
// buffer holds the compute profile's instance_count entries.
using GpuInstanceGetComputeInstancesFn = Return (*)(GpuInstance,
                                                    unsigned int,
                                                    ComputeInstance*,
                                                    unsigned int*);
// nvmlComputeInstanceDestroy(compute instance): IN_USE while processes run on it.
using ComputeInstanceDestroyFn = Return (*)(ComputeInstance);
// NOLINTEND(google-runtime-int)

// A C string out of a fixed buffer NVML filled: it always NUL-terminates on success, but the
// end of a buffer is never trusted to a foreign library.
inline std::string StringIn(const char* buffer, std::size_t size) {
  std::size_t n = 0;
  while (n < size && buffer[n] != '\0') {
    ++n;
  }
  return std::string(buffer, n);
}

}  // namespace gf::nvml
