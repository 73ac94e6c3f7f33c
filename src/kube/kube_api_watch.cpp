#include "kube/kube_api_watch.h"

#include <algorithm>
#include <condition_variable>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "api/api_client.h"
#include "core/hex.h"

#include "kube/kube_api_client.h"

namespace gf {
namespace {

// "pods", "replicasets", "jobs": the last segment of the resource's path, for the log.
std::string_view ResourceName(KubeResource resource) {
  const std::string_view path = KubeResourcePath(resource);
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

Result<KubeApiConfig> InClusterKubeApiConfig(
    const std::function<std::optional<std::string>(const char*)>& getenv,
    const std::string& account_dir) {
  const std::optional<std::string> host = getenv("KUBERNETES_SERVICE_HOST");
  const std::optional<std::string> port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return FailedPrecondition(
        "--kubernetes: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: run the "
        "server in a pod (deploy/kubernetes/server.yaml), or name the API server with "
        "--kube-api URL (and --kube-token-file, --kube-ca-file)");
  }
  KubeApiConfig config{
      // An IPv6 service address needs brackets in a URL.
      .endpoint = "https://" + (host->find(':') != std::string::npos ? "[" + *host + "]" : *host) +
                  ":" + *port,
      .token_file = account_dir + "/token",
      .ca_file = account_dir + "/ca.crt"};
  for (const std::string& file : {config.token_file, config.ca_file}) {
    if (!std::filesystem::exists(file)) {
      return FailedPrecondition("--kubernetes: " + file +
                                " does not exist: the server's pod needs its service account token "
                                "(automountServiceAccountToken must not be false)");
    }
  }
  return config;
}

KubeApiWatch::KubeApiWatch(KubeApiConfig config, KubeApiWatchOptions options)
    : config_(std::move(config)), options_(options) {}

KubeApiWatch::~KubeApiWatch() {
  Stop();
}

void KubeApiWatch::Start() {
  for (const KubeResource resource :
       {KubeResource::kPods, KubeResource::kReplicaSets, KubeResource::kJobs}) {
    threads_.emplace_back(
        [this, resource](const std::stop_token& stop) { Follow(resource, stop); });
  }
}

void KubeApiWatch::Stop() {
  for (std::jthread& thread : threads_) {
    thread.request_stop();
  }
  threads_.clear();  // joins
}

std::optional<KubePodFacts> KubeApiWatch::Facts(std::string_view pod_uid) const {
  const std::lock_guard lock(mu_);
  const KubeApiPod* pod = book_.Pod(pod_uid);
  if (pod == nullptr) {
    return std::nullopt;
  }
  return KubePodFacts{.pod = *pod, .workload = book_.WorkloadOf(pod_uid)};
}

void KubeApiWatch::Follow(KubeResource resource, const std::stop_token& stop) {
  std::mutex sleep_mu;
  std::condition_variable_any sleep;
  std::chrono::milliseconds backoff = options_.min_backoff;
  while (!stop.stop_requested()) {
    bool listed = false;
    const Status status = ListAndWatch(resource, stop, listed);
    if (stop.stop_requested()) {
      return;
    }
    if (listed) {
      backoff = options_.min_backoff;
    }
    if (status.ok()) {
      continue;  // a 410 Gone: list again at once
    }
    spdlog::warn("kubernetes: {}: {}; again in {} ms",
                 ResourceName(resource),
                 status.error().message,
                 backoff.count());
    std::unique_lock lock(sleep_mu);
    sleep.wait_for(lock, stop, backoff, [] { return false; });
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

Status KubeApiWatch::ListAndWatch(KubeResource resource,
                                  const std::stop_token& stop,
                                  bool& listed) {
  GF_ASSIGN_OR_RETURN(ApiClientOptions client_options, KubeApiClientOptions(config_));
  const std::chrono::milliseconds call_timeout = client_options.timeout;
  ApiClient client(config_.endpoint, std::move(client_options));
  const std::string path(KubeResourcePath(resource));

  std::vector<KubeWatchEvent> items;
  std::string version;
  std::string next;
  do {
    std::string target = path + "?limit=" + std::to_string(options_.page_size);
    if (!next.empty()) {
      target += "&continue=" + PercentEncode(next);
    }
    GF_ASSIGN_OR_RETURN(const HttpResponse response, client.Call("GET", target));
    if (response.status != 200) {
      return Unavailable("list " + path + " answered " + std::to_string(response.status) + ": " +
                         response.body.substr(0, 300));
    }
    GF_ASSIGN_OR_RETURN(KubeListPage page, ParseKubeList(resource, response.body));
    std::move(page.items.begin(), page.items.end(), std::back_inserter(items));
    version = std::move(page.resource_version);
    next = std::move(page.continue_token);
  } while (!next.empty() && !stop.stop_requested());
  {
    const std::lock_guard lock(mu_);
    book_.Relist(resource, items);
  }
  if (!listed_once_[static_cast<int>(resource)].exchange(true)) {
    synced_.fetch_add(1);
  }
  listed = true;

  // Watches from the last version seen; the server ends each after watch_timeout, and the next
  // resumes there (bookmarks keep the version fresh on a quiet resource).
  client.SetTimeout(options_.watch_timeout + call_timeout);
  while (!stop.stop_requested()) {
    bool expired = false;
    Status failure = OkStatus();
    Status watched = client.Watch(
        path + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=" +
            std::to_string(options_.watch_timeout.count()) +
            "&resourceVersion=" + PercentEncode(version),
        [&](std::string_view, std::string_view line) {
          Result<KubeWatchEvent> event = ParseKubeWatchLine(resource, line);
          if (!event.ok()) {
            expired = event.error().code == ErrorCode::kFailedPrecondition;
            failure = expired ? OkStatus() : Status(event.error());
            return false;
          }
          if (!event->resource_version.empty()) {
            version = event->resource_version;
          }
          const std::lock_guard lock(mu_);
          book_.Apply(resource, *event);
          return true;
        },
        stop,
        WatchFraming::kJsonLines);
    if (!watched.ok()) {
      return watched;
    }
    if (expired) {
      return OkStatus();
    }
    if (!failure.ok()) {
      return failure;
    }
  }
  return OkStatus();
}

}  // namespace gf
