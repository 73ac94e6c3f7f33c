#include "gpu/sim/sim_gpu_backend.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

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

namespace fs = std::filesystem;

// A fake /proc: one directory per pid holding an `environ` file (NUL-separated, like the
// kernel's), so process discovery runs on files the test controls.
class FakeProc {
 public:
  FakeProc() {
    std::string pattern = (fs::temp_directory_path() / "gf-sim-proc-XXXXXX").string();
    EXPECT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  ~FakeProc() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  FakeProc(const FakeProc&) = delete;
  FakeProc& operator=(const FakeProc&) = delete;

  const fs::path& Root() const { return root_; }

  void Add(std::uint32_t pid, const std::vector<std::string>& env) {
    Write(std::to_string(pid), env);
  }
  // An entry under any name (the tree also has non-pid directories such as "self").
  void Write(const std::string& name, const std::vector<std::string>& env) {
    fs::create_directories(root_ / name);
    std::ofstream out(root_ / name / "environ", std::ios::binary);
    out << EnvironBlock(env);
  }
  static std::string EnvironBlock(const std::vector<std::string>& env) {
    std::string block;
    for (const std::string& entry : env) {
      block += entry;
      block += '\0';
    }
    return block;
  }
  // A process as gpufleet's shim starts it: both variables set to its GPUs' UUIDs.
  void AddJobProcess(std::uint32_t pid, const std::string& uuids) {
    Add(pid,
        {"PATH=/usr/bin",
         "CUDA_VISIBLE_DEVICES=" + uuids,
         "NVIDIA_VISIBLE_DEVICES=" + uuids,
         "GPUFLEET_JOB_ID=7"});
  }
  void Remove(std::uint32_t pid) { fs::remove_all(root_ / std::to_string(pid)); }

 private:
  fs::path root_;
};

std::unique_ptr<SimGpuBackend> MakeSimOnProc(std::string_view spec,
                                             const Clock& clock,
                                             const FakeProc& proc) {
  SimGpuOptions options;
  options.hostname = "node-a";
  options.proc_root = proc.Root();
  auto backend = SimGpuBackend::Create(spec, clock, options);
  EXPECT_TRUE(backend.ok()) << backend.error().ToString();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

std::string Uuid(SimGpuBackend& sim, int index) {
  return (*sim.Discover())[static_cast<std::size_t>(index)].uuid.value();
}

std::vector<std::uint32_t> Pids(const GpuSample& s) {
  std::vector<std::uint32_t> pids;
  for (const GpuProcessSample& p : s.processes) {
    pids.push_back(p.pid);
  }
  return pids;
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

TEST(SimGpuBackendTest, EightGpusAreTwoNvlinkQuadsOnTwoNumaNodes) {
  ManualClock clock;
  auto sim = MakeSim("sim:8xH100-80GB,2xL4-24GB", clock);
  ASSERT_NE(sim, nullptr);
  auto gpus = sim->Discover();
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 10u);
  EXPECT_EQ((*gpus)[0].nvlink_peers, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ((*gpus)[6].nvlink_peers, (std::vector<int>{4, 5, 7}));
  EXPECT_EQ((*gpus)[3].pcie_switch, 2);
  EXPECT_EQ((*gpus)[3].numa_node, 0);
  EXPECT_EQ((*gpus)[4].numa_node, 1);
  // The second item is a topology of its own: its pair links only to itself.
  EXPECT_EQ((*gpus)[8].nvlink_peers, (std::vector<int>{9}));
  EXPECT_EQ((*gpus)[9].pcie_switch, 8);
  EXPECT_EQ((*gpus)[9].numa_node, 0);
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

TEST(SimProcScanTest, VisibleGpuUuidsReadsBothVariablesAndOnlyUuids) {
  auto uuids = [](const std::vector<std::string>& env) {
    return VisibleGpuUuids(FakeProc::EnvironBlock(env));
  };
  EXPECT_EQ(uuids({"HOME=/root",
                   "CUDA_VISIBLE_DEVICES=GPU-a, GPU-b",
                   "NVIDIA_VISIBLE_DEVICES=GPU-b,GPU-c",
                   "X_CUDA_VISIBLE_DEVICES=GPU-x",
                   "CUDA_VISIBLE_DEVICES_OLD=GPU-y"}),
            (std::vector<std::string>{"GPU-a", "GPU-b", "GPU-c"}));
  // Indexes name real cards, "void"/"all" are runtime keywords: none is a simulated GPU.
  EXPECT_TRUE(uuids({"CUDA_VISIBLE_DEVICES=0,1", "NVIDIA_VISIBLE_DEVICES=all"}).empty());
  EXPECT_TRUE(uuids({"NVIDIA_VISIBLE_DEVICES=void"}).empty());
  EXPECT_TRUE(uuids({"CUDA_VISIBLE_DEVICES="}).empty());
  // No trailing NUL (a truncated read) still parses.
  EXPECT_EQ(VisibleGpuUuids("CUDA_VISIBLE_DEVICES=GPU-z"), (std::vector<std::string>{"GPU-z"}));
  // A MIG device's UUID names it (and so its simulated GPU).
  EXPECT_EQ(uuids({"CUDA_VISIBLE_DEVICES=MIG-m1"}), (std::vector<std::string>{"MIG-m1"}));
}

// A node standing for a Slurm compute node: index entries of its own Slurm jobs' processes
// (SLURMD_NODENAME) name its GPUs; another node's, or a process outside Slurm, do not.
TEST(SimProcScanTest, SlurmIndexEntriesNameTheNodesGpus) {
  FakeProc proc;
  proc.Add(10, {"SLURMD_NODENAME=gpu01", "SLURM_JOB_ID=5", "CUDA_VISIBLE_DEVICES=0,2"});
  proc.Add(11, {"SLURMD_NODENAME=gpu02", "SLURM_JOB_ID=6", "CUDA_VISIBLE_DEVICES=1"});
  proc.Add(12, {"CUDA_VISIBLE_DEVICES=1"});
  proc.Add(13, {"SLURMD_NODENAME=gpu01", "CUDA_VISIBLE_DEVICES=3,9"});  // 9: no such GPU
  const SimSlurmNode node{.node = "gpu01", .uuid_of_index = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"}};
  EXPECT_EQ(ScanSimGpuProcesses(proc.Root(), nullptr, &node),
            (SimGpuProcessTable{{"GPU-a", {10}}, {"GPU-c", {10}}, {"GPU-d", {13}}}));
  EXPECT_TRUE(ScanSimGpuProcesses(proc.Root()).empty());  // not a Slurm node: indices are cards
}

TEST(SimProcScanTest, ScanMapsUuidsToSortedPidsAndSkipsWhatItCannotRead) {
  FakeProc proc;
  proc.AddJobProcess(30, "GPU-a");
  proc.AddJobProcess(7, "GPU-a,GPU-b");
  proc.AddJobProcess(12, "GPU-b");
  proc.Add(99, {"PATH=/bin"});                               // no GPU
  proc.Write("4294967296", {"CUDA_VISIBLE_DEVICES=GPU-a"});  // beyond 32 bits: not a pid
  fs::create_directories(proc.Root() / "self");              // not a pid
  fs::create_directories(proc.Root() / "55");                // exited mid-scan: no environ
  SimGpuProcessTable table = ScanSimGpuProcesses(proc.Root());
  EXPECT_EQ(table, (SimGpuProcessTable{{"GPU-a", {7, 30}}, {"GPU-b", {7, 12}}}));

  if (geteuid() != 0) {  // root reads any file, so only a non-root run can check this
    proc.AddJobProcess(40, "GPU-c");
    fs::permissions(proc.Root() / "40" / "environ", fs::perms::none);
    EXPECT_EQ(ScanSimGpuProcesses(proc.Root()).count("GPU-c"), 0u);
  }
  EXPECT_TRUE(ScanSimGpuProcesses(proc.Root() / "missing").empty());
}

TEST(SimGpuBackendTest, IdleSampleFillsEveryField) {
  ManualClock clock;
  FakeProc proc;
  auto sim = MakeSimOnProc("sim:H100-80GB", clock, proc);
  ASSERT_NE(sim, nullptr);
  auto s = sim->Sample(0);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  const SimGpuProfile& h100 = SimGpuProfileFor("H100-80GB");
  EXPECT_EQ(s->uuid.value(), SimGpuUuid("node-a", 0, "H100-80GB"));
  EXPECT_EQ(s->time, clock.Now());
  EXPECT_FALSE(s->lost);
  EXPECT_EQ(s->memory_total_mib, 81920);
  EXPECT_EQ(s->memory_used_mib, SimDriverReserveMib(81920));
  EXPECT_GT(s->memory_used_mib, 0);
  EXPECT_EQ(s->memory_free_mib, 81920 - s->memory_used_mib);
  EXPECT_EQ(s->util_gpu_pct, 0);
  EXPECT_EQ(s->util_memory_pct, 0);
  EXPECT_EQ(s->temperature_c, 30);
  EXPECT_EQ(s->memory_temperature_c, 33);  // HBM
  EXPECT_EQ(s->power_mw, h100.idle_mw);
  EXPECT_EQ(s->power_limit_mw, 700'000);
  EXPECT_EQ(s->energy_mj, 0);
  EXPECT_EQ(s->sm_clock_mhz, h100.sm_idle_mhz);
  EXPECT_EQ(s->mem_clock_mhz, h100.mem_idle_mhz);
  EXPECT_EQ(s->pcie_rx_kbps, SimPcieRxKbps(0));
  EXPECT_EQ(s->pcie_tx_kbps, SimPcieTxKbps(0));
  EXPECT_EQ(s->pcie_replay_count, 0);
  EXPECT_EQ(s->ecc, (EccCounters{0, 0, 0, 0}));
  EXPECT_EQ(s->remapped_rows, RemappedRows{});
  EXPECT_EQ(s->throttle_reasons, 0x1u);       // GPU idle
  EXPECT_EQ(s->fan_speed_pct, std::nullopt);  // SXM cards are passively cooled
  EXPECT_EQ(s->pstate, 8);
  EXPECT_TRUE(s->xids.empty());
  EXPECT_TRUE(s->processes.empty());
}

TEST(SimGpuBackendTest, SensorsAndLimitsFollowTheModel) {
  ManualClock clock;
  auto sim = MakeSim("sim:A100-80GB,A100-40GB,L4-24GB,V100-32GB,RTX4090-24GB,Foo-8GB", clock);
  ASSERT_NE(sim, nullptr);
  std::vector<GpuSample> s;
  s.reserve(6);
  for (int i = 0; i < 6; ++i) {
    s.push_back(*sim->Sample(i));
  }
  EXPECT_EQ(s[0].power_limit_mw, 400'000);
  EXPECT_EQ(s[1].power_limit_mw, 400'000);
  EXPECT_EQ(s[2].power_limit_mw, 72'000);
  EXPECT_EQ(s[3].power_limit_mw, 300'000);
  // GDDR cards have no HBM sensor; Volta has no row remapping; consumer cards no ECC but a fan.
  EXPECT_TRUE(s[0].memory_temperature_c.has_value());
  EXPECT_FALSE(s[2].memory_temperature_c.has_value());
  EXPECT_TRUE(s[2].remapped_rows.has_value());
  EXPECT_FALSE(s[3].remapped_rows.has_value());
  EXPECT_EQ(s[3].ecc.volatile_uncorrected, 0);
  EXPECT_EQ(s[4].ecc, EccCounters{});
  EXPECT_EQ(s[4].fan_speed_pct, 30);
  EXPECT_FALSE(s[2].fan_speed_pct.has_value());
  // An unknown model still reports every field a generic card would.
  EXPECT_EQ(s[5].power_limit_mw, 300'000);
  EXPECT_TRUE(s[5].fan_speed_pct.has_value());
}

TEST(SimGpuBackendTest, LoadFollowsTheProcessesThatNameTheGpu) {
  ManualClock clock;
  FakeProc proc;
  auto sim = MakeSimOnProc("sim:2xH100-80GB", clock, proc);
  ASSERT_NE(sim, nullptr);
  const SimGpuProfile& h100 = SimGpuProfileFor("H100-80GB");
  proc.AddJobProcess(4242, Uuid(*sim, 0));
  clock.Advance(Millis(1'000));  // past the scan the backend took when it was created

  GpuSample busy = *sim->Sample(0);
  EXPECT_EQ(Pids(busy), (std::vector<std::uint32_t>{4242}));
  ASSERT_TRUE(busy.processes[0].used_memory_mib.has_value());
  EXPECT_GT(*busy.processes[0].used_memory_mib, 1024);
  EXPECT_EQ(busy.memory_used_mib, SimDriverReserveMib(81920) + *busy.processes[0].used_memory_mib);
  EXPECT_EQ(busy.memory_free_mib, 81920 - busy.memory_used_mib);
  EXPECT_GE(*busy.util_gpu_pct, kSimBusyMinPct);
  EXPECT_LE(*busy.util_gpu_pct, kSimBusyMaxPct);
  EXPECT_EQ(busy.util_memory_pct, SimMemoryUtilPct(*busy.util_gpu_pct));
  EXPECT_EQ(busy.processes[0].sm_util_pct, busy.util_gpu_pct);  // the only process: all of it
  EXPECT_EQ(busy.power_mw, SimPowerMw(h100, *busy.util_gpu_pct));
  EXPECT_GT(*busy.power_mw, h100.idle_mw);
  EXPECT_LE(*busy.power_mw, *busy.power_limit_mw);
  EXPECT_EQ(busy.sm_clock_mhz, h100.sm_boost_mhz);
  EXPECT_EQ(busy.pstate, 0);
  EXPECT_EQ(busy.throttle_reasons, 0u);
  EXPECT_GT(*busy.pcie_rx_kbps, 1'000'000);

  GpuSample other = *sim->Sample(1);
  EXPECT_EQ(other.util_gpu_pct, 0);
  EXPECT_TRUE(other.processes.empty());

  proc.Remove(4242);
  clock.Advance(Millis(1'000));
  GpuSample idle = *sim->Sample(0);
  EXPECT_EQ(idle.util_gpu_pct, 0);
  EXPECT_TRUE(idle.processes.empty());
  EXPECT_EQ(idle.memory_used_mib, SimDriverReserveMib(81920));
  EXPECT_EQ(idle.power_mw, h100.idle_mw);
  EXPECT_EQ(idle.pstate, 8);
  EXPECT_EQ(idle.throttle_reasons, 0x1u);
}

TEST(SimGpuBackendTest, AnotherGpusUuidDoesNotCount) {
  ManualClock clock;
  FakeProc proc;
  auto sim = MakeSimOnProc("sim:2xH100-80GB", clock, proc);
  ASSERT_NE(sim, nullptr);
  proc.AddJobProcess(10, SimGpuUuid("node-b", 0, "H100-80GB"));  // same index, other host
  proc.AddJobProcess(11, Uuid(*sim, 1));
  proc.Add(12, {"CUDA_VISIBLE_DEVICES=0"});  // an index: a real card, not a simulated one
  clock.Advance(Millis(1'000));              // past the scan the backend took when it was created
  GpuSample s0 = *sim->Sample(0);
  EXPECT_EQ(s0.util_gpu_pct, 0);
  EXPECT_TRUE(s0.processes.empty());
  EXPECT_EQ(Pids(*sim->Sample(1)), (std::vector<std::uint32_t>{11}));
}

// The real /proc, with a real child started the way the shim starts a job: its environment
// names the GPU, so the GPU shows it as long as it runs.
TEST(SimGpuBackendTest, FindsARealProcessThroughProc) {
  ManualClock clock;
  SimGpuOptions options;
  options.hostname = "sim-test-" + std::to_string(getpid());  // UUIDs no other test uses
  auto created = SimGpuBackend::Create("sim:L4-24GB", clock, options);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  SimGpuBackend& sim = **created;
  std::string visible = "CUDA_VISIBLE_DEVICES=" + Uuid(sim, 0);
  std::string sleep_path = "/bin/sleep";
  std::string seconds = "60";
  std::vector<char*> argv = {sleep_path.data(), seconds.data(), nullptr};
  std::vector<char*> envp = {visible.data(), nullptr};
  pid_t child = 0;
  ASSERT_EQ(posix_spawn(&child, sleep_path.c_str(), nullptr, nullptr, argv.data(), envp.data()), 0);
  // posix_spawn may return before the child's exec: until then /proc shows the parent's
  // environment. Wait (bounded) until the new one is visible, as it is for a running job.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto exec_done = [&] {
    std::ifstream in("/proc/" + std::to_string(child) + "/environ");
    std::string environ((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return environ.find(visible) != std::string::npos;
  };
  while (!exec_done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  clock.Advance(Millis(1'000));
  GpuSample running = *sim.Sample(0);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(Pids(running), (std::vector<std::uint32_t>{static_cast<std::uint32_t>(child)}));
  EXPECT_GT(*running.util_gpu_pct, 0);

  clock.Advance(Millis(1'000));
  EXPECT_TRUE(sim.Sample(0)->processes.empty());
}

TEST(SimGpuBackendTest, OneProcScanServesASamplingRound) {
  ManualClock clock;
  FakeProc proc;
  auto sim = MakeSimOnProc("sim:2xH100-80GB", clock, proc);
  ASSERT_NE(sim, nullptr);
  EXPECT_TRUE(sim->Sample(0)->processes.empty());
  proc.AddJobProcess(5, Uuid(*sim, 1));
  clock.Advance(Millis(10));
  // Same round (within the 500 ms scan interval): the scan taken for GPU 0 serves GPU 1.
  EXPECT_TRUE(sim->Sample(1)->processes.empty());
  clock.Advance(Millis(1'000));
  EXPECT_EQ(Pids(*sim->Sample(1)), (std::vector<std::uint32_t>{5}));
}

TEST(SimGpuBackendTest, ProcessMemoryFitsTheCard) {
  std::vector<std::uint32_t> pids;
  for (std::uint32_t pid = 100; pid < 112; ++pid) {
    pids.push_back(pid);
  }
  std::vector<GpuProcessSample> ps = SimProcesses(pids, 24576, 90, 36);
  ASSERT_EQ(ps.size(), pids.size());
  std::int64_t memory = 0;
  int sm = 0;
  int mem = 0;
  std::set<std::int64_t> sizes;
  for (const GpuProcessSample& p : ps) {
    memory += *p.used_memory_mib;
    sm += *p.sm_util_pct;
    mem += *p.mem_util_pct;
    sizes.insert(*p.used_memory_mib);
  }
  EXPECT_LE(memory, 24576 - SimDriverReserveMib(24576));
  EXPECT_GT(memory, 24576 / 2);  // scaled to fit, not dropped
  EXPECT_GT(sizes.size(), 1u);   // hashed per pid, not all alike
  EXPECT_LE(sm, 90);
  EXPECT_GT(sm, 90 - static_cast<int>(pids.size()));  // shares round down, one point at most
  EXPECT_LE(mem, 36);
  // Deterministic per pid: the same pid gets the same memory on another call.
  EXPECT_EQ(SimProcesses(pids, 24576, 90, 36), ps);
}

// A fractional job's process (GPUFLEET_GPU_MEMORY_LIMIT_MIB in its environment) takes a share
// of its limit, not of the card, so that a simulated share job keeps within its memory.
TEST(SimGpuBackendTest, ALimitedProcessKeepsWithinItsLimit) {
  using namespace std::string_view_literals;
  EXPECT_EQ(MemoryLimitMib("A=1\0GPUFLEET_GPU_MEMORY_LIMIT_MIB=20480\0B=2"sv), 20480);
  EXPECT_EQ(MemoryLimitMib("GPUFLEET_GPU_MEMORY_LIMIT_MIB=20G"sv), std::nullopt);
  EXPECT_EQ(MemoryLimitMib("PATH=/bin"sv), std::nullopt);
  const std::vector<std::uint32_t> pids = {100, 101, 102};
  const std::map<std::uint32_t, std::int64_t> limits = {{100, 20480}, {101, 20480}};
  const std::vector<GpuProcessSample> ps = SimProcesses(pids, 81920, 90, 36, &limits);
  EXPECT_LE(*ps[0].used_memory_mib + *ps[1].used_memory_mib, 20480);
  EXPECT_GT(*ps[0].used_memory_mib, 0);
  EXPECT_EQ(ps[2], SimProcesses(pids, 81920, 90, 36)[2]);  // an unlimited one as before
}

TEST(SimGpuBackendTest, EnergyIsTheIntegralOfPowerAndNeverDecreases) {
  ManualClock clock;
  FakeProc proc;
  auto sim = MakeSimOnProc("sim:A100-80GB", clock, proc);
  ASSERT_NE(sim, nullptr);
  proc.AddJobProcess(77, Uuid(*sim, 0));
  clock.Advance(Millis(1'000));  // past the scan the backend took when it was created
  GpuSample prev = *sim->Sample(0);
  std::int64_t expected_uj = SimGpuProfileFor("A100-80GB").idle_mw * 1'000;  // the idle second
  std::set<int> utils;
  const std::vector<int> steps_ms = {250, 1'000, 3'700, 1, 999, 5'000, 12'345, 1'000};
  for (int round = 0; round < 20; ++round) {
    int step_ms = steps_ms[static_cast<std::size_t>(round) % steps_ms.size()];
    clock.Advance(Millis(step_ms));
    GpuSample s = *sim->Sample(0);
    // The draw reported at a sample holds until the next one.
    expected_uj += *prev.power_mw * step_ms;
    EXPECT_EQ(*s.energy_mj, expected_uj / 1000) << "round " << round;
    EXPECT_GE(*s.energy_mj, *prev.energy_mj);
    utils.insert(*s.util_gpu_pct);
    prev = s;
  }
  EXPECT_GT(utils.size(), 3u);  // the load wanders
  clock.Advance(Millis(-60'000));
  EXPECT_EQ(sim->Sample(0)->energy_mj, prev.energy_mj);  // a clock set back adds nothing
}

TEST(SimGpuBackendTest, TemperatureLagsPowerAndDrivesTheFan) {
  ManualClock clock;
  FakeProc proc;
  auto sim = MakeSimOnProc("sim:RTX4090-24GB", clock, proc);
  ASSERT_NE(sim, nullptr);
  int idle_fan = *sim->Sample(0)->fan_speed_pct;
  proc.AddJobProcess(8, Uuid(*sim, 0));
  clock.Advance(Millis(1'000));
  GpuSample first = *sim->Sample(0);  // the load starts now: still cool
  EXPECT_EQ(first.temperature_c, 30);
  clock.Advance(Millis(2'000));
  GpuSample early = *sim->Sample(0);
  EXPECT_GT(*early.temperature_c, 30);
  EXPECT_LT(*early.temperature_c, 40);  // 2 s of a 30 s time constant
  for (int i = 0; i < 300; ++i) {
    clock.Advance(Millis(1'000));
    ASSERT_TRUE(sim->Sample(0).ok());
  }
  GpuSample hot = *sim->Sample(0);
  EXPECT_GT(*hot.temperature_c, 50);
  EXPECT_LE(*hot.temperature_c, 75);
  EXPECT_EQ(hot.fan_speed_pct, SimFanPct(*hot.temperature_c));
  EXPECT_GT(*hot.fan_speed_pct, idle_fan);

  proc.Remove(8);
  clock.Advance(Millis(1'000));
  int before_cooling = *sim->Sample(0)->temperature_c;
  clock.Advance(Millis(600'000));
  EXPECT_LT(*sim->Sample(0)->temperature_c, before_cooling);
  EXPECT_EQ(sim->Sample(0)->temperature_c, 30);
}

TEST(SimGpuBackendTest, SameClockSameSamples) {
  ManualClock clock;
  FakeProc proc;
  auto a = MakeSimOnProc("sim:2xH100-80GB", clock, proc);
  auto b = MakeSimOnProc("sim:2xH100-80GB", clock, proc);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  proc.AddJobProcess(300, Uuid(*a, 0) + "," + Uuid(*a, 1));
  proc.AddJobProcess(301, Uuid(*a, 1));
  bool gpus_differ = false;
  for (int i = 0; i < 30; ++i) {
    clock.Advance(Millis(700));
    GpuSample a0 = *a->Sample(0);
    GpuSample a1 = *a->Sample(1);
    EXPECT_EQ(a0, *b->Sample(0));
    EXPECT_EQ(a1, *b->Sample(1));
    gpus_differ = gpus_differ || a0.util_gpu_pct != a1.util_gpu_pct;
  }
  EXPECT_TRUE(gpus_differ);  // each card wanders on its own
}

TEST(SimGpuBackendTest, OverridesWinUntilCleared) {
  ManualClock clock;
  FakeProc proc;
  auto sim = MakeSimOnProc("sim:H100-80GB", clock, proc);
  ASSERT_NE(sim, nullptr);
  proc.AddJobProcess(9, Uuid(*sim, 0));
  clock.Advance(Millis(1'000));  // past the scan the backend took when it was created
  ASSERT_TRUE(sim->SetUtilization(0, 10).ok());
  ASSERT_TRUE(sim->SetProcesses(0, {{123, 1000}}).ok());
  ASSERT_TRUE(sim->SetMemoryUsed(0, 5000).ok());
  ASSERT_TRUE(sim->SetTemperature(0, 95).ok());
  ASSERT_TRUE(sim->SetThrottleReasons(0, 0x40).ok());
  ASSERT_TRUE(sim->SetEcc(0, EccCounters{1, 2, 3, 4}).ok());
  ASSERT_TRUE(sim->SetRemappedRows(0, RemappedRows{5, 1, true, false}).ok());
  GpuSample s = *sim->Sample(0);
  EXPECT_EQ(s.util_gpu_pct, 10);
  EXPECT_EQ(s.power_mw, SimPowerMw(SimGpuProfileFor("H100-80GB"), 10));
  EXPECT_EQ(s.processes, (std::vector<GpuProcessSample>{{123, 1000}}));
  EXPECT_EQ(s.memory_used_mib, 5000);
  EXPECT_EQ(s.memory_free_mib, 81920 - 5000);
  EXPECT_EQ(s.temperature_c, 95);
  EXPECT_GT(*s.memory_temperature_c, 95);  // HBM follows the die
  EXPECT_EQ(s.throttle_reasons, 0x40u);
  EXPECT_EQ(s.ecc, (EccCounters{1, 2, 3, 4}));
  EXPECT_EQ(s.remapped_rows, (RemappedRows{5, 1, true, false}));

  ASSERT_TRUE(sim->ClearOverrides(0).ok());
  GpuSample model = *sim->Sample(0);
  EXPECT_EQ(Pids(model), (std::vector<std::uint32_t>{9}));
  EXPECT_GE(*model.util_gpu_pct, kSimBusyMinPct);
  EXPECT_LT(*model.temperature_c, 40);
  EXPECT_EQ(model.ecc, (EccCounters{0, 0, 0, 0}));
  EXPECT_EQ(model.remapped_rows, RemappedRows{});
  EXPECT_EQ(model.throttle_reasons, 0u);
}

TEST(SimGpuBackendTest, OverridesRejectBadValuesNamingThem) {
  ManualClock clock;
  auto sim = MakeSim("sim:2xL4-24GB", clock);
  ASSERT_NE(sim, nullptr);
  auto expect_bad = [](const Status& st, std::string_view words) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(st.error().message.find(words), std::string::npos) << st.error().message;
  };
  expect_bad(sim->SetUtilization(0, 101),
             "sim GPU 0: utilisation (%) 101 is out of range; use 0..100");
  expect_bad(sim->SetMemoryUsed(1, 24577), "sim GPU 1: memory used (MiB) 24577");
  expect_bad(sim->SetTemperature(0, 200), "temperature (C) 200 is out of range; use -40..150");
  expect_bad(sim->SetEcc(0, EccCounters{0, -1, 0, 0}), "ECC volatile_uncorrected -1");
  expect_bad(sim->SetRemappedRows(0, RemappedRows{-2, 0, false, false}),
             "remapped rows correctable -2");
  expect_bad(sim->InjectXid(0, 0), "XID 0 is out of range");
  for (const Status& st : {sim->SetThrottleReasons(2, 0),
                           sim->ClearOverrides(2),
                           sim->InjectXid(-1, 79),
                           sim->SetLost(2, true)}) {
    EXPECT_EQ(st.error().code, ErrorCode::kNotFound);
  }
  // A refused value changes nothing.
  EXPECT_EQ(sim->Sample(0)->util_gpu_pct, 0);
  EXPECT_EQ(sim->Sample(0)->temperature_c, 30);
}

TEST(SimGpuBackendTest, XidIsReportedOnceAndWaitsOutALoss) {
  ManualClock clock;
  auto sim = MakeSim("sim:2xH100-80GB", clock);
  ASSERT_NE(sim, nullptr);
  Time injected = clock.Now();
  ASSERT_TRUE(sim->InjectXid(0, 79).ok());
  ASSERT_TRUE(sim->InjectXid(0, 48).ok());
  clock.Advance(Millis(1'000));
  EXPECT_TRUE(sim->Sample(1)->xids.empty());
  EXPECT_EQ(sim->Sample(0)->xids, (std::vector<XidEvent>{{79, injected}, {48, injected}}));
  EXPECT_TRUE(sim->Sample(0)->xids.empty());

  ASSERT_TRUE(sim->InjectXid(1, 13).ok());
  ASSERT_TRUE(sim->SetLost(1, true).ok());
  EXPECT_TRUE(sim->Sample(1)->xids.empty());
  ASSERT_TRUE(sim->SetLost(1, false).ok());
  EXPECT_EQ(sim->Sample(1)->xids, (std::vector<XidEvent>{{13, clock.Now()}}));
}

TEST(SimGpuBackendTest, LostGpuReportsALostSample) {
  ManualClock clock;
  auto sim = MakeSim("sim:2xL4-24GB", clock);
  ASSERT_NE(sim, nullptr);
  ASSERT_TRUE(sim->SetLost(1, true).ok());
  auto sample = sim->Sample(1);
  ASSERT_TRUE(sample.ok()) << sample.error().ToString();
  GpuSample expected;
  expected.uuid = GpuUuid(SimGpuUuid("node-a", 1, "L4-24GB"));
  expected.time = clock.Now();
  expected.lost = true;
  EXPECT_EQ(*sample, expected);  // nothing else: no counter a lost card cannot give
  EXPECT_EQ((*sim->Discover())[1].health, GpuHealth::kFailed);
  EXPECT_EQ((*sim->Discover())[1].health_cause, "GPU is lost (simulated)");
  EXPECT_FALSE(sim->Sample(0)->lost);

  ASSERT_TRUE(sim->SetLost(1, false).ok());
  EXPECT_FALSE(sim->Sample(1)->lost);
  EXPECT_EQ(sim->Sample(1)->power_limit_mw, 72'000);
  EXPECT_EQ((*sim->Discover())[1].health, GpuHealth::kOk);
}

TEST(SimGpuBackendTest, PowerLimitCapsTheDrawAndTheEnergy) {
  ManualClock clock;
  auto sim = MakeSim("sim:2xH100-80GB", clock);
  ASSERT_NE(sim, nullptr);
  auto limits = sim->PowerLimits(0);
  ASSERT_TRUE(limits.ok()) << limits.error().ToString();
  EXPECT_EQ(limits->current_mw, 700'000);
  EXPECT_EQ(limits->default_mw, 700'000);
  EXPECT_EQ(limits->min_mw, 175'000);
  EXPECT_EQ(limits->max_mw, 700'000);

  ASSERT_TRUE(sim->SetUtilization(0, 100).ok());
  ASSERT_TRUE(sim->SetPowerLimit(0, 200'000).ok());
  GpuSample capped = *sim->Sample(0);
  EXPECT_EQ(capped.power_limit_mw, 200'000);
  EXPECT_EQ(capped.power_mw, 200'000);  // full load, held at the cap
  clock.Advance(Millis(2'000));
  EXPECT_EQ(*sim->Sample(0)->energy_mj, *capped.energy_mj + std::int64_t{200'000} * 2);
  EXPECT_EQ(sim->PowerLimits(0)->current_mw, 200'000);
  EXPECT_EQ(sim->Sample(1)->power_limit_mw, 700'000);  // the other card keeps its own

  // Not an override: clearing the overrides keeps the limit.
  ASSERT_TRUE(sim->ClearOverrides(0).ok());
  EXPECT_EQ(sim->Sample(0)->power_limit_mw, 200'000);
  ASSERT_TRUE(sim->SetPowerLimit(0, 700'000).ok());
  EXPECT_EQ(sim->Sample(0)->power_limit_mw, 700'000);
}

TEST(SimGpuBackendTest, PowerLimitOutsideTheRangeOrOnALostGpuIsRefused) {
  ManualClock clock;
  auto sim = MakeSim("sim:H100-80GB", clock);
  ASSERT_NE(sim, nullptr);
  Status low = sim->SetPowerLimit(0, 150'000);
  ASSERT_FALSE(low.ok());
  EXPECT_EQ(low.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(low.error().message.find("power limit (mW) 150000 is out of range; use "
                                     "175000..700000"),
            std::string::npos)
      << low.error().message;
  EXPECT_FALSE(sim->SetPowerLimit(0, 700'001).ok());
  EXPECT_EQ(sim->Sample(0)->power_limit_mw, 700'000);
  EXPECT_EQ(sim->SetPowerLimit(1, 200'000).error().code, ErrorCode::kNotFound);

  ASSERT_TRUE(sim->SetLost(0, true).ok());
  EXPECT_EQ(sim->PowerLimits(0).error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(sim->SetPowerLimit(0, 200'000).error().code, ErrorCode::kUnavailable);
}

std::vector<std::string> MigLayoutOf(const Gpu& gpu) {
  std::vector<std::string> out;
  for (const MigInstance& m : gpu.mig_instances) {
    out.push_back(m.profile);
  }
  return out;
}

TEST(SimGpuMigTest, ProfilesAreNamedFromTheCardsMemory) {
  const auto names = [](std::string_view model, std::int64_t mib) {
    std::vector<std::string> out;
    for (const MigProfile& p : SimMigProfiles(model, mib)) {
      out.push_back(p.name);
    }
    return out;
  };
  EXPECT_EQ(
      names("H100-80GB", 81920),
      (std::vector<std::string>{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}));
  EXPECT_EQ(
      names("A100-40GB", 40960),
      (std::vector<std::string>{"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}));
  EXPECT_EQ(names("H200-141GB", std::int64_t{141} * 1024),
            (std::vector<std::string>{
                "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}));
  EXPECT_TRUE(names("L4-24GB", 24576).empty());
  EXPECT_EQ(SimDefaultMigLayout("H100-80GB", 81920),
            (std::vector<std::string>{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}));
}

TEST(SimGpuMigTest, MigSpecStartsInMigModeWithTheDefaultLayout) {
  ManualClock clock;
  auto sim = MakeSim("sim:H100-80GB:mig,L4-24GB", clock);
  ASSERT_NE(sim, nullptr);
  auto gpus = sim->Discover();
  ASSERT_TRUE(gpus.ok());
  const Gpu& mig = (*gpus)[0];
  EXPECT_TRUE(mig.mig_enabled);
  EXPECT_EQ(mig.mig_profiles.size(), 6u);
  EXPECT_EQ(MigLayoutOf(mig),
            (std::vector<std::string>{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}));
  EXPECT_EQ(mig.mig_instances[0],
            (MigInstance{.profile = "3g.40gb",
                         .uuid = GpuUuid(SimMigUuid(mig.uuid, 1)),
                         .gpu_instance_id = 1,
                         .compute_instance_id = 0,
                         .slices = 3,
                         .memory_mib = 40960}));
  EXPECT_TRUE(mig.mig_instances[0].uuid.value().starts_with("MIG-"));
  EXPECT_NE(mig.mig_instances[2].uuid, mig.mig_instances[3].uuid);
  EXPECT_FALSE((*gpus)[1].mig_enabled);
  EXPECT_TRUE((*gpus)[1].mig_instances.empty());

  auto bad = SimGpuBackend::Create("sim:L4-24GB:mig", clock, "node-a");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("has no MIG"), std::string::npos) << bad.error().message;
}

TEST(SimGpuMigTest, AProcessOnAMigDeviceCountsThere) {
  ManualClock clock;
  FakeProc proc;
  auto sim = MakeSimOnProc("sim:H100-80GB:mig", clock, proc);
  ASSERT_NE(sim, nullptr);
  const Gpu gpu = (*sim->Discover())[0];
  const GpuUuid& second = gpu.mig_instances[1].uuid;  // the 2g.20gb
  proc.AddJobProcess(4242, second.value());
  clock.Advance(Millis(1'000));
  GpuSample s = *sim->Sample(0);
  EXPECT_TRUE(s.mig_enabled);
  ASSERT_EQ(s.processes.size(), 1u);
  EXPECT_EQ(s.processes[0].mig_uuid, second);
  ASSERT_EQ(s.mig.size(), 4u);
  EXPECT_EQ(s.mig[1].memory_used_mib, s.processes[0].used_memory_mib);
  EXPECT_GT(*s.mig[1].memory_used_mib, 0);
  EXPECT_LE(*s.mig[1].memory_used_mib, 20480);  // within its instance
  EXPECT_EQ(s.mig[1].memory_total_mib, 20480);
  EXPECT_EQ(s.mig[0].memory_used_mib, 0);
  EXPECT_GT(*s.util_gpu_pct, 0);

  // Busy: the layout stays.
  Status busy = sim->ApplyMigLayout(0, {"7g.80gb"});
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(busy.error().message.find("pid 4242"), std::string::npos) << busy.error().message;
  EXPECT_EQ(MigLayoutOf((*sim->Discover())[0]).size(), 4u);
}

TEST(SimGpuMigTest, ApplyMigLayoutChangesTheLayoutOrSaysWhyNot) {
  ManualClock clock;
  auto sim = MakeSim("sim:H100-80GB:mig,H100-80GB", clock);
  ASSERT_NE(sim, nullptr);
  ASSERT_TRUE(sim->ApplyMigLayout(0, {"1g.10gb", "3g.40gb", "3g.40gb"}).ok());
  const Gpu gpu = (*sim->Discover())[0];
  EXPECT_EQ(MigLayoutOf(gpu), (std::vector<std::string>{"3g.40gb", "3g.40gb", "1g.10gb"}));
  EXPECT_EQ(gpu.mig_instances[2].gpu_instance_id, 3);
  GpuSample s = *sim->Sample(0);
  EXPECT_EQ(s.mig.size(), 3u);

  Status unknown = sim->ApplyMigLayout(0, {"5g.50gb"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.error().message.find("'5g.50gb' is not offered by this GPU (it offers 1g.10gb, "
                                         "1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)"),
            std::string::npos)
      << unknown.error().message;
  Status too_many = sim->ApplyMigLayout(0, {"3g.40gb", "3g.40gb", "3g.40gb"});
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().code, ErrorCode::kInvalidArgument);

  Status off = sim->ApplyMigLayout(1, {"7g.80gb"});
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(off.error().message.find("enable MIG mode first: nvidia-smi -i 1 -mig 1"),
            std::string::npos)
      << off.error().message;
  ASSERT_TRUE(sim->ApplyMigLayout(0, {}).ok());
  EXPECT_TRUE((*sim->Discover())[0].mig_instances.empty());
}

}  // namespace
}  // namespace gf
