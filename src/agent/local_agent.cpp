#include "agent/local_agent.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

namespace gf {
namespace {

JobExitReport ToReport(const JobExit& exit) {
  return JobExitReport{exit.job, exit.exit_code, exit.signal, exit.end_time, exit.cause};
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
      clock_(clock) {}

LocalAgent::~LocalAgent() { Stop(); }

Result<Node> LocalAgent::Inventory() {
  GF_ASSIGN_OR_RETURN(gpus_, backend_.Discover());
  Node node;
  node.name = options_.name;
  node.gpus = gpus_;
  node.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const std::int64_t bytes_per_mib = std::int64_t{1024} * 1024;
  node.memory_mib = static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) *
                    static_cast<std::int64_t>(sysconf(_SC_PAGE_SIZE)) / bytes_per_mib;
  node.state = NodeState::kUp;
  node.gpu_backend = backend_.Describe();
  return node;
}

Status LocalAgent::Start() {
  GF_ASSIGN_OR_RETURN(Node node, Inventory());
  AgentHello hello;
  hello.node = std::move(node);
  for (const RecoveredJob& job : executor_.Recover()) {
    if (job.still_running) {
      hello.running.push_back(job.job);
    }
  }
  // Jobs that ended while no agent watched are reported by the first Poll.
  for (const JobExit& exit : executor_.Poll()) {
    hello.ended.push_back(ToReport(exit));
  }
  spdlog::info("agent {}: {} GPUs ({}), {} jobs still running, {} ended while away",
               options_.name.value(), hello.node.gpus.size(), hello.node.gpu_backend,
               hello.running.size(), hello.ended.size());
  reports_.OnAgentHello(std::move(hello));
  thread_ = std::thread([this] { Loop(); });
  return OkStatus();
}

void LocalAgent::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void LocalAgent::Enqueue(std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    work_.push_back(std::move(work));
  }
  cv_.notify_one();
}

void LocalAgent::Launch(const Job& job) {
  Enqueue([this, job] { DoLaunch(job); });
}

void LocalAgent::Kill(JobId job, std::chrono::seconds grace, const std::string& cause) {
  Enqueue([this, job, grace, cause] {
    Status s = executor_.Kill(job, grace, cause);
    if (!s.ok()) {
      spdlog::warn("agent: kill of job {}: {}", job.value(), s.error().ToString());
    }
  });
}

void LocalAgent::AcknowledgeExit(JobId job) {
  Enqueue([this, job] {
    if (Status s = executor_.Acknowledge(job); !s.ok()) {
      spdlog::warn("agent: acknowledging the exit of job {}: {}", job.value(), s.error().ToString());
    }
  });
}

std::string LocalAgent::LogPath(JobId job, bool stderr_stream) const {
  LogPaths paths = executor_.Logs(job);
  return (stderr_stream ? paths.stderr_path : paths.stdout_path).string();
}

void LocalAgent::DoLaunch(const Job& job) {
  LaunchSpec spec;
  spec.job = job.id;
  spec.owner = job.owner;
  spec.argv = job.spec.argv;
  spec.workdir = job.spec.workdir;
  spec.env = job.spec.env;
  if (job.allocation) {
    spec.gpus = job.allocation->gpus;
  }
  // The start time is taken before the launch: Launch returns once the job runs, and a short
  // job may already have ended by then (its end time must not precede its start).
  const Time started = clock_.Now();
  Result<std::int64_t> pid = executor_.Launch(spec);
  if (pid.ok()) {
    reports_.OnJobStarted(job.id, *pid, started);
    return;
  }
  reports_.OnJobExited(JobExitReport{job.id, -1, std::nullopt, clock_.Now(),
                                     "failed to start: " + pid.error().message});
}

void LocalAgent::PollExits() {
  for (const JobExit& exit : executor_.Poll()) {
    reports_.OnJobExited(ToReport(exit));
  }
}

void LocalAgent::SampleGpus() {
  std::vector<GpuSample> samples;
  for (const Gpu& gpu : gpus_) {
    Result<GpuSample> s = backend_.Sample(gpu.index);
    if (s.ok()) {
      samples.push_back(std::move(*s));
    }
  }
  reports_.OnSamples(options_.name, std::move(samples));
}

void LocalAgent::Loop() {
  auto next_sample = std::chrono::steady_clock::now();
  while (true) {
    std::deque<std::function<void()>> work;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, options_.poll_interval, [this] { return stopping_ || !work_.empty(); });
      if (stopping_) {
        return;
      }
      work.swap(work_);
    }
    for (auto& w : work) {
      w();
    }
    PollExits();
    if (std::chrono::steady_clock::now() >= next_sample) {
      SampleGpus();
      next_sample = std::chrono::steady_clock::now() + options_.sample_interval;
    }
  }
}

}  // namespace gf
