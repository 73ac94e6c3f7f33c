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
constexpr std::string_view kNoProcess = kAllocatedNoProcess;
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
  // As of the minute's last sample; on a shared GPU the holder with the largest share.
  std::optional<GpuAssignment> assignment{};
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
  // The energy counter at the latest reading that had one, and the jobs that held the GPU
  // then: a delta is credited to a job only when both of its readings fell in its tenure.
  std::optional<std::int64_t> energy_mj{};
  std::vector<JobId> energy_jobs{};
  std::vector<ActiveCondition> conditions{};
};

// The idle reaper's view of one job on one GPU (Telemetry::IdleSince).
struct IdleTrack {
  bool sampled = false;               // a sample arrived under this holder
  bool active = false;                // the latest such sample was active
  std::optional<Time> last_active{};  // the time of the latest active one
};

// One job's hold on one GPU, with its tracking; a new holder starts afresh, so a job that
// joins a GPU gets the full no_process_after whatever the GPU did before.
struct Holding {
  GpuAssignment assignment;
  IdleTrack idle{};
  // Since when (sample time) the GPU has shown no process (of this job, when shared).
  std::optional<Time> no_process_since{};
};
using Holdings = std::vector<Holding>;  // one GPU's holders, by job id; empty: free

// IsShared, from the count of holders and the first one's share.
bool SharedHold(std::size_t holders, int first_share_milli) {
  return holders > 1 || (holders == 1 && first_share_milli < kWholeGpuMilli);
}

bool Shared(const Holdings& holdings) {
  return SharedHold(holdings.size(),
                    holdings.empty() ? kWholeGpuMilli : holdings[0].assignment.share_milli);
}

struct JobRecord {
  JobUsage usage{};
  std::int64_t util_sum = 0;  // mean_util_pct = util_sum / util_count
  std::int64_t util_count = 0;
};

std::string Describe(const GpuState& state) {
  return "GPU " + std::to_string(state.gpu.index) + " (" + state.gpu.uuid.value() + ") on node " +
         state.node.value();
}

std::string JobName(JobId job) {
  return "job " + std::to_string(job.value());
}

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

// What a job's processes on one GPU report: memory (only those that report it count), their
// largest, and whether it runs any.
struct OwnProcesses {
  bool any = false;
  bool memory_reported = false;
  std::int64_t memory_mib = 0;
  std::optional<std::uint32_t> largest_pid{};
  std::int64_t largest_mib = 0;
};

OwnProcesses OwnProcessesOf(const GpuSample& sample, JobId job) {
  OwnProcesses own;
  for (const GpuProcessSample& process : sample.processes) {
    if (process.job != job) {
      continue;
    }
    own.any = true;
    if (process.used_memory_mib) {
      own.memory_reported = true;
      own.memory_mib += *process.used_memory_mib;
      if (!own.largest_pid || *process.used_memory_mib > own.largest_mib) {
        own.largest_pid = process.pid;
        own.largest_mib = *process.used_memory_mib;
      }
    }
  }
  return own;
}

// A job's utilisation on a shared GPU: the sum of its processes' SM utilisation when the
// driver gives per-process utilisation (some process of the sample carries it; a process of
// the job without it was not scheduled in the driver's period and counts 0), capped at 100;
// else the GPU's, the best there is (the job is charged for its neighbours' work then).
std::optional<int> OwnUtil(const GpuSample& sample, JobId job) {
  const bool per_process = std::any_of(
      sample.processes.begin(), sample.processes.end(), [](const GpuProcessSample& process) {
        return process.sm_util_pct.has_value();
      });
  if (!per_process) {
    return sample.util_gpu_pct;
  }
  int sum = 0;
  for (const GpuProcessSample& process : sample.processes) {
    if (process.job == job) {
      sum += process.sm_util_pct.value_or(0);
    }
  }
  return std::min(sum, 100);
}

// One holder's figures in one sample: on a whole GPU the GPU's (as before sharing existed),
// on a shared GPU its own processes'.
struct HolderFigures {
  bool runs = false;  // the job runs a process there (whole GPU: any process)
  std::optional<int> util_pct{};
  std::int64_t memory_mib = 0;
};

HolderFigures FiguresOf(const GpuSample& sample, JobId job, bool shared) {
  if (!shared) {
    return {!sample.processes.empty(), sample.util_gpu_pct, JobMemoryOnGpu(sample, job)};
  }
  const OwnProcesses own = OwnProcessesOf(sample, job);
  return {own.any, OwnUtil(sample, job), own.memory_mib};
}

// A job's part of an energy delta: all of it for a whole GPU, share_milli / 1000 of it
// (rounded) on a shared one.
std::int64_t EnergyShare(std::int64_t energy_mj, int share_milli) {
  if (share_milli >= kWholeGpuMilli) {
    return energy_mj;
  }
  return (energy_mj * share_milli + kWholeGpuMilli / 2) / kWholeGpuMilli;
}

// The holder a GPU minute is recorded under (GpuMinute has one job): the largest share, the
// lowest job id among equals.
const GpuAssignment* MainHolder(const Holdings& holdings) {
  const GpuAssignment* main = nullptr;
  for (const Holding& holding : holdings) {
    if (main == nullptr || holding.assignment.share_milli > main->share_milli) {
      main = &holding.assignment;
    }
  }
  return main;
}

const Holding* HoldingOf(const Holdings& holdings, JobId job) {
  const auto it = std::find_if(
      holdings.begin(), holdings.end(), [&](const Holding& h) { return h.assignment.job == job; });
  return it == holdings.end() ? nullptr : &*it;
}

// "job 12, job 13"
std::string JobNames(const Holdings& holdings) {
  std::string text;
  for (const Holding& holding : holdings) {
    text += (text.empty() ? "" : ", ") + JobName(holding.assignment.job);
  }
  return text;
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

void AddToUsage(
    JobRecord& record, const GpuSample& sample, JobId job, bool shared, std::int64_t energy_mj) {
  JobUsage& usage = record.usage;
  usage.energy_mj += energy_mj;
  if (sample.lost) {
    return;  // no reading: not a sample of the job's usage
  }
  ++usage.samples;
  const HolderFigures figures = FiguresOf(sample, job, shared);
  if (figures.util_pct) {
    record.util_sum += *figures.util_pct;
    ++record.util_count;
    usage.mean_util_pct =
        static_cast<double>(record.util_sum) / static_cast<double>(record.util_count);
    usage.peak_util_pct = std::max(usage.peak_util_pct, *figures.util_pct);
  }
  usage.peak_memory_mib = std::max(usage.peak_memory_mib, figures.memory_mib);
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
                           std::string message,
                           std::optional<std::uint32_t> pid = std::nullopt) {
  return ConditionChange{.node = state.node,
                         .index = state.gpu.index,
                         .uuid = state.gpu.uuid,
                         .job = condition.job,
                         .pid = pid,
                         .kind = condition.kind,
                         .active = active,
                         .message = std::move(message)};
}

// Why a condition ended, as the end of its event message.
std::string ClearReason(const ActiveCondition& condition,
                        const GpuSample& sample,
                        const Holdings& holdings) {
  if (sample.lost) {
    return "the GPU was lost";
  }
  const JobId job = condition.job.value_or(JobId{});
  const Holding* holding = HoldingOf(holdings, job);
  if (condition.kind == kNoProcess) {
    return holding != nullptr ? JobName(job) + " now runs a process on it"
                              : JobName(job) + " no longer holds it";
  }
  if (condition.kind == kGpuMemoryOverLimit) {
    if (holding == nullptr) {
      return JobName(job) + " no longer holds it";
    }
    return JobName(job) + " uses " + std::to_string(OwnProcessesOf(sample, job).memory_mib) +
           " MiB, within its limit of " + std::to_string(holding->assignment.memory_limit_mib) +
           " MiB";
  }
  if (holdings.empty()) {
    return "its processes ended";
  }
  return Shared(holdings) ? "every process on it belongs to a job holding it"
                          : "it is now allocated to " + JobName(holdings.front().assignment.job);
}

std::string ClearMessage(const GpuState& state, const ActiveCondition& condition, std::string why) {
  return condition.kind + " cleared on " + Describe(state) + ": " + std::move(why);
}

// Whether `sample` of a GPU shows `assignment`'s job at work (IdleSince): a process, and a
// utilisation at or above the threshold or memory that moved since `before`. On a whole GPU
// those are the GPU's; on a shared one the job's own (FiguresOf).
bool IsActive(const GpuSample& sample,
              const std::optional<GpuSample>& before,
              const GpuAssignment& assignment,
              bool shared) {
  if (sample.lost) {
    return true;  // nothing was read: not evidence of idleness (health handles a lost GPU)
  }
  const HolderFigures now = FiguresOf(sample, assignment.job, shared);
  if (!now.runs) {
    return false;
  }
  if (!now.util_pct || *now.util_pct >= assignment.idle_util_below_pct) {
    return true;
  }
  if (!before || before->lost) {
    return false;
  }
  return shared ? OwnProcessesOf(*before, assignment.job).memory_mib != now.memory_mib
                : before->memory_used_mib != sample.memory_used_mib;
}

// Keeps each holder's no_process_since: set at its first sample without a process (of its
// own, when shared), reset by a process or a lost GPU.
void TrackNoProcess(Holdings& holdings, const GpuSample& sample, bool shared) {
  for (Holding& holding : holdings) {
    if (!sample.lost && !FiguresOf(sample, holding.assignment.job, shared).runs) {
      holding.no_process_since = holding.no_process_since.value_or(sample.time);
    } else {
      holding.no_process_since.reset();
    }
  }
}

// A condition that a sample shows, with the message announcing its beginning.
struct Observed {
  ActiveCondition condition;
  std::string message;
  std::optional<std::uint32_t> pid{};
};

// The conditions `sample` shows, holder by holder (job id order), then unallocated processes.
// A lost GPU shows none: it has a health verdict, and its processes are unknown.
std::vector<Observed> ConditionsOf(const GpuState& state,
                                   const GpuSample& sample,
                                   const Holdings& holdings,
                                   Millis no_process_after) {
  std::vector<Observed> out;
  if (sample.lost) {
    return out;
  }
  const bool shared = Shared(holdings);
  for (const Holding& holding : holdings) {
    const GpuAssignment& a = holding.assignment;
    if (holding.no_process_since && sample.time - *holding.no_process_since >= no_process_after) {
      const auto idle =
          std::chrono::duration_cast<std::chrono::seconds>(sample.time - *holding.no_process_since);
      out.push_back({{std::string(kNoProcess), a.job},
                     Describe(state) + " is allocated to " + JobName(a.job) + " (" + a.user +
                         ") but has run no process" + (shared ? " of that job" : "") + " for " +
                         FormatDuration(idle)});
    }
    const OwnProcesses own = OwnProcessesOf(sample, a.job);
    if (a.memory_limit_mib > 0 && own.memory_reported && own.memory_mib > a.memory_limit_mib) {
      out.push_back({{std::string(kGpuMemoryOverLimit), a.job},
                     JobName(a.job) + " uses " + std::to_string(own.memory_mib) + " MiB on GPU " +
                         std::to_string(state.gpu.index) + " of node " + state.node.value() +
                         ", over its limit of " + std::to_string(a.memory_limit_mib) +
                         " MiB (pid " + std::to_string(own.largest_pid.value_or(0)) + " holds " +
                         std::to_string(own.largest_mib) + " MiB)",
                     own.largest_pid});
    }
  }
  if (holdings.empty() && !sample.processes.empty()) {
    out.push_back(
        {{std::string(kUnallocatedProcess), std::nullopt},
         Describe(state) + " is allocated to no job but runs " + ProcessList(sample.processes)});
  } else if (shared) {
    // A process of no holder on a shared GPU takes memory and time its holders were given.
    std::vector<GpuProcessSample> foreign;
    for (const GpuProcessSample& process : sample.processes) {
      if (!process.job || HoldingOf(holdings, *process.job) == nullptr) {
        foreign.push_back(process);
      }
    }
    if (!foreign.empty()) {
      out.push_back({{std::string(kUnallocatedProcess), std::nullopt},
                     Describe(state) + " is shared by " + JobNames(holdings) + " but runs " +
                         ProcessList(foreign) + " of no job holding it"});
    }
  }
  return out;
}

}  // namespace

bool IsShared(const std::vector<GpuAssignment>& holders) {
  return SharedHold(holders.size(), holders.empty() ? kWholeGpuMilli : holders[0].share_milli);
}

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
  void Assign(const GpuUuid& uuid, GpuAssignment assignment);
  void Unassign(const GpuUuid& uuid, JobId job);
  IngestResult Ingest(const NodeId& node, std::vector<GpuSample> samples);
  TelemetrySnapshot Snapshot() const;
  std::optional<GpuView> Find(const GpuUuid& uuid) const;
  std::optional<JobUsage> Usage(JobId job) const;
  void ForgetJob(JobId job);
  std::optional<Time> IdleSince(JobId job) const;
  std::vector<SeriesPoint> Series(
      const GpuUuid& uuid, Metric metric, Resolution resolution, Time from, Time to) const;
  std::size_t RingBytes() const;

 private:
  using GpuMap = std::map<GpuKey, GpuState>;

  // REQUIRES: mu_ held (any mode). Empty when nobody holds the GPU.
  const Holdings& HoldingsOf(const GpuUuid& uuid) const;
  GpuView View(const GpuState& state) const;
  std::vector<JobLive> LiveJobs() const;
  // REQUIRES: mu_ held exclusively.
  void IngestOne(const NodeId& node, GpuSample sample, IngestResult& out);
  void UpdateHealth(GpuState& state, const GpuSample& sample, std::vector<HealthChange>& out);
  void UpdateConditions(GpuState& state,
                        const GpuSample& sample,
                        Holdings& holdings,
                        std::vector<ConditionChange>& out);
  void RecordSeries(GpuState& state, const GpuSample& sample);
  void Place(const NodeId& node, const Gpu& gpu, GpuMap::node_type taken);
  void Forget(const GpuState& state);

  const TelemetryOptions options_;
  mutable std::shared_mutex mu_;
  GpuMap gpus_{};
  std::unordered_map<GpuUuid, GpuState*> by_uuid_{};  // into gpus_ (map nodes do not move)
  // Kept apart from gpus_: the controller may assign a GPU before its node says hello. A GPU
  // nobody holds has no entry (never an empty list).
  std::unordered_map<GpuUuid, Holdings> holdings_{};
  std::map<JobId, JobRecord> jobs_{};
  // The GPUs each job holds now (IdleSince), in the order it got them.
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
  const auto entry = holdings_.find(sample.uuid);
  Holdings none;
  Holdings& holders = entry == holdings_.end() ? none : entry->second;
  const bool shared = Shared(holders);

  const std::optional<std::int64_t> energy = EnergyStep(state.energy_mj, sample.energy_mj);
  // A holder's part of the delta, when it held the GPU at the previous reading too.
  const auto job_energy = [&](const GpuAssignment& a) -> std::int64_t {
    const bool tenure = std::find(state.energy_jobs.begin(), state.energy_jobs.end(), a.job) !=
                        state.energy_jobs.end();
    return energy && tenure ? EnergyShare(*energy, a.share_milli) : 0;
  };

  RecordSeries(state, sample);
  const std::int64_t minute = FloorDiv(ToUnixMillis(sample.time), kMinuteMs);
  if (state.minute.samples > 0 && minute != state.minute.minute) {
    out.minutes.push_back(ToGpuMinute(state));
    state.minute = MinuteRollup{};
  }
  state.minute.minute = minute;
  AddToMinute(state.minute, sample, energy.value_or(0), MainHolder(holders));
  for (const Holding& holding : holders) {
    const GpuAssignment& a = holding.assignment;
    AddToUsage(jobs_[a.job], sample, a.job, shared, job_energy(a));
  }
  if (sample.energy_mj) {
    state.energy_mj = sample.energy_mj;
    state.energy_jobs.clear();
    for (const Holding& holding : holders) {
      state.energy_jobs.push_back(holding.assignment.job);
    }
  }
  UpdateHealth(state, sample, out.health);
  UpdateConditions(state, sample, holders, out.conditions);
  for (Holding& holding : holders) {
    // The idle reaper's view, before `latest` moves on (a memory change is judged against it).
    holding.idle.sampled = true;
    holding.idle.active = IsActive(sample, state.latest, holding.assignment, shared);
    if (holding.idle.active) {
      holding.idle.last_active = sample.time;
    }
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
                                       Holdings& holdings,
                                       std::vector<ConditionChange>& out) {
  TrackNoProcess(holdings, sample, Shared(holdings));
  std::vector<Observed> now = ConditionsOf(state, sample, holdings, options_.no_process_after);
  const auto seen = [&](const ActiveCondition& condition) {
    return std::any_of(
        now.begin(), now.end(), [&](const Observed& o) { return o.condition == condition; });
  };
  for (const ActiveCondition& condition : state.conditions) {
    if (!seen(condition)) {
      out.push_back(
          MakeChange(state,
                     condition,
                     false,
                     ClearMessage(state, condition, ClearReason(condition, sample, holdings))));
    }
  }
  std::vector<ActiveCondition> before = std::exchange(state.conditions, {});
  for (Observed& o : now) {
    if (std::find(before.begin(), before.end(), o.condition) == before.end()) {
      out.push_back(MakeChange(state, o.condition, true, std::move(o.message), o.pid));
    }
    state.conditions.push_back(std::move(o.condition));
  }
}

const Holdings& Telemetry::Impl::HoldingsOf(const GpuUuid& uuid) const {
  static const Holdings kFree;
  const auto entry = holdings_.find(uuid);
  return entry == holdings_.end() ? kFree : entry->second;
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
