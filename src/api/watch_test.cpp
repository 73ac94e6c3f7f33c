// Watch streams (GET jobs/gpus/nodes?watch=1) between a real ApiServer and ApiClient::Watch,
// over real sockets in a temporary folder, with the recording fake service behind the server.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/api_client.h"
#include "api/api_server.h"
#include "api/api_server_fixture.h"
#include "api/fake_cluster_service.h"
#include "api/sse.h"

namespace gf {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::FakeClusterService;

using testing::kPatience;
using testing::WaitUntil;

GpuStatus MakeGpu(int index) {
  GpuStatus gpu;
  gpu.node = NodeId("n1");
  gpu.gpu.index = index;
  gpu.gpu.uuid = GpuUuid("GPU-" + std::to_string(index));
  gpu.gpu.model = "H100-80GB";
  return gpu;
}

// ApiClient::Watch on its own thread, recording every event until told to stop.
class WatchThread {
 public:
  WatchThread(std::string endpoint, std::string target, int stop_after = -1)
      : thread_([this, endpoint = std::move(endpoint), target = std::move(target), stop_after] {
          ApiClient client(endpoint, ApiClientOptions{milliseconds(10'000)});
          Status status = client.Watch(
              target,
              [this, stop_after](std::string_view event, std::string_view data) {
                std::lock_guard<std::mutex> lock(mu_);
                events_.push_back(SseEvent{std::string(event), std::string(data)});
                return stop_after < 0 || static_cast<int>(events_.size()) < stop_after;
              },
              stop_.get_token());
          std::lock_guard<std::mutex> lock(mu_);
          result_ = std::move(status);
        }) {}
  ~WatchThread() {
    stop_.request_stop();
    thread_.join();
  }
  WatchThread(const WatchThread&) = delete;
  WatchThread& operator=(const WatchThread&) = delete;

  std::vector<SseEvent> Events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::optional<Status> Outcome() {
    std::lock_guard<std::mutex> lock(mu_);
    return result_;
  }
  void RequestStop() { stop_.request_stop(); }

 private:
  std::mutex mu_;
  std::vector<SseEvent> events_;
  std::optional<Status> result_;
  std::stop_source stop_;
  std::thread thread_;  // last: starts after the members it uses exist
};

class WatchTest : public testing::ApiServerFixture {
 protected:
  void SetUp() override {
    ApiServerFixture::SetUp();
    fake_.gpus = {MakeGpu(0)};
  }
  void StartServer(ApiServerOptions options = {}) {
    if (options.watch_interval == ApiServerOptions{}.watch_interval) {
      options.watch_interval = milliseconds(20);  // fast ticks keep the tests short
    }
    ApiServerFixture::StartServer(options);
  }
  void SetGpus(std::vector<GpuStatus> gpus) {
    std::lock_guard<std::mutex> lock(fake_.mu);
    fake_.gpus = std::move(gpus);
  }
};

TEST_F(WatchTest, FirstTheWholeListThenOnlyChanges) {
  StartServer();
  ApiClient plain(socket_);
  auto get = plain.Call("GET", "/api/v1/gpus");
  ASSERT_TRUE(get.ok());
  WatchThread watch(socket_, "/api/v1/gpus?watch=1");
  ASSERT_TRUE(WaitUntil([&] { return !watch.Events().empty(); }));
  EXPECT_EQ(watch.Events()[0].event, "gpus");
  EXPECT_EQ(watch.Events()[0].data + "\n", get->body);  // the plain GET's JSON, on one line

  // The server keeps re-reading, but an unchanged list is not sent again.
  const int calls = fake_.Calls();
  ASSERT_TRUE(WaitUntil([&] { return fake_.Calls() >= calls + 5; }));
  EXPECT_EQ(watch.Events().size(), 1U);

  SetGpus({MakeGpu(0), MakeGpu(1)});
  ASSERT_TRUE(WaitUntil([&] { return watch.Events().size() == 2; }));
  const json second = json::parse(watch.Events()[1].data);
  ASSERT_EQ(second["gpus"].size(), 2U);
  EXPECT_EQ(second["gpus"][1]["uuid"], "GPU-1");
  EXPECT_FALSE(watch.Outcome().has_value()) << "the stream ended on its own";
}

TEST_F(WatchTest, CallbackFalseEndsTheWatch) {
  StartServer();
  WatchThread watch(socket_, "/api/v1/nodes?watch=1", /*stop_after=*/1);
  ASSERT_TRUE(WaitUntil([&] { return watch.Outcome().has_value(); }));
  EXPECT_TRUE(watch.Outcome()->ok()) << watch.Outcome()->error().ToString();
  ASSERT_EQ(watch.Events().size(), 1U);
  EXPECT_EQ(watch.Events()[0].event, "nodes");
  EXPECT_EQ(json::parse(watch.Events()[0].data), json::parse(R"({"nodes":[]})"));
}

TEST_F(WatchTest, StopTokenEndsAQuietWatchPromptly) {
  StartServer();
  WatchThread watch(socket_, "/api/v1/gpus?watch=1");
  ASSERT_TRUE(WaitUntil([&] { return !watch.Events().empty(); }));
  watch.RequestStop();  // nothing changes, so only the stop can end the blocking read
  ASSERT_TRUE(WaitUntil([&] { return watch.Outcome().has_value(); }));
  EXPECT_TRUE(watch.Outcome()->ok());
}

TEST_F(WatchTest, JobsWatchIsTheCallersAndNeedsAnIdentity) {
  ApiServerOptions options;
  options.tcp_port = 0;
  StartServer(options);
  WatchThread watch(socket_, "/api/v1/jobs?watch=1&all=1");
  ASSERT_TRUE(WaitUntil([&] { return !watch.Events().empty(); }));
  EXPECT_EQ(watch.Events()[0].event, "jobs");
  EXPECT_EQ(json::parse(watch.Events()[0].data)["jobs"][0]["user"], "alice");
  const auto caller = fake_.LastCaller();
  ASSERT_TRUE(caller.has_value());
  EXPECT_TRUE(caller->authenticated);
  EXPECT_EQ(caller->uid, ::getuid());
  {
    std::lock_guard<std::mutex> lock(fake_.mu);
    ASSERT_TRUE(fake_.last_filter.has_value());
    EXPECT_TRUE(fake_.last_filter->include_finished);  // the plain GET's parameters apply
  }

  ApiClient tcp(TcpEndpoint());
  const Status refused = tcp.Watch("/api/v1/jobs?watch=1", [](auto, auto) { return true; });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(refused.error().message.find("Unix socket"), std::string::npos);
  int gpu_events = 0;
  const Status gpus =
      tcp.Watch("/api/v1/gpus?watch=true", [&](auto, auto) { return ++gpu_events < 1; });
  EXPECT_TRUE(gpus.ok());
  EXPECT_EQ(gpu_events, 1);
}

TEST_F(WatchTest, BadOrMisplacedWatchParameterIs400AndWatch0IsPlain) {
  StartServer();
  ApiClient client(socket_);
  auto bad = client.CallJson("GET", "/api/v1/gpus?watch=maybe");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "watch: must be 1, 0, true or false, got \"maybe\"");
  auto health = client.CallJson("GET", "/api/v1/health?watch=1");
  ASSERT_FALSE(health.ok());
  EXPECT_NE(health.error().message.find("unknown query parameter \"watch\""), std::string::npos);
  auto plain = client.Call("GET", "/api/v1/gpus?watch=0");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->Header("Content-Type"), "application/json");
  const Status not_a_stream = client.Watch("/api/v1/gpus", [](auto, auto) { return true; });
  ASSERT_FALSE(not_a_stream.ok());
  EXPECT_EQ(not_a_stream.error().code, ErrorCode::kInternal);
  EXPECT_NE(not_a_stream.error().message.find("text/event-stream"), std::string::npos);
}

TEST_F(WatchTest, ALaterErrorIsSentAsAnEventAndEndsTheStream) {
  StartServer();
  WatchThread watch(socket_, "/api/v1/gpus?watch=1");
  ASSERT_TRUE(WaitUntil([&] { return !watch.Events().empty(); }));
  {
    std::lock_guard<std::mutex> lock(fake_.mu);
    fake_.fail_with = Unavailable("controller stopped: disk full");
  }
  ASSERT_TRUE(WaitUntil([&] { return watch.Outcome().has_value(); }));
  EXPECT_TRUE(watch.Outcome()->ok()) << "a clean end (last chunk), not a lost connection";
  ASSERT_EQ(watch.Events().size(), 2U);
  EXPECT_EQ(watch.Events()[1].event, "error");
  EXPECT_EQ(json::parse(watch.Events()[1].data)["error"]["code"], "unavailable");
}

TEST_F(WatchTest, WatchesAreBoundedAndADisconnectFreesTheSlot) {
  ApiServerOptions options;
  options.max_watches = 1;
  options.watch_keepalive = std::chrono::hours(1);  // no write can reveal the disconnect
  StartServer(options);
  auto first = std::make_unique<WatchThread>(socket_, "/api/v1/gpus?watch=1");
  ASSERT_TRUE(WaitUntil([&] { return !first->Events().empty(); }));

  ApiClient client(socket_);
  const Status second = client.Watch("/api/v1/gpus?watch=1", [](auto, auto) { return true; });
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(second.error().message.find(
                "too many open watches: the limit is 1 on this server ([api] max_watches)"),
            std::string::npos);
  // The connection that got the 429 still serves plain requests.
  EXPECT_TRUE(client.CallJson("GET", "/api/v1/health").ok());

  // The first client goes away; the server notices without writing (the list never changes)
  // and gives the slot back.
  first.reset();
  int events = 0;
  ASSERT_TRUE(WaitUntil([&] {
    return client.Watch("/api/v1/gpus?watch=1", [&](auto, auto) { return ++events < 1; }).ok();
  }));
  EXPECT_EQ(events, 1);
}

TEST_F(WatchTest, WatchesHoldNoWorkerBetweenTicks) {
  ApiServerOptions options;
  options.worker_threads = 1;
  StartServer(options);
  std::vector<std::unique_ptr<WatchThread>> watches;
  for (int i = 0; i < 4; ++i) {
    watches.push_back(std::make_unique<WatchThread>(socket_, "/api/v1/gpus?watch=1"));
  }
  for (auto& w : watches) {
    ASSERT_TRUE(WaitUntil([&] { return !w->Events().empty(); }));
  }
  ApiClient client(socket_, ApiClientOptions{milliseconds(5'000)});
  for (int i = 0; i < 20; ++i) {
    auto r = client.CallJson("GET", "/api/v1/health");
    ASSERT_TRUE(r.ok()) << r.error().ToString();
  }
}

TEST_F(WatchTest, KeepaliveOnAQuietChunkedStream) {
  ApiServerOptions options;
  options.watch_keepalive = milliseconds(50);
  StartServer(options);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string request = "GET /api/v1/gpus?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::string got;
  std::array<char, 4096> buf{};
  while (got.find(": keepalive\n\n") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    ASSERT_GT(n, 0) << "connection ended before a keepalive; got:\n" << got;
    got.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0U) << got;
  EXPECT_NE(got.find("Content-Type: text/event-stream\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("\r\nevent: gpus\ndata: {\"gpus\":["), std::string::npos) << got;
}

TEST_F(WatchTest, StopEndsOpenWatches) {
  StartServer();
  WatchThread watch(socket_, "/api/v1/gpus?watch=1");
  ASSERT_TRUE(WaitUntil([&] { return !watch.Events().empty(); }));
  server_->Stop();  // returns: the watch holds no worker and its connection is closed
  ASSERT_TRUE(WaitUntil([&] { return watch.Outcome().has_value(); }));
  ASSERT_FALSE(watch.Outcome()->ok());
  EXPECT_EQ(watch.Outcome()->error().code, ErrorCode::kUnavailable);
  EXPECT_NE(watch.Outcome()->error().message.find("lost the watch stream"), std::string::npos);
}

}  // namespace
}  // namespace gf
