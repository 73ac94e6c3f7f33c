#include "scheduler/ordering/fair_share.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace gf {
namespace {

// Jobs of one (team, user) share their fair-share standing: the sort compares a dense rank of
// it (one integer) instead of two doubles and a flag.
struct Standing {
  int borrowing = 0;  // 0: its team is below its guarantee
  double team_share = 0;
  double user_share = 0;
  auto Tuple() const { return std::tie(borrowing, team_share, user_share); }
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
  std::size_t major = 0;  // class index * groups + standing rank
  std::int64_t submit_ms = 0;
  std::int64_t id = 0;
  std::uint32_t position = 0;
  auto MinorTuple() const { return std::tie(submit_ms, id, position); }
};

// Looks each distinct team and user up once: a queue of 100,000 jobs has a few dozen.
class ShareCache {
 public:
  ShareCache(const ClusterSnapshot& cluster, const PolicyConfig& policy, const Ledger& ledger)
      : cluster_(cluster), policy_(policy), ledger_(ledger) {}

  std::pair<int, double> Team(const std::string& team) {
    auto it = teams_.find(team);
    if (it == teams_.end()) {
      const auto usage = cluster_.team_usage.find(team);
      const double used =
          usage == cluster_.team_usage.end() ? 0 : usage->second.decayed_gpu_seconds;
      it = teams_
               .emplace(team,
                        std::make_pair(ledger_.BelowGuarantee(team) ? 0 : 1,
                                       used / ledger_.Weight(team)))
               .first;
    }
    return it->second;
  }

  double User(const std::string& user) {
    auto it = users_.find(user);
    if (it == users_.end()) {
      const auto usage = cluster_.user_decayed_gpu_seconds.find(user);
      const auto weight = policy_.fair_share.user_weights.find(user);
      it = users_
               .emplace(user,
                        (usage == cluster_.user_decayed_gpu_seconds.end() ? 0 : usage->second) /
                            (weight == policy_.fair_share.user_weights.end() ? 1 : weight->second))
               .first;
    }
    return it->second;
  }

 private:
  const ClusterSnapshot& cluster_;
  const PolicyConfig& policy_;
  const Ledger& ledger_;
  std::unordered_map<std::string, std::pair<int, double>> teams_;
  std::unordered_map<std::string, double> users_;
};

}  // namespace

std::vector<const QueuedJob*> FairShareOrder(const Queue& queue,
                                             const ClusterSnapshot& cluster,
                                             const PolicyConfig& policy,
                                             const Ledger& ledger) {
  std::array<std::int64_t, 3> ranks{};
  for (const PriorityClass p :
       {PriorityClass::kHigh, PriorityClass::kNormal, PriorityClass::kLow}) {
    ranks[static_cast<std::size_t>(Rank(p))] = ClassPolicyFor(policy, p).rank;
  }
  // Each job's (team, user) group, found once per distinct pair.
  ShareCache shares(cluster, policy, ledger);
  std::unordered_map<GroupKey, std::size_t, GroupHash> group_of;
  std::vector<Standing> standings;
  std::vector<std::size_t> job_group(queue.pending.size());
  for (std::size_t i = 0; i < queue.pending.size(); ++i) {
    const QueuedJob& job = queue.pending[i];
    const GroupKey group{job.team, job.user};
    auto it = group_of.find(group);  // find first: emplace would allocate a node every time
    if (it == group_of.end()) {
      it = group_of.emplace(group, standings.size()).first;
      const auto [borrowing, team_share] = shares.Team(job.team);
      standings.push_back(Standing{
          .borrowing = borrowing, .team_share = team_share, .user_share = shares.User(job.user)});
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
  // Classes by rank, densely numbered: the config may use any integers.
  std::array<std::int64_t, 3> sorted_ranks = ranks;
  std::sort(sorted_ranks.begin(), sorted_ranks.end());
  const auto class_index = [&](PriorityClass p) {
    const std::int64_t rank = ranks[static_cast<std::size_t>(Rank(p))];
    return static_cast<std::size_t>(
        std::lower_bound(sorted_ranks.begin(), sorted_ranks.end(), rank) - sorted_ranks.begin());
  };
  const std::size_t groups = std::max<std::size_t>(standings.size(), 1);
  std::vector<SortKey> keys;
  keys.reserve(queue.pending.size());
  for (std::size_t i = 0; i < queue.pending.size(); ++i) {
    const QueuedJob& job = queue.pending[i];
    keys.push_back(
        SortKey{.major = class_index(job.priority) * groups + standing_rank[job_group[i]],
                .submit_ms = ToUnixMillis(job.submit_time),
                .id = job.id.value(),
                .position = static_cast<std::uint32_t>(i)});
  }
  // Sort by (submit time, id, position), then distribute stably by the major key (class, then
  // standing): O(n) when the queue comes in submit order, as the controller's does.
  const auto minor_before = [](const SortKey& a, const SortKey& b) {
    return a.MinorTuple() < b.MinorTuple();
  };
  if (!std::is_sorted(keys.begin(), keys.end(), minor_before)) {
    std::sort(keys.begin(), keys.end(), minor_before);
  }
  std::vector<std::size_t> starts(3 * groups + 1, 0);
  for (const SortKey& key : keys) {
    ++starts[key.major + 1];
  }
  for (std::size_t m = 1; m < starts.size(); ++m) {
    starts[m] += starts[m - 1];
  }
  std::vector<const QueuedJob*> order(keys.size());
  for (const SortKey& key : keys) {
    order[starts[key.major]++] = &queue.pending[key.position];
  }
  return order;
}

}  // namespace gf
