#include "lifecycle/stops.h"

#include <utility>

namespace gf {

void StopBook::Request(JobId job, StopIntent intent) {
  intents_[job] = std::move(intent);
}

std::optional<StopIntent> StopBook::Find(JobId job) const {
  const auto it = intents_.find(job);
  return it == intents_.end() ? std::nullopt : std::optional(it->second);
}

RunVerdict StopBook::OnExit(JobId job, int exit_code, const std::string& how) const {
  const auto it = intents_.find(job);
  if (it == intents_.end()) {
    return RunVerdict{.state = exit_code == 0 ? JobState::kCompleted : JobState::kFailed,
                      .cause = how};
  }
  const StopIntent& intent = it->second;
  // An agent's account of a kill starts with the cause it was given: say it once.
  std::string detail = how;
  if (const std::string said = intent.cause + ": "; detail.starts_with(said)) {
    detail.erase(0, said.size());
  }
  RunVerdict end{.state = intent.final_state, .cause = intent.cause + " (" + detail + ")"};
  if (Requeues(intent)) {
    end.requeue = RunVerdict::Requeue{.after = intent.requeue_after,
                                      .cause = intent.cause,
                                      .otherwise = intent.final_state == JobState::kPreempted
                                                       ? JobState::kCancelled
                                                       : JobState::kFailed};
  }
  return end;
}

RunVerdict StopBook::OnLost(JobId job, const std::string& cause) const {
  if (const auto it = intents_.find(job); it != intents_.end() && !Requeues(it->second)) {
    return RunVerdict{.state = it->second.final_state,
                      .cause = it->second.cause + " (then " + cause + ")"};
  }
  return RunVerdict{.state = JobState::kNodeFail,
                    .cause = cause,
                    .requeue = RunVerdict::Requeue{
                        .after = "node failure", .cause = cause, .otherwise = JobState::kFailed}};
}

void StopBook::Requeued(JobId job, const std::string& after, const std::string& cause) {
  intents_.erase(job);
  requeue_causes_[job] = "requeued after " + after + " (" + cause + ")";
}

const std::string* StopBook::RequeueCause(JobId job) const {
  const auto it = requeue_causes_.find(job);
  return it == requeue_causes_.end() ? nullptr : &it->second;
}

void StopBook::Forget(JobId job) {
  intents_.erase(job);
  requeue_causes_.erase(job);
}

}  // namespace gf
