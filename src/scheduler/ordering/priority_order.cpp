#include "scheduler/ordering/priority_order.h"

#include <algorithm>
#include <tuple>

namespace gf {

bool ComesBefore(const QueuedJob& a, const QueuedJob& b) {
  return std::forward_as_tuple(Rank(a.priority), a.submit_time, a.id) <
         std::forward_as_tuple(Rank(b.priority), b.submit_time, b.id);
}

std::vector<const QueuedJob*> PriorityOrder(const Queue& queue) {
  std::vector<const QueuedJob*> order;
  order.reserve(queue.pending.size());
  for (const QueuedJob& job : queue.pending) {
    order.push_back(&job);
  }
  // Stable, so that even duplicate ids (a caller's bug) keep a deterministic order.
  std::stable_sort(order.begin(), order.end(), [](const QueuedJob* a, const QueuedJob* b) {
    return ComesBefore(*a, *b);
  });
  return order;
}

}  // namespace gf
