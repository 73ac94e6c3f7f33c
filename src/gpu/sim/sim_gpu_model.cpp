#include "gpu/sim/sim_gpu_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/check.h"

namespace gf {
namespace {

// Longer prefixes first where one family's name starts with another's (L40 before L4, A100
// before A10), since the first match wins.
constexpr std::array<SimGpuProfile, 14> kProfiles = {{
    // family   TDP        idle      SM boost/idle  mem max/idle  hbm    ecc    remap  fan
    {"H200", 700'000, 75'000, 1980, 345, 3201, 3201, true, true, true, false},
    {"H100", 700'000, 70'000, 1980, 345, 2619, 2619, true, true, true, false},
    {"B200", 1'000'000, 140'000, 1965, 345, 3996, 3996, true, true, true, false},
    {"A100", 400'000, 55'000, 1410, 210, 1593, 1593, true, true, true, false},
    {"A30", 165'000, 30'000, 1440, 210, 1215, 1215, true, true, true, false},
    {"A40", 300'000, 30'000, 1740, 210, 7251, 405, false, true, true, false},
    {"A10", 150'000, 25'000, 1695, 210, 6251, 405, false, true, true, false},
    {"L40", 300'000, 35'000, 2490, 210, 9001, 405, false, true, true, false},
    {"L4", 72'000, 16'000, 2040, 210, 6251, 405, false, true, true, false},
    {"V100", 300'000, 40'000, 1530, 135, 877, 877, true, true, false, false},
    {"T4", 70'000, 10'000, 1590, 300, 5001, 405, false, true, false, false},
    {"RTX", 300'000, 20'000, 2505, 210, 10501, 405, false, false, false, true},
    {"A6000", 300'000, 20'000, 1800, 210, 8001, 405, false, false, false, true},
    {"GH200", 900'000, 90'000, 1980, 345, 2619, 2619, true, true, true, false},
}};
constexpr SimGpuProfile kGenericProfile = {
    "", 300'000, 50'000, 1500, 210, 5001, 405, false, false, false, true};

constexpr std::int64_t kBusyWanderPeriodMs = 5'000;
constexpr double kIdleTemperatureC = 30;
constexpr double kFullLoadRiseC = 45;  // a card at TDP settles at about 75 C
constexpr double kThermalTimeConstantMs = 30'000;
constexpr int kMemoryCopySharePct = 40;
constexpr int kFanMinPct = 30;
constexpr int kFanQuietUpToC = 40;
constexpr int kFanFullFromC = 85;
constexpr std::int64_t kPcieIdleRxKbps = 160;
constexpr std::int64_t kPcieRxKbpsPerUtilPct = 100'000;  // 10 GB/s at 100 %
constexpr int kProcessMemoryMinPct = 8;
constexpr int kProcessMemorySpreadPct = 33;  // 8..40 % of the card
constexpr std::uint64_t kProcessWeightSalt = 0x9e3779b97f4a7c15ULL;

// Floor division, so that times before the epoch still fall into consistent buckets.
std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int BusyLevel(std::uint64_t seed, std::int64_t bucket) {
  std::uint64_t h = SimMix64(seed ^ SimMix64(static_cast<std::uint64_t>(bucket)));
  return kSimBusyMinPct + static_cast<int>(h % (kSimBusyMaxPct - kSimBusyMinPct + 1));
}

// Per-process weight 1..4, from the pid: how much of the GPU's work each process gets.
std::int64_t ProcessWeight(std::uint32_t pid) {
  return 1 + static_cast<std::int64_t>(SimMix64(pid ^ kProcessWeightSalt) % 4);
}

// total x part / whole, rounded down. REQUIRES: whole > 0 (a sum of positive parts).
std::int64_t Share(std::int64_t total, std::int64_t part, std::int64_t whole) {
  GF_CHECK(whole > 0);
  return total * part / whole;
}

}  // namespace

const SimGpuProfile& SimGpuProfileFor(std::string_view model) {
  for (const SimGpuProfile& p : kProfiles) {
    if (model.substr(0, p.family.size()) == p.family) {
      return p;
    }
  }
  return kGenericProfile;
}

std::uint64_t SimMix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int SimBusyUtilPct(std::uint64_t seed, Time now) {
  std::int64_t ms = ToUnixMillis(now);
  std::int64_t bucket = FloorDiv(ms, kBusyWanderPeriodMs);
  std::int64_t into = ms - bucket * kBusyWanderPeriodMs;
  std::int64_t from = BusyLevel(seed, bucket);
  std::int64_t to = BusyLevel(seed, bucket + 1);
  return static_cast<int>(from + (to - from) * into / kBusyWanderPeriodMs);
}

int SimMemoryUtilPct(int util_pct) {
  return util_pct * kMemoryCopySharePct / 100;
}

std::int64_t SimPowerMw(const SimGpuProfile& profile, int util_pct) {
  return profile.idle_mw + (profile.tdp_mw - profile.idle_mw) * util_pct / 100;
}

double SimTargetTemperatureC(const SimGpuProfile& profile, std::int64_t power_mw) {
  double above_idle = static_cast<double>(power_mw - profile.idle_mw);
  double range = static_cast<double>(profile.tdp_mw - profile.idle_mw);
  return kIdleTemperatureC + kFullLoadRiseC * std::clamp(above_idle / range, 0.0, 1.0);
}

double SimLagTemperatureC(double current_c, double target_c, Millis elapsed) {
  if (elapsed.count() <= 0) {
    return current_c;
  }
  double keep = std::exp(-static_cast<double>(elapsed.count()) / kThermalTimeConstantMs);
  return target_c + (current_c - target_c) * keep;
}

int SimMemoryTemperatureC(int die_c, int mem_util_pct) {
  return die_c + 3 + mem_util_pct / 8;
}

int SimFanPct(int die_c) {
  int t = std::clamp(die_c, kFanQuietUpToC, kFanFullFromC);
  return kFanMinPct + (100 - kFanMinPct) * (t - kFanQuietUpToC) / (kFanFullFromC - kFanQuietUpToC);
}

std::int64_t SimPcieRxKbps(int util_pct) {
  return kPcieIdleRxKbps + kPcieRxKbpsPerUtilPct * util_pct;
}

std::int64_t SimPcieTxKbps(int util_pct) {
  return SimPcieRxKbps(util_pct) / 4;
}

std::int64_t SimDriverReserveMib(std::int64_t memory_total_mib) {
  return memory_total_mib / 200;
}

std::vector<GpuProcessSample> SimProcesses(std::span<const std::uint32_t> pids,
                                           std::int64_t memory_total_mib,
                                           int util_pct,
                                           int mem_util_pct,
                                           const std::map<std::uint32_t, std::int64_t>* limits) {
  if (pids.empty()) {
    return {};
  }
  std::vector<std::int64_t> want_mib;
  want_mib.reserve(pids.size());
  std::int64_t want_sum = 0;
  std::int64_t weight_sum = 0;
  for (std::uint32_t pid : pids) {
    auto pct = static_cast<std::int64_t>(SimMix64(pid) % kProcessMemorySpreadPct);
    // A limited process takes half its usual share of its limit (4..20 %), so that the few
    // processes of one job (a shell and its command) stay within the limit together.
    std::int64_t want = memory_total_mib * (kProcessMemoryMinPct + pct) / 100;
    if (limits != nullptr) {
      if (const auto it = limits->find(pid); it != limits->end()) {
        want = std::min(memory_total_mib, it->second) * (kProcessMemoryMinPct + pct) / 200;
      }
    }
    want_mib.push_back(want);
    want_sum += want_mib.back();
    weight_sum += ProcessWeight(pid);
  }
  // Scaled down together (rounding down) so the sum never exceeds what the driver leaves.
  std::int64_t budget = memory_total_mib - SimDriverReserveMib(memory_total_mib);
  std::vector<GpuProcessSample> out;
  out.reserve(pids.size());
  for (std::size_t i = 0; i < pids.size(); ++i) {
    GpuProcessSample p;
    p.pid = pids[i];
    p.used_memory_mib = want_sum > budget ? Share(budget, want_mib[i], want_sum) : want_mib[i];
    std::int64_t weight = ProcessWeight(pids[i]);
    p.sm_util_pct = static_cast<int>(Share(util_pct, weight, weight_sum));
    p.mem_util_pct = static_cast<int>(Share(mem_util_pct, weight, weight_sum));
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace gf
