// RunTool: runs an administrator's or the driver's command line for the agent (a GPU self-test,
// nvidia-cuda-mps-control) and waits for it, at most a timeout, keeping the tail of its output
// for the log. `/bin/sh -c COMMAND` runs as the agent's user, in its own process group, so
// that a timeout kills what the command started too.
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace gf {

struct ToolRun {
  std::string command;  // run by /bin/sh -c
  // Added to (and replacing the same names in) the agent's environment.
  std::vector<std::pair<std::string, std::string>> env{};
  std::string input{};  // written to its stdin, which is then closed; "" = /dev/null
  Millis timeout{60 * 1000};
};

// How one run ended: passed (exit 0), or why not, with its last output.
struct ToolOutcome {
  bool passed = false;
  std::string detail{};  // "exit 1", "killed: still running after the timeout (10m)", ...
  std::string output{};  // the tail of its stdout and stderr together (at most 2 KiB)
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
