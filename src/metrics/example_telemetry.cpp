#include "metrics/example_telemetry.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace gf {
namespace {

constexpr int kGpusPerNode = 8;
constexpr int kGpusPerJob = 2;
const Time kSampleTime = FromUnixMillis(1'700'000'000'000);

JobId JobOf(int position) {
  return JobId(position / (2 * kGpusPerJob) + 1);
}
std::string UserOf(JobId job) {
  return fmt::format("user{}", job.value() % 3);
}
// Even jobs belong to the default team ("") so both spellings are exercised.
std::string TeamOf(JobId job) {
  return job.value() % 2 == 0 ? "" : "ml-research";
}

GpuSample FullSample(const GpuUuid& uuid, int position, bool allocated) {
  const int v = position % 50;  // keeps every reading in its plausible range
  GpuSample s;
  s.uuid = uuid;
  s.time = kSampleTime;
  s.memory_total_mib = 81'559;
  s.memory_used_mib = 1'000 + 100 * v;
  s.memory_free_mib = s.memory_total_mib - s.memory_used_mib;
  s.util_gpu_pct = allocated ? 50 + v : 0;
  s.util_memory_pct = allocated ? 20 + v : 0;
  s.temperature_c = 40 + v / 2;
  s.memory_temperature_c = 45 + v / 2;
  s.power_mw = 100'000 + 1'500 * v;
  s.power_limit_mw = 700'000;
  s.energy_mj = 1'000'000'000LL + 12'345LL * position;
  s.sm_clock_mhz = 1'980;
  s.mem_clock_mhz = 2'619;
  s.pcie_tx_kbps = 10'000 + v;
  s.pcie_rx_kbps = 20'000 + v;
  s.pcie_replay_count = v % 3;
  s.ecc = EccCounters{v % 2, 0, 10 + v, 1};
  s.remapped_rows = RemappedRows{v % 4, 0, false, false};
  s.throttle_reasons = allocated ? 0x4U : 0x1U;  // power cap when busy, idle otherwise
  s.fan_speed_pct = 30 + v;
  s.pstate = allocated ? 0 : 8;
  if (position % 7 == 0) {
    s.xids.push_back(XidEvent{13, kSampleTime});  // an application error: health stays ok
  }
  if (allocated) {
    GpuProcessSample process;
    process.pid = static_cast<std::uint32_t>(10'000 + position);
    process.used_memory_mib = s.memory_used_mib - 500;
    process.sm_util_pct = s.util_gpu_pct;
    process.mem_util_pct = s.util_memory_pct;
    process.job = JobOf(position);
    process.uid = 1000;
    process.user = UserOf(JobOf(position));
    s.processes.push_back(process);
  }
  return s;
}

GpuView ExampleGpu(int position, bool lost) {
  GpuView view;
  view.node = NodeId(fmt::format("node-{}", position / kGpusPerNode));
  view.gpu.index = position % kGpusPerNode;
  view.gpu.uuid = GpuUuid(fmt::format("GPU-{:08x}-0000-4000-8000-{:012x}", position, position));
  view.gpu.model = "H100-80GB";
  view.gpu.memory_mib = 81'559;
  const bool allocated = position % 2 == 1 && !lost;
  if (allocated) {
    const JobId job = JobOf(position);
    view.assignments = {GpuAssignment{job, UserOf(job), TeamOf(job)}};
  }
  if (lost) {
    GpuSample sample;
    sample.uuid = view.gpu.uuid;
    sample.time = kSampleTime;
    sample.lost = true;
    sample.health = GpuHealth::kFailed;
    sample.health_cause = "XID 79 (\"GPU has fallen off the bus\")";
    view.sample = sample;
  } else {
    view.sample = FullSample(view.gpu.uuid, position, allocated);
  }
  view.gpu.health = view.sample->health;
  view.gpu.health_cause = view.sample->health_cause;
  return view;
}

// The live record of a job from its GPUs' samples, as Telemetry would compute it.
void AddToJob(TelemetrySnapshot& snapshot, const GpuView& view) {
  const GpuAssignment& a = view.assignments.front();
  if (snapshot.jobs.empty() || snapshot.jobs.back().job != a.job) {
    JobLive live;
    live.job = a.job;
    live.user = a.user;
    live.team = a.team;
    snapshot.jobs.push_back(std::move(live));
  }
  JobLive& live = snapshot.jobs.back();
  const GpuSample& s = *view.sample;
  const double util = static_cast<double>(s.util_gpu_pct.value_or(0));
  live.util_now_pct = (live.util_now_pct * live.gpus + util) / (live.gpus + 1);
  live.gpus += 1;
  live.memory_now_mib += s.memory_used_mib;
  live.usage.samples += 600;
  live.usage.mean_util_pct = live.util_now_pct;
  live.usage.peak_util_pct = std::max(live.usage.peak_util_pct, s.util_gpu_pct.value_or(0));
  live.usage.peak_memory_mib = std::max(live.usage.peak_memory_mib, s.memory_used_mib);
  live.usage.energy_mj += 250'000'000;
}

}  // namespace

TelemetrySnapshot ExampleTelemetry(int gpus, int lost_gpus) {
  TelemetrySnapshot snapshot;
  for (int position = 0; position < gpus; ++position) {
    snapshot.gpus.push_back(ExampleGpu(position, position >= gpus - lost_gpus));
    if (!snapshot.gpus.back().assignments.empty()) {
      AddToJob(snapshot, snapshot.gpus.back());
    }
  }
  return snapshot;
}

ClusterStats ExampleClusterStats() {
  ClusterStats stats;
  stats.jobs_by_state = {{"PENDING", 12},
                         {"STARTING", 1},
                         {"RUNNING", 40},
                         {"COMPLETED", 900},
                         {"FAILED", 7},
                         {"CANCELLED", 3},
                         {"TIMEOUT", 2},
                         {"PREEMPTED", 0},
                         {"NODE_FAIL", 0}};
  stats.queue = {{"high", 2, 30.5}, {"normal", 9, 1'800}, {"low", 1, 7'200}};
  stats.wait_bucket_bounds = {1, 10, 60, 600, 3'600};
  stats.wait_bucket_counts = {100, 400, 700, 880, 900};
  stats.wait_count = 905;
  stats.wait_sum_seconds = 123'456.25;
  stats.teams = {{"", 4, 2, 3, 86'400}, {"ml-research", 36, 38, 9, 5'000'000.5}};
  stats.nodes = 5;
  stats.gpus = 40;
  stats.gpus_allocated = 40;
  stats.passes = {{.kind = "full", .count = 120, .seconds = 0.75},
                  {.kind = "incremental", .count = 4'000, .seconds = 0.5}};
  stats.notifications = {{.channel = "email", .outcome = "sent", .count = 3},
                         {.channel = "webhook", .outcome = "failed", .count = 1},
                         {.channel = "webhook", .outcome = "sent", .count = 12}};
  return stats;
}

}  // namespace gf
