#include "kube/kube_devices.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(KubeDevicesTest, TheNvidiaPluginsResourcesAreGpus) {
  EXPECT_TRUE(IsNvidiaGpuResource("nvidia.com/gpu"));
  EXPECT_TRUE(IsNvidiaGpuResource("nvidia.com/gpu.shared"));
  EXPECT_TRUE(IsNvidiaGpuResource("nvidia.com/mig-1g.10gb"));
  EXPECT_TRUE(IsNvidiaGpuResource("nvidia.com/mig-3g.40gb"));
  EXPECT_FALSE(IsNvidiaGpuResource("nvidia.com/mig-"));
  EXPECT_FALSE(IsNvidiaGpuResource("amd.com/gpu"));
  EXPECT_FALSE(IsNvidiaGpuResource("example.com/nvidia.com/gpu"));
  EXPECT_FALSE(IsNvidiaGpuResource("cpu"));
  EXPECT_FALSE(IsNvidiaGpuResource(""));
}

TEST(KubeDevicesTest, AReplicaOfASharedGpuIsThatGpu) {
  EXPECT_EQ(GpuOfDeviceId("GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c4d::3"),
            "GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c4d");
  EXPECT_EQ(GpuOfDeviceId("GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c4d"),
            "GPU-8c4bd2e7-1a5f-4c3e-9d7b-2f6a0e1b3c4d");
  EXPECT_EQ(GpuOfDeviceId("MIG-0e1b3c4d-1a5f-4c3e-9d7b-2f6a8c4bd2e7::0"),
            "MIG-0e1b3c4d-1a5f-4c3e-9d7b-2f6a8c4bd2e7");
  EXPECT_EQ(GpuOfDeviceId("0:1"), "0:1");          // a MIG device by index: GPU 0, instance 1
  EXPECT_EQ(GpuOfDeviceId("0::1"), "0");           // a replica of GPU 0 by index
  EXPECT_EQ(GpuOfDeviceId("GPU-1::"), "GPU-1::");  // no replica number: kept as it is
  EXPECT_EQ(GpuOfDeviceId("GPU-1::x"), "GPU-1::x");
}

}  // namespace
}  // namespace gf
