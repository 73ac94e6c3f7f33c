// `gpufleet run [OPTIONS] -- CMD ARGS`: an interactive job, as Slurm's `srun --pty` (issue #24).
//
// Submits the job with a terminal (model/terminal.h: the job's stdin/stdout/stderr are a
// pseudo-terminal on its node, of this terminal's size), waits while it is pending (saying why,
// Ctrl-C cancels it), then attaches this terminal to it:
//   - keys go to the job as typed: this terminal is in raw mode, so Ctrl-C, Ctrl-Z, arrows and
//     Tab reach the job's own terminal, whose line discipline acts on them as a local one does
//     (Ctrl-C is SIGINT for the job's foreground process group). Each read of stdin is one
//     POST /api/v1/jobs/ID/terminal;
//   - the job's output is its stdout log, followed as `logs -f` follows it (polled at 10 ms
//     while output flows or just after a key, backing off to 200 ms), written here unchanged;
//   - a window resize (SIGWINCH) sends the new size, which the job gets as SIGWINCH;
//   - a keepalive every 5 s tells the job's supervisor the session is alive: without one for
//     30 s it hangs up on the job (this process was killed, its machine or network went away);
//   - SIGHUP, SIGTERM or SIGQUIT here, or this terminal hanging up (it closed), cancel the job.
// The job ends the session: this command exits with its exit code (128+N after signal N), after
// a line on stderr when it did not complete. With stdin not a terminal (a pipe), its bytes are
// typed in as they come and its end types Ctrl-D; Ctrl-C here is typed in as Ctrl-C.
//
// By default the job is --interactive (the idle reaper's interactive threshold) and
// --no-requeue (a session cannot resume elsewhere). Not with --array, --nodes > 1, --output or
// --error (the terminal is the job's output).
#pragma once

#include "cli/client_commands.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace gf {

void AddRunCommand(CLI::App& app, ClientContext& ctx);

}  // namespace gf
