#include "scheduler/placement/topology.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "core/check.h"

namespace gf {
namespace {

constexpr int kWorstLevel = 3;

// What a set of GPUs is worth; lower compares better (see topology.h for the order).
struct SetScore {
  int worst_level = 0;
  int leftover_links = 0;  // negated: better-connected leftovers compare lower
  std::int64_t util = 0;
  std::int64_t memory = 0;
  std::vector<int> chosen;  // positions, ascending

  auto Key() const { return std::tie(worst_level, leftover_links, util, memory, chosen); }
  bool operator<(const SetScore& other) const { return Key() < other.Key(); }
};

SetScore Score(const std::vector<TopoGpu>& gpus, std::vector<int> chosen) {
  std::sort(chosen.begin(), chosen.end());
  std::vector<char> taken(gpus.size(), 0);
  SetScore score;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const TopoGpu& a = gpus[static_cast<std::size_t>(chosen[i])];
    taken[static_cast<std::size_t>(chosen[i])] = 1;
    score.util += a.util_pct;
    score.memory += a.memory_used_mib;
    for (std::size_t j = i + 1; j < chosen.size(); ++j) {
      score.worst_level =
          std::max(score.worst_level, LinkLevel(a, gpus[static_cast<std::size_t>(chosen[j])]));
    }
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (std::size_t j = i + 1; j < gpus.size() && taken[i] == 0; ++j) {
      if (taken[j] == 0) {
        score.leftover_links -= kWorstLevel - LinkLevel(gpus[i], gpus[j]);
      }
    }
  }
  score.chosen = std::move(chosen);
  return score;
}

// C(n, k), or kMaxExhaustiveSets + 1 once it passes that.
std::int64_t Combinations(int n, int k) {
  std::int64_t c = 1;
  for (int i = 1; i <= k; ++i) {
    c = c * (n - k + i) / i;
    if (c > kMaxExhaustiveSets) {
      return kMaxExhaustiveSets + 1;
    }
  }
  return c;
}

SetScore BestOfAllSets(const std::vector<TopoGpu>& gpus, int count) {
  const int n = static_cast<int>(gpus.size());
  std::vector<int> pick(static_cast<std::size_t>(count));
  std::iota(pick.begin(), pick.end(), 0);
  SetScore best = Score(gpus, pick);
  while (true) {
    // Next combination in lexicographic order.
    int i = count - 1;
    while (i >= 0 && pick[static_cast<std::size_t>(i)] == n - count + i) {
      --i;
    }
    if (i < 0) {
      return best;
    }
    ++pick[static_cast<std::size_t>(i)];
    for (int j = i + 1; j < count; ++j) {
      pick[static_cast<std::size_t>(j)] = pick[static_cast<std::size_t>(j) - 1] + 1;
    }
    SetScore score = Score(gpus, pick);
    if (score < best) {
      best = std::move(score);
    }
  }
}

// From `seed`, add the GPU with the best worst link to the set, then the least loaded, then
// the lowest position, until the set has `count`.
std::vector<int> GrowFrom(const std::vector<TopoGpu>& gpus, int seed, int count) {
  std::vector<int> chosen = {seed};
  std::vector<char> taken(gpus.size(), 0);
  taken[static_cast<std::size_t>(seed)] = 1;
  while (static_cast<int>(chosen.size()) < count) {
    std::tuple<int, int, std::int64_t, int> best{kWorstLevel + 1, 0, 0, 0};
    for (std::size_t c = 0; c < gpus.size(); ++c) {
      if (taken[c] != 0) {
        continue;
      }
      int level = 0;
      for (const int g : chosen) {
        level = std::max(level, LinkLevel(gpus[c], gpus[static_cast<std::size_t>(g)]));
      }
      const std::tuple<int, int, std::int64_t, int> key{
          level, gpus[c].util_pct, gpus[c].memory_used_mib, static_cast<int>(c)};
      best = std::min(best, key);
    }
    chosen.push_back(std::get<3>(best));
    taken[static_cast<std::size_t>(std::get<3>(best))] = 1;
  }
  return chosen;
}

}  // namespace

int LinkLevel(const TopoGpu& a, const TopoGpu& b) {
  if ((a.nvlink >> b.slot & 1U) != 0 || (b.nvlink >> a.slot & 1U) != 0) {
    return 0;
  }
  if (a.pcie_switch >= 0 && a.pcie_switch == b.pcie_switch) {
    return 1;
  }
  if (a.numa >= 0 && a.numa == b.numa) {
    return 2;
  }
  return kWorstLevel;
}

std::vector<int> ChooseConnectedGpus(const std::vector<TopoGpu>& candidates, int count) {
  const int n = static_cast<int>(candidates.size());
  GF_CHECK(count >= 0 && count <= n);
  for (const TopoGpu& gpu : candidates) {
    GF_CHECK(gpu.slot >= 0 && gpu.slot < 64);
  }
  if (count == 0 || count == n) {
    std::vector<int> all(static_cast<std::size_t>(count));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  if (Combinations(n, count) <= kMaxExhaustiveSets) {
    return BestOfAllSets(candidates, count).chosen;
  }
  SetScore best = Score(candidates, GrowFrom(candidates, 0, count));
  for (int seed = 1; seed < n; ++seed) {
    SetScore score = Score(candidates, GrowFrom(candidates, seed, count));
    if (score < best) {
      best = std::move(score);
    }
  }
  return best.chosen;
}

}  // namespace gf
