// Runs NvmlGpuBackend against the stand-in libnvidia-ml.so.1 from tests/fakenvml, loaded by
// path through the same dlopen code that loads the real driver library.
#include "gpu/nvml/nvml_gpu_backend.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>

#include "gpu/gpu_backend.h"
#include "gpu/nvml/nvml_topology.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
// setenv/unsetenv below run before the library is loaded, on the test's only thread.
// NOLINTBEGIN(concurrency-mt-unsafe)
using nlohmann::json;

constexpr const char* kFakeLibrary = GF_FAKENVML_PATH;
// The same fake without the optional entry points: a driver too old for them.
constexpr const char* kLegacyFakeLibrary = GF_FAKENVML_LEGACY_PATH;

json H100() {
  return {{"name", "NVIDIA H100 80GB HBM3"},
          {"uuid", "GPU-11111111-2222-3333-4444-555555555555"},
          {"memory_total_mib", 81559},
          {"memory_used_mib", 1234},
          {"util_gpu", 87},
          {"util_memory", 41},
          {"temperature_c", 64},
          {"memory_temperature_c", 71},
          {"power_mw", 512345},
          {"power_limit_mw", 700000},
          {"energy_mj", 987654321},
          {"sm_clock_mhz", 1980},
          {"mem_clock_mhz", 2619},
          {"pcie_tx_kbps", 12345},
          {"pcie_rx_kbps", 67890},
          {"pcie_replay_count", 3},
          {"ecc",
           {{"volatile_corrected", 5},
            {"volatile_uncorrected", 1},
            {"aggregate_corrected", 50},
            {"aggregate_uncorrected", 2}}},
          {"remapped_rows",
           {{"correctable", 4}, {"uncorrectable", 1}, {"pending", true}, {"failure", false}}},
          {"throttle_reasons", 0x24},
          {"fan_speed_pct", 55},
          {"pstate", 2},
          {"processes",
           json::array({{{"pid", 4242}, {"used_memory_mib", 1000}},
                        {{"pid", 4343}, {"used_memory_mib", 200}}})}};
}

// A process as the backend reports it (attribution fields stay empty: the monitor fills them).
GpuProcessSample Proc(std::uint32_t pid,
                      std::optional<std::int64_t> mib,
                      std::optional<int> sm_util = std::nullopt,
                      std::optional<int> mem_util = std::nullopt) {
  GpuProcessSample p;
  p.pid = pid;
  p.used_memory_mib = mib;
  p.sm_util_pct = sm_util;
  p.mem_util_pct = mem_util;
  return p;
}

// The XIDs of a sample, without their time (the time is the clock's at drain).
std::vector<int> Xids(const GpuSample& sample) {
  std::vector<int> out;
  for (const XidEvent& x : sample.xids) {
    out.push_back(x.xid);
  }
  return out;
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

  std::unique_ptr<NvmlGpuBackend> Open(const char* library = kFakeLibrary) {
    auto backend = NvmlGpuBackend::Open(library, clock_);
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
  want.memory_free_mib = 81559 - 1234;
  want.util_gpu_pct = 87;
  want.util_memory_pct = 41;
  want.temperature_c = 64;
  want.memory_temperature_c = 71;
  want.power_mw = 512345;
  want.power_limit_mw = 700000;
  want.energy_mj = 987654321;
  want.sm_clock_mhz = 1980;
  want.mem_clock_mhz = 2619;
  want.pcie_tx_kbps = 12345;
  want.pcie_rx_kbps = 67890;
  want.pcie_replay_count = 3;
  want.ecc = EccCounters{5, 1, 50, 2};
  want.remapped_rows = RemappedRows{4, 1, true, false};
  want.throttle_reasons = 0x24;
  want.fan_speed_pct = 55;
  want.pstate = 2;
  want.processes = {Proc(4242, 1000), Proc(4343, 200)};
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

// Every optional counter of a sample, nullopt or not, by name; for the "absent" tests.
std::vector<std::pair<std::string, bool>> PresentCounters(const GpuSample& s) {
  return {{"util_gpu_pct", s.util_gpu_pct.has_value()},
          {"util_memory_pct", s.util_memory_pct.has_value()},
          {"temperature_c", s.temperature_c.has_value()},
          {"memory_temperature_c", s.memory_temperature_c.has_value()},
          {"power_mw", s.power_mw.has_value()},
          {"power_limit_mw", s.power_limit_mw.has_value()},
          {"energy_mj", s.energy_mj.has_value()},
          {"sm_clock_mhz", s.sm_clock_mhz.has_value()},
          {"mem_clock_mhz", s.mem_clock_mhz.has_value()},
          {"pcie_tx_kbps", s.pcie_tx_kbps.has_value()},
          {"pcie_rx_kbps", s.pcie_rx_kbps.has_value()},
          {"pcie_replay_count", s.pcie_replay_count.has_value()},
          {"ecc.volatile_corrected", s.ecc.volatile_corrected.has_value()},
          {"ecc.volatile_uncorrected", s.ecc.volatile_uncorrected.has_value()},
          {"ecc.aggregate_corrected", s.ecc.aggregate_corrected.has_value()},
          {"ecc.aggregate_uncorrected", s.ecc.aggregate_uncorrected.has_value()},
          {"remapped_rows", s.remapped_rows.has_value()},
          {"throttle_reasons", s.throttle_reasons.has_value()},
          {"fan_speed_pct", s.fan_speed_pct.has_value()},
          {"pstate", s.pstate.has_value()}};
}

const json kEveryOptionalCounter = {"utilization",
                                    "temperature",
                                    "memory_temperature",
                                    "power",
                                    "power_limit",
                                    "energy",
                                    "clocks",
                                    "pcie_throughput",
                                    "pcie_replay",
                                    "ecc",
                                    "remapped_rows",
                                    "throttle_reasons",
                                    "fan",
                                    "pstate",
                                    "processes",
                                    "process_utilization",
                                    "xid_events"};

TEST_F(NvmlGpuBackendTest, NotSupportedCountersAreNullopt) {
  json scenario = Scenario();
  scenario["devices"][0]["unsupported"] = kEveryOptionalCounter;
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  EXPECT_EQ(sample->memory_total_mib, 81559);
  for (const auto& [name, present] : PresentCounters(*sample)) {
    EXPECT_FALSE(present) << name;
  }
  EXPECT_TRUE(sample->processes.empty());
  EXPECT_FALSE(sample->lost);
}

TEST_F(NvmlGpuBackendTest, NoPermissionCountersAreNullopt) {
  json scenario = Scenario();
  scenario["devices"][0]["no_permission"] = {"ecc", "power", "memory_temperature"};
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  EXPECT_EQ(sample->ecc, EccCounters{});
  EXPECT_EQ(sample->power_mw, std::nullopt);
  EXPECT_EQ(sample->memory_temperature_c, std::nullopt);
  EXPECT_EQ(sample->temperature_c, 64);  // the others still read
  EXPECT_EQ(sample->power_limit_mw, 700000);
}

TEST_F(NvmlGpuBackendTest, MemoryInfoIsRequired) {
  json scenario = Scenario();
  scenario["devices"][0]["unsupported"] = {"memory"};
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(0);
  ASSERT_FALSE(sample.ok());
  EXPECT_NE(sample.error().message.find("nvmlDeviceGetMemoryInfo failed: Not Supported"),
            std::string::npos)
      << sample.error().message;
}

TEST_F(NvmlGpuBackendTest, OldDriverWithoutOptionalEntryPointsStillSamples) {
  json scenario = Scenario();
  scenario["devices"][0]["xid_events"] = json::array({{{"xid", 79}, {"seq", 1}}});
  scenario["devices"][0]["processes"] =
      json::array({{{"pid", 4242}, {"used_memory_mib", 1000}, {"sm_util", 90}}});
  WriteScenario(scenario);
  auto backend = Open(kLegacyFakeLibrary);
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  // What the old driver has still reads, the rest is absent, nothing fails.
  EXPECT_EQ(sample->util_gpu_pct, 87);
  EXPECT_EQ(sample->power_mw, 512345);
  EXPECT_EQ(sample->energy_mj, 987654321);
  EXPECT_EQ(sample->throttle_reasons, 0x24u);  // under its pre-R535 name
  for (const auto& [name, present] : PresentCounters(*sample)) {
    bool essential = name == "util_gpu_pct" || name == "util_memory_pct" ||
                     name == "temperature_c" || name == "power_mw" || name == "energy_mj" ||
                     name == "throttle_reasons";
    EXPECT_EQ(present, essential) << name;
  }
  EXPECT_TRUE(sample->xids.empty());
  EXPECT_EQ(sample->processes, (std::vector<GpuProcessSample>{Proc(4242, 1000)}));
}

// An H100 whose limit may move: the fake keeps set limits per UUID for the whole process, so
// each power test names its own card.
json PowerManagedH100(const std::string& uuid) {
  json gpu = H100();
  gpu["uuid"] = uuid;
  gpu["power_limit_min_mw"] = 100000;
  gpu["power_limit_max_mw"] = 700000;
  return gpu;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(NvmlGpuBackendTest, PowerLimitIsReadSetAndEnforced) {
  const std::string uuid = "GPU-50000000-0000-4000-8000-000000000001";
  WriteScenario({{"devices", json::array({PowerManagedH100(uuid)})}});
  const fs::path log = dir_ / "power.log";
  ASSERT_EQ(setenv("GF_FAKENVML_POWER_LOG", log.c_str(), 1), 0);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto limits = backend->PowerLimits(0);
  ASSERT_TRUE(limits.ok()) << limits.error().ToString();
  EXPECT_EQ(limits->current_mw, 700000);
  EXPECT_EQ(limits->default_mw, 700000);
  EXPECT_EQ(limits->min_mw, 100000);
  EXPECT_EQ(limits->max_mw, 700000);

  ASSERT_TRUE(backend->SetPowerLimit(0, 150000).ok());
  ASSERT_TRUE(backend->SetPowerLimit(0, 700000).ok());
  ASSERT_TRUE(backend->SetPowerLimit(0, 150000).ok());
  EXPECT_EQ(backend->PowerLimits(0)->current_mw, 150000);
  EXPECT_EQ(backend->PowerLimits(0)->default_mw, 700000);
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  EXPECT_EQ(sample->power_limit_mw, 150000);  // the enforced limit
  EXPECT_EQ(sample->power_mw, 150000);        // the draw (512 W in the scenario) held down
  EXPECT_EQ(ReadFile(log), uuid + " 150000\n" + uuid + " 700000\n" + uuid + " 150000\n");
  ASSERT_EQ(unsetenv("GF_FAKENVML_POWER_LOG"), 0);
}

TEST_F(NvmlGpuBackendTest, PowerLimitOutsideTheConstraintsNamesTheRange) {
  WriteScenario({{"devices", json::array({PowerManagedH100("GPU-50000000-0000-4000-8000-2")})}});
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  Status s = backend->SetPowerLimit(0, 50000);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().message,
            "GPU 0: power limit 50000 mW is outside the GPU's range 100000..700000 mW");
  EXPECT_EQ(backend->SetPowerLimit(3, 150000).error().code, ErrorCode::kNotFound);
}

TEST_F(NvmlGpuBackendTest, PowerLimitRefusalsKeepNvmlsMeaning) {
  json no_root = PowerManagedH100("GPU-50000000-0000-4000-8000-3");
  no_root["no_permission"] = {"power_limit_set"};
  json no_power = L4();
  no_power["unsupported"] = {"power_limit"};
  WriteScenario({{"devices", json::array({no_root, no_power})}});
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  EXPECT_TRUE(backend->PowerLimits(0).ok());  // reading needs no root
  Status denied = backend->SetPowerLimit(0, 150000);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(denied.error().message.find("needs root"), std::string::npos) << denied.error().message;
  EXPECT_EQ(backend->PowerLimits(0)->current_mw, 700000);

  auto unsupported = backend->PowerLimits(1);
  ASSERT_FALSE(unsupported.ok());
  EXPECT_EQ(unsupported.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(unsupported.error().message.find("no power management"), std::string::npos)
      << unsupported.error().message;
  EXPECT_EQ(backend->SetPowerLimit(1, 16000).error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(NvmlGpuBackendTest, OldDriverWithoutPowerManagementSaysUnsupported) {
  WriteScenario({{"devices", json::array({PowerManagedH100("GPU-50000000-0000-4000-8000-4")})}});
  auto backend = Open(kLegacyFakeLibrary);
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->PowerLimits(0).error().code, ErrorCode::kFailedPrecondition);
  Status s = backend->SetPowerLimit(0, 150000);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(s.error().message.find("lacks nvmlDeviceSetPowerManagementLimit"), std::string::npos)
      << s.error().message;
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
  EXPECT_EQ(after->processes, (std::vector<GpuProcessSample>{Proc(77, 300)}));
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
  EXPECT_EQ(sample->processes[99], Proc(1099, 99));
}

TEST_F(NvmlGpuBackendTest, ProcessMemoryNotAvailableIsNullopt) {
  json scenario = Scenario();
  scenario["devices"][0]["processes"] = json::array({{{"pid", 9}}});
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->processes, (std::vector<GpuProcessSample>{Proc(9, std::nullopt)}));
}

TEST_F(NvmlGpuBackendTest, LostGpuGivesLostSampleAndShowsFailedInDiscover) {
  json scenario = Scenario();
  scenario["devices"][1]["lost"] = true;
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  clock_.Advance(Millis(1500));

  auto sample = backend->Sample(1);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  GpuSample want;
  want.uuid = GpuUuid("GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
  want.time = clock_.Now();
  want.lost = true;
  EXPECT_EQ(*sample, want);  // nothing else: no counter of a lost GPU is trusted
  auto healthy = backend->Sample(0);
  ASSERT_TRUE(healthy.ok());
  EXPECT_FALSE(healthy->lost);

  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].health, GpuHealth::kOk);
  EXPECT_EQ((*gpus)[1].health, GpuHealth::kFailed);
  EXPECT_EQ((*gpus)[1].health_cause, "NVML: GPU is lost");
  EXPECT_EQ((*gpus)[1].uuid.value(), "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
}

TEST_F(NvmlGpuBackendTest, GpuLostAfterASampleKeepsItsUuidEvenWhenNvmlForgetsIt) {
  WriteScenario(Scenario());
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  ASSERT_TRUE(backend->Sample(1).ok());
  json scenario = Scenario();
  scenario["devices"][1]["identity_lost"] = true;  // even nvmlDeviceGetUUID answers GPU_IS_LOST
  WriteScenario(scenario);
  auto sample = backend->Sample(1);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  EXPECT_TRUE(sample->lost);
  EXPECT_EQ(sample->uuid.value(), "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
}

TEST_F(NvmlGpuBackendTest, LostGpuNeverIdentifiedIsAnError) {
  json scenario = Scenario();
  scenario["devices"][1]["identity_lost"] = true;
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(1);
  ASSERT_FALSE(sample.ok());
  EXPECT_EQ(sample.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(sample.error().message.find("nvmlDeviceGetUUID failed: GPU is lost"), std::string::npos)
      << sample.error().message;
}

TEST_F(NvmlGpuBackendTest, XidIsDeliveredOnceToItsOwnGpu) {
  json scenario = Scenario();
  scenario["devices"][1]["xid_events"] = json::array({{{"xid", 79}, {"seq", 1}}});
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  clock_.Advance(Millis(700));

  auto other = backend->Sample(0);  // drains the event set, keeps GPU 1's XID for GPU 1
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->xids.empty());
  auto first = backend->Sample(1);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(first->xids, (std::vector<XidEvent>{XidEvent{79, clock_.Now()}}));
  auto second = backend->Sample(1);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->xids.empty());

  // Rewriting the file does not replay seq 1; a new seq is a new event.
  scenario["devices"][1]["util_gpu"] = 5;
  WriteScenario(scenario);
  EXPECT_TRUE(backend->Sample(1)->xids.empty());
  scenario["devices"][1]["xid_events"].push_back({{"xid", 48}, {"seq", 2}});
  scenario["devices"][1]["xid_events"].push_back({{"xid", 63}, {"seq", 3}});
  WriteScenario(scenario);
  auto third = backend->Sample(1);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(Xids(*third), (std::vector<int>{48, 63}));
}

TEST_F(NvmlGpuBackendTest, XidBeforeTheLossComesWithTheLostSample) {
  WriteScenario(Scenario());
  auto backend = Open();  // registers GPU 1 for XIDs while it is healthy
  ASSERT_NE(backend, nullptr);
  json scenario = Scenario();
  scenario["devices"][1]["xid_events"] = json::array({{{"xid", 79}, {"seq", 1}}});
  scenario["devices"][1]["lost"] = true;
  WriteScenario(scenario);
  auto sample = backend->Sample(1);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  EXPECT_TRUE(sample->lost);
  EXPECT_EQ(Xids(*sample), (std::vector<int>{79}));
}

TEST_F(NvmlGpuBackendTest, GpuWithoutXidEventsReportsNone) {
  json scenario = Scenario();
  scenario["devices"][1]["unsupported"] = {"xid_events"};  // registration fails for GPU 1
  scenario["devices"][1]["xid_events"] = json::array({{{"xid", 13}, {"seq", 1}}});
  scenario["devices"][0]["xid_events"] = json::array({{{"xid", 31}, {"seq", 1}}});
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  EXPECT_TRUE(backend->Sample(1)->xids.empty());
  EXPECT_EQ(Xids(*backend->Sample(0)), (std::vector<int>{31}));
}

TEST_F(NvmlGpuBackendTest, PerProcessUtilizationIsTheNewestPeriod) {
  json scenario = Scenario();
  scenario["devices"][0]["processes"] =
      json::array({{{"pid", 4242}, {"used_memory_mib", 1000}, {"sm_util", 10}, {"mem_util", 3}},
                   {{"pid", 4343}, {"used_memory_mib", 200}}});
  WriteScenario(scenario);
  auto first = Open();
  ASSERT_NE(first, nullptr);
  auto before = first->Sample(0);
  ASSERT_TRUE(before.ok()) << before.error().ToString();
  EXPECT_EQ(before->processes,
            (std::vector<GpuProcessSample>{Proc(4242, 1000, 10, 3), Proc(4343, 200)}));

  // The driver now holds two periods for pid 4242; a fresh reader (time stamp 0) gets both and
  // must report the newer one.
  scenario["devices"][0]["processes"][0]["sm_util"] = 50;
  WriteScenario(scenario);
  auto second = Open();
  ASSERT_NE(second, nullptr);
  auto fresh = second->Sample(0);
  ASSERT_TRUE(fresh.ok()) << fresh.error().ToString();
  EXPECT_EQ(fresh->processes[0], Proc(4242, 1000, 50, 3));
}

TEST_F(NvmlGpuBackendTest, PerProcessUtilizationNeverRepeatsAnOldPeriod) {
  json scenario = Scenario();
  scenario["devices"][0]["processes"] =
      json::array({{{"pid", 4242}, {"used_memory_mib", 1000}, {"sm_util", 80}}});
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Sample(0)->processes[0].sm_util_pct, 80);
  // The process goes idle: the driver records no new period for it, so its utilisation is
  // unknown now, not the 80 % of the period already reported.
  scenario["devices"][0]["processes"][0].erase("sm_util");
  WriteScenario(scenario);
  auto idle = backend->Sample(0);
  ASSERT_TRUE(idle.ok()) << idle.error().ToString();
  EXPECT_EQ(idle->processes, (std::vector<GpuProcessSample>{Proc(4242, 1000)}));
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
  scenario["devices"][0]["unsupported"] = {"fans"};
  WriteScenario(scenario);
  auto sample = backend->Sample(0);
  ASSERT_FALSE(sample.ok());
  EXPECT_NE(sample.error().message.find("devices[0].unsupported: unknown counter 'fans'"),
            std::string::npos)
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
    for (const Gpu& gpu : *gpus) {
      auto sample = backend->Sample(gpu.index);
      EXPECT_TRUE(sample.ok()) << gpu.index << ": " << sample.error().ToString();
    }
    ++loaded;
  }
  EXPECT_GE(loaded, 3);
}

// The example a later end-to-end test relies on: what each GPU of scenarios/faults.json shows.
TEST_F(NvmlGpuBackendTest, FaultsScenarioShowsEachFault) {
  ASSERT_EQ(setenv("GF_FAKENVML_SCENARIO", GF_FAKENVML_SCENARIOS_DIR "/faults.json", 1), 0);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  std::vector<GpuSample> samples;
  for (int i = 0; i < 4; ++i) {
    auto sample = backend->Sample(i);
    ASSERT_TRUE(sample.ok()) << i << ": " << sample.error().ToString();
    samples.push_back(*std::move(sample));
  }
  EXPECT_EQ(Xids(samples[0]), (std::vector<int>{79}));
  EXPECT_GT(samples[1].ecc.volatile_uncorrected.value_or(0), 0);
  ASSERT_TRUE(samples[1].remapped_rows.has_value());
  EXPECT_TRUE(samples[1].remapped_rows->pending);
  EXPECT_GE(samples[2].temperature_c.value_or(0), 90);
  EXPECT_NE(samples[2].throttle_reasons.value_or(0) & 0x40u, 0u);  // HW thermal slowdown
  EXPECT_TRUE(samples[3].lost);
}

// NOLINTEND(concurrency-mt-unsafe)

// Topology from the stand-in driver: GPUs 0-1 have a direct NVLink and share a switch on NUMA
// node 0; GPUs 2-3 reach each other through an NVSwitch, on another switch and NUMA node 1.
TEST_F(NvmlGpuBackendTest, DiscoverReadsNvlinkPcieSwitchAndNumaTopology) {
  ASSERT_EQ(setenv("GF_FAKENVML_SCENARIO", GF_FAKENVML_SCENARIOS_DIR "/topology.json", 1), 0);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[0].nvlink_peers, (std::vector<int>{1}));
  EXPECT_EQ((*gpus)[1].nvlink_peers, (std::vector<int>{0}));
  EXPECT_EQ((*gpus)[2].nvlink_peers, (std::vector<int>{3}));  // through the NVSwitch
  EXPECT_EQ((*gpus)[3].nvlink_peers, (std::vector<int>{2}));
  EXPECT_EQ((*gpus)[0].pcie_switch, 0);
  EXPECT_EQ((*gpus)[1].pcie_switch, 0);
  EXPECT_EQ((*gpus)[2].pcie_switch, 2);
  EXPECT_EQ((*gpus)[3].pcie_switch, 2);
  EXPECT_EQ((*gpus)[1].numa_node, 0);
  EXPECT_EQ((*gpus)[3].numa_node, 1);
}

TEST_F(NvmlGpuBackendTest, TopologyQueriesTheCardRefusesLeaveItUnknown) {
  json scenario = Scenario();
  scenario["devices"][0]["unsupported"] = {"topology", "nvlink", "numa"};
  scenario["devices"][1]["unsupported"] = {"topology", "nvlink", "numa"};
  scenario["devices"][0]["pcie_switch"] = 0;
  scenario["devices"][1]["pcie_switch"] = 0;
  scenario["nvlink"] = json::array({json{{"gpus", {0, 1}}}});
  WriteScenario(scenario);
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  for (const Gpu& gpu : *gpus) {
    EXPECT_EQ(gpu.pcie_switch, -1);
    EXPECT_EQ(gpu.numa_node, -1);
    EXPECT_TRUE(gpu.nvlink_peers.empty());
  }
}

TEST_F(NvmlGpuBackendTest, ADriverWithoutTopologyEntryPointsLeavesItUnknown) {
  ASSERT_EQ(setenv("GF_FAKENVML_SCENARIO", GF_FAKENVML_SCENARIOS_DIR "/topology.json", 1), 0);
  auto backend = Open(kLegacyFakeLibrary);
  ASSERT_NE(backend, nullptr);
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  for (const Gpu& gpu : *gpus) {
    EXPECT_EQ(gpu.pcie_switch, -1);
    EXPECT_EQ(gpu.numa_node, -1);
    EXPECT_TRUE(gpu.nvlink_peers.empty());
  }
}

// An H100 in MIG mode with two 3g.40gb and one 1g.10gb MIG devices. The fake keeps a layout
// changed through NVML per UUID for the whole process, so each test that changes one names its
// own card.
json MigH100(const std::string& uuid) {
  json gpu = H100();
  gpu["uuid"] = uuid;
  gpu["processes"] = json::array();
  gpu["mig"] = {{"enabled", true},
                {"profiles", "H100-80GB"},
                {"instances",
                 json::array({{{"profile", "3g.40gb"},
                               {"gpu_instance_id", 1},
                               {"uuid", "MIG-aaaaaaaa-0000-4000-8000-000000000001"},
                               {"memory_used_mib", 5000}},
                              {{"profile", "3g.40gb"}, {"gpu_instance_id", 2}},
                              {{"profile", "1g.10gb"}, {"gpu_instance_id", 9}}})}};
  return gpu;
}

std::vector<std::string> MigProfilesOf(const Gpu& gpu) {
  std::vector<std::string> out;
  for (const MigInstance& m : gpu.mig_instances) {
    out.push_back(m.profile);
  }
  return out;
}

TEST_F(NvmlGpuBackendTest, DiscoverListsMigModeProfilesAndInstances) {
  const std::string uuid = "GPU-71000000-0000-4000-8000-000000000001";
  WriteScenario({{"devices", json::array({MigH100(uuid), L4()})}});
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  const Gpu& gpu = (*gpus)[0];
  EXPECT_TRUE(gpu.mig_enabled);
  EXPECT_EQ(gpu.mig_profiles,
            (std::vector<std::string>{
                "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}));
  ASSERT_EQ(gpu.mig_instances.size(), 3u);
  EXPECT_EQ(gpu.mig_instances[0],
            (MigInstance{.profile = "3g.40gb",
                         .uuid = GpuUuid("MIG-aaaaaaaa-0000-4000-8000-000000000001"),
                         .gpu_instance_id = 1,
                         .compute_instance_id = 0,
                         .slices = 3,
                         .memory_mib = 40192}));
  EXPECT_EQ(gpu.mig_instances[1].gpu_instance_id, 2);
  EXPECT_EQ(gpu.mig_instances[2],
            (MigInstance{.profile = "1g.10gb",
                         .uuid = GpuUuid("MIG-71000000-0000-4000-8000-000000000f09"),
                         .gpu_instance_id = 9,
                         .compute_instance_id = 0,
                         .slices = 1,
                         .memory_mib = 9856}));
  // A card without MIG: off, nothing listed, no error.
  EXPECT_FALSE((*gpus)[1].mig_enabled);
  EXPECT_TRUE((*gpus)[1].mig_instances.empty());
  EXPECT_TRUE((*gpus)[1].mig_profiles.empty());
}

TEST_F(NvmlGpuBackendTest, SampleGivesMemoryPerMigDeviceAndItsProcesses) {
  json gpu = MigH100("GPU-71000000-0000-4000-8000-000000000002");
  gpu["processes"] = json::array(
      {{{"pid", 10}, {"used_memory_mib", 4000}, {"gpu_instance_id", 1}, {"compute_instance_id", 0}},
       {{"pid", 11},
        {"used_memory_mib", 300},
        {"gpu_instance_id", 9},
        {"compute_instance_id", 0}}});
  WriteScenario({{"devices", json::array({gpu})}});
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  EXPECT_TRUE(sample->mig_enabled);
  ASSERT_EQ(sample->mig.size(), 3u);
  EXPECT_EQ(sample->mig[0].instance.profile, "3g.40gb");
  EXPECT_EQ(sample->mig[0].memory_used_mib, 5000);
  EXPECT_EQ(sample->mig[0].memory_total_mib, 40192);
  EXPECT_EQ(sample->mig[1].memory_used_mib, 0);  // known to be empty: 0, not nullopt
  ASSERT_EQ(sample->processes.size(), 2u);
  EXPECT_EQ(sample->processes[0].mig_uuid, GpuUuid("MIG-aaaaaaaa-0000-4000-8000-000000000001"));
  EXPECT_EQ(sample->processes[1].mig_uuid, sample->mig[2].instance.uuid);
}

TEST_F(NvmlGpuBackendTest, ApplyMigLayoutReplacesTheInstances) {
  WriteScenario({{"devices", json::array({MigH100("GPU-71000000-0000-4000-8000-000000000003")})}});
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  Status applied = backend->ApplyMigLayout(0, {"1g.10gb", "2g.20gb", "4g.40gb"});
  ASSERT_TRUE(applied.ok()) << applied.error().ToString();
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  // Made largest first, each GPU instance with one compute instance spanning it.
  EXPECT_EQ(MigProfilesOf((*gpus)[0]), (std::vector<std::string>{"4g.40gb", "2g.20gb", "1g.10gb"}));
  for (const MigInstance& m : (*gpus)[0].mig_instances) {
    EXPECT_EQ(m.compute_instance_id, 0) << m.profile;
    EXPECT_TRUE(m.uuid.value().starts_with("MIG-")) << m.uuid.value();
  }
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  EXPECT_EQ(sample->mig.size(), 3u);
  // An empty layout takes every instance away.
  ASSERT_TRUE(backend->ApplyMigLayout(0, {}).ok());
  gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok());
  EXPECT_TRUE((*gpus)[0].mig_instances.empty());
  EXPECT_TRUE((*gpus)[0].mig_enabled);
}

TEST_F(NvmlGpuBackendTest, ApplyMigLayoutRefusesProfilesTheGpuDoesNotOffer) {
  WriteScenario({{"devices", json::array({MigH100("GPU-71000000-0000-4000-8000-000000000004")})}});
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  Status unknown = backend->ApplyMigLayout(0, {"3g.40gb", "3g.20gb"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.error().message.find("'3g.20gb' is not offered"), std::string::npos)
      << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("1g.10gb, 1g.10gb+me, 1g.20gb"), std::string::npos)
      << unknown.error().message;
  Status too_big = backend->ApplyMigLayout(0, {"7g.80gb", "1g.10gb"});
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(too_big.error().message.find("needs 8 compute slices; the GPU has 7"),
            std::string::npos)
      << too_big.error().message;
  // Nothing was destroyed.
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(MigProfilesOf((*gpus)[0]), (std::vector<std::string>{"3g.40gb", "3g.40gb", "1g.10gb"}));
}

TEST_F(NvmlGpuBackendTest, ApplyMigLayoutNeedsMigModeOn) {
  json gpu = MigH100("GPU-71000000-0000-4000-8000-000000000005");
  gpu["mig"] = {{"enabled", false}};
  WriteScenario({{"devices", json::array({gpu, L4()})}});
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok());
  EXPECT_FALSE((*gpus)[0].mig_enabled);
  EXPECT_TRUE((*gpus)[0].mig_profiles.empty());  // NVML tells them only in MIG mode
  Status off = backend->ApplyMigLayout(0, {"3g.40gb"});
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(off.error().message.find("enable MIG mode first: nvidia-smi -i 0 -mig 1"),
            std::string::npos)
      << off.error().message;
  Status no_mig = backend->ApplyMigLayout(1, {"3g.40gb"});
  ASSERT_FALSE(no_mig.ok());
  EXPECT_EQ(no_mig.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(no_mig.error().message.find("GPU 1: this GPU has no MIG mode"), std::string::npos)
      << no_mig.error().message;
}

TEST_F(NvmlGpuBackendTest, ApplyMigLayoutRefusesABusyGpu) {
  json gpu = MigH100("GPU-71000000-0000-4000-8000-000000000006");
  gpu["processes"] = json::array(
      {{{"pid", 77}, {"used_memory_mib", 10}, {"gpu_instance_id", 2}, {"compute_instance_id", 0}}});
  WriteScenario({{"devices", json::array({gpu})}});
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  Status busy = backend->ApplyMigLayout(0, {"7g.80gb"});
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(busy.error().message.find("(pid 77)"), std::string::npos) << busy.error().message;
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ((*gpus)[0].mig_instances.size(), 3u);
}

TEST_F(NvmlGpuBackendTest, ApplyMigLayoutWithoutRootIsPermissionDenied) {
  json gpu = MigH100("GPU-71000000-0000-4000-8000-000000000007");
  gpu["no_permission"] = json::array({"mig_change"});
  WriteScenario({{"devices", json::array({gpu})}});
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  Status denied = backend->ApplyMigLayout(0, {"7g.80gb"});
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, ErrorCode::kPermissionDenied) << denied.error().message;
  EXPECT_NE(denied.error().message.find("needs root"), std::string::npos);
}

TEST_F(NvmlGpuBackendTest, OldDriverWithoutMigEntryPointsReportsMigOff) {
  WriteScenario({{"devices", json::array({MigH100("GPU-71000000-0000-4000-8000-000000000008")})}});
  auto backend = Open(kLegacyFakeLibrary);
  ASSERT_NE(backend, nullptr);
  auto gpus = backend->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.error().ToString();
  EXPECT_FALSE((*gpus)[0].mig_enabled);
  EXPECT_TRUE((*gpus)[0].mig_instances.empty());
  auto sample = backend->Sample(0);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  EXPECT_FALSE(sample->mig_enabled);
  EXPECT_TRUE(sample->mig.empty());
  Status apply = backend->ApplyMigLayout(0, {"7g.80gb"});
  ASSERT_FALSE(apply.ok());
  EXPECT_EQ(apply.error().code, ErrorCode::kFailedPrecondition);
}

// Without nvmlDeviceGetNumaNodeId, the NUMA node comes from the kernel's sysfs entry of the
// GPU's PCI address.
nvml::Return FakePciInfo(nvml::Device device, nvml::PciInfo* pci) {
  *pci = nvml::PciInfo{};
  const std::string id = device == nullptr ? "00000000:3B:00.0" : "bogus";
  std::snprintf(pci->bus_id, sizeof(pci->bus_id), "%s", id.c_str());
  return nvml::kSuccess;
}

TEST(NvmlTopologyTest, NumaFromSysfsAndBusIdSpellings) {
  EXPECT_EQ(NormalizePciBusId("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(NormalizePciBusId("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(NormalizePciBusId("not a bus"), "");
  std::string pattern = (fs::temp_directory_path() / "gf-sysfs-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path sysfs = pattern;
  fs::create_directories(sysfs / "0000:3b:00.0");
  std::ofstream(sysfs / "0000:3b:00.0" / "numa_node") << "1\n";
  NvmlTopologyApi api;
  api.pci_info = &FakePciInfo;
  std::vector<Gpu> gpus(1);
  ReadNvmlTopology(api, {nullptr}, gpus, sysfs);
  EXPECT_EQ(gpus[0].numa_node, 1);
  EXPECT_EQ(gpus[0].pcie_switch, -1);  // no common-ancestor entry point
  fs::remove_all(sysfs);
}

}  // namespace
}  // namespace gf
