#include "api/socket_path.h"

#include <set>

#include <gtest/gtest.h>

namespace gf {
namespace {

SocketPathEnv Env(std::uint32_t euid, const std::set<std::string>& existing = {}) {
  SocketPathEnv env;
  env.euid = euid;
  env.home = "/home/u";
  env.exists = [existing](const std::string& p) {
    return existing.count(p) > 0;
  };
  return env;
}

TEST(ApiSocketPathTest, ExplicitSocketWins) {
  auto env = Env(1000);
  env.gpufleet_socket = "/tmp/x.sock";
  EXPECT_EQ(ServerSocketPath(env), "/tmp/x.sock");
  EXPECT_EQ(DefaultSocketPath(env), "/tmp/x.sock");
}

TEST(ApiSocketPathTest, ServerPaths) {
  EXPECT_EQ(ServerSocketPath(Env(0)), "/run/gpufleet/gpufleet.sock");
  EXPECT_EQ(ServerSocketPath(Env(1000)), "/home/u/.local/share/gpufleet/gpufleet.sock");
  auto env = Env(1000);
  env.xdg_runtime_dir = "/run/user/1000";
  EXPECT_EQ(ServerSocketPath(env), "/run/user/1000/gpufleet/gpufleet.sock");
}

TEST(ApiSocketPathTest, ClientFindsOwnThenSystemSocket) {
  auto env = Env(1000, {"/run/user/1000/gpufleet/gpufleet.sock", kSystemSocketPath});
  env.xdg_runtime_dir = "/run/user/1000";
  EXPECT_EQ(DefaultSocketPath(env), "/run/user/1000/gpufleet/gpufleet.sock");
  // A user without a personal server finds root's daemon.
  auto system_only = Env(1000, {kSystemSocketPath});
  EXPECT_EQ(DefaultSocketPath(system_only), kSystemSocketPath);
  // Nothing exists: the system path, the one an error message should name.
  EXPECT_EQ(DefaultSocketPath(Env(1000)), kSystemSocketPath);
  EXPECT_EQ(DefaultSocketPath(Env(0, {"/home/u/.local/share/gpufleet/gpufleet.sock"})),
            kSystemSocketPath);
}

}  // namespace
}  // namespace gf
