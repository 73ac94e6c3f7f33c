#include "executor/shim_server.h"

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "executor/detach.h"
#include "executor/executor.h"
#include "executor/job_files.h"
#include "executor/process_tree.h"

namespace gf::exec {
namespace {

namespace fs = std::filesystem;

// A reply: the shim's pid (0 when none was started), then the error text, if any.
struct ReplyHead {
  std::int32_t pid = 0;
};
constexpr std::size_t kMaxMessage = PATH_MAX + sizeof(ReplyHead) + 512;

void ServerLog(const std::string& line) {
  std::fprintf(stderr, "gpufleet shim-server: %s\n", line.c_str());
}

bool SendReply(int fd, pid_t pid, const std::string& error) {
  std::vector<char> message(sizeof(ReplyHead) + error.size());
  const ReplyHead head{.pid = pid};
  std::memcpy(message.data(), &head, sizeof head);
  std::memcpy(message.data() + sizeof head, error.data(), error.size());
  return ::send(fd, message.data(), message.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(message.size());
}

// One request: the job folder, absolute. Forks its shim; the shim closes the socket with every
// other fd (ForkDetached), so a job never holds it.
bool Serve(int fd, const std::string& request) {
  const fs::path dir(request);
  if (!dir.is_absolute()) {
    return SendReply(fd, 0, "the job folder must be absolute, got '" + request + "'");
  }
  Result<pid_t> shim = ForkDetached(
      [&dir] {
        ::prctl(PR_SET_NAME, "gpufleet-shim");  // its argv still reads "shim-server"
        return ShimMain(dir);
      },
      dir / kShimLogFile);
  return shim.ok() ? SendReply(fd, *shim, "") : SendReply(fd, 0, shim.error().message);
}

}  // namespace

ShimServerClient::ShimServerClient(fs::path exe, fs::path log_path)
    : exe_(std::move(exe)), log_path_(std::move(log_path)) {}

ShimServerClient::~ShimServerClient() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

Status ShimServerClient::StartServer() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return IoError("cannot start the shim server: socketpair: " + ErrnoText(errno));
  }
  if (sv[1] < 3) {  // an agent started with 0-2 closed: the daemon's dup2s onto 0-2 would hit it
    const int moved = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 3);
    const int err = errno;
    ::close(sv[1]);
    sv[1] = moved;
    if (moved < 0) {
      ::close(sv[0]);
      return IoError("cannot start the shim server: fcntl: " + ErrnoText(err));
    }
  }
  Result<pid_t> pid = SpawnDetached(
      {exe_.string(), "shim-server", "--fd", std::to_string(sv[1])}, log_path_, sv[1]);
  ::close(sv[1]);
  if (!pid.ok()) {
    ::close(sv[0]);
    return pid.error();
  }
  fd_ = sv[0];
  server_pid_ = *pid;
  return OkStatus();
}

// Forgets the server. A hung one is SIGKILLed; one that closed its end is gone or going (an idle
// one ends when it reads EOF on the socket closed here).
void ShimServerClient::DropServer(bool hung) {
  if (std::optional<PidRecord> rec = RecordOf(server_pid_); hung && rec && IsAlive(*rec)) {
    ::kill(server_pid_, SIGKILL);
  }
  ::close(fd_);
  fd_ = -1;
  server_pid_ = 0;
}

ShimServerClient::Spawn ShimServerClient::Start(const fs::path& job_dir) {
  if (fd_ < 0) {
    if (Status started = StartServer(); !started.ok()) {
      return {.outcome = Outcome::kNotSent, .pid = 0, .why = started.error().message};
    }
  }
  const std::string& request = job_dir.native();
  // A failed send of a SEQPACKET message queued nothing: no shim can have been started.
  if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    std::string why = "the shim server is gone (send: " + ErrnoText(errno) + ")";
    DropServer(/*hung=*/false);
    return {.outcome = Outcome::kNotSent, .pid = 0, .why = why};
  }
  return AwaitReply();
}

// The server's answer to the request just sent, or kLost when it closed its end or did not
// answer within kShimServerReplyTimeout.
ShimServerClient::Spawn ShimServerClient::AwaitReply() {
  pollfd pfd{.fd = fd_, .events = POLLIN, .revents = 0};
  const int wait_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(kShimServerReplyTimeout).count());
  int ready;
  while ((ready = ::poll(&pfd, 1, wait_ms)) < 0 && errno == EINTR) {
  }
  std::vector<char> reply(kMaxMessage);
  ssize_t n = ready > 0 ? ::recv(fd_, reply.data(), reply.size(), 0) : -1;
  if (n < static_cast<ssize_t>(sizeof(ReplyHead))) {
    DropServer(/*hung=*/ready <= 0);
    return {.outcome = Outcome::kLost,
            .pid = 0,
            .why = ready > 0 ? "the shim server died" : "the shim server did not answer"};
  }
  ReplyHead head;
  std::memcpy(&head, reply.data(), sizeof head);
  if (head.pid <= 0) {
    return {
        .outcome = Outcome::kNotSent,
        .pid = 0,
        .why = std::string(reply.data() + sizeof head, static_cast<std::size_t>(n) - sizeof head)};
  }
  return {.outcome = Outcome::kStarted, .pid = head.pid, .why = ""};
}

}  // namespace gf::exec

namespace gf {

int ShimServerMain(int fd) {
  // Not inherited by anything the server execs (it execs nothing; the shims close it anyway).
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  std::vector<char> request(PATH_MAX + 1);
  while (true) {
    ssize_t n = ::recv(fd, request.data(), request.size(), 0);
    if (n == 0) {
      return 0;  // the agent's end closed
    }
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      exec::ServerLog("recv: " + ErrnoText(errno));
      return 1;
    }
    if (static_cast<std::size_t>(n) == request.size()) {
      (void)exec::SendReply(fd, 0, "the job folder's path is longer than PATH_MAX");
      continue;
    }
    if (!exec::Serve(fd, std::string(request.data(), static_cast<std::size_t>(n)))) {
      exec::ServerLog("send: " + ErrnoText(errno));
      return 1;
    }
  }
}

}  // namespace gf
