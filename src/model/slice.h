// Slice: the unit of GPU allocation (DESIGN.md §5). A whole GPU today; a share of one GPU
// (compute in milli-GPU plus a memory limit) or a MIG instance when sharing lands (#7).
// Resources are integers, never floats. Plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ids.h"

namespace gf {

inline constexpr int kWholeGpuMilli = 1000;

struct Slice {
  GpuUuid gpu;
  int gpu_milli = kWholeGpuMilli;  // 1000 = the whole GPU
  std::int64_t memory_mib = 0;     // 0 with a whole GPU: all of its memory
  bool IsWhole() const { return gpu_milli == kWholeGpuMilli; }
  bool operator==(const Slice&) const = default;
};

// Milli-GPUs as a person writes GPUs: 2000 → "2", 250 → "0.25", 1125 → "1.125".
inline std::string GpuAmountText(std::int64_t milli) {
  std::string text = std::to_string(milli / kWholeGpuMilli);
  std::int64_t rest = milli % kWholeGpuMilli;
  if (rest != 0) {
    std::string digits = std::to_string(kWholeGpuMilli + rest).substr(1);  // "250"
    digits.erase(digits.find_last_not_of('0') + 1);
    text += "." + digits;
  }
  return text;
}

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
