// Parsing and printing of durations as people type them, and of times as RFC 3339.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"

namespace gf {

// Accepts "90s", "30m", "2h", "1d", "1h30m", "45" (minutes, as Slurm), "MM:SS", "HH:MM:SS",
// "D-HH", "D-HH:MM", "D-HH:MM:SS" (Slurm's --time forms). Requires a positive total of at
// most 100 years (36500d).
// Errors: kInvalidArgument naming the accepted forms.
Result<std::chrono::seconds> ParseDuration(std::string_view text);

// "3d4h", "2h5m", "45s", "0s": the largest units first, zero units left out.
std::string FormatDuration(std::chrono::seconds d);

// "2023-11-14T22:13:20.123Z" (always UTC, always milliseconds): the API's and the webhooks'.
std::string FormatRfc3339(Time t);

// "2023-11-14 22:13:21 UTC": a moment for a person, rounded up to the whole second (an
// estimate is never told earlier than it is). For text that is stored and read later (a pending
// reason), where a relative "in 16m" would be wrong by the time it is read.
std::string FormatUtcSeconds(Time t);

}  // namespace gf
