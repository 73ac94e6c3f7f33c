#include "scheduler/ordering/priority_order.h"

#include <algorithm>
#include <tuple>

namespace gf {

bool ComesBefore(const QueuedJob& a, const QueuedJob& b, const ClassTable& classes) {
  const std::size_t a_tier = classes.Tier(classes.IndexOf(a.priority));
  const std::size_t b_tier = classes.Tier(classes.IndexOf(b.priority));
  return std::forward_as_tuple(a_tier, a.submit_time, a.id) <
         std::forward_as_tuple(b_tier, b.submit_time, b.id);
}

std::vector<const QueuedJob*> PriorityOrder(const Queue& queue, const ClassTable& classes) {
  std::vector<const QueuedJob*> order;
  order.reserve(queue.pending.size());
  for (const QueuedJob& job : queue.pending) {
    order.push_back(&job);
  }
  // Stable, so that even duplicate ids (a caller's bug) keep a deterministic order.
  std::stable_sort(order.begin(), order.end(), [&](const QueuedJob* a, const QueuedJob* b) {
    return ComesBefore(*a, *b, classes);
  });
  return order;
}

}  // namespace gf
