#include "scheduler/placement/topology.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

// An 8-GPU node as the sim backend makes it: two NVLink quads (0-3, 4-7), a PCIe switch per
// pair, NUMA 0 for 0-3 and 1 for 4-7.
std::vector<TopoGpu> TwoQuads() {
  std::vector<TopoGpu> gpus;
  for (int i = 0; i < 8; ++i) {
    const int quad = i / 4;
    gpus.push_back(TopoGpu{.slot = i,
                           .numa = quad,
                           .pcie_switch = i / 2 * 2,
                           .nvlink = (std::uint64_t{0xF} << (4 * quad)) & ~(std::uint64_t{1} << i),
                           .util_pct = 0,
                           .memory_used_mib = 0});
  }
  return gpus;
}

std::vector<TopoGpu> Only(const std::vector<TopoGpu>& gpus, const std::vector<int>& slots) {
  std::vector<TopoGpu> some;
  for (const int s : slots) {
    some.push_back(gpus[static_cast<std::size_t>(s)]);
  }
  return some;
}

std::vector<int> SlotsOf(const std::vector<TopoGpu>& gpus, const std::vector<int>& chosen) {
  std::vector<int> slots;
  for (const int c : chosen) {
    slots.push_back(gpus[static_cast<std::size_t>(c)].slot);
  }
  return slots;
}

TEST(TopologyTest, LinkLevelsFromNvlinkToAcrossSockets) {
  const std::vector<TopoGpu> gpus = TwoQuads();
  EXPECT_EQ(LinkLevel(gpus[0], gpus[3]), 0);  // NVLink
  EXPECT_EQ(LinkLevel(gpus[0], gpus[4]), 3);  // other quad, other socket
  std::vector<TopoGpu> pcie = gpus;
  for (TopoGpu& gpu : pcie) {
    gpu.nvlink = 0;
  }
  EXPECT_EQ(LinkLevel(pcie[0], pcie[1]), 1);               // one switch
  EXPECT_EQ(LinkLevel(pcie[0], pcie[2]), 2);               // one NUMA node
  EXPECT_EQ(LinkLevel(TopoGpu{}, TopoGpu{.slot = 1}), 3);  // unknown
}

TEST(TopologyTest, TwoGpusGoOnOneNvlinkQuadNotAcrossSockets) {
  // Free: 2, 3 (quad 0) and 4, 5, 6 (quad 1) — by index the job would get 2 and 3 anyway, so
  // make the first two free GPUs straddle the quads.
  const std::vector<TopoGpu> free = Only(TwoQuads(), {3, 4, 5, 6});
  EXPECT_EQ(SlotsOf(free, ChooseConnectedGpus(free, 2)), (std::vector<int>{4, 5}));
}

TEST(TopologyTest, TakesFromTheFragmentedQuadToKeepAWholeQuadFree) {
  // Quad 0 has two GPUs free, quad 1 all four: a 2-GPU job takes quad 0's pair, leaving a
  // whole quad for a 4-GPU job.
  const std::vector<TopoGpu> free = Only(TwoQuads(), {4, 5, 6, 7, 0, 1});
  EXPECT_EQ(SlotsOf(free, ChooseConnectedGpus(free, 2)), (std::vector<int>{0, 1}));
  // A 1-GPU job too: from the half-used quad.
  EXPECT_EQ(SlotsOf(free, ChooseConnectedGpus(free, 1)), (std::vector<int>{0}));
}

TEST(TopologyTest, PrefersOneSwitchThenOneNumaNodeWithoutNvlink) {
  std::vector<TopoGpu> gpus = TwoQuads();
  for (TopoGpu& gpu : gpus) {
    gpu.nvlink = 0;
  }
  const std::vector<TopoGpu> free = Only(gpus, {1, 2, 3, 4});  // 2,3 share a switch
  EXPECT_EQ(SlotsOf(free, ChooseConnectedGpus(free, 2)), (std::vector<int>{2, 3}));
  const std::vector<TopoGpu> numa = Only(gpus, {1, 3, 4});  // 1,3: NUMA 0, different switches
  EXPECT_EQ(SlotsOf(numa, ChooseConnectedGpus(numa, 2)), (std::vector<int>{1, 3}));
}

TEST(TopologyTest, SpreadsOverEquallyGoodGpusByRecentLoad) {
  // No topology: every GPU equally good; the idle ones win over a busy first GPU.
  std::vector<TopoGpu> gpus(4);
  for (int i = 0; i < 4; ++i) {
    gpus[static_cast<std::size_t>(i)].slot = i;
  }
  gpus[0].util_pct = 90;  // a process gpufleet does not manage
  gpus[1].memory_used_mib = 4000;
  EXPECT_EQ(ChooseConnectedGpus(gpus, 1), (std::vector<int>{2}));
  EXPECT_EQ(ChooseConnectedGpus(gpus, 2), (std::vector<int>{2, 3}));
  EXPECT_EQ(ChooseConnectedGpus(gpus, 3), (std::vector<int>{1, 2, 3}));
}

TEST(TopologyTest, TopologyComesBeforeLoad) {
  std::vector<TopoGpu> free = Only(TwoQuads(), {2, 3, 4, 5});
  free[0].util_pct = 50;  // slot 2
  free[1].util_pct = 50;  // slot 3
  // Pairs {2,3} and {4,5} are both NVLink; the idle pair wins. A straddling pair never does.
  EXPECT_EQ(SlotsOf(free, ChooseConnectedGpus(free, 2)), (std::vector<int>{4, 5}));
}

TEST(TopologyTest, LargeNodesUseTheGreedyChoiceAndStillKeepGroupsTogether) {
  // 32 GPUs in eight NVLink quads; the first quad has one GPU busy elsewhere (not free). C(31, 8)
  // is far beyond the exhaustive limit.
  std::vector<TopoGpu> gpus;
  for (int i = 1; i < 32; ++i) {
    const int quad = i / 4;
    gpus.push_back(TopoGpu{.slot = i,
                           .numa = quad / 4,
                           .pcie_switch = -1,
                           .nvlink = (std::uint64_t{0xF} << (4 * quad)) & ~(std::uint64_t{1} << i),
                           .util_pct = 0,
                           .memory_used_mib = 0});
  }
  const std::vector<int> slots = SlotsOf(gpus, ChooseConnectedGpus(gpus, 4));
  EXPECT_EQ(slots, (std::vector<int>{4, 5, 6, 7}));  // a whole quad, not 1..4 across two
}

TEST(TopologyTest, AllOrNothingNeedsNoChoice) {
  const std::vector<TopoGpu> gpus = TwoQuads();
  EXPECT_EQ(ChooseConnectedGpus(gpus, 0), std::vector<int>{});
  EXPECT_EQ(ChooseConnectedGpus(gpus, 8).size(), 8U);
}

}  // namespace
}  // namespace gf
