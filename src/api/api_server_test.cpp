// ApiServer and ApiClient over real sockets in a temporary folder.
#include "api/api_server.h"

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/api_client.h"
#include "api/api_server_fixture.h"
#include "api/fake_cluster_service.h"

namespace gf {
namespace {

using nlohmann::json;
using testing::FakeClusterService;

int ConnectRaw(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval tv{30, 0};  // bounds the test if the server never answers
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

void SendRaw(int fd, const std::string& data) {
  ASSERT_EQ(::send(fd, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size()));
}

// Reads until the server closes the connection (or the receive timeout).
std::string ReadUntilClosed(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      return out;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
}

std::size_t Count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

class ApiServerTest : public testing::ApiServerFixture {};

TEST_F(ApiServerTest, UnixCallerIsThePeer) {
  StartServer();
  ApiClient client(socket_);
  auto job = client.CallJson("POST", "/api/v1/jobs", json{{"command", {"true"}}, {"gpus", 0}});
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ((*job)["id"], 7);
  const auto caller = fake_.LastCaller();
  ASSERT_TRUE(caller.has_value());
  EXPECT_TRUE(caller->authenticated);
  EXPECT_EQ(caller->uid, ::getuid());
  EXPECT_EQ(caller->gid, ::getgid());
  std::vector<char> buf(16384);
  passwd entry{};
  passwd* pw = nullptr;
  ::getpwuid_r(::getuid(), &entry, buf.data(), buf.size(), &pw);
  EXPECT_EQ(caller->user, pw ? std::string(pw->pw_name) : "uid" + std::to_string(::getuid()));
  EXPECT_EQ(fake_.last_spec->request.gpus, 0);
}

TEST_F(ApiServerTest, SocketIsConnectableByEveryone) {
  StartServer();
  struct stat st {};
  ASSERT_EQ(::stat(socket_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  server_->Stop();
  EXPECT_FALSE(std::filesystem::exists(socket_));
}

TEST_F(ApiServerTest, TcpIsUnauthenticated) {
  StartServer();
  ASSERT_GT(server_->tcp_port(), 0);
  ApiClient client(TcpEndpoint());
  auto health = client.CallJson("GET", "/api/v1/health");
  ASSERT_TRUE(health.ok()) << health.error().ToString();
  EXPECT_EQ((*health)["status"], "ok");
  auto jobs = client.CallJson("GET", "/api/v1/jobs");
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(jobs.error().message.find("Unix socket"), std::string::npos);
  auto raw = client.Call("GET", "/api/v1/jobs");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->status, 401);
  EXPECT_EQ(fake_.Calls(), 0);
}

TEST_F(ApiServerTest, OversizedBodyIs413OnBothTransports) {
  StartServer();
  const std::string big = "{\"command\":[\"" + std::string(2 << 20, 'x') + "\"]}";
  for (const std::string& endpoint : {socket_, TcpEndpoint()}) {
    ApiClient client(endpoint);
    auto r = client.Call("POST", "/api/v1/jobs", big);
    ASSERT_TRUE(r.ok()) << endpoint << ": " << r.error().ToString();
    EXPECT_EQ(r->status, 413);
    EXPECT_NE(r->body.find("1 MiB"), std::string::npos);
    // The client recovers: the next call works on a fresh connection.
    EXPECT_TRUE(client.CallJson("GET", "/api/v1/health").ok());
  }
  EXPECT_EQ(fake_.Calls(), 0);
}

TEST_F(ApiServerTest, MalformedHttpIs400) {
  StartServer();
  const int fd = ConnectRaw(socket_);
  SendRaw(fd, "THIS IS NOT HTTP\r\n\r\n");
  const std::string answer = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
  EXPECT_NE(answer.find("malformed HTTP"), std::string::npos);
}

TEST_F(ApiServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  StartServer();
  const int fd = ConnectRaw(socket_);
  SendRaw(fd,
          "GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
          "GET /api/v1/nodes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string answer = ReadUntilClosed(fd);
  ::close(fd);
  EXPECT_EQ(Count(answer, "HTTP/1.1 200 OK"), 2u) << answer;
}

TEST_F(ApiServerTest, SlowHeadersAreDropped) {
  ApiServerOptions options;
  options.read_timeout = std::chrono::milliseconds(200);
  StartServer(options);
  const int fd = ConnectRaw(socket_);
  SendRaw(fd, "GET /api/v1/health HTTP/1.1\r\n");  // and never the rest
  char c = 0;
  const ssize_t n = ::recv(fd, &c, 1, 0);  // blocks until the server gives up
  const int err = errno;
  ::close(fd);
  EXPECT_TRUE(n == 0 || (n < 0 && err == ECONNRESET)) << "n=" << n << " errno=" << err;
}

TEST_F(ApiServerTest, ClientMapsServerErrorsBack) {
  StartServer();
  fake_.fail_with = NotFound("job 9 not found");
  ApiClient client(socket_);
  auto r = client.CallJson("GET", "/api/v1/jobs/9");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.error().message, "job 9 not found");
  auto bad = client.CallJson("POST", "/api/v1/jobs", json{{"command", {"x"}}, {"gpus", "two"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "gpus: must be a whole number ≥ 0, got \"two\"");
}

TEST_F(ApiServerTest, LogsCarryOffsetsOverTheWire) {
  fake_.log_chunk = LogChunk{.data = "world", .size = 11, .next_offset = 11};
  StartServer();
  ApiClient client(socket_);
  auto r = client.Call("GET", "/api/v1/jobs/3/logs?offset=6&limit=100");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "world");
  EXPECT_EQ(r->Header("X-Gpufleet-Log-Size"), "11");
  EXPECT_EQ(r->Header("X-Gpufleet-Next-Offset"), "11");
  ASSERT_TRUE(fake_.last_log_request.has_value());
  EXPECT_EQ(fake_.last_log_request->offset, 6);
  EXPECT_EQ(fake_.last_log_request->limit, 100);
}

TEST_F(ApiServerTest, ManyConcurrentClients) {
  ApiServerOptions options;
  // 500 requests in about a second from one address (the TCP half) is over the stock rate
  // limit per client, by design (limits_test.cpp); this test is about concurrency.
  options.rate_limit = 0;
  StartServer(options);
  constexpr int kClients = 20;
  constexpr int kRequests = 50;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  threads.reserve(kClients);
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      ApiClient client(i % 2 == 0 ? socket_ : TcpEndpoint());
      for (int j = 0; j < kRequests; ++j) {
        auto r = client.CallJson("GET", i % 2 == 0 ? "/api/v1/jobs/1" : "/api/v1/health");
        if (r.ok()) {
          ++ok;
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(ok.load(), kClients * kRequests);
}

TEST_F(ApiServerTest, StaleSocketFileIsReplaced) {
  std::filesystem::create_directories(std::filesystem::path(socket_).parent_path());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(fd);  // the file stays, nobody listens: what a crashed server leaves behind
  ASSERT_TRUE(std::filesystem::exists(socket_));
  StartServer();
  EXPECT_TRUE(ApiClient(socket_).CallJson("GET", "/api/v1/health").ok());
}

TEST_F(ApiServerTest, LiveSocketIsRefused) {
  StartServer();
  ApiServerOptions options;
  options.unix_socket_path = socket_;
  ApiServer second(fake_, options);
  const Status s = second.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(s.error().message, "another gpufleet is listening on " + socket_);
  second.Stop();
  EXPECT_TRUE(ApiClient(socket_).CallJson("GET", "/api/v1/health").ok());  // still ours
}

TEST_F(ApiServerTest, NonSocketFileIsRefused) {
  std::filesystem::create_directories(std::filesystem::path(socket_).parent_path());
  std::ofstream(socket_) << "not a socket";
  ApiServerOptions options;
  options.unix_socket_path = socket_;
  options.tcp_port = -1;
  ApiServer server(fake_, options);
  const Status s = server.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kAlreadyExists);
  EXPECT_TRUE(std::filesystem::exists(socket_));
}

TEST_F(ApiServerTest, StopClosesKeptAliveConnections) {
  StartServer();
  ApiClient client(socket_);
  ASSERT_TRUE(client.CallJson("GET", "/api/v1/health").ok());  // connection now idle
  server_->Stop();                                             // must not wait for the idle client
  auto r = client.CallJson("GET", "/api/v1/health");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

TEST(ApiClientTest, CannotReachNamesTheSocketAndTheFix) {
  ApiClient client("/tmp/gf-api-no-such-dir/gpufleet.sock");
  auto r = client.CallJson("GET", "/api/v1/health");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  const std::string expected = "cannot reach gpufleet at /tmp/gf-api-no-such-dir/gpufleet.sock";
  EXPECT_NE(r.error().message.find(expected), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("GPUFLEET_SOCKET"), std::string::npos);
}

TEST(ApiClientTest, BadEndpoints) {
  EXPECT_EQ(ApiClient("https://x").Call("GET", "/").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(ApiClient("ftp://x:1").Call("GET", "/").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(ApiClient(" , ").Call("GET", "/").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(ApiClient("http://nohost").Call("GET", "/").error().code, ErrorCode::kInvalidArgument);
}

TEST(ApiClientTest, ErrorFromResponseFallsBackToStatus) {
  HttpResponse r;
  r.status = 503;
  r.body = "<html>bad gateway</html>";
  EXPECT_EQ(ErrorFromResponse(r).code, ErrorCode::kUnavailable);
  r.status = 401;
  r.body = R"({"error":{"code":"unauthenticated","message":"who are you"}})";
  const Error e = ErrorFromResponse(r);
  EXPECT_EQ(e.code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(e.message, "who are you");
}

}  // namespace
}  // namespace gf
