#include "sim/fragmentation.h"

#include <algorithm>

namespace gf::sim {

Fragmentation Fragmented(const std::vector<GpuRoom>& gpus,
                         std::size_t nodes,
                         const std::vector<TaskShape>& shapes) {
  constexpr int kWhole = 1000;
  Fragmentation out;
  // Shared GPUs by free compute, and nodes by free exclusive GPUs: each shape's usable
  // capacity is then a suffix sum, whatever the cluster's size.
  std::vector<std::int64_t> shared_with_free(kWhole + 1, 0);
  std::vector<int> free_exclusive(nodes, 0);
  for (const GpuRoom& gpu : gpus) {
    out.free_milli += gpu.free_milli;
    if (gpu.shared) {
      shared_with_free[static_cast<std::size_t>(gpu.free_milli)] += 1;
    } else if (gpu.free_milli >= kWhole) {
      free_exclusive[gpu.node] += 1;
    }
  }
  // usable_share[d]: free compute on shared GPUs with at least d free.
  std::vector<std::int64_t> usable_share(kWhole + 2, 0);
  for (int f = kWhole; f >= 0; --f) {
    usable_share[static_cast<std::size_t>(f)] = usable_share[static_cast<std::size_t>(f) + 1] +
                                                f * shared_with_free[static_cast<std::size_t>(f)];
  }
  const int most =
      free_exclusive.empty() ? 0 : *std::max_element(free_exclusive.begin(), free_exclusive.end());
  // usable_whole[k]: free exclusive capacity on nodes with at least k free exclusive GPUs.
  std::vector<std::int64_t> nodes_with(static_cast<std::size_t>(most) + 1, 0);
  for (const int c : free_exclusive) {
    nodes_with[static_cast<std::size_t>(c)] += 1;
  }
  std::vector<std::int64_t> usable_whole(static_cast<std::size_t>(most) + 2, 0);
  for (int c = most; c >= 0; --c) {
    usable_whole[static_cast<std::size_t>(c)] =
        usable_whole[static_cast<std::size_t>(c) + 1] +
        std::int64_t{c} * kWhole * nodes_with[static_cast<std::size_t>(c)];
  }
  double weight = 0;
  double fragmented = 0;
  for (const TaskShape& shape : shapes) {
    std::int64_t usable = 0;
    if (shape.milli > 0) {
      usable = usable_share[static_cast<std::size_t>(std::clamp(shape.milli, 1, kWhole))];
    } else if (shape.gpus >= 1 && shape.gpus <= most) {
      usable = usable_whole[static_cast<std::size_t>(shape.gpus)];
    }
    weight += shape.weight;
    fragmented += shape.weight * static_cast<double>(out.free_milli - usable);
  }
  out.fragmented_milli = weight > 0 ? fragmented / weight : 0;
  return out;
}

}  // namespace gf::sim
