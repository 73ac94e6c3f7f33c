// The policies `gpufleet tune` tries: the current one and a handful of variants of it, each one
// `[scheduler]` key changed in a direction with a known trade-off (docs/tune.md, "Candidates"):
//   preemption on/off          high classes' waits against work lost to restarts
//   min_run_time half/double   the same trade, in degree (only with preemption on)
//   backfill on/off            utilisation against the reservations of large jobs
//   prediction on/off          shorter work first (and backfill on estimates) against submit order
//   fair_share_band 1 / x2     exact fair share between users against size deciding more
//   prediction_max_delay 1d/7d how far a long job may be passed (the anti-starvation bound)
//   fair_share_half_life 1d/7d how long past usage counts in fair share
//   order = priority           from a research baseline (fifo, sjf, ...) to the stock order
// Variants that need another setting to mean anything are left out (fair_share_band with
// prediction off). Classes, teams and quotas are the admin's contract and are never varied.
//
// Plain values and pure functions: thread-safe.
#pragma once

#include <string>
#include <vector>

#include "scheduler/policy.h"

namespace gf::tune {

// One `[scheduler]` key set to a value, as the settings file writes it (TOML: `"5m"`, `false`).
struct Change {
  std::string key;
  std::string value;
  bool operator==(const Change&) const = default;
};

struct Candidate {
  std::string name;             // "current", or its changes: `min_run_time = "5m"`
  PolicyConfig policy;          // the current policy with the changes
  std::vector<Change> changes;  // from the current policy; how far from it: their number
};

// The current policy first, then its variants (the list above), none the same as another.
std::vector<Candidate> CandidatesFrom(const PolicyConfig& current);

// The `[scheduler]` table of the settings file (docs/config.md) that gives `policy`'s scheduler
// settings: every key, and the `[scheduler.user_weights]` and `[scheduler.model_weights]`
// tables when they have entries. ParseConfig reads it back to the same values.
std::string SchedulerToml(const PolicyConfig& policy);

}  // namespace gf::tune
