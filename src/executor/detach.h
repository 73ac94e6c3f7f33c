// SpawnDetached / ForkDetached: start a daemon that is not a child of the caller, so it
// outlives the caller (even a SIGKILL of it) and the caller never has to reap it.
//
// Free functions. SpawnDetached is safe to call from any thread (it forks; the child uses only
// async-signal-safe calls before exec). ForkDetached runs arbitrary code in the forked daemon,
// so only a single-threaded process may call it (the shim server, shim_server.h).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.h"

namespace gf::exec {

// fork, setsid, fork again, exec argv[0] (an absolute path: the daemon runs in "/") with stdin on
// /dev/null, stdout and stderr appended to `log_path`, every other inherited fd closed (but
// `keep_fd`, when >= 0, which stays open under its number across exec) and signal mask and
// dispositions reset. Returns the daemon's pid once it has exec'd.
// Errors: kIo when a step fails (the message names it and the errno).
Result<pid_t> SpawnDetached(const std::vector<std::string>& argv,
                            const std::filesystem::path& log_path,
                            int keep_fd = -1);

// The same detachment and the same clean slate (0 /dev/null, 1-2 `log_path`, no other fd, cwd
// "/", default signals), but the daemon runs `body` instead of exec, then exits with its
// result: no exec, no dynamic loading. Returns the daemon's pid once `body` is about to run.
// The caller must be single-threaded (the daemon is a fork of it and runs ordinary code).
Result<pid_t> ForkDetached(const std::function<int()>& body, const std::filesystem::path& log_path);

}  // namespace gf::exec
