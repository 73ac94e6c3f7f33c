#include "gpu/sim/sim_gpu_backend.h"

#include <regex>
#include <set>

#include <gtest/gtest.h>

namespace gf {
namespace {

std::unique_ptr<SimGpuBackend> MakeSim(std::string_view spec,
                                       const Clock& clock,
                                       std::string_view host = "node-a") {
  auto backend = SimGpuBackend::Create(spec, clock, host);
  EXPECT_TRUE(backend.ok()) << backend.error().ToString();
  if (!backend.ok()) {
    return nullptr;
  }
  return std::move(backend).value();
}

TEST(SimGpuSpecTest, ParsesGoodSpecs) {
  auto one = ParseSimGpuSpec("sim:8xH100-80GB");
  ASSERT_TRUE(one.ok()) << one.error().ToString();
  EXPECT_EQ(*one, (std::vector<SimGpuGroup>{{8, "H100-80GB", 81920}}));

  auto two = ParseSimGpuSpec("sim:2xA100-40GB,4xL4-24GB");
  ASSERT_TRUE(two.ok()) << two.error().ToString();
  EXPECT_EQ(*two, (std::vector<SimGpuGroup>{{2, "A100-40GB", 40960}, {4, "L4-24GB", 24576}}));

  auto bare = ParseSimGpuSpec("sim:H100-80GB");
  ASSERT_TRUE(bare.ok()) << bare.error().ToString();
  EXPECT_EQ(*bare, (std::vector<SimGpuGroup>{{1, "H100-80GB", 81920}}));

  auto max = ParseSimGpuSpec("sim:64xH200-141GB");
  ASSERT_TRUE(max.ok());
  EXPECT_EQ((*max)[0].memory_mib, 144384);

  auto dotted = ParseSimGpuSpec("sim:1xRTX_6000.Ada-48GB");
  ASSERT_TRUE(dotted.ok()) << dotted.error().ToString();
  EXPECT_EQ((*dotted)[0].model, "RTX_6000.Ada-48GB");
}

TEST(SimGpuSpecTest, RejectsBadSpecsNamingSpecAndForm) {
  for (const char* spec : {"sim:",
                           "sim:0xH100-80GB",
                           "sim:65xH100-80GB",
                           "sim:8xH100",
                           "sim:8xH100-GB",
                           "sim:8x-80GB",
                           "sim:8x",
                           "sim:8xH100-80GB,",
                           "sim:,8xH100-80GB",
                           "sim:8xH100-0GB",
                           "sim:8xH1 00-80GB",
                           "sim:8xH100-80gb",
                           "sim:40xH100-80GB,40xL4-24GB",
                           "sim:99999999999xH100-80GB",
                           "sim:8xH100-9999999GB",
                           "4xH100-80GB"}) {
    auto groups = ParseSimGpuSpec(spec);
    ASSERT_FALSE(groups.ok()) << spec;
    EXPECT_EQ(groups.error().code, ErrorCode::kInvalidArgument) << spec;
    const std::string& m = groups.error().message;
    EXPECT_NE(m.find("'" + std::string(spec) + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("sim:[COUNTx]MODEL-NNGB"), std::string::npos) << m;
  }
}

TEST(SimGpuBackendTest, DiscoverListsGpusInIndexOrder) {
  ManualClock clock;
  auto sim = MakeSim("sim:2xA100-40GB,1xL4-24GB", clock);
  ASSERT_NE(sim, nullptr);
  auto gpus = sim->Discover();
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const Gpu& gpu = (*gpus)[static_cast<std::size_t>(i)];
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.uuid.value(), SimGpuUuid("node-a", i, gpu.model));
    EXPECT_EQ(gpu.health, GpuHealth::kOk);
    EXPECT_EQ(gpu.health_cause, "");
  }
  EXPECT_EQ((*gpus)[0].model, "A100-40GB");
  EXPECT_EQ((*gpus)[0].memory_mib, 40960);
  EXPECT_EQ((*gpus)[2].model, "L4-24GB");
  EXPECT_EQ((*gpus)[2].memory_mib, 24576);
  EXPECT_EQ(sim->Describe(), "sim:2xA100-40GB,1xL4-24GB");
}

TEST(SimGpuBackendTest, UuidsAreStableAcrossRestartsAndLookReal) {
  ManualClock clock;
  std::vector<Gpu> first = *MakeSim("sim:4xH100-80GB", clock)->Discover();
  std::vector<Gpu> again = *MakeSim("sim:4xH100-80GB", clock)->Discover();
  std::vector<Gpu> other_host = *MakeSim("sim:4xH100-80GB", clock, "node-b")->Discover();
  EXPECT_EQ(first, again);
  std::set<std::string> seen;
  const std::regex form("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(std::regex_match(first[i].uuid.value(), form)) << first[i].uuid.value();
    EXPECT_NE(first[i].uuid, other_host[i].uuid);
    seen.insert(first[i].uuid.value());
    seen.insert(other_host[i].uuid.value());
  }
  EXPECT_EQ(seen.size(), 8u);
  // A fixed value: the hash must never change between builds, or every sim node's GPUs would
  // look new to the controller after an upgrade.
  EXPECT_EQ(SimGpuUuid("node-a", 0, "H100-80GB"), "GPU-293c90ec-d537-4cee-b1e7-7ab82857af01");
  EXPECT_NE(SimGpuUuid("node-a", 0, "H100-80GB"), SimGpuUuid("node-a", 0, "A100-80GB"));
}

TEST(SimGpuBackendTest, IdleSample) {
  ManualClock clock;
  auto sim = MakeSim("sim:H100-80GB", clock);
  ASSERT_NE(sim, nullptr);
  auto sample = sim->Sample(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->uuid.value(), SimGpuUuid("node-a", 0, "H100-80GB"));
  EXPECT_EQ(sample->time, clock.Now());
  EXPECT_EQ(sample->memory_total_mib, 81920);
  EXPECT_EQ(sample->memory_used_mib, 0);
  EXPECT_EQ(sample->util_gpu_pct, 0);
  EXPECT_EQ(sample->util_memory_pct, 0);
  EXPECT_EQ(sample->temperature_c, 30);
  ASSERT_TRUE(sample->power_mw.has_value());
  EXPECT_GT(*sample->power_mw, 10'000);
  EXPECT_LT(*sample->power_mw, 150'000);
  EXPECT_EQ(sample->energy_mj, 0);
  EXPECT_TRUE(sample->processes.empty());
}

TEST(SimGpuBackendTest, EnergyGrowsWithClockTimesPower) {
  ManualClock clock;
  auto sim = MakeSim("sim:2xH100-80GB", clock);
  ASSERT_NE(sim, nullptr);
  std::int64_t idle_mw = *sim->Sample(0)->power_mw;

  clock.Advance(Millis(10'000));
  EXPECT_EQ(sim->Sample(0)->energy_mj, idle_mw * 10);  // mW x s = mJ
  clock.Advance(Millis(1'500));
  EXPECT_EQ(sim->Sample(0)->energy_mj, idle_mw * 11 + idle_mw / 2);

  // Full load from now on: the next 2 s are billed at the full-load draw.
  ASSERT_TRUE(sim->SetUtilization(1, 100).ok());
  std::int64_t before = *sim->Sample(1)->energy_mj;
  GpuSample loaded = *sim->Sample(1);
  EXPECT_EQ(loaded.util_gpu_pct, 100);
  EXPECT_GT(*loaded.power_mw, idle_mw);
  EXPECT_GT(*loaded.temperature_c, 30);
  clock.Advance(Millis(2'000));
  EXPECT_EQ(*sim->Sample(1)->energy_mj, before + *loaded.power_mw * 2);

  // A clock set backwards never makes the counter go down.
  std::int64_t now_mj = *sim->Sample(0)->energy_mj;
  clock.Advance(Millis(-5'000));
  EXPECT_EQ(*sim->Sample(0)->energy_mj, now_mj);
}

TEST(SimGpuBackendTest, LoadControls) {
  ManualClock clock;
  auto sim = MakeSim("sim:2xL4-24GB", clock);
  ASSERT_NE(sim, nullptr);
  ASSERT_TRUE(sim->SetMemoryUsed(0, 1000).ok());
  ASSERT_TRUE(sim->SetProcesses(0, {{123, 1000}}).ok());
  ASSERT_TRUE(sim->SetUtilization(0, 50).ok());
  GpuSample s = *sim->Sample(0);
  EXPECT_EQ(s.memory_used_mib, 1000);
  EXPECT_EQ(s.processes, (std::vector<GpuProcessSample>{{123, 1000}}));
  EXPECT_EQ(s.util_gpu_pct, 50);

  EXPECT_EQ(sim->SetUtilization(0, 101).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(sim->SetUtilization(0, -1).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(sim->SetMemoryUsed(0, 24577).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(sim->SetUtilization(2, 10).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(sim->Sample(2).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(sim->Sample(-1).error().code, ErrorCode::kNotFound);
}

TEST(SimGpuBackendTest, LostGpuFailsSample) {
  ManualClock clock;
  auto sim = MakeSim("sim:2xL4-24GB", clock);
  ASSERT_NE(sim, nullptr);
  ASSERT_TRUE(sim->SetLost(1, true).ok());
  auto sample = sim->Sample(1);
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(sample.error().message.find("GPU is lost"), std::string::npos);
  EXPECT_EQ((*sim->Discover())[1].health, GpuHealth::kFailed);
  ASSERT_TRUE(sim->SetLost(1, false).ok());
  EXPECT_TRUE(sim->Sample(1).ok());
}

}  // namespace
}  // namespace gf
