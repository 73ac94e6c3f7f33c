// Where the client commands connect and with which credentials: one place, so that every
// command (submit, queue, top, ...) gains the same flags, variables and settings file.
//
// Each setting comes from the first of: a flag, an environment variable, the client settings
// file (config/config.h ClientConfig: ~/.config/gpufleet/client.toml or
// $GPUFLEET_CLIENT_CONFIG), and last the local Unix socket (socket_path.h):
//   servers:  --server URL[,URL...] | --socket PATH, then GPUFLEET_SERVER | GPUFLEET_SOCKET,
//             then [client] servers, then the default socket
//   token:    --token-file F, then GPUFLEET_TOKEN (the token itself) | GPUFLEET_TOKEN_FILE,
//             then [client] token_file; read only when a server is reached over TCP, and
//             never sent on the Unix socket (there the kernel names the caller)
//   CA:       --ca-file F, then GPUFLEET_CA_FILE, then [client] ca_file; else the system's CAs
// The settings file is read only when a setting falls through to it. A token file readable by
// others is refused (api/credential_file.h). Errors name where the bad value came from.
//
// Pure functions over a ClientEnv (tests inject one); CurrentClientEnv() reads the process
// environment with getenv.
#pragma once

#include <optional>
#include <string>

#include "api/api_client.h"
#include "api/socket_path.h"
#include "config/config.h"
#include "core/result.h"

namespace gf {

// The client flags as given on the command line; "" = not given.
struct ClientFlags {
  std::string server;      // --server URL[,URL...]
  std::string socket;      // --socket PATH
  std::string token_file;  // --token-file F
  std::string ca_file;     // --ca-file F
};

struct ClientEnv {
  std::optional<std::string> server;           // $GPUFLEET_SERVER
  std::optional<std::string> token;            // $GPUFLEET_TOKEN
  std::optional<std::string> token_file;       // $GPUFLEET_TOKEN_FILE
  std::optional<std::string> ca_file;          // $GPUFLEET_CA_FILE
  std::optional<std::string> client_config;    // $GPUFLEET_CLIENT_CONFIG
  std::optional<std::string> xdg_config_home;  // $XDG_CONFIG_HOME
  SocketPathEnv socket;  // $GPUFLEET_SOCKET, $HOME, ... for the default socket
};

ClientEnv CurrentClientEnv();

// What ApiClient is built from.
struct ClientSettings {
  std::string endpoint;      // a socket path, or URLs separated by commas (api_client.h)
  ApiClientOptions options;  // ca_file and token set as resolved
  std::string source;        // where the endpoint came from: "--server", "GPUFLEET_SOCKET", ...
};

// The client settings file: $GPUFLEET_CLIENT_CONFIG (which must exist), else
// $XDG_CONFIG_HOME/gpufleet/client.toml or ~/.config/gpufleet/client.toml when it exists, else
// an empty ClientConfig. Errors: those of LoadClientConfig (config/config.h).
Result<ClientConfig> ReadClientFile(const ClientEnv& env);

// Errors: kInvalidArgument (--server with --socket, a bad settings file), and those of reading
// the token file (kPermissionDenied when others may read it, kNotFound, ...), each message
// starting with the flag, variable or file key that named the bad value.
Result<ClientSettings> ResolveClientSettings(const ClientFlags& flags, const ClientEnv& env);

}  // namespace gf
