// Small helpers for a process between fork and exec, shared by the executor's two exec paths:
// SpawnDetached's daemon (detach.cpp) and the job's own process (shim_child.cpp).
//
// Internal to gf_executor. Free functions, async-signal-safe, so callable in a forked child.
#pragma once

namespace gf::exec {

// Gives the program about to be exec'd a clean slate for signals: every disposition back to
// SIG_DFL (SIGKILL and SIGSTOP cannot be changed) and an empty signal mask. Both survive exec,
// and the caller may have blocked signals (the shim's signalfd) or ignored some (the agent).
// Async-signal-safe; errors are ignored (there is no one to report them to, and exec goes on).
void ResetSignalsForExec();

// Closes every fd from 3 up except `keep_a` and `keep_b` (either may be -1: none).
// Async-signal-safe (close_range).
void CloseFdsFrom3Except(int keep_a, int keep_b);

}  // namespace gf::exec
