#include "agent/gpu_self_test.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/duration.h"
#include "core/result.h"

extern char** environ;  // NOLINT: POSIX's process environment (unistd.h leaves it undeclared)

namespace gf {
namespace {

constexpr std::size_t kOutputTail = 2048;

// The agent's environment plus the GPU's names; the command finds its card like a job does.
std::vector<std::string> TestEnvironment(const GpuUuid& uuid, int index) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (!entry.starts_with("CUDA_VISIBLE_DEVICES=") && !entry.starts_with("GPUFLEET_GPU_")) {
      env.emplace_back(entry);
    }
  }
  env.push_back("CUDA_VISIBLE_DEVICES=" + uuid.value());
  env.push_back("GPUFLEET_GPU_UUID=" + uuid.value());
  env.push_back("GPUFLEET_GPU_INDEX=" + std::to_string(index));
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

// Keeps the last kOutputTail bytes read from `fd` into `tail`; false at end of file.
bool ReadInto(int fd, std::string& tail) {
  std::array<char, 4096> buf{};
  const ssize_t n = ::read(fd, buf.data(), buf.size());
  if (n <= 0) {
    return n < 0 && (errno == EINTR || errno == EAGAIN);
  }
  tail.append(buf.data(), static_cast<std::size_t>(n));
  if (tail.size() > kOutputTail) {
    tail.erase(0, tail.size() - kOutputTail);
  }
  return true;
}

std::string ExitText(int status) {
  if (WIFEXITED(status)) {
    return "exit " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status));
  }
  return "ended with status " + std::to_string(status);
}

}  // namespace

SelfTestOutcome RunSelfTest(const std::string& command, const GpuUuid& uuid, int index,
                            Millis timeout, std::atomic<int>* running) {
  std::array<int, 2> out{-1, -1};
  if (::pipe2(out.data(), O_CLOEXEC) != 0) {
    return SelfTestOutcome{.detail = "could not start: pipe: " + ErrnoText(errno)};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so that a timeout kills what the command started too.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> args{"/bin/sh", "-c", command};
  std::vector<std::string> env = TestEnvironment(uuid, index);
  std::vector<char*> argv = Pointers(args);
  std::vector<char*> envp = Pointers(env);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    return SelfTestOutcome{.detail = "could not start /bin/sh: " + ErrnoText(spawned)};
  }
  if (running != nullptr) {
    running->store(pid);
  }
  SelfTestOutcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool open = true;
  bool timed_out = false;
  while (open) {
    const auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd fd{out[0], POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000))) > 0) {
      open = ReadInto(out[0], outcome.output);
    }
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (running != nullptr) {
    running->store(0);
  }
  outcome.passed = !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  outcome.detail =
      timed_out ? "killed: still running after the timeout (" +
                      FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(timeout)) + ")"
                : ExitText(status);
  return outcome;
}

GpuSelfTest::GpuSelfTest(GpuSelfTestOptions options, const Clock& clock,
                         std::function<void(const GpuUuid&)> on_pass)
    : options_(std::move(options)), clock_(clock), on_pass_(std::move(on_pass)) {
  thread_ = std::thread([this] { Loop(); });
}

GpuSelfTest::~GpuSelfTest() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    due_.clear();
  }
  cv_.notify_all();
  if (const int group = running_.load(); group > 0) {
    ::kill(-group, SIGKILL);  // the agent is stopping: a test in progress is abandoned
  }
  thread_.join();
}

void GpuSelfTest::Observe(const GpuSample& sample, int index) {
  if (options_.command.empty() || sample.health != GpuHealth::kFailed ||
      !sample.processes.empty()) {
    return;
  }
  const Time now = clock_.Now();
  auto last = last_queued_.find(sample.uuid);
  if (last != last_queued_.end() && now - last->second < options_.interval) {
    return;
  }
  last_queued_[sample.uuid] = now;
  {
    std::lock_guard lock(mu_);
    due_.push_back(Due{.uuid = sample.uuid, .index = index});
  }
  cv_.notify_one();
}

void GpuSelfTest::Loop() {
  while (true) {
    Due next;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !due_.empty(); });
      if (stopping_) {
        return;
      }
      next = due_.front();
      due_.pop_front();
    }
    spdlog::info("agent: self-test of failed GPU {} ({}): running {}", next.index,
                 next.uuid.value(), options_.command);
    const SelfTestOutcome outcome =
        RunSelfTest(options_.command, next.uuid, next.index, options_.timeout, &running_);
    if (outcome.passed) {
      spdlog::info("agent: self-test of GPU {} ({}) passed: its health is judged afresh",
                   next.index, next.uuid.value());
      on_pass_(next.uuid);
    } else {
      spdlog::warn("agent: self-test of GPU {} ({}) failed ({}); it stays failed. Output: {}",
                   next.index, next.uuid.value(), outcome.detail, outcome.output);
    }
  }
}

}  // namespace gf
