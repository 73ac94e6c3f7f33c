// For tests only: a recorded history whose replays are worked out by hand, written into a store by
// the store's own code, for the tests of `gpufleet tune` on SQLite and on PostgreSQL.
//
// On one node of one GPU, under the stock classes (high preempts low once it has run the
// minimum run time; the victim restarts from scratch):
//   low   submitted at 0,    runs 4 h (14,400 s)
//   high  submitted at 60 s, runs 10 m (600 s)
// By hand, per candidate (high's wait; then the mean JCT of the two):
//   min_run_time 10m (current, and every variant that leaves preemption alone): high starts at
//     600 (waits 540 s = 9m), ends 1200 (JCT 1140); low restarts, ends 15,600: mean 8,370 s
//   min_run_time 5m: high waits 240 s (4m), ends 900 (840); low ends 15,300: mean 8,070 s
//   min_run_time 20m: high waits 1,140 s (19m), ends 1,800 (1,740); low 16,200: mean 8,970 s
//   preemption false: high waits for low's end: 14,340 s (3h59m); mean 14,670 s
// So "high.p95_wait<8m" is met only by min_run_time 5m; "high.p95_wait<30m" by all but
// preemption false, and minimizing avg_jct among them picks min_run_time 5m (3.6 % better than
// the current policy, beyond the 1 % tie); with no objective the current policy stays.
#pragma once

#include "core/result.h"
#include "store/store.h"

namespace gf::tune {

inline constexpr const char* kFiveMinutes = "min_run_time = \"5m\"";

// Commits the two jobs above (submitted 6 hours ago, each with the run time above) and the node
// (down, its GPU failed: the replay has them up), and jobs that are not replayed: one submitted
// 30 days ago, one still pending, one cancelled before it ran. Errors: the store's.
Status WriteHandCheckedHistory(Store& store);

}  // namespace gf::tune
