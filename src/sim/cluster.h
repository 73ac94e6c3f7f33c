// The simulated cluster: which nodes, how many GPUs each, of which model.
//
// Two ways to say it:
// - a spec: NODESxGPUSxMODEL, or several joined by commas: `32x4xV100`, `16x8xA100,4x8xH100`.
//   Nodes are named n00000, n00001, ... in spec order (the scheduler visits nodes by name).
//   `:shared` or `:mps` after a part puts its GPUs in that sharing mode (SharingMode: they take
//   fractional jobs only): `4x8xA100,2x8xA100:shared`.
// - a machine-list CSV, like Philly's cluster_machine_list: columns `machineId`,
//   `number of GPUs` and optionally `single GPU mem` ("12GB"), other columns ignored. Each
//   machine is a node named by its id; its GPUs' model is "GPU-<mem>" (Philly does not name
//   models: jobs there ask for any GPU). Machines with 0 GPUs are left out.
//
// - an Alibaba node list CSV (the openb trace's openb_node_list_gpu_node.csv: header starting
//   `sn,`): columns `sn` (the node's name), `gpu` (count) and `model` (P100, T4, V100M16,
//   V100M32, G2, G3, A10; others are taken as written), other columns ignored.
//
// - a cluster file (`.toml`, config.h ClusterFileNode): [[node]] tables with a name, GPUs, a
//   model, optionally a count (name-0, name-1, ...), NVLink groups and labels.
//
// Every node is up, every GPU healthy; no topology or labels but the cluster file's. Plain
// values: thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "model/node.h"

namespace gf {
struct ClusterFileNode;  // config/config.h: gf_sim reads the file through gf_config
}  // namespace gf

namespace gf::sim {

// Errors (kInvalidArgument) name the part and the form: "cluster: '32x4' is not
// NODESxGPUSxMODEL (e.g. 32x4xV100)", "cluster: '0x4xV100': nodes must be 1 to 100000".
Result<std::vector<Node>> ParseClusterSpec(std::string_view spec);

// Errors name the source, line and column, as the trace readers do.
Result<std::vector<Node>> ParseMachineList(std::string_view text, const std::string& source);
// The Alibaba node list (above). Errors as ParseMachineList's.
Result<std::vector<Node>> ParseNodeList(std::string_view text, const std::string& source);

// The nodes of a cluster file. Errors name the [[node]] table: an NVLink group naming a GPU the
// node lacks or a GPU twice, a bad model or label, a name used twice.
Result<std::vector<Node>> ClusterFromFile(const std::vector<ClusterFileNode>& file);

// A path ending in ".toml" is read as a cluster file, ".csv" as a machine list (or a node
// list, by its header); anything else is a spec. GPUs of the models above get their memory;
// others 0 (unknown).
Result<std::vector<Node>> LoadCluster(const std::string& spec_or_path);

// Puts every GPU in `sharing` mode (`gpufleet sim --gpu-sharing`), whatever the spec said.
void ShareEveryGpu(std::vector<Node>& nodes, SharingMode sharing);

int TotalGpus(const std::vector<Node>& nodes);

}  // namespace gf::sim
