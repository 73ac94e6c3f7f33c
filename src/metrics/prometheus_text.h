// Internal to gf_metrics: the pieces of the Prometheus text format that prometheus.cpp (the
// gpufleet_* job, team, queue and cluster families) and prometheus_gpu.cpp (the GPU families)
// both write with: one buffer, family headers, samples, label lists, table columns. Include it
// from those two alone.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "monitor/telemetry.h"

namespace gf::exposition {

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

// Appends `name="value"` to a label list (the text between the braces).
void AppendLabel(std::string& labels, std::string_view name, std::string_view value);

// ClusterStats and the assignment use "" for the user's default team.
std::string_view TeamName(std::string_view team);

void WriteFamily(Buffer& out, const Family& family);
// Numbers as the format spells them: shortest round-trip decimal, NaN, +Inf, -Inf.
void WriteNumber(Buffer& out, double value);
// `name{labels,extra} value`; `labels` and `extra` are label lists, either may be empty.
void WriteSample(Buffer& out,
                 std::string_view name,
                 std::string_view labels,
                 double value,
                 std::string_view extra = {});

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

// The GPU families (prometheus_gpu.cpp).
void WriteGpuFamilies(Buffer& out, const TelemetrySnapshot& telemetry);

}  // namespace gf::exposition
