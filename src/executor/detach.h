// SpawnDetached: starts a program as a daemon that is not a child of the caller, so it outlives
// the caller (even a SIGKILL of it) and the caller never has to reap it.
//
// Free function; safe to call from any thread (it forks; the child uses only async-signal-safe
// calls before exec).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"

namespace gf::exec {

// fork, setsid, fork again, exec argv[0] (an absolute path: the daemon runs in "/") with stdin on
// /dev/null, stdout and stderr appended to `log_path`, every other inherited fd closed and
// signal mask and dispositions reset. Returns the daemon's pid once it has exec'd.
// Errors: kIo when a step fails (the message names it and the errno).
Result<pid_t> SpawnDetached(const std::vector<std::string>& argv,
                            const std::filesystem::path& log_path);

}  // namespace gf::exec
