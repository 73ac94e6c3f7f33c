#include "kube/kube_devices.h"

#include <algorithm>

namespace gf {

bool IsNvidiaGpuResource(std::string_view resource_name) {
  return resource_name == "nvidia.com/gpu" || resource_name == "nvidia.com/gpu.shared" ||
         (resource_name.starts_with("nvidia.com/mig-") &&
          resource_name.size() > std::string_view("nvidia.com/mig-").size());
}

std::string_view GpuOfDeviceId(std::string_view device_id) {
  // A replica suffix is "::" and digits; a MIG index id ("0:1") has a single colon.
  const std::size_t at = device_id.rfind("::");
  if (at == std::string_view::npos || at + 2 == device_id.size()) {
    return device_id;
  }
  for (const char c : device_id.substr(at + 2)) {
    if (c < '0' || c > '9') {
      return device_id;
    }
  }
  return device_id.substr(0, at);
}

void ResolveGpuIndexes(std::vector<KubeContainerGpus>& holders, std::span<const Gpu> gpus) {
  for (KubeContainerGpus& holder : holders) {
    for (KubeGpu& device : holder.gpus) {
      const std::string& id = device.gpu;
      if (id.empty() || id.size() > 4 ||
          !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        continue;
      }
      const int index = std::stoi(id);
      const auto gpu = std::find_if(
          gpus.begin(), gpus.end(), [index](const Gpu& g) { return g.index == index; });
      if (gpu != gpus.end()) {
        device.gpu = gpu->uuid.value();
      }
    }
  }
}

}  // namespace gf
