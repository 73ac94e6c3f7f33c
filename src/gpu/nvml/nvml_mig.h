// MIG (Multi-Instance GPU) through NVML, for NvmlGpuBackend (issue #7): read a GPU's MIG mode,
// the GPU instance profiles it offers and its MIG devices; replace its layout.
//
// Every MIG entry point is optional: a driver older than R470, or a card without MIG (it
// answers NOT_SUPPORTED), reads as "MIG off", never as an error. Terms: a GPU instance (GI)
// holds a share of the GPU's compute slices and memory, by a profile ("3g.40gb"); a compute
// instance (CI) runs inside it; a MIG device (handle, "MIG-..." UUID) is one CI. gpufleet
// makes one CI spanning each GI, so a MIG device is a GI to it.
//
// Pure functions over the given entry points; thread-safe as far as NVML is (the backend
// serialises a layout change with its samples).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "gpu/nvml/nvml_abi.h"
#include "model/gpu_sample.h"

namespace gf {

// The entry points MIG needs: the optional MIG ones (null where the driver lacks one) and
// three of the required ones, which NvmlGpuBackend copies in.
struct NvmlMigApi {
  nvml::DeviceGetMigModeFn mig_mode = nullptr;
  nvml::DeviceGetUIntFn max_mig_device_count = nullptr;
  nvml::DeviceGetMigDeviceHandleByIndexFn mig_device_handle_by_index = nullptr;
  nvml::DeviceGetUIntFn gpu_instance_id = nullptr;      // on a MIG device handle
  nvml::DeviceGetUIntFn compute_instance_id = nullptr;  // on a MIG device handle
  nvml::DeviceGetGpuInstanceProfileInfoVFn gpu_instance_profile_info = nullptr;
  nvml::DeviceGetGpuInstancesFn gpu_instances = nullptr;
  nvml::GpuInstanceGetInfoFn gpu_instance_info = nullptr;
  nvml::DeviceCreateGpuInstanceFn create_gpu_instance = nullptr;
  nvml::GpuInstanceDestroyFn destroy_gpu_instance = nullptr;
  nvml::GpuInstanceGetComputeInstanceProfileInfoFn compute_instance_profile_info = nullptr;
  nvml::GpuInstanceCreateComputeInstanceFn create_compute_instance = nullptr;
  nvml::GpuInstanceGetComputeInstancesFn compute_instances = nullptr;
  nvml::ComputeInstanceDestroyFn destroy_compute_instance = nullptr;
  // Required entry points (never null once the backend is open).
  nvml::ErrorStringFn error_string = nullptr;
  nvml::DeviceGetStringFn uuid = nullptr;
  nvml::DeviceGetMemoryInfoFn memory_info = nullptr;
  nvml::DeviceGetComputeRunningProcessesFn running_processes = nullptr;

  // Reading MIG needs these; without one of them every GPU reads as MIG off.
  bool CanRead() const;
  // Changing a layout needs these too.
  bool CanChange() const;
};

// One GPU instance profile a GPU offers.
struct NvmlMigProfile {
  unsigned int id = 0;  // NVML_GPU_INSTANCE_PROFILE_*
  std::string name;     // "3g.40gb" (NVML's "MIG 3g.40gb" without its prefix)
  int slices = 0;
  int instance_count = 0;  // at most this many at once
  std::int64_t memory_mib = 0;
};

// What ReadNvmlMig found on one GPU.
struct NvmlMig {
  bool supported = false;                // the GPU answers nvmlDeviceGetMigMode
  bool enabled = false;                  // current mode
  bool pending = false;                  // the mode after the next GPU reset
  std::vector<NvmlMigProfile> profiles;  // offered (only while enabled), by slices then memory
  std::vector<MigSample> devices;        // by gpu_instance_id
};

// Reads the GPU's MIG mode, offered profiles and MIG devices (with their memory). Whatever
// cannot be read is left out; never fails.
NvmlMig ReadNvmlMig(const NvmlMigApi& api, nvml::Device device);

// The names of `profiles`, in their order.
std::vector<std::string> ProfileNames(const std::vector<NvmlMigProfile>& profiles);

// GpuBackend::ApplyMigLayout for NVML (gpu_backend.h has the contract); `index` names the GPU
// in messages.
Status ApplyNvmlMigLayout(const NvmlMigApi& api,
                          nvml::Device device,
                          int index,
                          const std::vector<std::string>& profiles);

}  // namespace gf
