#include "executor/detach.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
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

// The grandchild: becomes the daemon. Async-signal-safe calls only.
[[noreturn]] void ExecDaemon(char* const* argv, int devnull, int log, int report) {
  ResetSignalsForExec();
  if (::dup2(devnull, 0) < 0 || ::dup2(log, 1) < 0 || ::dup2(log, 2) < 0) {
    Send(report, Report::kExecFailed, errno);
    ::_exit(127);
  }
  // The caller may hold sockets and files; the daemon must not keep them open.
  ::close_range(3, static_cast<unsigned>(report - 1), 0);
  ::close_range(static_cast<unsigned>(report + 1), ~0U, 0);
  // A daemon must not keep the caller's working directory (and its mount) busy.
  if (::chdir("/") != 0) {
    Send(report, Report::kExecFailed, errno);
    ::_exit(127);
  }
  ::execv(argv[0], argv);
  Send(report, Report::kExecFailed, errno);
  ::_exit(127);
}

// The intermediate child: a new session, so the daemon has no controlling terminal and no tie
// to the caller's process group; then it forks the daemon and exits, which re-parents the
// daemon to init (or the nearest subreaper).
[[noreturn]] void Intermediate(char* const* argv, int devnull, int log, int report) {
  if (::setsid() < 0) {
    Send(report, Report::kSetsidFailed, errno);
    ::_exit(1);
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    Send(report, Report::kForkFailed, errno);
    ::_exit(1);
  }
  if (pid == 0) {
    ExecDaemon(argv, devnull, log, report);
  }
  Send(report, Report::kPid, pid);
  ::_exit(0);
}

Error StepError(const char* step, int err) {
  return IoError(std::string("cannot start the supervisor: ") + step + ": " + ErrnoText(err));
}

}  // namespace

Result<pid_t> SpawnDetached(const std::vector<std::string>& argv,
                            const std::filesystem::path& log_path) {
  std::vector<std::string> storage = argv;
  std::vector<char*> cargv;
  cargv.reserve(storage.size() + 1);
  for (std::string& a : storage) {
    cargv.push_back(a.data());
  }
  cargv.push_back(nullptr);
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
  pid_t mid = ::fork();
  if (mid == 0) {
    Intermediate(cargv.data(), devnull, log, report[1]);
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
  // Read until EOF: the intermediate's end closes when it exits, the daemon's on exec.
  std::optional<pid_t> daemon;
  std::optional<Error> error;
  Message m;
  ssize_t n;
  while ((n = ::read(report[0], &m, sizeof m)) != 0) {
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
      error = StepError(("exec " + argv[0]).c_str(), m.value);
    }
  }
  ::close(report[0]);
  if (error) {
    return *error;
  }
  if (!daemon) {
    return IoError("cannot start the supervisor: no pid reported");
  }
  return *daemon;
}

}  // namespace gf::exec
