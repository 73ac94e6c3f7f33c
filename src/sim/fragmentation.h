// GPU fragmentation (issue #7's benchmark, after the FGD paper, Weng et al., ATC'23): how much
// of the free GPU capacity the tasks a cluster expects cannot use.
//
// For one task shape m, the capacity fragmented for m is the free capacity m cannot use:
// - a share of d milli-GPU (a fractional task, or a 1-GPU task as a share of 1.0 on a shared
//   cluster) can use a shared GPU's free compute only where at least d is free: the free
//   compute of shared GPUs with less than d free, and every free exclusive GPU, is fragmented
//   for it;
// - k whole GPUs can use only exclusive GPUs of a node with at least k of them free: every
//   other free capacity is fragmented for it (a partly used shared GPU's, an empty shared
//   GPU's, and the free exclusive GPUs of nodes with fewer than k free).
// The cluster's fragmentation is the mean over the task shapes weighted by how many tasks of
// the workload have each (FGD's F(M) = sum over m of p_m F(m)), in milli-GPUs. A fully free
// cluster has none where every shape fits an empty GPU. GPUs that take no work count as not
// free. Memory is left out: trace tasks ask for compute only, and their memory follows it.
//
// Pure functions over plain values: thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace gf::sim {

struct TaskShape {
  int gpus = 1;       // whole GPUs (milli 0), or 1 for a share
  int milli = 0;      // a share of one GPU, 1..1000; 0 = whole GPUs
  double weight = 0;  // how many tasks of the workload have it
};

// One GPU's state: its node (an index), its kind, and what is free of it.
struct GpuRoom {
  std::size_t node = 0;
  bool shared = false;  // takes shares (shared or mps mode); else takes whole jobs
  int free_milli = 0;   // 0..1000; an exclusive GPU is 0 or 1000
};

struct Fragmentation {
  std::int64_t free_milli = 0;  // all free capacity
  double fragmented_milli = 0;  // the weighted mean over the shapes (above)
};

// `nodes`: the number of nodes the GpuRoom::node indexes run over. No shape: nothing is
// fragmented.
Fragmentation Fragmented(const std::vector<GpuRoom>& gpus,
                         std::size_t nodes,
                         const std::vector<TaskShape>& shapes);

}  // namespace gf::sim
