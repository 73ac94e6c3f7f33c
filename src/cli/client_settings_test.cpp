#include "cli/client_settings.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gf {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ClientSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gf-client-settings-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    env_.socket.home = dir_;
    env_.socket.euid = 1000;
    env_.socket.exists = [](const std::string& path) {
      return std::filesystem::exists(path);
    };
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    const std::string path = dir_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  // The default client settings file, ~/.config/gpufleet/client.toml.
  void WriteClientFile(const std::string& text) { Write(".config/gpufleet/client.toml", text); }

  ClientSettings Resolve() {
    auto settings = ResolveClientSettings(flags_, env_);
    EXPECT_TRUE(settings.ok()) << settings.error().ToString();
    return settings.ok() ? *settings : ClientSettings{};
  }
  std::string ErrorOf() {
    auto settings = ResolveClientSettings(flags_, env_);
    return settings.ok() ? "(resolved)" : settings.error().message;
  }

  std::string dir_;
  ClientFlags flags_;
  ClientEnv env_;
};

TEST_F(ClientSettingsTest, NothingSetIsTheLocalSocketWithoutAToken) {
  Write("tok", "from-env-file\n");
  env_.token_file = dir_ + "/tok";  // not read: the Unix socket takes no token
  const ClientSettings s = Resolve();
  EXPECT_EQ(s.endpoint, DefaultSocketPath(env_.socket));
  EXPECT_EQ(s.source, "the default socket");
  EXPECT_EQ(s.options.token, "");
}

TEST_F(ClientSettingsTest, FlagBeatsEnvironmentBeatsFile) {
  WriteClientFile(
      "[client]\nservers = [\"https://file-a:1\", \"https://file-b:1\"]\n"
      "token_file = \"file-tok\"\nca_file = \"/file/ca.pem\"\n");
  Write(".config/gpufleet/file-tok", "tok-file\n");
  Write("env-tok", "tok-env-file\n");
  Write("flag-tok", "tok-flag\n");

  ClientSettings s = Resolve();
  EXPECT_EQ(s.endpoint, "https://file-a:1,https://file-b:1");
  EXPECT_EQ(s.options.token, "tok-file");  // relative to the file's folder
  EXPECT_EQ(s.options.ca_file, "/file/ca.pem");

  env_.socket.gpufleet_socket = "/tmp/env.sock";  // any environment beats the file
  EXPECT_EQ(Resolve().endpoint, "/tmp/env.sock");
  env_.server = "https://env:1";
  env_.token_file = dir_ + "/env-tok";
  env_.ca_file = "/env/ca.pem";
  s = Resolve();
  EXPECT_EQ(s.endpoint, "https://env:1");  // GPUFLEET_SERVER before GPUFLEET_SOCKET
  EXPECT_EQ(s.source, "GPUFLEET_SERVER");
  EXPECT_EQ(s.options.token, "tok-env-file");
  EXPECT_EQ(s.options.ca_file, "/env/ca.pem");

  flags_.server = "https://flag:1";
  flags_.token_file = dir_ + "/flag-tok";
  flags_.ca_file = "/flag/ca.pem";
  s = Resolve();
  EXPECT_EQ(s.endpoint, "https://flag:1");
  EXPECT_EQ(s.options.token, "tok-flag");
  EXPECT_EQ(s.options.ca_file, "/flag/ca.pem");

  flags_.server.clear();
  flags_.socket = "/tmp/flag.sock";  // a --socket flag beats GPUFLEET_SERVER
  EXPECT_EQ(Resolve().endpoint, "/tmp/flag.sock");
  flags_.server = "https://flag:1";
  EXPECT_TRUE(Contains(ErrorOf(), "not both")) << ErrorOf();
}

TEST_F(ClientSettingsTest, TheTokenItselfFromTheEnvironment) {
  env_.server = "http://127.0.0.1:7460";
  env_.token = "gft_x.y";
  EXPECT_EQ(Resolve().options.token, "gft_x.y");
  env_.token_file = dir_ + "/tok";
  EXPECT_TRUE(Contains(ErrorOf(), "GPUFLEET_TOKEN and GPUFLEET_TOKEN_FILE")) << ErrorOf();
}

TEST_F(ClientSettingsTest, ATokenFileOthersCanReadIsRefusedNamingWhereItCameFrom) {
  flags_.server = "https://a:1";
  flags_.token_file = Write("tok", "secret\n", 0644);
  const std::string error = ErrorOf();
  EXPECT_TRUE(error.starts_with("--token-file: token file " + flags_.token_file)) << error;
  EXPECT_TRUE(Contains(error, "chmod 600")) << error;
}

TEST_F(ClientSettingsTest, TheNamedSettingsFileMustExistAndParse) {
  env_.client_config = dir_ + "/missing.toml";
  EXPECT_TRUE(Contains(ErrorOf(), "GPUFLEET_CLIENT_CONFIG")) << ErrorOf();
  env_.client_config = Write("bad.toml", "[client]\nserver = \"x\"\n");
  EXPECT_TRUE(Contains(ErrorOf(), "unknown key 'server' in [client]")) << ErrorOf();
  flags_.socket = "/tmp/x.sock";  // the file is read only when a setting falls through to it
  EXPECT_EQ(Resolve().endpoint, "/tmp/x.sock");
}

// Issue #20: a deeply nested client.toml crashed every client command (toml11 recurses); a
// client.toml that is a directory read as empty settings; an empty path meant "not set".
TEST_F(ClientSettingsTest, ADeepDirectoryOrEmptySettingsFileIsAnErrorNotACrash) {
  WriteClientFile("[client]\nservers = " + std::string(100'000, '[') + "\n");
  EXPECT_TRUE(Contains(ErrorOf(), "client.toml:2: nested more than 32 levels deep")) << ErrorOf();
  WriteClientFile(std::string(100'000, '[') + "\n");
  EXPECT_TRUE(Contains(ErrorOf(), "client.toml:1: nested more than 32 levels deep")) << ErrorOf();
  WriteClientFile("a" + std::string(100'000, '.') + "a = 1\n");
  EXPECT_TRUE(Contains(ErrorOf(), "client.toml:1: nested more than 32 levels deep")) << ErrorOf();

  std::filesystem::remove(dir_ + "/.config/gpufleet/client.toml");
  std::filesystem::create_directories(dir_ + "/.config/gpufleet/client.toml");
  EXPECT_TRUE(Contains(ErrorOf(), "client.toml is a directory, not a file")) << ErrorOf();
  env_.client_config = dir_ + "/.config";
  EXPECT_TRUE(Contains(ErrorOf(), "client settings file " + dir_ + "/.config is a directory"))
      << ErrorOf();

  env_.client_config = Write("empty.toml",
                             "[client]\nservers = [\"https://a:1\"]\n"
                             "token_file = \"\"\n");
  EXPECT_TRUE(Contains(ErrorOf(), "empty.toml:3: [client] token_file: an empty string"))
      << ErrorOf();
}

TEST_F(ClientSettingsTest, XdgConfigHomeMovesTheDefaultFile) {
  env_.xdg_config_home = dir_ + "/xdg";
  Write("xdg/gpufleet/client.toml", "[client]\nservers = [\"http://x:1\"]\n");
  EXPECT_EQ(Resolve().endpoint, "http://x:1");
}

}  // namespace
}  // namespace gf
