// Telemetry (telemetry.h): the GPUs of the inventory, who holds them, and the views of what
// the samples showed (snapshot, one GPU, a job's usage, series, idle times). What a sample
// means is telemetry_samples.cpp; Telemetry::Impl is in telemetry_internal.h.
#include "monitor/telemetry.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/check.h"
#include "monitor/telemetry_internal.h"

namespace gf {

Status ValidateTelemetryOptions(const TelemetryOptions& options) {
  const auto slots = [](std::string_view field, int value) -> Status {
    if (value >= 1 && value <= kMaxTelemetrySlots) {
      return OkStatus();
    }
    return InvalidArgument("telemetry " + std::string(field) + " is " + std::to_string(value) +
                           "; use a slot count from 1 to " + std::to_string(kMaxTelemetrySlots));
  };
  const auto positive = [](std::string_view field, Millis value) -> Status {
    if (value.count() > 0) {
      return OkStatus();
    }
    return InvalidArgument("telemetry " + std::string(field) + " is " +
                           std::to_string(value.count()) + " ms; use a positive duration");
  };
  GF_TRY(slots("fine_slots", options.fine_slots));
  GF_TRY(positive("fine_step", options.fine_step));
  GF_TRY(slots("coarse_slots", options.coarse_slots));
  GF_TRY(positive("coarse_step", options.coarse_step));
  GF_TRY(positive("no_process_after", options.no_process_after));
  return OkStatus();
}

void Telemetry::Impl::SetInventory(const Node& node) {
  std::unique_lock lock(mu_);
  // Take out the node's GPUs, and the listed ones known under another node (moved), keeping
  // their state; put back what the list names; forget the rest.
  std::unordered_map<GpuUuid, GpuMap::node_type> taken;
  auto it = gpus_.lower_bound(GpuKey{node.name, std::numeric_limits<int>::min()});
  while (it != gpus_.end() && it->first.first == node.name) {
    auto handle = gpus_.extract(it++);
    const GpuUuid uuid = handle.mapped().gpu.uuid;
    taken.emplace(uuid, std::move(handle));
  }
  for (const Gpu& gpu : node.gpus) {
    const auto known = by_uuid_.find(gpu.uuid);
    if (known != by_uuid_.end() && !taken.contains(gpu.uuid)) {
      const GpuState& state = *known->second;
      taken.emplace(gpu.uuid, gpus_.extract(GpuKey{state.node, state.gpu.index}));
    }
  }
  std::unordered_set<GpuUuid> placed;
  for (const Gpu& gpu : node.gpus) {
    if (!placed.insert(gpu.uuid).second) {
      continue;  // listed twice: the first entry stands
    }
    auto entry = taken.find(gpu.uuid);
    GpuMap::node_type handle;
    if (entry != taken.end()) {
      handle = std::move(entry->second);
      taken.erase(entry);
    }
    Place(node.name, gpu, std::move(handle));
  }
  for (auto& [uuid, handle] : taken) {
    Forget(handle.mapped());
  }
}

// Puts `gpu` at its (node, index), reusing the state in `taken` when it is not empty.
void Telemetry::Impl::Place(const NodeId& node, const Gpu& gpu, GpuMap::node_type taken) {
  GpuState* state = nullptr;
  if (taken) {
    taken.key() = GpuKey{node, gpu.index};
    auto placed = gpus_.insert(std::move(taken));
    if (!placed.inserted) {
      Forget(placed.node.mapped());  // two GPUs claim one index: the first stands
      return;
    }
    state = &placed.position->second;
  } else {
    auto [position, inserted] = gpus_.try_emplace(GpuKey{node, gpu.index}, options_);
    if (!inserted) {
      return;
    }
    state = &position->second;
  }
  // Health follows the samples once there are any; the inventory's until then.
  const GpuHealth health = state->latest ? state->gpu.health : gpu.health;
  const std::string cause = state->latest ? state->gpu.health_cause : gpu.health_cause;
  state->node = node;
  state->gpu = gpu;
  state->gpu.health = health;
  state->gpu.health_cause = cause;
  by_uuid_[gpu.uuid] = state;
}

// Drops a GPU's index entry and queues the end of its conditions. REQUIRES: mu_ exclusive.
void Telemetry::Impl::Forget(const GpuState& state) {
  const auto entry = by_uuid_.find(state.gpu.uuid);
  if (entry != by_uuid_.end() && entry->second == &state) {
    by_uuid_.erase(entry);
  }
  for (const ActiveCondition& condition : state.conditions) {
    pending_.push_back(MakeChange(
        state,
        condition,
        false,
        ClearMessage(state, condition, "it left the inventory of node " + state.node.value())));
  }
}

void Telemetry::Impl::Assign(const GpuUuid& uuid, GpuAssignment assignment) {
  std::unique_lock lock(mu_);
  const JobId job = assignment.job;
  jobs_.try_emplace(job);
  Holdings& holdings = holdings_[uuid];
  const auto at =
      std::lower_bound(holdings.begin(), holdings.end(), job, [](const Holding& holding, JobId id) {
        return holding.assignment.job < id;
      });
  if (at != holdings.end() && at->assignment.job == job) {
    at->assignment = std::move(assignment);  // the same job again: its tracking stays
    return;
  }
  holdings.insert(at, Holding{.assignment = std::move(assignment)});
  held_[job].push_back(uuid);
}

void Telemetry::Impl::Unassign(const GpuUuid& uuid, JobId job) {
  std::unique_lock lock(mu_);
  const auto entry = holdings_.find(uuid);
  if (entry == holdings_.end() || std::erase_if(entry->second, [&](const Holding& h) {
                                    return h.assignment.job == job;
                                  }) == 0) {
    return;
  }
  if (entry->second.empty()) {
    holdings_.erase(entry);
  }
  if (auto held = held_.find(job); held != held_.end()) {
    std::erase(held->second, uuid);
    if (held->second.empty()) {
      held_.erase(held);
    }
  }
}

std::optional<Time> Telemetry::Impl::IdleSince(JobId job) const {
  std::shared_lock lock(mu_);
  const auto held = held_.find(job);
  if (held == held_.end()) {
    return std::nullopt;
  }
  std::optional<Time> since;
  for (const GpuUuid& uuid : held->second) {
    const Holding* holding = HoldingOf(HoldingsOf(uuid), job);
    if (holding == nullptr || !holding->idle.sampled || holding->idle.active) {
      return std::nullopt;
    }
    const Time gpu_since = holding->idle.last_active.value_or(holding->assignment.since);
    since = since ? std::max(*since, gpu_since) : gpu_since;
  }
  return since;
}

const Holdings& Telemetry::Impl::HoldingsOf(const GpuUuid& uuid) const {
  static const Holdings none;
  const auto entry = holdings_.find(uuid);
  return entry == holdings_.end() ? none : entry->second;
}

GpuView Telemetry::Impl::View(const GpuState& state) const {
  GpuView view{state.node, state.gpu, {}, state.latest, {}, state.last_xid};
  for (const Holding& holding : HoldingsOf(state.gpu.uuid)) {
    view.assignments.push_back(holding.assignment);
  }
  for (const ActiveCondition& condition : state.conditions) {
    if (std::find(view.conditions.begin(), view.conditions.end(), condition.kind) ==
        view.conditions.end()) {
      view.conditions.push_back(condition.kind);
    }
  }
  return view;
}

std::vector<JobLive> Telemetry::Impl::LiveJobs() const {
  std::map<JobId, JobLive> live;
  std::map<JobId, int> util_readings;
  for (const auto& [uuid, holdings] : holdings_) {
    const auto state = by_uuid_.find(uuid);
    const bool read =
        state != by_uuid_.end() && state->second->latest && !state->second->latest->lost;
    for (const Holding& holding : holdings) {
      const GpuAssignment& a = holding.assignment;
      JobLive& job = live[a.job];
      job.job = a.job;
      job.user = a.user;
      job.team = a.team;
      ++job.gpus;
      if (!read) {
        continue;
      }
      const HolderFigures figures = FiguresOf(*state->second->latest, a.job, Shared(holdings));
      if (figures.util_pct) {
        job.util_now_pct += *figures.util_pct;
        ++util_readings[a.job];
      }
      job.memory_now_mib += figures.memory_mib;
    }
  }
  std::vector<JobLive> out;
  out.reserve(live.size());
  for (auto& [id, job] : live) {
    if (const int readings = util_readings[id]; readings > 0) {
      job.util_now_pct /= readings;
    }
    if (const auto record = jobs_.find(id); record != jobs_.end()) {
      job.usage = record->second.usage;
    }
    out.push_back(std::move(job));
  }
  return out;
}

TelemetrySnapshot Telemetry::Impl::Snapshot() const {
  std::shared_lock lock(mu_);
  TelemetrySnapshot snapshot;
  snapshot.gpus.reserve(gpus_.size());
  for (const auto& [key, state] : gpus_) {
    snapshot.gpus.push_back(View(state));
  }
  snapshot.jobs = LiveJobs();
  return snapshot;
}

std::optional<GpuView> Telemetry::Impl::Find(const GpuUuid& uuid) const {
  std::shared_lock lock(mu_);
  const auto state = by_uuid_.find(uuid);
  if (state == by_uuid_.end()) {
    return std::nullopt;
  }
  return View(*state->second);
}

std::optional<JobUsage> Telemetry::Impl::Usage(JobId job) const {
  std::shared_lock lock(mu_);
  const auto record = jobs_.find(job);
  if (record == jobs_.end()) {
    return std::nullopt;
  }
  return record->second.usage;
}

void Telemetry::Impl::ForgetJob(JobId job) {
  std::unique_lock lock(mu_);
  jobs_.erase(job);
}

std::vector<SeriesPoint> Telemetry::Impl::Series(
    const GpuUuid& uuid, Metric metric, Resolution resolution, Time from, Time to) const {
  std::shared_lock lock(mu_);
  std::vector<SeriesPoint> points;
  const auto state = by_uuid_.find(uuid);
  if (state != by_uuid_.end()) {
    const GpuState& gpu = *state->second;
    (resolution == Resolution::kFine ? gpu.fine : gpu.coarse)
        .AppendPoints(metric, from, to, points);
  }
  return points;
}

std::size_t Telemetry::Impl::RingBytes() const {
  std::shared_lock lock(mu_);
  std::size_t bytes = 0;
  for (const auto& [key, state] : gpus_) {
    bytes += state.fine.Bytes() + state.coarse.Bytes();
  }
  return bytes;
}

Telemetry::Telemetry(TelemetryOptions options) : impl_(std::make_unique<Impl>(options)) {}
Telemetry::~Telemetry() = default;

void Telemetry::SetInventory(const Node& node) {
  impl_->SetInventory(node);
}
void Telemetry::Assign(const GpuUuid& uuid, GpuAssignment assignment) {
  impl_->Assign(uuid, std::move(assignment));
}
void Telemetry::Unassign(const GpuUuid& uuid, JobId job) {
  impl_->Unassign(uuid, job);
}
IngestResult Telemetry::Ingest(const NodeId& node, std::vector<GpuSample> samples) {
  return impl_->Ingest(node, std::move(samples));
}
TelemetrySnapshot Telemetry::Snapshot() const {
  return impl_->Snapshot();
}
std::optional<GpuView> Telemetry::Find(const GpuUuid& uuid) const {
  return impl_->Find(uuid);
}
std::optional<JobUsage> Telemetry::Usage(JobId job) const {
  return impl_->Usage(job);
}
void Telemetry::ForgetJob(JobId job) {
  impl_->ForgetJob(job);
}
std::optional<Time> Telemetry::IdleSince(JobId job) const {
  return impl_->IdleSince(job);
}
std::vector<SeriesPoint> Telemetry::Series(
    const GpuUuid& uuid, Metric metric, Resolution resolution, Time from, Time to) const {
  return impl_->Series(uuid, metric, resolution, from, to);
}
std::size_t Telemetry::BytesPerGpu(const TelemetryOptions& options) {
  return SeriesRing::BytesFor(options.fine_slots) + SeriesRing::BytesFor(options.coarse_slots);
}
std::size_t Telemetry::RingBytes() const {
  return impl_->RingBytes();
}

}  // namespace gf
