// The keys of `gpufleet top`, as a pure function of the bytes read from the terminal, so tests
// can type them:
//   q, Q, Ctrl-C          quit
//   j, Down / k, Up       select the next / previous job of the list (TopJobOrder)
//   c                     ask to cancel the selected job; y confirms, any other key does not
//   s                     sort the processes by the next key (GPU memory, CPU, host memory, pid)
// Any key clears the message of the last action. Escape sequences other than the arrows
// (function keys, a mouse) are read whole and ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/top_frame.h"

namespace gf {

// What a batch of keys asks of the live view beyond changing `controls`.
struct TopKeyOutcome {
  bool quit = false;
  std::optional<std::int64_t> cancel{};  // confirmed: cancel this job now
  bool operator==(const TopKeyOutcome&) const = default;
};

// Applies `keys`, in order, to `controls`. `job_order`: the ids of the job list as the frame
// shows it. Keys after a quit are not read.
TopKeyOutcome ApplyTopKeys(std::string_view keys,
                           const std::vector<std::int64_t>& job_order,
                           TopControls& controls);

}  // namespace gf
