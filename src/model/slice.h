// Slice: the unit of GPU allocation (DESIGN.md §5). A whole GPU today; a share of one GPU
// (compute in milli-GPU plus a memory limit) or a MIG instance when sharing lands (#7).
// Resources are integers, never floats. Plain value type.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ids.h"

namespace gf {

inline constexpr int kWholeGpuMilli = 1000;

struct Slice {
  GpuUuid gpu;
  int gpu_milli = kWholeGpuMilli;   // 1000 = the whole GPU
  std::int64_t memory_mib = 0;      // 0 with a whole GPU: all of its memory
  bool IsWhole() const { return gpu_milli == kWholeGpuMilli; }
  bool operator==(const Slice&) const = default;
};

// The slices of an allocation of whole GPUs, in CUDA_VISIBLE_DEVICES order.
inline std::vector<Slice> WholeGpuSlices(const std::vector<GpuUuid>& gpus) {
  std::vector<Slice> out;
  out.reserve(gpus.size());
  for (const auto& g : gpus) {
    out.push_back(Slice{g, kWholeGpuMilli, 0});
  }
  return out;
}

}  // namespace gf
