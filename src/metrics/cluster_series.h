// ClusterSeries: the whole cluster's figures over time, for the dashboard's overview (GET
// /api/v1/cluster/series): GPUs allocated, busy (allocated and used) and idle while allocated,
// failed, the GPU time actually used, power, the queue per priority class and each team's
// guarantee, held and borrowed GPUs.
//
// Telemetry keeps rings per GPU and the store keeps per-minute GPU rollups, but nothing kept
// the queue or the teams over time: a point here is taken from ClusterService::Stats, ::Quota
// and the Telemetry snapshot together (MakeClusterPoint), every `fine_step` by a
// ClusterSeriesRecorder. Two bounded rings: fine points for the last `fine_keep` (5 s for an
// hour by default) and means per `coarse_step` for `coarse_keep` (1 min for a week). Like the
// Telemetry rings, they live in memory only: after a restart the series starts empty.
//
// Memory: a point is ~100 bytes plus ~40 per class and ~50 per team; the default rings hold
// 720 + 10,080 points (a few MiB with a handful of classes and teams).
//
// Thread-safety: ClusterSeries may be used from any thread (one mutex). The recorder owns a
// thread of its own, stopped and joined by its destructor.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "monitor/telemetry.h"
#include "service/service.h"

namespace gf {

// An allocated GPU whose utilisation is under this is idle while allocated: the monthly
// report's threshold (report/report.h kIdleUtilPct), so that the overview and the report count
// the same GPUs as wasted. The API sends it with the series so that the page uses it too.
inline constexpr double kBusyUtilPct = 5.0;

struct ClassPoint {
  std::string priority{};    // "high", "normal", "low"
  double pending = 0;        // jobs waiting
  double oldest_wait_s = 0;  // the longest any of them has waited; 0 with none
};

struct TeamPoint {
  std::string team{};     // "" = jobs of no team
  double guaranteed = 0;  // GPUs
  double held = 0;        // GPUs its starting and running jobs hold (a share counts its part)
  double borrowed = 0;    // of which beyond its guarantee or budget (preemptible)
};

// Every figure is a double: a point of a coarse ring or of a downsampled window is the mean of
// the points it stands for.
struct ClusterPoint {
  Time time{};
  double gpus = 0;                  // GPUs known to the Telemetry
  double allocated = 0;             // held by at least one job
  double busy = 0;                  // allocated, utilisation at least kBusyUtilPct
  double idle_allocated = 0;        // allocated - busy (no reading counts as idle)
  double failed = 0;                // health failed, or lost
  double used = 0;                  // sum of utilisation / 100 over all GPUs: GPUs' worth of work
  double power_w = 0;               // sum of the GPUs' power draw
  std::vector<ClassPoint> queue{};  // per class, in the order Stats gives
  std::vector<TeamPoint> teams{};   // per team, in the order Quota gives
};

// One point at `now`. `quota` may be null (no teams then).
ClusterPoint MakeClusterPoint(Time now,
                              const ClusterStats& stats,
                              const QuotaReport* quota,
                              const TelemetrySnapshot& telemetry);

// The mean of `points` (not empty), timed at the last one: classes and teams are matched by
// name, one absent from a point counting 0 there, and listed in order of first appearance.
ClusterPoint MeanPoint(std::span<const ClusterPoint> points);

struct ClusterSeriesOptions {
  Millis fine_step{5'000};
  Millis fine_keep{3'600'000};
  Millis coarse_step{60'000};
  Millis coarse_keep{7LL * 24 * 3'600'000};
};

class ClusterSeries {
 public:
  // The most points Window() returns: a chart as wide as a 4K screen has no use for more.
  static constexpr std::size_t kMaxPoints = 500;

  explicit ClusterSeries(ClusterSeriesOptions options = {}) : options_(options) {}

  // Adds a point (times ascending; an older one than the latest is ignored) and drops what
  // fell out of the rings' spans.
  void Record(ClusterPoint point);

  // The points with now - window < time <= now, oldest first: from the fine ring when the
  // window fits in fine_keep, else the coarse one; more than `max_points` are averaged
  // (MeanPoint) into `max_points` equal slices of the window at most.
  std::vector<ClusterPoint> Window(Time now,
                                   Millis window,
                                   std::size_t max_points = kMaxPoints) const;

  // The latest point recorded, if any.
  std::optional<ClusterPoint> Latest() const;

  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  const ClusterSeriesOptions& options() const { return options_; }

 private:
  const ClusterSeriesOptions options_;
  mutable std::mutex mu_;
  std::deque<ClusterPoint> fine_;             // GUARDED_BY(mu_)
  std::deque<ClusterPoint> coarse_;           // GUARDED_BY(mu_)
  std::vector<ClusterPoint> coarse_pending_;  // GUARDED_BY(mu_): the open coarse slot's points
};

// Takes a point every `series.options().fine_step` on a thread of its own, from the service
// (as the server's own admin: the quota of every team) and the telemetry; a failed read skips
// that point. The first point is taken at once. Borrows all three, which must outlive it.
class ClusterSeriesRecorder {
 public:
  ClusterSeriesRecorder(ClusterSeries& series,
                        ClusterService& service,
                        const Telemetry& telemetry,
                        const Clock& clock);
  ~ClusterSeriesRecorder();
  ClusterSeriesRecorder(const ClusterSeriesRecorder&) = delete;
  ClusterSeriesRecorder& operator=(const ClusterSeriesRecorder&) = delete;

  // Takes one point now (what the thread does each step).
  void RecordNow();

 private:
  void Loop();

  ClusterSeries& series_;
  ClusterService& service_;
  const Telemetry& telemetry_;
  const Clock& clock_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;     // last: started once the rest exists
};

}  // namespace gf
