// Topology-aware choice of GPUs on one node (issue #4, scope 7): once best fit has chosen the
// node, which of its free GPUs a job gets.
//
// Assumptions:
// - Two GPUs talk over, from best to worst: a direct NVLink (an NVLink peer, or both on one
//   NVSwitch fabric, as the backend reports it), one PCIe switch, one NUMA node, the system
//   (across sockets). Unknown topology (-1, no peers) counts as the worst link.
// - A set of GPUs is as good as its worst pair: all NVLink > one PCIe switch > one NUMA node
//   > across (NCCL's rings run at the speed of their slowest hop).
//
// Algorithm: among the sets of `count` candidates, choose by
//   1. the set's worst link (lower is better);
//   2. how well the candidates left over are connected (sum over their pairs of a link score,
//      higher is better): a 2-GPU job takes the pair of a half-used NVLink quad rather than
//      breaking a whole one (anti-fragmentation, as best fit does between nodes);
//   3. the lowest recent load (sum of utilisation, then of memory used), so that work spreads
//      over cards that are equally good rather than piling on the first ones;
//   4. the lowest indexes.
// Every set is tried when there are at most kMaxExhaustiveSets of them (an 8-GPU node: 70 at
// most); beyond that, one greedy set per starting GPU (add the best-linked, least-loaded GPU
// each step) is scored instead. It runs only for the node a job starts on, never per node.
//
// Pure functions over values: safe from any thread.
#pragma once

#include <cstdint>
#include <vector>

namespace gf {

// One free GPU of the node a job starts on, as the choice sees it.
struct TopoGpu {
  int slot = 0;              // position on its node (0..63): the bit other GPUs' nvlink use
  int numa = -1;             // NUMA node; -1 unknown
  int pcie_switch = -1;      // PCIe switch group; -1 unknown
  std::uint64_t nvlink = 0;  // bit s: an NVLink to the node's GPU in slot s
  int util_pct = 0;          // recent utilisation
  std::int64_t memory_used_mib = 0;
};

// 0 NVLink, 1 same PCIe switch, 2 same NUMA node, 3 across (or unknown).
int LinkLevel(const TopoGpu& a, const TopoGpu& b);

inline constexpr std::int64_t kMaxExhaustiveSets = 4096;

// The positions in `candidates` (ascending) of the `count` GPUs to give, by the rules above.
// Requires 0 <= count <= candidates.size() and every slot below 64.
std::vector<int> ChooseConnectedGpus(const std::vector<TopoGpu>& candidates, int count);

}  // namespace gf
