// JSON of nodes and GPUs: a GPU and its status, and one telemetry sample with its counters
// (XIDs, ECC, remapped rows, MIG instances, processes). Apart from jobs (json_mapping.cpp).
#include <cstdint>
#include <vector>

#include "api/json_mapping.h"
#include "api/json_mapping_internal.h"

namespace gf {
namespace {

using nlohmann::json;

json XidsToJson(const std::vector<XidEvent>& xids) {
  json out = json::array();
  for (const auto& x : xids) {
    out.push_back(
        json{{"xid", x.xid}, {"time", FormatRfc3339(x.time)}, {"time_ms", ToUnixMillis(x.time)}});
  }
  return out;
}

json EccToJson(const EccCounters& ecc) {
  return json{{"volatile_corrected", OptionalValue(ecc.volatile_corrected)},
              {"volatile_uncorrected", OptionalValue(ecc.volatile_uncorrected)},
              {"aggregate_corrected", OptionalValue(ecc.aggregate_corrected)},
              {"aggregate_uncorrected", OptionalValue(ecc.aggregate_uncorrected)}};
}

json RemappedRowsToJson(const RemappedRows& rows) {
  return json{{"correctable", rows.correctable},
              {"uncorrectable", rows.uncorrectable},
              {"pending", rows.pending},
              {"failure", rows.failure}};
}

json MigInstanceToJson(const MigInstance& m) {
  return json{{"profile", m.profile},
              {"uuid", m.uuid.value()},
              {"gpu_instance_id", m.gpu_instance_id},
              {"compute_instance_id", m.compute_instance_id},
              {"slices", m.slices},
              {"memory_mib", m.memory_mib}};
}

json ProcessesToJson(const std::vector<GpuProcessSample>& processes) {
  json out = json::array();
  for (const auto& p : processes) {
    out.push_back(json{{"pid", p.pid},
                       {"used_memory_mib", OptionalValue(p.used_memory_mib)},
                       {"sm_util_pct", OptionalValue(p.sm_util_pct)},
                       {"mem_util_pct", OptionalValue(p.mem_util_pct)},
                       {"job", OptionalId(p.job)},
                       {"uid", OptionalValue(p.uid)},
                       {"user", p.user},
                       {"unmanaged", p.unmanaged},
                       {"pod", p.pod},
                       {"container", p.container},
                       {"mig_uuid", p.mig_uuid.value().empty() ? json() : json(p.mig_uuid.value())},
                       {"cpu_pct", OptionalValue(p.cpu_pct)},
                       {"host_memory_mib", OptionalValue(p.host_memory_mib)},
                       {"command", p.command}});
  }
  return out;
}

// -1 (unknown) as null.
json KnownOrNull(int value) {
  return value >= 0 ? json(value) : json();
}

}  // namespace

json GpuToJson(const Gpu& gpu) {
  json out{{"index", gpu.index},
           {"uuid", gpu.uuid.value()},
           {"model", gpu.model},
           {"memory_mib", gpu.memory_mib},
           {"health", ToString(gpu.health)},
           {"health_cause", gpu.health_cause},
           {"numa_node", KnownOrNull(gpu.numa_node)},
           {"pcie_switch", KnownOrNull(gpu.pcie_switch)},
           {"nvlink_peers", gpu.nvlink_peers},
           {"sharing", ToString(gpu.sharing)},
           {"sharing_next", gpu.sharing_next ? json(ToString(*gpu.sharing_next)) : json()}};
  out["mig_enabled"] = gpu.mig_enabled;
  out["mig_instances"] = json::array();
  for (const MigInstance& m : gpu.mig_instances) {
    out["mig_instances"].push_back(MigInstanceToJson(m));
  }
  out["mig_profiles"] = gpu.mig_profiles;
  out["mig_layout_next"] = gpu.mig_layout_next ? json(*gpu.mig_layout_next) : json();
  return out;
}

json NodeToJson(const Node& node) {
  json gpus = json::array();
  for (const auto& gpu : node.gpus) {
    gpus.push_back(GpuToJson(gpu));
  }
  json labels = json::object();
  for (const auto& [key, value] : node.labels) {
    labels[key] = value;
  }
  return json{{"name", node.name.value()},
              {"state", ToString(node.state)},
              {"state_reason", node.state_reason},
              {"cpus", node.cpus},
              {"memory_mib", node.memory_mib},
              {"cpus_in_use", node.cpus_in_use},
              {"memory_mib_in_use", node.memory_mib_in_use},
              {"labels", std::move(labels)},
              {"gpu_backend", node.gpu_backend},
              {"containment", node.containment},
              {"last_seen", FormatRfc3339(node.last_seen)},
              {"last_seen_ms", ToUnixMillis(node.last_seen)},
              {"gpus", std::move(gpus)}};
}

json GpuSampleToJson(const GpuSample& sample) {
  json out{{"uuid", sample.uuid.value()},
           {"time", FormatRfc3339(sample.time)},
           {"time_ms", ToUnixMillis(sample.time)},
           {"lost", sample.lost},
           {"health", ToString(sample.health)},
           {"health_cause", sample.health_cause},
           {"xids", XidsToJson(sample.xids)}};
  // A lost GPU answers nothing: its zeros are not readings, so they go out as null like every
  // other counter the driver could not give.
  const auto reading = [&](std::int64_t v) {
    return sample.lost ? json() : json(v);
  };
  out["memory_total_mib"] = reading(sample.memory_total_mib);
  out["memory_used_mib"] = reading(sample.memory_used_mib);
  out["memory_free_mib"] = reading(sample.memory_free_mib);
  out["util_gpu_pct"] = OptionalValue(sample.util_gpu_pct);
  out["util_memory_pct"] = OptionalValue(sample.util_memory_pct);
  out["temperature_c"] = OptionalValue(sample.temperature_c);
  out["memory_temperature_c"] = OptionalValue(sample.memory_temperature_c);
  out["power_mw"] = OptionalValue(sample.power_mw);
  out["power_limit_mw"] = OptionalValue(sample.power_limit_mw);
  out["energy_mj"] = OptionalValue(sample.energy_mj);
  out["sm_clock_mhz"] = OptionalValue(sample.sm_clock_mhz);
  out["mem_clock_mhz"] = OptionalValue(sample.mem_clock_mhz);
  out["pcie_tx_kbps"] = OptionalValue(sample.pcie_tx_kbps);
  out["pcie_rx_kbps"] = OptionalValue(sample.pcie_rx_kbps);
  out["pcie_replay_count"] = OptionalValue(sample.pcie_replay_count);
  out["ecc"] = EccToJson(sample.ecc);
  out["remapped_rows"] = sample.remapped_rows ? RemappedRowsToJson(*sample.remapped_rows) : json();
  out["throttle_reasons"] = OptionalValue(sample.throttle_reasons);
  out["throttle_reason_names"] =
      sample.throttle_reasons ? json(ThrottleReasonNames(*sample.throttle_reasons)) : json();
  out["fan_speed_pct"] = OptionalValue(sample.fan_speed_pct);
  out["pstate"] = OptionalValue(sample.pstate);
  out["processes"] = ProcessesToJson(sample.processes);
  out["mig_enabled"] = sample.mig_enabled;
  out["mig"] = json::array();
  for (const MigSample& m : sample.mig) {
    json entry = MigInstanceToJson(m.instance);
    entry["memory_used_mib"] = OptionalValue(m.memory_used_mib);
    entry["memory_total_mib"] = OptionalValue(m.memory_total_mib);
    out["mig"].push_back(std::move(entry));
  }
  out["mig_layout_error"] = sample.mig_layout_error;
  return out;
}

json GpuStatusToJson(const GpuStatus& status) {
  json out = GpuToJson(status.gpu);
  out["node"] = status.node.value();
  out["job"] = OptionalId(status.job);
  out["user"] = status.user;
  out["team"] = status.team;
  json holders = json::array();
  for (const GpuHolder& h : status.holders) {
    holders.push_back(json{{"job", h.job.value()},
                           {"user", h.user},
                           {"team", h.team},
                           {"share_milli", h.share_milli},
                           {"memory_limit_mib", h.memory_limit_mib},
                           {"namespace", h.pod_namespace},
                           {"pod", h.pod},
                           {"container", h.container}});
  }
  out["holders"] = std::move(holders);
  out["conditions"] = status.conditions;
  out["sample"] = status.sample ? GpuSampleToJson(*status.sample) : json();
  return out;
}

}  // namespace gf
