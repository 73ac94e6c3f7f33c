// KubeApiWatch: `gpufleet server --kubernetes`'s one line to the Kubernetes API server (issue
// #27): a list, then a watch, of pods, replicasets and jobs across the cluster, each on a
// thread of its own (a watch is a request that does not end), kept in a KubePodBook
// (kube_pods.h) so that the server can name each pod's service account and workload.
//
// One watch per resource at the server, none per node: the API server's load stays flat in the
// number of nodes, as NVIDIA's and Prometheus' exporters do it. The rules a watcher follows
// (the API's "Efficient detection of changes"):
//   - list in pages (limit=500, continue), then watch from the list's resourceVersion with
//     bookmarks, so that a reconnect resumes where it was without listing again;
//   - a 410 Gone (the version fell out of the server's window) lists again; so does any other
//     failure, after a backoff from 1 s doubling to 30 s (reset once a list succeeds);
//   - the service account token is read again at every connect: projected tokens rotate.
// The ClusterRole it needs (deploy/kubernetes/server.yaml): get, list, watch on pods,
// replicasets (apps) and jobs (batch). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/result.h"

#include "kube/kube_pods.h"

namespace gf {

// Where the API server is and how the server proves who it is.
struct KubeApiConfig {
  std::string endpoint{};    // "https://10.96.0.1:443"
  std::string token_file{};  // bearer token; "" = none (tests, a proxy that adds one)
  std::string ca_file{};     // the cluster's CA; "" = the system's
};

// The service account's own view from inside a pod: KUBERNETES_SERVICE_HOST and _PORT, and
// the token and CA the kubelet mounts in `account_dir`. `getenv` reads the environment.
// Errors: kFailedPrecondition naming what is missing and the fix (run in a pod with a service
// account token, or give --kube-api).
Result<KubeApiConfig> InClusterKubeApiConfig(
    const std::function<std::optional<std::string>(const char*)>& getenv,
    const std::string& account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

struct KubeApiWatchOptions {
  int page_size = 500;
  std::chrono::seconds watch_timeout{300};  // the server ends each watch after this
  std::chrono::milliseconds min_backoff{1000};
  std::chrono::milliseconds max_backoff{30'000};
};

class KubeApiWatch {
 public:
  explicit KubeApiWatch(KubeApiConfig config, KubeApiWatchOptions options = {});
  ~KubeApiWatch();  // stops
  KubeApiWatch(const KubeApiWatch&) = delete;
  KubeApiWatch& operator=(const KubeApiWatch&) = delete;

  void Start();
  void Stop();

  std::optional<KubePodFacts> Facts(std::string_view pod_uid) const;
  // Whether every resource has been listed once: until then a pod unknown here may just not be
  // read yet.
  bool Synced() const { return synced_.load() == kResources; }

 private:
  static constexpr int kResources = 3;
  void Follow(KubeResource resource, const std::stop_token& stop);
  // One list, then watches until one fails. Returns why it stopped.
  Status ListAndWatch(KubeResource resource, const std::stop_token& stop, bool& listed);

  KubeApiConfig config_;
  KubeApiWatchOptions options_;
  mutable std::mutex mu_;
  KubePodBook book_;  // GUARDED_BY(mu_)
  std::atomic<bool> listed_once_[kResources] = {};
  std::atomic<int> synced_{0};  // resources listed once
  std::vector<std::jthread> threads_;
};

}  // namespace gf
