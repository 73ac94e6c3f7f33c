#include "sim/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf::sim {
namespace {

using ::testing::HasSubstr;

std::string SpecError(std::string_view spec) {
  auto nodes = ParseClusterSpec(spec);
  EXPECT_FALSE(nodes.ok()) << spec;
  return nodes.ok() ? "" : nodes.error().message;
}

TEST(ClusterTest, ParsesOneGroup) {
  auto nodes = ParseClusterSpec("32x4xV100");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 32u);
  EXPECT_EQ(TotalGpus(*nodes), 128);
  EXPECT_EQ((*nodes)[0].name.value(), "n00000");
  EXPECT_EQ((*nodes)[31].name.value(), "n00031");
  EXPECT_EQ((*nodes)[5].gpus[3].model, "V100");
  EXPECT_EQ((*nodes)[5].gpus[3].index, 3);
  EXPECT_EQ((*nodes)[5].state, NodeState::kUp);
}

TEST(ClusterTest, ParsesAListWithUniqueNamesAndUuids) {
  auto nodes = ParseClusterSpec("2x8xA100,1x4xH100-80GB");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ(TotalGpus(*nodes), 20);
  EXPECT_EQ((*nodes)[2].name.value(), "n00002");
  EXPECT_EQ((*nodes)[2].gpus.size(), 4u);
  EXPECT_EQ((*nodes)[2].gpus[0].model, "H100-80GB");
  EXPECT_NE((*nodes)[0].gpus[0].uuid, (*nodes)[1].gpus[0].uuid);
}

TEST(ClusterTest, SpecErrorsSayTheForm) {
  EXPECT_THAT(SpecError("32x4"), HasSubstr("cluster: '32x4' is not NODESxGPUSxMODEL"));
  EXPECT_THAT(SpecError(""), HasSubstr("cluster: empty"));
  EXPECT_THAT(SpecError("0x4xV100"), HasSubstr("'0x4xV100': the node count must be"));
  EXPECT_THAT(SpecError("ax4xV100"), HasSubstr("the node count must be"));
  EXPECT_THAT(SpecError("2x0xV100"), HasSubstr("GPUs per node must be a whole number from 1"));
  EXPECT_THAT(SpecError("2x65xV100"), HasSubstr("GPUs per node must be"));
  EXPECT_THAT(SpecError("2x4x"), HasSubstr("the GPU model must be"));
  EXPECT_THAT(SpecError("2x4xV 100"), HasSubstr("the GPU model must be"));
  EXPECT_THAT(SpecError("2x4xV100,"), HasSubstr("cluster: '' is not NODESxGPUSxMODEL"));
}

TEST(ClusterTest, ReadsAPhillyStyleMachineList) {
  auto nodes = ParseMachineList(
      "machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm1,8, 24GB\nm2,0, 24GB\n", "m.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 2u);  // m2 has no GPU
  EXPECT_EQ((*nodes)[0].name.value(), "m0");
  EXPECT_EQ((*nodes)[0].gpus.size(), 2u);
  EXPECT_EQ((*nodes)[1].gpus[7].model, "GPU-24GB");
}

TEST(ClusterTest, MachineListErrorsNameTheLine) {
  auto bad = ParseMachineList("machineId,number of GPUs\nm0,2\nm1,two\n", "m.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "m.csv:3: column 2 (number of GPUs): 'two' is not a GPU count from 0 to 64");
  auto twice = ParseMachineList("machineId,number of GPUs\nm0,2\nm0,4\n", "m.csv");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message,
            "m.csv:3: column 1 (machineId): machine id 'm0' repeats; ids must be unique");
  auto missing = ParseMachineList("id,gpus\n", "m.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("m.csv:1: no column 'machineId'"));
}

}  // namespace
}  // namespace gf::sim
