// KubePodStopper: `gpufleet server --kubernetes` carrying out the idle reaper's stops of pods
// where an admin opted in (idle_action "delete_pod", "scale_owner"; kube_pod_stop.h says which
// request each is), on a thread of its own: an API server call may take seconds, and the
// controller's state thread must not wait for it. Stops run in the order given, one call each,
// never retried here: the caller hears the answer (`done`, on this object's thread) and the
// reaper judges the pod afresh after a failure. The service account token is read again for
// every call (projected tokens rotate). Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "core/result.h"

#include "kube/kube_api_watch.h"
#include "kube/kube_pod_stop.h"

namespace gf {

class KubePodStopper {
 public:
  using Done = std::function<void(Status)>;

  explicit KubePodStopper(KubeApiConfig config);
  ~KubePodStopper();  // Shutdown()
  KubePodStopper(const KubePodStopper&) = delete;
  KubePodStopper& operator=(const KubePodStopper&) = delete;

  // Queues `stop`; `done` gets the outcome (KubeStopAnswer's, or why the call could not be
  // made). After Shutdown a stop is dropped without a call to `done`.
  void Stop(KubePodStop stop, Done done);
  // Finishes the call under way (its `done` is called), drops the rest, joins the thread.
  // Idempotent.
  void Shutdown();

 private:
  void Loop(const std::stop_token& stop);
  Status Carry(const KubePodStop& stop) const;

  KubeApiConfig config_;
  std::mutex mu_;
  std::condition_variable_any wake_;
  std::deque<std::pair<KubePodStop, Done>> queue_;  // GUARDED_BY(mu_)
  bool closed_ = false;                             // GUARDED_BY(mu_)
  std::jthread thread_;
};

}  // namespace gf
