#include "executor/terminal_relay.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>

#include <fcntl.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

namespace gf::exec {
namespace {

namespace fs = std::filesystem;

constexpr char kInputMessage = 'i';
constexpr char kSizeMessage = 'w';
constexpr char kKeepaliveMessage = 'k';
// Typed but not yet taken by the pty beyond this is dropped: a job that never reads its
// terminal must not grow the shim without bound.
constexpr std::size_t kMaxPendingInput = 1 << 20;
constexpr std::size_t kMaxConnections = 16;

Error Errno(const std::string& what) {
  const int err = errno;
  return IoError(what + ": " + ErrnoText(err));
}

// Calls `call` with the socket address of `path`. One longer than sun_path allows (108 bytes;
// a deep run dir) is reached through its folder: /proc/self/fd/N/NAME, N an O_PATH fd of the
// folder held open for the call. Returns the call's result (errno set as it left it).
int WithAddress(const fs::path& path, const std::function<int(const sockaddr*, socklen_t)>& call) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string text = path.string();
  int dir_fd = -1;
  if (text.size() >= sizeof addr.sun_path) {
    dir_fd = ::open(path.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
      return -1;
    }
    text = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + path.filename().string();
  }
  std::memcpy(addr.sun_path, text.c_str(), text.size() + 1);
  const int rc = call(reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  if (dir_fd >= 0) {
    ::close(dir_fd);
  }
  errno = err;
  return rc;
}

Status SetSize(int fd, const TerminalSize& size) {
  winsize ws{};
  ws.ws_row = static_cast<std::uint16_t>(size.rows);
  ws.ws_col = static_cast<std::uint16_t>(size.cols);
  if (::ioctl(fd, TIOCSWINSZ, &ws) != 0) {
    return Errno("cannot set the terminal's size");
  }
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<TerminalRelay>> TerminalRelay::Open(const fs::path& dir,
                                                           const Owner& owner,
                                                           TerminalSize size,
                                                           std::chrono::seconds session_timeout) {
  std::unique_ptr<TerminalRelay> relay(new TerminalRelay());
  relay->session_timeout_ = session_timeout;
  relay->last_heard_ = std::chrono::steady_clock::now();
  relay->master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (relay->master_ < 0) {
    return Errno("cannot open a pseudo-terminal (posix_openpt)");
  }
  if (::grantpt(relay->master_) != 0 || ::unlockpt(relay->master_) != 0) {
    return Errno("cannot unlock the pseudo-terminal");
  }
  char name[128];
  if (::ptsname_r(relay->master_, name, sizeof name) != 0) {
    return Errno("cannot name the pseudo-terminal");
  }
  relay->slave_ = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (relay->slave_ < 0) {
    return Errno(std::string("cannot open ") + name);
  }
  // The job's own terminal, as a login's: its owner reads and writes it, group tty may write
  // (write(1), wall). A root shim's grantpt left it root's.
  if (::geteuid() == 0) {
    group tty{};
    group* found = nullptr;
    char buf[1024];
    const bool has_tty =
        ::getgrnam_r("tty", &tty, buf, sizeof buf, &found) == 0 && found != nullptr;
    if (::fchown(relay->slave_, owner.uid, has_tty ? tty.gr_gid : owner.gid) != 0 ||
        ::fchmod(relay->slave_, 0620) != 0) {
      return Errno(std::string("cannot give ") + name + " to " + owner.user);
    }
  }
  GF_TRY(SetSize(relay->master_, size));
  if (::fcntl(relay->master_, F_SETFL, O_NONBLOCK) != 0) {
    return Errno("cannot make the pseudo-terminal non-blocking");
  }
  relay->socket_path_ = dir / kTerminalSocketFile;
  relay->listen_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (relay->listen_ < 0) {
    return Errno("socket");
  }
  ::unlink(relay->socket_path_.c_str());
  const int listen_fd = relay->listen_;
  if (WithAddress(relay->socket_path_, [listen_fd](const sockaddr* a, socklen_t n) {
        return ::bind(listen_fd, a, n);
      }) != 0) {
    return Errno("cannot listen on " + relay->socket_path_.string());
  }
  if (::chmod(relay->socket_path_.c_str(), 0600) != 0 || ::listen(relay->listen_, 8) != 0) {
    return Errno("cannot listen on " + relay->socket_path_.string());
  }
  return relay;
}

TerminalRelay::~TerminalRelay() {
  for (int fd : connections_) {
    ::close(fd);
  }
  for (int fd : {master_, slave_, listen_, log_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  if (!socket_path_.empty()) {
    ::unlink(socket_path_.c_str());
  }
}

void TerminalRelay::CloseSlave() {
  if (slave_ >= 0) {
    ::close(slave_);
    slave_ = -1;
  }
}

void TerminalRelay::SetLog(int fd) {
  if (log_ >= 0) {
    ::close(log_);
  }
  log_ = fd;
}

void TerminalRelay::AddPollFds(std::vector<pollfd>& fds) const {
  using Events = decltype(pollfd::events);
  const auto master_events =
      master_done_ ? Events{0}
                   : static_cast<Events>(POLLIN | (pending_input_.empty() ? 0 : POLLOUT));
  fds.push_back({master_done_ ? -1 : master_, master_events, 0});
  fds.push_back({listen_, POLLIN, 0});
  for (int fd : connections_) {
    fds.push_back({fd, POLLIN, 0});
  }
}

void TerminalRelay::OnPoll(const pollfd* fds, std::size_t count) {
  if (count < 2) {
    return;
  }
  if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
    ReadOutput();
  }
  if ((fds[0].revents & POLLOUT) != 0) {
    WriteInput();
  }
  std::vector<int> done;
  for (std::size_t i = 2; i < count; ++i) {
    if (fds[i].revents != 0 && !ReadMessage(fds[i].fd)) {
      done.push_back(fds[i].fd);
    }
  }
  for (int fd : done) {
    ::close(fd);
    std::erase(connections_, fd);
  }
  if ((fds[1].revents & POLLIN) != 0) {
    Accept();  // after the loop above: the new connections are not in this poll's entries
  }
}

void TerminalRelay::ReadOutput() {
  char buf[8192];
  while (!master_done_) {
    const ssize_t n = ::read(master_, buf, sizeof buf);
    if (n > 0) {
      if (log_ >= 0) {
        ssize_t ignored = ::write(log_, buf, static_cast<std::size_t>(n));
        (void)ignored;  // a full disk loses output, not the job
      }
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      return;
    }
    // EIO (or 0): every holder of the slave side closed it; the job's terminal is gone.
    master_done_ = true;
    pending_input_.clear();
  }
}

void TerminalRelay::WriteInput() {
  while (!pending_input_.empty() && !master_done_) {
    const ssize_t n = ::write(master_, pending_input_.data(), pending_input_.size());
    if (n > 0) {
      pending_input_.erase(0, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;  // EAGAIN: the pty's buffer is full, POLLOUT says when it takes more
    }
  }
}

void TerminalRelay::Accept() {
  while (true) {
    const int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      return;
    }
    // Only the agent speaks for the user: root, or the uid of a non-root agent (and its shim).
    ucred peer{};
    socklen_t len = sizeof peer;
    if (connections_.size() >= kMaxConnections ||
        ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
        (peer.uid != 0 && peer.uid != ::geteuid())) {
      ::close(fd);
      continue;
    }
    connections_.push_back(fd);
  }
}

bool TerminalRelay::ReadMessage(int fd) {
  char buf[kTerminalPacketBytes];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n < 0) {
    return errno == EAGAIN || errno == EINTR;
  }
  if (n == 0) {
    return false;  // the sender closed its end
  }
  last_heard_ = std::chrono::steady_clock::now();
  const std::string_view body(buf + 1, static_cast<std::size_t>(n) - 1);
  switch (buf[0]) {
    case kInputMessage:
      if (!master_done_ && pending_input_.size() + body.size() <= kMaxPendingInput) {
        pending_input_.append(body);
        WriteInput();
      }
      break;
    case kSizeMessage:
      if (Result<TerminalSize> size = ParseTerminalSize(body, "size"); size.ok() && !master_done_) {
        // The kernel sends the job's foreground process group SIGWINCH when the size changes.
        Status set = SetSize(master_, *size);
        (void)set;
      }
      break;
    default:  // kKeepaliveMessage, or a kind this shim does not know: still a sign of life
      break;
  }
  return true;
}

bool TerminalRelay::SessionLost(SteadyTime now) const {
  return now - last_heard_ >= session_timeout_;
}

std::int64_t TerminalRelay::MsUntilSessionLost(SteadyTime now) const {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(last_heard_ + session_timeout_ - now);
  return std::max<std::int64_t>(0, left.count());
}

void TerminalRelay::Drain() {
  ReadOutput();
}

Status SendTerminalInput(const fs::path& job_dir, JobId job, const TerminalInput& input) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return Errno("socket");
  }
  // A stuck shim (its queue full) must not hold the agent's thread for long.
  const timeval send_timeout{.tv_sec = 2, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  const fs::path path = job_dir / kTerminalSocketFile;
  if (WithAddress(path, [fd](const sockaddr* a, socklen_t n) { return ::connect(fd, a, n); }) !=
      0) {
    const int err = errno;
    ::close(fd);
    if (err == ENOENT || err == ECONNREFUSED) {
      return FailedPrecondition("job " + std::to_string(job.value()) +
                                " has no terminal here: it was not started by `gpufleet run`, " +
                                "or it has ended");
    }
    return IoError("cannot reach job " + std::to_string(job.value()) + "'s terminal (" +
                   path.string() + "): " + ErrnoText(err));
  }
  std::vector<std::string> packets;
  for (std::size_t at = 0; at < input.data.size(); at += kTerminalPacketBytes - 1) {
    packets.push_back(kInputMessage + input.data.substr(at, kTerminalPacketBytes - 1));
  }
  if (input.size) {
    packets.push_back(kSizeMessage + FormatTerminalSize(*input.size));
  }
  if (packets.empty()) {
    packets.emplace_back(1, kKeepaliveMessage);
  }
  for (const std::string& packet : packets) {
    if (::send(fd, packet.data(), packet.size(), MSG_NOSIGNAL) < 0) {
      const int err = errno;
      ::close(fd);
      return IoError("cannot write to job " + std::to_string(job.value()) +
                     "'s terminal: " + ErrnoText(err));
    }
  }
  ::close(fd);
  return OkStatus();
}

}  // namespace gf::exec
