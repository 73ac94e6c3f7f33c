#include "kube/kube_api_watch.h"

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/test_loopback.h"

namespace gf {
namespace {

using namespace std::chrono_literals;

// A stand-in for the API server's list and watch of three resources, over plain HTTP on
// loopback: lists are paged by `limit` with a continue token that needs percent-encoding,
// watches are chunked application/json streams fed line by line by the test.
class FakeKubeApi {
 public:
  FakeKubeApi() {
    EXPECT_GE(listener_.fd, 0);
    accept_ = std::thread([this] { Accept(); });
  }
  ~FakeKubeApi() {
    {
      const std::lock_guard lock(mu_);
      stopping_ = true;
      for (const int fd : fds_) {
        ::shutdown(fd, SHUT_RDWR);
      }
    }
    changed_.notify_all();
    listener_.Shutdown();
    accept_.join();
    for (std::thread& t : connections_) {
      t.join();
    }
  }
  std::string Url() const { return listener_.Url(); }

  void SetList(const std::string& path, std::vector<std::string> items, std::string version) {
    const std::lock_guard lock(mu_);
    lists_[path] = {std::move(items), std::move(version)};
  }
  // A line to every open watch of `path`; waits until one is open.
  void Send(const std::string& path, const std::string& line) {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(changed_.wait_for(lock, 20s, [&] { return open_watches_[path] > 0; }))
        << "no watch of " << path;
    pending_[path].push_back(line);
    changed_.notify_all();
  }
  int Lists(const std::string& path) {
    const std::lock_guard lock(mu_);
    return list_count_[path];
  }
  std::vector<std::string> Requests() {
    const std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void Accept() {
    while (true) {
      const int fd = ::accept4(listener_.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        return;
      }
      const std::lock_guard lock(mu_);
      fds_.push_back(fd);
      connections_.emplace_back([this, fd] {
        Serve(fd);
        ::close(fd);
      });
    }
  }

  static bool SendAll(int fd, const std::string& data) {
    return ::send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }

  void Serve(int fd) {
    std::string data;
    char buf[4096];
    while (true) {
      std::size_t end = data.find("\r\n\r\n");
      while (end == std::string::npos) {
        const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) {
          return;
        }
        data.append(buf, static_cast<std::size_t>(n));
        end = data.find("\r\n\r\n");
      }
      const std::string head = data.substr(0, end);
      data.erase(0, end + 4);
      const std::string target = head.substr(4, head.find(' ', 4) - 4);
      const auto auth_at = head.find("Authorization: ");
      const std::string auth =
          auth_at == std::string::npos
              ? ""
              : head.substr(auth_at + 15, head.find("\r\n", auth_at) - auth_at - 15);
      const std::string path = target.substr(0, target.find('?'));
      {
        const std::lock_guard lock(mu_);
        std::string request = "GET ";
        request.append(target).append(" ").append(auth);
        requests_.push_back(std::move(request));
      }
      if (target.find("watch=1") != std::string::npos) {
        Watch(fd, path);
        return;
      }
      if (!SendAll(fd, ListAnswer(path, target))) {
        return;
      }
    }
  }

  std::string ListAnswer(const std::string& path, const std::string& target) {
    const std::lock_guard lock(mu_);
    ++list_count_[path];
    const auto& [items, version] = lists_[path];
    const std::size_t limit = std::stoul(target.substr(target.find("limit=") + 6));
    std::size_t from = 0;
    if (const auto at = target.find("&continue="); at != std::string::npos) {
      // The token is "p=N+" (percent-encoded by the client: p%3DN%2B).
      const std::string token = target.substr(at + 10);
      EXPECT_EQ(token.substr(0, 4), "p%3D") << "continue token not encoded: " << token;
      from = std::stoul(token.substr(4));
    }
    std::string body = R"({"kind":"List","metadata":{"resourceVersion":")" + version + "\"";
    if (from + limit < items.size()) {
      body += R"(,"continue":"p=)" + std::to_string(from + limit) + "+\"";
    }
    body += R"(},"items":[)";
    for (std::size_t i = from; i < std::min(items.size(), from + limit); ++i) {
      body += (i > from ? "," : "") + items[i];
    }
    body += "]}";
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  void Watch(int fd, const std::string& path) {
    if (!SendAll(fd,
                 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n")) {
      return;
    }
    std::unique_lock lock(mu_);
    ++open_watches_[path];
    changed_.notify_all();
    while (!stopping_) {
      changed_.wait(lock, [&] {
        return stopping_ || !pending_[path].empty() || pending_.count(path + "#end") > 0;
      });
      while (!pending_[path].empty()) {
        const std::string line = pending_[path].front() + "\n";
        pending_[path].pop_front();
        char size[32];
        std::snprintf(size, sizeof(size), "%zx\r\n", line.size());
        if (!SendAll(fd, size + line + "\r\n")) {
          --open_watches_[path];
          return;
        }
      }
      // An ERROR event ends the watch, as the API server does.
      if (pending_.count(path + "#end") > 0) {
        pending_.erase(path + "#end");
        break;
      }
    }
    --open_watches_[path];
    lock.unlock();
    SendAll(fd, "0\r\n\r\n");
  }

 public:
  void EndWatch(const std::string& path) {
    const std::lock_guard lock(mu_);
    pending_[path + "#end"];
    changed_.notify_all();
  }

 private:
  LoopbackListener listener_;
  std::thread accept_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::vector<int> fds_;
  std::vector<std::thread> connections_;
  std::map<std::string, std::pair<std::vector<std::string>, std::string>> lists_;
  std::map<std::string, std::deque<std::string>> pending_;
  std::map<std::string, int> open_watches_;
  std::map<std::string, int> list_count_;
  std::vector<std::string> requests_;
};

std::string Pod(const std::string& uid,
                const std::string& name,
                const std::string& owner_kind,
                const std::string& owner_name,
                const std::string& version = "1") {
  return R"({"metadata":{"name":")" + name + R"(","namespace":"ml","uid":")" + uid +
         R"(","resourceVersion":")" + version + R"(","ownerReferences":[{"kind":")" + owner_kind +
         R"(","name":")" + owner_name +
         R"(","controller":true}]},"spec":{"serviceAccountName":"trainer"}})";
}

std::string Owned(const std::string& name, const std::string& kind, const std::string& owner) {
  return R"({"metadata":{"name":")" + name + R"(","namespace":"ml","uid":"u-)" + name +
         R"(","resourceVersion":"1","ownerReferences":[{"kind":")" + kind + R"(","name":")" +
         owner + R"(","controller":true}]}})";
}

template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 1000; ++i) {
    if (pred()) {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

class KubeApiWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf-kube-watch-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    WriteToken("first-token\n");
    api_.SetList("/api/v1/pods",
                 {Pod("p1", "web-7d9-a", "ReplicaSet", "web-7d9"),
                  Pod("p2", "nightly-1-x", "Job", "nightly-1"),
                  Pod("p3", "db-0", "StatefulSet", "db")},
                 "100");
    api_.SetList("/apis/apps/v1/replicasets", {Owned("web-7d9", "Deployment", "web")}, "100");
    api_.SetList("/apis/batch/v1/jobs", {Owned("nightly-1", "CronJob", "nightly")}, "100");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void WriteToken(const std::string& token) { std::ofstream(dir_ / "token") << token; }
  KubeApiConfig Config() const {
    return KubeApiConfig{.endpoint = api_.Url(), .token_file = (dir_ / "token").string()};
  }
  static KubeApiWatchOptions Options() {
    return KubeApiWatchOptions{.page_size = 2, .min_backoff = 20ms, .max_backoff = 100ms};
  }

  std::filesystem::path dir_;
  FakeKubeApi api_;
};

TEST_F(KubeApiWatchTest, ListsInPagesThenFollowsTheWatch) {
  KubeApiWatch watch(Config(), Options());
  watch.Start();
  ASSERT_TRUE(Eventually([&] { return watch.Synced(); }))
      << ::testing::PrintToString(api_.Requests());
  // Three pods over two pages (limit 2), each with its workload one level up.
  const auto web = watch.Facts("p1");
  ASSERT_TRUE(web);
  EXPECT_EQ(web->pod.service_account, "trainer");
  EXPECT_EQ(web->workload, (KubeWorkload{"Deployment", "web"}));
  EXPECT_EQ(watch.Facts("p2")->workload, (KubeWorkload{"CronJob", "nightly"}));
  EXPECT_EQ(watch.Facts("p3")->workload, (KubeWorkload{"StatefulSet", "db"}));
  bool paged = false;
  for (const std::string& request : api_.Requests()) {
    paged = paged || request.find("/api/v1/pods?limit=2&continue=p%3D2%2B") != std::string::npos;
    EXPECT_NE(request.find("Bearer first-token"), std::string::npos) << request;
  }
  EXPECT_TRUE(paged);

  // The watch: a new pod, a deletion; the watch was opened from the list's version.
  api_.Send("/api/v1/pods",
            R"({"type":"ADDED","object":)" +
                Pod("p4", "web-7d9-b", "ReplicaSet", "web-7d9", "101") + "}");
  api_.Send("/api/v1/pods",
            R"({"type":"DELETED","object":)" + Pod("p3", "db-0", "StatefulSet", "db", "102") + "}");
  ASSERT_TRUE(Eventually([&] { return watch.Facts("p4") && !watch.Facts("p3"); }));
  EXPECT_EQ(watch.Facts("p4")->workload, (KubeWorkload{"Deployment", "web"}));
  bool from_version = false;
  for (const std::string& request : api_.Requests()) {
    from_version =
        from_version || request.find(
                            "/api/v1/pods?watch=1&allowWatchBookmarks=true&"
                            "timeoutSeconds=300&resourceVersion=100") != std::string::npos;
  }
  EXPECT_TRUE(from_version);

  // The server ends a watch (its timeout): the next resumes from the last version, no list.
  const int lists = api_.Lists("/api/v1/pods");
  api_.Send("/api/v1/pods",
            R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"150"}}})");
  api_.EndWatch("/api/v1/pods");
  ASSERT_TRUE(Eventually([&] {
    for (const std::string& request : api_.Requests()) {
      if (request.find("watch=1") != std::string::npos &&
          request.find("resourceVersion=150") != std::string::npos) {
        return true;
      }
    }
    return false;
  }));
  EXPECT_EQ(api_.Lists("/api/v1/pods"), lists);
}

TEST_F(KubeApiWatchTest, A410GoneListsAgainWithAFreshToken) {
  KubeApiWatch watch(Config(), Options());
  watch.Start();
  ASSERT_TRUE(Eventually([&] { return watch.Synced(); }));
  ASSERT_TRUE(watch.Facts("p1"));
  // Meanwhile the cluster changed and the token rotated; the watch's version expires.
  api_.SetList("/api/v1/pods", {Pod("p9", "new-0", "StatefulSet", "new")}, "500");
  WriteToken("second-token\n");
  api_.Send("/api/v1/pods",
            R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired",)"
            R"("message":"too old resource version"}})");
  ASSERT_TRUE(Eventually([&] { return watch.Facts("p9") && !watch.Facts("p1"); }));
  EXPECT_EQ(api_.Lists("/api/v1/pods"), 3);  // two pages, then the relist's one
  const std::vector<std::string> requests = api_.Requests();
  EXPECT_NE(requests.back().find("second-token"), std::string::npos) << requests.back();
}

TEST(KubeApiConfigTest, InAPodFromTheServiceAccountOtherwiseTheFix) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gf-kube-sa-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::map<std::string, std::string> env;
  auto getenv = [&](const char* name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional(it->second);
  };
  auto none = InClusterKubeApiConfig(getenv, dir.string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--kube-api"), std::string::npos);
  env = {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  auto no_token = InClusterKubeApiConfig(getenv, dir.string());
  ASSERT_FALSE(no_token.ok());
  EXPECT_NE(no_token.error().message.find("automountServiceAccountToken"), std::string::npos);
  std::ofstream(dir / "token") << "t";
  std::ofstream(dir / "ca.crt") << "pem";
  auto config = InClusterKubeApiConfig(getenv, dir.string());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->endpoint, "https://[fd00::1]:443");
  EXPECT_EQ(config->token_file, (dir / "token").string());
  EXPECT_EQ(config->ca_file, (dir / "ca.crt").string());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gf
