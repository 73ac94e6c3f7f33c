// ClassTable: the policy's priority classes resolved for one pass, so that the stages compare
// small integers instead of class names (issue #4, scope 1: admin-defined classes).
//
// A job names its class (PriorityClass: a name); PolicyConfig::classes says which classes exist,
// their ranks, rules and whom they preempt. The table numbers them:
// - indexes 0 .. Configured() - 1: the configured classes in scheduling order (rank, then name;
//   the name only makes the numbering deterministic);
// - index Unconfigured() (== Configured()): every job whose class the config does not list — a
//   class dropped from the config while jobs of it were queued or running, or a job built in
//   code. Such a job goes after every configured class, follows no class rules (no allowed
//   users, no per-user cap, no default or maximum time limit) and preempts nothing. Nobody
//   preempts it by class either (no class can name it); a team within its guarantee still
//   preempts it when it is borrowed.
// A tier is a position in the order: classes of equal rank share a tier (then fair share and
// submit time decide between their jobs); Unconfigured() has the last tier.
//
// Assumptions: a config has a handful of classes (tens at most), rarely two of one name
// length, so IndexOf looks only at the classes whose names are as long as the one asked for:
// cheaper than hashing the name; a pass calls it once per queued and running job.
//
// Immutable after construction; it points into the PolicyConfig, which must outlive it. Safe to
// read from any thread. One pass builds one (it copies no policy, only pointers and indexes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/snapshot.h"
#include "scheduler/policy.h"

namespace gf {

using ClassIndex = std::uint32_t;

class ClassTable {
 public:
  // Resolves the classes of `cluster`'s running jobs too (OfRunning); a table for ordering or
  // rules alone may pass an empty snapshot.
  explicit ClassTable(const PolicyConfig& policy, const ClusterSnapshot& cluster = {});

  // The index of the class named `priority`, or Unconfigured().
  ClassIndex IndexOf(const PriorityClass& priority) const;
  // The class index of ClusterSnapshot::running[r] (the snapshot given at construction).
  ClassIndex OfRunning(int r) const { return running_[static_cast<std::size_t>(r)]; }

  std::size_t Configured() const { return names_.size(); }
  ClassIndex Unconfigured() const { return static_cast<ClassIndex>(names_.size()); }
  bool IsConfigured(ClassIndex c) const { return c < Unconfigured(); }

  // The rules of class `c`; for Unconfigured(), none (a permissive policy, preempting nothing).
  const PriorityClassPolicy& Policy(ClassIndex c) const {
    return IsConfigured(c) ? *classes_[c] : unconfigured_;
  }
  // Its place in the order (0 goes first); Tiers() of them, Unconfigured()'s the last.
  std::size_t Tier(ClassIndex c) const { return tiers_[c]; }
  std::size_t Tiers() const { return tiers_.back() + 1; }
  // Whether class `by` lists class `victim` in its `preempts`.
  bool Preempts(ClassIndex by, ClassIndex victim) const {
    return preempts_[static_cast<std::size_t>(by) * tiers_.size() + victim] != 0;
  }

  // "high, normal, low": the configured classes in order, for messages.
  std::string Names() const;

 private:
  std::vector<const PriorityClassPolicy*> classes_;  // in order; into the PolicyConfig
  std::vector<std::string_view> names_;              // classes_[c]->name
  std::vector<std::vector<ClassIndex>> by_length_;   // by name length: the classes so long
  PriorityClassPolicy unconfigured_;
  std::vector<std::size_t> tiers_;   // by index, Unconfigured() included
  std::vector<char> preempts_;       // (by, victim) → 0/1, tiers_.size() squared
  std::vector<ClassIndex> running_;  // by index into ClusterSnapshot::running
};

}  // namespace gf
