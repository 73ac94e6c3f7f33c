// What `gpufleet tune` prints and writes: the table of candidates against the goals, the
// recommendation, the same as JSON, and the settings file of the recommended policy.
//
// Pure functions over plain values: thread-safe.
#pragma once

#include <string>
#include <vector>

#include "tune/candidates.h"
#include "tune/choose.h"
#include "tune/goal.h"

namespace gf::tune {

// What was replayed, for the header lines: "412 jobs from the store (2026-11-29 .. 2026-12-06)
// on 16 nodes, 128 GPUs".
struct TuneInput {
  std::string source;  // "trace t.csv" or "the store (state.db), since 2026-11-29 10:00:00 UTC"
  int jobs = 0;
  int nodes = 0;
  int gpus = 0;
};

struct TuneOutcome {
  std::vector<Goal> goals;
  std::vector<Candidate> candidates;
  std::vector<Measured> measured;  // one per candidate
  Choice choice;
};

// One row per candidate: its name, then per goal its figure and, for a bound, "ok" or "MISSED";
// the recommended row marked with '*'; then the recommendation line(s).
// "1 node", "16 nodes".
std::string Count(int n, const std::string& thing);

std::string FormatTable(const TuneInput& input, const TuneOutcome& outcome);

// {"input": {...}, "goals": [...], "candidates": [{"name", "changes": {KEY: VALUE},
// "figures": [{"goal", "value", "met"}], "meets_all"}], "recommended": NAME,
// "meets_all": BOOL}; a figure with no job to measure is null.
std::string TuneJson(const TuneInput& input, const TuneOutcome& outcome);

// The settings file of the recommended candidate: comment lines saying where it comes from
// (the input, the goals, its figures) and how to use it, then SchedulerToml.
std::string SettingsFile(const TuneInput& input, const TuneOutcome& outcome);

}  // namespace gf::tune
