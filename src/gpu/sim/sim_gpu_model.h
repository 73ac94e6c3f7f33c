// The physics of a simulated GPU: a per-model profile (power, clocks, sensors) and pure,
// deterministic functions that turn "which processes run here, and when" into the counters a
// driver would report. SimGpuBackend keeps the state (energy, temperature) and calls these.
//
// Nothing here reads a clock, a global RNG or the system: every result is a function of its
// arguments, so two backends driven by the same clock report the same samples.
// Thread-safety: pure functions and constant data; safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "model/gpu_sample.h"

namespace gf {

// What a card model offers and draws. Rough public figures: enough for plausible demos and
// exact energy arithmetic, not a datasheet.
struct SimGpuProfile {
  std::string_view family;  // model-name prefix it applies to: "H100", "L4", ...
  std::int64_t tdp_mw;      // board power limit = full-load draw
  std::int64_t idle_mw;     // draw with no work, at P8
  int sm_boost_mhz;         // SM clock when busy (P0)
  int sm_idle_mhz;          // SM clock when idle (P8)
  int mem_max_mhz;          // memory clock when busy
  int mem_idle_mhz;         // memory clock when idle (HBM does not slow down; GDDR does)
  bool hbm;                 // HBM with its own temperature sensor (memory_temperature_c)
  bool ecc;                 // ECC enabled (datacenter cards); otherwise counters are nullopt
  bool row_remap;           // row remapping (Ampere and later datacenter cards)
  bool fan;                 // actively cooled; datacenter cards are passive (fan nullopt)
};

// The profile whose family prefixes `model` ("H100-80GB" → H100), or a generic actively
// cooled 300 W card for a model the table does not know.
const SimGpuProfile& SimGpuProfileFor(std::string_view model);

// A well-mixed 64-bit hash of `x` (SplitMix64's finaliser): the sim's only source of
// "randomness", so every wander is reproducible.
std::uint64_t SimMix64(std::uint64_t x);

// Utilisation of a busy GPU at `now`: wanders between kSimBusyMinPct and kSimBusyMaxPct,
// moving linearly between levels hashed from `seed` (the GPU) and 5-second time buckets.
inline constexpr int kSimBusyMinPct = 55;
inline constexpr int kSimBusyMaxPct = 98;
int SimBusyUtilPct(std::uint64_t seed, Time now);

// Memory-copy utilisation for a GPU utilisation: a fixed 40 % of it (training kernels spend
// a part of their time in memory traffic).
int SimMemoryUtilPct(int util_pct);

// Draw for a utilisation: idle_mw at 0 %, tdp_mw at 100 %, linear between.
std::int64_t SimPowerMw(const SimGpuProfile& profile, int util_pct);

// The die temperature a constant draw settles at: 30 C at idle draw, 75 C at TDP.
double SimTargetTemperatureC(const SimGpuProfile& profile, std::int64_t power_mw);

// First-order lag: the temperature after `elapsed` at a constant target, time constant 30 s
// (a card reaches ~63 % of a step in 30 s, ~95 % in 90 s). elapsed <= 0 changes nothing.
double SimLagTemperatureC(double current_c, double target_c, Millis elapsed);

// HBM temperature: a few degrees above the die, more under memory traffic.
int SimMemoryTemperatureC(int die_c, int mem_util_pct);

// Fan duty for a die temperature: 30 % up to 40 C, 100 % from 85 C, linear between.
int SimFanPct(int die_c);

// PCIe throughput in KB/s for a utilisation: a trickle when idle, ~10 GB/s received at full
// load (input batches), a quarter of that sent.
std::int64_t SimPcieRxKbps(int util_pct);
std::int64_t SimPcieTxKbps(int util_pct);

// Framebuffer held by the driver and CUDA runtime whatever runs: 0.5 % of the card.
std::int64_t SimDriverReserveMib(std::int64_t memory_total_mib);

// The processes on one GPU, as the driver would list them. Each pid's memory is a share of
// the card hashed from the pid (8..40 %), scaled down together when they would not fit beside
// the driver reserve; per-process utilisation splits util_pct and mem_util_pct by weights
// hashed from the pid, so the shares sum to at most the GPU's figures.
// A process with a memory limit (`limits`: a fractional job's, from its environment) behaves
// as a framework told its share does: it takes that share of its limit instead of the card.
// REQUIRES: pids ascending and unique (the order is kept).
std::vector<GpuProcessSample> SimProcesses(
    std::span<const std::uint32_t> pids,
    std::int64_t memory_total_mib,
    int util_pct,
    int mem_util_pct,
    const std::map<std::uint32_t, std::int64_t>* limits = nullptr);

}  // namespace gf
