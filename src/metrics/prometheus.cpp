#include "metrics/prometheus.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"

namespace gf {
namespace {

// Everything is formatted into one growing buffer: no string per line (1,000 GPUs make
// ~40,000 lines, and /metrics is scraped every few seconds).
using Buffer = fmt::memory_buffer;

constexpr double kBytesPerMib = 1024.0 * 1024.0;
constexpr double kBytesPerKib = 1024.0;  // NVML's PCIe throughput "KB/s" is KiB/s
constexpr double kMilliPerUnit = 1000.0;

enum class Kind { kGauge, kCounter, kHistogram };

struct Family {
  std::string_view name;
  Kind kind;
  std::string_view help;  // no backslash or newline: written as is
};

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kGauge:
      return "gauge";
    case Kind::kCounter:
      return "counter";
    case Kind::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// ---- Label values ----

// Length of the well-formed UTF-8 sequence starting at s[i] (1..4), or 0 if it is not one:
// truncated, a stray continuation byte, overlong, a surrogate or beyond U+10FFFF.
std::size_t Utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(s[k]));
  };
  const std::uint32_t lead = byte(i);
  std::size_t length = 0;
  std::uint32_t code_point = 0;
  std::uint32_t smallest = 0;  // below this the same code point had a shorter encoding
  if (lead < 0x80) {
    return 1;
  }
  if ((lead & 0xE0U) == 0xC0) {
    length = 2;
    code_point = lead & 0x1FU;
    smallest = 0x80;
  } else if ((lead & 0xF0U) == 0xE0) {
    length = 3;
    code_point = lead & 0x0FU;
    smallest = 0x800;
  } else if ((lead & 0xF8U) == 0xF0) {
    length = 4;
    code_point = lead & 0x07U;
    smallest = 0x10000;
  } else {
    return 0;
  }
  if (i + length > s.size()) {
    return 0;
  }
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0U) != 0x80) {
      return 0;
    }
    code_point = (code_point << 6U) | (byte(i + k) & 0x3FU);
  }
  const bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
  return code_point < smallest || code_point > 0x10FFFF || surrogate ? 0 : length;
}

void AppendEscaped(std::string& out, std::string_view value) {
  for (std::size_t i = 0; i < value.size();) {
    const char c = value[i];
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (const std::size_t length = Utf8SequenceLength(value, i); length > 0) {
      out.append(value.substr(i, length));
      i += length;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    }
  }
}

// Appends `name="value"` to a label list (the text between the braces).
void AppendLabel(std::string& labels, std::string_view name, std::string_view value) {
  if (!labels.empty()) {
    labels += ',';
  }
  labels.append(name);
  labels += "=\"";
  AppendEscaped(labels, value);
  labels += '"';
}

// ClusterStats and the assignment use "" for the user's default team.
std::string_view TeamName(std::string_view team) {
  return team.empty() ? "default" : team;
}

// ---- Lines ----

void Append(Buffer& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

void WriteFamily(Buffer& out, const Family& family) {
  fmt::format_to(std::back_inserter(out),
                 "# HELP {0} {1}\n# TYPE {0} {2}\n",
                 family.name,
                 family.help,
                 KindName(family.kind));
}

// Numbers as the format spells them: shortest round-trip decimal, NaN, +Inf, -Inf.
void WriteNumber(Buffer& out, double value) {
  if (std::isnan(value)) {
    Append(out, "NaN");
  } else if (std::isinf(value)) {
    Append(out, value > 0 ? "+Inf" : "-Inf");
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
}

// `name{labels,extra} value`; `labels` and `extra` are label lists, either may be empty.
void WriteSample(Buffer& out,
                 std::string_view name,
                 std::string_view labels,
                 double value,
                 std::string_view extra = {}) {
  Append(out, name);
  if (!labels.empty() || !extra.empty()) {
    out.push_back('{');
    Append(out, labels);
    if (!labels.empty() && !extra.empty()) {
      out.push_back(',');
    }
    Append(out, extra);
    out.push_back('}');
  }
  out.push_back(' ');
  WriteNumber(out, value);
  out.push_back('\n');
}

// ---- Families that are columns of a table (one series per row, same labels) ----

template <typename Row>
struct Column {
  Family family;
  std::optional<double> (*value)(const Row&);  // nullopt: this row has no series
};

// Writes each column as a family: one series per non-null row, labelled by labels[i].
template <typename Row, std::size_t N>
void WriteColumns(Buffer& out,
                  const std::array<Column<Row>, N>& columns,
                  const std::vector<const Row*>& rows,
                  const std::vector<std::string>& labels) {
  GF_CHECK(rows.size() == labels.size());
  for (const Column<Row>& column : columns) {
    WriteFamily(out, column.family);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] == nullptr) {
        continue;
      }
      if (const std::optional<double> value = column.value(*rows[i])) {
        WriteSample(out, column.family.name, labels[i], *value);
      }
    }
  }
}

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

GpuLabelSets LabelGpus(const std::vector<GpuView>& gpus) {
  GpuLabelSets sets;
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

// ---- Job, team, queue and cluster families ----

const std::array<Column<JobLive>, 7> kJobColumns = {{
    {{"gpufleet_job_gpus", Kind::kGauge, "GPUs the running job holds."},
     [](const JobLive& j) {
       return std::optional<double>(j.gpus);
     }},
    {{"gpufleet_job_gpu_utilization_percent",
      Kind::kGauge,
      "Mean GPU utilization over the job's GPUs, latest samples (in %)."},
     [](const JobLive& j) {
       return std::optional<double>(j.util_now_pct);
     }},
    {{"gpufleet_job_gpu_utilization_mean_percent",
      Kind::kGauge,
      "Mean GPU utilization of the job's GPUs since it started (in %)."},
     [](const JobLive& j) {
       return std::optional<double>(j.usage.mean_util_pct);
     }},
    {{"gpufleet_job_gpu_utilization_peak_percent",
      Kind::kGauge,
      "Highest GPU utilization one of the job's GPUs reached (in %)."},
     [](const JobLive& j) {
       return std::optional<double>(j.usage.peak_util_pct);
     }},
    {{"gpufleet_job_gpu_memory_used_bytes",
      Kind::kGauge,
      "GPU memory the job uses now, summed over its GPUs."},
     [](const JobLive& j) {
       return std::optional<double>(static_cast<double>(j.memory_now_mib) * kBytesPerMib);
     }},
    {{"gpufleet_job_gpu_memory_peak_bytes",
      Kind::kGauge,
      "Highest GPU memory the job used on one GPU."},
     [](const JobLive& j) {
       return std::optional<double>(static_cast<double>(j.usage.peak_memory_mib) * kBytesPerMib);
     }},
    {{"gpufleet_job_gpu_energy_joules_total",
      Kind::kCounter,
      "Energy the job's GPUs consumed since it started, in joules."},
     [](const JobLive& j) {
       return std::optional<double>(static_cast<double>(j.usage.energy_mj) / kMilliPerUnit);
     }},
}};

const std::array<Column<TeamStats>, 4> kTeamColumns = {{
    {{"gpufleet_team_allocated_gpus", Kind::kGauge, "GPUs held by the team's jobs now."},
     [](const TeamStats& t) {
       return std::optional<double>(t.allocated_gpus);
     }},
    {{"gpufleet_team_running_jobs", Kind::kGauge, "The team's running jobs."},
     [](const TeamStats& t) {
       return std::optional<double>(t.running_jobs);
     }},
    {{"gpufleet_team_pending_jobs", Kind::kGauge, "The team's pending jobs."},
     [](const TeamStats& t) {
       return std::optional<double>(t.pending_jobs);
     }},
    {{"gpufleet_team_gpu_seconds_total",
      Kind::kCounter,
      "GPU-seconds allocated to the team's jobs, ended and running."},
     [](const TeamStats& t) {
       return std::optional<double>(t.gpu_seconds_total);
     }},
}};

const std::array<Column<QueueStats>, 2> kQueueColumns = {{
    {{"gpufleet_queue_pending_jobs", Kind::kGauge, "Pending jobs in the priority class."},
     [](const QueueStats& q) {
       return std::optional<double>(q.pending);
     }},
    {{"gpufleet_queue_oldest_wait_seconds",
      Kind::kGauge,
      "How long the oldest pending job of the priority class has waited (0 when none)."},
     [](const QueueStats& q) {
       return std::optional<double>(q.oldest_wait_seconds);
     }},
}};

const std::array<Column<PassStats>, 2> kPassColumns = {{
    {{"gpufleet_scheduler_passes_total",
      Kind::kCounter,
      "Scheduling passes since the controller started, by kind (incremental: one per arrival "
      "or end)."},
     [](const PassStats& p) {
       return std::optional<double>(static_cast<double>(p.count));
     }},
    {{"gpufleet_scheduler_pass_seconds_total",
      Kind::kCounter,
      "Time spent in those scheduling passes, by kind."},
     [](const PassStats& p) {
       return std::optional<double>(p.seconds);
     }},
}};

using StateCount = std::pair<std::string, int>;
const std::array<Column<StateCount>, 1> kStateColumns = {{
    {{"gpufleet_jobs", Kind::kGauge, "Jobs the controller holds, by state."},
     [](const StateCount& s) {
       return std::optional<double>(s.second);
     }},
}};

const std::array<Column<ClusterStats>, 3> kClusterColumns = {{
    {{"gpufleet_nodes", Kind::kGauge, "Nodes known to the controller."},
     [](const ClusterStats& c) {
       return std::optional<double>(c.nodes);
     }},
    {{"gpufleet_gpus", Kind::kGauge, "GPUs on those nodes."},
     [](const ClusterStats& c) {
       return std::optional<double>(c.gpus);
     }},
    {{"gpufleet_gpus_allocated", Kind::kGauge, "GPUs held by jobs now."},
     [](const ClusterStats& c) {
       return std::optional<double>(c.gpus_allocated);
     }},
}};

template <typename T>
std::vector<const T*> RowsOf(const std::vector<T>& items) {
  std::vector<const T*> rows;
  rows.reserve(items.size());
  for (const T& item : items) {
    rows.push_back(&item);
  }
  return rows;
}

// One label per row: `name` = label_of(row).
template <typename T, typename LabelOf>
std::vector<std::string> LabelRows(const std::vector<T>& items,
                                   std::string_view name,
                                   LabelOf label_of) {
  std::vector<std::string> labels(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    AppendLabel(labels[i], name, label_of(items[i]));
  }
  return labels;
}

void WriteJobFamilies(Buffer& out, const std::vector<JobLive>& jobs) {
  std::vector<std::string> labels(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    AppendLabel(labels[i], "job", fmt::format("{}", jobs[i].job.value()));
    AppendLabel(labels[i], "user", jobs[i].user);
    AppendLabel(labels[i], "team", TeamName(jobs[i].team));
  }
  WriteColumns(out, kJobColumns, RowsOf(jobs), labels);
}

std::string NumberText(double value) {
  Buffer text;
  WriteNumber(text, value);
  return fmt::to_string(text);
}

// The bucket counts arrive cumulative (ClusterStats' contract), as the format wants them.
void WriteWaitHistogram(Buffer& out, const ClusterStats& stats) {
  constexpr std::string_view kName = "gpufleet_queue_wait_seconds";
  WriteFamily(out,
              {kName,
               Kind::kHistogram,
               "Time from submit to start of the jobs started since the controller "
               "started."});
  GF_CHECK(stats.wait_bucket_bounds.size() == stats.wait_bucket_counts.size());
  const std::string bucket = std::string(kName) + "_bucket";
  std::string le;
  for (std::size_t i = 0; i < stats.wait_bucket_bounds.size(); ++i) {
    le.clear();
    AppendLabel(le, "le", NumberText(stats.wait_bucket_bounds[i]));
    WriteSample(out, bucket, le, static_cast<double>(stats.wait_bucket_counts[i]));
  }
  WriteSample(out, bucket, R"(le="+Inf")", static_cast<double>(stats.wait_count));
  WriteSample(out, std::string(kName) + "_sum", {}, stats.wait_sum_seconds);
  WriteSample(out, std::string(kName) + "_count", {}, static_cast<double>(stats.wait_count));
}

// Deliveries by channel and outcome (ClusterStats::notifications); absent without a notifier.
void WriteNotifications(Buffer& out, const std::vector<NotificationCount>& counts) {
  if (counts.empty()) {
    return;
  }
  constexpr std::string_view kName = "gpufleet_notifications_total";
  WriteFamily(out,
              {kName,
               Kind::kCounter,
               "Notifications delivered since the server started, by channel (webhook, "
               "email) and outcome (sent, failed, dropped)."});
  std::string labels;
  for (const NotificationCount& c : counts) {
    labels.clear();
    AppendLabel(labels, "channel", c.channel);
    AppendLabel(labels, "outcome", c.outcome);
    WriteSample(out, kName, labels, static_cast<double>(c.count));
  }
}

void WriteClusterFamilies(Buffer& out, const ClusterStats& stats) {
  WriteColumns(out,
               kStateColumns,
               RowsOf(stats.jobs_by_state),
               LabelRows(stats.jobs_by_state, "state", [](const StateCount& s) {
                 return std::string_view{s.first};
               }));
  WriteColumns(out,
               kQueueColumns,
               RowsOf(stats.queue),
               LabelRows(stats.queue, "priority", [](const QueueStats& q) {
                 return std::string_view{q.priority};
               }));
  WriteWaitHistogram(out, stats);
  WriteColumns(
      out,
      kPassColumns,
      RowsOf(stats.passes),
      LabelRows(stats.passes, "kind", [](const PassStats& p) { return std::string_view{p.kind}; }));
  WriteColumns(out,
               kTeamColumns,
               RowsOf(stats.teams),
               LabelRows(stats.teams, "team", [](const TeamStats& t) { return TeamName(t.team); }));
  WriteColumns(
      out, kClusterColumns, std::vector<const ClusterStats*>{&stats}, std::vector<std::string>(1));
  WriteNotifications(out, stats.notifications);
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  AppendEscaped(out, value);
  return out;
}

std::string RenderApiServerMetrics(const ApiServerCounts& counts) {
  Buffer out;
  constexpr std::string_view kRefusals = "gpufleet_api_refusals_total";
  WriteFamily(out,
              {kRefusals,
               Kind::kCounter,
               "Connections, watches and requests the API server refused since it "
               "started, by the limit that refused them ([api] settings)."});
  const std::array<std::pair<std::string_view, std::int64_t>, 5> refusals = {{
      {"max_connections", counts.connections_refused},
      {"connections_per_client", counts.client_connections_refused},
      {"max_watches", counts.watches_refused},
      {"watches_per_client", counts.client_watches_refused},
      {"rate_limit", counts.requests_limited},
  }};
  std::string labels;
  for (const auto& [limit, count] : refusals) {
    labels.clear();
    AppendLabel(labels, "limit", limit);
    WriteSample(out, kRefusals, labels, static_cast<double>(count));
  }
  constexpr std::string_view kAcceptErrors = "gpufleet_api_accept_errors_total";
  WriteFamily(out,
              {kAcceptErrors,
               Kind::kCounter,
               "Failed accepts of API connections since the server started (e.g. no file "
               "descriptor left); each pauses accepting, 100 ms doubling to 1 s."});
  WriteSample(out, kAcceptErrors, {}, static_cast<double>(counts.accept_errors));
  constexpr std::string_view kOpen = "gpufleet_api_open";
  WriteFamily(out,
              {kOpen,
               Kind::kGauge,
               "Open API connections and watches (agent command streams included), by "
               "listener."});
  const std::array<std::tuple<std::string_view, std::string_view, int>, 4> open = {{
      {"connections", "socket", counts.socket_connections},
      {"connections", "tcp", counts.tcp_connections},
      {"watches", "socket", counts.socket_watches},
      {"watches", "tcp", counts.tcp_watches},
  }};
  for (const auto& [resource, listener, count] : open) {
    labels.clear();
    AppendLabel(labels, "resource", resource);
    AppendLabel(labels, "listener", listener);
    WriteSample(out, kOpen, labels, static_cast<double>(count));
  }
  return fmt::to_string(out);
}

std::string RenderPrometheus(const TelemetrySnapshot& telemetry, const ClusterStats& stats) {
  Buffer out;
  WriteGpuFamilies(out, telemetry);
  WriteJobFamilies(out, telemetry.jobs);
  WriteClusterFamilies(out, stats);
  return fmt::to_string(out);
}

}  // namespace gf
