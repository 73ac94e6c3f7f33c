// Telemetry: the server's live picture of every GPU, fed by agent sample reports.
//
// Holds, per GPU: inventory and labels, the jobs holding it (assignments, set by the controller:
// one for a whole GPU, several when it is shared, issue #7), the latest attributed sample, active
// conditions, and bounded ring buffers of a few metrics at two resolutions (fine: 1 s for an hour;
// coarse: 1 min for 6 hours, by default: older minutes are the store's GpuMinute rows, which GET
// /gpus/{uuid}/series reads past the ring, so a server of 8,000 GPUs keeps ~10 KiB of history
// per GPU in memory, not a week's ~90 KiB, issue #26). Per job: usage accumulated from the samples
// of its GPUs. Per GPU and wall-clock minute: a rollup that the controller persists (GpuMinute) for
// reports.
//
// Conditions it detects (with a start and an end, so the controller can record events):
//   "allocated_no_process":  a GPU held by a job showed no process (of that job, when the GPU is
//                            shared) for `no_process_after`;
//   "unallocated_process":   a GPU nobody holds runs a process (shared: a process of no holder);
//   "gpu_memory_over_limit": a job with a memory limit uses more than it on its GPU.
// Health is decided by the agent (the sample carries it); Telemetry reports changes.
//
// Thread-safety: every method may be called from any thread (one internal mutex; reads take
// it shared). Memory is bounded: BytesPerGpu() per GPU plus a small per-job record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"
#include "model/gpu_minute.h"
#include "model/gpu_sample.h"
#include "model/job.h"
#include "model/node.h"
#include "model/slice.h"

namespace gf {

struct TelemetryOptions {
  int fine_slots = 3600;   // fine ring length
  Millis fine_step{1000};  // fine ring resolution
  int coarse_slots = 6 * 60;
  Millis coarse_step{60'000};
  Millis no_process_after{60'000};  // "allocated_no_process" after this long without a process
};

// Checks options as configured (flags, config file): slot counts in 1..kMaxTelemetrySlots,
// steps and no_process_after positive. Errors: kInvalidArgument naming the field and the fix.
inline constexpr int kMaxTelemetrySlots = 10'000'000;
Status ValidateTelemetryOptions(const TelemetryOptions& options);

struct GpuAssignment {
  JobId job{};
  std::string user{};
  std::string team{};
  // The idle reaper's threshold for this job (its IdleReaping::util_below_pct): a sample with
  // a process is active when its utilisation is at least this, or its memory changed. 0: only
  // a GPU without processes is idle.
  int idle_util_below_pct = 0;
  // When the job got the GPU (the controller's clock): its idle time counts from here until
  // the GPU is first active under it.
  Time since{};
  // What the job holds of the GPU (Allocation::gpu_milli, gpu_memory_mib): its compute share in
  // milli-GPU, and the memory its processes there may use in MiB (0: no limit).
  int share_milli = kWholeGpuMilli;
  std::int64_t memory_limit_mib = 0;
  // Kubernetes mode: the pod and container that hold the GPU (the job is the pod), for the
  // per-GPU series' `namespace`, `pod` and `container` labels; "" otherwise.
  std::string pod_namespace{};
  std::string pod{};
  std::string container{};
  bool operator==(const GpuAssignment&) const = default;
};

// Whether a GPU with these holders is shared: more than one holder, or one holding less than
// all of it. A shared GPU's figures are split per job (see Telemetry); a whole GPU's are not.
bool IsShared(const std::vector<GpuAssignment>& holders);

// The condition kinds Telemetry reports (ConditionChange::kind, GpuView::conditions).
inline constexpr std::string_view kAllocatedNoProcess = "allocated_no_process";
inline constexpr std::string_view kUnallocatedProcess = "unallocated_process";
inline constexpr std::string_view kGpuMemoryOverLimit = "gpu_memory_over_limit";

// One GPU as every view shows it (gpus, top, /metrics, dashboard).
struct GpuView {
  NodeId node{};
  Gpu gpu{};  // inventory; health and health_cause as of the latest sample
  std::vector<GpuAssignment> assignments{};  // the jobs holding it, by job id; empty: free
  std::optional<GpuSample> sample{};         // latest, attributed
  // Active condition kinds, e.g. "allocated_no_process", each once (on a shared GPU a kind may
  // be active for several jobs: the event log names each).
  std::vector<std::string> conditions{};
  // The latest XID this GPU ever reported, kept after the sample that carried it (as
  // dcgm-exporter's DCGM_FI_DEV_XID_ERRORS does): each XID arrives in one sample only.
  std::optional<XidEvent> last_xid{};
};

// A running job's live usage, for /metrics and `show`.
struct JobLive {
  JobId job{};
  std::string user{};
  std::string team{};
  int gpus = 0;                     // GPUs assigned now (a shared one counts 1)
  JobUsage usage;                   // since it was assigned
  double util_now_pct = 0;          // mean over its GPUs, latest samples (its own on a shared GPU)
  std::int64_t memory_now_mib = 0;  // sum over its GPUs, latest samples (its own processes')
};

struct TelemetrySnapshot {
  std::vector<GpuView> gpus{};  // ordered by (node, index)
  std::vector<JobLive> jobs{};  // ordered by job id
};

enum class Metric { kUtilGpu, kUtilMemory, kMemoryUsedMib, kPowerW, kTemperatureC };
enum class Resolution { kFine, kCoarse };

struct SeriesPoint {
  Time time{};
  double value = 0;
  bool operator==(const SeriesPoint&) const = default;
};

struct HealthChange {
  NodeId node{};
  int index = 0;
  GpuUuid uuid{};
  GpuHealth from = GpuHealth::kOk;
  GpuHealth to = GpuHealth::kOk;
  std::string cause{};  // the new cause ("" when back to ok)
  // The GPU no longer answers (NVML: GPU is lost): its jobs cannot save their work on it.
  bool lost = false;
};

struct ConditionChange {
  NodeId node{};
  int index = 0;
  GpuUuid uuid{};
  std::optional<JobId> job{};  // the job concerned (allocated_no_process, gpu_memory_over_limit)
  // gpu_memory_over_limit, when it begins: the job's process using the most memory on the GPU.
  std::optional<std::uint32_t> pid{};
  std::string kind{};   // "allocated_no_process" | "unallocated_process" | "gpu_memory_over_limit"
  bool active = false;  // true: began; false: cleared
  std::string message{};  // a sentence for the event log
};

// What one Ingest() found that the controller must record. `conditions` also carries the
// clearing of conditions whose GPU left the inventory (SetInventory) since the last Ingest.
struct IngestResult {
  std::vector<HealthChange> health{};
  std::vector<ConditionChange> conditions{};
  std::vector<GpuMinute> minutes{};  // minutes that closed with this ingest
};

class Telemetry {
 public:
  // Requires: ValidateTelemetryOptions(options) is ok (checked; a failure aborts).
  explicit Telemetry(TelemetryOptions options = {});
  ~Telemetry();
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;

  // Replaces the GPU list of `node` (agent hello). GPUs no longer listed are forgotten.
  void SetInventory(const Node& node);
  // A job takes (a share of) a GPU (controller: on start): added to the GPU's holders, or
  // replacing the holder with the same job (its idle tracking kept). Usage accumulates for a
  // job from its assignment on.
  void Assign(const GpuUuid& uuid, GpuAssignment assignment);
  // A job lets go of a GPU (controller: on end); nothing when it does not hold it.
  void Unassign(const GpuUuid& uuid, JobId job);

  // Takes one report of samples from `node`'s agent (unknown GPUs are ignored).
  IngestResult Ingest(const NodeId& node, std::vector<GpuSample> samples);

  TelemetrySnapshot Snapshot() const;
  std::optional<GpuView> Find(const GpuUuid& uuid) const;

  // Usage of a job so far (running or ended and not yet forgotten); nullopt if never seen.
  // On a whole GPU a sample counts the GPU's utilisation and the memory the job's processes
  // report (the GPU's used memory when none reports any). On a shared GPU (IsShared) each job
  // counts its own: memory, the sum its processes report; utilisation, the sum of its
  // processes' SM utilisation when the driver gives per-process utilisation (any process of
  // the sample has it; at most 100), else the GPU's; energy, the GPU's energy delta times
  // share_milli / 1000 (rounded).
  std::optional<JobUsage> Usage(JobId job) const;
  // Drops a finished job's usage record (after the controller stored it).
  void ForgetJob(JobId job);

  // Since when every GPU `job` holds has been idle, for the idle reaper. A sample is active
  // when the GPU runs a process and its utilisation is at or above the assignment's
  // idle_util_below_pct or its used memory changed since the GPU's previous sample (or the
  // utilisation is unknown, or the GPU is lost: no reading is no proof of idleness); a sample
  // without processes is idle. The job's idle time starts at the latest of its GPUs' last
  // active samples (a GPU never active under it: its assignment's `since`). Returns nullopt
  // while the latest sample of any of its GPUs is active, or while one has no sample since
  // the job got it (not judged yet), or when the job holds no GPU. On a shared GPU the test is
  // the job's own: its processes, their utilisation (see Usage) and their memory.
  std::optional<Time> IdleSince(JobId job) const;

  // Points of one metric of one GPU with from <= time < to, oldest first; slots without a
  // sample are skipped. Empty for an unknown GPU.
  std::vector<SeriesPoint> Series(
      const GpuUuid& uuid, Metric metric, Resolution resolution, Time from, Time to) const;

  // Memory held per GPU by the ring buffers with these options (see src/monitor/README.md).
  static std::size_t BytesPerGpu(const TelemetryOptions& options);
  // Memory the ring buffers of all known GPUs hold now: BytesPerGpu() times the GPU count.
  std::size_t RingBytes() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_{};
};

}  // namespace gf
