// Ledger: the GPUs each team and each user (per class) holds during one pass, and the quota
// and class rules that depend on them (PolicyConfig: teams, classes).
//
// Assumptions:
// - A team holds the GPUs of its running jobs that are not stopping, wherever they run, plus
//   what this pass starts or claims for a job that preempts.
// - Quotas are off when PolicyConfig::teams is empty: nothing is borrowed, nobody preempts to
//   reach a guarantee. Otherwise a team not listed follows PolicyConfig::other_teams.
// - A job is borrowed (preemptible) when it would take its team beyond its guarantee, or when
//   its team is over its GPU-hour budget under the borrow-only policy. Budget use is what the
//   accounting reports for the period (TeamUsage::period_gpu_hours); the pass does not add to it.
//
// Amounts are in milli-GPUs (a whole GPU is 1000; a fractional job counts its share, issue #7);
// the policy's limits are whole GPUs.
//
// Not thread-safe (its lookups fill a cache); one pass owns one ledger.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/pending_reason.h"
#include "model/snapshot.h"
#include "scheduler/classes.h"
#include "scheduler/policy.h"

namespace gf {

struct QuotaVerdict {
  bool may_start = true;
  bool borrowed = false;         // it would run preemptible
  bool guarantee_right = false;  // within its team's guarantee: may preempt others' borrowed work
  PendingReason reason{};        // why it may not start (stage kQuota); unset when it may
};

class Ledger {
 public:
  // `classes` (built from the same policy and cluster) must outlive the ledger.
  Ledger(const PolicyConfig& policy, const ClusterSnapshot& cluster, const ClassTable& classes);

  // The rules of `job`'s class `cls` (who may use it, GPUs per user) and the team rules
  // (max_gpus, budget, guarantee) for `job` asking `milli` milli-GPUs now.
  QuotaVerdict Check(const QueuedJob& job, ClassIndex cls, int milli) const;
  // Counts `milli` milli-GPUs for the job's team and for its user in its class.
  void Add(const std::string& team, const std::string& user, ClassIndex cls, int milli);
  // A running job stops (preempted in this pass): its GPUs no longer count.
  void Remove(const RunningJob& job);
  // Whether the team holds fewer GPUs than its guarantee (quotas on); used by the ordering.
  bool BelowGuarantee(const std::string& team) const;
  // The team's fair-share weight (1 when quotas are off or it has none).
  double Weight(const std::string& team) const;
  // The pass's classes, as given at construction.
  const ClassTable& Classes() const { return classes_; }
  // For Explain: whether quotas are on, the rules the team follows (its own, or other_teams),
  // and the milli-GPUs it holds now (running jobs not stopping, plus what this pass counted).
  bool QuotasOn() const { return quotas_on_; }
  const TeamPolicy& TeamRules(const std::string& team) const { return *StateOf(team).policy; }
  int TeamHeldMilli(const std::string& team) const { return StateOf(team).held; }

 private:
  struct TeamState {
    const TeamPolicy* policy = nullptr;
    int held = 0;  // milli-GPUs
    double period_gpu_hours = 0;
    std::string over_budget;  // the hold reason when over its budget ("" when not)
    // The "at its limit" reason by whole GPUs asked, with the `held` it was written for: a
    // deep queue of a team at max_gpus asks the same question thousands of times a pass.
    std::vector<std::pair<int, PendingReason>> at_limit;
  };
  PendingReason AtLimitReason(const std::string& team, TeamState& state, int milli) const;
  // The team's state, made on first use (teams_ is a cache, hence mutable).
  TeamState& StateOf(const std::string& team) const;
  QuotaVerdict CheckTeam(const QueuedJob& job, int milli) const;

  const PolicyConfig& policy_;
  bool quotas_on_;
  std::map<std::string, TeamPolicy> listed_;  // copies, by name
  mutable std::unordered_map<std::string, TeamState> teams_;
  mutable std::pair<const std::string, TeamState>* last_ = nullptr;  // last looked up
  const ClassTable& classes_;
  // Milli-GPUs held per class (by ClassIndex, the unconfigured one included), then per user.
  std::vector<std::unordered_map<std::string, int>> user_class_held_;
  std::map<std::string, TeamUsage> usage_;
};

}  // namespace gf
