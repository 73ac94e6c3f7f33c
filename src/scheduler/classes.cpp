#include "scheduler/classes.h"

#include <algorithm>
#include <tuple>

namespace gf {

ClassTable::ClassTable(const PolicyConfig& policy, const ClusterSnapshot& cluster) {
  for (const PriorityClassPolicy& cls : policy.classes) {
    classes_.push_back(&cls);
  }
  std::stable_sort(classes_.begin(), classes_.end(), [](const auto* a, const auto* b) {
    return std::tie(a->rank, a->name) < std::tie(b->rank, b->name);
  });
  for (const PriorityClassPolicy* cls : classes_) {
    names_.emplace_back(cls->name);
  }
  by_length_.resize(kMaxPriorityClassName + 1);
  for (std::size_t c = 0; c < names_.size(); ++c) {
    // Names ValidatePolicy would refuse (empty, too long) match no job: ParsePriorityClass
    // gives jobs only names of 1 to kMaxPriorityClassName characters.
    if (!names_[c].empty() && names_[c].size() < by_length_.size()) {
      by_length_[names_[c].size()].push_back(static_cast<ClassIndex>(c));
    }
  }
  unconfigured_.name = "(not configured)";
  // Dense tiers: equal ranks share one; the unconfigured class comes after all.
  for (std::size_t c = 0; c < classes_.size(); ++c) {
    const bool same_rank = c > 0 && classes_[c]->rank == classes_[c - 1]->rank;
    tiers_.push_back(c == 0 ? 0 : tiers_.back() + (same_rank ? 0 : 1));
  }
  tiers_.push_back(classes_.empty() ? 0 : tiers_.back() + 1);
  const std::size_t size = tiers_.size();
  preempts_.assign(size * size, 0);
  for (std::size_t by = 0; by < classes_.size(); ++by) {
    for (const std::string& name : classes_[by]->preempts) {
      const ClassIndex victim = IndexOf(PriorityClass{.name = name});
      // ValidatePolicy refuses a name that is not listed; an unvalidated policy (a test's)
      // simply preempts nobody by it.
      if (IsConfigured(victim)) {
        preempts_[by * size + victim] = 1;
      }
    }
  }
  running_.reserve(cluster.running.size());
  for (const RunningJob& job : cluster.running) {
    running_.push_back(IndexOf(job.priority));
  }
}

ClassIndex ClassTable::IndexOf(const PriorityClass& priority) const {
  const std::string_view name = priority.name;
  if (name.size() >= by_length_.size()) {
    return Unconfigured();
  }
  // Only the classes whose names are as long: in the stock config (and most) at most one.
  // The bytes compared in a plain loop: for names this short a call to memcmp costs more.
  for (const ClassIndex c : by_length_[name.size()]) {
    const std::string_view candidate = names_[c];
    std::size_t i = 0;
    while (i < name.size() && candidate[i] == name[i]) {
      ++i;
    }
    if (i == name.size()) {
      return c;
    }
  }
  return Unconfigured();
}

std::string ClassTable::Names() const {
  std::string text;
  for (const std::string_view name : names_) {
    text += (text.empty() ? "" : ", ") + std::string(name);
  }
  return text;
}

}  // namespace gf
