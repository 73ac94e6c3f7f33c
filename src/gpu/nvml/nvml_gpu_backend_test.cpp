// Runs NvmlGpuBackend against the stand-in libnvidia-ml.so.1 from tests/fakenvml, loaded by
// path through the same dlopen code that loads the real driver library.
#include "gpu/nvml/nvml_gpu_backend.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>

#include "gpu/gpu_backend.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
// setenv/unsetenv below run before the library is loaded, on the test's only thread.
// NOLINTBEGIN(concurrency-mt-unsafe)
using nlohmann::json;

constexpr const char* kFakeLibrary = GF_FAKENVML_PATH;

json H100() {
  return {{"name", "NVIDIA H100 80GB HBM3"},
          {"uuid", "GPU-11111111-2222-3333-4444-555555555555"},
          {"memory_total_mib", 81559},
          {"memory_used_mib", 1234},
          {"util_gpu", 87},
          {"util_memory", 41},
          {"temperature_c", 64},
          {"power_mw", 512345},
          {"energy_mj", 987654321},
          {"processes",
           json::array({{{"pid", 4242}, {"used_memory_mib", 1000}},
                        {{"pid", 4343}, {"used_memory_mib", 200}}})}};
}

json L4() {
  return {{"name", "NVIDIA L4"},
          {"uuid", "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"},
          {"memory_total_mib", 23034},
          {"memory_used_mib", 0},
          {"util_gpu", 0},
          {"util_memory", 0},
          {"temperature_c", 31},
          {"power_mw", 16000},
          {"energy_mj", 5000}};
}

class NvmlGpuBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gf-nvml-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    scenario_path_ = dir_ / "scenario.json";
    ASSERT_EQ(setenv("GF_FAKENVML_SCENARIO", scenario_path_.c_str(), 1), 0);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Written to a temporary file and renamed into place: the fake sees either the old or the new
  // scenario, and the new inode tells it the file changed even within one mtime tick.
  void WriteScenario(const json& scenario) {
    fs::path tmp = dir_ / "scenario.json.tmp";
    {
      std::ofstream out(tmp);
      out << scenario.dump(2);
    }
    fs::rename(tmp, scenario_path_);
  }

  json Scenario() const {
    return {{"driver_version", "550.54.15"}, {"devices", json::array({H100(), L4()})}};
  }

  std::unique_ptr<NvmlGpuBackend> Open() {
    auto backend = NvmlGpuBackend::Open(kFakeLibrary, clock_);
    EXPECT_TRUE(backend.ok()) << backend.error().ToString();
    if (!backend.ok()) {
      return nullptr;
    }
    return std::move(backend).value();
  }

  ManualClock clock_;
  fs::path dir_;
  fs::path scenario_path_;
};

TEST_F(NvmlGpuBackendTest, DescribeNamesLibraryAndDriver) {
  WriteScenario(Scenario());
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Describe(), "nvml:" + std::string(kFakeLibrary) + " (driver 550.54.15)");
}

TEST_F(NvmlGpuBackendTest, DiscoverReportsEveryField) {
  WriteScenario(Scenario());
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0],
            (Gpu{0,
                 GpuUuid("GPU-11111111-2222-3333-4444-555555555555"),
                 "H100-80GB",
                 81559,
                 GpuHealth::kOk,
                 ""}));
  EXPECT_EQ((*gpus)[1],
            (Gpu{1,
                 GpuUuid("GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"),
                 "L4-24GB",
                 23034,
                 GpuHealth::kOk,
                 ""}));
}

TEST_F(NvmlGpuBackendTest, SampleReportsEveryField) {
  WriteScenario(Scenario());
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  GpuSample want;
  want.uuid = GpuUuid("GPU-11111111-2222-3333-4444-555555555555");
  want.time = clock_.Now();
  want.memory_total_mib = 81559;
  want.memory_used_mib = 1234;
  want.util_gpu_pct = 87;
  want.util_memory_pct = 41;
  want.temperature_c = 64;
  want.power_mw = 512345;
  want.energy_mj = 987654321;
  want.processes = {{4242, 1000}, {4343, 200}};
  EXPECT_EQ(*sample, want);
}

TEST_F(NvmlGpuBackendTest, SampleTimeComesFromTheClock) {
  WriteScenario(Scenario());
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  clock_.Advance(Millis(2500));
  auto sample = backend->Sample(1);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->time, clock_.Now());
  EXPECT_TRUE(sample->processes.empty());
}

TEST_F(NvmlGpuBackendTest, NotSupportedCountersAreNullopt) {
  json scenario = Scenario();
  scenario["devices"][1]["unsupported"] = {
      "power", "energy", "temperature", "utilization", "processes"};
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(1);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  EXPECT_EQ(sample->memory_total_mib, 23034);
  EXPECT_EQ(sample->util_gpu_pct, std::nullopt);
  EXPECT_EQ(sample->util_memory_pct, std::nullopt);
  EXPECT_EQ(sample->temperature_c, std::nullopt);
  EXPECT_EQ(sample->power_mw, std::nullopt);
  EXPECT_EQ(sample->energy_mj, std::nullopt);
  EXPECT_TRUE(sample->processes.empty());
}

TEST_F(NvmlGpuBackendTest, ScenarioChangeIsSeenOnNextSample) {
  WriteScenario(Scenario());
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto before = backend->Sample(1);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->util_gpu_pct, 0);

  json scenario = Scenario();
  scenario["devices"][1]["util_gpu"] = 99;
  scenario["devices"][1]["energy_mj"] = 6000;
  scenario["devices"][1]["processes"] = json::array({{{"pid", 77}, {"used_memory_mib", 300}}});
  WriteScenario(scenario);
  auto after = backend->Sample(1);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->util_gpu_pct, 99);
  EXPECT_EQ(after->energy_mj, 6000);
  EXPECT_EQ(after->processes, (std::vector<GpuProcessSample>{{77, 300}}));
}

TEST_F(NvmlGpuBackendTest, ManyProcessesGrowTheBuffer) {
  json scenario = Scenario();
  json processes = json::array();
  for (int i = 0; i < 100; ++i) {
    processes.push_back({{"pid", 1000 + i}, {"used_memory_mib", i}});
  }
  scenario["devices"][0]["processes"] = processes;
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  ASSERT_EQ(sample->processes.size(), 100u);
  EXPECT_EQ(sample->processes[99], (GpuProcessSample{1099, 99}));
}

TEST_F(NvmlGpuBackendTest, ProcessMemoryNotAvailableIsZero) {
  json scenario = Scenario();
  scenario["devices"][0]["processes"] = json::array({{{"pid", 9}}});
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->processes, (std::vector<GpuProcessSample>{{9, 0}}));
}

TEST_F(NvmlGpuBackendTest, LostGpuFailsSampleAndShowsFailedInDiscover) {
  json scenario = Scenario();
  scenario["devices"][1]["lost"] = true;
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);

  auto sample = backend->Sample(1);
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(sample.error().message.find("GPU 1 (GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee)"),
            std::string::npos)
      << sample.error().message;
  EXPECT_NE(sample.error().message.find("GPU is lost"), std::string::npos);
  EXPECT_TRUE(backend->Sample(0).ok());

  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].health, GpuHealth::kOk);
  EXPECT_EQ((*gpus)[1].health, GpuHealth::kFailed);
  EXPECT_EQ((*gpus)[1].health_cause, "NVML: GPU is lost");
  EXPECT_EQ((*gpus)[1].uuid.value(), "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
}

TEST_F(NvmlGpuBackendTest, UnknownIndexIsNotFound) {
  WriteScenario(Scenario());
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  for (int index : {-1, 2, 1000}) {
    auto sample = backend->Sample(index);
    ASSERT_FALSE(sample.ok()) << index;
    EXPECT_EQ(sample.error().code, ErrorCode::kNotFound) << index;
  }
}

TEST_F(NvmlGpuBackendTest, GpuRemovedFromScenarioIsNotFound) {
  WriteScenario(Scenario());
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  json scenario = Scenario();
  scenario["devices"].erase(1);
  WriteScenario(scenario);
  auto sample = backend->Sample(1);
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.error().code, ErrorCode::kNotFound);
  EXPECT_NE(sample.error().message.find("NVML sees 1"), std::string::npos)
      << sample.error().message;
}

TEST_F(NvmlGpuBackendTest, InitErrorIsUnavailableWithHint) {
  json scenario = Scenario();
  scenario["init_error"] = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  WriteScenario(scenario);
  auto backend = MakeGpuBackend("nvml:" + std::string(kFakeLibrary), clock_);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  const std::string& m = backend.error().message;
  EXPECT_NE(m.find("nvmlInit_v2 failed: Driver Not Loaded"), std::string::npos) << m;
  EXPECT_NE(m.find("to try gpufleet without GPUs, use --gpus sim:4xH100-80GB"), std::string::npos)
      << m;
}

TEST_F(NvmlGpuBackendTest, MissingScenarioVariableFailsInitClearly) {
  ASSERT_EQ(unsetenv("GF_FAKENVML_SCENARIO"), 0);
  auto backend = NvmlGpuBackend::Open(kFakeLibrary, clock_);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(backend.error().message.find("GF_FAKENVML_SCENARIO is not set"), std::string::npos)
      << backend.error().message;
}

TEST_F(NvmlGpuBackendTest, BrokenScenarioFailsInitClearly) {
  {
    std::ofstream out(scenario_path_);
    out << "{ \"devices\": [ { \"name\": ";
  }
  auto backend = NvmlGpuBackend::Open(kFakeLibrary, clock_);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(backend.error().message.find("broken scenario"), std::string::npos)
      << backend.error().message;
}

TEST_F(NvmlGpuBackendTest, BrokenScenarioAfterInitFailsSample) {
  WriteScenario(Scenario());
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  json scenario = Scenario();
  scenario["devices"][0]["unsupported"] = {"fan"};
  WriteScenario(scenario);
  auto sample = backend->Sample(0);
  ASSERT_FALSE(sample.ok());
  EXPECT_NE(sample.error().message.find("unknown counter 'fan'"), std::string::npos)
      << sample.error().message;
  WriteScenario(Scenario());
  EXPECT_TRUE(backend->Sample(0).ok());
}

TEST_F(NvmlGpuBackendTest, TwoBackendsShareOneLibrary) {
  WriteScenario(Scenario());
  auto first = Open();
  auto second = Open();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  first.reset();  // one nvmlShutdown must not end the other's session
  EXPECT_TRUE(second->Sample(0).ok());
}

TEST_F(NvmlGpuBackendTest, ExampleScenariosLoad) {
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(GF_FAKENVML_SCENARIOS_DIR)) {
    if (entry.path().extension() != ".json") {
      continue;
    }
    SCOPED_TRACE(entry.path().string());
    ASSERT_EQ(setenv("GF_FAKENVML_SCENARIO", entry.path().c_str(), 1), 0);
    auto backend = Open();
    ASSERT_NE(backend, nullptr);
    auto gpus = backend->Discover();
    ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
    EXPECT_FALSE(gpus->empty());
    ++loaded;
  }
  EXPECT_GE(loaded, 2);
}

// NOLINTEND(concurrency-mt-unsafe)

}  // namespace
}  // namespace gf
