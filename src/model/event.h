// Event: one line of the audit log — who did what, when, and why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/ids.h"

namespace gf {

struct Event {
  std::int64_t seq = 0;  // assigned by the store, increasing
  Time time{};
  std::optional<JobId> job;  // the job it concerns, if any
  std::string kind;          // "submit", "start", "state", "cancel", "node", ...
  std::string actor;         // user name, "scheduler", "agent:<node>", "system"
  std::string message;       // a sentence a person can read
};

}  // namespace gf
