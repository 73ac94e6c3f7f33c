#include "metrics/cluster_series.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace gf {
namespace {

// The entry of `out` whose `name_field` is `name` (appended, zeroed, when new).
template <typename Entry>
Entry& Named(std::vector<Entry>& out, const std::string& name, std::string Entry::*name_field) {
  const auto it =
      std::find_if(out.begin(), out.end(), [&](const Entry& e) { return e.*name_field == name; });
  if (it != out.end()) {
    return *it;
  }
  Entry& entry = out.emplace_back();
  entry.*name_field = name;
  return entry;
}

// Keeps the points of `ring` newer than `latest - keep`.
void DropOlder(std::deque<ClusterPoint>& ring, Time latest, Millis keep) {
  while (!ring.empty() && ring.front().time <= latest - keep) {
    ring.pop_front();
  }
}

std::int64_t Slot(Time t, Millis step) {
  return ToUnixMillis(t) / step.count();
}

}  // namespace

ClusterPoint MakeClusterPoint(Time now,
                              const ClusterStats& stats,
                              const QuotaReport* quota,
                              const TelemetrySnapshot& telemetry) {
  ClusterPoint p;
  p.time = now;
  for (const GpuView& gpu : telemetry.gpus) {
    p.gpus += 1;
    const bool reading = gpu.sample && !gpu.sample->lost;
    const std::optional<double> util = reading && gpu.sample->util_gpu_pct
                                           ? std::optional<double>(*gpu.sample->util_gpu_pct)
                                           : std::nullopt;
    if (!gpu.assignments.empty()) {
      p.allocated += 1;
      p.busy += util && *util >= kBusyUtilPct ? 1 : 0;
    }
    if (gpu.gpu.health == GpuHealth::kFailed || (gpu.sample && gpu.sample->lost)) {
      p.failed += 1;
    }
    p.used += util.value_or(0) / 100.0;
    if (reading && gpu.sample->power_mw) {
      p.power_w += static_cast<double>(*gpu.sample->power_mw) / 1000.0;
    }
  }
  p.idle_allocated = p.allocated - p.busy;
  for (const QueueStats& q : stats.queue) {
    p.queue.push_back(
        ClassPoint{q.priority, static_cast<double>(q.pending), q.oldest_wait_seconds});
  }
  if (quota != nullptr) {
    for (const TeamQuota& t : quota->teams) {
      p.teams.push_back(TeamPoint{t.team,
                                  static_cast<double>(t.guaranteed_gpus),
                                  t.held_milli / 1000.0,
                                  t.borrowed_milli / 1000.0});
    }
  }
  return p;
}

ClusterPoint MeanPoint(std::span<const ClusterPoint> points) {
  ClusterPoint mean;
  mean.time = points.back().time;
  for (const ClusterPoint& p : points) {
    mean.gpus += p.gpus;
    mean.allocated += p.allocated;
    mean.busy += p.busy;
    mean.idle_allocated += p.idle_allocated;
    mean.failed += p.failed;
    mean.used += p.used;
    mean.power_w += p.power_w;
    for (const ClassPoint& q : p.queue) {
      ClassPoint& sum = Named(mean.queue, q.priority, &ClassPoint::priority);
      sum.pending += q.pending;
      sum.oldest_wait_s += q.oldest_wait_s;
    }
    for (const TeamPoint& t : p.teams) {
      TeamPoint& sum = Named(mean.teams, t.team, &TeamPoint::team);
      sum.guaranteed += t.guaranteed;
      sum.held += t.held;
      sum.borrowed += t.borrowed;
    }
  }
  const auto n = static_cast<double>(points.size());
  for (double* v : {&mean.gpus,
                    &mean.allocated,
                    &mean.busy,
                    &mean.idle_allocated,
                    &mean.failed,
                    &mean.used,
                    &mean.power_w}) {
    *v /= n;
  }
  for (ClassPoint& q : mean.queue) {
    q.pending /= n;
    q.oldest_wait_s /= n;
  }
  for (TeamPoint& t : mean.teams) {
    t.guaranteed /= n;
    t.held /= n;
    t.borrowed /= n;
  }
  return mean;
}

void ClusterSeries::Record(ClusterPoint point) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!fine_.empty() && point.time <= fine_.back().time) {
    return;
  }
  // A coarse slot closes when the first point of a later one comes.
  if (!coarse_pending_.empty() && Slot(coarse_pending_.back().time, options_.coarse_step) !=
                                      Slot(point.time, options_.coarse_step)) {
    coarse_.push_back(MeanPoint(coarse_pending_));
    coarse_pending_.clear();
  }
  coarse_pending_.push_back(point);
  const Time latest = point.time;
  fine_.push_back(std::move(point));
  DropOlder(fine_, latest, options_.fine_keep);
  DropOlder(coarse_, latest, options_.coarse_keep);
}

std::vector<ClusterPoint> ClusterSeries::Window(Time now,
                                                Millis window,
                                                std::size_t max_points) const {
  const Time from = now - window;
  std::vector<ClusterPoint> points;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool fine = window <= options_.fine_keep;
    for (const ClusterPoint& p : fine ? fine_ : coarse_) {
      if (p.time > from && p.time <= now) {
        points.push_back(p);
      }
    }
    // The open coarse slot: its mean so far, so that a coarse window reaches the present.
    if (!fine && !coarse_pending_.empty() && coarse_pending_.back().time <= now) {
      points.push_back(MeanPoint(coarse_pending_));
    }
  }
  if (points.size() <= max_points || max_points == 0) {
    return points;
  }
  // Slices of the window, each averaged: a slice without a point stays a gap.
  const std::int64_t slice_ms = (window.count() + static_cast<std::int64_t>(max_points) - 1) /
                                static_cast<std::int64_t>(max_points);
  // Slice k is (from + k * slice_ms, from + (k + 1) * slice_ms], as the window is open at from.
  const auto slice_of = [&](const ClusterPoint& p) {
    return ((p.time - from).count() - 1) / slice_ms;
  };
  std::vector<ClusterPoint> out;
  std::size_t begin = 0;
  while (begin < points.size()) {
    const std::int64_t slice = slice_of(points[begin]);
    std::size_t end = begin + 1;
    while (end < points.size() && slice_of(points[end]) == slice) {
      ++end;
    }
    out.push_back(MeanPoint(std::span(points).subspan(begin, end - begin)));
    begin = end;
  }
  return out;
}

std::optional<ClusterPoint> ClusterSeries::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fine_.empty() ? std::nullopt : std::optional<ClusterPoint>(fine_.back());
}

ClusterSeriesRecorder::ClusterSeriesRecorder(ClusterSeries& series,
                                             ClusterService& service,
                                             const Telemetry& telemetry,
                                             const Clock& clock)
    : series_(series), service_(service), telemetry_(telemetry), clock_(clock), thread_([this] {
        Loop();
      }) {}

ClusterSeriesRecorder::~ClusterSeriesRecorder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ClusterSeriesRecorder::RecordNow() {
  // The server itself, as root on its socket is: an admin, who may read every team's quota.
  const Caller server{.authenticated = true, .uid = 0, .gid = 0, .user = "root"};
  Result<ClusterStats> stats = service_.Stats(server);
  if (!stats.ok()) {
    return;
  }
  const Result<QuotaReport> quota = service_.Quota(server);
  series_.Record(MakeClusterPoint(
      clock_.Now(), *stats, quota.ok() ? &*quota : nullptr, telemetry_.Snapshot()));
}

void ClusterSeriesRecorder::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    RecordNow();
    lock.lock();
    wake_.wait_for(lock, series_.options().fine_step, [this] { return stopping_; });
  }
}

}  // namespace gf
