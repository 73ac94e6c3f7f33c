// The shim server ("zygote"): starts shims by fork instead of exec.
//
// Exec'ing the gpufleet binary for every shim costs ~6 ms of CPU in the dynamic loader alone
// (30 shared libraries, ~13,500 symbol bindings), and more in the kernel (mapping and faulting in
// a large binary, tearing it down). The server is that binary exec'd once per Executor, as
// `gpufleet shim-server --fd N`: a single-threaded process that waits on a socket and, for each
// launch, forks a shim from itself (ForkDetached: the same detachment as SpawnDetached) that runs
// ShimMain directly. The shim's contract (its files, fsyncs, subreaper, signals) is unchanged.
//
// Why a separate exec'd process and not a fork of the agent: the agent has threads by the time it
// launches anything, and a fork of a multi-threaded process may only call async-signal-safe
// functions (another thread may have held malloc's lock at the fork). The server never starts a
// thread, so its forks may run ordinary code.
//
// Lifetime and failure: the server is itself detached (not the agent's child: nothing to reap)
// and exits when its socket reports EOF (gf::ShimServerMain, executor.h), i.e. when the agent's end
// closes (Executor destroyed, agent exited or crashed). The socket is SOCK_SEQPACKET (one message
// per request and per reply) and close-on-exec in the agent; the shims close it (ForkDetached
// closes every fd but 0-2).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "core/result.h"

namespace gf::exec {

// The server's own output (the shims' goes to their folders' shim.log), in the run_dir.
inline constexpr std::string_view kShimServerLogFile = "shim-server.log";

// The agent's side. Owned by the Executor; not thread-safe.
class ShimServerClient {
 public:
  // `exe` is started as `exe shim-server --fd N`, with its own output appended to `log_path`.
  ShimServerClient(std::filesystem::path exe, std::filesystem::path log_path);
  ~ShimServerClient();  // closes the socket: the server exits
  ShimServerClient(const ShimServerClient&) = delete;
  ShimServerClient& operator=(const ShimServerClient&) = delete;

  enum class Outcome {
    kStarted,  // pid is the shim's
    kNotSent,  // no server (it could not be started, or died idle): nothing was started
    kLost,     // the server died or hung with the request: a shim may or may not run
  };
  struct Spawn {
    Outcome outcome = Outcome::kNotSent;
    pid_t pid = 0;
    std::string why;  // kNotSent, kLost: what went wrong
  };
  // Asks the server to start `gpufleet shim --job-dir job_dir`'s equivalent; starts the server
  // first when there is none (the first launch, or the one after the server was lost).
  Spawn Start(const std::filesystem::path& job_dir);

  // The server's pid, 0 while none runs. For tests and diagnostics.
  pid_t ServerPid() const { return server_pid_; }

 private:
  Status StartServer();
  Spawn AwaitReply();
  void DropServer(bool hung);

  std::filesystem::path exe_;
  std::filesystem::path log_path_;
  int fd_ = -1;
  pid_t server_pid_ = 0;
};

// How long the agent waits for the server's reply (a fork and a pipe read: milliseconds) before
// it takes the server for hung, kills it and starts another for the next launch.
inline constexpr std::chrono::seconds kShimServerReplyTimeout{5};

}  // namespace gf::exec
