#include "gpu/gpu_backend.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(MakeGpuBackendTest, SimSpec) {
  ManualClock clock;
  auto backend = MakeGpuBackend("sim:2xA100-40GB,4xL4-24GB", clock);
  ASSERT_TRUE(backend.ok()) << backend.error().ToString();
  EXPECT_EQ((*backend)->Describe(), "sim:2xA100-40GB,4xL4-24GB");
  auto gpus = (*backend)->Discover();
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(gpus->size(), 6u);
}

TEST(MakeGpuBackendTest, UnknownSpecListsAcceptedForms) {
  ManualClock clock;
  for (const char* spec : {"", "gpu", "nvml:", "NVML", "simulated:4xH100-80GB"}) {
    auto backend = MakeGpuBackend(spec, clock);
    ASSERT_FALSE(backend.ok()) << spec;
    EXPECT_EQ(backend.error().code, ErrorCode::kInvalidArgument) << spec;
    EXPECT_NE(backend.error().message.find("'" + std::string(spec) + "'"), std::string::npos);
    EXPECT_NE(backend.error().message.find("'nvml'"), std::string::npos);
    EXPECT_NE(backend.error().message.find("nvml:/path/to/libnvidia-ml.so.1"), std::string::npos);
    EXPECT_NE(backend.error().message.find("sim:8xH100-80GB"), std::string::npos);
  }
}

TEST(MakeGpuBackendTest, BadSimSpecIsInvalidArgument) {
  ManualClock clock;
  auto backend = MakeGpuBackend("sim:8xH100", clock);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kInvalidArgument);
}

TEST(MakeGpuBackendTest, MissingNvmlLibraryIsUnavailableWithHint) {
  ManualClock clock;
  auto backend = MakeGpuBackend("nvml:/nonexistent/dir/libnvidia-ml.so.1", clock);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  const std::string& m = backend.error().message;
  EXPECT_NE(m.find("no NVIDIA driver: /nonexistent/dir/libnvidia-ml.so.1 could not be loaded ("),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("to try gpufleet without GPUs, use --gpus sim:4xH100-80GB"), std::string::npos)
      << m;
}

}  // namespace
}  // namespace gf
