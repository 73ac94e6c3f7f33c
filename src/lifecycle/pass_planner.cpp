#include "lifecycle/pass_planner.h"

namespace gf {

void PassPlanner::ArmAt(Time at) {
  if (!armed_at_ || at < *armed_at_) {
    armed_at_ = at;
  }
}

PassKind PassPlanner::Plan(Time now, const std::function<bool()>& budgets_crossed) const {
  const bool due = (full_due_ && now >= *full_due_) || (armed_at_ && now >= *armed_at_);
  const std::size_t events = events_.ends.size() + events_.arrivals.size();
  if (full_needed_ || due || events > rules_.max_incremental_events) {
    return PassKind::kFull;
  }
  if (events == 0) {
    return PassKind::kNone;
  }
  if (budgets_crossed && budgets_crossed()) {
    return PassKind::kFull;
  }
  return PassKind::kIncremental;
}

void PassPlanner::StartFull() {
  full_needed_ = false;
  full_due_.reset();
  armed_at_.reset();
  events_ = {};
}

IncrementalBatch PassPlanner::StartIncremental() {
  IncrementalBatch batch = std::move(events_);
  events_ = {};
  return batch;
}

void PassPlanner::IncrementalRan(Time now, std::size_t waiting) {
  if (waiting > 0 && !full_due_) {
    full_due_ = now + rules_.full_pass_interval;
  }
}

std::optional<Time> PassPlanner::WakeAt() const {
  if (full_due_ && armed_at_) {
    return std::min(*full_due_, *armed_at_);
  }
  return full_due_ ? full_due_ : armed_at_;
}

}  // namespace gf
