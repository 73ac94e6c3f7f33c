// Controller::Notify: routing to subscriptions (issue #8). Interim: logs only, until the
// notifier (src/notify) is wired in.
#include <spdlog/spdlog.h>

#include "controller/controller.h"

namespace gf {

void Controller::Notify(Notification notification) {
  after_commit_.emplace_back([n = std::move(notification)] {
    spdlog::info("notify: {}: {}", ToString(n.kind), n.subject);
  });
}

}  // namespace gf
