// Where the API's Unix socket lives, for the server that listens and the client that connects.
//
// The rule, so that a user's client finds a root-run daemon without configuration:
//   server (gpufleet up / server):
//     1. $GPUFLEET_SOCKET (or --socket) if set;
//     2. run as root:  /run/gpufleet/gpufleet.sock
//     3. run as a user: $XDG_RUNTIME_DIR/gpufleet/gpufleet.sock when XDG_RUNTIME_DIR is set,
//                       else ~/.local/share/gpufleet/gpufleet.sock
//   client (every other subcommand):
//     1. $GPUFLEET_SOCKET (or --socket) if set, used as given even if it does not exist;
//     2. the path its own user's server would listen on (rule 3 above; skipped for root),
//        if that file exists — a personal `gpufleet up` wins over the system one;
//     3. /run/gpufleet/gpufleet.sock if it exists;
//     4. nothing exists: the system path (3), the common install, so that the "cannot reach"
//        message names the socket an admin would expect.
// Identity comes from SO_PEERCRED, so a user connecting to root's socket is safe: the socket
// is mode 0666 and the server knows who is calling.
//
// Pure functions over a SocketPathEnv (tests inject one); the no-argument overloads read the
// process environment with getenv: call them before starting threads (a daemon keeps the
// CurrentSocketPathEnv() it read then), or at least never concurrently with setenv.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace gf {

inline constexpr const char* kSystemSocketPath = "/run/gpufleet/gpufleet.sock";

struct SocketPathEnv {
  std::optional<std::string> gpufleet_socket;  // $GPUFLEET_SOCKET
  std::optional<std::string> xdg_runtime_dir;  // $XDG_RUNTIME_DIR
  std::string home;                            // $HOME, else the passwd entry's home
  std::uint32_t euid = 0;
  std::function<bool(const std::string&)> exists;  // does a file exist at this path?
};

SocketPathEnv CurrentSocketPathEnv();

// Where a server run by env.euid listens (server rules 1-3).
std::string ServerSocketPath(const SocketPathEnv& env);
std::string ServerSocketPath();

// Where a client connects (client rules 1-4).
std::string DefaultSocketPath(const SocketPathEnv& env);
std::string DefaultSocketPath();

}  // namespace gf
