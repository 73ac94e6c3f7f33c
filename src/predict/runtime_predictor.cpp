#include "predict/runtime_predictor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

namespace gf {
namespace {

// z of the 90th percentile of a normal distribution: the high estimate from a spread.
constexpr double kZ90 = 1.2816;
// Below one second a run time says nothing more (and log(0) is not a number).
constexpr double kMinSeconds = 1.0;
// With this many runs the key's streaming median and 90th percentile are trusted.
constexpr std::int64_t kQuantileRuns = 5;

constexpr char kSeparator = '\x1f';  // cannot occur in a user, team or family name

std::string_view BaseName(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Programs that run a script or another program: the family is theirs and the script's.
bool IsLauncher(std::string_view program) {
  static constexpr std::array<std::string_view, 19> kLaunchers = {"python",
                                                                  "pypy",
                                                                  "bash",
                                                                  "sh",
                                                                  "zsh",
                                                                  "dash",
                                                                  "ksh",
                                                                  "perl",
                                                                  "ruby",
                                                                  "node",
                                                                  "Rscript",
                                                                  "julia",
                                                                  "torchrun",
                                                                  "accelerate",
                                                                  "deepspeed",
                                                                  "mpirun",
                                                                  "srun",
                                                                  "apptainer",
                                                                  "singularity"};
  return std::any_of(kLaunchers.begin(), kLaunchers.end(), [&](std::string_view l) {
    // python3, python3.11, pypy3: a version after the name is the same launcher.
    return program == l ||
           (program.starts_with(l) &&
            program.find_first_not_of("0123456789.", l.size()) == std::string_view::npos);
  });
}

std::string Plural(std::int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string GpusText(int gpus) {
  return "with " + Plural(gpus, "GPU", "GPUs");
}

}  // namespace

std::string CommandFamily(std::string_view name, const std::vector<std::string>& argv) {
  if (argv.empty()) {
    return std::string(name);
  }
  const std::string_view program = BaseName(argv[0]);
  if (!name.empty() && name != program) {
    return std::string(name);  // chosen by the user (--name): the best name of "the same job"
  }
  std::string family(program);
  if (program == "env") {
    // env VAR=VALUE ... PROGRAM ARGS: the family of PROGRAM ARGS.
    std::size_t i = 1;
    while (i < argv.size() &&
           (argv[i].find('=') != std::string::npos || argv[i].starts_with('-'))) {
      ++i;
    }
    return i < argv.size()
               ? CommandFamily("",
                               std::vector<std::string>(
                                   argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end()))
               : family;
  }
  if (!IsLauncher(program)) {
    return family;
  }
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "-m" && i + 1 < argv.size()) {
      return family + " -m " + argv[i + 1];  // python -m package.module
    }
    if (arg == "-c") {
      return family + " -c";  // inline code: nothing more to go by
    }
    if (!arg.starts_with('-')) {
      return family + " " + std::string(BaseName(arg));
    }
  }
  return family;
}

std::string_view ToString(PredictionBasis basis) {
  switch (basis) {
    case PredictionBasis::kUserFamilyGpus:
      return "user+family+gpus";
    case PredictionBasis::kUserGpus:
      return "user+gpus";
    case PredictionBasis::kUser:
      return "user";
    case PredictionBasis::kFamilyGpus:
      return "family+gpus";
    case PredictionBasis::kTeamGpus:
      return "team+gpus";
    case PredictionBasis::kTeam:
      return "team";
    case PredictionBasis::kGpus:
      return "gpus";
    case PredictionBasis::kCluster:
      return "cluster";
  }
  return "cluster";
}

namespace {

// The key of `key` at one level of the hierarchy, written into `out` (a buffer the caller
// reuses across levels, so that a lookup allocates nothing once it has grown); false where the
// job has nothing to be known by there (no user, no team).
bool KeyOf(PredictionBasis level, const RunKey& key, std::string& out) {
  out.clear();
  const auto add = [&](std::string_view part) {
    out += part;
    out += kSeparator;
  };
  const auto add_gpus = [&] {
    out += std::to_string(key.gpus);  // small: no allocation
    out += kSeparator;
  };
  switch (level) {
    case PredictionBasis::kUserFamilyGpus:
      add("f");
      add(key.user);
      add(key.family);
      add_gpus();
      return !key.user.empty();
    case PredictionBasis::kUserGpus:
      add("g");
      add(key.user);
      add_gpus();
      return !key.user.empty();
    case PredictionBasis::kUser:
      add("u");
      add(key.user);
      return !key.user.empty();
    case PredictionBasis::kFamilyGpus:
      add("h");
      add(key.family);
      add_gpus();
      return !key.family.empty();
    case PredictionBasis::kTeamGpus:
      add("s");
      add(key.team);
      add_gpus();
      return !key.team.empty();
    case PredictionBasis::kTeam:
      add("t");
      add(key.team);
      return !key.team.empty();
    case PredictionBasis::kGpus:
      add("n");
      add_gpus();
      return true;
    case PredictionBasis::kCluster:
      add("c");
      return true;
  }
  return false;
}

constexpr std::array<PredictionBasis, 8> kLevels = {PredictionBasis::kUserFamilyGpus,
                                                    PredictionBasis::kUserGpus,
                                                    PredictionBasis::kUser,
                                                    PredictionBasis::kFamilyGpus,
                                                    PredictionBasis::kTeamGpus,
                                                    PredictionBasis::kTeam,
                                                    PredictionBasis::kGpus,
                                                    PredictionBasis::kCluster};

}  // namespace

RuntimePredictor::RuntimePredictor(PredictorConfig config) : config_(config) {}

void RuntimePredictor::Learn(const RunKey& key, Millis ran, RunEnd end) {
  const double seconds = std::max(kMinSeconds, std::chrono::duration<double>(ran).count());
  const bool failed_fast = end == RunEnd::kFailed && ran <= config_.fail_fast;
  const double x = std::log(seconds);
  std::string k;
  k.reserve(key.user.size() + key.family.size() + key.team.size() + 16);
  for (const PredictionBasis level : kLevels) {
    if (!KeyOf(level, key, k)) {
      continue;
    }
    auto it = stats_.find(k);
    if (it == stats_.end()) {
      it = stats_.emplace(k, Stats{}).first;
    }
    Update(it->second, x, failed_fast);
  }
}

double RuntimePredictor::Center(const Stats& s) {
  return s.runs >= kQuantileRuns ? s.median.Value()
         : s.runs >= 2           ? (s.last + s.previous) / 2
                                 : s.last;
}

void RuntimePredictor::Update(Stats& s, double x, bool failed_fast) const {
  const double w = config_.ewma_weight;
  const double ff = failed_fast ? 1.0 : 0.0;
  if (s.runs > 0) {
    // What the key predicted for this run, from the runs before it: its error, in seconds.
    const double actual = std::exp(x);
    s.errors[static_cast<std::size_t>(s.error_next)] =
        static_cast<float>(std::abs(std::exp(Center(s)) - actual) / actual);
    s.error_next = (s.error_next + 1) % kErrorWindow;
    s.error_count = std::min(s.error_count + 1, kErrorWindow);
  }
  s.runs += 1;
  s.previous = s.last;
  s.last = x;
  if (s.runs == 1) {
    s.mean = x;
    s.variance = 0;
    s.fail_fast = ff;
  } else {
    // The exponentially weighted mean and variance (West 1979's incremental form).
    const double diff = x - s.mean;
    const double increment = w * diff;
    s.mean += increment;
    s.variance = (1 - w) * (s.variance + diff * increment);
    s.fail_fast = (1 - w) * s.fail_fast + w * ff;
  }
  s.median.Add(x);
  s.p90.Add(x);
}

std::optional<Prediction> RuntimePredictor::Predict(const RunKey& key) const {
  std::string k;
  k.reserve(key.user.size() + key.family.size() + key.team.size() + 16);
  for (const PredictionBasis level : kLevels) {
    if (!KeyOf(level, key, k)) {
      continue;
    }
    if (auto it = stats_.find(k); it != stats_.end() && it->second.runs > 0) {
      return From(it->second, level, key);
    }
  }
  return std::nullopt;
}

Prediction RuntimePredictor::From(const Stats& s, PredictionBasis basis, const RunKey& key) const {
  const bool quantiles = s.runs >= kQuantileRuns;
  const double center = Center(s);
  const double spread = s.runs >= 2 ? std::sqrt(s.variance) : config_.prior_log_spread;
  const double high = std::max(center + kZ90 * spread, quantiles ? s.p90.Value() : center);
  const auto millis = [](double log_seconds) {
    return Millis(static_cast<std::int64_t>(std::llround(std::exp(log_seconds) * 1000)));
  };

  std::string method = quantiles ? "median of " : s.runs >= 2 ? "mean of the last 2 of " : "";
  std::string what;
  switch (basis) {
    case PredictionBasis::kUserFamilyGpus:
      what = key.user + "'s " + Plural(s.runs, "run", "runs") + " of " + key.family + " " +
             GpusText(key.gpus);
      break;
    case PredictionBasis::kUserGpus:
      what = key.user + "'s " + Plural(s.runs, "run", "runs") + " " + GpusText(key.gpus);
      break;
    case PredictionBasis::kUser:
      what = key.user + "'s " + Plural(s.runs, "run", "runs");
      break;
    case PredictionBasis::kFamilyGpus:
      what = Plural(s.runs, "run", "runs") + " of " + key.family + " " + GpusText(key.gpus);
      break;
    case PredictionBasis::kTeamGpus:
      what = Plural(s.runs, "run", "runs") + " of team " + key.team + " " + GpusText(key.gpus);
      break;
    case PredictionBasis::kTeam:
      what = Plural(s.runs, "run", "runs") + " of team " + key.team;
      break;
    case PredictionBasis::kGpus:
      what = Plural(s.runs, "run", "runs") + " on this cluster " + GpusText(key.gpus);
      break;
    case PredictionBasis::kCluster:
      what = Plural(s.runs, "run", "runs") + " on this cluster";
      break;
  }
  std::optional<PredictionError> error;
  if (s.error_count > 0) {
    std::array<float, kErrorWindow> errors = s.errors;
    float* const end = errors.data() + s.error_count;
    float* const mid = errors.data() + s.error_count / 2;
    std::nth_element(errors.data(), mid, end);
    double median = *mid;
    if (s.error_count % 2 == 0) {  // an even count: the mean of the two middle values
      median = (median + *std::max_element(errors.data(), mid)) / 2;
    }
    error = PredictionError{.median_relative = median, .runs = s.error_count};
  }
  return Prediction{.expected = millis(center),
                    .high = millis(high),
                    .log_spread = spread,
                    .fail_fast_rate = s.fail_fast,
                    .runs = s.runs,
                    .basis = basis,
                    .explanation = method.empty() ? "as long as " + what : method + what,
                    .error = error};
}

}  // namespace gf
