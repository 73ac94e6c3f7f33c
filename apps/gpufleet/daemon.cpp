#include "daemon.h"

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <vector>

#include <fcntl.h>
#include <pwd.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config/config.h"
#include "core/duration.h"
#include "core/printable_text.h"
#include "model/node.h"

namespace gf {

std::filesystem::path DefaultDataDir() {
  if (geteuid() == 0) {
    return "/var/lib/gpufleet";
  }
  const char* home = std::getenv("HOME");  // NOLINT(concurrency-mt-unsafe): before threads
  std::string base = home != nullptr ? home : "";
  if (base.empty()) {
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (getpwuid_r(geteuid(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
        found->pw_dir != nullptr) {
      base = found->pw_dir;
    }
  }
  return std::filesystem::path(base) / ".local/share/gpufleet";
}

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') {
    return "localhost";
  }
  return buf;
}

std::filesystem::path SelfExe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("gpufleet") : p;
}

Result<int> LockDataDir(const std::filesystem::path& dir, std::string_view command) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return IoError("cannot create data dir " + dir.string() + ": " + ec.message() +
                   "; choose another with --data-dir");
  }
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  const std::string lock = (dir / "gpufleet.lock").string();
  int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    return IoError("cannot open " + lock + ": " + ErrnoText(err));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return FailedPrecondition("another gpufleet " + std::string(command) + " is using " +
                              dir.string() + "; stop it first, or use another --data-dir");
  }
  return fd;
}

Result<std::chrono::seconds> ParseFlagDuration(std::string_view flag,
                                               const std::string& text,
                                               std::chrono::seconds min,
                                               std::chrono::seconds max) {
  auto d = ParseDuration(text);
  if (!d.ok() || *d < min || *d > max) {
    return InvalidArgument(std::string(flag) + ": '" + text + "' is not a duration between " +
                           FormatDuration(min) + " and " + FormatDuration(max) + " (e.g. 30s, 5m)");
  }
  return *d;
}

Result<std::optional<PowerSaverOptions>> PowerPolicyFromFlags(std::string_view limit_flag,
                                                              int limit_w,
                                                              std::string_view after_flag,
                                                              const std::string& after) {
  if (limit_w < 0 || limit_w > kMaxIdlePowerLimitW) {
    return InvalidArgument(std::string(limit_flag) + ": " + std::to_string(limit_w) +
                           " W is out of range; use 1 to " + std::to_string(kMaxIdlePowerLimitW) +
                           " watts, or 0 for no power policy");
  }
  // Checked even when the policy is off, so that a typo does not wait for the day it is on.
  GF_ASSIGN_OR_RETURN(
      const std::chrono::seconds idle_after,
      ParseFlagDuration(after_flag, after, std::chrono::seconds(1), std::chrono::hours(24)));
  if (limit_w == 0) {
    return std::optional<PowerSaverOptions>();
  }
  constexpr std::int64_t kMilliwattsPerWatt = 1000;
  return std::optional<PowerSaverOptions>(
      PowerSaverOptions{.idle_limit_mw = limit_w * kMilliwattsPerWatt,
                        .idle_after = std::chrono::duration_cast<Millis>(idle_after)});
}

MpsOptions MpsFromFlags(const std::string& control,
                        const std::string& gpus,
                        const std::filesystem::path& data_dir) {
  std::string program = control;
  if (control == "auto") {
    program = gpus.starts_with("nvml") ? "nvidia-cuda-mps-control" : "";
  } else if (control == "none") {
    program = "";
  }
  return MpsOptions{.control = program, .dir = data_dir / "mps"};
}

Result<GpuSelfTestOptions> SelfTestFromFlags(std::string_view command_flag,
                                             const std::string& command,
                                             std::string_view interval_flag,
                                             const std::string& interval) {
  GF_ASSIGN_OR_RETURN(
      const std::chrono::seconds every,
      ParseFlagDuration(
          interval_flag, interval, std::chrono::minutes(1), std::chrono::hours(24 * 7)));
  if (command.find('\0') != std::string::npos || command.size() > 4096) {
    return InvalidArgument(std::string(command_flag) +
                           ": a shell command of at most 4096 characters, e.g. "
                           "'dcgmi diag -r 1 -i $GPUFLEET_GPU_INDEX'");
  }
  return GpuSelfTestOptions{.command = command,
                            .interval = std::chrono::duration_cast<Millis>(every)};
}

namespace {

// spdlog's stock line ("[time] [level] message"), with the message escaped first.
class EscapingLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string safe =
        EscapeControl(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg escaped = msg;
    escaped.payload = safe;
    stock_.format(escaped, dest);
    msg.color_range_start = escaped.color_range_start;  // where a colour sink paints the level
    msg.color_range_end = escaped.color_range_end;
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<EscapingLogFormatter>();
  }

 private:
  spdlog::pattern_formatter stock_;
};

}  // namespace

void EscapeControlInLogs() {
  spdlog::set_formatter(std::make_unique<EscapingLogFormatter>());
}

Result<NotifierOptions> NotifierOptionsFromConfig(const NotifyConfig& notify) {
  NotifierOptions options;
  options.email_from = notify.email_from.value_or(options.email_from);
  options.sendmail = notify.sendmail.value_or(options.sendmail);
  options.webhook_attempts = notify.webhook_attempts.value_or(options.webhook_attempts);
  if (notify.webhook_timeout) {
    options.webhook_timeout = *notify.webhook_timeout;
  }
  if (notify.webhook_retry_delay) {
    options.webhook_first_retry = *notify.webhook_retry_delay;
  }
  options.ca_file = notify.ca_file.value_or(options.ca_file);
  options.webhook_allow = notify.webhook_allow;
  GF_TRY(ValidateNotifierOptions(options));
  return options;
}

sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return signals;
}

int WaitForStopSignal(const sigset_t& signals) {
  int sig = 0;
  sigwait(&signals, &sig);
  return sig;
}

std::uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return 0;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);  // best effort: the old limit still works for small sites
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

int WaitForStopSignal(const sigset_t& signals, std::chrono::milliseconds timeout) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  timespec wait{
      .tv_sec = s.count(),
      .tv_nsec = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout - s).count()};
  const int sig = sigtimedwait(&signals, nullptr, &wait);
  return sig > 0 ? sig : 0;
}

ApiServerOptions WithApiConfig(ApiServerOptions options, const ApiConfig& api) {
  options.max_connections = api.max_connections.value_or(options.max_connections);
  options.connections_per_client =
      api.connections_per_client.value_or(options.connections_per_client);
  options.max_watches = api.max_watches.value_or(options.max_watches);
  options.watches_per_client = api.watches_per_client.value_or(options.watches_per_client);
  options.rate_limit = api.rate_limit.value_or(options.rate_limit);
  options.rate_burst = api.rate_burst.value_or(options.rate_burst);
  return options;
}

std::string SettingsFile(const std::string& flag) {
  if (flag.empty() && std::filesystem::exists(std::string(kDefaultConfigPath))) {
    return std::string(kDefaultConfigPath);
  }
  return flag;
}

Result<HostCapacityOptions> HostCapacityFromFlags(const std::string& node_cpus,
                                                  const std::string& node_mem,
                                                  const std::string& reserve_cpus,
                                                  const std::string& reserve_mem) {
  HostCapacityOptions host;
  if (!node_cpus.empty()) {
    GF_ASSIGN_OR_RETURN(host.cpus, ParseCpuCount(node_cpus, "--node-cpus"));
  }
  if (!node_mem.empty()) {
    GF_ASSIGN_OR_RETURN(host.memory_mib, ParseMemoryMib(node_mem, "--node-mem"));
  }
  if (!reserve_cpus.empty()) {
    if (reserve_cpus == "0") {
      host.reserve_cpus = 0;
    } else {
      GF_ASSIGN_OR_RETURN(host.reserve_cpus, ParseCpuCount(reserve_cpus, "--reserve-cpus"));
    }
  }
  if (!reserve_mem.empty()) {
    if (reserve_mem == "0") {
      host.reserve_mib = 0;
    } else {
      GF_ASSIGN_OR_RETURN(host.reserve_mib, ParseMemoryMib(reserve_mem, "--reserve-mem"));
    }
  }
  return host;
}

Status AddLabelFlags(const std::vector<std::string>& flags,
                     std::map<std::string, std::string>& labels) {
  for (const std::string& text : flags) {
    GF_ASSIGN_OR_RETURN(auto label, ParseLabel(text, "--label"));
    labels[label.first] = std::move(label.second);
  }
  return OkStatus();
}

std::string ContainmentBannerLine(const exec::Containment& containment) {
  if (containment.mode != "cgroup-v2") {
    spdlog::warn("process containment is {}: {}", containment.mode, containment.detail);
    return "  containment: " + containment.mode + " (WARNING: " + containment.detail + ")\n";
  }
  return "  containment: " + containment.mode + " (" + containment.detail + ")\n";
}

int Die(std::string_view command, const Error& e) {
  std::cerr << "gpufleet " << command << ": " << e.message << '\n';
  return 1;
}

}  // namespace gf
