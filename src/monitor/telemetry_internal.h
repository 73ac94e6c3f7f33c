// Internal to gf_monitor: Telemetry::Impl and the per-GPU state it keeps, shared by
// telemetry.cpp (inventory, assignments, the views) and telemetry_samples.cpp (what a sample
// means: ingesting it, per-job usage, minute rollups, conditions). Include it from those two
// alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/check.h"
#include "monitor/series_ring.h"
#include "monitor/telemetry.h"

namespace gf {

// A GPU in gpus_: ordered by node, then NVML index, the order every view shows.
using GpuKey = std::pair<NodeId, int>;

// One GPU's wall-clock minute being rolled up (see GpuMinute).
struct MinuteRollup {
  std::int64_t minute = 0;  // minutes since the epoch
  int samples = 0;
  int allocated_ms = 0;  // see GpuMinute::allocated_ms
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

struct JobRecord {
  JobUsage usage{};
  std::int64_t util_sum = 0;  // mean_util_pct = util_sum / util_count
  std::int64_t util_count = 0;
};

// The helpers of telemetry_samples.cpp that telemetry.cpp uses too.
bool Shared(const Holdings& holdings);
// One holder's figures in one sample: on a whole GPU the GPU's (as before sharing existed),
// on a shared GPU its own processes'.
struct HolderFigures {
  bool runs = false;  // the job runs a process there (whole GPU: any process)
  std::optional<int> util_pct{};
  std::int64_t memory_mib = 0;
};
HolderFigures FiguresOf(const GpuSample& sample, JobId job, bool shared);
const Holding* HoldingOf(const Holdings& holdings, JobId job);
ConditionChange MakeChange(const GpuState& state,
                           const ActiveCondition& condition,
                           bool active,
                           std::string message,
                           std::optional<std::uint32_t> pid = std::nullopt);
std::string ClearMessage(const GpuState& state, const ActiveCondition& condition, std::string why);

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

}  // namespace gf
