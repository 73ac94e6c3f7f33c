// What a sample means (Telemetry::Impl::Ingest): a GPU's health and conditions, the
// energy, utilisation and memory charged to each job holding it (whole or shared), and the
// minute rollups. Apart from the inventory, assignments and views (telemetry.cpp), which
// only keep and show what this file computes.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "monitor/telemetry_internal.h"

namespace gf {
namespace {

constexpr std::int64_t kMinuteMs = 60'000;
constexpr std::string_view kNoProcess = kAllocatedNoProcess;
constexpr std::size_t kMaxProcessesNamed = 8;  // an event message lists at most this many

// IsShared, from the count of holders and the first one's share.
bool SharedHold(std::size_t holders, int first_share_milli) {
  return holders > 1 || (holders == 1 && first_share_milli < kWholeGpuMilli);
}

}  // namespace

bool Shared(const Holdings& holdings) {
  return SharedHold(holdings.size(),
                    holdings.empty() ? kWholeGpuMilli : holdings[0].assignment.share_milli);
}

namespace {

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

}  // namespace

HolderFigures FiguresOf(const GpuSample& sample, JobId job, bool shared) {
  if (!shared) {
    return {!sample.processes.empty(), sample.util_gpu_pct, JobMemoryOnGpu(sample, job)};
  }
  const OwnProcesses own = OwnProcessesOf(sample, job);
  return {own.any, OwnUtil(sample, job), own.memory_mib};
}

namespace {

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

}  // namespace

const Holding* HoldingOf(const Holdings& holdings, JobId job) {
  const auto it = std::find_if(
      holdings.begin(), holdings.end(), [&](const Holding& h) { return h.assignment.job == job; });
  return it == holdings.end() ? nullptr : &*it;
}

namespace {

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

// The part of [from, to) inside `minute`, added to its held time.
void AddHeld(MinuteRollup& minute, Time from, Time to) {
  const std::int64_t start = minute.minute * kMinuteMs;
  const std::int64_t begin = std::max(ToUnixMillis(from), start);
  const std::int64_t end = std::min(ToUnixMillis(to), start + kMinuteMs);
  if (end > begin) {
    minute.allocated_ms =
        static_cast<int>(std::min<std::int64_t>(minute.allocated_ms + end - begin, kMinuteMs));
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
  out.allocated_ms = m.allocated_ms;
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

}  // namespace

ConditionChange MakeChange(const GpuState& state,
                           const ActiveCondition& condition,
                           bool active,
                           std::string message,
                           std::optional<std::uint32_t> pid) {
  return ConditionChange{.node = state.node,
                         .index = state.gpu.index,
                         .uuid = state.gpu.uuid,
                         .job = condition.job,
                         .pid = pid,
                         .kind = condition.kind,
                         .active = active,
                         .message = std::move(message)};
}

namespace {

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

}  // namespace

std::string ClearMessage(const GpuState& state, const ActiveCondition& condition, std::string why) {
  return condition.kind + " cleared on " + Describe(state) + ": " + std::move(why);
}

namespace {

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

  // The time since the previous sample counts as held when a job holds the GPU now, each part
  // in its own minute (a sample that opens a minute also closes the one before).
  const std::optional<Time> previous =
      state.latest ? std::optional<Time>(state.latest->time) : std::nullopt;
  const bool held = MainHolder(holders) != nullptr;
  RecordSeries(state, sample);
  const std::int64_t minute = FloorDiv(ToUnixMillis(sample.time), kMinuteMs);
  if (state.minute.samples > 0 && minute != state.minute.minute) {
    if (held && previous) {
      AddHeld(state.minute, *previous, sample.time);
    }
    out.minutes.push_back(ToGpuMinute(state));
    state.minute = MinuteRollup{};
  }
  state.minute.minute = minute;
  if (held && previous) {
    AddHeld(state.minute, *previous, sample.time);
  }
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

}  // namespace gf
