// Test helper: the stand-in kubelet (tests/fakekubelet) as a child process of a test, serving a
// scenario file on a Unix socket in a temporary folder of its own. For gf_kube_test only.
//
// Start() waits, with a deadline, until the socket accepts connections; Stop() (and the destructor)
// ends it with SIGTERM, as a kubelet that stops. Not thread-safe: one test thread owns it.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;  // NOLINT: POSIX's process environment (unistd.h leaves it undeclared)

namespace gf::testing {

class FakeKubeletProcess {
 public:
  FakeKubeletProcess() {
    char dir_template[] = "/tmp/gf-kube-XXXXXX";  // short: a socket path has 107 bytes at most
    if (::mkdtemp(dir_template) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed";
      return;
    }
    dir_ = dir_template;
    socket_ = (dir_ / "kubelet.sock").string();
    scenario_ = (dir_ / "scenario.json").string();
  }
  ~FakeKubeletProcess() {
    Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  FakeKubeletProcess(const FakeKubeletProcess&) = delete;
  FakeKubeletProcess& operator=(const FakeKubeletProcess&) = delete;

  const std::string& Socket() const { return socket_; }
  const std::filesystem::path& Dir() const { return dir_; }

  // Writes the scenario as a test should: a new file renamed over the old.
  void WriteScenario(std::string_view text) {
    const std::string tmp = scenario_ + ".tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, scenario_);
  }

  // Starts the fake; call through ASSERT_NO_FATAL_FAILURE.
  void Start() {
    const std::string binary = GF_FAKEKUBELET_PATH;
    std::vector<std::string> args = {binary, "--socket", socket_, "--scenario", scenario_};
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& arg : args) {
      argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    ASSERT_EQ(::posix_spawn(&pid_, binary.c_str(), nullptr, nullptr, argv.data(), environ), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!Accepting()) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid_, &status, WNOHANG), 0) << "fakekubelet exited";
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "fakekubelet did not listen";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Whether the fake listens: the socket file appears at bind(), before listen(), so a connect
  // is the only sure sign.
  bool Accepting() const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    socket_.copy(address.sun_path, sizeof(address.sun_path) - 1);
    const bool accepted =
        fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    if (fd >= 0) {
      ::close(fd);
    }
    return accepted;
  }

  void Stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  std::filesystem::path dir_;
  std::string socket_;
  std::string scenario_;
  pid_t pid_ = -1;
};

}  // namespace gf::testing
