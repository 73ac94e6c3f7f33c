// The NVIDIA GPUs among the devices the kubelet says a container holds (pod_resources_client.h):
// their plain structs, and how their device ids name a GPU. Pure.
//
// The NVIDIA device plugin advertises GPUs under extended resource names:
//   nvidia.com/gpu          whole GPUs (also MIG devices under the "single" MIG strategy)
//   nvidia.com/mig-<profile>  MIG devices under the "mixed" strategy (nvidia.com/mig-1g.10gb)
//   nvidia.com/gpu.shared   time-sliced or MPS replicas, when renameByDefault is set
// Its device ids are GPU UUIDs ("GPU-…") or MIG UUIDs ("MIG-…") with the default
// DEVICE_ID_STRATEGY=uuid, NVML indices ("0", MIG "0:1") with DEVICE_ID_STRATEGY=index, and a
// replica of a shared GPU is "<id>::<n>". gpufleet's GPUs are known by UUID: an index is
// turned into its GPU's UUID with the node's inventory (ResolveGpuIndexes), kube/README.md.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/node.h"

namespace gf {

// One NVIDIA device a container holds.
struct KubeGpu {
  std::string resource{};   // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"
  std::string device_id{};  // as the device plugin names it: "GPU-…", "MIG-…", "GPU-…::2", "0"
  std::string gpu{};        // the GPU or MIG device: device_id without a replica suffix
  bool operator==(const KubeGpu&) const = default;
};

// A container with the NVIDIA GPUs it holds.
struct KubeContainerGpus {
  std::string pod_namespace{};
  std::string pod_name{};
  std::string container{};
  std::vector<KubeGpu> gpus{};  // in the kubelet's order
  bool operator==(const KubeContainerGpus&) const = default;
};

// Whether a device plugin resource name is one of the NVIDIA GPU resources above.
bool IsNvidiaGpuResource(std::string_view resource_name);

// The GPU (or MIG device) of a device plugin id: the id without a replica suffix "::<n>"
// ("GPU-1234::3" → "GPU-1234"; "GPU-1234" → itself).
std::string_view GpuOfDeviceId(std::string_view device_id);

// DEVICE_ID_STRATEGY=index: each GPU named by its NVML index ("0", a replica "0::1") is named
// by the UUID of the node's GPU with that index instead (KubeGpu::gpu; device_id stays as the
// kubelet gave it), so that the rest reads UUIDs alone. A MIG device by index ("0:1", its
// position among its GPU's MIG devices) and an index the node has no GPU for stay as they are:
// they name no GPU gpufleet knows (such a container's processes are outside its allocation).
void ResolveGpuIndexes(std::vector<KubeContainerGpus>& holders, std::span<const Gpu> gpus);

}  // namespace gf
