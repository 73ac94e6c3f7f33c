// CommitWindow: how long a loop turn keeps gathering requests before it commits them (group
// commit sized by the arrival rate). Pure arithmetic over the times it is told; the state thread
// owns it (not thread-safe).
//
// Why wait at all: a commit costs about as much for one request as for several (mostly the
// flush to disk), and a request that arrives while a commit is in flight waits for that commit
// to end before its own starts. With four clients the turns otherwise settle into pairs: two
// requests commit while the other two are still on their way, then those two while the first
// pair is answered, so every request waits for about two commits. When requests arrive faster
// than commits complete, a turn that holds some waits a little for the next ones, as long as
// they keep coming at the rate seen, and never longer than half a commit. A lone submitter sends
// its next request only after its answer: the gap between its requests is longer than a commit,
// so its turns never wait.
#pragma once

#include <algorithm>
#include <chrono>

namespace gf {

class CommitWindow {
 public:
  using Clock = std::chrono::steady_clock;

  // A request (a command whose caller waits for the commit) was queued at `at`; calls come in
  // the order the requests were queued.
  void Arrived(Clock::time_point at) {
    if (last_arrival_ != Clock::time_point{}) {
      gap_ = Smooth(gap_, std::max(Clock::duration::zero(), at - last_arrival_));
    }
    last_arrival_ = at;
  }

  // A turn that committed took `took` to apply its commands and commit them (its gathering
  // not counted): what one more turn costs the requests waiting behind it.
  void Committed(Clock::duration took) { commit_ = Smooth(commit_, took); }

  // How long to wait for the next request now, when this turn began gathering at `started` and
  // its newest request was queued at `newest`; zero: commit now.
  Clock::duration NextWait(Clock::time_point now,
                           Clock::time_point started,
                           Clock::time_point newest) const {
    // Gather only while at least two requests arrive per commit.
    if (gap_ == Clock::duration::zero() || commit_ < 2 * gap_) {
      return Clock::duration::zero();
    }
    // The next request is overdue once twice the usual gap has passed since the newest.
    const Clock::time_point give_up = std::min(started + commit_ / 2, newest + 2 * gap_);
    return give_up > now ? give_up - now : Clock::duration::zero();
  }

 private:
  // An exponential mean over about the last 8 values: it follows a change of load within a few
  // turns and is not thrown by one slow flush.
  static Clock::duration Smooth(Clock::duration mean, Clock::duration value) {
    return mean == Clock::duration::zero() ? value : mean + (value - mean) / 8;
  }

  Clock::duration gap_{};     // mean time between two requests
  Clock::duration commit_{};  // mean time of a committing turn
  Clock::time_point last_arrival_{};
};

}  // namespace gf
