// NormalizeGpuModel: turns the product name a driver reports ("NVIDIA H100 80GB HBM3") into
// the short model name gpufleet schedules and reports by ("H100-80GB").
// A pure function; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gf {

// Returns "<family>-<NN>GB":
//  - family: the first token of the name once "NVIDIA", "Tesla", "GeForce" and "Quadro" are
//    dropped, cut at its first '-' ("A100-SXM4-40GB" -> "A100"); a token without a digit is
//    joined with the next one ("RTX 4090" -> "RTX4090") so consumer cards stay distinct;
//  - NN: from an "NNGB" token in the name if there is one, else the smallest common card size
//    (8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 141, 144, 180, 192) at or above the
//    reported memory rounded to whole GiB (drivers report a bit less than the marketed size:
//    an L4 reports 23034 MiB and is sold as 24 GB).
// When memory_total_mib <= 0 and the name has no size, returns the family alone. An empty or
// unreadable name gives "unknown".
std::string NormalizeGpuModel(std::string_view nvml_name, std::int64_t memory_total_mib);

}  // namespace gf
