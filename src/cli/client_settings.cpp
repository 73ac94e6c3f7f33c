#include "cli/client_settings.h"

#include <cstdlib>
#include <utility>

#include "api/credential_file.h"
#include "config/config.h"

namespace gf {
namespace {

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): before threads
  if (value == nullptr || *value == '\0') {
    return std::nullopt;  // set but empty counts as unset, as for GPUFLEET_SOCKET
  }
  return std::string(value);
}

Error Named(const std::string& where, const Error& e) {
  return Error{e.code, where + ": " + e.message};
}

}  // namespace

Result<ClientConfig> ReadClientFile(const ClientEnv& env) {
  const std::string& home = env.socket.home;
  if (env.client_config) {
    return LoadClientConfig(*env.client_config, home);  // named: it must exist
  }
  const std::string dir = env.xdg_config_home ? *env.xdg_config_home : home + "/.config";
  const std::string path = dir + "/gpufleet/client.toml";
  if (!env.socket.exists || !env.socket.exists(path)) {
    return ClientConfig{};
  }
  return LoadClientConfig(path, home);
}

namespace {

// The client settings file, read on first use: most commands never need it.
class LazyClientConfig {
 public:
  explicit LazyClientConfig(const ClientEnv& env) : env_(env) {}

  // The file's settings; an empty ClientConfig when no file exists at the default place.
  Result<const ClientConfig*> Get() {
    if (!loaded_) {
      loaded_ = true;
      config_ = Load();
    }
    if (!config_.ok()) {
      return config_.error();
    }
    return &*config_;
  }

 private:
  Result<ClientConfig> Load() const { return ReadClientFile(env_); }

  const ClientEnv& env_;
  bool loaded_ = false;
  Result<ClientConfig> config_ = ClientConfig{};
};

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

// The endpoint and where it came from.
Result<std::pair<std::string, std::string>> ResolveEndpoint(const ClientFlags& flags,
                                                            const ClientEnv& env,
                                                            LazyClientConfig& file) {
  using Out = std::pair<std::string, std::string>;
  if (!flags.server.empty() && !flags.socket.empty()) {
    return InvalidArgument(
        "give --server (a gpufleet over the network) or --socket (a local "
        "one), not both");
  }
  if (!flags.server.empty()) {
    return Out(flags.server, "--server");
  }
  if (!flags.socket.empty()) {
    return Out(flags.socket, "--socket");
  }
  if (env.server) {
    return Out(*env.server, "GPUFLEET_SERVER");
  }
  if (env.socket.gpufleet_socket) {
    return Out(*env.socket.gpufleet_socket, "GPUFLEET_SOCKET");
  }
  GF_ASSIGN_OR_RETURN(const ClientConfig* config, file.Get());
  if (!config->servers.empty()) {
    return Out(Join(config->servers), config->source + ": [client] servers");
  }
  return Out(DefaultSocketPath(env.socket), "the default socket");
}

bool IsNetworkEndpoint(const std::string& endpoint) {
  return endpoint.find("http://") != std::string::npos ||
         endpoint.find("https://") != std::string::npos;
}

Result<std::string> TokenFrom(const std::string& where, const std::string& path) {
  Result<std::string> token = ReadTokenFile(path);
  if (!token.ok()) {
    return Named(where, token.error());
  }
  return token;
}

// The token, or "" for none.
Result<std::string> ResolveToken(const ClientFlags& flags,
                                 const ClientEnv& env,
                                 LazyClientConfig& file) {
  if (!flags.token_file.empty()) {
    return TokenFrom("--token-file", flags.token_file);
  }
  if (env.token && env.token_file) {
    return InvalidArgument("GPUFLEET_TOKEN and GPUFLEET_TOKEN_FILE are both set; unset one");
  }
  if (env.token) {
    return *env.token;
  }
  if (env.token_file) {
    return TokenFrom("GPUFLEET_TOKEN_FILE", *env.token_file);
  }
  GF_ASSIGN_OR_RETURN(const ClientConfig* config, file.Get());
  if (!config->token_file.empty()) {
    return TokenFrom(config->source + ": [client] token_file", config->token_file);
  }
  return std::string();
}

Result<std::string> ResolveCaFile(const ClientFlags& flags,
                                  const ClientEnv& env,
                                  LazyClientConfig& file) {
  if (!flags.ca_file.empty()) {
    return flags.ca_file;
  }
  if (env.ca_file) {
    return *env.ca_file;
  }
  GF_ASSIGN_OR_RETURN(const ClientConfig* config, file.Get());
  return config->ca_file;
}

}  // namespace

ClientEnv CurrentClientEnv() {
  ClientEnv env;
  env.server = Env("GPUFLEET_SERVER");
  env.token = Env("GPUFLEET_TOKEN");
  env.token_file = Env("GPUFLEET_TOKEN_FILE");
  env.ca_file = Env("GPUFLEET_CA_FILE");
  env.client_config = Env("GPUFLEET_CLIENT_CONFIG");
  env.xdg_config_home = Env("XDG_CONFIG_HOME");
  env.socket = CurrentSocketPathEnv();
  return env;
}

Result<ClientSettings> ResolveClientSettings(const ClientFlags& flags, const ClientEnv& env) {
  LazyClientConfig file(env);
  ClientSettings settings;
  GF_ASSIGN_OR_RETURN(auto endpoint, ResolveEndpoint(flags, env, file));
  settings.endpoint = std::move(endpoint.first);
  settings.source = std::move(endpoint.second);
  if (!IsNetworkEndpoint(settings.endpoint)) {
    return settings;  // the Unix socket: no token, no CA
  }
  GF_ASSIGN_OR_RETURN(settings.options.token, ResolveToken(flags, env, file));
  GF_ASSIGN_OR_RETURN(settings.options.ca_file, ResolveCaFile(flags, env, file));
  return settings;
}

}  // namespace gf
