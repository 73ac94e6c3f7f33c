// The GPU families of /metrics: dcgm-exporter's DCGM_FI_* series with job/user/team labels,
// and gpufleet's own per-GPU series (throttle reasons, health, conditions, shares, the last
// XID, MIG devices). Apart from the job and cluster families (prometheus.cpp): one series per
// GPU, by far the most lines of a scrape.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/prometheus.h"
#include "metrics/prometheus_text.h"

namespace gf::exposition {
namespace {

template <typename T>
std::optional<double> Opt(const std::optional<T>& value) {
  return value ? std::make_optional(static_cast<double>(*value)) : std::nullopt;
}
// Unit conversions divide by 1000 (exact for what a decimal reading can express) and multiply
// by powers of two (always exact).
template <typename T>
std::optional<double> Divided(const std::optional<T>& value, double divisor) {
  return value ? std::make_optional(static_cast<double>(*value) / divisor) : std::nullopt;
}
template <typename T>
std::optional<double> Times(const std::optional<T>& value, double factor) {
  return value ? std::make_optional(static_cast<double>(*value) * factor) : std::nullopt;
}
std::optional<double> Num(std::int64_t value) {
  return static_cast<double>(value);
}

// ---- GPU families ----

// Names, types and help texts as in dcgm-exporter's etc/default-counters.csv (ECC and row
// remapping as its DCGM field names), so its dashboards and alerts find them.
const std::array<Column<GpuSample>, 19> kDcgmColumns = {{
    {{"DCGM_FI_DEV_SM_CLOCK", Kind::kGauge, "SM clock frequency (in MHz)."},
     [](const GpuSample& s) {
       return Opt(s.sm_clock_mhz);
     }},
    {{"DCGM_FI_DEV_MEM_CLOCK", Kind::kGauge, "Memory clock frequency (in MHz)."},
     [](const GpuSample& s) {
       return Opt(s.mem_clock_mhz);
     }},
    {{"DCGM_FI_DEV_MEMORY_TEMP", Kind::kGauge, "Memory temperature (in C)."},
     [](const GpuSample& s) {
       return Opt(s.memory_temperature_c);
     }},
    {{"DCGM_FI_DEV_GPU_TEMP", Kind::kGauge, "GPU temperature (in C)."},
     [](const GpuSample& s) {
       return Opt(s.temperature_c);
     }},
    {{"DCGM_FI_DEV_POWER_USAGE", Kind::kGauge, "Power draw (in W)."},
     [](const GpuSample& s) {
       return Divided(s.power_mw, kMilliPerUnit);
     }},
    {{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
      Kind::kCounter,
      "Total energy consumption since boot (in mJ)."},
     [](const GpuSample& s) {
       return Opt(s.energy_mj);
     }},
    {{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Kind::kCounter, "Total number of PCIe retries."},
     [](const GpuSample& s) {
       return Opt(s.pcie_replay_count);
     }},
    {{"DCGM_FI_DEV_GPU_UTIL", Kind::kGauge, "GPU utilization (in %)."},
     [](const GpuSample& s) {
       return Opt(s.util_gpu_pct);
     }},
    {{"DCGM_FI_DEV_MEM_COPY_UTIL", Kind::kGauge, "Memory utilization (in %)."},
     [](const GpuSample& s) {
       return Opt(s.util_memory_pct);
     }},
    {{"DCGM_FI_DEV_FB_FREE", Kind::kGauge, "Framebuffer memory free (in MiB)."},
     [](const GpuSample& s) {
       return Num(s.memory_free_mib);
     }},
    {{"DCGM_FI_DEV_FB_USED", Kind::kGauge, "Framebuffer memory used (in MiB)."},
     [](const GpuSample& s) {
       return Num(s.memory_used_mib);
     }},
    {{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
      Kind::kCounter,
      "Total number of single-bit volatile ECC errors."},
     [](const GpuSample& s) {
       return Opt(s.ecc.volatile_corrected);
     }},
    {{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
      Kind::kCounter,
      "Total number of double-bit volatile ECC errors."},
     [](const GpuSample& s) {
       return Opt(s.ecc.volatile_uncorrected);
     }},
    {{"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
      Kind::kCounter,
      "Total number of single-bit persistent ECC errors."},
     [](const GpuSample& s) {
       return Opt(s.ecc.aggregate_corrected);
     }},
    {{"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
      Kind::kCounter,
      "Total number of double-bit persistent ECC errors."},
     [](const GpuSample& s) {
       return Opt(s.ecc.aggregate_uncorrected);
     }},
    {{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
      Kind::kCounter,
      "Number of remapped rows for uncorrectable errors"},
     [](const GpuSample& s) {
       return s.remapped_rows ? Num(s.remapped_rows->uncorrectable) : std::nullopt;
     }},
    {{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
      Kind::kCounter,
      "Number of remapped rows for correctable errors"},
     [](const GpuSample& s) {
       return s.remapped_rows ? Num(s.remapped_rows->correctable) : std::nullopt;
     }},
    {{"DCGM_FI_DEV_ROW_REMAP_FAILURE", Kind::kGauge, "Whether remapping of rows has failed"},
     [](const GpuSample& s) {
       return s.remapped_rows ? Num(s.remapped_rows->failure ? 1 : 0) : std::nullopt;
     }},
    {{"DCGM_FI_DEV_ROW_REMAP_PENDING", Kind::kGauge, "Whether remapping of rows is pending"},
     [](const GpuSample& s) {
       return s.remapped_rows ? Num(s.remapped_rows->pending ? 1 : 0) : std::nullopt;
     }},
}};

// What dcgm-exporter does not export by default, under gpufleet names in base units.
const std::array<Column<GpuSample>, 5> kGpufleetGpuColumns = {{
    {{"gpufleet_gpu_power_limit_watts", Kind::kGauge, "Enforced power limit of the GPU, in watts."},
     [](const GpuSample& s) {
       return Divided(s.power_limit_mw, kMilliPerUnit);
     }},
    {{"gpufleet_gpu_fan_speed_percent",
      Kind::kGauge,
      "Fan speed as a percentage of its maximum (absent on passively cooled GPUs)."},
     [](const GpuSample& s) {
       return Opt(s.fan_speed_pct);
     }},
    {{"gpufleet_gpu_performance_state",
      Kind::kGauge,
      "Performance state: 0 (P0, fastest) to 15 (P15, slowest)."},
     [](const GpuSample& s) {
       return Opt(s.pstate);
     }},
    {{"gpufleet_gpu_pcie_tx_bytes_per_second",
      Kind::kGauge,
      "PCIe transmit throughput over the driver's last sample period, in bytes per second."},
     [](const GpuSample& s) {
       return Times(s.pcie_tx_kbps, kBytesPerKib);
     }},
    {{"gpufleet_gpu_pcie_rx_bytes_per_second",
      Kind::kGauge,
      "PCIe receive throughput over the driver's last sample period, in bytes per second."},
     [](const GpuSample& s) {
       return Times(s.pcie_rx_kbps, kBytesPerKib);
     }},
}};

// NVML's clocks throttle (clocks event) reason bits, one 0/1 series each, so an alert can say
// which one and a dashboard can stack them. Bits NVML adds later are reported as "other".
void WriteThrottleReasons(Buffer& out,
                          const std::vector<const GpuSample*>& samples,
                          const std::vector<std::string>& labels) {
  constexpr std::string_view kName = "gpufleet_gpu_throttle_reason";
  WriteFamily(out,
              {kName,
               Kind::kGauge,
               "1 while this clocks throttle reason is active (NVML clocks event reasons), "
               "else 0."});
  std::string reason;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (samples[i] == nullptr || !samples[i]->throttle_reasons) {
      continue;
    }
    const std::uint64_t mask = *samples[i]->throttle_reasons;
    for (const ThrottleReason& r : KnownThrottleReasons()) {
      reason.clear();
      AppendLabel(reason, "reason", r.name);
      WriteSample(out, kName, labels[i], (mask & r.bit) != 0 ? 1 : 0, reason);
    }
    WriteSample(
        out, kName, labels[i], (mask & ~KnownThrottleBits()) != 0 ? 1 : 0, R"(reason="other")");
  }
}

// Health is exported for every GPU, lost ones included, without job labels: an alert on it
// must not restart when the GPU changes hands.
void WriteHealth(Buffer& out,
                 const TelemetrySnapshot& telemetry,
                 const std::vector<std::string>& identity) {
  constexpr std::string_view kName = "gpufleet_gpu_health";
  WriteFamily(out,
              {kName,
               Kind::kGauge,
               "GPU health: 0 ok, 1 degraded, 2 failed; label cause says why (absent when "
               "ok)."});
  std::string cause;
  for (std::size_t i = 0; i < telemetry.gpus.size(); ++i) {
    const Gpu& gpu = telemetry.gpus[i].gpu;
    cause.clear();
    if (!gpu.health_cause.empty()) {
      AppendLabel(cause, "cause", gpu.health_cause);
    }
    WriteSample(out, kName, identity[i], Severity(gpu.health), cause);
  }
}

// The condition kinds Telemetry detects; each gets a 0/1 series so "cleared" is a value, not
// a vanished series. A kind this list does not know yet is still exported while active.
constexpr std::array<std::string_view, 3> kConditionKinds = {
    kAllocatedNoProcess, kUnallocatedProcess, kGpuMemoryOverLimit};

void WriteConditions(Buffer& out,
                     const TelemetrySnapshot& telemetry,
                     const std::vector<std::string>& identity) {
  constexpr std::string_view kName = "gpufleet_gpu_condition";
  WriteFamily(out,
              {kName,
               Kind::kGauge,
               "1 while the condition is active on the GPU: allocated_no_process (held by a "
               "job, no process), unallocated_process (a process on a GPU nobody holds), "
               "gpu_memory_over_limit (a job over its memory limit on a shared GPU)."});
  std::string label;
  for (std::size_t i = 0; i < telemetry.gpus.size(); ++i) {
    const GpuView& view = telemetry.gpus[i];
    if (view.sample && view.sample->lost) {
      continue;
    }
    const auto active = [&](std::string_view kind) {
      return std::find(view.conditions.begin(), view.conditions.end(), kind) !=
             view.conditions.end();
    };
    const auto known = [&](std::string_view kind) {
      return std::find(kConditionKinds.begin(), kConditionKinds.end(), kind) !=
             kConditionKinds.end();
    };
    for (std::string_view kind : kConditionKinds) {
      label.clear();
      AppendLabel(label, "condition", kind);
      WriteSample(out, kName, identity[i], active(kind) ? 1 : 0, label);
    }
    for (const std::string& kind : view.conditions) {
      if (!known(kind)) {
        label.clear();
        AppendLabel(label, "condition", kind);
        WriteSample(out, kName, identity[i], 1, label);
      }
    }
  }
}

// The labels of the GPU series, escaped once and reused by every family. The reading series
// have one row per GPU and holder: a free GPU one row without job labels, a whole GPU one with
// its job's, a shared GPU one per job holding it (each with the GPU's value), as
// dcgm-exporter copies a GPU's series per job with HPC job mapping and per pod with
// KUBERNETES_VIRTUAL_GPUS.
struct GpuLabelSets {
  std::vector<std::string> identity;         // per GPU: gpu, UUID, Hostname (health, conditions)
  std::vector<std::size_t> gpu_of;           // per row: its GPU's position in the snapshot
  std::vector<const GpuAssignment*> holder;  // per row: its job; nullptr for a free GPU
  std::vector<std::string> dcgm;             // per row: + device, modelName, job/user/team if held
  std::vector<std::string> hardware;         // per row: identity + job/user/team (gpufleet_gpu_*)
};

// Unallocated GPUs get no job/user/team labels at all rather than empty ones: Prometheus
// treats an empty label as absent anyway, and `{job=~".+"}` then selects allocated GPUs.
std::string OwnerLabels(const GpuAssignment& assignment) {
  std::string owner;
  AppendLabel(owner, "job", fmt::format("{}", assignment.job.value()));
  AppendLabel(owner, "user", assignment.user);
  AppendLabel(owner, "team", TeamName(assignment.team));
  return owner;
}

// Kubernetes mode: `namespace`, `pod` and `container` as dcgm-exporter names them (its
// pod-resources mapping), on every row of a cluster whose GPUs pods hold: those of a pod's GPU
// name it, the others are empty (as dcgm-exporter writes them), so that each series keeps one
// label set. A cluster with no pod gets none of them, as before.
std::string PodLabels(const GpuAssignment* holder) {
  std::string pod;
  AppendLabel(pod, "namespace", holder != nullptr ? holder->pod_namespace : "");
  AppendLabel(pod, "pod", holder != nullptr ? holder->pod : "");
  AppendLabel(pod, "container", holder != nullptr ? holder->container : "");
  return pod;
}

GpuLabelSets LabelGpus(const std::vector<GpuView>& gpus) {
  GpuLabelSets sets;
  const bool pods = std::any_of(gpus.begin(), gpus.end(), [](const GpuView& view) {
    return std::any_of(view.assignments.begin(),
                       view.assignments.end(),
                       [](const GpuAssignment& a) { return !a.pod.empty(); });
  });
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const GpuView& view = gpus[i];
    const std::string index = fmt::format("{}", view.gpu.index);
    std::string identity;
    AppendLabel(identity, "gpu", index);
    AppendLabel(identity, "UUID", view.gpu.uuid.value());
    AppendLabel(identity, "Hostname", view.node.value());
    std::string dcgm = identity;
    AppendLabel(dcgm, "device", "nvidia" + index);
    AppendLabel(dcgm, "modelName", view.gpu.model);
    const auto add_row = [&](const GpuAssignment* holder) {
      sets.gpu_of.push_back(i);
      sets.holder.push_back(holder);
      sets.dcgm.push_back(dcgm);
      sets.hardware.push_back(identity);
      if (holder != nullptr) {
        const std::string owner = OwnerLabels(*holder);
        for (std::string* labels : {&sets.dcgm.back(), &sets.hardware.back()}) {
          *labels += ',';
          *labels += owner;
        }
      }
      if (pods) {
        const std::string pod = PodLabels(holder);
        for (std::string* labels : {&sets.dcgm.back(), &sets.hardware.back()}) {
          *labels += ',';
          *labels += pod;
        }
      }
    };
    if (view.assignments.empty()) {
      add_row(nullptr);
    }
    for (const GpuAssignment& holder : view.assignments) {
      add_row(&holder);
    }
    sets.identity.push_back(std::move(identity));
  }
  return sets;
}

// What each job holds of its GPU, one series per (GPU, job): the share as a ratio (1 for a
// whole GPU), so a GPU series can be split by job, e.g. DCGM_FI_DEV_POWER_USAGE * on(UUID, job)
// gpufleet_gpu_job_share; and the job's memory limit where it has one. None for a lost GPU.
void WriteHolderShares(Buffer& out,
                       const TelemetrySnapshot& telemetry,
                       const GpuLabelSets& labels) {
  const auto exported = [&](std::size_t r) {
    const GpuView& view = telemetry.gpus[labels.gpu_of[r]];
    return labels.holder[r] != nullptr && !(view.sample && view.sample->lost);
  };
  static constexpr Family kShare{
      "gpufleet_gpu_job_share",
      Kind::kGauge,
      "Compute share of the GPU held by the job: 1 for a whole GPU, 0.25 for --gpu-share 0.25."};
  static constexpr Family kLimit{
      "gpufleet_gpu_job_memory_limit_bytes",
      Kind::kGauge,
      "GPU memory the job's processes may use on the GPU (only jobs with a limit)."};
  WriteFamily(out, kShare);
  for (std::size_t r = 0; r < labels.holder.size(); ++r) {
    if (exported(r)) {
      WriteSample(out,
                  kShare.name,
                  labels.hardware[r],
                  static_cast<double>(labels.holder[r]->share_milli) / kMilliPerUnit);
    }
  }
  WriteFamily(out, kLimit);
  for (std::size_t r = 0; r < labels.holder.size(); ++r) {
    const GpuAssignment* holder = labels.holder[r];
    if (exported(r) && holder->memory_limit_mib > 0) {
      WriteSample(out,
                  kLimit.name,
                  labels.hardware[r],
                  static_cast<double>(holder->memory_limit_mib) * kBytesPerMib);
    }
  }
}

// The last XID the GPU ever reported (Telemetry keeps it), 0 when none: what dcgm-exporter
// exports, so an alert on it does not depend on catching the one sample that carried it.
void WriteLastXid(Buffer& out,
                  const TelemetrySnapshot& telemetry,
                  const std::vector<const GpuSample*>& readings,
                  const GpuLabelSets& labels) {
  static constexpr Family kFamily{
      "DCGM_FI_DEV_XID_ERRORS", Kind::kGauge, "Value of the last XID error encountered."};
  WriteFamily(out, kFamily);
  for (std::size_t r = 0; r < readings.size(); ++r) {
    if (readings[r] != nullptr) {
      const std::optional<XidEvent>& xid = telemetry.gpus[labels.gpu_of[r]].last_xid;
      WriteSample(out, kFamily.name, labels.dcgm[r], xid ? static_cast<double>(xid->xid) : 0.0);
    }
  }
}

// Each MIG device of a GPU in MIG mode (issue #7), by its own MIG uuid and profile beside its
// GPU's labels: the memory its processes use and its size, as NVML reads them per device (it
// has no utilisation per MIG device). None for a GPU without a reading or lost.
void WriteMigDevices(Buffer& out,
                     const TelemetrySnapshot& telemetry,
                     const std::vector<std::string>& identity) {
  static constexpr Family kUsed{
      "gpufleet_mig_memory_used_bytes", Kind::kGauge, "GPU memory used on the MIG device."};
  static constexpr Family kTotal{
      "gpufleet_mig_memory_total_bytes", Kind::kGauge, "GPU memory of the MIG device."};
  std::vector<std::pair<std::string, const MigSample*>> devices;
  for (std::size_t i = 0; i < telemetry.gpus.size(); ++i) {
    const std::optional<GpuSample>& sample = telemetry.gpus[i].sample;
    if (!sample || sample->lost) {
      continue;
    }
    for (const MigSample& device : sample->mig) {
      std::string labels = identity[i];
      AppendLabel(labels, "mig_uuid", device.instance.uuid.value());
      AppendLabel(labels, "profile", device.instance.profile);
      devices.emplace_back(std::move(labels), &device);
    }
  }
  if (devices.empty()) {
    return;
  }
  for (const auto& [family, value] : {std::pair{kUsed, &MigSample::memory_used_mib},
                                      std::pair{kTotal, &MigSample::memory_total_mib}}) {
    WriteFamily(out, family);
    for (const auto& [labels, device] : devices) {
      if (const std::optional<std::int64_t>& mib = device->*value; mib.has_value()) {
        WriteSample(out, family.name, labels, static_cast<double>(*mib) * kBytesPerMib);
      }
    }
  }
}

}  // namespace

void WriteGpuFamilies(Buffer& out, const TelemetrySnapshot& telemetry) {
  const GpuLabelSets labels = LabelGpus(telemetry.gpus);
  // A GPU without a reading yet, or lost, has no reading series (never fake zeros).
  std::vector<const GpuSample*> readings;
  readings.reserve(labels.gpu_of.size());
  for (const std::size_t i : labels.gpu_of) {
    const GpuView& view = telemetry.gpus[i];
    readings.push_back(view.sample && !view.sample->lost ? &*view.sample : nullptr);
  }
  WriteColumns(out, kDcgmColumns, readings, labels.dcgm);
  WriteLastXid(out, telemetry, readings, labels);
  WriteColumns(out, kGpufleetGpuColumns, readings, labels.hardware);
  WriteThrottleReasons(out, readings, labels.hardware);
  WriteHolderShares(out, telemetry, labels);
  WriteMigDevices(out, telemetry, labels.identity);
  WriteHealth(out, telemetry, labels.identity);
  WriteConditions(out, telemetry, labels.identity);
}

}  // namespace gf::exposition
