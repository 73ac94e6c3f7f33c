// How the client commands read the job a user names on the command line (show, cancel, logs,
// explain, checkpoint, quota approve). Plain functions; no shared state.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace gf {

// A job id as typed ("17"). Errors: kInvalidArgument naming JOB and what to give instead.
Result<std::int64_t> ParseJobId(const std::string& text);

}  // namespace gf
