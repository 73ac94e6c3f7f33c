// CommitWindow: a turn gathers requests only while they arrive faster than turns commit.
#include "controller/commit_window.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::microseconds;
using Tp = CommitWindow::Clock::time_point;

constexpr Tp kT0{std::chrono::seconds(100)};

// `n` requests `gap` apart from kT0, each turn of them committing in `commit`.
CommitWindow Seen(int n, microseconds gap, microseconds commit) {
  CommitWindow window;
  for (int i = 0; i < n; ++i) {
    window.Arrived(kT0 + i * gap);
    window.Committed(commit);
  }
  return window;
}

TEST(CommitWindowTest, ALoneSubmitterNeverWaits) {
  // One client: its next request comes only after its answer, a commit and more later.
  const CommitWindow window = Seen(20, microseconds(500), microseconds(300));
  const Tp now = kT0 + 20 * microseconds(500);
  EXPECT_EQ(window.NextWait(now, now, now), CommitWindow::Clock::duration::zero());
}

TEST(CommitWindowTest, NothingSeenYetMeansNoWait) {
  CommitWindow window;
  EXPECT_EQ(window.NextWait(kT0, kT0, kT0), CommitWindow::Clock::duration::zero());
  window.Arrived(kT0);  // one arrival gives no gap yet
  window.Committed(microseconds(400));
  EXPECT_EQ(window.NextWait(kT0, kT0, kT0), CommitWindow::Clock::duration::zero());
}

TEST(CommitWindowTest, FastArrivalsWaitForTheNextUpToTwiceTheGap) {
  // Requests 50 µs apart, turns of 400 µs: the next is expected within twice the gap.
  const CommitWindow window = Seen(20, microseconds(50), microseconds(400));
  const Tp newest = kT0 + 19 * microseconds(50);
  EXPECT_EQ(window.NextWait(newest, newest, newest), microseconds(100));
  EXPECT_EQ(window.NextWait(newest + microseconds(30), newest, newest), microseconds(70));
  // Overdue: the rate seen has stopped, so the turn commits what it has.
  EXPECT_EQ(window.NextWait(newest + microseconds(100), newest, newest),
            CommitWindow::Clock::duration::zero());
}

TEST(CommitWindowTest, AGatheringTurnWaitsAtMostHalfATurn) {
  const CommitWindow window = Seen(20, microseconds(50), microseconds(400));
  // Arrivals kept coming: the turn began 180 µs ago, so 20 µs of its 200 µs are left.
  const Tp started = kT0;
  const Tp newest = kT0 + microseconds(180);
  EXPECT_EQ(window.NextWait(newest, started, newest), microseconds(20));
  EXPECT_EQ(window.NextWait(started + microseconds(200), started, newest),
            CommitWindow::Clock::duration::zero());
}

TEST(CommitWindowTest, ArrivalsSlowerThanHalfATurnDoNotWait) {
  // 250 µs apart, turns of 400 µs: fewer than two arrivals per turn.
  const CommitWindow window = Seen(20, microseconds(250), microseconds(400));
  const Tp newest = kT0 + 19 * microseconds(250);
  EXPECT_EQ(window.NextWait(newest, newest, newest), CommitWindow::Clock::duration::zero());
}

}  // namespace
}  // namespace gf
