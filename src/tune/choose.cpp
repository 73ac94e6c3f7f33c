#include "tune/choose.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"

namespace gf::tune {
namespace {

bool Better(GoalKind kind, double a, double b) {
  return kind == GoalKind::kMaximize ? a > b : a < b;
}

// Whether `value` is within the tie tolerance of `best`.
bool Tied(double value, double best) {
  const double scale = std::max(std::abs(value), std::abs(best));
  return std::abs(value - best) <= kTieTolerance * scale + 1e-12;
}

}  // namespace

Measured Measure(const std::vector<Goal>& goals, const sim::Summary& summary) {
  Measured m;
  for (const Goal& goal : goals) {
    const std::optional<double> value = ValueOf(goal, summary);
    m.values.push_back(value);
    const bool met = goal.kind != GoalKind::kBound || !value || Meets(goal, *value);
    m.met.push_back(met);
    if (!met) {
      m.missed += 1;
      m.shortfall += std::abs(*value - goal.bound) / std::max(std::abs(goal.bound), 1e-9);
    }
  }
  return m;
}

Choice Choose(const std::vector<Goal>& goals,
              const std::vector<Candidate>& candidates,
              const std::vector<Measured>& measured) {
  GF_CHECK(!candidates.empty() && candidates.size() == measured.size());
  std::vector<std::size_t> left(candidates.size());
  std::iota(left.begin(), left.end(), 0);
  // 1. Bounds: those that meet them all, else those that miss the fewest by the least.
  const auto fewest = std::min_element(left.begin(), left.end(), [&](std::size_t a, std::size_t b) {
    return measured[a].missed < measured[b].missed;
  });
  const int missed = measured[*fewest].missed;
  std::erase_if(left, [&](std::size_t i) { return measured[i].missed != missed; });
  if (missed > 0) {
    const double least =
        measured[*std::min_element(left.begin(), left.end(), [&](std::size_t a, std::size_t b) {
          return measured[a].shortfall < measured[b].shortfall;
        })].shortfall;
    std::erase_if(left, [&](std::size_t i) { return !Tied(measured[i].shortfall, least); });
  }
  // 2. Objectives, in order; a candidate with no figure for one drops out unless none has one.
  for (std::size_t g = 0; g < goals.size(); ++g) {
    if (goals[g].kind == GoalKind::kBound) {
      continue;
    }
    std::optional<double> best;
    for (const std::size_t i : left) {
      const std::optional<double> v = measured[i].values[g];
      if (v && (!best || Better(goals[g].kind, *v, *best))) {
        best = v;
      }
    }
    if (best) {
      std::erase_if(left, [&](std::size_t i) {
        return !measured[i].values[g] || !Tied(*measured[i].values[g], *best);
      });
    }
  }
  // 3. The fewest changes, then the first listed.
  const auto closest =
      std::min_element(left.begin(), left.end(), [&](std::size_t a, std::size_t b) {
        return candidates[a].changes.size() < candidates[b].changes.size();
      });
  return Choice{.index = *closest, .meets_all = missed == 0};
}

}  // namespace gf::tune
