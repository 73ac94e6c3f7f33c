#include "controller/ready_gpus.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

namespace gf {
namespace {

constexpr int kRunPage = 10'000;

Time MinuteOf(Time t) {
  return FromUnixMillis(ToUnixMillis(t) / 60'000 * 60'000);
}

}  // namespace

std::map<NodeId, int> SpreadReady(int ready, const std::map<NodeId, int>& idle_by_node) {
  std::vector<std::pair<NodeId, int>> nodes(idle_by_node.begin(), idle_by_node.end());
  std::stable_sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
    return a.second > b.second;  // the map gave them by name: ties stay so
  });
  std::map<NodeId, int> spread;
  int left = std::max(ready, 0);
  for (const auto& [node, idle] : nodes) {
    const int here = std::clamp(left, 0, std::max(idle, 0));
    spread[node] = here;
    left -= here;
  }
  return spread;
}

ReadyGpus::ReadyGpus(ReadyGpusOptions options, ReadyGpusParts parts)
    : options_(options), p_(parts), forecast_(options_.forecast) {}

Status ReadyGpus::Load(StoreReader& store) {
  const Time now = p_.clock.Now();
  const Time this_hour = HourOf(now);
  const Time horizon = this_hour - std::chrono::hours(kHoursPerWeek * options_.seed_weeks);
  std::vector<DemandSpan> spans;
  std::optional<Time> first;
  std::int64_t after_seq = 0;
  while (true) {
    GF_ASSIGN_OR_RETURN(std::vector<UsageRecord> page,
                        store.ListUsage(horizon, after_seq, kRunPage));
    if (page.empty()) {
      break;
    }
    after_seq = page.back().seq;
    for (const UsageRecord& run : page) {
      const double seconds = std::chrono::duration<double>(run.end - run.start).count();
      if (seconds <= 0) {
        continue;
      }
      // What it held: a share of a GPU counts as its fraction, as its GPU-seconds do.
      spans.push_back(DemandSpan{
          .from = std::max(run.start, horizon), .to = run.end, .gpus = run.gpu_seconds / seconds});
      first = std::min(first.value_or(spans.back().from), spans.back().from);
    }
  }
  if (!first) {
    return OkStatus();  // a new cluster: the forecast starts with its first hour
  }
  for (const JobId id : p_.jobs.Holding()) {  // the runs under way, so far
    const Job& job = p_.jobs.At(id);
    if (job.start_time && job.allocation) {
      spans.push_back(
          DemandSpan{.from = *job.start_time, .to = now, .gpus = HeldGpus(*job.allocation)});
    }
  }
  // From the hour of the first run on: the hours before it were no cluster, not no demand.
  const Time from = HourOf(*first);
  const auto hours = static_cast<int>((ToUnixMillis(this_hour) - ToUnixMillis(from)) / kHourMs);
  const std::vector<double> demand = HourlyDemand(spans, from, hours);
  for (int h = 0; h < hours; ++h) {
    forecast_.Observe(from + std::chrono::hours(h), demand[static_cast<std::size_t>(h)]);
  }
  spdlog::info("controller: load forecast seeded with {} hours of stored runs", hours);
  return OkStatus();
}

double ReadyGpus::Wanted() const {
  double wanted = 0;
  for (const auto& [id, job] : p_.jobs.Active()) {
    if (job.state == JobState::kPending) {
      wanted += static_cast<double>(RequestedMilli(job.spec.request)) / kWholeGpuMilli;
    } else if (HoldsGpus(job)) {
      wanted += HeldGpus(*job.allocation);
    }
  }
  return wanted;
}

void ReadyGpus::Run() {
  const Time now = p_.clock.Now();
  const Time minute = MinuteOf(now);
  if (last_reading_ && minute <= *last_reading_) {
    return;
  }
  last_reading_ = minute;
  const Time hour = HourOf(now);
  if (hour_readings_ > 0 && hour != hour_) {
    forecast_.Observe(hour_, hour_sum_ / hour_readings_);
    hour_sum_ = 0;
    hour_readings_ = 0;
  }
  hour_ = hour;
  hour_sum_ += Wanted();
  ++hour_readings_;

  // The GPUs in use and the idle ones that may take work, on the nodes whose agents listen.
  std::map<NodeId, std::set<GpuUuid>> held;
  for (const JobId id : p_.jobs.Holding()) {
    const Allocation& allocation = *p_.jobs.At(id).allocation;
    held[allocation.node].insert(allocation.gpus.begin(), allocation.gpus.end());
  }
  int in_use = 0;
  std::map<NodeId, int> idle_by_node;
  for (const auto& [name, entry] : p_.nodes.Entries()) {
    if (entry.agent == nullptr || !entry.connected) {
      continue;
    }
    const std::set<GpuUuid>& busy = held[name];
    in_use += static_cast<int>(busy.size());
    int idle = 0;
    if (entry.node.state == NodeState::kUp) {
      for (const Gpu& gpu : entry.node.gpus) {
        idle += !busy.contains(gpu.uuid) && TakesWork(gpu) ? 1 : 0;
      }
    }
    idle_by_node[name] = idle;
  }
  int idle_total = 0;
  for (const auto& [name, idle] : idle_by_node) {
    idle_total += idle;
  }
  const std::optional<int> ready =
      GpusToKeepReady(forecast_, now, options_.lead_hours, in_use, in_use + idle_total);
  const std::map<NodeId, int> spread =
      ready ? SpreadReady(*ready, idle_by_node) : std::map<NodeId, int>{};
  for (const auto& [name, idle] : idle_by_node) {
    const std::optional<int> target = ready ? std::optional(spread.at(name)) : std::nullopt;
    const auto sent = sent_.find(name);
    if (sent != sent_.end() && sent->second == target) {
      continue;
    }
    sent_[name] = target;
    p_.out.After([agent = p_.nodes.At(name).agent, target] { agent->KeepGpusReady(target); });
  }
}

}  // namespace gf
