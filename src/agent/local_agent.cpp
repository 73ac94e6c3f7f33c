#include "agent/local_agent.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <tuple>

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent/log_file.h"
#include "executor/job_files.h"
#include "executor/terminal_relay.h"

namespace gf {
namespace {

JobExitReport ToReport(const JobExit& exit, const NodeId& node) {
  JobExitReport report{exit.job, exit.exit_code, exit.signal, exit.end_time, exit.cause, node};
  report.host_usage = exit.host_usage;
  for (const exec::PidRecord& p : exit.leftovers) {
    report.leftover_pids.push_back(p.pid);
  }
  return report;
}

}  // namespace

LocalAgent::LocalAgent(LocalAgentOptions options,
                       GpuBackend& backend,
                       Executor& executor,
                       AgentReports& reports,
                       const Clock& clock)
    : options_(std::move(options)),
      backend_(backend),
      executor_(executor),
      reports_(reports),
      clock_(clock),
      attributor_(options_.proc_root, options_.jobs_from),
      health_(options_.health),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (options_.power) {
    power_ = std::make_unique<PowerSaver>(*options_.power, backend_, clock_);
  }
  if (!options_.self_test.command.empty()) {
    self_test_ = std::make_unique<GpuSelfTest>(
        options_.self_test, clock_, [this](const GpuUuid& uuid) { ResetGpuHealth(uuid); });
  }
  if (options_.jobs_from == JobSource::kKubernetes) {
    kube_ = std::make_unique<KubeWatch>(options_.list_pod_gpus, options_.kubelet_log_root);
  }
  if (wake_fd_ < 0) {
    spdlog::warn("agent: eventfd: {}; queued work waits for the next fallback poll ({} ms)",
                 ErrnoText(errno),
                 options_.poll_interval.count());
  }
}

LocalAgent::~LocalAgent() {
  Stop();
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
  }
}

// Wakes the agent thread. Any thread.
void LocalAgent::Wake() {
  const std::uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_, &one, sizeof one);  // EAGAIN: already far behind, awake
  (void)ignored;
}

std::pair<int, std::int64_t> HostCapacity(int detected_cpus,
                                          std::int64_t detected_mib,
                                          const HostCapacityOptions& options) {
  const int cpus = options.cpus.value_or(detected_cpus) - options.reserve_cpus;
  const std::int64_t mib = options.memory_mib.value_or(detected_mib);
  const std::int64_t reserve =
      options.reserve_mib.value_or(std::min(mib / 10, kMaxDefaultReserveMib));
  return {std::max(cpus, 1), std::max<std::int64_t>(mib - reserve, 1)};
}

Result<Node> LocalAgent::Inventory() {
  GF_ASSIGN_OR_RETURN(gpus_, backend_.Discover());
  Node node;
  node.name = options_.name;
  node.gpus = gpus_;
  const std::int64_t bytes_per_mib = std::int64_t{1024} * 1024;
  std::tie(node.cpus, node.memory_mib) =
      HostCapacity(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)),
                   static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) *
                       static_cast<std::int64_t>(sysconf(_SC_PAGE_SIZE)) / bytes_per_mib,
                   options_.host);
  node.state = NodeState::kUp;
  node.gpu_backend = backend_.Describe();
  node.containment = executor_.DescribeContainment().mode;
  node.labels = options_.labels;
  return node;
}

Status LocalAgent::Start() {
  GF_ASSIGN_OR_RETURN(node_, Inventory());
  AgentHello hello;
  hello.node = node_;
  hello.run_dir = executor_.RunDir().string();
  hello.jobs_from = JobSourceName(options_.jobs_from);
  for (const RecoveredJob& job : executor_.Recover()) {
    if (job.still_running) {
      hello.running.push_back(job.job);
    }
  }
  // Jobs that ended while no agent watched are reported by the first Poll.
  for (const JobExit& exit : executor_.Poll()) {
    WatchLeftovers(exit);
    hello.ended.push_back(ToReport(exit, options_.name));
  }
  spdlog::info("agent {}: {} GPUs ({}), {} jobs still running, {} ended while away",
               options_.name.value(),
               hello.node.gpus.size(),
               hello.node.gpu_backend,
               hello.running.size(),
               hello.ended.size());
  if (power_) {
    power_->Start(gpus_, RecoveredGpus(hello.running));
  }
  reports_.OnAgentHello(std::move(hello));
  sample_failing_.assign(gpus_.size(), false);
  PublishLiveJobs();
  thread_ = std::thread([this] { Loop(); });
  if (options_.sample_interval.count() > 0) {
    sampler_ = std::thread([this] { SamplerLoop(); });
  }
  return OkStatus();
}

void LocalAgent::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  Wake();
  sampler_cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (sampler_.joinable()) {
    sampler_.join();
  }
  self_test_.reset();  // stops a test in progress
  // Jobs keep running across a stop, but no agent will lift a cap before the next launch.
  if (power_) {
    power_->RestoreAll();
  }
}

Result<std::vector<GpuUuid>> LocalAgent::GpusOf(JobId job) const {
  GF_ASSIGN_OR_RETURN(const std::string text,
                      exec::ReadWholeFile(executor_.JobDir(job) / exec::kSpecFile));
  GF_ASSIGN_OR_RETURN(exec::ShimSpec spec, exec::SpecFromJson(text));
  return spec.launch.gpus;
}

std::map<JobId, std::vector<GpuUuid>> LocalAgent::RecoveredGpus(
    const std::vector<JobId>& running) const {
  std::map<JobId, std::vector<GpuUuid>> gpus;
  for (const JobId& job : running) {
    Result<std::vector<GpuUuid>> held = GpusOf(job);
    if (!held.ok()) {
      spdlog::warn(
          "agent: job {}: its GPUs are unknown ({}); the power policy counts them idle "
          "unless a process shows on them",
          job.value(),
          held.error().ToString());
      continue;
    }
    gpus[job] = std::move(*held);
  }
  return gpus;
}

// Agent thread: hands the GPUs of a job that left processes it could not stop to the sampler
// thread's LeftoverWatch, which keeps them degraded until the processes are gone.
void LocalAgent::WatchLeftovers(const JobExit& exit) {
  if (exit.leftovers.empty()) {
    return;
  }
  Result<std::vector<GpuUuid>> gpus = GpusOf(exit.job);
  spdlog::warn(
      "agent: job {}: {} of its processes could not be stopped; its GPUs ({}) take no "
      "new work until they end (docs/cluster.md#process-containment)",
      exit.job.value(),
      exit.leftovers.size(),
      gpus.ok() ? std::to_string(gpus->size()) : gpus.error().ToString());
  if (!gpus.ok() || gpus->empty()) {
    return;
  }
  std::lock_guard lock(mu_);
  new_leftovers_.push_back({exit.job, std::move(*gpus), exit.leftovers});
}

void LocalAgent::Enqueue(std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    work_.push_back(std::move(work));
  }
  Wake();
}

void LocalAgent::SayHelloAgain() {
  Enqueue([this] {
    AgentHello hello;
    hello.node = node_;
    hello.run_dir = executor_.RunDir().string();
    hello.jobs_from = JobSourceName(options_.jobs_from);
    for (const auto& [job, shim_pid] : executor_.LiveShims()) {
      hello.running.push_back(job);
    }
    reports_.OnAgentHello(std::move(hello));
  });
}

void LocalAgent::Launch(const Job& job) {
  Enqueue([this, job] { DoLaunch(job); });
}

void LocalAgent::Kill(JobId job,
                      std::chrono::seconds grace,
                      const std::string& cause,
                      int first_signal) {
  Enqueue([this, job, grace, cause, first_signal] {
    Status s = executor_.Kill(job, grace, cause, first_signal);
    if (!s.ok()) {
      spdlog::warn("agent: kill of job {}: {}", job.value(), s.error().ToString());
    }
  });
}

void LocalAgent::Signal(JobId job, int sig) {
  Enqueue([this, job, sig] {
    if (Status s = executor_.Signal(job, sig); !s.ok()) {
      spdlog::warn("agent: signal {} to job {}: {}", sig, job.value(), s.error().ToString());
      return;
    }
    spdlog::info("agent: delivered signal {} to job {}", sig, job.value());
  });
}

void LocalAgent::AcknowledgeExit(JobId job) {
  Enqueue([this, job] {
    if (Status s = executor_.Acknowledge(job); !s.ok()) {
      spdlog::warn(
          "agent: acknowledging the exit of job {}: {}", job.value(), s.error().ToString());
    }
  });
}

std::string LocalAgent::LogPath(JobId job, bool stderr_stream) const {
  LogPaths paths = executor_.Logs(job);
  return (stderr_stream ? paths.stderr_path : paths.stdout_path).string();
}

Result<LogChunk> LocalAgent::ReadLog(const LogRequest& request) {
  return ReadLogFile(
      LogPath(request.job, request.stream == LogStream::kStderr), request.offset, request.limit);
}

Status LocalAgent::WriteTerminal(JobId job, const TerminalInput& input) {
  return exec::SendTerminalInput(executor_.JobDir(job), job, input);
}

void LocalAgent::ResetGpuHealth(const GpuUuid& uuid) {
  std::lock_guard lock(mu_);
  health_resets_.push_back(uuid);
}

void LocalAgent::DoLaunch(const Job& job) {
  LaunchSpec spec;
  spec.job = job.id;
  spec.owner = job.owner;
  spec.argv = job.spec.argv;
  spec.workdir = job.spec.workdir;
  spec.env = job.spec.env;
  spec.array = job.spec.array;
  spec.name = job.spec.name;
  if (job.allocation) {
    spec.gpus = job.allocation->gpus;
    spec.node = job.allocation->node.value();
    spec.cpus = job.allocation->cpus;
    spec.memory_mib = job.allocation->memory_mib;
  }
  if (power_) {
    power_->JobStarting(job.id, spec.gpus);  // a capped GPU gets its default limit back first
  }
  if (job.allocation && !job.allocation->mig.value().empty()) {
    spec.gpus = {job.allocation->mig};  // CUDA sees its MIG device only
  }
  // Returns once the shim is started; ReportStarts reports the job when it runs.
  Status started = JoinMps(spec);
  if (started.ok()) {
    started = executor_.StartLaunch(spec);
  }
  if (started.ok()) {
    return;
  }
  if (started.error().code == ErrorCode::kAlreadyExists) {
    // A launch sent again across a reconnect: the job already runs here (and was reported).
    spdlog::info("agent: job {} already runs here; launch ignored", job.id.value());
    return;
  }
  if (power_) {
    power_->JobEnded(job.id);
  }
  reports_.OnJobExited(JobExitReport{job.id,
                                     -1,
                                     std::nullopt,
                                     clock_.Now(),
                                     "failed to start: " + started.error().message,
                                     options_.name});
}

Status LocalAgent::JoinMps(LaunchSpec& spec) {
  if (!MpsDaemons::Wanted(spec.env)) {
    for (const GpuUuid& uuid : spec.gpus) {
      mps_.Leave(uuid);
    }
    return OkStatus();
  }
  if (spec.gpus.size() != 1) {
    return InvalidArgument("mps: a job under MPS holds part of one GPU; this one names " +
                           std::to_string(spec.gpus.size()));
  }
  GF_ASSIGN_OR_RETURN(EnvList env, mps_.Join(spec.gpus.front()));
  for (auto& kv : env) {
    spec.env.push_back(std::move(kv));
  }
  return OkStatus();
}

// The start time reported is the one the Executor took as the launch began, before the job's
// process existed: a short job's end can never precede it.
void LocalAgent::ReportStarts() {
  for (const StartedJob& s : executor_.PollStarts()) {
    reports_.OnJobStarted(s.job, s.shim_pid, s.launched);
  }
}

void LocalAgent::PollExits() {
  for (const JobExit& exit : executor_.Poll()) {
    if (power_) {
      power_->JobEnded(exit.job);
    }
    WatchLeftovers(exit);
    reports_.OnJobExited(ToReport(exit, options_.name));
  }
}

// The sampler thread learns which jobs run here from this list; it is small (one entry per job)
// and republished after every turn of the agent thread, so a job is attributable from the first
// round after its launch.
void LocalAgent::PublishLiveJobs() {
  std::vector<LiveJob> live;
  for (const auto& [job, shim_pid] : executor_.LiveShims()) {
    live.push_back(LiveJob{job, shim_pid});
  }
  std::lock_guard lock(mu_);
  live_jobs_ = std::move(live);
}

// One reading of every GPU. A GPU whose reading fails is left out of this round (the others are
// still reported); the failure is logged when it starts and when it ends, not every second.
std::vector<GpuSample> LocalAgent::SampleEachGpu() {
  std::vector<GpuSample> samples;
  samples.reserve(gpus_.size());
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const Gpu& gpu = gpus_[i];
    Result<GpuSample> s = backend_.Sample(gpu.index);
    const bool failing = !s.ok();
    if (failing != sample_failing_[i]) {
      if (!failing) {
        spdlog::info("agent: GPU {} ({}) answers again", gpu.index, gpu.uuid.value());
      } else {
        spdlog::warn("agent: sampling GPU {} ({}) failed: {}; its other readings go on",
                     gpu.index,
                     gpu.uuid.value(),
                     s.error().ToString());
      }
      sample_failing_[i] = failing;
    }
    if (s.ok()) {
      samples.push_back(std::move(*s));
    }
  }
  return samples;
}

int LocalAgent::IndexOf(const GpuUuid& uuid) const {
  for (const Gpu& gpu : gpus_) {
    if (gpu.uuid == uuid) {
      return gpu.index;
    }
  }
  return -1;
}

void LocalAgent::KillProcess(JobId job, std::uint32_t pid, const std::string& cause) {
  std::lock_guard lock(mu_);
  process_kills_.push_back(ProcessKill{.job = job, .pid = pid, .cause = cause});
}

void LocalAgent::KillProcesses(std::span<const LiveJob> live) {
  std::vector<ProcessKill> kills;
  {
    std::lock_guard lock(mu_);
    kills.swap(process_kills_);
  }
  for (const ProcessKill& k : kills) {
    // Only a process of that job: between the sample that showed it and now it may have ended
    // and its pid been given to another process.
    const GpuProcessSample owner = attributor_.AttributePid(k.pid, live);
    if (owner.job != k.job) {
      spdlog::info(
          "agent: not killing pid {}: it no longer belongs to job {}", k.pid, k.job.value());
      continue;
    }
    if (::kill(static_cast<pid_t>(k.pid), SIGKILL) != 0) {
      spdlog::warn(
          "agent: kill of pid {} (job {}) failed: {}", k.pid, k.job.value(), ErrnoText(errno));
      continue;
    }
    spdlog::warn("agent: killed pid {} of job {}: {}", k.pid, k.job.value(), k.cause);
  }
}

void LocalAgent::ApplyMigLayout(const GpuUuid& gpu, const std::vector<std::string>& profiles) {
  std::lock_guard lock(mu_);
  mig_layouts_.push_back(MigLayout{.gpu = gpu, .profiles = profiles});
}

void LocalAgent::KeepGpusReady(std::optional<int> gpus) {
  if (power_) {
    power_->KeepReady(gpus);
  }
}

std::vector<std::pair<GpuUuid, std::string>> LocalAgent::ApplyMigLayouts() {
  std::vector<MigLayout> layouts;
  {
    std::lock_guard lock(mu_);
    layouts.swap(mig_layouts_);
  }
  std::vector<std::pair<GpuUuid, std::string>> failures;
  for (const MigLayout& layout : layouts) {
    std::string list;
    for (const std::string& p : layout.profiles) {
      list += (list.empty() ? "" : ",") + p;
    }
    const int index = IndexOf(layout.gpu);
    const Status applied = index < 0
                               ? Status(NotFound("no GPU " + layout.gpu.value() + " on this node"))
                               : backend_.ApplyMigLayout(index, layout.profiles);
    if (!applied.ok()) {
      spdlog::warn("agent: MIG layout [{}] on GPU {} not applied: {}",
                   list,
                   layout.gpu.value(),
                   applied.error().ToString());
      failures.emplace_back(layout.gpu, applied.error().message);
      continue;
    }
    spdlog::info("agent: MIG layout [{}] applied on GPU {}", list, layout.gpu.value());
  }
  return failures;
}

void LocalAgent::SampleRound() {
  const std::vector<std::pair<GpuUuid, std::string>> mig_failures = ApplyMigLayouts();
  std::vector<GpuSample> samples = SampleEachGpu();
  for (GpuSample& s : samples) {
    for (const auto& [gpu, why] : mig_failures) {
      if (s.uuid == gpu) {
        s.mig_layout_error = why;
      }
    }
  }
  std::vector<LiveJob> live;
  std::vector<GpuUuid> resets;
  std::vector<NewLeftovers> leftovers;
  {
    std::lock_guard lock(mu_);
    live = live_jobs_;
    resets.swap(health_resets_);
    leftovers.swap(new_leftovers_);
  }
  for (NewLeftovers& l : leftovers) {
    leftovers_.Add(l.job, std::move(l.gpus), std::move(l.processes));
  }
  KillProcesses(live);
  for (const GpuUuid& uuid : resets) {
    health_.Reset(uuid);
  }
  std::optional<KubeReading> pods = kube_ ? kube_->Read(gpus_) : std::nullopt;
  if (kube_) {
    attributor_.SetKubeView(pods ? std::optional<KubeNodeView>(std::move(pods->view))
                                 : std::nullopt);
  }
  attributor_.Attribute(samples, live);
  for (GpuSample& s : samples) {
    health_.Update(s);
  }
  leftovers_.Apply(samples);
  for (GpuSample& s : samples) {
    if (self_test_) {
      self_test_->Observe(s, IndexOf(s.uuid));
    }
  }
  if (power_) {
    power_->Tick(samples);
  }
  reports_.OnSamples(options_.name, std::move(samples));
  if (pods) {
    reports_.OnPods(options_.name, std::move(pods->pods));
  }
}

// Rounds start every sample_interval from the first (no drift); a round that overran the
// interval is followed at once by the next, without trying to catch up on missed ones.
void LocalAgent::SamplerLoop() {
  auto next = std::chrono::steady_clock::now();
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (sampler_cv_.wait_until(lock, next, [this] { return stopping_; })) {
        return;
      }
    }
    SampleRound();
    next += options_.sample_interval;
    next = std::max(next, std::chrono::steady_clock::now());
  }
}

// Sleeps until work is queued, the Executor has news (a shim exited, a starting job's folder
// changed), or the fallback poll is due (sooner while a start cannot be watched).
void LocalAgent::WaitForEvents() {
  std::array<pollfd, 2> fds{{{wake_fd_, POLLIN, 0}, {executor_.WatchFd(), POLLIN, 0}}};
  const auto timeout = executor_.CheckAgainWithin(options_.poll_interval);
  // A negative fd is skipped by poll(2).
  if (::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) > 0 &&
      (fds[0].revents & POLLIN) != 0) {
    std::uint64_t count = 0;
    ssize_t ignored = ::read(wake_fd_, &count, sizeof count);
    (void)ignored;
  }
}

void LocalAgent::Loop() {
  while (true) {
    WaitForEvents();
    std::deque<std::function<void()>> work;
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        return;
      }
      work.swap(work_);
    }
    for (auto& w : work) {
      w();
    }
    ReportStarts();
    PollExits();
    PublishLiveJobs();
  }
}

}  // namespace gf
