#include "monitor/health.h"

#include <algorithm>
#include <array>

#include "core/check.h"

namespace gf {
namespace {

struct XidName {
  int xid;
  std::string_view text;
};

// From NVIDIA's "XID Errors" table (docs.nvidia.com/deploy/xid-errors), the XIDs a cluster
// operator meets most.
constexpr std::array<XidName, 21> kXidNames{{
    {13, "graphics engine exception"},
    {31, "GPU memory page fault"},
    {32, "invalid or corrupted push buffer stream"},
    {38, "driver firmware error"},
    {43, "GPU stopped processing"},
    {45, "preemptive cleanup, due to previous errors"},
    {48, "double-bit ECC error"},
    {61, "internal micro-controller breakpoint/warning"},
    {62, "internal micro-controller halt"},
    {63, "ECC page retirement or row remapping recording event"},
    {64, "ECC page retirement or row remapper recording failure"},
    {68, "NVDEC0 exception"},
    {69, "graphics engine class error"},
    {74, "NVLink error"},
    {79, "GPU has fallen off the bus"},
    {92, "high single-bit ECC error rate"},
    {94, "contained ECC error"},
    {95, "uncontained ECC error"},
    {119, "GSP RPC timeout"},
    {120, "GSP error"},
    {154, "GPU recovery action changed"},
}};

struct ThrottleName {
  std::uint64_t bit;
  std::string_view text;
};

constexpr std::array<ThrottleName, 3> kThrottleNames{{
    {kThrottleHwSlowdown, "HW slowdown"},
    {kThrottleHwThermal, "HW thermal slowdown"},
    {kThrottleHwPowerBrake, "HW power brake"},
}};

bool Contains(const std::vector<int>& list, int value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string XidText(int xid) {
  std::string text = "XID " + std::to_string(xid);
  if (std::string_view d = XidDescription(xid); !d.empty()) {
    text += " (" + std::string(d) + ")";
  }
  return text;
}

// The temperature rule of one sensor with hysteresis: enters at `limit`, leaves once the
// reading is `hysteresis` below it. Updates `active`; returns the reason text while active.
std::optional<std::string> TemperatureRule(
    std::string_view what, std::optional<int> reading, int limit, int hysteresis, bool& active) {
  if (!reading) {
    return std::nullopt;  // no reading: neither raise nor clear
  }
  const int clear_at = limit - hysteresis;
  if (*reading >= limit) {
    active = true;
  } else if (*reading <= clear_at) {
    active = false;
  }
  if (!active) {
    return std::nullopt;
  }
  const std::string now = std::string(what) + " " + std::to_string(*reading) + " C";
  if (*reading >= limit) {
    return now + " ≥ " + std::to_string(limit) + " C";
  }
  return now + ", cooling from ≥ " + std::to_string(limit) + " C (ok at ≤ " +
         std::to_string(clear_at) + " C)";
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) {
      out += separator;
    }
    out += p;
  }
  return out;
}

}  // namespace

std::string_view XidDescription(int xid) {
  for (const XidName& x : kXidNames) {
    if (x.xid == xid) {
      return x.text;
    }
  }
  return {};
}

HealthTracker::HealthTracker(HealthPolicy policy) : policy_(std::move(policy)) {
  GF_CHECK(policy_.temperature_hysteresis_c >= 0);
  GF_CHECK(policy_.xid_degraded_for.count() >= 0);
}

void HealthTracker::Reset(const GpuUuid& uuid) {
  gpus_.erase(uuid);
}

void HealthTracker::Update(GpuSample& sample) {
  GpuState& state = gpus_[sample.uuid];
  LearnXids(sample, state);
  LearnEcc(sample, state);
  std::vector<Reason> reasons = ActiveReasons(sample, state);
  // Worst first; within one severity, the order the rules were checked in.
  std::stable_sort(reasons.begin(), reasons.end(), [](const Reason& a, const Reason& b) {
    return a.severity > b.severity;
  });
  sample.health = reasons.empty() ? GpuHealth::kOk : reasons.front().severity;
  std::vector<std::string> texts;
  texts.reserve(reasons.size());
  for (Reason& r : reasons) {
    texts.push_back(std::move(r.text));
  }
  sample.health_cause = Join(texts, "; ");
}

void HealthTracker::LearnXids(const GpuSample& sample, GpuState& state) const {
  for (const XidEvent& event : sample.xids) {
    if (Contains(policy_.application_xids, event.xid)) {
      continue;
    }
    if (Contains(policy_.fatal_xids, event.xid)) {
      if (!Contains(state.fatal_xids, event.xid)) {
        state.fatal_xids.push_back(event.xid);
      }
      continue;
    }
    // A backend that cannot date the event leaves time at the epoch: the sample's time is
    // when it was seen.
    const Time seen = event.time == Time{} ? sample.time : event.time;
    Time& last = state.xid_last_seen[event.xid];
    last = std::max(last, seen);
  }
}

void HealthTracker::LearnEcc(const GpuSample& sample, GpuState& state) const {
  const std::optional<std::int64_t> now = sample.ecc.volatile_uncorrected;
  if (!now) {
    return;  // keep the baseline: a lost GPU's sample has no counters
  }
  const std::optional<std::int64_t> before = state.volatile_uncorrected;
  state.volatile_uncorrected = now;
  // The first reading is the baseline: errors before this agent started (or before a Reset)
  // were already dealt with, or will be seen in the aggregate count.
  if (!before || *now <= *before) {
    return;
  }
  // Sticky: keep the count it rose from first, with the latest.
  state.ecc_rise = {state.ecc_rise ? state.ecc_rise->first : *before, *now};
}

std::vector<HealthTracker::Reason> HealthTracker::ActiveReasons(const GpuSample& sample,
                                                                GpuState& state) const {
  std::vector<Reason> out;
  if (sample.lost) {
    out.push_back({GpuHealth::kFailed, "GPU fell off the bus (NVML: GPU is lost)"});
  }
  for (int xid : state.fatal_xids) {
    out.push_back({GpuHealth::kFailed, XidText(xid)});
  }
  if (state.ecc_rise) {
    out.push_back({GpuHealth::kFailed,
                   "volatile uncorrectable ECC errors rose from " +
                       std::to_string(state.ecc_rise->first) + " to " +
                       std::to_string(state.ecc_rise->second)});
  }
  AddXidReasons(sample, state, out);
  AddEccAndRemapReasons(sample, out);
  AddTemperatureReasons(sample, state, out);
  if (sample.throttle_reasons) {
    std::vector<std::string> names;
    for (const ThrottleName& t : kThrottleNames) {
      if ((*sample.throttle_reasons & t.bit & policy_.degrading_throttle_reasons) != 0) {
        names.emplace_back(t.text);
      }
    }
    if (!names.empty()) {
      out.push_back({GpuHealth::kDegraded, "throttled: " + Join(names, ", ")});
    }
  }
  return out;
}

void HealthTracker::AddXidReasons(const GpuSample& sample,
                                  const GpuState& state,
                                  std::vector<Reason>& out) const {
  for (const auto& [xid, last] : state.xid_last_seen) {
    if (sample.time - last < policy_.xid_degraded_for) {
      out.push_back({GpuHealth::kDegraded, XidText(xid)});
    }
  }
}

void HealthTracker::AddEccAndRemapReasons(const GpuSample& sample, std::vector<Reason>& out) const {
  if (sample.remapped_rows && sample.remapped_rows->failure) {
    out.push_back({GpuHealth::kFailed, "row remapping failed (the GPU needs service)"});
  }
  const std::optional<std::int64_t> aggregate = sample.ecc.aggregate_uncorrected;
  if (aggregate && *aggregate > policy_.aggregate_uncorrectable_limit) {
    out.push_back({GpuHealth::kDegraded,
                   std::to_string(*aggregate) +
                       " uncorrectable ECC errors over the card's life (> " +
                       std::to_string(policy_.aggregate_uncorrectable_limit) + ")"});
  }
  if (sample.remapped_rows && sample.remapped_rows->pending) {
    out.push_back({GpuHealth::kDegraded, "row remapping pending (reset the GPU to apply it)"});
  }
}

void HealthTracker::AddTemperatureReasons(const GpuSample& sample,
                                          GpuState& state,
                                          std::vector<Reason>& out) const {
  const int hysteresis = policy_.temperature_hysteresis_c;
  if (auto r = TemperatureRule("temperature",
                               sample.temperature_c,
                               policy_.temperature_limit_c,
                               hysteresis,
                               state.hot)) {
    out.push_back({GpuHealth::kDegraded, std::move(*r)});
  }
  if (auto r = TemperatureRule("memory temperature",
                               sample.memory_temperature_c,
                               policy_.memory_temperature_limit_c,
                               hysteresis,
                               state.memory_hot)) {
    out.push_back({GpuHealth::kDegraded, std::move(*r)});
  }
}

}  // namespace gf
