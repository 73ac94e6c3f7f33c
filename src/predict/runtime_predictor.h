// RuntimePredictor: how long a job will run, learned from the jobs that ended before it
// (issue #22). Users mostly give no time limit, or a huge one, so without a prediction every
// pending job is as long as any other: ordering by length, backfill and honest estimated starts
// all need one.
//
// What it learns, per key of a hierarchy from the most specific to the least:
//   1. user + job family + GPU count   ("alice's train.py on 4 GPUs")
//   2. user + GPU count
//   3. user
//   4. job family + GPU count          (anyone's train.py on 4 GPUs)
//   5. team + GPU count
//   6. team
//   7. GPU count                       (larger jobs run longer: Jeon et al., ATC'19, on Philly)
//   8. the whole cluster
// Per key, statistics of log(run time) (run times spread over orders of magnitude, from seconds
// to weeks; in log space a 10-minute job off by 5 minutes weighs as a 10-hour job off by 5
// hours): the number of runs, the last two runs, an exponentially weighted mean and variance,
// streaming estimates of the median and the 90th percentile (streaming_quantile.h), and how
// often such a job fails fast (exits non-zero within `fail_fast` of its start). Each job end
// updates its (at most eight) keys in O(1).
//
// A prediction comes from the most specific key that has runs (as Tsafrir et al. 2007 found, the
// same user's last runs of the same job predict best): with 5 runs or more, the key's median
// and 90th percentile; with 2 to 4, the geometric mean of the last two runs; with one, that run.
// Its uncertainty is the key's weighted standard deviation of log(run time) (a prior of 1.0,
// a factor of e, with fewer than two runs), and the high estimate is at least the 90th
// percentile that spread implies.
//
// Each key also keeps how far its own predictions were off (issue #22: `gpufleet explain` shows
// it): at every run's end, before the run is learned, the point estimate the key would have
// given (as above, from the runs before) is compared with the run, as |predicted - actual| /
// actual, and the last kErrorWindow such errors are kept in a ring. A prediction carries their
// median: an honest "how good has this been", since each error was made before its run was
// known. O(1) per update (one ring slot per key); the median is taken only when asked.
//
// It sees only what it is told: the simulator tells it of a job's run time when the job ends, so
// no prediction ever reads a job's own future. Pure (no I/O, no clock); not thread-safe (its
// owner serialises calls); memory grows with the number of distinct keys.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "predict/streaming_quantile.h"

namespace gf {

// What a job is known by. `family` is what repeats from one run of "the same job" to the next
// (CommandFamily).
struct RunKey {
  std::string user;
  std::string team;
  std::string family;
  int gpus = 0;  // whole GPUs asked for (a share counts as 1)
};

// The job family of a command: the job's name when the user chose one (`name` differs from
// the program's own name), else the program's base name and, for an interpreter or launcher
// (python, bash, torchrun, ...), the base name of its script: "python3 /x/train.py --lr 3" →
// "python3 train.py", "./eval.sh" → "eval.sh".
std::string CommandFamily(std::string_view name, const std::vector<std::string>& argv);

enum class RunEnd {
  kCompleted,  // exit 0
  kFailed,     // exit non-zero, or a signal
  kTimeout,    // stopped by its time limit: it would have run at least this long
};

struct PredictorConfig {
  double ewma_weight = 0.3;            // of the newest run in the weighted mean
  std::chrono::seconds fail_fast{60};  // a failure this soon after start "fails fast"
  double prior_log_spread = 1.0;       // uncertainty with fewer than two runs
};

// Which key a prediction came from (the hierarchy above).
enum class PredictionBasis {
  kUserFamilyGpus,
  kUserGpus,
  kUser,
  kFamilyGpus,
  kTeamGpus,
  kTeam,
  kGpus,
  kCluster
};
std::string_view ToString(PredictionBasis basis);  // "user+family+gpus", ..., "cluster"

// How far a key's past predictions were from the runs that followed (RuntimePredictor).
struct PredictionError {
  double median_relative = 0;  // median of |predicted - actual| / actual: 0.25 is "off by 25 %"
  int runs = 0;                // the runs it is over: the key's last ones, at most kErrorWindow
  bool operator==(const PredictionError&) const = default;
};

// How many of a key's latest prediction errors are kept: enough for a stable median, few enough
// that it follows a job that changed (a new dataset, a new model size) within a few weeks.
inline constexpr int kErrorWindow = 20;

struct Prediction {
  Millis expected{0};         // the point estimate: the key's median, or its last runs' mean
  Millis high{0};             // a high estimate (about the 90th percentile): for reservations
  double log_spread = 0;      // the uncertainty: standard deviation of log(run time)
  double fail_fast_rate = 0;  // weighted share of the key's runs that failed fast
  std::int64_t runs = 0;      // the key's runs
  PredictionBasis basis = PredictionBasis::kCluster;
  // How the estimate was made, for people: "median of your last 12 runs of train.py with 4
  // GPUs", "mean of your last 2 runs with 1 GPU", "your last run", "median of 40 runs of team
  // cv", "median of 300 runs on this cluster".
  std::string explanation;
  // The key's error so far (PredictionError); nullopt until one of its predictions met a run
  // (it has ended twice).
  std::optional<PredictionError> error;
};

class RuntimePredictor {
 public:
  explicit RuntimePredictor(PredictorConfig config = {});

  // A run of the job `key` ended after `ran`. O(1): at most eight keys updated.
  void Learn(const RunKey& key, Millis ran, RunEnd end);

  // The prediction for a job of `key`; nullopt when no job has ended yet.
  std::optional<Prediction> Predict(const RunKey& key) const;

  std::size_t KeyCount() const { return stats_.size(); }

 private:
  struct Stats {
    std::int64_t runs = 0;
    double last = 0;      // log seconds of the newest run
    double previous = 0;  // of the one before
    double mean = 0;      // weighted mean of log seconds
    double variance = 0;  // weighted variance
    StreamingQuantile median{0.5};
    StreamingQuantile p90{0.9};
    double fail_fast = 0;  // weighted share of runs that failed fast
    // The relative errors of the key's last predictions (at most kErrorWindow), a ring:
    // `error_next` is where the next one goes. float: a percentage needs no more.
    std::array<float, kErrorWindow> errors{};
    int error_count = 0;
    int error_next = 0;
  };
  void Update(Stats& stats, double log_seconds, bool failed_fast) const;
  // The point estimate of a key with runs (log seconds): From's `expected`.
  static double Center(const Stats& stats);
  Prediction From(const Stats& stats, PredictionBasis basis, const RunKey& key) const;

  PredictorConfig config_;
  std::unordered_map<std::string, Stats> stats_;  // by level-prefixed key (KeyOf)
};

}  // namespace gf
