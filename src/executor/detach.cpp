#include "executor/detach.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor/exec_util.h"
#include "executor/job_files.h"

namespace gf::exec {
namespace {

// Messages on the report pipe; each is one write of PIPE_BUF or less, so atomic.
enum class Report : std::int32_t { kPid, kSetsidFailed, kForkFailed, kExecFailed };
struct Message {
  Report kind = Report::kPid;
  std::int32_t value = 0;  // the pid or the errno
};

void Send(int fd, Report kind, std::int32_t value) {
  Message m{kind, value};
  ssize_t ignored = ::write(fd, &m, sizeof m);
  (void)ignored;
}

// What the grandchild becomes: a program exec'd (argv) or a function run in place (body).
struct DaemonPlan {
  char* const* argv = nullptr;
  int keep_fd = -1;  // exec only: left open for the program
  const std::function<int()>* body = nullptr;
  int devnull = -1;
  int log = -1;
  int report = -1;
};

// The grandchild: becomes the daemon. Async-signal-safe calls only up to exec; a body runs
// after the report pipe closed (ForkDetached's caller is single-threaded, so it may).
[[noreturn]] void RunDaemon(const DaemonPlan& plan) {
  ResetSignalsForExec();
  if (::dup2(plan.devnull, 0) < 0 || ::dup2(plan.log, 1) < 0 || ::dup2(plan.log, 2) < 0) {
    Send(plan.report, Report::kExecFailed, errno);
    ::_exit(127);
  }
  // The caller may hold sockets and files; the daemon must not keep them open.
  CloseFdsFrom3Except(plan.report, plan.keep_fd);
  if (plan.keep_fd >= 0) {
    ::fcntl(plan.keep_fd, F_SETFD, 0);  // through exec
  }
  // A daemon must not keep the caller's working directory (and its mount) busy.
  if (::chdir("/") != 0) {
    Send(plan.report, Report::kExecFailed, errno);
    ::_exit(127);
  }
  if (plan.body != nullptr) {
    ::close(plan.report);  // EOF: the caller returns the pid
    const int status = (*plan.body)();
    std::fflush(nullptr);
    ::_exit(status);  // not exit(): the forked copy's atexit handlers belong to the caller
  }
  ::execv(plan.argv[0], plan.argv);
  Send(plan.report, Report::kExecFailed, errno);
  ::_exit(127);
}

// The intermediate child: a new session, so the daemon has no controlling terminal and no tie
// to the caller's process group; then it forks the daemon and exits, which re-parents the
// daemon to init (or the nearest subreaper).
[[noreturn]] void Intermediate(const DaemonPlan& plan) {
  if (::setsid() < 0) {
    Send(plan.report, Report::kSetsidFailed, errno);
    ::_exit(1);
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    Send(plan.report, Report::kForkFailed, errno);
    ::_exit(1);
  }
  if (pid == 0) {
    RunDaemon(plan);
  }
  Send(plan.report, Report::kPid, pid);
  ::_exit(0);
}

Error StepError(const char* step, int err) {
  return IoError(std::string("cannot start the supervisor: ") + step + ": " + ErrnoText(err));
}

// Reads the report pipe until EOF (the intermediate's end closes when it exits, the daemon's on
// exec or before its body runs) and closes it.
Result<pid_t> ReadReport(int fd, const std::string& what) {
  std::optional<pid_t> daemon;
  std::optional<Error> error;
  Message m;
  ssize_t n;
  while ((n = ::read(fd, &m, sizeof m)) != 0) {
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n != static_cast<ssize_t>(sizeof m)) {
      break;
    }
    if (m.kind == Report::kPid) {
      daemon = m.value;
    }
    if (m.kind == Report::kSetsidFailed) {
      error = StepError("setsid", m.value);
    }
    if (m.kind == Report::kForkFailed) {
      error = StepError("fork", m.value);
    }
    if (m.kind == Report::kExecFailed) {
      error = StepError(what.c_str(), m.value);
    }
  }
  ::close(fd);
  if (error) {
    return *error;
  }
  if (!daemon) {
    return IoError("cannot start the supervisor: no pid reported");
  }
  return *daemon;
}

// Forks the intermediate with `plan` (its fds filled in here) and reads the daemon's pid.
// `what` names the daemon's program in errors.
Result<pid_t> Detach(DaemonPlan plan,
                     const std::filesystem::path& log_path,
                     const std::string& what) {
  int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (log < 0) {
    return StepError(("open " + log_path.string()).c_str(), errno);
  }
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  int report[2];
  if (devnull < 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    int err = errno;
    ::close(log);
    if (devnull >= 0) {
      ::close(devnull);
    }
    return StepError("pipe", err);
  }
  plan.devnull = devnull;
  plan.log = log;
  plan.report = report[1];
  pid_t mid = ::fork();
  if (mid == 0) {
    Intermediate(plan);
  }
  int fork_errno = errno;
  ::close(report[1]);
  ::close(devnull);
  ::close(log);
  if (mid < 0) {
    ::close(report[0]);
    return StepError("fork", fork_errno);
  }
  while (::waitpid(mid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return ReadReport(report[0], what);
}

}  // namespace

Result<pid_t> SpawnDetached(const std::vector<std::string>& argv,
                            const std::filesystem::path& log_path,
                            int keep_fd) {
  std::vector<std::string> storage = argv;
  std::vector<char*> cargv;
  cargv.reserve(storage.size() + 1);
  for (std::string& a : storage) {
    cargv.push_back(a.data());
  }
  cargv.push_back(nullptr);
  return Detach(DaemonPlan{.argv = cargv.data(), .keep_fd = keep_fd}, log_path, "exec " + argv[0]);
}

Result<pid_t> ForkDetached(const std::function<int()>& body,
                           const std::filesystem::path& log_path) {
  return Detach(DaemonPlan{.body = &body}, log_path, "start");
}

}  // namespace gf::exec
