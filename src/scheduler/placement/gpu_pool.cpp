#include "scheduler/placement/gpu_pool.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <functional>
#include <map>
#include <utility>

#include "core/check.h"
#include "scheduler/estimates.h"

namespace gf {
namespace {

std::string Lower(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  return lower;
}

}  // namespace

int FreeCpus(const PoolNode& node) {
  return node.cpus == 0 ? INT_MAX : node.cpus - node.cpus_used;
}

std::int64_t FreeMemoryMib(const PoolNode& node) {
  return node.memory_mib == 0 ? std::numeric_limits<std::int64_t>::max()
                              : node.memory_mib - node.memory_used_mib;
}

namespace {

// Whether `node` has room for `cpus` and `memory_mib` more at `at_ms`, by its spans.
bool RoomAt(const PoolNode& node, int cpus, std::int64_t memory_mib, std::int64_t at_ms) {
  int used_cpus = 0;
  std::int64_t used_mib = 0;
  for (const HostSpan& span : node.host_spans) {
    if (span.from <= at_ms && at_ms < span.until) {
      used_cpus += span.cpus;
      used_mib += span.memory_mib;
    }
  }
  return (cpus == 0 || node.cpus == 0 || used_cpus + cpus <= node.cpus) &&
         (memory_mib == 0 || node.memory_mib == 0 || used_mib + memory_mib <= node.memory_mib);
}

}  // namespace

bool HostRoomUntil(const PoolNode& node,
                   int cpus,
                   std::int64_t memory_mib,
                   std::int64_t now_ms,
                   std::int64_t end_ms) {
  if (cpus == 0 && memory_mib == 0) {
    return true;
  }
  if (!HostRoom(node, cpus, memory_mib)) {
    return false;
  }
  // Use only grows where a span starts; those that start after now are reservations.
  return std::all_of(node.host_spans.begin(), node.host_spans.end(), [&](const HostSpan& span) {
    return span.from <= now_ms || span.from >= end_ms || RoomAt(node, cpus, memory_mib, span.from);
  });
}

std::int64_t HostStart(
    const PoolNode& node, int cpus, std::int64_t memory_mib, std::int64_t earliest_ms, bool early) {
  if (cpus == 0 && memory_mib == 0) {
    return earliest_ms;
  }
  if (earliest_ms == kNever || !HostCapacity(node, cpus, memory_mib)) {
    return kNever;
  }
  // The use over time is a step function: sweep its steps in time order and find the end of
  // the last step that leaves no room; the job starts then (or at `earliest_ms`), so that it
  // never slots in before a later hold it would collide with (as a GPU reservation waits for
  // the last hold of its GPUs).
  struct Step {
    std::int64_t at;
    int cpus;
    std::int64_t memory_mib;
  };
  std::vector<Step> steps;
  steps.reserve(node.host_spans.size() * 2);
  for (const HostSpan& span : node.host_spans) {
    steps.push_back(Step{.at = span.from, .cpus = span.cpus, .memory_mib = span.memory_mib});
    const std::int64_t until = early ? std::min(span.early, span.until) : span.until;
    if (until != kNever) {
      steps.push_back(Step{.at = until, .cpus = -span.cpus, .memory_mib = -span.memory_mib});
    }
  }
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.at < b.at; });
  std::int64_t start = earliest_ms;
  int used_cpus = 0;
  std::int64_t used_mib = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    used_cpus += steps[i].cpus;
    used_mib += steps[i].memory_mib;
    if (i + 1 < steps.size() && steps[i + 1].at == steps[i].at) {
      continue;  // the use from this time on is known after its last step
    }
    const bool room =
        (cpus == 0 || node.cpus == 0 || used_cpus + cpus <= node.cpus) &&
        (memory_mib == 0 || node.memory_mib == 0 || used_mib + memory_mib <= node.memory_mib);
    if (!room) {
      start = std::max(start, i + 1 < steps.size() ? steps[i + 1].at : kNever);
    }
  }
  return start;
}

std::vector<const NodeSnapshot*> UpNodesByName(const ClusterSnapshot& cluster) {
  std::vector<const NodeSnapshot*> up;
  for (const NodeSnapshot& node : cluster.nodes) {
    if (node.node.state == NodeState::kUp) {
      up.push_back(&node);
    }
  }
  std::stable_sort(up.begin(), up.end(), [](const NodeSnapshot* a, const NodeSnapshot* b) {
    return a->node.name < b->node.name;
  });
  return up;
}

GpuPool::GpuPool(const ClusterSnapshot& cluster, Time now, bool use_estimates)
    : now_ms_(ToUnixMillis(now)), use_estimates_(use_estimates) {
  std::set<std::string> display_models;
  const std::vector<const NodeSnapshot*> up = UpNodesByName(cluster);
  std::size_t gpus = 0;
  for (const NodeSnapshot* snapshot : up) {
    gpus += snapshot->node.gpus.size();
  }
  gpus_.reserve(gpus);  // a pass builds its pool anew: 8,000 GPUs without regrowing
  nodes_.reserve(up.size());
  snapshot_of_.reserve(up.size());
  for (const NodeSnapshot* snapshot : up) {
    snapshot_of_.push_back(static_cast<int>(snapshot - cluster.nodes.data()));
    AddNode(*snapshot, display_models);
  }
  for (const std::string& model : display_models) {
    usable_models_ += (usable_models_.empty() ? "" : ", ") + model;
  }
  MarkRunning(cluster);
  BuildIndexes();
}

void GpuPool::AddNode(const NodeSnapshot& snapshot, std::set<std::string>& display_models) {
  std::vector<const Gpu*> usable;
  for (const Gpu& gpu : snapshot.node.gpus) {
    if (TakesWholeJobs(gpu)) {  // shared GPUs are SharePool's
      usable.push_back(&gpu);
    }
  }
  std::stable_sort(
      usable.begin(), usable.end(), [](const Gpu* a, const Gpu* b) { return a->index < b->index; });
  const int position = static_cast<int>(nodes_.size());
  nodes_.push_back(PoolNode{.name = snapshot.node.name,
                            .first_gpu = static_cast<int>(gpus_.size()),
                            .gpu_count = static_cast<int>(usable.size()),
                            .free_total = 0,
                            .open_total = 0,
                            .reserved_free = 0,
                            .models = {},
                            .holders = {},
                            .topology = false,
                            .cpus = std::max(snapshot.node.cpus, 0),
                            .cpus_used = 0,
                            .memory_mib = std::max<std::int64_t>(snapshot.node.memory_mib, 0),
                            .memory_used_mib = 0,
                            .host_spans = {}});
  node_labels_.push_back(snapshot.node.labels);
  // A node's GPUs are mostly of one model: look its id up once per run of the same name.
  const std::string* last_model = nullptr;
  int model = 0;
  for (const Gpu* gpu : usable) {
    if (last_model == nullptr || *last_model != gpu->model) {
      last_model = &gpu->model;
      model = model_ids_.emplace(Lower(gpu->model), static_cast<int>(model_ids_.size()) + 1)
                  .first->second;
      display_models.insert(gpu->model);
    }
    const bool free = !snapshot.allocated.contains(gpu->uuid);
    gpus_.push_back(PoolGpu{.node = position,
                            .index = gpu->index,
                            .model = model,
                            .uuid = gpu->uuid,
                            .free = free,
                            .claimed = false,
                            .available_at = free ? now_ms_ : kNever,
                            .reserved_from = kNever,
                            .first_waiter = -1,
                            .holder = -1,
                            .early_at = free ? now_ms_ : kNever,
                            .predicted = false});
  }
  SetTopology(position, snapshot);
}

// Each GPU's topology and recent load, in the node-local form TopoGpu wants: NVLink peers as a
// mask over the node's usable GPUs (slots). A node wider than 64 usable GPUs keeps its NVLinks
// unknown (no such node exists today; PCIe and NUMA still count). A node with neither topology
// nor load costs one scan of its GPUs and nothing else: the pass then gives GPUs in index order.
void GpuPool::SetTopology(int n, const NodeSnapshot& snapshot) {
  PoolNode& node = nodes_[static_cast<std::size_t>(n)];
  node.topology =
      !snapshot.load.empty() ||
      std::any_of(snapshot.node.gpus.begin(), snapshot.node.gpus.end(), [](const Gpu& gpu) {
        return gpu.numa_node >= 0 || gpu.pcie_switch >= 0 || !gpu.nvlink_peers.empty();
      });
  if (!node.topology) {
    return;
  }
  topo_.resize(gpus_.size());
  // The slot of NVML index i on this node (usable GPUs are sorted by index); -1 none.
  const auto slot_of = [&](int index) {
    for (int slot = 0; slot < node.gpu_count; ++slot) {
      if (gpus_[static_cast<std::size_t>(node.first_gpu) + static_cast<std::size_t>(slot)].index ==
          index) {
        return slot;
      }
    }
    return -1;
  };
  const bool masks_fit = node.gpu_count <= 64;
  for (const Gpu& gpu : snapshot.node.gpus) {
    const int slot = slot_of(gpu.index);
    if (slot < 0) {
      continue;  // failed: not in the pool
    }
    TopoGpu& topo =
        topo_[static_cast<std::size_t>(node.first_gpu) + static_cast<std::size_t>(slot)];
    topo.slot = masks_fit ? slot : 0;
    topo.numa = gpu.numa_node;
    topo.pcie_switch = gpu.pcie_switch;
    for (const int peer : gpu.nvlink_peers) {
      const int peer_slot = slot_of(peer);
      if (masks_fit && peer_slot >= 0) {
        topo.nvlink |= std::uint64_t{1} << peer_slot;
      }
    }
    if (const auto load = snapshot.load.find(gpu.uuid); load != snapshot.load.end()) {
      topo.util_pct = load->second.util_pct;
      topo.memory_used_mib = load->second.memory_used_mib;
    }
  }
}

void GpuPool::MarkRunning(const ClusterSnapshot& cluster) {
  running_gpus_.resize(cluster.running.size());
  running_host_.resize(cluster.running.size());
  for (std::size_t i = 0; i < cluster.running.size(); ++i) {
    MarkJob(cluster.running[i], static_cast<int>(i), nullptr);
  }
}

void GpuPool::MarkJob(const RunningJob& job, int r, std::vector<int>* touched) {
  std::vector<int> positions;
  bool all_here = true;
  const int on = NodePosition(job.allocation.node);
  const PlannedEnd end = PlanEnd(job, now_ms_, use_estimates_);
  if (on >= 0 && (job.allocation.cpus > 0 || job.allocation.memory_mib > 0)) {
    const HostHold hold{
        .node = on, .cpus = job.allocation.cpus, .memory_mib = job.allocation.memory_mib};
    running_host_[static_cast<std::size_t>(r)] = hold;
    AddHost(hold, 1);
    HostSpan span{.from = now_ms_, .cpus = hold.cpus, .memory_mib = hold.memory_mib, .running = r};
    span.EndAt(end);
    AddSpan(on, span);
  }
  for (const GpuUuid& uuid : job.allocation.gpus) {
    const int g = GpuPosition(on, uuid);
    all_here = all_here && g >= 0;  // else on a node that is not up, or a failed GPU
    if (g >= 0) {
      positions.push_back(g);
    }
  }
  for (const int g : positions) {
    PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
    gpu.free = false;  // held, even if the caller left it out of `allocated`
    gpu.holder = r;
    SetEnd(gpu, end);
    std::vector<int>& holders = nodes_[static_cast<std::size_t>(gpu.node)].holders;
    if (std::find(holders.begin(), holders.end(), r) == holders.end()) {
      holders.push_back(r);
      if (touched != nullptr) {
        touched->push_back(gpu.node);
      }
    }
  }
  if (all_here) {
    // Only a job wholly here can be preempted for room.
    running_gpus_[static_cast<std::size_t>(r)] = std::move(positions);
  }
}

void GpuPool::RunningAdded(const ClusterSnapshot& cluster) {
  start_index_.clear();  // see MarkNodeAgain
  const int r = static_cast<int>(cluster.running.size()) - 1;
  GF_CHECK(r == static_cast<int>(running_gpus_.size()));
  running_gpus_.emplace_back();
  running_host_.emplace_back();
  std::vector<int> touched;
  MarkJob(cluster.running.back(), r, &touched);
  for (const int n : touched) {
    Recount(n);
  }
}

void GpuPool::RunningRemoved(const ClusterSnapshot& cluster, int r) {
  GF_CHECK(r >= 0 && r < static_cast<int>(running_gpus_.size()));
  running_gpus_.erase(running_gpus_.begin() + r);
  AddHost(running_host_[static_cast<std::size_t>(r)], -1);
  running_host_.erase(running_host_.begin() + r);
  // Every later job moves down by one, as in `running`.
  for (PoolGpu& gpu : gpus_) {
    gpu.holder = gpu.holder == r ? -1 : gpu.holder - (gpu.holder > r ? 1 : 0);
  }
  std::vector<int> touched;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    std::vector<HostSpan>& spans = nodes_[n].host_spans;
    std::erase_if(spans, [r](const HostSpan& span) { return span.running == r; });
    for (HostSpan& span : spans) {
      span.running -= span.running > r ? 1 : 0;
    }
    std::vector<int>& holders = nodes_[n].holders;
    const auto it = std::find(holders.begin(), holders.end(), r);
    if (it != holders.end()) {
      holders.erase(it);
      touched.push_back(static_cast<int>(n));
    }
    for (int& holder : holders) {
      holder -= holder > r ? 1 : 0;
    }
  }
  for (const int n : touched) {
    MarkNodeAgain(cluster, n);
  }
}

void GpuPool::RunningChanged(const ClusterSnapshot& cluster, int r) {
  const int on = running_host_[static_cast<std::size_t>(r)].node;
  if (on >= 0) {
    for (HostSpan& span : nodes_[static_cast<std::size_t>(on)].host_spans) {
      if (span.running == r) {
        span.EndAt(PlanEnd(cluster.running[static_cast<std::size_t>(r)], now_ms_, use_estimates_));
        ++node_versions_[static_cast<std::size_t>(on)];
        start_index_.clear();
        ++generation_;
      }
    }
  }
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const std::vector<int>& holders = nodes_[n].holders;
    if (std::find(holders.begin(), holders.end(), r) != holders.end()) {
      MarkNodeAgain(cluster, static_cast<int>(n));
    }
  }
}

void GpuPool::AdvanceTo(const ClusterSnapshot& cluster, Time now) {
  const std::int64_t now_ms = ToUnixMillis(now);
  GF_CHECK(now_ms >= now_ms_);
  now_ms_ = now_ms;
  start_index_.clear();  // its starts are bounded below by the old now
  for (PoolGpu& gpu : gpus_) {
    GF_CHECK(!gpu.claimed && gpu.reserved_from == kNever);  // no pass has used this pool
    if (gpu.available_at < now_ms) {
      // Free (available from now), stopping (back by now), or past its holder's limit: the
      // constructor's max(now, end) at the new now. Free counts do not change.
      gpu.available_at = now_ms;
      ++node_versions_[static_cast<std::size_t>(gpu.node)];
    }
    gpu.early_at = std::max(gpu.early_at, now_ms);  // a median end passed: it may end any time
    if (use_estimates_ && gpu.holder >= 0) {
      // A holder that outlived its estimate is planned later (PlannedEndMs doubles it).
      const PlannedEnd end =
          PlanEnd(cluster.running[static_cast<std::size_t>(gpu.holder)], now_ms, true);
      if (end.at != gpu.available_at) {
        ++node_versions_[static_cast<std::size_t>(gpu.node)];
      }
      SetEnd(gpu, end);
    }
  }
  // Host holds end as the constructor plans them at the new now.
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    for (HostSpan& span : nodes_[n].host_spans) {
      GF_CHECK(span.running >= 0);  // no pass has used this pool
      const PlannedEnd end =
          PlanEnd(cluster.running[static_cast<std::size_t>(span.running)], now_ms, use_estimates_);
      if (end.at != span.until || end.early != span.early) {
        span.EndAt(end);
        ++node_versions_[n];
      }
    }
  }
  ++generation_;
}

// Node `n`'s GPUs as the constructor marks them: free unless allocated, then held by its
// running jobs in their order (the last one listing a GPU holds it, as in MarkRunning).
void GpuPool::MarkNodeAgain(const ClusterSnapshot& cluster, int n) {
  // The start index takes a changed node's old start for a lower bound, which holds within a
  // pass; a job that ends or stops moves a start earlier.
  start_index_.clear();
  const PoolNode& node = nodes_[static_cast<std::size_t>(n)];
  const NodeSnapshot& snapshot =
      cluster.nodes[static_cast<std::size_t>(snapshot_of_[static_cast<std::size_t>(n)])];
  for (int g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
    GF_CHECK(!gpu.claimed && gpu.reserved_from == kNever);  // no pass has used this pool
    gpu.free = !snapshot.allocated.contains(gpu.uuid);
    SetEnd(gpu, gpu.free ? PlannedEnd{.at = now_ms_, .early = now_ms_} : PlannedEnd{});
    gpu.holder = -1;
  }
  for (const int r : node.holders) {
    const RunningJob& job = cluster.running[static_cast<std::size_t>(r)];
    const int on = NodePosition(job.allocation.node);
    for (const GpuUuid& uuid : job.allocation.gpus) {
      const int g = GpuPosition(on, uuid);
      if (g >= 0 && gpus_[static_cast<std::size_t>(g)].node == n) {
        PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
        gpu.free = false;
        gpu.holder = r;
        SetEnd(gpu, PlanEnd(job, now_ms_, use_estimates_));
      }
    }
  }
  Recount(n);
}

void GpuPool::BuildIndexes() {
  int widest = 0;
  for (const PoolNode& node : nodes_) {
    widest = std::max(widest, node.gpu_count);
  }
  buckets_.assign(model_ids_.size() + 1,
                  std::vector<NodeSet>(static_cast<std::size_t>(widest) + 1));
  claimed_upto_.assign(model_ids_.size() + 1, 0);
  node_versions_.assign(nodes_.size(), 0);
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    Recount(static_cast<int>(n));
  }
  // Usable GPUs never change within a pass: the largest node per model is known now.
  largest_usable_.assign(model_ids_.size() + 1, 0);
  largest_usable_[kAnyModel] = widest;
  for (const PoolGpu& gpu : gpus_) {
    const PoolNode& node = nodes_[static_cast<std::size_t>(gpu.node)];
    int& largest = largest_usable_[static_cast<std::size_t>(gpu.model)];
    largest = std::max(largest, Usable(node, gpu.model));
  }
}

int GpuPool::NodePosition(const NodeId& name) const {
  const auto it = std::lower_bound(
      nodes_.begin(), nodes_.end(), name, [](const PoolNode& node, const NodeId& wanted) {
        return node.name < wanted;
      });
  return it != nodes_.end() && it->name == name ? static_cast<int>(it - nodes_.begin()) : -1;
}

// A UUID is looked for on the node the job says it runs on (8 GPUs), and only when it is not
// there in the whole pool: no index of 8,000 UUIDs to build and free on every pass.
int GpuPool::GpuPosition(int n, const GpuUuid& uuid) const {
  if (n >= 0) {
    const PoolNode& node = nodes_[static_cast<std::size_t>(n)];
    for (int g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
      if (gpus_[static_cast<std::size_t>(g)].uuid == uuid) {
        return g;
      }
    }
  }
  return GpuPosition(uuid);
}

int GpuPool::GpuPosition(const GpuUuid& uuid) const {
  const auto it = std::find_if(
      gpus_.begin(), gpus_.end(), [&](const PoolGpu& gpu) { return gpu.uuid == uuid; });
  return it == gpus_.end() ? -1 : static_cast<int>(it - gpus_.begin());
}

Shape GpuPool::ShapeOf(const JobRequest& request) const {
  GF_CHECK(request.gpus >= 0);
  int constraint = kNoConstraint;
  if (!request.node_labels.empty()) {
    const auto [it, added] = constraint_ids_.try_emplace(
        request.node_labels, static_cast<int>(constraint_nodes_.size()));
    if (added) {
      std::vector<char>& allowed = constraint_nodes_.emplace_back(nodes_.size(), 0);
      for (std::size_t n = 0; n < nodes_.size(); ++n) {
        allowed[n] = HasLabels(node_labels_[n], request.node_labels) ? 1 : 0;
      }
    }
    constraint = it->second;
  }
  if (!request.gpu_type.has_value() || request.gpu_type->empty() || request.gpus == 0) {
    return Shape{.model = kAnyModel,
                 .gpus = request.gpus,
                 .constraint = constraint,
                 .cpus = request.cpus,
                 .memory_mib = request.memory_mib};
  }
  // Most requests spell a type the same way: look the spelling up before lower-casing it.
  auto spelled = model_by_spelling_.find(*request.gpu_type);
  if (spelled == model_by_spelling_.end()) {
    const auto it = model_ids_.find(Lower(*request.gpu_type));
    spelled = model_by_spelling_
                  .emplace(*request.gpu_type, it == model_ids_.end() ? kNoSuchModel : it->second)
                  .first;
  }
  return Shape{.model = spelled->second,
               .gpus = request.gpus,
               .constraint = constraint,
               .cpus = request.cpus,
               .memory_mib = request.memory_mib};
}

void GpuPool::Unindex(int n) {
  const PoolNode& node = nodes_[static_cast<std::size_t>(n)];
  buckets_[kAnyModel][static_cast<std::size_t>(node.free_total)].Erase(n);
  for (const PoolModelCount& count : node.models) {
    buckets_[static_cast<std::size_t>(count.model)][static_cast<std::size_t>(count.open)].Erase(n);
  }
  if (node.reserved_free > 0) {
    reserved_nodes_.Erase(n);
  }
}

void GpuPool::Index(int n) {
  const PoolNode& node = nodes_[static_cast<std::size_t>(n)];
  buckets_[kAnyModel][static_cast<std::size_t>(node.free_total)].Insert(n);
  for (const PoolModelCount& count : node.models) {
    buckets_[static_cast<std::size_t>(count.model)][static_cast<std::size_t>(count.open)].Insert(n);
  }
  if (node.reserved_free > 0) {
    reserved_nodes_.Insert(n);
  }
}

void GpuPool::Recount(int n) {
  Unindex(n);
  PoolNode& node = nodes_[static_cast<std::size_t>(n)];
  node.free_total = 0;
  node.open_total = 0;
  node.reserved_free = 0;
  node.models.clear();
  for (int g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    const PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
    auto count = std::find_if(node.models.begin(), node.models.end(), [&](const auto& c) {
      return c.model == gpu.model;
    });
    if (count == node.models.end()) {
      count = node.models.insert(node.models.end(), PoolModelCount{.model = gpu.model});
    }
    const bool open = gpu.free && !gpu.claimed && gpu.reserved_from == kNever;
    ++count->usable;
    count->free += gpu.free ? 1 : 0;
    count->open += open ? 1 : 0;
    node.free_total += gpu.free ? 1 : 0;
    node.open_total += open ? 1 : 0;
    node.reserved_free += gpu.free && !gpu.claimed && gpu.reserved_from != kNever ? 1 : 0;
  }
  Index(n);
  ++node_versions_[static_cast<std::size_t>(n)];
  ++generation_;
}

int GpuPool::Usable(const PoolNode& node, int model) {
  if (model == kAnyModel) {
    return node.gpu_count;
  }
  for (const PoolModelCount& count : node.models) {
    if (count.model == model) {
      return count.usable;
    }
  }
  return 0;
}

int GpuPool::Free(const PoolNode& node, int model) const {
  if (model == kAnyModel) {
    return node.free_total;
  }
  for (const PoolModelCount& count : node.models) {
    if (count.model == model) {
      return count.free;
    }
  }
  return 0;
}

bool GpuPool::Givable(const PoolGpu& gpu, int model, std::int64_t end_ms) const {
  return gpu.free && !gpu.claimed && Matches(gpu, model) &&
         (gpu.reserved_from == kNever || end_ms <= gpu.reserved_from);
}

int GpuPool::CountGivable(const PoolNode& node, int model, std::int64_t end_ms) const {
  int count = 0;
  for (int g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
    count += Givable(gpus_[static_cast<std::size_t>(g)], model, end_ms) ? 1 : 0;
  }
  return count;
}

// Nodes with reserved free GPUs, for a job that ends in time to use some of them: the index
// counts only their open GPUs, so they are weighed here with every GPU the job may take.
void GpuPool::ConsiderReservedNodes(Shape shape,
                                    std::int64_t end_ms,
                                    int& best,
                                    int& best_left) const {
  for (const int n : reserved_nodes_) {
    const PoolNode& node = nodes_[static_cast<std::size_t>(n)];
    if (CountGivable(node, shape.model, end_ms) < shape.gpus) {
      continue;
    }
    const int left = node.free_total - shape.gpus;
    if (left < best_left || (left == best_left && n < best)) {
      best = n;
      best_left = left;
    }
  }
}

std::optional<PoolFit> GpuPool::FindConstrainedFit(Shape shape, std::int64_t end_ms) const {
  int best = -1;
  int best_left = INT_MAX;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const PoolNode& node = nodes_[n];
    const int left = node.free_total - shape.gpus;
    if (!Allows(static_cast<int>(n), shape) || left >= best_left ||
        !HostRoomUntil(node, shape.cpus, shape.memory_mib, now_ms_, end_ms) ||
        CountGivable(node, shape.model, end_ms) < shape.gpus) {
      continue;  // nodes come by name: a tie keeps the earlier one
    }
    best = static_cast<int>(n);
    best_left = left;
  }
  if (best < 0) {
    return std::nullopt;
  }
  return PickGpus(best, shape, end_ms);
}

PoolFit GpuPool::PickGpus(int n, Shape shape, std::int64_t end_ms) const {
  const PoolNode& node = nodes_[static_cast<std::size_t>(n)];
  PoolFit fit{.node = n, .gpus = {}, .cpus = shape.cpus, .memory_mib = shape.memory_mib};
  // Without topology or load the first givable GPUs will do (index order, as v1): stop there.
  const int wanted = node.topology ? node.gpu_count : shape.gpus;
  for (int g = node.first_gpu;
       g < node.first_gpu + node.gpu_count && static_cast<int>(fit.gpus.size()) < wanted;
       ++g) {
    if (Givable(gpus_[static_cast<std::size_t>(g)], shape.model, end_ms)) {
      fit.gpus.push_back(g);
    }
  }
  GF_CHECK(static_cast<int>(fit.gpus.size()) >= shape.gpus);
  if (static_cast<int>(fit.gpus.size()) == shape.gpus) {
    return fit;
  }
  std::vector<TopoGpu> candidates;
  candidates.reserve(fit.gpus.size());
  for (const int g : fit.gpus) {
    candidates.push_back(topo_[static_cast<std::size_t>(g)]);
  }
  std::vector<int> chosen;
  for (const int c : ChooseConnectedGpus(candidates, shape.gpus)) {
    chosen.push_back(fit.gpus[static_cast<std::size_t>(c)]);
  }
  fit.gpus = std::move(chosen);
  return fit;
}

std::optional<PoolFit> GpuPool::FindFit(Shape shape, std::int64_t end_ms) const {
  if (shape.model == kNoSuchModel) {
    return std::nullopt;
  }
  if (shape.constraint != kNoConstraint || AsksHost(shape)) {
    return FindConstrainedFit(shape, end_ms);
  }
  const bool may_use_reserved = end_ms != kNever && !reserved_nodes_.Empty();
  const std::vector<NodeSet>& buckets = buckets_[static_cast<std::size_t>(shape.model)];
  int best = -1;
  int best_left = INT_MAX;
  for (std::size_t c = static_cast<std::size_t>(shape.gpus); c < buckets.size(); ++c) {
    // A node in bucket c has at least c free GPUs, so it is left with at least c - gpus.
    const int least_left = static_cast<int>(c) - shape.gpus;
    if (least_left > best_left) {
      break;
    }
    for (const int n : buckets[c]) {
      const PoolNode& node = nodes_[static_cast<std::size_t>(n)];
      if ((may_use_reserved && reserved_nodes_.Contains(n)) ||
          (shape.model == kAnyModel && node.open_total < shape.gpus)) {
        continue;  // reserved nodes are weighed below; claimed GPUs count as free, not open
      }
      const int left = node.free_total - shape.gpus;
      if (left < best_left || (left == best_left && n < best)) {
        best = n;
        best_left = left;
      }
      if (left == least_left) {
        break;  // later nodes of this bucket come after it by name and leave no fewer
      }
    }
  }
  if (may_use_reserved) {
    ConsiderReservedNodes(shape, end_ms, best, best_left);
  }
  if (best < 0) {
    return std::nullopt;
  }
  return PickGpus(best, shape, end_ms);
}

void GpuPool::Take(const PoolFit& fit, const PlannedEnd& until) {
  for (const int g : fit.gpus) {
    PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
    GF_CHECK(gpu.free && !gpu.claimed);
    gpu.free = false;
    // A reserved GPU lent to a job that ends in time is still expected back when the
    // reservation ends, not when the borrower does.
    if (until.at > gpu.available_at) {
      gpu.predicted = until.predicted;
    }
    gpu.available_at = std::max(gpu.available_at, until.at);
    gpu.early_at = std::max(gpu.early_at, until.early);
  }
  if (!fit.gpus.empty()) {
    Recount(fit.node);
  }
  if (fit.cpus > 0 || fit.memory_mib > 0) {
    TakeHost(fit.node, fit.cpus, fit.memory_mib, until);
  }
}

void GpuPool::TakeHost(int n, int cpus, std::int64_t memory_mib, const PlannedEnd& until) {
  AddHost(HostHold{.node = n, .cpus = cpus, .memory_mib = memory_mib}, 1);
  HostSpan span{.from = now_ms_, .cpus = cpus, .memory_mib = memory_mib};
  span.EndAt(until);
  AddSpan(n, span);
  ++generation_;
}

void GpuPool::AddSpan(int n, const HostSpan& span) {
  PoolNode& node = nodes_[static_cast<std::size_t>(n)];
  if ((node.cpus > 0 && span.cpus > 0) || (node.memory_mib > 0 && span.memory_mib > 0)) {
    node.host_spans.push_back(span);
  }
}

void GpuPool::AddHost(const HostHold& hold, int sign) {
  if (hold.node < 0 || (hold.cpus == 0 && hold.memory_mib == 0)) {
    return;
  }
  PoolNode& node = nodes_[static_cast<std::size_t>(hold.node)];
  node.cpus_used += sign * hold.cpus;
  node.memory_used_mib += sign * hold.memory_mib;
  if (static_cast<std::size_t>(hold.node) < node_versions_.size()) {  // not while building
    ++node_versions_[static_cast<std::size_t>(hold.node)];
  }
  ++generation_;
}

bool GpuPool::Claim(Shape shape, int waiter) {
  if (ClaimCovered(shape)) {
    return false;
  }
  ClaimedUpto(shape) = shape.gpus;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const PoolNode& node = nodes_[n];
    if (!Allows(static_cast<int>(n), shape) || Usable(node, shape.model) < shape.gpus) {
      continue;
    }
    std::vector<int> gpus;
    for (int g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
      if (Matches(gpus_[static_cast<std::size_t>(g)], shape.model)) {
        gpus.push_back(g);
      }
    }
    ClaimGpus(gpus, waiter);
  }
  return true;
}

bool GpuPool::ClaimCovered(Shape shape) const {
  if (shape.model == kNoSuchModel || shape.gpus <= 0) {
    return true;  // nothing to claim
  }
  // A claim of this model on every node with >= upto GPUs already covers these.
  int upto = 0;
  if (shape.constraint == kNoConstraint) {
    upto = claimed_upto_[static_cast<std::size_t>(shape.model)];
  } else if (const auto it = constrained_claimed_upto_.find({shape.model, shape.constraint});
             it != constrained_claimed_upto_.end()) {
    upto = it->second;
  }
  return upto > 0 && upto <= shape.gpus;
}

int& GpuPool::ClaimedUpto(Shape shape) {
  if (shape.constraint == kNoConstraint) {
    return claimed_upto_[static_cast<std::size_t>(shape.model)];
  }
  return constrained_claimed_upto_[{shape.model, shape.constraint}];
}

void GpuPool::ClaimGpus(const std::vector<int>& gpus, int waiter) {
  std::set<int> touched;
  for (const int g : gpus) {
    PoolGpu& gpu = gpus_[static_cast<std::size_t>(g)];
    if (gpu.claimed) {
      continue;
    }
    gpu.claimed = true;
    gpu.first_waiter = gpu.first_waiter < 0 ? waiter : gpu.first_waiter;
    touched.insert(gpu.node);
  }
  for (const int n : touched) {
    Recount(n);
  }
}

Allocation GpuPool::ToAllocation(const PoolFit& fit) const {
  Allocation allocation{.node = nodes_[static_cast<std::size_t>(fit.node)].name, .gpus = {}};
  allocation.cpus = fit.cpus;
  allocation.memory_mib = fit.memory_mib;
  for (const int g : fit.gpus) {
    allocation.gpus.push_back(gpus_[static_cast<std::size_t>(g)].uuid);
  }
  return allocation;
}

}  // namespace gf
