// Why a job that holds GPUs is being stopped, from the moment the stop is decided (a cancel, a
// time limit, a preemption, an idle verdict, a failed GPU, its gang) until its processes have
// exited: the state it then ends in, and whether it goes back to the queue. One value for the
// controller and the simulator, so that both treat a job "being stopped" alike (a gang follows
// a member being stopped to end, a lost node honours a cancel under way).
#pragma once

#include <string>

#include "model/job.h"

namespace gf {

struct StopIntent {
  JobState final_state = JobState::kCancelled;  // CANCELLED, TIMEOUT, FAILED, PREEMPTED, NODE_FAIL
  std::string cause;                            // why, for its events and its owner
  std::string requeue_after{};  // requeued: what happened ("preemption", "GPU failure")
};

// Whether the job goes back to the queue once the stop has taken effect (PREEMPTED or
// NODE_FAIL, then PENDING), rather than ending.
inline bool Requeues(const StopIntent& intent) {
  return intent.final_state == JobState::kPreempted || intent.final_state == JobState::kNodeFail;
}

}  // namespace gf
