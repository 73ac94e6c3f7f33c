#include "sim/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"

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

TEST(ClusterTest, SpecPartsMayShareTheirGpus) {
  auto nodes = ParseClusterSpec("1x2xA100,1x2xT4:shared,1x1xT4:mps");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0].gpus[1].sharing, SharingMode::kExclusive);
  EXPECT_EQ((*nodes)[1].gpus[1].sharing, SharingMode::kShared);
  EXPECT_EQ((*nodes)[1].gpus[1].model, "T4");
  EXPECT_EQ((*nodes)[1].gpus[1].memory_mib, 15109);  // a known model's memory
  EXPECT_EQ((*nodes)[0].gpus[0].memory_mib, 0);      // unknown: 0
  EXPECT_EQ((*nodes)[2].gpus[0].sharing, SharingMode::kMps);
  EXPECT_THAT(SpecError("1x2xT4:mig"),
              HasSubstr("'1x2xT4:mig': 'mig' is not a sharing mode here; use shared, mps or "
                        "exclusive"));
  EXPECT_THAT(SpecError("1x2xT4:half"), HasSubstr("'half' is not a sharing mode here"));
  ShareEveryGpu(*nodes, SharingMode::kShared);
  EXPECT_EQ((*nodes)[0].gpus[0].sharing, SharingMode::kShared);
}

TEST(ClusterTest, ReadsTheAlibabaNodeList) {
  auto nodes = ParseNodeList(
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "openb-node-0000,64000,262144,2,P100\n"
      "openb-node-0001,96000,786432,8,G2\n"
      "openb-node-0002,96000,786432,0,\n"
      "openb-node-0003,32000,131072,1,V100M32\n",
      "n.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 3u);  // node 2 has no GPU
  EXPECT_EQ((*nodes)[1].name.value(), "openb-node-0001");
  EXPECT_EQ(TotalGpus(*nodes), 11);
  EXPECT_EQ((*nodes)[1].gpus[7].model, "G2");
  EXPECT_EQ((*nodes)[0].gpus[0].memory_mib, 16280);
  EXPECT_EQ((*nodes)[2].gpus[0].memory_mib, 32510);
  auto bad = ParseNodeList("sn,gpu,model\nx,nine,T4\n", "n.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("n.csv:2: column 2 (gpu): 'nine' is not a GPU count"));
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

TEST(ClusterTest, ClusterFileGivesNamesModelsNvlinkAndLabels) {
  auto file = ParseClusterFile(R"(
[[node]]
name = "dgx"
count = 2
gpus = 8
model = "H100-80GB"
nvlink = [[0, 1, 2, 3], [4, 5, 6, 7]]
labels = { rack = "a" }
[[node]]
name = "small"
gpus = 2
model = "L4"
)",
                               "c.toml");
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto nodes = ClusterFromFile(*file);
  ASSERT_TRUE(nodes.ok()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[1].name, NodeId("dgx-1"));
  EXPECT_EQ((*nodes)[1].labels.at("rack"), "a");
  EXPECT_EQ((*nodes)[1].gpus[5].nvlink_peers, (std::vector<int>{4, 6, 7}));
  EXPECT_EQ((*nodes)[2].name, NodeId("small"));
  EXPECT_EQ((*nodes)[2].gpus[1].model, "L4");
  EXPECT_TRUE((*nodes)[2].gpus[1].nvlink_peers.empty());
  EXPECT_EQ(TotalGpus(*nodes), 18);
}

TEST(ClusterTest, ClusterFileErrorsNameTheTableAndTheFix) {
  const auto error = [](const std::string& text) {
    auto file = ParseClusterFile(text, "c.toml");
    if (!file.ok()) {
      return file.error().message;
    }
    auto nodes = ClusterFromFile(*file);
    return nodes.ok() ? std::string("ok") : nodes.error().message;
  };
  EXPECT_EQ(error("[[node]]\nname = \"a\"\ngpus = 4\nmodel = \"A\"\nnvlink = [[0, 4]]\n"),
            "c.toml:1: [[node]] 1: nvlink: GPU 4 is not on the node; its GPUs are 0 to 3");
  EXPECT_EQ(error("[[node]]\nname = \"a\"\ngpus = 4\nmodel = \"A\"\nnvlink = [[0, 1], [1, 2]]\n"),
            "c.toml:1: [[node]] 1: nvlink: GPU 1 is in two groups; put it in one");
  EXPECT_EQ(error("[[node]]\nname = \"a\"\nmodel = \"A\"\n"),
            "c.toml:1: [[node]] 1: name, gpus and model are required");
  EXPECT_EQ(error("[[node]]\nname = \"a\"\ngpus = 1\nmodel = \"A\"\n[[node]]\nname = \"a\"\n"
                  "gpus = 1\nmodel = \"B\"\n"),
            "c.toml:5: [[node]] 2: node a is named twice; names are unique");
  EXPECT_THAT(
      error("[[node]]\nname = \"a\"\ngpu = 1\n"),
      ::testing::StartsWith("c.toml:3: unknown key 'gpu' in [[node]] 1; known keys: count,"));
  EXPECT_THAT(error("[[node]]\nname = \"a\"\ngpus = 65\nmodel = \"A\"\n"),
              ::testing::HasSubstr("[[node]] 1 gpus: 65 is out of range; use 1 to 64"));
  EXPECT_THAT(error("x = 1\n"), ::testing::HasSubstr("unknown key 'x'"));
  EXPECT_THAT(error(""), ::testing::HasSubstr("c.toml: no [[node]] table"));
}

}  // namespace
}  // namespace gf::sim
