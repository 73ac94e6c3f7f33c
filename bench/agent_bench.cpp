// gf_agent_bench: what the node agent costs on an 8-GPU node sampled once a second: CPU share
// of one core and peak resident memory. How to build and run it: bench/README.md.
//
// It runs the real LocalAgent, in this process, over the real NVML backend loaded from the
// stand-in libnvidia-ml.so.1 (tests/fakenvml) and a real Executor (the gpufleet binary as
// shim). One job per GPU is launched through the agent (`sleep`, its pid on that GPU in the
// scenario) plus one stray process per GPU that gpufleet did not start, so every round does
// the whole pipeline: every counter of every GPU, process attribution through /proc, health
// (one GPU has a recent XID, one a HW slowdown). The reports go to a sink that only counts.
// After a warm-up round that must attribute every process correctly, the agent runs for
// --seconds; CPU is getrusage(user+sys) over wall time for that window, RSS is ru_maxrss.
// --slurm and --kubernetes measure the companion agents instead (Options below).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/local_agent.h"
#include "executor/cgroup.h"
#include "executor/executor.h"
#include "gpu/gpu_backend.h"

#include "bench_support.h"
#include "kube/pod_resources_client.h"

namespace gf::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

// High job ids, so the jobs' cgroups (<root>/gpufleet/job-<id>, on hosts where the bench may
// create them) do not meet those of tests running beside it.
constexpr std::int64_t kFirstJobId = 1'000'000'001;
constexpr std::uint64_t kHwSlowdown = 0x8;

struct Options {
  int seconds = 30;
  int gpus = 8;
  int interval_ms = 1000;
  std::string nvml;
  std::string gpufleet = GF_GPUFLEET_PATH;
  bool no_cgroups = false;  // jobs outside cgroups: attribution walks parent chains
  // The Slurm companion agent (`gpufleet agent --slurm`): the jobs' processes are Slurm's,
  // started by the bench with SLURM_JOB_ID in their environment (a site without cgroups: the
  // attributor reads each process's environ), none through the executor.
  bool slurm = false;
  // The Kubernetes agent (`gpufleet agent --kubernetes`): one pod per GPU, each with one process
  // on it, as the stand-in kubelet (tests/fakekubelet, --fakekubelet) lists them; the node's
  // /proc (each process's cgroup in a kubelet's layout) and the kubelet's log names synthetic,
  // under the bench's temp dir. Every round asks the kubelet over gRPC, as the agent does.
  bool kubernetes = false;
#ifdef GF_FAKEKUBELET_PATH
  std::string fakekubelet = GF_FAKEKUBELET_PATH;
#else
  std::string fakekubelet;
#endif
};

// Discards the reports, keeping only what the bench checks and prints.
class CountingReports final : public AgentReports {
 public:
  void OnAgentHello(AgentHello) override {}
  void OnAgentHeartbeat(const NodeId&) override {}
  void OnJobStarted(JobId job, std::int64_t, Time) override {
    std::lock_guard lock(mu_);
    started_.insert(job);
  }
  void OnJobExited(JobExitReport report) override {
    std::lock_guard lock(mu_);
    exited_.insert(report.job);
  }
  void OnSamples(NodeId, std::vector<GpuSample> samples) override {
    RoundSummary r;
    for (const GpuSample& s : samples) {
      r.gpus += 1;
      r.not_ok += s.health == GpuHealth::kOk ? 0 : 1;
      for (const GpuProcessSample& p : s.processes) {
        r.in_jobs += p.job ? 1 : 0;
        r.unmanaged += p.unmanaged ? 1 : 0;
      }
    }
    std::lock_guard lock(mu_);
    last_ = r;
    ++rounds_;
  }

  struct RoundSummary {
    int gpus = 0;
    int in_jobs = 0;    // processes attributed to a job
    int unmanaged = 0;  // processes gpufleet did not start
    int not_ok = 0;     // GPUs degraded or failed
  };
  std::int64_t Rounds() {
    std::lock_guard lock(mu_);
    return rounds_;
  }
  RoundSummary Last() {
    std::lock_guard lock(mu_);
    return last_;
  }
  bool Started(JobId job) {
    std::lock_guard lock(mu_);
    return started_.count(job) > 0;
  }
  std::size_t ExitCount() {
    std::lock_guard lock(mu_);
    return exited_.size();
  }

 private:
  std::mutex mu_;
  std::set<JobId> started_;
  std::set<JobId> exited_;
  RoundSummary last_;
  std::int64_t rounds_ = 0;
};

// What the stand-in driver reports. `pids[i]`: the processes on GPU i (none before the jobs
// run).
// The UUID of the scenario's GPU `index`.
std::string BenchGpuUuid(int index) {
  std::array<char, 64> uuid{};
  std::snprintf(uuid.data(), uuid.size(), "GPU-bench000-0000-4000-8000-%012d", index);
  return uuid.data();
}

json Scenario(int gpus, const std::vector<std::vector<std::uint32_t>>& pids) {
  json devices = json::array();
  for (int i = 0; i < gpus; ++i) {
    json d = {{"name", "NVIDIA H100 80GB HBM3"},
              {"uuid", BenchGpuUuid(i)},
              {"memory_total_mib", 81559},
              {"memory_used_mib", 40960},
              {"util_gpu", 93},
              {"util_memory", 41},
              {"temperature_c", 66},
              {"memory_temperature_c", 71},
              {"power_mw", 612000},
              {"power_limit_mw", 700000},
              {"energy_mj", 123456789},
              {"sm_clock_mhz", 1980},
              {"mem_clock_mhz", 2619},
              {"pcie_tx_kbps", 12000},
              {"pcie_rx_kbps", 34000},
              {"pstate", 0},
              {"ecc", {{"volatile_corrected", 2}, {"aggregate_corrected", 17}}},
              {"remapped_rows", {{"correctable", 1}}}};
    if (i == 1) {
      d["xid_events"] = json::array({{{"xid", 119}, {"seq", 1}}});  // degraded for 10 min
    }
    d["throttle_reasons"] = i == 2 ? kHwSlowdown : 0;
    json processes = json::array();
    for (std::uint32_t pid :
         pids.empty() ? std::vector<std::uint32_t>{} : pids[static_cast<std::size_t>(i)]) {
      processes.push_back({{"pid", pid}, {"used_memory_mib", 20000}, {"sm_util", 45}});
    }
    d["processes"] = processes;
    devices.push_back(d);
  }
  return {{"driver_version", "550.54.15"}, {"devices", devices}};
}

// Replaces the scenario file at once (the stand-in re-reads it when its inode changes).
Status WriteScenario(const fs::path& path, const json& scenario) {
  fs::path tmp = path;
  tmp += ".tmp";
  std::ofstream(tmp) << scenario.dump(1);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  return ec ? IoError("cannot write " + path.string() + ": " + ec.message()) : OkStatus();
}

// Polls `done` every 10 ms until it holds, the budget runs out or Ctrl-C.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds budget) {
  Deadline deadline(budget);
  while (!done()) {
    if (deadline.Expired()) {
      return false;
    }
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

double CpuSeconds(const rusage& r) {
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(r.ru_utime) + secs(r.ru_stime);
}

// Everything the bench starts, ended in the destructor whatever happened: the jobs (through
// the agent), the agent, the stray processes, the temp dir.
class Run {
 public:
  explicit Run(const Options& options) : options_(options) {}
  ~Run() { Cleanup(); }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  Status Setup();
  Status Measure();
  void Print() const;

 private:
  Status StartJobs();
  Status StartSlurmJobs();
  Status StartPods();
  void StartStrays();
  void Cleanup();

  const Options& options_;
  SystemClock clock_;
  fs::path dir_;
  std::unique_ptr<GpuBackend> backend_;
  std::unique_ptr<Executor> executor_;
  CountingReports reports_;
  std::unique_ptr<LocalAgent> agent_;
  std::vector<std::uint32_t> job_pids_;
  std::vector<pid_t> slurm_jobs_;  // --slurm: the Slurm jobs' processes (children of the bench)
  pid_t kubelet_ = -1;             // --kubernetes: the stand-in kubelet
  std::unique_ptr<PodResourcesClient> pod_resources_;
  std::vector<pid_t> strays_;
  // Results.
  double cpu_pct_ = 0;
  double wall_s_ = 0;
  std::int64_t rounds_ = 0;
  std::int64_t peak_rss_kib_ = 0;
  CountingReports::RoundSummary last_{};
};

Status Run::Setup() {
  std::string tmpl = (fs::temp_directory_path() / "gf-agent-bench.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return IoError("cannot create a temp dir: " + ErrnoText(errno));
  }
  dir_ = tmpl;
  fs::path scenario = dir_ / "scenario.json";
  GF_TRY(WriteScenario(scenario, Scenario(options_.gpus, {})));
  ::setenv("GF_FAKENVML_SCENARIO", scenario.c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  GF_ASSIGN_OR_RETURN(backend_, MakeGpuBackend("nvml:" + options_.nvml, clock_));
  executor_ = std::make_unique<Executor>(dir_ / "run", options_.gpufleet, clock_);
  if (options_.no_cgroups) {
    executor_->SetCgroupRoot("");
  }
  LocalAgentOptions agent_options;
  agent_options.name = NodeId("bench-node");
  agent_options.sample_interval = Millis(options_.interval_ms);
  agent_options.jobs_from = options_.slurm        ? JobSource::kSlurm
                            : options_.kubernetes ? JobSource::kKubernetes
                                                  : JobSource::kGpufleet;
  if (options_.kubernetes) {
    GF_TRY(StartPods());
    agent_options.proc_root = dir_ / "proc";
    agent_options.kubelet_log_root = dir_ / "log";
    agent_options.list_pod_gpus = [this] {
      return pod_resources_->List(std::chrono::milliseconds(500));  // as the agent's command
    };
  }
  agent_ = std::make_unique<LocalAgent>(agent_options, *backend_, *executor_, reports_, clock_);
  GF_TRY(agent_->Start());
  if (!options_.kubernetes) {
    GF_TRY(options_.slurm ? StartSlurmJobs() : StartJobs());
    StartStrays();
  }
  std::vector<std::vector<std::uint32_t>> pids(static_cast<std::size_t>(options_.gpus));
  for (std::size_t i = 0; i < pids.size(); ++i) {
    pids[i] = {job_pids_[i], static_cast<std::uint32_t>(strays_[i])};
  }
  GF_TRY(WriteScenario(scenario, Scenario(options_.gpus, pids)));
  // Warm-up: a round after the change must see every process, attributed correctly.
  const std::int64_t before = reports_.Rounds();
  bool attributed = WaitFor(
      [&] {
        CountingReports::RoundSummary r = reports_.Last();
        return reports_.Rounds() > before + 1 && r.in_jobs == options_.gpus &&
               r.unmanaged == options_.gpus;
      },
      std::chrono::milliseconds(10 * options_.interval_ms + 10'000));
  if (!attributed) {
    CountingReports::RoundSummary r = reports_.Last();
    return Internal("attribution is wrong: last round had " + std::to_string(r.in_jobs) +
                    " processes in jobs and " + std::to_string(r.unmanaged) +
                    " unmanaged; expected " + std::to_string(options_.gpus) + " of each");
  }
  return OkStatus();
}

// One `sleep` job per GPU; each writes its pid (the sleep's, after exec) to a file.
Status Run::StartJobs() {
  for (int i = 0; i < options_.gpus; ++i) {
    Job job;
    job.id = JobId(kFirstJobId + i);
    job.owner = Owner{::geteuid(), ::getegid(), "bench"};
    job.spec.argv = {"sh", "-c", "echo $$ > pid-" + std::to_string(i) + "; exec sleep 100000"};
    job.spec.workdir = dir_.string();
    agent_->Launch(job);
    fs::path pid_file = dir_ / ("pid-" + std::to_string(i));
    std::uint32_t pid = 0;
    if (!WaitFor([&] { return reports_.Started(job.id) && (std::ifstream(pid_file) >> pid); },
                 20s)) {
      return Unavailable("job " + std::to_string(i) + " did not start within 20 s (is " +
                         options_.gpufleet + " the gpufleet binary? pass --gpufleet)");
    }
    job_pids_.push_back(pid);
  }
  return OkStatus();
}

// One process per GPU as slurmstepd would leave it for the agent to find: SLURM_JOB_ID in its
// initial environment (exec'd with it), in no Slurm cgroup.
Status Run::StartSlurmJobs() {
  for (int i = 0; i < options_.gpus; ++i) {
    const std::string id = "SLURM_JOB_ID=" + std::to_string(kFirstJobId + i);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execle("/bin/sleep",
               "sleep",
               "100000",
               static_cast<char*>(nullptr),
               std::array<const char*, 2>{id.c_str(), nullptr}.data());
      ::_exit(127);
    }
    if (pid < 0) {
      return Unavailable("fork: " + ErrnoText(errno));
    }
    slurm_jobs_.push_back(pid);
    job_pids_.push_back(static_cast<std::uint32_t>(pid));
  }
  return OkStatus();
}

// Writes `text` to `path`, its folders made.
Status WriteFile(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path);
  out << text;
  return out ? OkStatus() : IoError("cannot write " + path.string());
}

// One pod per GPU (bench/pod-N, container trainer, its GPU by the scenario's UUID) as the
// stand-in kubelet lists them, each with one process on its GPU (cgroup v2, systemd driver, as
// containerd leaves it) and one stray process in a login session; the kubelet's log names
// join container ids and pod UIDs to the pods. The pids are the synthetic /proc's, not real.
Status Run::StartPods() {
  constexpr std::uint32_t kPodPid = 40'000;
  constexpr std::uint32_t kStrayPid = 50'000;
  json pods = json::array();
  json ids = json::array();
  for (int i = 0; i < options_.gpus; ++i) {
    const std::string gpu = BenchGpuUuid(i);
    std::array<char, 40> uid{};
    std::snprintf(uid.data(), uid.size(), "%08x-0000-4000-8000-000000000000", i + 1);
    std::array<char, 72> container{};
    std::snprintf(container.data(), container.size(), "%064x", i + 1);
    const std::string name = "pod-" + std::to_string(i);
    std::string slice = uid.data();
    std::replace(slice.begin(), slice.end(), '-', '_');
    // /proc/PID/{status,cmdline,cgroup} of the process PID = base + i.
    const auto process = [&](std::uint32_t base, const std::string& cgroup) -> Status {
      const fs::path proc = dir_ / "proc" / std::to_string(base + static_cast<std::uint32_t>(i));
      GF_TRY(WriteFile(proc / "status", "Name:\tpython\nUid:\t0\t0\t0\t0\nVmRSS:\t1024 kB\n"));
      GF_TRY(WriteFile(proc / "cmdline", std::string("python\0train.py", 15)));
      return WriteFile(proc / "cgroup", cgroup + "\n");
    };
    GF_TRY(process(kPodPid,
                   "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + slice +
                       ".slice/cri-containerd-" + container.data() + ".scope"));
    GF_TRY(process(kStrayPid, "0::/user.slice/user-0.slice/session-3.scope"));
    GF_TRY(WriteFile(dir_ / "log" / "pods" / ("bench_" + name + "_" + uid.data()) / ".keep", ""));
    GF_TRY(WriteFile(
        dir_ / "log" / "containers" / (name + "_bench_trainer-" + container.data() + ".log"), ""));
    pods.push_back({{"namespace", "bench"},
                    {"name", name},
                    {"containers",
                     json::array({{{"name", "trainer"},
                                   {"devices",
                                    json::array({{{"resource", "nvidia.com/gpu"},
                                                  {"ids", json::array({gpu})}}})}}})}});
    ids.push_back(gpu);
    job_pids_.push_back(kPodPid + static_cast<std::uint32_t>(i));
    strays_.push_back(static_cast<pid_t>(kStrayPid + static_cast<std::uint32_t>(i)));
  }
  const fs::path scenario = dir_ / "kubelet.json";
  GF_TRY(
      WriteFile(scenario,
                json{{"pods", pods},
                     {"allocatable", json::array({{{"resource", "nvidia.com/gpu"}, {"ids", ids}}})}}
                    .dump()));
  const std::string socket = (dir_ / "kubelet.sock").string();
  kubelet_ = ::fork();
  if (kubelet_ == 0) {
    ::execl(options_.fakekubelet.c_str(),
            options_.fakekubelet.c_str(),
            "--socket",
            socket.c_str(),
            "--scenario",
            scenario.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (kubelet_ < 0) {
    return Unavailable("fork: " + ErrnoText(errno));
  }
  pod_resources_ = std::make_unique<PodResourcesClient>(socket);
  // The socket file appears before the stand-in listens on it: ask until it answers.
  if (!WaitFor([&] { return pod_resources_->List(std::chrono::seconds(1)).ok(); }, 20s)) {
    return Unavailable("the stand-in kubelet " + options_.fakekubelet + " did not answer on " +
                       socket);
  }
  return OkStatus();
}

// Processes nobody launched through gpufleet: children of the bench that wait to be killed.
void Run::StartStrays() {
  for (int i = 0; i < options_.gpus; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
    if (pid > 0) {
      strays_.push_back(pid);
    }
  }
}

Status Run::Measure() {
  rusage start{};
  ::getrusage(RUSAGE_SELF, &start);
  const auto wall_start = SteadyClock::now();
  const std::int64_t rounds_start = reports_.Rounds();
  Deadline end(std::chrono::seconds(options_.seconds));
  while (!end.Expired()) {
    std::this_thread::sleep_for(50ms);
  }
  if (Interrupted()) {
    return Unavailable("interrupted");
  }
  rusage stop{};
  ::getrusage(RUSAGE_SELF, &stop);
  wall_s_ = SecondsSince(wall_start);
  cpu_pct_ = 100.0 * (CpuSeconds(stop) - CpuSeconds(start)) / wall_s_;
  rounds_ = reports_.Rounds() - rounds_start;
  peak_rss_kib_ = stop.ru_maxrss;
  last_ = reports_.Last();
  return OkStatus();
}

void Run::Print() const {
  const double rss_mib = static_cast<double>(peak_rss_kib_) / 1024.0;
  std::printf("| measure | value | target |\n|---|---|---|\n");
  std::printf(
      "| GPUs sampled | %d every %d ms | 8 at 1 Hz |\n", options_.gpus, options_.interval_ms);
  std::printf("| rounds reported | %s in %.1f s | |\n", std::to_string(rounds_).c_str(), wall_s_);
  std::printf(
      "| processes per round | %d in jobs, %d unmanaged | |\n", last_.in_jobs, last_.unmanaged);
  const bool cgroups = !options_.no_cgroups && exec::JobCgroup::Available();
  std::printf("| jobs' processes found by | %s | |\n",
              options_.slurm        ? "SLURM_JOB_ID in /proc/PID/environ (--slurm)"
              : options_.kubernetes ? "pod cgroup + kubelet log names + pod-resources List "
                                      "(--kubernetes)"
              : cgroups             ? "their cgroup (/proc/PID/cgroup)"
                                    : "parent chain to the shim");
  std::printf("| GPUs not ok (by design: an XID, a HW slowdown) | %d | 2 |\n", last_.not_ok);
  std::printf("| agent CPU, %% of one core | %.3f %% | < 1 %% |\n", cpu_pct_);
  std::printf(
      "| CPU per round | %.2f ms | |\n",
      rounds_ > 0 ? cpu_pct_ / 100.0 * wall_s_ * 1000.0 / static_cast<double>(rounds_) : 0.0);
  std::printf("| peak RSS (ru_maxrss) | %.1f MiB | < 30 MiB |\n", rss_mib);
}

void Run::Cleanup() {
  for (pid_t pid : slurm_jobs_) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  if (agent_ && (options_.slurm || options_.kubernetes)) {
    agent_->Stop();  // it started none of the processes
  } else if (agent_) {
    for (int i = 0; i < static_cast<int>(job_pids_.size()); ++i) {
      agent_->Kill(JobId(kFirstJobId + i), 0s, "bench done", SIGTERM);
    }
    const std::size_t jobs = job_pids_.size();
    if (!WaitFor([&] { return reports_.ExitCount() >= jobs; }, 20s)) {
      std::cerr << "gf_agent_bench: some jobs did not end; see " << dir_ << "\n";
    }
    agent_->Stop();
  }
  if (kubelet_ > 0) {
    ::kill(kubelet_, SIGTERM);
    ::waitpid(kubelet_, nullptr, 0);
  }
  for (pid_t pid : options_.kubernetes ? std::vector<pid_t>{} : strays_) {  // real ones only
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

int Main(int argc, char** argv) {
  Options options;
#ifdef GF_FAKENVML_PATH
  options.nvml = GF_FAKENVML_PATH;
#endif
  CLI::App app{"gf_agent_bench: CPU and memory of the node agent sampling GPUs"};
  app.add_option("--seconds", options.seconds, "measured time")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--gpus", options.gpus, "GPUs in the scenario")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--interval-ms", options.interval_ms, "sample interval")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  app.add_option("--nvml", options.nvml, "the stand-in libnvidia-ml.so.1 (tests/fakenvml)")
      ->capture_default_str();
  app.add_option("--gpufleet", options.gpufleet, "the gpufleet binary (the jobs' shim)")
      ->capture_default_str();
  app.add_flag("--slurm",
               options.slurm,
               "the Slurm companion agent: its jobs' processes carry SLURM_JOB_ID, none is "
               "launched through the executor");
  app.add_flag("--kubernetes",
               options.kubernetes,
               "the Kubernetes agent: a pod per GPU from the stand-in kubelet, a synthetic /proc "
               "and kubelet log names");
  app.add_option("--fakekubelet", options.fakekubelet, "the stand-in kubelet (tests/fakekubelet)")
      ->capture_default_str();
  app.add_flag("--no-cgroups",
               options.no_cgroups,
               "run the jobs outside cgroups (attribution then walks parent chains)");
  CLI11_PARSE(app, argc, argv);
  if (options.nvml.empty() || ::access(options.nvml.c_str(), R_OK) != 0) {
    std::cerr << "gf_agent_bench: no stand-in NVML library at '" << options.nvml
              << "'; configure with -DGF_BUILD_TESTS=ON (builds tests/fakenvml) or pass --nvml\n";
    return 2;
  }
  if (options.kubernetes && (options.slurm || ::access(options.fakekubelet.c_str(), X_OK) != 0)) {
    std::cerr << "gf_agent_bench: --kubernetes needs the stand-in kubelet (built with the tests, "
                 "or --fakekubelet PATH; '"
              << options.fakekubelet << "' is not one) and not --slurm\n";
    return 2;
  }
  if (::access(options.gpufleet.c_str(), X_OK) != 0) {
    std::cerr << "gf_agent_bench: " << options.gpufleet
              << " is not an executable; build the gpufleet target or pass --gpufleet PATH\n";
    return 2;
  }
  InstallInterruptHandler();
  Run run(options);
  Status s = run.Setup();
  if (s.ok()) {
    std::cerr << "gf_agent_bench: warmed up; measuring for " << options.seconds << " s\n";
    s = run.Measure();
  }
  if (!s.ok()) {
    std::cerr << "gf_agent_bench: " << s.error().ToString() << "\n";
    return 1;
  }
  run.Print();
  return 0;
}

}  // namespace
}  // namespace gf::bench

int main(int argc, char** argv) {
  return gf::bench::RunMain("gf_agent_bench", [&] { return gf::bench::Main(argc, argv); });
}
