#include "kube/kube_pod_stopper.h"

#include <spdlog/spdlog.h>

#include "api/api_client.h"

#include "kube/kube_api_client.h"

namespace gf {

KubePodStopper::KubePodStopper(KubeApiConfig config)
    : config_(std::move(config)), thread_([this](const std::stop_token& stop) { Loop(stop); }) {}

KubePodStopper::~KubePodStopper() {
  Shutdown();
}

void KubePodStopper::Stop(KubePodStop stop, Done done) {
  {
    const std::lock_guard lock(mu_);
    if (closed_) {
      return;
    }
    queue_.emplace_back(std::move(stop), std::move(done));
  }
  wake_.notify_one();
}

void KubePodStopper::Shutdown() {
  {
    const std::lock_guard lock(mu_);
    closed_ = true;
    queue_.clear();
  }
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void KubePodStopper::Loop(const std::stop_token& stop) {
  while (true) {
    std::pair<KubePodStop, Done> next;
    {
      std::unique_lock lock(mu_);
      if (!wake_.wait(lock, stop, [this] { return !queue_.empty(); })) {
        return;  // stop requested
      }
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    Status outcome = Carry(next.first);
    if (outcome.ok()) {
      spdlog::info("kubernetes: idle reaping: {}", KubeStopDone(next.first));
    } else {
      spdlog::warn("kubernetes: idle reaping: {}", outcome.error().message);
    }
    if (next.second) {
      next.second(std::move(outcome));
    }
  }
}

Status KubePodStopper::Carry(const KubePodStop& stop) const {
  GF_ASSIGN_OR_RETURN(const KubeApiRequest request, KubeStopRequest(stop));
  GF_ASSIGN_OR_RETURN(ApiClientOptions options, KubeApiClientOptions(config_));
  ApiClient client(config_.endpoint, std::move(options));
  Result<HttpResponse> response = client.Call(
      request.method, request.target, request.body, {{"Content-Type", request.content_type}});
  if (!response.ok()) {
    return Unavailable("could not " + KubeStopToDo(stop) + ": " + response.error().message);
  }
  return KubeStopAnswer(stop, response->status, response->body);
}

}  // namespace gf
