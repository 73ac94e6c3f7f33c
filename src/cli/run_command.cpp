#include "cli/run_command.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "api/agent_wire.h"
#include "api/api_client.h"
#include "cli/logs_command.h"
#include "cli/views.h"
#include "model/job.h"
#include "model/terminal.h"

namespace gf {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kPendingPoll{250};
// Well inside the supervisor's 30 s session timeout (ExecutorOptions::terminal_timeout).
constexpr std::chrono::seconds kKeepalive{5};
// The output follower's pace: fast while output flows or right after a key (its echo is on the
// way), slow when idle.
constexpr std::chrono::milliseconds kOutputFast{10};
constexpr std::chrono::milliseconds kOutputSlow{200};
constexpr std::chrono::milliseconds kFastAfterInput{1000};
constexpr std::chrono::milliseconds kStateEvery{500};
constexpr std::size_t kReadBytes = 4096;
constexpr char kCtrlC = '\x03';
constexpr char kCtrlD = '\x04';

constexpr std::string_view kName = "gpufleet run";

std::optional<TerminalSize> WindowSize() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
      return TerminalSize{ws.ws_row, ws.ws_col};
    }
  }
  return std::nullopt;
}

// Writes all of `data` to `fd` (a terminal or a pipe may take it in parts).
void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;  // the terminal is gone: nothing left to show it on
    }
  }
}

// This terminal in raw mode while attached: each key goes to the job as typed, Ctrl-C
// included. The saved settings come back on every way out, the destructor's.
class RawMode {
 public:
  RawMode() {
    if (::isatty(STDIN_FILENO) == 0 || ::tcgetattr(STDIN_FILENO, &saved_) != 0) {
      return;
    }
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
  }
  ~RawMode() {
    if (active_) {
      ::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
    }
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

// The signals the session acts on, blocked in this thread (and so in every thread it starts)
// and read from a signalfd in the main loop. -1 when the kernel offers none.
int BlockSessionSignals() {
  sigset_t mask;
  ::sigemptyset(&mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH}) {
    ::sigaddset(&mask, sig);
  }
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  return ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

// The signal the signalfd holds, if any.
std::optional<int> TakeSignal(int signal_fd) {
  signalfd_siginfo info{};
  if (::read(signal_fd, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) {
    return std::nullopt;
  }
  return static_cast<int>(info.ssi_signo);
}

struct JobEnd {
  std::string state;
  std::optional<int> exit_code;
  std::string reason;
};

JobEnd EndOf(const nlohmann::json& job) {
  JobEnd end{.state = JsonText(job, "state"),
             .exit_code = std::nullopt,
             .reason = JsonText(job, "reason", "")};
  if (const auto it = job.find("exit_code"); it != job.end() && it->is_number_integer()) {
    end.exit_code = it->get<int>();
  }
  return end;
}

// The exit code of this command for the job's end, as a shell gives a command's.
int ExitCodeOf(const JobEnd& end) {
  if (end.state == "COMPLETED") {
    return end.exit_code.value_or(0);
  }
  return end.exit_code.value_or(0) != 0 ? *end.exit_code : 1;
}

// Follows the job's terminal output (its stdout log) to our stdout until the job ends, on a
// thread and an API connection of its own, so that a slow read never holds up the keys.
class OutputFollower {
 public:
  OutputFollower(std::unique_ptr<ApiClient> client, std::string base, int wake_fd)
      : client_(std::move(client)), base_(std::move(base)), wake_fd_(wake_fd) {}
  ~OutputFollower() { Stop(); }
  OutputFollower(const OutputFollower&) = delete;
  OutputFollower& operator=(const OutputFollower&) = delete;

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  // Stops following (the session is being dropped) and waits for the thread.
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  // A key was sent: its echo is on the way, so look again soon.
  void Nudge() {
    {
      std::lock_guard lock(mu_);
      last_input_ = Clock::now();
    }
    cv_.notify_all();
  }
  // How the job ended, once Run has returned (after Stop, or the wake fd fired).
  std::optional<JobEnd> End() const {
    std::lock_guard lock(mu_);
    return end_;
  }

 private:
  void Run() {
    std::int64_t offset = 0;
    Clock::time_point last_state{};
    bool ended = false;
    while (!Stopping()) {
      bool got = false;
      Result<LogChunk> chunk = FetchLogChunk(*client_, base_, "stdout", offset, std::nullopt);
      if (chunk.ok()) {
        if (chunk->size < offset) {
          offset = 0;  // a new file: the job started again (requeued with --requeue)
          continue;
        }
        WriteAll(STDOUT_FILENO, chunk->data);
        offset = chunk->next_offset;
        got = !chunk->data.empty();
      }
      if (got) {
        continue;  // there may be more at once
      }
      if (ended) {
        break;  // the job had ended and its last output is out
      }
      if (Clock::now() - last_state >= kStateEvery) {
        last_state = Clock::now();
        Result<nlohmann::json> job = client_->CallJson("GET", base_, std::nullopt);
        if (job.ok() && IsEndState(JsonText(*job, "state"))) {
          std::lock_guard lock(mu_);
          end_ = EndOf(*job);
          ended = true;  // one more read: what it wrote before it ended is all on disk now
          continue;
        }
      }
      std::unique_lock lock(mu_);
      const auto pace = Clock::now() - last_input_ < kFastAfterInput ? kOutputFast : kOutputSlow;
      cv_.wait_for(lock, pace, [this] { return stop_; });
    }
    const char byte = 1;
    ssize_t ignored = ::write(wake_fd_, &byte, 1);
    (void)ignored;
  }
  bool Stopping() const {
    std::lock_guard lock(mu_);
    return stop_;
  }

  std::unique_ptr<ApiClient> client_;
  const std::string base_;
  const int wake_fd_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;               // GUARDED_BY(mu_)
  Clock::time_point last_input_{};  // GUARDED_BY(mu_)
  std::optional<JobEnd> end_;       // GUARDED_BY(mu_)
  std::thread thread_;
};

// One process's session with one job: its API connection, its signals, its state.
class Session {
 public:
  Session(const ClientContext& ctx, std::unique_ptr<ApiClient> client, int signal_fd)
      : ctx_(ctx), client_(std::move(client)), signal_fd_(signal_fd) {}

  int Run(const nlohmann::json& body) {
    Result<nlohmann::json> job = client_->CallJson("POST", "/api/v1/jobs", body);
    if (!job.ok()) {
      return Fail(job.error());
    }
    id_ = job->value("id", std::int64_t{0});
    base_ = "/api/v1/jobs/" + std::to_string(id_);
    std::optional<int> outcome = WaitForStart();
    if (outcome) {
      return *outcome;
    }
    return Attach();
  }

 private:
  // Until the job runs: its pending reason when it changes; a signal cancels it. Returns the
  // exit code when the session ends here (the job ended, or was cancelled, before running).
  std::optional<int> WaitForStart() {
    std::string said;
    while (true) {
      Result<nlohmann::json> job = client_->CallJson("GET", base_, std::nullopt);
      if (!job.ok()) {
        return Fail(job.error());
      }
      const std::string state = JsonText(*job, "state");
      // A job that ran and ended between two looks (a short command) still has its output.
      const bool ran = job->contains("start_time_ms") && !(*job)["start_time_ms"].is_null();
      if (state == "RUNNING" || (IsEndState(state) && ran)) {
        return std::nullopt;
      }
      if (IsEndState(state)) {
        const JobEnd end = EndOf(*job);
        std::cerr << kName << ": job " << id_ << " " << end.state << " before it ran"
                  << (end.reason.empty() ? "" : ": " + end.reason) << '\n';
        return ExitCodeOf(end);
      }
      const std::string reason = JsonText(*job, "reason", "");
      if (state == "PENDING" && reason != said) {
        std::cerr << kName << ": job " << id_ << " queued"
                  << (reason.empty() ? "" : " (" + reason + ")")
                  << "; waiting for it to start (Ctrl-C cancels it)\n";
        said = reason;
      }
      pollfd pfd{signal_fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(kPendingPoll.count())) > 0) {
        if (const std::optional<int> sig = TakeSignal(signal_fd_); sig && *sig != SIGWINCH) {
          Cancel("cancelled before it started");
          return 128 + *sig;
        }
      }
    }
  }

  // The job runs: this terminal is its terminal until it ends (see run_command.h).
  int Attach() {
    int wake[2];
    if (::pipe2(wake, O_CLOEXEC) != 0) {
      Cancel("no pipe to follow it with");
      return Fail(IoError("pipe: " + ErrnoText(errno)));
    }
    Result<std::unique_ptr<ApiClient>> second = OpenClient(ctx_);
    if (!second.ok()) {
      Cancel("no second connection to follow its output with");
      return Fail(second.error());
    }
    std::optional<int> hung_up;
    std::optional<JobEnd> end;
    {
      RawMode raw;
      OutputFollower output(std::move(*second), base_, wake[1]);
      output.Start();
      // The window may have changed while the job waited.
      Send({.size = WindowSize()}, output);
      bool stdin_open = true;
      const bool stdin_tty = ::isatty(STDIN_FILENO) != 0;
      Clock::time_point last_sent = Clock::now();
      while (true) {
        pollfd fds[3] = {{wake[0], POLLIN, 0},
                         {signal_fd_, POLLIN, 0},
                         {stdin_open ? STDIN_FILENO : -1, POLLIN, 0}};
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
            kKeepalive - (Clock::now() - last_sent));
        const int ready = ::poll(fds, 3, static_cast<int>(std::max<std::int64_t>(wait.count(), 0)));
        if (ready == 0 || Clock::now() - last_sent >= kKeepalive) {
          Send({}, output);
          last_sent = Clock::now();
        }
        if (ready <= 0) {
          continue;
        }
        if (fds[0].revents != 0) {
          break;  // the job ended and its output is out
        }
        if (fds[1].revents != 0) {
          if (const std::optional<int> sig = TakeSignal(signal_fd_)) {
            if (*sig == SIGWINCH) {
              Send({.size = WindowSize()}, output);
            } else if (*sig == SIGINT) {
              // Not from the keyboard (raw mode makes Ctrl-C a key): someone's kill -INT, or
              // Ctrl-C at a terminal whose stdin is not ours. The job's terminal gets Ctrl-C.
              Send({.data = std::string(1, kCtrlC)}, output);
            } else {
              hung_up = *sig;
              break;
            }
            last_sent = Clock::now();
          }
        }
        if (fds[2].revents != 0) {
          char buf[kReadBytes];
          const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
          if (n > 0) {
            Send({.data = std::string(buf, static_cast<std::size_t>(n))}, output);
          } else if (stdin_tty && (n == 0 || errno == EIO)) {
            // Our terminal hung up (closed, or its session leader ended without signalling us):
            // the session is over.
            hung_up = SIGHUP;
            break;
          } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            // The end of a piped stdin: Ctrl-D, which the job's terminal reads as end of input.
            Send({.data = std::string(1, kCtrlD)}, output);
            stdin_open = false;
          }
          last_sent = Clock::now();
        }
      }
      if (hung_up) {
        Cancel("its terminal session ended (" + std::string(::sigabbrev_np(*hung_up)) + ")");
      }
      output.Stop();
      end = output.End();
    }  // raw mode off before any line of ours
    ::close(wake[0]);
    ::close(wake[1]);
    if (hung_up) {
      return 128 + *hung_up;
    }
    if (!end) {
      return Fail(Unavailable("job " + std::to_string(id_) + ": lost track of it"));
    }
    if (end->state != "COMPLETED") {
      std::cerr << kName << ": job " << id_ << " " << end->state
                << (end->reason.empty() ? "" : ": " + end->reason) << '\n';
    }
    return ExitCodeOf(*end);
  }

  // One message to the job's terminal. A refusal because the job no longer runs is expected at
  // the end (the follower sees the end next); any other is said once.
  void Send(const TerminalInput& input, OutputFollower& output) {
    if (!input.data.empty()) {
      output.Nudge();
    }
    Result<nlohmann::json> sent =
        client_->CallJson("POST", base_ + "/terminal", TerminalInputToJson(input));
    if (!sent.ok() && sent.error().code != ErrorCode::kFailedPrecondition && !warned_) {
      std::cerr << "\r\n" << kName << ": " << sent.error().message << "\r\n";
      warned_ = true;
    }
  }

  void Cancel(const std::string& why) {
    Result<nlohmann::json> cancelled =
        client_->CallJson("POST", base_ + "/cancel", nlohmann::json::object());
    if (!cancelled.ok()) {
      std::cerr << kName << ": job " << id_ << " " << why
                << ", but could not be cancelled: " << cancelled.error().message << '\n';
    }
  }

  const ClientContext& ctx_;
  std::unique_ptr<ApiClient> client_;
  const int signal_fd_;
  std::int64_t id_ = 0;
  std::string base_;
  bool warned_ = false;
};

int RunInteractive(const ClientContext& ctx, SubmitOptions options) {
  if (options.command.empty()) {
    return Fail(
        InvalidArgument("command: missing; gpufleet run [OPTIONS] -- CMD ARGS, e.g. "
                        "gpufleet run --gpus 1 -- bash"));
  }
  for (const auto& [given, flag, why] :
       {std::tuple{options.array.has_value(), "--array", "use gpufleet submit --array"},
        std::tuple{options.output.has_value(), "--output", "the terminal is its output"},
        std::tuple{options.error.has_value(), "--error", "the terminal is its output"}}) {
    if (given) {
      return Fail(InvalidArgument(std::string(flag) +
                                  ": not with gpufleet run, which starts one job on your "
                                  "terminal (" +
                                  why + ")"));
    }
  }
  options.terminal = WindowSize().value_or(TerminalSize{});
  options.interactive = options.interactive.value_or(true);
  options.requeue = options.requeue.value_or(false);
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  Result<nlohmann::json> body = BuildSubmitBody(options, cwd, CurrentEnvironment());
  if (!body.ok()) {
    return Fail(body.error());
  }
  if (body->value("nodes", 1) > 1) {
    return Fail(
        InvalidArgument("--nodes: gpufleet run starts a job on one node (its terminal "
                        "is yours); submit a multi-node job with gpufleet submit"));
  }
  // Before any thread (the output follower) exists, so that every thread has them blocked.
  const int signal_fd = BlockSessionSignals();
  if (signal_fd < 0) {
    return Fail(IoError("signalfd: " + ErrnoText(errno)));
  }
  Result<std::unique_ptr<ApiClient>> client = OpenClient(ctx);
  if (!client.ok()) {
    return Fail(client.error());
  }
  const int code = Session(ctx, std::move(*client), signal_fd).Run(*body);
  ::close(signal_fd);
  return code;
}

}  // namespace

void AddRunCommand(CLI::App& app, ClientContext& ctx) {
  auto* run = app.add_subcommand(
      "run",
      "run a command interactively on a job's terminal, like srun --pty: gpufleet run --gpus 1 "
      "-- bash (waits for the job, attaches this terminal, ends with it)");
  auto options = std::make_shared<SubmitOptions>();
  AddSubmitOptions(*run, *options);
  run->prefix_command();
  run->footer(
      "The job is --interactive and --no-requeue unless told otherwise. Keys, Ctrl-C and window\n"
      "size go to the job; it ends when its command does, or when this command is killed or its\n"
      "terminal closes. Its session stays in gpufleet logs JOB. Not with --array, --nodes > 1,\n"
      "--output or --error.");
  run->callback([&ctx, run, options] {
    if (Status taken = TakeJobCommand(ctx, run->remaining(), "run", *options); !taken.ok()) {
      ctx.exit_code = Fail(taken.error());
      return;
    }
    ctx.exit_code = RunInteractive(ctx, *options);
  });
}

}  // namespace gf
