// How a node's GPUs are wired, read from NVML for placement (issue #4, scope 7): which GPUs
// share an NVLink, a PCIe switch, a NUMA node.
//
// Every entry point used here is optional (older drivers lack some, and a card may answer
// NOT_SUPPORTED): what cannot be read stays unknown (-1, no peers), never an error. Sources:
// - NVLink: for each link of a GPU that is active (nvmlDeviceGetNvLinkState), the PCI bus id
//   of its far end (nvmlDeviceGetNvLinkRemotePciInfo_v2). A far end that is a GPU of this node
//   makes the two peers; a far end that is not (an NVSwitch) makes every GPU reaching that
//   same device a peer: on an NVSwitch board all GPUs talk over NVLink.
// - PCIe switch: GPUs whose nearest common ancestor (nvmlDeviceGetTopologyCommonAncestor) is
//   at most MULTIPLE (one board, one switch, or switches below one host bridge) form a group,
//   named by its lowest GPU index; a GPU that shares its switch with no other GPU gets -1.
// - NUMA node: nvmlDeviceGetNumaNodeId (R545+), else the kernel's
//   `/sys/bus/pci/devices/<bus id>/numa_node`.
//
// Pure functions over the given entry points; thread-safe as far as NVML is.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/nvml/nvml_abi.h"
#include "model/node.h"

namespace gf {

// The optional entry points topology needs; null where the driver lacks one.
struct NvmlTopologyApi {
  nvml::DeviceGetPciInfoFn pci_info = nullptr;
  nvml::DeviceGetTopologyCommonAncestorFn common_ancestor = nullptr;
  nvml::DeviceGetNvLinkStateFn nvlink_state = nullptr;
  nvml::DeviceGetNvLinkRemotePciInfoFn nvlink_remote_pci_info = nullptr;
  nvml::DeviceGetUIntFn numa_node_id = nullptr;
};

// "0000:3b:00.0" (the kernel's sysfs spelling) from NVML's "00000000:3B:00.0" or
// "0000:3B:00.0"; "" when `bus_id` is not a PCI address.
std::string NormalizePciBusId(std::string_view bus_id);

// Fills numa_node, pcie_switch and nvlink_peers of each gpus[i], whose NVML handle is
// devices[i] (requires equal sizes). `sysfs_pci_devices` is where NUMA nodes are looked up when
// NVML cannot tell (tests: a fake tree).
void ReadNvmlTopology(const NvmlTopologyApi& api,
                      const std::vector<nvml::Device>& devices,
                      std::vector<Gpu>& gpus,
                      const std::filesystem::path& sysfs_pci_devices = "/sys/bus/pci/devices");

}  // namespace gf
