#include "gpu/nvml/nvml_topology.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <set>

#include "core/check.h"

namespace gf {
namespace {

std::string BusIdOf(const NvmlTopologyApi& api, nvml::Device device) {
  nvml::PciInfo pci{};
  if (api.pci_info == nullptr || api.pci_info(device, &pci) != nvml::kSuccess) {
    return "";
  }
  pci.bus_id[nvml::kPciBusIdSize - 1] = '\0';
  return NormalizePciBusId(pci.bus_id);
}

int NumaNodeOf(const NvmlTopologyApi& api,
               nvml::Device device,
               const std::string& bus_id,
               const std::filesystem::path& sysfs) {
  unsigned int node = 0;
  if (api.numa_node_id != nullptr && api.numa_node_id(device, &node) == nvml::kSuccess) {
    return static_cast<int>(node);
  }
  if (bus_id.empty()) {
    return -1;
  }
  std::ifstream in(sysfs / bus_id / "numa_node");
  int from_kernel = -1;  // the kernel writes -1 on machines without NUMA
  if (!(in >> from_kernel)) {
    return -1;
  }
  return from_kernel;
}

// Groups GPUs whose common ancestor is at most MULTIPLE; each gets its group's lowest index.
void ReadPcieSwitches(const NvmlTopologyApi& api,
                      const std::vector<nvml::Device>& devices,
                      std::vector<Gpu>& gpus) {
  if (api.common_ancestor == nullptr) {
    return;
  }
  std::vector<std::size_t> group(gpus.size());
  std::iota(group.begin(), group.end(), std::size_t{0});
  const auto root = [&](std::size_t i) {
    while (group[i] != i) {
      i = group[i];
    }
    return i;
  };
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (std::size_t j = i + 1; j < gpus.size(); ++j) {
      int level = nvml::kTopologySystem;
      if (api.common_ancestor(devices[i], devices[j], &level) == nvml::kSuccess &&
          level <= nvml::kTopologyMultiple) {
        group[root(j)] = root(i);
      }
    }
  }
  std::map<std::size_t, std::pair<int, int>> groups;  // root → (lowest index, size)
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto [it, added] = groups.try_emplace(root(i), gpus[i].index, 0);
    it->second.first = std::min(it->second.first, gpus[i].index);
    ++it->second.second;
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto [lowest, size] = groups[root(i)];
    gpus[i].pcie_switch = size > 1 ? lowest : -1;  // alone: shares a switch with no GPU
  }
}

// The bus ids of the far ends of a GPU's active NVLinks.
std::set<std::string> NvlinkRemotes(const NvmlTopologyApi& api, nvml::Device device) {
  std::set<std::string> remotes;
  for (unsigned int link = 0; link < nvml::kNvlinkMaxLinks; ++link) {
    int active = 0;
    const nvml::Return rc = api.nvlink_state(device, link, &active);
    if (rc == nvml::kErrorInvalidArgument || rc == nvml::kErrorNotSupported) {
      break;  // past this GPU's links, or no NVLink at all
    }
    nvml::PciInfo pci{};
    if (rc != nvml::kSuccess || active != nvml::kFeatureEnabled ||
        api.nvlink_remote_pci_info(device, link, &pci) != nvml::kSuccess) {
      continue;
    }
    pci.bus_id[nvml::kPciBusIdSize - 1] = '\0';
    if (std::string bus_id = NormalizePciBusId(pci.bus_id); !bus_id.empty()) {
      remotes.insert(std::move(bus_id));
    }
  }
  return remotes;
}

void ReadNvlinks(const NvmlTopologyApi& api,
                 const std::vector<nvml::Device>& devices,
                 const std::vector<std::string>& bus_ids,
                 std::vector<Gpu>& gpus) {
  if (api.nvlink_state == nullptr || api.nvlink_remote_pci_info == nullptr) {
    return;
  }
  std::map<std::string, int> gpu_at;  // bus id → GPU index
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (!bus_ids[i].empty()) {
      gpu_at[bus_ids[i]] = gpus[i].index;
    }
  }
  std::vector<std::set<int>> peers(gpus.size());
  std::map<std::string, std::set<std::size_t>> fabric;  // non-GPU far end → GPUs reaching it
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (const std::string& remote : NvlinkRemotes(api, devices[i])) {
      if (const auto gpu = gpu_at.find(remote); gpu != gpu_at.end()) {
        peers[i].insert(gpu->second);
      } else {
        fabric[remote].insert(i);
      }
    }
  }
  for (const auto& [device, reaching] : fabric) {
    for (const std::size_t i : reaching) {
      for (const std::size_t j : reaching) {
        peers[i].insert(gpus[j].index);
      }
    }
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    peers[i].erase(gpus[i].index);
    gpus[i].nvlink_peers.assign(peers[i].begin(), peers[i].end());
  }
}

}  // namespace

std::string NormalizePciBusId(std::string_view bus_id) {
  unsigned int domain = 0;
  unsigned int bus = 0;
  unsigned int device = 0;
  unsigned int function = 0;
  const std::string text(bus_id);
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4 ||
      bus > 0xff || device > 0x1f || function > 7 || domain > 0xffff) {
    return "";
  }
  std::array<char, 16> out{};
  std::snprintf(out.data(), out.size(), "%04x:%02x:%02x.%x", domain, bus, device, function);
  return out.data();
}

void ReadNvmlTopology(const NvmlTopologyApi& api,
                      const std::vector<nvml::Device>& devices,
                      std::vector<Gpu>& gpus,
                      const std::filesystem::path& sysfs_pci_devices) {
  GF_CHECK(devices.size() == gpus.size());
  std::vector<std::string> bus_ids;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    bus_ids.push_back(BusIdOf(api, devices[i]));
    gpus[i].numa_node = NumaNodeOf(api, devices[i], bus_ids.back(), sysfs_pci_devices);
  }
  ReadPcieSwitches(api, devices, gpus);
  ReadNvlinks(api, devices, bus_ids, gpus);
}

}  // namespace gf
