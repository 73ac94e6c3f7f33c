#include "kube/kube_pod_stopper.h"

#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/test_loopback.h"

namespace gf {
namespace {

using namespace std::chrono_literals;

// A stand-in API server that answers each request with the next scripted answer, one request
// per connection, and keeps what it was asked: "METHOD TARGET|Content-Type|Authorization|BODY".
class FakeKubeApi {
 public:
  explicit FakeKubeApi(std::vector<std::pair<int, std::string>> answers)
      : answers_(std::move(answers)) {
    EXPECT_GE(listener_.fd, 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeKubeApi() {
    listener_.Shutdown();
    thread_.join();
  }
  std::string Url() const { return listener_.Url(); }
  std::vector<std::string> Requests() {
    const std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  static std::string Header(const std::string& head, const std::string& name) {
    const std::size_t at = head.find("\r\n" + name + ": ");
    if (at == std::string::npos) {
      return "";
    }
    const std::size_t from = at + name.size() + 4;
    return head.substr(from, head.find("\r\n", from) - from);
  }

  void Serve() {
    for (std::size_t n = 0;; ++n) {
      const int fd = ::accept4(listener_.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        return;
      }
      std::string data;
      char buf[4096];
      std::size_t end = std::string::npos;
      while ((end = data.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t got = ::recv(fd, buf, sizeof(buf), 0);
        if (got <= 0) {
          break;
        }
        data.append(buf, static_cast<std::size_t>(got));
      }
      if (end != std::string::npos) {
        const std::string head = data.substr(0, end);
        const std::string length = Header(head, "Content-Length");
        const std::size_t want = length.empty() ? 0 : std::stoul(length);
        std::string body = data.substr(end + 4);
        while (body.size() < want) {
          const ssize_t got = ::recv(fd, buf, sizeof(buf), 0);
          if (got <= 0) {
            break;
          }
          body.append(buf, static_cast<std::size_t>(got));
        }
        {
          const std::lock_guard lock(mu_);
          requests_.push_back(head.substr(0, head.find(" HTTP/")) + "|" +
                              Header(head, "Content-Type") + "|" + Header(head, "Authorization") +
                              "|" + body);
        }
        const auto& [status, answer] =
            n < answers_.size() ? answers_[n] : std::pair<int, std::string>{500, "no answer"};
        const std::string reply = "HTTP/1.1 " + std::to_string(status) +
                                  " X\r\nContent-Type: application/json\r\nContent-Length: " +
                                  std::to_string(answer.size()) + "\r\nConnection: close\r\n\r\n" +
                                  answer;
        ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
      ::close(fd);
    }
  }

  LoopbackListener listener_;
  std::vector<std::pair<int, std::string>> answers_;
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

KubePodStop Pod(std::string name, std::string workload = "", bool scale_owner = false) {
  return KubePodStop{.pod_namespace = "dev",
                     .name = std::move(name),
                     .uid = "00000000-002a-4000-8000-0000000000aa",
                     .workload = std::move(workload),
                     .scale_owner = scale_owner};
}

// Each stop is one call, in order, with a token read afresh; each caller hears its own answer.
TEST(KubePodStopperTest, CarriesOutStopsInOrderAndTellsEachOutcome) {
  FakeKubeApi api({{200, "{}"}, {403, R"({"message":"forbidden"})"}, {200, "{}"}});
  const std::filesystem::path token =
      std::filesystem::temp_directory_path() / ("gf-stopper-token-" + std::to_string(getpid()));
  std::ofstream(token) << "tok-1\n";
  KubePodStopper stopper(KubeApiConfig{.endpoint = api.Url(), .token_file = token.string()});
  std::promise<Status> first;
  std::promise<Status> second;
  std::promise<Status> third;
  stopper.Stop(Pod("notebook-a"), [&](Status s) { first.set_value(std::move(s)); });
  stopper.Stop(Pod("notebook-b"), [&](Status s) { second.set_value(std::move(s)); });
  const Status a = first.get_future().get();
  const Status b = second.get_future().get();
  std::ofstream(token) << "tok-2\n";  // a projected token rotated
  stopper.Stop(Pod("train-0", "Deployment/train", true),
               [&](Status s) { third.set_value(std::move(s)); });
  const Status c = third.get_future().get();
  std::filesystem::remove(token);

  EXPECT_TRUE(a.ok()) << a.error().message;
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(b.error().message.find("could not delete pod dev/notebook-b"), std::string::npos)
      << b.error().message;
  EXPECT_TRUE(c.ok()) << c.error().message;
  const std::vector<std::string> requests = api.Requests();
  ASSERT_EQ(requests.size(), 3U);
  EXPECT_EQ(requests[0],
            "DELETE /api/v1/namespaces/dev/pods/notebook-a|application/json|Bearer tok-1|"
            R"({"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"uid":)"
            R"("00000000-002a-4000-8000-0000000000aa"}})");
  EXPECT_EQ(requests[1].substr(0, requests[1].find('|')),
            "DELETE /api/v1/namespaces/dev/pods/notebook-b");
  EXPECT_EQ(requests[2],
            "PATCH /apis/apps/v1/namespaces/dev/deployments/train/scale|"
            "application/merge-patch+json|Bearer tok-2|{\"spec\":{\"replicas\":0}}");
}

TEST(KubePodStopperTest, AnApiServerThatCannotBeReachedIsTheStopsFailure) {
  std::string closed_url;
  {
    const LoopbackListener gone;
    closed_url = gone.Url();
  }
  KubePodStopper stopper(KubeApiConfig{.endpoint = closed_url});
  std::promise<Status> done;
  stopper.Stop(Pod("notebook-a"), [&](Status s) { done.set_value(std::move(s)); });
  const Status s = done.get_future().get();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(s.error().message.starts_with("could not delete pod dev/notebook-a: "))
      << s.error().message;
}

// A name an agent reported that Kubernetes would not give is refused before any call.
TEST(KubePodStopperTest, ABadNameMakesNoCall) {
  FakeKubeApi api({});
  KubePodStopper stopper(KubeApiConfig{.endpoint = api.Url()});
  std::promise<Status> done;
  stopper.Stop(Pod("../x"), [&](Status s) { done.set_value(std::move(s)); });
  const Status s = done.get_future().get();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(api.Requests().empty());
}

TEST(KubePodStopperTest, StopsAfterShutdownAreDropped) {
  FakeKubeApi api({});
  KubePodStopper stopper(KubeApiConfig{.endpoint = api.Url()});
  stopper.Shutdown();
  bool called = false;
  stopper.Stop(Pod("notebook-a"), [&](const Status&) { called = true; });
  stopper.Shutdown();  // idempotent
  EXPECT_FALSE(called);
  EXPECT_TRUE(api.Requests().empty());
}

}  // namespace
}  // namespace gf
