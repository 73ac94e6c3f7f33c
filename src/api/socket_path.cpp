#include "api/socket_path.h"

#include <cstdlib>
#include <vector>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gf {
namespace {

std::optional<std::string> NonEmptyEnv(const char* name) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): callers read the environment before threads start
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

std::string HomeDir(uid_t uid) {
  if (auto home = NonEmptyEnv("HOME")) {
    return *home;
  }
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr) {
    return found->pw_dir;
  }
  return "/tmp";
}

std::string UserSocketPath(const SocketPathEnv& env) {
  if (env.xdg_runtime_dir) {
    return *env.xdg_runtime_dir + "/gpufleet/gpufleet.sock";
  }
  return env.home + "/.local/share/gpufleet/gpufleet.sock";
}

}  // namespace

SocketPathEnv CurrentSocketPathEnv() {
  SocketPathEnv env;
  env.gpufleet_socket = NonEmptyEnv("GPUFLEET_SOCKET");
  env.xdg_runtime_dir = NonEmptyEnv("XDG_RUNTIME_DIR");
  env.euid = geteuid();
  env.home = HomeDir(env.euid);
  env.exists = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  };
  return env;
}

std::string ServerSocketPath(const SocketPathEnv& env) {
  if (env.gpufleet_socket) {
    return *env.gpufleet_socket;
  }
  return env.euid == 0 ? std::string(kSystemSocketPath) : UserSocketPath(env);
}

std::string DefaultSocketPath(const SocketPathEnv& env) {
  if (env.gpufleet_socket) {
    return *env.gpufleet_socket;
  }
  if (env.euid != 0) {
    std::string own = UserSocketPath(env);
    if (env.exists && env.exists(own)) {
      return own;
    }
  }
  return kSystemSocketPath;
}

std::string ServerSocketPath() {
  return ServerSocketPath(CurrentSocketPathEnv());
}
std::string DefaultSocketPath() {
  return DefaultSocketPath(CurrentSocketPathEnv());
}

}  // namespace gf
