// Test support for src/api: a real ApiServer over a FakeClusterService, its Unix socket in a
// fresh temporary folder (TCP on a free port), removed after each test; and a bounded wait.
// The server tests (api_server_test, watch_test, limits_test, untrusted_json_test) derive their
// fixtures from ApiServerFixture and set only the options their subject needs.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "api/api_server.h"
#include "api/fake_cluster_service.h"

namespace gf::testing {

// Bounds every wait of a test; never reached when the test passes.
inline constexpr auto kPatience = std::chrono::seconds(20);

// Polls `done` every 5 ms until it holds or kPatience passes; returns whether it held.
inline bool WaitUntil(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class ApiServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gf-api-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // In a folder of its own that does not exist yet: the server creates it.
    socket_ = dir_ + "/run/gpufleet.sock";
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Starts server_ on socket_ (and TCP as `options` say) over fake_.
  void StartServer(ApiServerOptions options = {}) {
    options.unix_socket_path = socket_;
    server_ = std::make_unique<ApiServer>(fake_, options);
    const Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.error().ToString();
  }
  std::string TcpEndpoint() const {
    return "http://127.0.0.1:" + std::to_string(server_->tcp_port());
  }

  FakeClusterService fake_;
  std::string dir_;
  std::string socket_;
  std::unique_ptr<ApiServer> server_;
};

}  // namespace gf::testing
