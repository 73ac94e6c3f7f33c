#include "daemon.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "config/config.h"
#include "core/duration.h"
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

Result<std::chrono::seconds> ParseFlagDuration(std::string_view flag, const std::string& text,
                                               std::chrono::seconds min,
                                               std::chrono::seconds max) {
  auto d = ParseDuration(text);
  if (!d.ok() || *d < min || *d > max) {
    return InvalidArgument(std::string(flag) + ": '" + text + "' is not a duration between " +
                           FormatDuration(min) + " and " + FormatDuration(max) +
                           " (e.g. 30s, 5m)");
  }
  return *d;
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
  timespec wait{.tv_sec = s.count(),
                .tv_nsec = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout - s).count()};
  const int sig = sigtimedwait(&signals, nullptr, &wait);
  return sig > 0 ? sig : 0;
}

std::string SettingsFile(const std::string& flag) {
  if (flag.empty() && std::filesystem::exists(std::string(kDefaultConfigPath))) {
    return std::string(kDefaultConfigPath);
  }
  return flag;
}

Status AddLabelFlags(const std::vector<std::string>& flags,
                     std::map<std::string, std::string>& labels) {
  for (const std::string& text : flags) {
    GF_ASSIGN_OR_RETURN(auto label, ParseLabel(text, "--label"));
    labels[label.first] = std::move(label.second);
  }
  return OkStatus();
}

int Die(std::string_view command, const Error& e) {
  std::cerr << "gpufleet " << command << ": " << e.message << '\n';
  return 1;
}

}  // namespace gf
