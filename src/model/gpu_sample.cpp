#include "model/gpu_sample.h"

#include <array>
#include <charconv>

namespace gf {
namespace {

constexpr std::array<ThrottleReason, 9> kThrottleReasons = {{
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
}};

}  // namespace

std::span<const ThrottleReason> KnownThrottleReasons() {
  return kThrottleReasons;
}

std::uint64_t KnownThrottleBits() {
  std::uint64_t known = 0;
  for (const ThrottleReason& r : kThrottleReasons) {
    known |= r.bit;
  }
  return known;
}

std::vector<std::string> ThrottleReasonNames(std::uint64_t reasons) {
  std::vector<std::string> names;
  for (const ThrottleReason& r : kThrottleReasons) {
    if ((reasons & r.bit) != 0) {
      names.emplace_back(r.name);
    }
  }
  for (std::uint64_t rest = reasons & ~KnownThrottleBits(); rest != 0; rest &= rest - 1) {
    const std::uint64_t lowest = rest & (~rest + 1);
    std::array<char, 16> hex{};
    auto* const end = std::to_chars(hex.data(), hex.data() + hex.size(), lowest, 16).ptr;
    names.push_back("unknown_0x" + std::string(hex.data(), end));
  }
  return names;
}

}  // namespace gf
