// TurnOutbox: what one turn of the state thread produces besides the job book's journal
// (lifecycle/job_book.h), gathered by the controller's components and applied by the
// controller: the rows to commit with the turn (nodes, usage, GPU minutes, tokens,
// subscriptions), the actions that must wait until the turn is durable (launches, kills, agent
// commands), and the notifications raised (routed to their subscriptions and handed to the
// notifier after the commit). Nothing here is done before the commit: a failed commit drops it.
// State thread only.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "model/notification.h"
#include "store/store.h"

namespace gf {

struct TurnOutbox {
  StoreBatch batch;  // jobs and events come from the job book's journal at the commit
  std::vector<std::function<void()>> after_commit;
  std::vector<Notification> notifications;

  void After(std::function<void()> action) { after_commit.push_back(std::move(action)); }
  void Notify(Notification notification) { notifications.push_back(std::move(notification)); }
};

}  // namespace gf
