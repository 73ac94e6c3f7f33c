#include "core/tool_run.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/duration.h"
#include "core/result.h"

extern char** environ;  // NOLINT: POSIX's process environment (unistd.h leaves it undeclared)

namespace gf {
namespace {

// The agent's environment with `extra` added, replacing entries of the same names.
std::vector<std::string> Environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(extra.begin(), extra.end(), [&](const auto& kv) {
      return entry.size() > kv.first.size() && entry.starts_with(kv.first) &&
             entry[kv.first.size()] == '=';
    });
    if (!replaced) {
      env.emplace_back(entry);
    }
  }
  for (const auto& [name, value] : extra) {
    std::string entry = name;
    entry += '=';
    entry += value;
    env.push_back(std::move(entry));
  }
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

// Keeps the last `keep` bytes read from `fd` into `tail`; false at end of file.
bool ReadInto(int fd, std::string& tail, std::size_t keep) {
  std::array<char, 4096> buf{};
  const ssize_t n = ::read(fd, buf.data(), buf.size());
  if (n <= 0) {
    return n < 0 && (errno == EINTR || errno == EAGAIN);
  }
  tail.append(buf.data(), static_cast<std::size_t>(n));
  if (tail.size() > keep) {
    tail.erase(0, tail.size() - keep);
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

// The daemons ignore SIGPIPE, a test binary or another caller may not: the signal is blocked on
// this thread for the write, and one it raised is taken off the thread's pending set before the
// mask is restored.
bool WriteIgnoringHangUp(int fd, const std::string& text) {
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &before);
  const ssize_t written = ::write(fd, text.data(), text.size());
  if (written < 0 && errno == EPIPE) {
    const timespec now{};
    ::sigtimedwait(&pipe_signal, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  return written == static_cast<ssize_t>(text.size());
}

ToolOutcome RunTool(const ToolRun& run, std::atomic<int>* running) {
  std::array<int, 2> out{-1, -1};
  std::array<int, 2> in{-1, -1};
  if (::pipe2(out.data(), O_CLOEXEC) != 0 ||
      (!run.input.empty() && ::pipe2(in.data(), O_CLOEXEC) != 0)) {
    const int error = errno;
    for (const int fd : {out[0], out[1]}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
    return ToolOutcome{.detail = "could not start: pipe: " + ErrnoText(error)};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (run.input.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  } else {
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  }
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> args =
      run.argv.empty() ? std::vector<std::string>{"/bin/sh", "-c", run.command} : run.argv;
  std::vector<std::string> env = Environment(run.env);
  std::vector<char*> argv = Pointers(args);
  std::vector<char*> envp = Pointers(env);
  pid_t pid = -1;
  const int spawned =
      ::posix_spawnp(&pid, args.front().c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  if (in[0] >= 0) {
    ::close(in[0]);
    // A few bytes ("quit\n"): within the pipe's buffer, so the write does not wait for the
    // command to read.
    if (spawned == 0) {
      WriteIgnoringHangUp(in[1], run.input);
    }
    ::close(in[1]);
  }
  if (spawned != 0) {
    ::close(out[0]);
    return ToolOutcome{.detail = "could not start " + args.front() + ": " + ErrnoText(spawned)};
  }
  if (running != nullptr) {
    running->store(pid);
  }
  ToolOutcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + run.timeout;
  bool open = true;
  bool timed_out = false;
  while (open) {
    const auto left =
        std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd fd{out[0], POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1000))) > 0) {
      open = ReadInto(out[0], outcome.output, run.keep_output);
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
      timed_out
          ? "killed: still running after the timeout (" +
                FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(run.timeout)) + ")"
          : ExitText(status);
  return outcome;
}

}  // namespace gf
