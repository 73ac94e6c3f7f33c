// GpuPool (gpu_pool.h): when a shape could start on GPUs that free up (reservations, for
// backfill), multi-node (gang) fits and reservations, and the facts behind a job's "no fit"
// reason. Split from gpu_pool.cpp by topic.
#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <utility>

#include "core/check.h"
#include "scheduler/placement/gpu_pool.h"

namespace gf {

std::int64_t GpuPool::NodeStart(int n,
                                Shape shape,
                                std::vector<std::pair<std::int64_t, int>>& times) const {
  const PoolNode& node = nodes_[static_cast<std::size_t>(n)];
  if (!Allows(n, shape) || Usable(node, shape.model) < shape.gpus) {
    return kNever;
  }
  times.clear();
  for (int g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    const PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
    if (Matches(gpu, shape.model)) {
      times.emplace_back(gpu.claimed ? kNever : gpu.available_at, g);
    }
  }
  std::int64_t start = now_ms_;
  if (shape.gpus > 0) {
    const auto nth = times.begin() + shape.gpus - 1;
    std::nth_element(times.begin(), nth, times.end());
    start = nth->first;
  }
  // Its GPUs are not enough: the node's host CPUs and memory must be there too, from then on.
  return AsksHost(shape) ? HostStart(node, shape.cpus, shape.memory_mib, start) : start;
}

std::optional<PoolReservation> GpuPool::EarliestStart(Shape shape) const {
  if (shape.model == kNoSuchModel || (shape.gpus <= 0 && !AsksHost(shape))) {
    return std::nullopt;
  }
  std::vector<std::pair<std::int64_t, int>> times;  // (available_at, gpu) on one node
  // Every node's start for this shape, computed once per pass and refreshed lazily: a node's
  // start only moves later within a pass (takes, claims and reservations), so an entry
  // computed at an older version of its node is a lower bound, and the first entry that is
  // current is the earliest start (ties to the first node by name).
  auto [it, added] = start_index_.try_emplace(
      {shape.model, shape.gpus, shape.constraint, shape.cpus, shape.memory_mib});
  StartIndex& index = it->second;
  // A min-heap of (start, node) in a vector: built in one go (no allocation per node, which
  // a tree cost on every pass), and its top is what the tree's first entry was.
  using Entry = std::pair<std::int64_t, int>;
  const auto later = std::greater<Entry>();
  if (added) {
    index.computed_at.assign(nodes_.size(), 0);
    index.by_start.reserve(nodes_.size());
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      const std::int64_t start = NodeStart(static_cast<int>(n), shape, times);
      index.computed_at[n] = node_versions_[n];
      if (start != kNever) {
        index.by_start.emplace_back(start, static_cast<int>(n));
      }
    }
    std::make_heap(index.by_start.begin(), index.by_start.end(), later);
  }
  while (!index.by_start.empty()) {
    const auto node = static_cast<std::size_t>(index.by_start.front().second);
    if (index.computed_at[node] == node_versions_[node]) {
      break;
    }
    std::pop_heap(index.by_start.begin(), index.by_start.end(), later);
    index.by_start.pop_back();
    const std::int64_t now_start = NodeStart(static_cast<int>(node), shape, times);
    index.computed_at[node] = node_versions_[node];
    if (now_start != kNever) {
      index.by_start.emplace_back(now_start, static_cast<int>(node));
      std::push_heap(index.by_start.begin(), index.by_start.end(), later);
    }
  }
  if (index.by_start.empty()) {
    return std::nullopt;
  }
  const auto [start, n] = index.by_start.front();
  NodeStart(n, shape, times);
  return ReservationOn(n, shape, start, times);
}

PoolReservation GpuPool::ReservationOn(int n,
                                       Shape shape,
                                       std::int64_t start_ms,
                                       std::vector<std::pair<std::int64_t, int>>& times) const {
  std::sort(times.begin(), times.end());
  PoolReservation reservation{
      .fit = PoolFit{.node = n, .gpus = {}, .cpus = shape.cpus, .memory_mib = shape.memory_mib},
      .start_ms = start_ms,
      .early_ms = now_ms_};
  for (int i = 0; i < shape.gpus; ++i) {
    const int g = times[static_cast<std::size_t>(i)].second;
    const PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
    reservation.fit.gpus.push_back(g);
    // The start waits for the last of these GPUs: at the earliest when the last of them may
    // be back by the median estimates; a free one's basis does not matter.
    reservation.early_ms = std::max(reservation.early_ms, std::min(gpu.early_at, start_ms));
    reservation.predicted = reservation.predicted || (gpu.predicted && gpu.available_at > now_ms_);
  }
  std::sort(reservation.fit.gpus.begin(), reservation.fit.gpus.end());
  if (AsksHost(shape)) {
    // Or waits for the node's CPUs and memory: as early as their holders may end, on the
    // basis of those it waits for.
    const PoolNode& node = nodes_[static_cast<std::size_t>(n)];
    reservation.early_ms = std::max(
        reservation.early_ms,
        std::min(HostStart(node, shape.cpus, shape.memory_mib, now_ms_, /*early=*/true), start_ms));
    reservation.predicted =
        reservation.predicted ||
        std::any_of(node.host_spans.begin(), node.host_spans.end(), [&](const HostSpan& span) {
          return span.predicted && span.until > now_ms_ && span.until <= start_ms;
        });
  }
  return reservation;
}

void GpuPool::Reserve(const PoolReservation& reservation, int waiter, const PlannedEnd& until) {
  for (const int g : reservation.fit.gpus) {
    PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
    gpu.reserved_from = std::min(gpu.reserved_from, reservation.start_ms);
    gpu.first_waiter = gpu.first_waiter < 0 ? waiter : gpu.first_waiter;
    SetEnd(gpu, until);
  }
  HostSpan span{.from = reservation.start_ms,
                .cpus = reservation.fit.cpus,
                .memory_mib = reservation.fit.memory_mib};
  span.EndAt(until);
  AddSpan(reservation.fit.node, span);
  Recount(reservation.fit.node);
}

std::optional<std::vector<PoolFit>> GpuPool::FindGangFit(Shape shape,
                                                         int count,
                                                         std::int64_t end_ms) const {
  if (shape.model == kNoSuchModel || count <= 0) {
    return std::nullopt;
  }
  std::vector<std::pair<int, int>> candidates;  // (free GPUs left, node): best fit first
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    if (GivesGang(static_cast<int>(n), shape, end_ms)) {
      candidates.emplace_back(nodes_[n].free_total - shape.gpus, static_cast<int>(n));
    }
  }
  if (static_cast<int>(candidates.size()) < count) {
    return std::nullopt;
  }
  const auto last = candidates.begin() + count;
  std::partial_sort(candidates.begin(), last, candidates.end());
  std::vector<PoolFit> fits;
  fits.reserve(static_cast<std::size_t>(count));
  for (auto it = candidates.begin(); it != last; ++it) {
    fits.push_back(shape.gpus == 0 ? PoolFit{.node = it->second,
                                             .gpus = {},
                                             .cpus = shape.cpus,
                                             .memory_mib = shape.memory_mib}
                                   : PickGpus(it->second, shape, end_ms));
  }
  return fits;
}

std::optional<std::vector<PoolReservation>> GpuPool::EarliestGangStart(Shape shape,
                                                                       int count) const {
  if (shape.model == kNoSuchModel || shape.gpus <= 0 || count <= 0) {
    return std::nullopt;
  }
  std::vector<std::pair<std::int64_t, int>> times;   // scratch for NodeStart
  std::vector<std::pair<std::int64_t, int>> starts;  // (start, node)
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const std::int64_t start = NodeStart(static_cast<int>(n), shape, times);
    if (start != kNever) {
      starts.emplace_back(start, static_cast<int>(n));
    }
  }
  if (static_cast<int>(starts.size()) < count) {
    return std::nullopt;
  }
  const auto last = starts.begin() + count;
  std::partial_sort(starts.begin(), last, starts.end());
  const std::int64_t start_ms = std::prev(last)->first;  // when the last of them is ready
  std::vector<PoolReservation> reservations;
  reservations.reserve(static_cast<std::size_t>(count));
  std::int64_t early_ms = now_ms_;
  bool predicted = false;
  for (auto it = starts.begin(); it != last; ++it) {
    NodeStart(it->second, shape, times);
    reservations.push_back(ReservationOn(it->second, shape, start_ms, times));
    early_ms = std::max(early_ms, reservations.back().early_ms);
    predicted = predicted || reservations.back().predicted;
  }
  for (PoolReservation& reservation : reservations) {  // the gang starts together
    reservation.early_ms = early_ms;
    reservation.predicted = predicted;
  }
  return reservations;
}

bool GpuPool::GivesGang(int n, Shape shape, std::int64_t end_ms) const {
  return Allows(n, shape) && HostRoomOn(n, shape.cpus, shape.memory_mib, end_ms) &&
         (shape.gpus == 0 ||
          CountGivable(nodes_[static_cast<std::size_t>(n)], shape.model, end_ms) >= shape.gpus);
}

int GpuPool::NodesWithGivable(Shape shape, std::int64_t end_ms) const {
  if (shape.model == kNoSuchModel) {
    return 0;
  }
  int count = 0;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    count += GivesGang(static_cast<int>(n), shape, end_ms) ? 1 : 0;
  }
  return count;
}

int GpuPool::NodesWithUsable(Shape shape) const {
  if (shape.model == kNoSuchModel) {
    return 0;
  }
  int count = 0;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    count += Allows(static_cast<int>(n), shape) && Usable(nodes_[n], shape.model) >= shape.gpus &&
                     HostCapacity(nodes_[n], shape.cpus, shape.memory_mib)
                 ? 1
                 : 0;
  }
  return count;
}

int GpuPool::LargestUsable(Shape shape) const {
  if (shape.model == kNoSuchModel) {
    return 0;
  }
  if (shape.constraint == kNoConstraint) {
    return largest_usable_[static_cast<std::size_t>(shape.model)];
  }
  const auto [it, added] = constrained_largest_.try_emplace({shape.model, shape.constraint}, 0);
  if (added) {
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (Allows(static_cast<int>(n), shape)) {
        it->second = std::max(it->second, Usable(nodes_[n], shape.model));
      }
    }
  }
  return it->second;
}

NoFitFacts GpuPool::NoFitFactsFor(Shape shape) const {
  NoFitFacts facts;
  facts.any_node = !nodes_.empty();
  facts.models = usable_models_;
  if (shape.constraint != kNoConstraint) {
    const std::vector<char>& allowed =
        constraint_nodes_[static_cast<std::size_t>(shape.constraint)];
    facts.any_labelled_node = std::find(allowed.begin(), allowed.end(), 1) != allowed.end();
    std::set<std::string> labels;
    for (const auto& node_labels : node_labels_) {
      CollectLabels(node_labels, labels);
    }
    facts.labels = JoinLabels(labels);
  }
  if (shape.model == kNoSuchModel) {
    return facts;
  }
  bool first = true;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const PoolNode& node = nodes_[n];
    if (!Allows(static_cast<int>(n), shape)) {
      continue;
    }
    const int usable = Usable(node, shape.model);
    const int free = Free(node, shape.model);
    facts.most_usable = std::max(facts.most_usable, usable);
    if (first || free > facts.most_free) {
      first = false;
      facts.most_free = free;
      facts.most_free_node = node.name.value();
      facts.most_free_node_usable = usable;
    }
  }
  return facts;
}

GpuPool::InTheWay GpuPool::WhoIsInTheWay(Shape shape) const {
  if (shape.model == kNoSuchModel) {
    return {};
  }
  // Best fit over every free GPU, as if nobody waited: the GPUs the job would get but for
  // the waiting jobs ahead of it.
  int best = -1;
  int best_left = INT_MAX;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const PoolNode& node = nodes_[n];
    if (Allows(static_cast<int>(n), shape) && Free(node, shape.model) >= shape.gpus &&
        node.free_total - shape.gpus < best_left) {
      best = static_cast<int>(n);
      best_left = node.free_total - shape.gpus;
    }
  }
  if (best < 0) {
    return {};
  }
  const PoolNode& node = nodes_[static_cast<std::size_t>(best)];
  std::optional<int> first;
  int taken = 0;
  for (int g = node.first_gpu; g < node.first_gpu + node.gpu_count && taken < shape.gpus; ++g) {
    const PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
    if (gpu.free && Matches(gpu, shape.model)) {
      ++taken;
      if (gpu.first_waiter >= 0 && (!first.has_value() || gpu.first_waiter < *first)) {
        first = gpu.first_waiter;
      }
    }
  }
  return InTheWay{.fits = true, .first_waiter = first};
}

bool GpuPool::ClaimsOverlap(Shape a, Shape b) const {
  if (a.model == kNoSuchModel || b.model == kNoSuchModel ||
      (a.model != kAnyModel && b.model != kAnyModel && a.model != b.model)) {
    return false;
  }
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const int position = static_cast<int>(n);
    if (Allows(position, a) && Allows(position, b) &&
        Usable(nodes_[n], a.model) >= std::max(a.gpus, 1) &&
        Usable(nodes_[n], b.model) >= std::max(b.gpus, 1)) {
      return true;
    }
  }
  return false;
}

}  // namespace gf
