#include "monitor/attribution.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gf {
namespace {

namespace fs = std::filesystem;

// ---- parsers ------------------------------------------------------------------------------

TEST(JobFromCgroupPathTest, FindsTheJobCgroupAnywhereInThePath) {
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/job-12"), JobId(12));
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/0a1b2c3d-job-12"), JobId(12));  // with the agent key
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/0a1b2c3d-job-12/worker"), JobId(12));
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/0a1b2c3-job-12"), std::nullopt);  // not a key
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/0A1B2C3D-job-12"), std::nullopt);
  EXPECT_EQ(JobFromCgroupPath("/system.slice/ctr/gpufleet/job-7/worker"), JobId(7));
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/job-x/gpufleet/job-3"), JobId(3));
}

TEST(JobFromCgroupPathTest, RejectsWhatIsNotAJobCgroup) {
  EXPECT_EQ(JobFromCgroupPath("/user.slice/user-1000.slice"), std::nullopt);
  EXPECT_EQ(JobFromCgroupPath("/gpufleet"), std::nullopt);
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/job-"), std::nullopt);
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/job-0"), std::nullopt);    // 0 never names a job
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/job-12x"), std::nullopt);  // not a number
  EXPECT_EQ(JobFromCgroupPath("/gpufleet/job--4"), std::nullopt);
  EXPECT_EQ(JobFromCgroupPath("/notgpufleet/job-3"), std::nullopt);  // another component
}

TEST(CgroupV2PathTest, TakesTheUnifiedLine) {
  EXPECT_EQ(CgroupV2Path("0::/gpufleet/job-4\n"), "/gpufleet/job-4");
  // Hybrid host: v1 controllers first, then the unified hierarchy.
  EXPECT_EQ(CgroupV2Path("12:memory:/docker/abc\n3:cpu:/\n0::/gpufleet/job-9\n"),
            "/gpufleet/job-9");
  EXPECT_EQ(CgroupV2Path("12:memory:/docker/abc\n3:cpu:/\n"), std::nullopt);  // v1 only
}

TEST(RealUidFromStatusTest, TakesTheRealNotTheEffectiveUid) {
  // A setuid program: real 1000, effective 0.
  EXPECT_EQ(RealUidFromStatus("Name:\tsu\nPid:\t5\nUid:\t1000\t0\t0\t0\nGid:\t1000\t0\t0\t0\n"),
            1000u);
  EXPECT_EQ(RealUidFromStatus("Name:\tx\nGid:\t1\t1\t1\t1\n"), std::nullopt);
  EXPECT_EQ(RealUidFromStatus("Uid:\tabc\t0\t0\t0\n"), std::nullopt);
}

TEST(ParentPidFromStatTest, SkipsACommandNameWithParenthesesAndSpaces) {
  EXPECT_EQ(ParentPidFromStat("42 (python) S 17 42 42 0 -1"), 17);
  EXPECT_EQ(ParentPidFromStat("42 (a) b (c) R 99 42 42 0 -1"), 99);
  EXPECT_EQ(ParentPidFromStat("42 (truncated"), std::nullopt);
  EXPECT_EQ(ParentPidFromStat("42 (x) S"), std::nullopt);
}

TEST(CpuTimeFromStatTest, AddsUserAndSystemTimeAndKeepsTheStartTime) {
  // Fields 14 (utime) 150, 15 (stime) 50, 22 (starttime) 9876.
  const std::string stat =
      "42 (a) b) S 1 42 42 0 -1 4194304 0 0 0 0 150 50 0 0 20 0 1 0 9876 0 0\n";
  EXPECT_EQ(CpuTimeFromStat(stat), (ProcessCpuTime{.ticks = 200, .start_ticks = 9876}));
  EXPECT_EQ(CpuTimeFromStat("42 (a) S 1 42 42 0 -1 4194304 0 0 0 0 150"), std::nullopt);
  EXPECT_EQ(CpuTimeFromStat("42 (a) S 1 42 42 0 -1 4194304 0 0 0 0 x 50 0 0 20 0 1 0 9 0"),
            std::nullopt);
}

TEST(ResidentMibFromStatusTest, ReadsVmRssInKib) {
  EXPECT_EQ(ResidentMibFromStatus("Name:\tpython\nVmRSS:\t  2098176 kB\nThreads:\t4\n"), 2049);
  EXPECT_EQ(ResidentMibFromStatus("Name:\tkworker\nThreads:\t1\n"), std::nullopt);
}

TEST(CommandFromCmdlineTest, JoinsArgumentsAndCutsAtACharacterBoundary) {
  using namespace std::string_literals;
  EXPECT_EQ(CommandFromCmdline("python\0train.py\0--lr\0003e-4\0"s), "python train.py --lr 3e-4");
  EXPECT_EQ(CommandFromCmdline(""), "");
  // 255 ASCII bytes then a 2-byte character: the cut at 256 would split it, so it goes.
  const std::string long_line = std::string(255, 'x') + "\xc3\xa9" + "tail";
  EXPECT_EQ(CommandFromCmdline(long_line), std::string(255, 'x'));
  EXPECT_EQ(CommandFromCmdline(std::string(300, 'y')).size(), kProcessCommandMaxBytes);
}

// ---- a fake /proc -------------------------------------------------------------------------

struct FakeProcess {
  std::int64_t pid = 0;
  std::int64_t ppid = 1;
  std::uint32_t uid = 0;
  std::string cgroup_path = "/user.slice";
  std::uint64_t cpu_ticks = 0;  // utime (stime stays 0)
  std::int64_t rss_kib = 4096;
  std::string cmdline = std::string("prog\0--flag\0", 12);
  std::string environ{};    // NUL-separated
  std::string cgroup_v1{};  // lines before the "0::" line (a hybrid host)
};

class FakeProcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gf-fakeproc.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  void Add(const FakeProcess& p) const {
    fs::path dir = root_ / std::to_string(p.pid);
    fs::create_directories(dir);
    // The command name holds ") " on purpose: the stat parser must not be fooled by it.
    std::ofstream(dir / "stat") << p.pid << " (my) prog) S " << p.ppid << " " << p.pid << " "
                                << p.pid << " 0 -1 4194304 0 0 0 0 " << p.cpu_ticks
                                << " 0 0 0 20 0 1 0 12345 0 0\n";
    std::ofstream(dir / "status") << "Name:\tprog\nState:\tS (sleeping)\nPid:\t" << p.pid
                                  << "\nPPid:\t" << p.ppid << "\nUid:\t" << p.uid << "\t" << p.uid
                                  << "\t" << p.uid << "\t" << p.uid << "\nVmRSS:\t" << p.rss_kib
                                  << " kB\n";
    std::ofstream(dir / "cmdline") << p.cmdline;
    std::ofstream(dir / "cgroup") << p.cgroup_v1 << "0::" << p.cgroup_path << "\n";
    std::ofstream(dir / "environ") << p.environ;
  }

  static GpuSample SampleWith(const std::vector<std::uint32_t>& pids) {
    GpuSample s;
    s.uuid = GpuUuid("GPU-0");
    for (std::uint32_t pid : pids) {
      GpuProcessSample p;
      p.pid = pid;
      p.used_memory_mib = 1000;
      s.processes.push_back(p);
    }
    return s;
  }

  fs::path root_;
};

TEST_F(FakeProcTest, CgroupNamesTheJobWithoutAnyLiveShim) {
  Add({.pid = 500, .ppid = 1, .uid = 0, .cgroup_path = "/gpufleet/job-5"});
  ProcessAttributor attributor(root_);
  GpuProcessSample p = attributor.AttributePid(500, {});
  EXPECT_EQ(p.job, JobId(5));
  EXPECT_EQ(p.uid, 0u);
  EXPECT_EQ(p.user, "root");
  EXPECT_FALSE(p.unmanaged);
}

// Companion mode: Slurm's cgroup (v1 and v2 layouts) or, where Slurm uses none, SLURM_JOB_ID;
// gpufleet's own cgroups and shims count for nothing there.
TEST_F(FakeProcTest, InSlurmModeProcessesBelongToSlurmJobs) {
  using namespace std::string_literals;
  Add({.pid = 500,
       .uid = 1000,
       .cgroup_path = "/system.slice/slurmstepd.scope/job_41/step_0/user"});
  Add({.pid = 501,
       .uid = 1000,
       .cgroup_path = "/",
       .cgroup_v1 = "7:memory:/slurm/uid_1000/job_42/step_batch/task_0\n"});
  Add({.pid = 502,
       .uid = 1001,
       .cgroup_path = "/user.slice",
       .environ = "A=1\0SLURM_JOB_ID=43\0"s});
  // The cgroup wins over an environment that names another job.
  Add({.pid = 503,
       .uid = 1001,
       .cgroup_path = "/system.slice/slurmstepd.scope/job_44/step_0",
       .environ = "SLURM_JOB_ID=1\0"s});
  Add({.pid = 504, .uid = 1002, .cgroup_path = "/gpufleet/job-5"});
  // A task on the second node of a multi-node job: that node's share (slurm_jobs.h).
  Add({.pid = 505,
       .uid = 1001,
       .cgroup_path = "/system.slice/slurmstepd.scope/job_45/step_0",
       .environ = "SLURM_JOB_ID=45\0SLURM_NODEID=1\0"s});
  ProcessAttributor attributor(root_, JobSource::kSlurm);
  std::vector<GpuSample> samples{SampleWith({500, 501, 502, 503, 504, 505})};
  attributor.Attribute(samples, std::vector<LiveJob>{{JobId(5), 1}});
  const auto& p = samples[0].processes;
  EXPECT_EQ(p[0].job, JobId(41));
  EXPECT_EQ(p[1].job, JobId(42));
  EXPECT_EQ(p[2].job, JobId(43));
  EXPECT_EQ(p[3].job, JobId(44));
  EXPECT_EQ(p[4].job, std::nullopt);
  EXPECT_TRUE(p[4].unmanaged);
  EXPECT_EQ(p[5].job, JobId(100'000'045));
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(p[i].unmanaged) << i;
  }
  EXPECT_EQ(p[2].uid, 1001U);
}

// Kubernetes mode (issue #27): a process is its pod's on a GPU its container holds; on another
// GPU it runs outside its allocation (no job, unmanaged, pod named); in no container it is
// unmanaged; without a reading of the kubelet its owner is unknown.
TEST_F(FakeProcTest, InKubernetesModeProcessesBelongToThePodWhoseContainerHoldsTheirGpu) {
  const std::string uid = "0f2c9a4e-1b7d-4c3a-9e8f-5a6b7c8d9e01";
  const std::string trainer(64, 'a');
  const std::string sidecar(64, 'b');
  const std::string pod_cgroup =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f2c9a4e_1b7d_4c3a_9e8f_"
      "5a6b7c8d9e01.slice/";
  Add({.pid = 600,
       .uid = 1000,
       .cgroup_path = pod_cgroup + "cri-containerd-" + trainer + ".scope"});
  Add({.pid = 601,
       .uid = 1000,
       .cgroup_path = pod_cgroup + "cri-containerd-" + sidecar + ".scope"});
  Add({.pid = 602, .uid = 0, .cgroup_path = "/user.slice/user-0.slice/session-1.scope"});
  KubeNodeView view;
  view.logs.pods_by_uid[uid] =
      KubePodLog{.pod_namespace = "ml", .pod_name = "train-0", .pod_uid = uid};
  view.logs.containers_by_id[trainer] = KubeContainerLog{.pod_namespace = "ml",
                                                         .pod_name = "train-0",
                                                         .container = "trainer",
                                                         .container_id = trainer};
  view.logs.containers_by_id[sidecar] = KubeContainerLog{
      .pod_namespace = "ml", .pod_name = "train-0", .container = "logs", .container_id = sidecar};
  view.holders = {KubeContainerGpus{
      .pod_namespace = "ml",
      .pod_name = "train-0",
      .container = "trainer",
      .gpus = {KubeGpu{.resource = "nvidia.com/gpu", .device_id = "GPU-0", .gpu = "GPU-0"}}}};

  ProcessAttributor attributor(root_, JobSource::kKubernetes);
  attributor.SetKubeView(view);
  std::vector<GpuSample> samples{SampleWith({600, 601, 602}), SampleWith({600})};
  samples[1].uuid = GpuUuid("GPU-1");  // not the trainer's
  attributor.Attribute(samples, {});
  const auto& on0 = samples[0].processes;
  // 0x0f2c9a4e1b7d: the UID's first 12 hex digits (decision 0014).
  EXPECT_EQ(on0[0].job, JobId(16684241787773));
  EXPECT_FALSE(on0[0].unmanaged);
  EXPECT_EQ(on0[0].pod, "ml/train-0");
  EXPECT_EQ(on0[0].container, "trainer");
  // The sidecar's process on the trainer's GPU is not counted to the pod.
  EXPECT_EQ(on0[1].job, std::nullopt);
  EXPECT_TRUE(on0[1].unmanaged);
  EXPECT_EQ(on0[1].pod, "ml/train-0");
  EXPECT_EQ(on0[1].container, "logs");
  EXPECT_EQ(on0[2].job, std::nullopt);
  EXPECT_TRUE(on0[2].unmanaged);
  EXPECT_EQ(on0[2].pod, "");
  EXPECT_EQ(on0[2].user, "root");
  // The trainer's process on a GPU its container does not hold: outside its allocation.
  const auto& on1 = samples[1].processes;
  EXPECT_EQ(on1[0].job, std::nullopt);
  EXPECT_TRUE(on1[0].unmanaged);
  EXPECT_EQ(on1[0].pod, "ml/train-0");

  // MIG: NVML reports a MIG device's process on its parent GPU, with the device's UUID; the
  // container holds that device (pod-resources names it), not another one of the same GPU.
  view.holders[0].gpus = {
      KubeGpu{.resource = "nvidia.com/mig-1g.10gb", .device_id = "MIG-a", .gpu = "MIG-a"}};
  attributor.SetKubeView(view);
  Add({.pid = 603,
       .uid = 1000,
       .cgroup_path = pod_cgroup + "cri-containerd-" + trainer + ".scope"});
  std::vector<GpuSample> mig{SampleWith({600, 603})};
  mig[0].uuid = GpuUuid("GPU-7");
  mig[0].processes[0].mig_uuid = GpuUuid("MIG-a");
  mig[0].processes[1].mig_uuid = GpuUuid("MIG-b");  // the same GPU's other device
  attributor.Attribute(mig, {});
  EXPECT_EQ(mig[0].processes[0].job, JobId(16684241787773));
  EXPECT_FALSE(mig[0].processes[0].unmanaged);
  EXPECT_EQ(mig[0].processes[1].job, std::nullopt);
  EXPECT_TRUE(mig[0].processes[1].unmanaged);
  EXPECT_EQ(mig[0].processes[1].pod, "ml/train-0");

  // The kubelet did not answer: no pod for anyone, and nobody called unmanaged.
  attributor.SetKubeView(std::nullopt);
  std::vector<GpuSample> blind{SampleWith({600, 602})};
  attributor.Attribute(blind, {});
  for (const GpuProcessSample& p : blind[0].processes) {
    EXPECT_EQ(p.job, std::nullopt) << p.pid;
    EXPECT_FALSE(p.unmanaged) << p.pid;
    EXPECT_EQ(p.pod, "") << p.pid;
  }
  EXPECT_EQ(blind[0].processes[0].uid, 1000U);
}

TEST(JobSourceNameTest, NamesRoundTripAndUnknownNamesAreNone) {
  for (const JobSource s : {JobSource::kGpufleet, JobSource::kSlurm, JobSource::kKubernetes}) {
    EXPECT_EQ(JobSourceOfName(JobSourceName(s)), s);
  }
  EXPECT_EQ(JobSourceName(JobSource::kKubernetes), "kubernetes");
  EXPECT_EQ(JobSourceOfName("nomad"), std::nullopt);
}

TEST_F(FakeProcTest, ParentChainReachesTheShimOfALiveJob) {
  // shim 100 → job 101 → child 102 (setsid'd: still 101's child); 103 an orphan the shim
  // adopted as subreaper; 200 a process of someone's shell; shim 300 of another job.
  Add({.pid = 100, .ppid = 1, .uid = 0});
  Add({.pid = 101, .ppid = 100, .uid = 1000});
  Add({.pid = 102, .ppid = 101, .uid = 1000});
  Add({.pid = 103, .ppid = 100, .uid = 1000});
  Add({.pid = 150, .ppid = 1, .uid = 0});
  Add({.pid = 200, .ppid = 150, .uid = 1000});
  Add({.pid = 300, .ppid = 1, .uid = 0});
  Add({.pid = 301, .ppid = 300, .uid = 1001});
  const std::vector<LiveJob> live{{JobId(7), 100}, {JobId(8), 300}};
  ProcessAttributor attributor(root_);
  std::vector<GpuSample> samples{SampleWith({101, 102, 103, 200}), SampleWith({301})};
  attributor.Attribute(samples, live);

  for (const GpuProcessSample& p :
       std::vector(samples[0].processes.begin(), samples[0].processes.begin() + 3)) {
    EXPECT_EQ(p.job, JobId(7)) << "pid " << p.pid;
    EXPECT_FALSE(p.unmanaged) << "pid " << p.pid;
    EXPECT_EQ(p.uid, 1000u) << "pid " << p.pid;
  }
  const GpuProcessSample& stranger = samples[0].processes[3];
  EXPECT_EQ(stranger.job, std::nullopt);
  EXPECT_TRUE(stranger.unmanaged);
  EXPECT_EQ(stranger.uid, 1000u);
  EXPECT_EQ(samples[1].processes[0].job, JobId(8));
  EXPECT_EQ(samples[1].processes[0].uid, 1001u);
}

TEST_F(FakeProcTest, WithoutLiveJobsAProcessOutsideAJobCgroupIsUnmanaged) {
  Add({.pid = 100, .ppid = 1, .uid = 0});
  Add({.pid = 101, .ppid = 100, .uid = 1000});
  ProcessAttributor attributor(root_);
  GpuProcessSample p = attributor.AttributePid(101, {});
  EXPECT_EQ(p.job, std::nullopt);
  EXPECT_TRUE(p.unmanaged);
}

TEST_F(FakeProcTest, VanishedProcessIsKeptWithAnUnknownOwner) {
  Add({.pid = 100, .ppid = 1, .uid = 0});
  ProcessAttributor attributor(root_);
  std::vector<GpuSample> samples{SampleWith({4242})};  // no /proc/4242: it exited
  attributor.Attribute(samples, std::vector<LiveJob>{{JobId(1), 100}});
  ASSERT_EQ(samples[0].processes.size(), 1u);
  const GpuProcessSample& p = samples[0].processes[0];
  EXPECT_EQ(p.pid, 4242u);
  EXPECT_EQ(p.used_memory_mib, 1000);  // what the driver said stays
  EXPECT_EQ(p.job, std::nullopt);
  EXPECT_EQ(p.uid, std::nullopt);
  EXPECT_EQ(p.user, "");
  EXPECT_FALSE(p.unmanaged);  // nothing says gpufleet did not start it
}

TEST_F(FakeProcTest, ProcessOnSeveralGpusIsAttributedOnEach) {
  Add({.pid = 600, .ppid = 1, .uid = 0, .cgroup_path = "/gpufleet/job-6"});
  ProcessAttributor attributor(root_);
  std::vector<GpuSample> samples{SampleWith({600}), SampleWith({600})};
  attributor.Attribute(samples, {});
  EXPECT_EQ(samples[0].processes[0].job, JobId(6));
  EXPECT_EQ(samples[1].processes[0].job, JobId(6));
  EXPECT_EQ(samples[1].processes[0].user, "root");
}

TEST_F(FakeProcTest, UidWithoutAnAccountIsNamedByNumber) {
  constexpr std::uint32_t kNoAccount = 3'999'999'999u;
  ASSERT_EQ(::getpwuid(kNoAccount), nullptr)  // NOLINT(concurrency-mt-unsafe): one thread
      << "this host has an account for the test uid";
  Add({.pid = 700, .ppid = 1, .uid = kNoAccount});
  ProcessAttributor attributor(root_);
  GpuProcessSample p = attributor.AttributePid(700, {});
  EXPECT_EQ(p.uid, kNoAccount);
  EXPECT_EQ(p.user, "uid3999999999");
  EXPECT_TRUE(p.unmanaged);
}

TEST_F(FakeProcTest, ParentLoopInACorruptTreeEnds) {
  Add({.pid = 800, .ppid = 801, .uid = 0});
  Add({.pid = 801, .ppid = 800, .uid = 0});
  ProcessAttributor attributor(root_);
  GpuProcessSample p = attributor.AttributePid(800, std::vector<LiveJob>{{JobId(1), 5}});
  EXPECT_EQ(p.job, std::nullopt);
  EXPECT_TRUE(p.unmanaged);
}

// ---- the real /proc -----------------------------------------------------------------------

// This test process plays the shim: it forks a child, which forks a grandchild; both pause.
TEST(RealProcTest, RealGrandchildIsFoundThroughItsParents) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::pause();
      ::_exit(0);
    }
    (void)!::write(fds[1], &grandchild, sizeof grandchild);
    ::pause();
    ::_exit(0);
  }
  pid_t grandchild = 0;
  ASSERT_EQ(::read(fds[0], &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));
  ::close(fds[0]);
  ::close(fds[1]);

  ProcessAttributor attributor;
  const std::vector<LiveJob> live{{JobId(31), ::getpid()}};
  GpuProcessSample p = attributor.AttributePid(static_cast<std::uint32_t>(grandchild), live);
  EXPECT_EQ(p.job, JobId(31));
  EXPECT_FALSE(p.unmanaged);
  EXPECT_EQ(p.uid, ::getuid());
  const passwd* me = ::getpwuid(::getuid());  // NOLINT(concurrency-mt-unsafe): one thread
  EXPECT_EQ(p.user, me != nullptr ? std::string(me->pw_name) : "uid" + std::to_string(::getuid()));

  // Another job's shim: the same process is not ours to claim.
  GpuProcessSample other = attributor.AttributePid(static_cast<std::uint32_t>(grandchild),
                                                   std::vector<LiveJob>{{JobId(32), 1}});
  EXPECT_NE(other.job, JobId(32));

  ::kill(grandchild, SIGKILL);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_F(FakeProcTest, HostUseIsCpuTimeSinceTheLastSampleResidentMemoryAndCommand) {
  Add({.pid = 900, .uid = 0, .cpu_ticks = 1000, .rss_kib = std::int64_t{3} * 1024 * 1024});
  ProcessAttributor attributor(root_);
  const auto t0 = std::chrono::steady_clock::time_point(std::chrono::seconds(100));
  std::vector<GpuSample> samples{SampleWith({900})};
  attributor.Attribute(samples, {}, t0);
  const GpuProcessSample& first = samples[0].processes[0];
  EXPECT_EQ(first.cpu_pct, std::nullopt);  // nothing to compare with yet
  EXPECT_EQ(first.host_memory_mib, 3072);
  EXPECT_EQ(first.command, "prog --flag");

  // Two seconds later the process has used 3 s of CPU: 150 % of one core.
  const double tps = static_cast<double>(::sysconf(_SC_CLK_TCK));
  Add({.pid = 900, .uid = 0, .cpu_ticks = 1000 + static_cast<std::uint64_t>(3 * tps)});
  samples = {SampleWith({900})};
  attributor.Attribute(samples, {}, t0 + std::chrono::seconds(2));
  ASSERT_TRUE(samples[0].processes[0].cpu_pct.has_value());
  EXPECT_NEAR(*samples[0].processes[0].cpu_pct, 150.0, 1e-9);

  // The pid leaves the GPUs and comes back: no stale mark, so no figure on its first sample.
  samples = {SampleWith({})};
  attributor.Attribute(samples, {}, t0 + std::chrono::seconds(3));
  samples = {SampleWith({900})};
  attributor.Attribute(samples, {}, t0 + std::chrono::seconds(4));
  EXPECT_EQ(samples[0].processes[0].cpu_pct, std::nullopt);
}

}  // namespace
}  // namespace gf
