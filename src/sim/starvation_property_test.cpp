// The stock policy's anti-starvation rule, replayed (issue #22; docs/scheduling.md "Predicted
// run times"): a job's place is its submit time moved back by its predicted remaining GPU-time,
// at most prediction_max_delay D, and preemption by size takes only victims whose place would
// come after the preemptor's. So no job is passed or preempted for size by a job submitted
// more than D after it, and on one GPU, with preempted work kept (checkpoint interval 0), job j
// ends by submit_j + D + the work of every job submitted up to submit_j + D: from then on the
// GPU runs only those jobs until j is done. Random traces of three job families (so that the
// predictor, learning online, tells them apart), random D and minimum run times.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "sim/cluster.h"
#include "sim/engine.h"

namespace gf::sim {
namespace {

using std::chrono::seconds;

RC_GTEST_PROP(StarvationProperty, NoJobWaitsPastItsAgingBound, ()) {
  const int n = *rc::gen::inRange(2, 40);
  std::vector<TraceJob> jobs;
  for (int i = 0; i < n; ++i) {
    const int family = *rc::gen::inRange(0, 3);
    // Each family has its own scale of run times, so predictions differ and order matters.
    const int duration_s = *rc::gen::inRange(1, 600 * (1 + 4 * family));
    jobs.push_back(TraceJob{.id = "j" + std::to_string(i),
                            .submit = seconds(*rc::gen::inRange(0, 20'000)),
                            .duration = seconds(duration_s),
                            .gpus = 1,
                            .user = "",
                            .team = "",
                            .name = "family" + std::to_string(family)});
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.submit < b.submit;
  });
  PolicyConfig policy;  // the stock policy: prediction and preemption by size on
  policy.prediction.max_delay = seconds(*rc::gen::inRange(0, 4 * 3600));
  policy.preemption.min_run_time = seconds(*rc::gen::element(0, 60, 600));
  auto nodes = ParseClusterSpec("1x1xV100");
  RC_ASSERT(nodes.ok());
  auto result =
      Simulate(*nodes, jobs, SimOptions{.policy = policy, .checkpoint_interval = Millis(0)});
  RC_ASSERT(result.ok());
  RC_ASSERT(result->jobs.size() == jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const Millis horizon = jobs[j].submit + Millis(policy.prediction.max_delay);
    Millis work{0};
    for (const TraceJob& other : jobs) {
      if (other.submit <= horizon) {
        work += other.duration;
      }
    }
    const JobOutcome& outcome = result->jobs[j];
    RC_ASSERT(outcome.end.has_value());
    RC_ASSERT(*outcome.end <= horizon + work);
  }
}

}  // namespace
}  // namespace gf::sim
