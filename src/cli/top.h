// `gpufleet top`: a live, full-screen view of the cluster's GPUs and the caller's jobs, like
// nvitop. Two threads follow the API's watch streams (GET /api/v1/gpus?watch=1 and
// /api/v1/jobs?watch=1, see api/api_server.h), each with its own ApiClient, and wake the main
// thread, which owns the terminal: it draws the frame of top_frame.h with raw ANSI escapes on
// the alternate screen (cursor hidden), redraws on new data, on SIGWINCH and once a second,
// and quits on `q` or Ctrl-C with exit 0. The terminal is restored on every way out: normal
// return, SIGINT/SIGTERM/SIGHUP/SIGQUIT (exit 128+N, 0 for SIGINT), and fatal signals (restored
// from the handler, then the signal goes on to its previous handler). A lost stream is shown
// on the title line and retried every second.
//
// `--once` prints one frame to stdout (plain GETs, no escapes) and exits: for scripts and
// tests. Without --once, stdin and stdout must be a terminal.
#pragma once

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace gf {

struct ClientContext;

void AddTopCommand(CLI::App& app, ClientContext& context);

}  // namespace gf
