#include "gpu/gpu_model_name.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(GpuModelNameTest, SizeFromNameToken) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 80GB HBM3", 81559), "H100-80GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100-SXM4-40GB", 40536), "A100-40GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100 80GB PCIe", 81920), "A100-80GB");
  EXPECT_EQ(NormalizeGpuModel("Tesla V100-SXM2-16GB", 16160), "V100-16GB");
}

TEST(GpuModelNameTest, NameTokenWinsOverMemory) {
  // The marketed size is what people ask for, whatever the driver reserves.
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 80GB HBM3", 0), "H100-80GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 80GB HBM3", 20000), "H100-80GB");
}

TEST(GpuModelNameTest, SizeFromMemoryRoundsUpToACommonSize) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA L4", 23034), "L4-24GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H200", 143771), "H200-141GB");
  EXPECT_EQ(NormalizeGpuModel("Tesla T4", 15360), "T4-16GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 NVL", 95830), "H100-94GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A10", 23028), "A10-24GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA L40S", 46068), "L40S-48GB");
}

TEST(GpuModelNameTest, BeyondTheTableUsesRoundedGib) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA X9000", 307200), "X9000-300GB");
}

TEST(GpuModelNameTest, ConsumerNamesKeepTheirNumber) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA GeForce RTX 4090", 24564), "RTX4090-24GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA RTX A6000", 49140), "RTXA6000-48GB");
}

TEST(GpuModelNameTest, UnknownMemoryGivesFamilyOnly) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H200", 0), "H200");
}

TEST(GpuModelNameTest, EmptyNameIsUnknown) {
  EXPECT_EQ(NormalizeGpuModel("", 81920), "unknown-80GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA", 0), "unknown");
  EXPECT_EQ(NormalizeGpuModel("   ", 0), "unknown");
}

}  // namespace
}  // namespace gf
