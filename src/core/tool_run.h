// RunTool: runs an administrator's or a tool's command for a daemon (a GPU self-test,
// nvidia-cuda-mps-control, Slurm's scontrol) and waits for it, at most a timeout, keeping the
// tail of its output. `/bin/sh -c COMMAND` (or `argv` as given, with no shell) runs as the
// daemon's user, in its own process group, so that a timeout kills what the command started too.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace gf {

struct ToolRun {
  std::string command;  // run by /bin/sh -c (when argv is empty)
  // Added to (and replacing the same names in) the agent's environment.
  std::vector<std::pair<std::string, std::string>> env{};
  std::string input{};  // written to its stdin, which is then closed; "" = /dev/null
  Millis timeout{60 * 1000};
  // Run as given, looked up in PATH, with no shell: for arguments that come from elsewhere (a
  // job id, a reason an admin typed), which must never be read by a shell.
  std::vector<std::string> argv{};
  // How much of the end of its output is kept: the last lines for a log, or the whole answer
  // of a program whose output is read (larger output loses its beginning).
  std::size_t keep_output = 2048;
};

// How one run ended: passed (exit 0), or why not, with its last output.
struct ToolOutcome {
  bool passed = false;
  std::string detail{};  // "exit 1", "killed: still running after the timeout (10m)", ...
  std::string output{};  // the tail of its stdout and stderr together (at most keep_output)
};

// While it runs, `*running` holds its process group (0 otherwise), for a caller that must stop
// it from another thread.
ToolOutcome RunTool(const ToolRun& run, std::atomic<int>* running = nullptr);

// Writes `text` to `fd`, a pipe to a command that may already have exited (RunTool's input to
// a program that failed at once): a write on a pipe nobody reads fails with EPIPE and raises
// SIGPIPE, which must not end the caller whatever its disposition of the signal. Returns
// whether every byte was written.
bool WriteIgnoringHangUp(int fd, const std::string& text);

}  // namespace gf
