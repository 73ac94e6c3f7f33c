// Fair-share ordering ("who goes next" with usage), the successor of PriorityOrder: within a
// priority class, teams below their guarantee first, then the team that used least for its
// weight, then the user of it who used least for theirs (issue #4, scope 4).
//
// Assumptions:
// - Usage is what the snapshot says (decayed GPU-seconds per team and per user, computed by
//   the accounting with PolicyConfig::fair_share.half_life; see DecayedUsage). The order is
//   fixed for the pass: starting jobs in it does not re-sort the rest.
// - A team's share is its usage / its weight (TeamPolicy::fair_share_weight); a user's is
//   their usage / their weight (FairSharePolicy::user_weights, default 1).
//
// Algorithm: the order is (class tier, team below guarantee ? 0 : 1, team share, user share,
// place, job id, position in the input), the user's share compared by band where the policy
// orders by estimates (ShareScale); the place is the submit time, moved back by the job's
// predicted GPU-time when the policy orders by estimates (scheduler/estimates.h). Each distinct
// (team, user) is looked up and ranked once; the jobs are sorted by (place, id, position) — skipped
// when they already come in that order, as the controller's queue does — and then distributed
// stably into buckets by (class, standing): O(n) for a queue in submit order. The order never
// depends on the queue's list order for distinct ids; with no usage, no teams and no estimates it
// is PriorityOrder's.
//
// Pure: safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "model/snapshot.h"
#include "scheduler/classes.h"
#include "scheduler/policy.h"
#include "scheduler/quota/ledger.h"

namespace gf {

// What the order compares of a user's share: the share itself, or, where the policy orders by
// estimates, its fair-share band (PredictionPolicy::fair_share_band): floor(log_f(share /
// mean)) for the mean share of the users that used GPUs, and below every band for a share of 0.
// Teams always compare exact shares. ShareScaleOf takes the mean once per pass.
struct ShareScale {
  double user_mean = 0;
  double band = 1;           // the band factor; 1: exact shares
  bool weigh_sizes = false;  // PredictionPolicy::UserFairShare::kSize: bands weigh sizes
};
ShareScale ShareScaleOf(const ClusterSnapshot& cluster, const PolicyConfig& policy);
// The value compared for `share` against `mean` (the band as a number, or the share).
double StandingKey(double share, double mean, double band);

// A team's standing in the order: below its guarantee first, then the lower share
// (decayed GPU-seconds / weight). FairShareOrder and Explain compute it here, and only here.
struct TeamStanding {
  bool below_guarantee = false;
  double usage_gpu_seconds = 0;
  double weight = 1;
  double share = 0;
};
TeamStanding TeamStandingOf(const std::string& team,
                            const ClusterSnapshot& cluster,
                            const Ledger& ledger);

// A user's standing within a team: the lower share (decayed GPU-seconds / weight), or band,
// first; where bands weigh sizes (ShareScale::weigh_sizes), their jobs' predicted GPU-time
// counts size_weight = band factor ^ band (at least kLowestSizeBand) in their places, and
// users do not compare by key (UserOrderKey).
struct UserStanding {
  double usage_gpu_seconds = 0;
  double weight = 1;
  double share = 0;
  double key = 0;  // what the order compares: StandingKey of the share
  double size_weight = 1;
};
// What the order compares of a user's standing `key`: the key, or, where bands weigh sizes,
// 0: users compare equal, and only their jobs' weighed sizes tell them apart. (So a job with
// no estimate, before any run has ended, is placed at its submit time whoever its user is.)
double UserOrderKey(double key, const ShareScale& scale);

// The lowest band that weighs a size: a user who used less than 1/8 of the mean (band -3 at
// the stock factor 2), or nothing while others did, has their jobs' sizes count 1/8, not
// nothing, so that a newcomer's week-long job does not go before everyone's short ones. Jobs
// of no user, and all jobs while nobody has used GPUs, count their sizes as they are.
inline constexpr double kLowestSizeBand = -3;
UserStanding UserStandingOf(const std::string& user,
                            const ClusterSnapshot& cluster,
                            const PolicyConfig& policy,
                            const ShareScale& scale);

// Under a baseline order (PolicyConfig::ordering other than priority) the order is
// BaselineOrdering's instead (ordering/baseline.h).
//
// The queue's jobs in scheduling order, and each job's class (ClassTable::IndexOf of the
// ledger's Classes(), by position in `queue.pending`), resolved in the same sweep over the
// queue so that a pass looks each job's class up once. The pointers point into
// `queue.pending`.
struct Ordering {
  std::vector<const QueuedJob*> order;
  std::vector<ClassIndex> job_class;
};
Ordering FairShareOrdering(const Queue& queue,
                           const ClusterSnapshot& cluster,
                           const PolicyConfig& policy,
                           const Ledger& ledger);
// The order alone.
std::vector<const QueuedJob*> FairShareOrder(const Queue& queue,
                                             const ClusterSnapshot& cluster,
                                             const PolicyConfig& policy,
                                             const Ledger& ledger);

}  // namespace gf
