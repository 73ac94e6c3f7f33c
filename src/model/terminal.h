// The terminal of an interactive job (`gpufleet run`, issue #24): the job's stdin, stdout and
// stderr are the slave side of a pseudo-terminal its supervisor opens on the node; what the
// user types travels client → API → controller → agent → supervisor → pty, and what the job
// prints goes to its stdout log, which the client follows (executor/terminal_relay.h).
//
// A job carries its terminal in its environment, as GPUFLEET_PTY=ROWSxCOLS (the size it starts
// with), as it carries its output file patterns (model/output_pattern.h): so it travels with the
// spec through the store, the API and the agents unchanged, and the job can see it has one.
// Plain functions; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "model/job.h"

namespace gf {

inline constexpr std::string_view kTerminalVariable = "GPUFLEET_PTY";

struct TerminalSize {
  int rows = 24;
  int cols = 80;
  friend bool operator==(const TerminalSize&, const TerminalSize&) = default;
};

// The bounds a size must keep (ioctl TIOCSWINSZ takes 16-bit numbers; 0 means "unknown").
inline constexpr int kMaxTerminalSide = 10000;

// One message from the user's terminal: keystrokes (raw bytes, possibly empty), and a new
// window size when it changed. An empty message still counts: it says the session is alive.
struct TerminalInput {
  std::string data{};
  std::optional<TerminalSize> size{};
};

// The most bytes of input one message may carry (a paste is sent in several).
inline constexpr std::size_t kMaxTerminalInputBytes = std::size_t{16} * 1024;

// "24x80". Errors: kInvalidArgument naming `field` and the form, for anything else or a side
// outside 1..kMaxTerminalSide.
Result<TerminalSize> ParseTerminalSize(std::string_view text, std::string_view field);
std::string FormatTerminalSize(const TerminalSize& size);

// Checks one side of a size given as a number (the API's rows/cols). kInvalidArgument naming
// `field` outside 1..kMaxTerminalSide.
Status ValidateTerminalSide(std::int64_t value, std::string_view field);

// The terminal's size as a job's environment gives it (kTerminalVariable's value), if it has one:
// the controller's question (has the job a terminal?) and the shim's (of what size?) alike.
std::optional<std::string_view> TerminalSizeText(
    const std::vector<std::pair<std::string, std::string>>& env);
inline bool HasTerminal(const JobSpec& spec) {
  return TerminalSizeText(spec.env).has_value();
}

}  // namespace gf
