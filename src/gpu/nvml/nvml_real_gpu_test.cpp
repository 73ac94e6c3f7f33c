// Runs NvmlGpuBackend against the real libnvidia-ml.so.1 (label `gpu`). Skips itself on
// machines without an NVIDIA driver.
#include <gtest/gtest.h>

#include "gpu/gpu_backend.h"

namespace gf {
namespace {

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
    auto sample = (*backend)->Sample(gpu.index);
    ASSERT_TRUE(sample.ok()) << sample.error().ToString();
    EXPECT_EQ(sample->uuid, gpu.uuid);
    EXPECT_EQ(sample->memory_total_mib, gpu.memory_mib);
    EXPECT_GE(sample->memory_used_mib, 0);
    EXPECT_LE(sample->memory_used_mib, sample->memory_total_mib);
    if (sample->util_gpu_pct) {
      EXPECT_GE(*sample->util_gpu_pct, 0);
      EXPECT_LE(*sample->util_gpu_pct, 100);
    }
    if (sample->temperature_c) {
      EXPECT_GT(*sample->temperature_c, 0);
      EXPECT_LT(*sample->temperature_c, 120);
    }
    if (sample->power_mw) {
      EXPECT_GT(*sample->power_mw, 0);
    }
    for (const GpuProcessSample& p : sample->processes) {
      EXPECT_GT(p.pid, 0u);
    }
  }
}

}  // namespace
}  // namespace gf
