#include "sim/synthetic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <tuple>

#include "core/check.h"

namespace gf::sim {
namespace {

struct GpuShare {
  int gpus;
  double probability;
};
constexpr std::array<GpuShare, 4> kGpuMix = {{{1, 0.70}, {2, 0.10}, {4, 0.12}, {8, 0.08}}};

class Draw {
 public:
  explicit Draw(std::uint64_t seed) : engine_(seed) {}

  // Uniform in (0, 1): 53 random bits, never exactly 0 (log of it must be finite).
  double Uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }
  double Exponential(double mean) { return -mean * std::log(Uniform()); }
  // Box-Muller; one of the pair is thrown away to keep the stream simple.
  double Normal() {
    return std::sqrt(-2.0 * std::log(Uniform())) * std::cos(2.0 * std::numbers::pi * Uniform());
  }
  std::uint64_t Below(std::uint64_t n) { return engine_() % n; }

 private:
  std::mt19937_64 engine_;
};

int GpusOf(double u, int max_gpus) {
  double sum = 0;
  for (const GpuShare& share : kGpuMix) {
    sum += share.probability;
    if (u < sum) {
      return std::min(share.gpus, max_gpus);
    }
  }
  return std::min(kGpuMix.back().gpus, max_gpus);
}

double MeanGpus(int max_gpus) {
  double mean = 0;
  for (const GpuShare& share : kGpuMix) {
    mean += share.probability * std::min(share.gpus, max_gpus);
  }
  return mean;
}

}  // namespace

std::vector<TraceJob> GenerateSynthetic(const SyntheticOptions& o) {
  GF_CHECK(o.jobs >= 0 && o.cluster_gpus >= 1 && o.max_gpus_per_job >= 1 && o.load > 0 &&
           o.median_duration_s > 0 && o.duration_sigma >= 0 && o.teams >= 1 &&
           o.users_per_team >= 1);
  const double mean_duration_s =
      o.median_duration_s * std::exp(o.duration_sigma * o.duration_sigma / 2);
  const double rate_per_s =
      o.load * o.cluster_gpus / (MeanGpus(o.max_gpus_per_job) * mean_duration_s);
  Draw draw(o.seed);
  std::vector<TraceJob> jobs;
  jobs.reserve(static_cast<std::size_t>(o.jobs));
  double now_s = 0;
  for (int i = 0; i < o.jobs; ++i) {
    now_s += draw.Exponential(1 / rate_per_s);
    const double duration_s =
        std::max(1.0, std::round(o.median_duration_s * std::exp(o.duration_sigma * draw.Normal())));
    const auto team = static_cast<int>(draw.Below(static_cast<std::uint64_t>(o.teams)));
    const auto user = static_cast<int>(draw.Below(static_cast<std::uint64_t>(o.users_per_team)));
    const std::string team_name = "t" + std::to_string(team);
    jobs.push_back(TraceJob{
        .id = "s" + std::to_string(i),
        .submit = Millis(std::llround(now_s * 1000)),
        .duration = Millis(static_cast<std::int64_t>(duration_s) * 1000),
        .gpus = GpusOf(draw.Uniform(), o.max_gpus_per_job),
        .user = team_name + "-u" + std::to_string(user),
        .team = team_name,
    });
  }
  return jobs;
}

std::vector<NodeFailure> GenerateNodeFailures(
    std::size_t nodes, Millis mtbf, Millis repair, Millis until, std::uint64_t seed) {
  GF_CHECK(mtbf.count() > 0 && repair.count() >= 0);
  Draw draw(seed);
  std::vector<NodeFailure> failures;
  for (std::size_t node = 0; node < nodes; ++node) {
    Millis at{0};
    while (true) {
      at += Millis(std::llround(draw.Exponential(static_cast<double>(mtbf.count()))));
      if (at >= until) {
        break;
      }
      failures.push_back(NodeFailure{.node = node, .at = at, .repair = repair});
      at += repair;
    }
  }
  std::sort(failures.begin(), failures.end(), [](const NodeFailure& a, const NodeFailure& b) {
    return std::tie(a.at, a.node) < std::tie(b.at, b.node);
  });
  return failures;
}

void ResampleTo(std::vector<TraceJob>& jobs, double target_gpus, std::uint64_t seed) {
  double demand = 0;
  for (const TraceJob& job : jobs) {
    demand += GpusHeld(job);
  }
  const std::size_t original = jobs.size();
  if (!(demand > 0)) {
    return;
  }
  Draw draw(seed);
  for (int n = 0; demand < target_gpus; ++n) {
    TraceJob job = jobs[draw.Below(original)];
    job.id += "~r" + std::to_string(n);
    job.submit = jobs.back().submit + std::chrono::seconds(1);
    demand += GpusHeld(job);
    jobs.push_back(std::move(job));
  }
}

}  // namespace gf::sim
