// Runs NvmlGpuBackend against the real libnvidia-ml.so.1 (label `gpu`). Skips itself on
// machines without an NVIDIA driver.
//
// Read-only: the backend only queries (no set*, reset or clear call exists in it), so running
// this on a production node changes no setting. Each counter a card does not offer is nullopt;
// where one is present, its value must be physically plausible.
#include <cstdint>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "gpu/gpu_backend.h"

namespace gf {
namespace {

// A present counter lies in [lo, hi]; an absent one is fine (older card or driver).
template <typename T>
void ExpectInRange(const std::optional<T>& value, T lo, T hi, const char* name) {
  if (value) {
    EXPECT_GE(*value, lo) << name;
    EXPECT_LE(*value, hi) << name;
  }
}

void ExpectPlausible(const GpuSample& s) {
  constexpr std::int64_t kMaxInt64 = INT64_MAX;
  EXPECT_GE(s.memory_used_mib, 0);
  EXPECT_LE(s.memory_used_mib, s.memory_total_mib);
  EXPECT_GE(s.memory_free_mib, 0);
  EXPECT_LE(s.memory_free_mib, s.memory_total_mib);
  ExpectInRange(s.util_gpu_pct, 0, 100, "util_gpu_pct");
  ExpectInRange(s.util_memory_pct, 0, 100, "util_memory_pct");
  ExpectInRange(s.temperature_c, 1, 120, "temperature_c");
  ExpectInRange(s.memory_temperature_c, 1, 130, "memory_temperature_c");
  ExpectInRange(s.power_mw, std::int64_t{1}, std::int64_t{2'000'000}, "power_mw");
  ExpectInRange(s.power_limit_mw, std::int64_t{1}, std::int64_t{2'000'000}, "power_limit_mw");
  ExpectInRange(s.energy_mj, std::int64_t{0}, kMaxInt64, "energy_mj");
  ExpectInRange(s.sm_clock_mhz, 0, 5000, "sm_clock_mhz");
  ExpectInRange(s.mem_clock_mhz, 0, 20000, "mem_clock_mhz");
  // PCIe 6.0 x16 is ~128 GB/s; the counter is KB/s.
  ExpectInRange(s.pcie_tx_kbps, std::int64_t{0}, std::int64_t{200'000'000}, "pcie_tx_kbps");
  ExpectInRange(s.pcie_rx_kbps, std::int64_t{0}, std::int64_t{200'000'000}, "pcie_rx_kbps");
  ExpectInRange(s.pcie_replay_count, std::int64_t{0}, kMaxInt64, "pcie_replay_count");
  ExpectInRange(s.ecc.volatile_corrected, std::int64_t{0}, kMaxInt64, "ecc");
  ExpectInRange(s.ecc.volatile_uncorrected, std::int64_t{0}, kMaxInt64, "ecc");
  ExpectInRange(s.ecc.aggregate_corrected, std::int64_t{0}, kMaxInt64, "ecc");
  ExpectInRange(s.ecc.aggregate_uncorrected, std::int64_t{0}, kMaxInt64, "ecc");
  if (s.remapped_rows) {
    EXPECT_GE(s.remapped_rows->correctable, 0);
    EXPECT_GE(s.remapped_rows->uncorrectable, 0);
  }
  ExpectInRange(s.fan_speed_pct, 0, 100, "fan_speed_pct");
  ExpectInRange(s.pstate, 0, 15, "pstate");
  for (const GpuProcessSample& p : s.processes) {
    EXPECT_GT(p.pid, 0u);
    ExpectInRange(p.used_memory_mib, std::int64_t{0}, s.memory_total_mib, "used_memory_mib");
    ExpectInRange(p.sm_util_pct, 0, 100, "sm_util_pct");
    ExpectInRange(p.mem_util_pct, 0, 100, "mem_util_pct");
  }
  for (const XidEvent& x : s.xids) {
    EXPECT_GT(x.xid, 0);
  }
}

TEST(GpuRealNvmlTest, DiscoverAndSampleEveryGpu) {
  SystemClock clock;
  auto backend = MakeGpuBackend("nvml", clock);
  if (!backend.ok() && backend.error().code == ErrorCode::kUnavailable) {
    GTEST_SKIP() << backend.error().message;
  }
  ASSERT_TRUE(backend.ok()) << backend.error().ToString();
  EXPECT_NE((*backend)->Describe().find("nvml (driver "), std::string::npos);

  auto gpus = (*backend)->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  for (const Gpu& gpu : *gpus) {
    SCOPED_TRACE(gpu.uuid.value());
    EXPECT_EQ(gpu.uuid.value().rfind("GPU-", 0), 0u);
    EXPECT_GT(gpu.memory_mib, 0);
    EXPECT_FALSE(gpu.model.empty());
    // Twice: the second sample exercises the per-process time stamp and the drained event set.
    for (int round = 0; round < 2; ++round) {
      auto sample = (*backend)->Sample(gpu.index);
      ASSERT_TRUE(sample.ok()) << sample.error().ToString();
      EXPECT_EQ(sample->uuid, gpu.uuid);
      EXPECT_FALSE(sample->lost);
      EXPECT_EQ(sample->memory_total_mib, gpu.memory_mib);
      ExpectPlausible(*sample);
    }
  }
}

// Prints what one real card offers, so a run on new hardware shows which counters are absent.
TEST(GpuRealNvmlTest, ReportsWhichCountersTheCardOffers) {
  SystemClock clock;
  auto backend = MakeGpuBackend("nvml", clock);
  if (!backend.ok()) {
    GTEST_SKIP() << backend.error().message;
  }
  auto sample = (*backend)->Sample(0);
  if (!sample.ok() && sample.error().code == ErrorCode::kNotFound) {
    GTEST_SKIP() << "no GPU";
  }
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  // Every NVIDIA data-centre GPU of the last decade reports these, MIG mode or not
  // (utilisation is not among them: a MIG-enabled card answers it with NOT_SUPPORTED).
  EXPECT_TRUE(sample->temperature_c.has_value());
  EXPECT_TRUE(sample->power_mw.has_value());
  EXPECT_TRUE(sample->sm_clock_mhz.has_value());
  EXPECT_TRUE(sample->pstate.has_value());
  RecordProperty("utilization", sample->util_gpu_pct.has_value() ? "yes" : "no");
  RecordProperty("memory_temperature", sample->memory_temperature_c.has_value() ? "yes" : "no");
  RecordProperty("remapped_rows", sample->remapped_rows.has_value() ? "yes" : "no");
  RecordProperty("ecc", sample->ecc.volatile_corrected.has_value() ? "yes" : "no");
  RecordProperty("fan", sample->fan_speed_pct.has_value() ? "yes" : "no");
}

}  // namespace
}  // namespace gf
