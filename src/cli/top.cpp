#include "cli/top.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "api/api_client.h"
#include "api/socket_path.h"
#include "cli/client_commands.h"
#include "cli/top_frame.h"
#include "cli/top_keys.h"
#include "json/json_text.h"

namespace gf {
namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kDefaultWidth = 80;
constexpr int kDefaultHeight = 24;
constexpr auto kRedrawEvery = std::chrono::seconds(1);  // elapsed times move on
constexpr auto kRetryEvery = std::chrono::seconds(1);   // a lost watch is reopened
constexpr std::size_t kHistoryLength = 120;             // samples kept per GPU for its sparkline

// Alternate screen + hidden cursor, and back. Leaving also resets colours.
constexpr std::string_view kEnterScreen = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
constexpr std::string_view kLeaveScreen = "\x1b[0m\x1b[?25h\x1b[?1049l";
constexpr std::array kQuitSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr std::array kFatalSignals = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// What signal handlers need: only globals and async-signal-safe calls (write, tcsetattr,
// sigaction, raise) are allowed there.
// NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables)
int g_wake_fd = -1;  // write end of the main loop's self-pipe
volatile std::sig_atomic_t g_quit_signal = 0;
volatile std::sig_atomic_t g_terminal_raw = 0;  // the terminal is ours and must be restored
termios g_saved_termios{};
std::array<struct sigaction, NSIG> g_old_actions{};
// NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)

void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // the terminal is gone: nothing left to show anything on
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void Wake() {
  if (g_wake_fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(g_wake_fd, &byte, 1);  // full pipe: already awake
  }
}

// Async-signal-safe: called from fatal signal handlers as well as from ~Terminal.
void RestoreTerminal() {
  if (g_terminal_raw != 0) {
    g_terminal_raw = 0;
    WriteAll(STDOUT_FILENO, kLeaveScreen);
    ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_termios);
  }
}

extern "C" void OnQuitSignal(int sig) {
  g_quit_signal = sig;
  Wake();
}

extern "C" void OnResizeSignal(int /*sig*/) {
  Wake();
}

extern "C" void OnFatalSignal(int sig) {
  RestoreTerminal();
  ::sigaction(sig, &g_old_actions[static_cast<std::size_t>(sig)], nullptr);
  ::raise(sig);  // on to the previous handler (the sanitizer's, or the default: core)
}

void Handle(int sig, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  ::sigemptyset(&action.sa_mask);
  ::sigaction(sig, &action, &g_old_actions[static_cast<std::size_t>(sig)]);
}

void Unhandle(int sig) {
  ::sigaction(sig, &g_old_actions[static_cast<std::size_t>(sig)], nullptr);
}

// The self-pipe that wakes the main loop: from signal handlers and from the watch threads.
class WakePipe {
 public:
  WakePipe() {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_NONBLOCK | O_CLOEXEC) == 0) {
      read_fd_ = fds[0];
      g_wake_fd = fds[1];
    }
  }
  ~WakePipe() {
    const int write_fd = g_wake_fd;
    g_wake_fd = -1;
    ::close(write_fd);
    ::close(read_fd_);
  }
  WakePipe(const WakePipe&) = delete;
  WakePipe& operator=(const WakePipe&) = delete;
  bool ok() const { return read_fd_ >= 0; }  // NOLINT(readability-identifier-naming)
  int fd() const { return read_fd_; }        // NOLINT(readability-identifier-naming)
  void Drain() const {
    std::array<char, 256> buf{};
    while (::read(read_fd_, buf.data(), buf.size()) > 0) {
    }
  }

 private:
  int read_fd_ = -1;
};

// The terminal while top owns it: raw keys (no echo, no line editing, Ctrl-C as a key),
// alternate screen, hidden cursor, and the signal handlers that give it back.
class Terminal {
 public:
  Terminal() {
    ::tcgetattr(STDIN_FILENO, &g_saved_termios);
    termios raw = g_saved_termios;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG | IEXTEN);
    raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    for (const int sig : kFatalSignals) {
      Handle(sig, OnFatalSignal);
    }
    for (const int sig : kQuitSignals) {
      Handle(sig, OnQuitSignal);
    }
    Handle(SIGWINCH, OnResizeSignal);
    ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    g_terminal_raw = 1;
    WriteAll(STDOUT_FILENO, kEnterScreen);
  }
  ~Terminal() {
    RestoreTerminal();
    Unhandle(SIGWINCH);
    for (const int sig : kQuitSignals) {
      Unhandle(sig);
    }
    for (const int sig : kFatalSignals) {
      Unhandle(sig);
    }
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  void Draw(const std::vector<TopLine>& lines, int width) const {
    std::string out = "\x1b[H";
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const TopLine& line = lines[i];
      out += i == 0 ? "" : "\r\n";
      out += Sgr(line.style);
      std::size_t at = 0;
      for (const TopPaint& paint : line.paints) {
        out.append(line.text, at, paint.begin - at);
        out += Sgr(paint.color);
        out.append(line.text, paint.begin, paint.end - paint.begin);
        out += "\x1b[39m";  // back to the line's colour, its bold or reverse kept
        at = paint.end;
      }
      out.append(line.text, at);
      const bool bar = line.style == TopStyle::kHeading || line.style == TopStyle::kTitle ||
                       line.style == TopStyle::kSelected;
      if (bar && static_cast<int>(line.text.size()) < width) {
        out.append(static_cast<std::size_t>(width) - line.text.size(), ' ');  // full width
      }
      out += "\x1b[0m\x1b[K";
    }
    out += "\x1b[J";  // clear what an earlier, longer frame left below
    WriteAll(STDOUT_FILENO, out);
  }

 private:
  static std::string_view Sgr(TopStyle style) {
    switch (style) {
      case TopStyle::kTitle:
        return "\x1b[1;7m";
      case TopStyle::kHeading:
      case TopStyle::kSelected:
        return "\x1b[7m";
      case TopStyle::kAlert:
        return "\x1b[1;31m";
      case TopStyle::kPrompt:
        return "\x1b[1;33m";
      case TopStyle::kNormal:
        break;
    }
    return "";
  }
  static std::string_view Sgr(TopColor color) {
    switch (color) {
      case TopColor::kGreen:
        return "\x1b[32m";
      case TopColor::kYellow:
        return "\x1b[33m";
      case TopColor::kRed:
        return "\x1b[31m";
      case TopColor::kMagenta:
        return "\x1b[35m";
      case TopColor::kCyan:
        return "\x1b[36m";
      case TopColor::kGrey:
        break;
    }
    return "\x1b[90m";
  }
};

std::pair<int, int> TerminalSize() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    return {ws.ws_col, ws.ws_row};
  }
  return {kDefaultWidth, kDefaultHeight};
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the two watch threads have seen, for the main thread to draw.
// NOLINTNEXTLINE(bugprone-exception-escape): json members; a throw here is bad_alloc
class TopState {
 public:
  enum class Feed { kGpus, kJobs };

  void SetList(Feed feed, nlohmann::json list) {
    std::lock_guard<std::mutex> lock(mu_);
    if (feed == Feed::kGpus) {
      Record(list);
    }
    (feed == Feed::kGpus ? input_.gpus : input_.jobs) = std::move(list);
    ErrorOf(feed).clear();
  }
  void SetError(Feed feed, std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    ErrorOf(feed) = std::move(message);
  }
  TopInput Snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    TopInput out = input_;
    out.now_ms = NowMs();
    out.status = !gpu_error_.empty()     ? "gpus: " + gpu_error_
                 : !job_error_.empty()   ? "jobs: " + job_error_
                 : input_.gpus.is_null() ? "connecting"
                                         : "live";
    return out;
  }

 private:
  std::string& ErrorOf(Feed feed) { return feed == Feed::kGpus ? gpu_error_ : job_error_; }

  // Each GPU's utilisation once per sample (a GPU list also comes when only a holder changed):
  // the sparklines' history, the last kHistoryLength samples.
  void Record(const nlohmann::json& list) {
    const auto gpus = list.find("gpus");
    if (gpus == list.end() || !gpus->is_array()) {
      return;
    }
    for (const nlohmann::json& gpu : *gpus) {
      const auto uuid = gpu.find("uuid");
      const auto sample = gpu.find("sample");
      if (uuid == gpu.end() || !uuid->is_string() || sample == gpu.end() || !sample->is_object()) {
        continue;
      }
      const auto time = sample->find("time_ms");
      const auto util = sample->find("util_gpu_pct");
      if (time == sample->end() || !time->is_number_integer() || util == sample->end() ||
          !util->is_number()) {
        continue;
      }
      const auto key = uuid->get<std::string>();
      std::int64_t& last = last_sample_ms_[key];
      if (time->get<std::int64_t>() == last) {
        continue;
      }
      last = time->get<std::int64_t>();
      std::deque<int>& series = input_.history[key];
      series.push_back(static_cast<int>(std::lround(util->get<double>())));
      if (series.size() > kHistoryLength) {
        series.pop_front();
      }
    }
  }

  std::mutex mu_;
  TopInput input_;                                      // GUARDED_BY(mu_)
  std::string gpu_error_;                               // GUARDED_BY(mu_)
  std::string job_error_;                               // GUARDED_BY(mu_)
  std::map<std::string, std::int64_t> last_sample_ms_;  // GUARDED_BY(mu_)
};

// A watch thread: follows one stream into `state`, reopening it when it is lost, until stopped.
void Follow(const std::stop_token& stop,
            const ClientSettings& settings,
            const std::string& target,
            TopState::Feed feed,
            TopState& state) {
  ApiClient client(settings.endpoint, settings.options);
  while (!stop.stop_requested()) {
    const Status status = client.Watch(
        target,
        [&](std::string_view event, std::string_view data) {
          Result<nlohmann::json> doc = ParseJsonText(data, "event from the server");
          if (!doc.ok()) {
            state.SetError(feed, doc.error().message);
          } else if (event == "error") {
            state.SetError(feed, doc->dump());
          } else {
            state.SetList(feed, *std::move(doc));
          }
          Wake();
          return true;
        },
        stop);
    if (stop.stop_requested()) {
      return;
    }
    state.SetError(feed, status.ok() ? "stream ended; reconnecting" : status.error().message);
    Wake();
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, stop, kRetryEvery, [] { return false; });
  }
}

// The keys waiting on stdin; nullopt when the terminal is gone.
std::optional<std::string> ReadKeys() {
  std::array<char, 64> keys{};
  const ssize_t n = ::read(STDIN_FILENO, keys.data(), keys.size());
  if (n == 0) {
    return std::nullopt;
  }
  return std::string(keys.data(), static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
}

// Cancels `job` as `gpufleet cancel JOB` would; the answer in words for the last line.
std::string CancelJob(ApiClient& client, std::int64_t job) {
  const std::string id = std::to_string(job);
  const auto answer = client.CallJson("POST", "/api/v1/jobs/" + id + "/cancel");
  return answer.ok() ? "job " + id + " cancelled" : "cancel " + id + ": " + answer.error().message;
}

int RunLive(const ClientContext& ctx) {
  if (::isatty(STDIN_FILENO) == 0 || ::isatty(STDOUT_FILENO) == 0) {
    std::cerr << "gpufleet: top needs a terminal (stdin and stdout must be a TTY); "
                 "use `gpufleet top --once` to print one frame\n";
    return kExitUsage;
  }
  WakePipe wake;
  if (!wake.ok()) {
    std::cerr << "gpufleet: top: cannot create a pipe\n";
    return kExitError;
  }
  TopState state;
  const Result<ClientSettings> settings = ResolveSettings(ctx);
  if (!settings.ok()) {
    std::cerr << "gpufleet: " << settings.error().message << '\n';
    return settings.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitError;
  }
  const Terminal terminal;
  // Declared after the pipe and the terminal: stopped and joined before either goes away.
  const std::jthread gpus([&](const std::stop_token& stop) {
    Follow(stop, *settings, "/api/v1/gpus?watch=1", TopState::Feed::kGpus, state);
  });
  const std::jthread jobs([&](const std::stop_token& stop) {
    Follow(stop, *settings, "/api/v1/jobs?watch=1", TopState::Feed::kJobs, state);
  });
  ApiClient actions(settings->endpoint, settings->options);  // the keys' requests
  TopControls controls;
  for (;;) {
    const auto [width, height] = TerminalSize();
    TopInput input = state.Snapshot();
    input.controls = controls;
    input.live = true;
    terminal.Draw(RenderTopFrame(input, width, height), width);
    std::array<pollfd, 2> fds{{{STDIN_FILENO, POLLIN, 0}, {wake.fd(), POLLIN, 0}}};
    const int ready = ::poll(
        fds.data(), fds.size(), static_cast<int>(std::chrono::milliseconds(kRedrawEvery).count()));
    if (ready < 0 && errno != EINTR) {
      return kExitError;
    }
    wake.Drain();
    if (const int sig = g_quit_signal; sig != 0) {
      return sig == SIGINT ? 0 : 128 + sig;
    }
    if ((fds[0].revents & (POLLIN | POLLHUP)) != 0) {
      const std::optional<std::string> keys = ReadKeys();
      if (!keys) {
        return 0;  // the terminal is gone
      }
      const TopKeyOutcome outcome = ApplyTopKeys(*keys, TopJobOrder(input.jobs), controls);
      if (outcome.quit) {
        return 0;
      }
      if (outcome.cancel) {
        controls.message = CancelJob(actions, *outcome.cancel);
      }
    }
  }
}

int RunOnce(const ClientContext& ctx, int width, int height) {
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    std::cerr << "gpufleet: " << opened.error().message << '\n';
    return opened.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitError;
  }
  ApiClient& client = **opened;
  TopInput input;
  auto gpus = client.CallJson("GET", "/api/v1/gpus");
  if (!gpus.ok()) {
    std::cerr << "gpufleet: " << gpus.error().message << '\n';
    return gpus.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitError;
  }
  input.gpus = std::move(gpus).value();
  auto jobs = client.CallJson("GET", "/api/v1/jobs");
  // Over TCP there are no jobs to see (no identity): the GPUs are still worth a frame.
  input.status = jobs.ok() ? "" : "jobs: " + jobs.error().message;
  if (jobs.ok()) {
    input.jobs = std::move(jobs).value();
  }
  input.now_ms = NowMs();
  if (width <= 0 || height <= 0) {
    const auto [w, h] = ::isatty(STDOUT_FILENO) != 0
                            ? TerminalSize()
                            : std::pair<int, int>{kDefaultWidth, kDefaultHeight};
    width = width > 0 ? width : w;
    height = height > 0 ? height : h;
  }
  for (const TopLine& line : RenderTopFrame(input, width, height)) {
    std::cout << line.text << '\n';
  }
  return 0;
}

struct TopOptions {
  bool once = false;
  int width = 0;
  int height = 0;
};

}  // namespace

void AddTopCommand(CLI::App& app, ClientContext& context) {
  auto* top = app.add_subcommand(
      "top",
      "live full-screen view of every GPU, your jobs and the GPU processes (keys: j/k select a "
      "job, c cancel it, s sort processes, q or Ctrl-C quit)");
  auto options = std::make_shared<TopOptions>();
  top->add_flag("--once", options->once, "print one frame to stdout and exit");
  top->add_option("--width", options->width, "--once: columns (default: the terminal's, or 80)")
      ->check(CLI::Range(1, 1000));
  top->add_option("--height", options->height, "--once: lines (default: the terminal's, or 24)")
      ->check(CLI::Range(1, 1000));
  top->callback([&context, options] {
    context.exit_code =
        options->once ? RunOnce(context, options->width, options->height) : RunLive(context);
  });
}

}  // namespace gf
