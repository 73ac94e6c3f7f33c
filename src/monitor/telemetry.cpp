#include "monitor/telemetry.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/check.h"
#include "core/duration.h"
#include "monitor/series_ring.h"

namespace gf {
namespace {

constexpr std::int64_t kMinuteMs = 60'000;
constexpr std::string_view kNoProcess = "allocated_no_process";
constexpr std::string_view kUnallocatedProcess = "unallocated_process";
constexpr std::size_t kMaxProcessesNamed = 8;  // an event message lists at most this many

// A GPU in gpus_: ordered by node, then NVML index, the order every view shows.
using GpuKey = std::pair<NodeId, int>;

// One GPU's wall-clock minute being rolled up (see GpuMinute).
struct MinuteRollup {
  std::int64_t minute = 0;  // minutes since the epoch
  int samples = 0;
  std::int64_t util_sum = 0;
  int util_count = 0;
  int util_max = 0;
  std::int64_t memory_max_mib = 0;
  std::int64_t power_sum_mw = 0;
  int power_count = 0;
  std::int64_t energy_mj = 0;
  GpuHealth health = GpuHealth::kOk;
  std::optional<GpuAssignment> assignment{};  // as of the minute's last sample
};

struct ActiveCondition {
  std::string kind{};
  std::optional<JobId> job{};
  bool operator==(const ActiveCondition&) const = default;
};

struct GpuState {
  explicit GpuState(const TelemetryOptions& options)
      : fine(options.fine_slots, options.fine_step),
        coarse(options.coarse_slots, options.coarse_step) {}

  NodeId node{};
  Gpu gpu{};
  std::optional<GpuSample> latest{};
  std::optional<XidEvent> last_xid{};  // sticky: see GpuView::last_xid
  SeriesRing fine;
  SeriesRing coarse;
  SlotMean coarse_mean{};
  MinuteRollup minute{};
  // The energy counter at the latest reading that had one, and the job that held the GPU
  // then: a delta is credited to a job only when both of its readings fell in its tenure.
  std::optional<std::int64_t> energy_mj{};
  std::optional<JobId> energy_job{};
  // Since when (sample time) the GPU has been held and shown no process; reset when the
  // holder changes, so a new job gets the full no_process_after.
  std::optional<Time> idle_since{};
  std::vector<ActiveCondition> conditions{};
};

// The idle reaper's view of one held GPU (Telemetry::IdleSince), reset when its holder changes.
struct IdleTrack {
  bool sampled = false;             // a sample arrived under the current holder
  bool active = false;              // the latest such sample was active
  std::optional<Time> last_active{};  // the time of the latest active one
};

struct JobRecord {
  JobUsage usage{};
  std::int64_t util_sum = 0;  // mean_util_pct = util_sum / util_count
  std::int64_t util_count = 0;
};


std::string Describe(const GpuState& state) {
  return "GPU " + std::to_string(state.gpu.index) + " (" + state.gpu.uuid.value() + ") on node " +
         state.node.value();
}

std::string JobName(JobId job) { return "job " + std::to_string(job.value()); }

// Energy used between two readings of a GPU's counter, in mJ; nullopt without both. A counter
// that went backwards was reset (driver reload) between them: the energy since the reset, the
// new value, is counted. That is a lower bound, and never negative.
std::optional<std::int64_t> EnergyStep(std::optional<std::int64_t> before,
                                       std::optional<std::int64_t> now) {
  if (!before || !now) {
    return std::nullopt;
  }
  return std::max<std::int64_t>(*now >= *before ? *now - *before : *now, 0);
}

// The memory a job uses on one GPU: the sum its processes there report, or the GPU's used
// memory when none of them reports any (drivers that cannot tell per process, simulated GPUs).
std::int64_t JobMemoryOnGpu(const GpuSample& sample, JobId job) {
  std::int64_t sum = 0;
  bool reported = false;
  for (const GpuProcessSample& process : sample.processes) {
    if (process.job == job && process.used_memory_mib) {
      sum += *process.used_memory_mib;
      reported = true;
    }
  }
  return reported ? sum : sample.memory_used_mib;
}

// "pid 4242 (bob), pid 4250 (uid1001) and 3 more"
std::string ProcessList(const std::vector<GpuProcessSample>& processes) {
  std::string text;
  const std::size_t named = std::min(processes.size(), kMaxProcessesNamed);
  for (std::size_t i = 0; i < named; ++i) {
    const GpuProcessSample& process = processes[i];
    text += (i == 0 ? "pid " : ", pid ") + std::to_string(process.pid) + " (" +
            (process.user.empty() ? "unknown user" : process.user) + ")";
  }
  if (processes.size() > named) {
    text += " and " + std::to_string(processes.size() - named) + " more";
  }
  return text;
}

void AddToUsage(JobRecord& record, const GpuSample& sample, JobId job, std::int64_t energy_mj) {
  JobUsage& usage = record.usage;
  usage.energy_mj += energy_mj;
  if (sample.lost) {
    return;  // no reading: not a sample of the job's usage
  }
  ++usage.samples;
  if (sample.util_gpu_pct) {
    record.util_sum += *sample.util_gpu_pct;
    ++record.util_count;
    usage.mean_util_pct =
        static_cast<double>(record.util_sum) / static_cast<double>(record.util_count);
    usage.peak_util_pct = std::max(usage.peak_util_pct, *sample.util_gpu_pct);
  }
  usage.peak_memory_mib = std::max(usage.peak_memory_mib, JobMemoryOnGpu(sample, job));
}

void AddToMinute(MinuteRollup& minute,
                 const GpuSample& sample,
                 std::int64_t energy_mj,
                 const GpuAssignment* assignment) {
  ++minute.samples;
  minute.energy_mj += energy_mj;
  if (Severity(sample.health) > Severity(minute.health)) {
    minute.health = sample.health;
  }
  minute.assignment = assignment ? std::optional<GpuAssignment>(*assignment) : std::nullopt;
  if (sample.lost) {
    return;
  }
  if (sample.util_gpu_pct) {
    minute.util_sum += *sample.util_gpu_pct;
    ++minute.util_count;
    minute.util_max = std::max(minute.util_max, *sample.util_gpu_pct);
  }
  minute.memory_max_mib = std::max(minute.memory_max_mib, sample.memory_used_mib);
  if (sample.power_mw) {
    minute.power_sum_mw += *sample.power_mw;
    ++minute.power_count;
  }
}

GpuMinute ToGpuMinute(const GpuState& state) {
  const MinuteRollup& m = state.minute;
  GpuMinute out;
  out.node = state.node;
  out.uuid = state.gpu.uuid;
  out.minute = FromUnixMillis(m.minute * kMinuteMs);
  if (m.assignment) {
    out.job = m.assignment->job;
    out.user = m.assignment->user;
    out.team = m.assignment->team;
  }
  out.samples = m.samples;
  if (m.util_count > 0) {
    out.util_mean_pct = static_cast<double>(m.util_sum) / m.util_count;
  }
  out.util_max_pct = m.util_max;
  out.memory_used_max_mib = m.memory_max_mib;
  if (m.power_count > 0) {
    out.power_mean_w = static_cast<double>(m.power_sum_mw) / m.power_count / 1000.0;
  }
  out.energy_mj = m.energy_mj;
  out.health = m.health;
  return out;
}

ConditionChange MakeChange(const GpuState& state,
                           const ActiveCondition& condition,
                           bool active,
                           std::string message) {
  return ConditionChange{state.node, state.gpu.index, state.gpu.uuid, condition.job,
                         condition.kind, active, std::move(message)};
}

// Why a condition ended, as the end of its event message.
std::string ClearReason(const ActiveCondition& condition,
                        const GpuSample& sample,
                        const GpuAssignment* assignment) {
  if (sample.lost) {
    return "the GPU was lost";
  }
  if (condition.kind == kNoProcess) {
    const std::string job = JobName(condition.job.value_or(JobId{}));
    return assignment && assignment->job == condition.job ? job + " now runs a process on it"
                                                          : job + " no longer holds it";
  }
  return assignment ? "it is now allocated to " + JobName(assignment->job)
                    : "its processes ended";
}

std::string ClearMessage(const GpuState& state, const ActiveCondition& condition, std::string why) {
  return condition.kind + " cleared on " + Describe(state) + ": " + std::move(why);
}

// Whether `sample` of a GPU held under `assignment` shows the job at work (IdleSince):
// a process, and a utilisation at or above the threshold or memory that moved since `before`.
bool IsActive(const GpuSample& sample,
              const std::optional<GpuSample>& before,
              const GpuAssignment& assignment) {
  if (sample.lost) {
    return true;  // nothing was read: not evidence of idleness (health handles a lost GPU)
  }
  if (sample.processes.empty()) {
    return false;
  }
  if (!sample.util_gpu_pct || *sample.util_gpu_pct >= assignment.idle_util_below_pct) {
    return true;
  }
  return before && !before->lost && before->memory_used_mib != sample.memory_used_mib;
}

// Keeps idle_since: set at the first processless sample of a held GPU, reset otherwise.
void TrackIdle(GpuState& state, const GpuSample& sample, const GpuAssignment* assignment) {
  if (assignment && !sample.lost && sample.processes.empty()) {
    state.idle_since = state.idle_since.value_or(sample.time);
  } else {
    state.idle_since.reset();
  }
}

// The condition `sample` shows, if any, with the message announcing its beginning. A lost
// GPU shows none: it has a health verdict, and its processes are unknown.
std::optional<std::pair<ActiveCondition, std::string>> ConditionOf(
    const GpuState& state,
    const GpuSample& sample,
    const GpuAssignment* assignment,
    Millis no_process_after) {
  if (sample.lost) {
    return std::nullopt;
  }
  if (assignment) {
    if (!state.idle_since || sample.time - *state.idle_since < no_process_after) {
      return std::nullopt;
    }
    const auto idle = std::chrono::duration_cast<std::chrono::seconds>(sample.time - *state.idle_since);
    return std::pair{
        ActiveCondition{std::string(kNoProcess), assignment->job},
        Describe(state) + " is allocated to " + JobName(assignment->job) + " (" +
            assignment->user + ") but has run no process for " + FormatDuration(idle)};
  }
  if (sample.processes.empty()) {
    return std::nullopt;
  }
  return std::pair{ActiveCondition{std::string(kUnallocatedProcess), std::nullopt},
                   Describe(state) + " is allocated to no job but runs " +
                       ProcessList(sample.processes)};
}

}  // namespace

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

// Lock rule: mu_ guards every member below it. Public methods take it (shared to read,
// exclusive to write); private helpers REQUIRE it held as their comment says.
class Telemetry::Impl {
 public:
  explicit Impl(TelemetryOptions options) : options_(options) {
    GF_CHECK(ValidateTelemetryOptions(options_).ok());
  }

  void SetInventory(const Node& node);
  void SetAssignment(const GpuUuid& uuid, std::optional<GpuAssignment> assignment);
  IngestResult Ingest(const NodeId& node, std::vector<GpuSample> samples);
  TelemetrySnapshot Snapshot() const;
  std::optional<GpuView> Find(const GpuUuid& uuid) const;
  std::optional<JobUsage> Usage(JobId job) const;
  void ForgetJob(JobId job);
  std::optional<Time> IdleSince(JobId job) const;
  std::vector<SeriesPoint> Series(const GpuUuid& uuid,
                                  Metric metric,
                                  Resolution resolution,
                                  Time from,
                                  Time to) const;
  std::size_t RingBytes() const;

 private:
  using GpuMap = std::map<GpuKey, GpuState>;

  // REQUIRES: mu_ held (any mode).
  const GpuAssignment* AssignmentOf(const GpuUuid& uuid) const;
  GpuView View(const GpuState& state) const;
  std::vector<JobLive> LiveJobs() const;
  // REQUIRES: mu_ held exclusively.
  void IngestOne(const NodeId& node, GpuSample sample, IngestResult& out);
  void UpdateHealth(GpuState& state, const GpuSample& sample, std::vector<HealthChange>& out);
  void UpdateConditions(GpuState& state,
                        const GpuSample& sample,
                        const GpuAssignment* assignment,
                        std::vector<ConditionChange>& out);
  void RecordSeries(GpuState& state, const GpuSample& sample);
  // The idle reaper's bookkeeping (IdleSince): a GPU changed holder; a held GPU's sample.
  void UpdateHeld(const GpuUuid& uuid, std::optional<JobId> old_job, std::optional<JobId> new_job);
  void TrackActivity(const GpuState& state,
                     const GpuSample& sample,
                     const GpuAssignment& assignment);
  void Place(const NodeId& node, const Gpu& gpu, GpuMap::node_type taken);
  void Forget(const GpuState& state);

  const TelemetryOptions options_;
  mutable std::shared_mutex mu_;
  GpuMap gpus_{};
  std::unordered_map<GpuUuid, GpuState*> by_uuid_{};  // into gpus_ (map nodes do not move)
  // Kept apart from gpus_: the controller may assign a GPU before its node says hello.
  std::unordered_map<GpuUuid, GpuAssignment> assignments_{};
  std::map<JobId, JobRecord> jobs_{};
  // The idle reaper's tracking of each assigned GPU, and the GPUs each job holds now.
  std::unordered_map<GpuUuid, IdleTrack> idle_{};
  std::map<JobId, std::vector<GpuUuid>> held_{};
  std::vector<ConditionChange> pending_{};  // clears of forgotten GPUs, for the next Ingest
};

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
        state, condition, false,
        ClearMessage(state, condition, "it left the inventory of node " + state.node.value())));
  }
}

void Telemetry::Impl::SetAssignment(const GpuUuid& uuid, std::optional<GpuAssignment> assignment) {
  std::unique_lock lock(mu_);
  const GpuAssignment* before = AssignmentOf(uuid);
  const std::optional<JobId> old_job = before ? std::optional(before->job) : std::nullopt;
  const std::optional<JobId> new_job = assignment ? std::optional(assignment->job) : std::nullopt;
  if (assignment) {
    jobs_.try_emplace(assignment->job);
    assignments_[uuid] = std::move(*assignment);
  } else {
    assignments_.erase(uuid);
  }
  if (old_job != new_job) {
    UpdateHeld(uuid, old_job, new_job);
  }
  const auto state = by_uuid_.find(uuid);
  if (old_job != new_job && state != by_uuid_.end()) {
    state->second->idle_since.reset();
  }
}

void Telemetry::Impl::UpdateHeld(const GpuUuid& uuid,
                                 std::optional<JobId> old_job,
                                 std::optional<JobId> new_job) {
  idle_.erase(uuid);
  if (old_job) {
    if (auto held = held_.find(*old_job); held != held_.end()) {
      std::erase(held->second, uuid);
      if (held->second.empty()) {
        held_.erase(held);
      }
    }
  }
  if (new_job) {
    idle_[uuid] = IdleTrack{};
    held_[*new_job].push_back(uuid);
  }
}

void Telemetry::Impl::TrackActivity(const GpuState& state,
                                    const GpuSample& sample,
                                    const GpuAssignment& assignment) {
  IdleTrack& track = idle_[sample.uuid];
  track.sampled = true;
  track.active = IsActive(sample, state.latest, assignment);
  if (track.active) {
    track.last_active = sample.time;
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
    const auto track = idle_.find(uuid);
    const GpuAssignment* assignment = AssignmentOf(uuid);
    if (track == idle_.end() || assignment == nullptr || !track->second.sampled ||
        track->second.active) {
      return std::nullopt;
    }
    const Time gpu_since = track->second.last_active.value_or(assignment->since);
    since = since ? std::max(*since, gpu_since) : gpu_since;
  }
  return since;
}

IngestResult Telemetry::Impl::Ingest(const NodeId& node, std::vector<GpuSample> samples) {
  std::unique_lock lock(mu_);
  IngestResult out;
  out.conditions = std::exchange(pending_, {});
  for (GpuSample& sample : samples) {
    IngestOne(node, std::move(sample), out);
  }
  return out;
}

void Telemetry::Impl::IngestOne(const NodeId& node, GpuSample sample, IngestResult& out) {
  const auto known = by_uuid_.find(sample.uuid);
  if (known == by_uuid_.end() || known->second->node != node) {
    return;  // not in this node's inventory
  }
  GpuState& state = *known->second;
  if (state.latest && sample.time <= state.latest->time) {
    return;  // a repeated or late report: counting it again would inflate usage and energy
  }
  const GpuAssignment* assignment = AssignmentOf(sample.uuid);
  const std::optional<JobId> holder =
      assignment ? std::optional(assignment->job) : std::nullopt;

  const std::optional<std::int64_t> energy = EnergyStep(state.energy_mj, sample.energy_mj);
  const bool job_energy = energy && holder && state.energy_job == holder;
  if (sample.energy_mj) {
    state.energy_mj = sample.energy_mj;
    state.energy_job = holder;
  }

  RecordSeries(state, sample);
  const std::int64_t minute = FloorDiv(ToUnixMillis(sample.time), kMinuteMs);
  if (state.minute.samples > 0 && minute != state.minute.minute) {
    out.minutes.push_back(ToGpuMinute(state));
    state.minute = MinuteRollup{};
  }
  state.minute.minute = minute;
  AddToMinute(state.minute, sample, energy.value_or(0), assignment);
  if (assignment) {
    AddToUsage(jobs_[assignment->job], sample, assignment->job, job_energy ? *energy : 0);
  }
  UpdateHealth(state, sample, out.health);
  UpdateConditions(state, sample, assignment, out.conditions);
  if (assignment) {
    TrackActivity(state, sample, *assignment);  // before `latest` moves on: memory change
  }
  if (!sample.xids.empty()) {
    state.last_xid = sample.xids.back();
  }
  state.latest = std::move(sample);
}

void Telemetry::Impl::RecordSeries(GpuState& state, const GpuSample& sample) {
  const Readings readings = ReadingsOf(sample);
  state.fine.Put(state.fine.SlotOf(sample.time), readings);
  const std::int64_t coarse_slot = state.coarse.SlotOf(sample.time);
  state.coarse_mean.Add(coarse_slot, readings);
  state.coarse.Put(coarse_slot, state.coarse_mean.Means());
}

void Telemetry::Impl::UpdateHealth(GpuState& state,
                                   const GpuSample& sample,
                                   std::vector<HealthChange>& out) {
  Gpu& gpu = state.gpu;
  if (sample.health == gpu.health && sample.health_cause == gpu.health_cause) {
    return;
  }
  out.push_back(HealthChange{.node = state.node,
                             .index = gpu.index,
                             .uuid = gpu.uuid,
                             .from = gpu.health,
                             .to = sample.health,
                             .cause = sample.health == GpuHealth::kOk ? "" : sample.health_cause,
                             .lost = sample.lost});
  gpu.health = sample.health;
  gpu.health_cause = sample.health_cause;
}

void Telemetry::Impl::UpdateConditions(GpuState& state,
                                       const GpuSample& sample,
                                       const GpuAssignment* assignment,
                                       std::vector<ConditionChange>& out) {
  TrackIdle(state, sample, assignment);
  auto now = ConditionOf(state, sample, assignment, options_.no_process_after);
  const bool still = now && std::find(state.conditions.begin(), state.conditions.end(),
                                      now->first) != state.conditions.end();
  for (const ActiveCondition& condition : state.conditions) {
    if (!now || condition != now->first) {
      out.push_back(MakeChange(state, condition, false,
                               ClearMessage(state, condition,
                                            ClearReason(condition, sample, assignment))));
    }
  }
  state.conditions.clear();
  if (now) {
    if (!still) {
      out.push_back(MakeChange(state, now->first, true, std::move(now->second)));
    }
    state.conditions.push_back(std::move(now->first));
  }
}

const GpuAssignment* Telemetry::Impl::AssignmentOf(const GpuUuid& uuid) const {
  const auto entry = assignments_.find(uuid);
  return entry == assignments_.end() ? nullptr : &entry->second;
}

GpuView Telemetry::Impl::View(const GpuState& state) const {
  GpuView view{state.node, state.gpu, std::nullopt, state.latest, {}, state.last_xid};
  if (const GpuAssignment* assignment = AssignmentOf(state.gpu.uuid)) {
    view.assignment = *assignment;
  }
  for (const ActiveCondition& condition : state.conditions) {
    view.conditions.push_back(condition.kind);
  }
  return view;
}

std::vector<JobLive> Telemetry::Impl::LiveJobs() const {
  std::map<JobId, JobLive> live;
  std::map<JobId, int> util_readings;
  for (const auto& [uuid, assignment] : assignments_) {
    JobLive& job = live[assignment.job];
    job.job = assignment.job;
    job.user = assignment.user;
    job.team = assignment.team;
    ++job.gpus;
    const auto state = by_uuid_.find(uuid);
    if (state == by_uuid_.end() || !state->second->latest || state->second->latest->lost) {
      continue;
    }
    const GpuSample& sample = *state->second->latest;
    if (sample.util_gpu_pct) {
      job.util_now_pct += *sample.util_gpu_pct;
      ++util_readings[assignment.job];
    }
    job.memory_now_mib += JobMemoryOnGpu(sample, assignment.job);
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

std::vector<SeriesPoint> Telemetry::Impl::Series(const GpuUuid& uuid,
                                                 Metric metric,
                                                 Resolution resolution,
                                                 Time from,
                                                 Time to) const {
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

void Telemetry::SetInventory(const Node& node) { impl_->SetInventory(node); }
void Telemetry::SetAssignment(const GpuUuid& uuid, std::optional<GpuAssignment> assignment) {
  impl_->SetAssignment(uuid, std::move(assignment));
}
IngestResult Telemetry::Ingest(const NodeId& node, std::vector<GpuSample> samples) {
  return impl_->Ingest(node, std::move(samples));
}
TelemetrySnapshot Telemetry::Snapshot() const { return impl_->Snapshot(); }
std::optional<GpuView> Telemetry::Find(const GpuUuid& uuid) const { return impl_->Find(uuid); }
std::optional<JobUsage> Telemetry::Usage(JobId job) const { return impl_->Usage(job); }
void Telemetry::ForgetJob(JobId job) { impl_->ForgetJob(job); }
std::optional<Time> Telemetry::IdleSince(JobId job) const { return impl_->IdleSince(job); }
std::vector<SeriesPoint> Telemetry::Series(const GpuUuid& uuid,
                                           Metric metric,
                                           Resolution resolution,
                                           Time from,
                                           Time to) const {
  return impl_->Series(uuid, metric, resolution, from, to);
}
std::size_t Telemetry::BytesPerGpu(const TelemetryOptions& options) {
  return SeriesRing::BytesFor(options.fine_slots) + SeriesRing::BytesFor(options.coarse_slots);
}
std::size_t Telemetry::RingBytes() const { return impl_->RingBytes(); }

}  // namespace gf
