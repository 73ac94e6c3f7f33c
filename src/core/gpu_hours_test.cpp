#include "core/gpu_hours.h"

#include <limits>

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(GpuHoursTest, FormatsWithoutNoise) {
  EXPECT_EQ(FormatGpuHours(0), "0");
  EXPECT_EQ(FormatGpuHours(0.001), "0.001");
  EXPECT_EQ(FormatGpuHours(0.01), "0.01");
  EXPECT_EQ(FormatGpuHours(0.00139), "0.0014");
  EXPECT_EQ(FormatGpuHours(30.5), "30.5");
  EXPECT_EQ(FormatGpuHours(100), "100");
  EXPECT_EQ(FormatGpuHours(-0.00001), "0");
  EXPECT_EQ(FormatGpuHours(std::numeric_limits<double>::quiet_NaN()), "-");
}

}  // namespace
}  // namespace gf
