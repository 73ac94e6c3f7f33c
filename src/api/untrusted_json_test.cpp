// Hostile JSON over real sockets (issue #20): the API socket is 0666, so any local user can send
// the root daemon a body; and a client reads whatever a server answers. Both sides read JSON
// with ParseJsonText (json/json_text.h); these tests go through the real transport.
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/api_client.h"
#include "api/api_server.h"
#include "api/api_server_fixture.h"
#include "api/fake_cluster_service.h"

namespace gf {
namespace {

using nlohmann::json;
using testing::FakeClusterService;

std::string Deep(std::size_t levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

class UntrustedJsonTest : public testing::ApiServerFixture {};

TEST_F(UntrustedJsonTest, TheServerAnswersADeepBodyWith400AndStaysUp) {
  StartServer();
  ApiClient client(socket_);

  // The reproduction: 100,000 levels, 200 KB, under the 1 MiB body limit. Before the fix the
  // server's thread overflowed its stack (here: this test process died).
  const std::string body = R"({"command":["true"],"workdir":"/","env":)" + Deep(100'000) + "}";
  Result<HttpResponse> deep = client.Call("POST", "/api/v1/jobs", body);
  ASSERT_TRUE(deep.ok()) << deep.error().ToString();
  EXPECT_EQ(deep->status, 400);
  EXPECT_NE(deep->body.find("JSON nested deeper than 64 levels (the limit); flatten it"),
            std::string::npos)
      << deep->body;

  // Still alive, and still serving: a plain submission goes through.
  Result<json> job = client.CallJson("POST", "/api/v1/jobs", json{{"command", {"true"}}});
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ((*job)["id"], 7);

  // A body labelled as something else is refused by the real server too.
  Result<HttpResponse> form = client.Call("POST",
                                          "/api/v1/jobs",
                                          R"({"command":["true"]})",
                                          {{"Content-Type", "application/x-www-form-urlencoded"}});
  ASSERT_TRUE(form.ok()) << form.error().ToString();
  EXPECT_EQ(form->status, 415);
  EXPECT_EQ(fake_.Calls(), 1);
}

// A server that answers one request with `body` and closes: what a hostile or broken gpufleet
// at the other end of TCP could send a client.
class OneAnswerServer {
 public:
  OneAnswerServer(const std::string& path, std::string body) : body_(std::move(body)) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 1), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~OneAnswerServer() {
    thread_.join();
    ::close(fd_);
  }
  OneAnswerServer(const OneAnswerServer&) = delete;
  OneAnswerServer& operator=(const OneAnswerServer&) = delete;

 private:
  void Serve() {
    const int conn = ::accept(fd_, nullptr, nullptr);
    if (conn < 0) {
      return;
    }
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(conn, buf, sizeof(buf), 0);
      if (n <= 0) {
        break;
      }
      request.append(buf, static_cast<std::size_t>(n));
    }
    const std::string answer =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(body_.size()) + "\r\nConnection: close\r\n\r\n" + body_;
    std::size_t sent = 0;
    while (sent < answer.size()) {
      const ssize_t n = ::send(conn, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) {
        break;
      }
      sent += static_cast<std::size_t>(n);
    }
    ::close(conn);
  }

  std::string body_;
  int fd_ = -1;
  std::thread thread_;
};

TEST_F(UntrustedJsonTest, TheClientRefusesADeepAnswerNamingTheLimit) {
  std::filesystem::create_directories(std::filesystem::path(socket_).parent_path());
  OneAnswerServer server(socket_, Deep(100'000));
  ApiClient client(socket_);
  Result<json> answer = client.CallJson("GET", "/api/v1/jobs");
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().code, ErrorCode::kInternal);
  EXPECT_NE(answer.error().message.find("to GET /api/v1/jobs: JSON nested deeper than 64 levels"),
            std::string::npos)
      << answer.error().message;
}

}  // namespace
}  // namespace gf
