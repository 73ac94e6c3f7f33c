#include "scheduler/ordering/fair_share.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "scheduler/estimates.h"
#include "scheduler/ordering/baseline.h"

namespace gf {
namespace {

// Jobs of one (team, user) share their fair-share standing: the sort compares a dense rank of
// it (one integer) instead of two doubles and a flag.
struct Standing {
  int borrowing = 0;  // 0: its team is below its guarantee
  double team_share = 0;
  double user_key = 0;  // UserStanding::key: the share, or its band
  auto Tuple() const { return std::tie(borrowing, team_share, user_key); }
};

// A job's (team, user): the views point into the queue, which outlives the map.
struct GroupKey {
  std::string_view team;
  std::string_view user;
  bool operator==(const GroupKey&) const = default;
};

struct GroupHash {
  std::size_t operator()(const GroupKey& key) const noexcept {
    const std::size_t team = std::hash<std::string_view>{}(key.team);
    return team ^ (std::hash<std::string_view>{}(key.user) + 0x9e3779b97f4a7c15ULL + (team << 6) +
                   (team >> 2));
  }
};

struct SortKey {
  std::size_t major = 0;      // class index * groups + standing rank
  std::int64_t place_ms = 0;  // PlaceMs: the submit time, moved back by the job's estimate
  std::int64_t id = 0;
  std::uint32_t position = 0;
  auto MinorTuple() const { return std::tie(place_ms, id, position); }
};

// Looks each distinct team and user up once: a queue of 100,000 jobs has a few dozen.
class ShareCache {
 public:
  ShareCache(const ClusterSnapshot& cluster, const PolicyConfig& policy, const Ledger& ledger)
      : cluster_(cluster),
        policy_(policy),
        ledger_(ledger),
        scale_(ShareScaleOf(cluster, policy)) {}

  std::pair<int, double> Team(const std::string& team) {
    auto it = teams_.find(team);
    if (it == teams_.end()) {
      const TeamStanding standing = TeamStandingOf(team, cluster_, ledger_);
      it = teams_.emplace(team, std::make_pair(standing.below_guarantee ? 0 : 1, standing.share))
               .first;
    }
    return it->second;
  }

  // The user's key and size weight (UserStanding).
  std::pair<double, double> User(const std::string& user) {
    auto it = users_.find(user);
    if (it == users_.end()) {
      const UserStanding standing = UserStandingOf(user, cluster_, policy_, scale_);
      it = users_.emplace(user, std::make_pair(standing.key, standing.size_weight)).first;
    }
    return it->second;
  }

  const ShareScale& Scale() const { return scale_; }

 private:
  const ClusterSnapshot& cluster_;
  const PolicyConfig& policy_;
  const Ledger& ledger_;
  const ShareScale scale_;
  std::unordered_map<std::string, std::pair<int, double>> teams_;

  std::unordered_map<std::string, std::pair<double, double>> users_;
};

}  // namespace

ShareScale ShareScaleOf(const ClusterSnapshot& cluster, const PolicyConfig& policy) {
  ShareScale scale;
  if (!UsesEstimates(policy) || policy.prediction.fair_share_band <= 1) {
    return scale;  // exact shares
  }
  scale.band = policy.prediction.fair_share_band;
  scale.weigh_sizes = policy.prediction.user_fair_share == PredictionPolicy::UserFairShare::kSize;
  double sum = 0;
  int users = 0;
  for (const auto& [user, usage] : cluster.user_decayed_gpu_seconds) {
    if (usage > 0) {
      const auto weight = policy.fair_share.user_weights.find(user);
      sum += usage / (weight == policy.fair_share.user_weights.end() ? 1 : weight->second);
      ++users;
    }
  }
  scale.user_mean = users > 0 ? sum / users : 0;
  return scale;
}

double StandingKey(double share, double mean, double band) {
  if (band <= 1) {
    return share;
  }
  // Below every band: nothing used. The bands of real shares stay far above it (a share a
  // billion times below the mean is band -30 at a factor of 2).
  constexpr double kNothingUsed = -1e9;
  if (!(share > 0) || !(mean > 0)) {
    return share > 0 ? 0 : kNothingUsed;
  }
  return std::floor(std::log(share / mean) / std::log(band));
}

TeamStanding TeamStandingOf(const std::string& team,
                            const ClusterSnapshot& cluster,
                            const Ledger& ledger) {
  const auto usage = cluster.team_usage.find(team);
  const double used = usage == cluster.team_usage.end() ? 0 : usage->second.decayed_gpu_seconds;
  const double weight = ledger.Weight(team);
  return TeamStanding{.below_guarantee = ledger.BelowGuarantee(team),
                      .usage_gpu_seconds = used,
                      .weight = weight,
                      .share = used / weight};
}

UserStanding UserStandingOf(const std::string& user,
                            const ClusterSnapshot& cluster,
                            const PolicyConfig& policy,
                            const ShareScale& scale) {
  const auto usage = cluster.user_decayed_gpu_seconds.find(user);
  const auto weight = policy.fair_share.user_weights.find(user);
  const double used = usage == cluster.user_decayed_gpu_seconds.end() ? 0 : usage->second;
  const double w = weight == policy.fair_share.user_weights.end() ? 1 : weight->second;
  const double share = used / w;
  const double key = StandingKey(share, scale.user_mean, scale.band);
  if (scale.weigh_sizes) {
    // No user (a trace without users, a shared account), or nobody has used GPUs yet: every
    // size counts as it is, so that weights never rescale size against waiting time for all.
    const bool weighs = !user.empty() && scale.user_mean > 0;
    return UserStanding{
        .usage_gpu_seconds = used,
        .weight = w,
        .share = share,
        .key = key,
        .size_weight = weighs ? std::pow(scale.band, std::max(key, kLowestSizeBand)) : 1};
  }
  return UserStanding{.usage_gpu_seconds = used, .weight = w, .share = share, .key = key};
}

double UserOrderKey(double key, const ShareScale& scale) {
  return scale.weigh_sizes ? 0 : key;
}

std::vector<const QueuedJob*> FairShareOrder(const Queue& queue,
                                             const ClusterSnapshot& cluster,
                                             const PolicyConfig& policy,
                                             const Ledger& ledger) {
  return FairShareOrdering(queue, cluster, policy, ledger).order;
}

Ordering FairShareOrdering(const Queue& queue,
                           const ClusterSnapshot& cluster,
                           const PolicyConfig& policy,
                           const Ledger& ledger) {
  const ClassTable& classes = ledger.Classes();
  if (policy.ordering.order != QueueOrder::kPriority) {
    return BaselineOrdering(queue, policy, classes);  // no fair share: the baselines' own key
  }
  Ordering ordering;
  std::vector<ClassIndex>& job_class = ordering.job_class;
  job_class.reserve(queue.pending.size());
  // Each job's class, and its (team, user) group found once per distinct pair: one sweep over
  // the queue's memory for both.
  ShareCache shares(cluster, policy, ledger);
  std::unordered_map<GroupKey, std::size_t, GroupHash> group_of;
  std::vector<Standing> standings;
  std::vector<double> size_weights;  // by group
  std::vector<std::size_t> job_group(queue.pending.size());
  for (std::size_t i = 0; i < queue.pending.size(); ++i) {
    const QueuedJob& job = queue.pending[i];
    job_class.push_back(classes.IndexOf(job.priority));
    const GroupKey group{job.team, job.user};
    auto it = group_of.find(group);  // find first: emplace would allocate a node every time
    if (it == group_of.end()) {
      it = group_of.emplace(group, standings.size()).first;
      const auto [borrowing, team_share] = shares.Team(job.team);
      const auto [user_key, size_weight] = shares.User(job.user);
      standings.push_back(Standing{.borrowing = borrowing,
                                   .team_share = team_share,
                                   .user_key = UserOrderKey(user_key, shares.Scale())});
      size_weights.push_back(size_weight);
    }
    job_group[i] = it->second;
  }
  // Dense ranks of the standings: equal standings share a rank, so submit time decides.
  std::vector<std::size_t> by_standing(standings.size());
  for (std::size_t g = 0; g < by_standing.size(); ++g) {
    by_standing[g] = g;
  }
  std::sort(by_standing.begin(), by_standing.end(), [&](std::size_t a, std::size_t b) {
    return standings[a].Tuple() < standings[b].Tuple();
  });
  std::vector<std::size_t> standing_rank(standings.size());
  for (std::size_t k = 0; k < by_standing.size(); ++k) {
    const bool same =
        k > 0 && standings[by_standing[k]].Tuple() == standings[by_standing[k - 1]].Tuple();
    standing_rank[by_standing[k]] = same ? standing_rank[by_standing[k - 1]] : k;
  }
  const std::size_t groups = std::max<std::size_t>(standings.size(), 1);
  std::vector<SortKey> keys;
  keys.reserve(queue.pending.size());
  for (std::size_t i = 0; i < queue.pending.size(); ++i) {
    const QueuedJob& job = queue.pending[i];
    keys.push_back(
        SortKey{.major = classes.Tier(job_class[i]) * groups + standing_rank[job_group[i]],
                .place_ms = PlaceMs(job, policy, size_weights[job_group[i]]),
                .id = job.id.value(),
                .position = static_cast<std::uint32_t>(i)});
  }
  // Sort by (place, id, position), then distribute stably by the major key (class, then
  // standing): O(n) when the queue comes in that order (submit order, as the controller's
  // queue is, when no job has an estimate).
  const auto minor_before = [](const SortKey& a, const SortKey& b) {
    return a.MinorTuple() < b.MinorTuple();
  };
  if (!std::is_sorted(keys.begin(), keys.end(), minor_before)) {
    std::sort(keys.begin(), keys.end(), minor_before);
  }
  std::vector<std::size_t> starts(classes.Tiers() * groups + 1, 0);
  for (const SortKey& key : keys) {
    ++starts[key.major + 1];
  }
  for (std::size_t m = 1; m < starts.size(); ++m) {
    starts[m] += starts[m - 1];
  }
  ordering.order.resize(keys.size());
  for (const SortKey& key : keys) {
    ordering.order[starts[key.major]++] = &queue.pending[key.position];
  }
  return ordering;
}

}  // namespace gf
