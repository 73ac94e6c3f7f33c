// The terminal of an interactive job (`gpufleet run`, model/terminal.h), on the node.
//
// The shim of a job whose environment holds GPUFLEET_PTY opens a pseudo-terminal pair: the
// job's stdin, stdout and stderr are the slave side (its controlling terminal, owned by the
// job's owner, mode 0620, as sshd sets a login's), and the shim holds the master side:
//   - what the job prints is copied to its stdout.log, which `gpufleet run` (and `logs`)
//     follow like any job's output: one path for output, local or across `server`/`agent`, and
//     the session's transcript stays readable afterwards;
//   - what the user types comes as messages on a socket in the job's folder, `tty.sock`
//     (SOCK_SEQPACKET, mode 0600, and only the shim's own uid or root is heard), which the
//     agent writes to (SendTerminalInput) when the controller hands it a user's keystrokes or
//     window size. Ctrl-C is a byte like any other: the pty's line discipline turns it into
//     SIGINT for the job's foreground process group, as on a local terminal; a new window size
//     is set on the pty, which sends the job SIGWINCH.
//   - the session is alive while messages come: the client sends an empty one every few
//     seconds. None within the session timeout (the client was killed, its machine or network
//     went away) and the shim hangs up: SIGHUP to the job, then SIGKILL after a grace, as a
//     closed terminal would. A client that ends normally cancels the job itself.
//
// One message per packet: a kind byte, then its content ('i' + keystrokes, 'w' + "ROWSxCOLS",
// 'k' alone). Packets are at most kTerminalPacketBytes.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <poll.h>

#include "core/ids.h"
#include "core/result.h"
#include "model/job.h"
#include "model/terminal.h"

namespace gf::exec {

inline constexpr std::string_view kTerminalSocketFile = "tty.sock";
inline constexpr std::size_t kTerminalPacketBytes = 4096;

// The shim's side. Single-threaded (the shim's loop). Destroying it closes every fd and
// removes the socket.
class TerminalRelay {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  // Opens the pty pair with `size` and listens on dir/tty.sock. Errors: kIo naming the step.
  static Result<std::unique_ptr<TerminalRelay>> Open(const std::filesystem::path& dir,
                                                     const Owner& owner,
                                                     TerminalSize size,
                                                     std::chrono::seconds session_timeout);
  ~TerminalRelay();
  TerminalRelay(const TerminalRelay&) = delete;
  TerminalRelay& operator=(const TerminalRelay&) = delete;

  // The slave side, for the job's fds 0-2 (close-on-exec: the child dup2s it). CloseSlave
  // once the job is forked, so that the master reads end-of-file when the job's side closes.
  int SlaveFd() const { return slave_; }
  void CloseSlave();
  // Where the terminal's output goes (the job's stdout.log); the relay closes it.
  void SetLog(int fd);

  // The fds to wait on, appended to `fds`; OnPoll takes the same entries after the poll.
  void AddPollFds(std::vector<pollfd>& fds) const;
  void OnPoll(const pollfd* fds, std::size_t count);

  // True once no message came within the session timeout of the last one (or of Open).
  bool SessionLost(SteadyTime now) const;
  // Milliseconds until SessionLost may turn true (0 when it is), for the loop's poll timeout.
  std::int64_t MsUntilSessionLost(SteadyTime now) const;

  // Copies what the pty still holds to the log: the last words of a job that just ended.
  void Drain();

 private:
  TerminalRelay() = default;
  void ReadOutput();
  void WriteInput();
  void Accept();
  // Reads one packet of connection `fd`; false when the connection is done with.
  bool ReadMessage(int fd);

  int master_ = -1;
  int slave_ = -1;
  int listen_ = -1;
  int log_ = -1;
  bool master_done_ = false;  // the job's side closed (EIO): nothing more to read or write
  std::vector<int> connections_;
  std::string pending_input_;  // typed, not yet taken by the pty (it was full)
  std::filesystem::path socket_path_;
  std::chrono::seconds session_timeout_{30};
  SteadyTime last_heard_{};
};

// The agent's side: hands one message to the supervisor of the job in `job_dir` (keystrokes in
// packets of at most kTerminalPacketBytes, then the size, or one keepalive for an empty
// message). Stateless; any thread. Errors: kFailedPrecondition when the folder has no live
// terminal (the job has none, or it ended), kIo otherwise.
Status SendTerminalInput(const std::filesystem::path& job_dir,
                         JobId job,
                         const TerminalInput& input);

}  // namespace gf::exec
