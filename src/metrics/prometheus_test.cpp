// RenderPrometheus: names, types, labels, escaping, omitted readings, job labels, histogram,
// counts. The output is parsed back (a small parser of the text format, below) so the tests
// check values and labels rather than exact bytes; format rules (HELP/TYPE before samples,
// families contiguous) are checked line by line. promtool_test.sh runs promtool on top.
#include "metrics/prometheus.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "metrics/example_telemetry.h"

namespace gf {
namespace {

struct Series {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses `name{a="b",...} value` (label values unescaped). Fails the test on malformed lines.
Series ParseLine(const std::string& line) {
  Series s;
  std::size_t i = line.find_first_of("{ ");
  s.name = line.substr(0, i);
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      const std::size_t eq = line.find('=', i);
      const std::string key = line.substr(i, eq - i);
      EXPECT_EQ(line[eq + 1], '"') << line;
      std::string value;
      for (i = eq + 2; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\') {
          ++i;
          value += line[i] == 'n' ? '\n' : line[i];
        } else {
          value += line[i];
        }
      }
      EXPECT_TRUE(s.labels.emplace(key, value).second) << "duplicate label " << key << ": " << line;
      ++i;  // closing quote
      if (i < line.size() && line[i] == ',') {
        ++i;
      }
    }
    ++i;  // closing brace
  }
  EXPECT_EQ(line[i], ' ') << line;
  s.value = std::stod(line.substr(i + 1));
  return s;
}

std::vector<Series> Parse(const std::string& text) {
  std::vector<Series> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') {
      out.push_back(ParseLine(line));
    }
  }
  return out;
}

// The series named `name` whose labels include every pair of `with`.
std::vector<Series> Select(const std::vector<Series>& all,
                           const std::string& name,
                           const std::map<std::string, std::string>& with = {}) {
  std::vector<Series> out;
  for (const Series& s : all) {
    const bool match = std::all_of(with.begin(), with.end(), [&](const auto& kv) {
      const auto it = s.labels.find(kv.first);
      return it != s.labels.end() && it->second == kv.second;
    });
    if (s.name == name && match) {
      out.push_back(s);
    }
  }
  return out;
}

// The value of the one series `name` with labels `with`; fails if there is not exactly one.
double ValueOf(const std::vector<Series>& all,
               const std::string& name,
               const std::map<std::string, std::string>& with = {}) {
  const auto found = Select(all, name, with);
  EXPECT_EQ(found.size(), 1u) << name;
  return found.empty() ? -1 : found[0].value;
}

bool HasLabel(const Series& s, const std::string& key) {
  return s.labels.count(key) > 0;
}

GpuView MinimalGpu(int index, const std::string& uuid) {
  GpuView view;
  view.node = NodeId("node-a");
  view.gpu.index = index;
  view.gpu.uuid = GpuUuid(uuid);
  view.gpu.model = "H100-80GB";
  GpuSample sample;
  sample.uuid = view.gpu.uuid;
  sample.memory_total_mib = 80'000;
  sample.memory_used_mib = 1'234;
  sample.memory_free_mib = 78'766;
  view.sample = sample;
  return view;
}

std::string Render(const TelemetrySnapshot& telemetry, const ClusterStats& stats = {}) {
  return RenderPrometheus(telemetry, stats);
}

TEST(PrometheusTest, GpuSeriesHaveDcgmExporterNamesLabelsAndUnits) {
  TelemetrySnapshot t = ExampleTelemetry(4);
  GpuSample& s = *t.gpus[2].sample;  // node-0, index 2, unallocated
  s.power_mw = 251'500;
  s.energy_mj = 9'007'199'254;
  s.util_gpu_pct = 37;
  s.sm_clock_mhz = 1'410;
  const auto all = Parse(Render(t));
  const std::map<std::string, std::string> gpu2 = {{"gpu", "2"},
                                                   {"UUID", t.gpus[2].gpu.uuid.value()},
                                                   {"device", "nvidia2"},
                                                   {"modelName", "H100-80GB"},
                                                   {"Hostname", "node-0"}};
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_POWER_USAGE", gpu2), 251.5);  // W, from mW
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu2), 9'007'199'254.0);  // mJ
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_GPU_UTIL", gpu2), 37);
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_SM_CLOCK", gpu2), 1'410);
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_FB_USED", gpu2), static_cast<double>(s.memory_used_mib));
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_FB_FREE", gpu2), static_cast<double>(s.memory_free_mib));
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", gpu2),
            static_cast<double>(*s.ecc.aggregate_corrected));
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", gpu2),
            static_cast<double>(s.remapped_rows->correctable));
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_power_limit_watts", {{"gpu", "2"}}), 700);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_pcie_tx_bytes_per_second", {{"gpu", "2"}}),
            static_cast<double>(*s.pcie_tx_kbps) * 1024);
  // Every DCGM series carries exactly dcgm-exporter's five labels on an unallocated GPU.
  for (const Series& series : all) {
    if (series.name.rfind("DCGM_", 0) == 0) {
      std::set<std::string> keys;
      for (const auto& [key, value] : series.labels) {
        keys.insert(key);
      }
      const bool allocated = keys.count("job") > 0;
      EXPECT_EQ(keys.size(), allocated ? 8u : 5u) << series.name;
      EXPECT_TRUE(keys.count("modelName") && keys.count("device") && keys.count("UUID"));
    }
  }
}

TEST(PrometheusTest, EveryFamilyDeclaredOnceBeforeItsContiguousSamples) {
  const std::string text = Render(ExampleTelemetry(16, 1), ExampleClusterStats());
  std::istringstream in(text);
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> help;
  std::set<std::string> finished;  // families whose samples ended
  std::string current;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string hash, keyword, name, type;
    if (line.rfind("# HELP ", 0) == 0) {
      words >> hash >> keyword >> name;
      EXPECT_TRUE(help.insert(name).second) << "second HELP for " << name;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      words >> hash >> keyword >> name >> type;
      EXPECT_TRUE(help.count(name)) << "TYPE before HELP for " << name;
      EXPECT_TRUE(types.emplace(name, type).second) << "second TYPE for " << name;
      continue;
    }
    std::string family = ParseLine(line).name;
    for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
      const std::string base =
          family.substr(0, family.size() - std::min(family.size(), suffix.size()));
      if (family.ends_with(suffix) && types.count(base) && types[base] == "histogram") {
        family = base;
      }
    }
    ASSERT_TRUE(types.count(family)) << "sample before its TYPE: " << line;
    if (family != current) {
      EXPECT_FALSE(finished.count(family)) << "samples of " << family << " not contiguous";
      finished.insert(current);
      current = family;
    }
  }
  EXPECT_EQ(types["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"], "counter");
  EXPECT_EQ(types["DCGM_FI_DEV_XID_ERRORS"], "gauge");
  EXPECT_EQ(types["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"], "counter");
  EXPECT_EQ(types["gpufleet_queue_wait_seconds"], "histogram");
  EXPECT_EQ(types["gpufleet_team_gpu_seconds_total"], "counter");
  EXPECT_EQ(types["gpufleet_job_gpu_energy_joules_total"], "counter");
  EXPECT_EQ(types.size(), help.size());
}

TEST(PrometheusTest, EmptySnapshotDeclaresGpuFamiliesWithoutSeries) {
  const std::string text = Render({});
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"), std::string::npos);
  EXPECT_TRUE(Select(Parse(text), "DCGM_FI_DEV_GPU_UTIL").empty());
  EXPECT_TRUE(Select(Parse(text), "gpufleet_gpu_health").empty());
}

TEST(PrometheusTest, MissingReadingsAreOmittedNotZero) {
  TelemetrySnapshot t;
  t.gpus.push_back(MinimalGpu(0, "GPU-min"));  // only the framebuffer figures are set
  const auto all = Parse(Render(t));
  for (const char* name : {"DCGM_FI_DEV_GPU_UTIL",
                           "DCGM_FI_DEV_MEM_COPY_UTIL",
                           "DCGM_FI_DEV_GPU_TEMP",
                           "DCGM_FI_DEV_MEMORY_TEMP",
                           "DCGM_FI_DEV_POWER_USAGE",
                           "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                           "DCGM_FI_DEV_SM_CLOCK",
                           "DCGM_FI_DEV_MEM_CLOCK",
                           "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                           "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
                           "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
                           "DCGM_FI_DEV_ROW_REMAP_FAILURE",
                           "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                           "gpufleet_gpu_power_limit_watts",
                           "gpufleet_gpu_fan_speed_percent",
                           "gpufleet_gpu_performance_state",
                           "gpufleet_gpu_pcie_rx_bytes_per_second",
                           "gpufleet_gpu_throttle_reason"}) {
    EXPECT_TRUE(Select(all, name).empty()) << name << " exported without a reading";
  }
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_FB_USED"), 1'234);
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_XID_ERRORS"), 0);  // no XID: 0, as DCGM reports it
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_health"), 0);
}

// Issue #7: each MIG device has its memory series, by MIG uuid and profile beside its GPU's
// labels; a figure the driver did not give is omitted.
TEST(PrometheusTest, MigDevicesHaveTheirOwnMemorySeries) {
  TelemetrySnapshot t;
  t.gpus.push_back(MinimalGpu(0, "GPU-mig"));
  GpuSample& sample = *t.gpus[0].sample;
  sample.mig_enabled = true;
  sample.mig = {MigSample{.instance = MigInstance{.profile = "3g.40gb", .uuid = GpuUuid("MIG-a")},
                          .memory_used_mib = 1'000,
                          .memory_total_mib = 40'192},
                MigSample{.instance = MigInstance{.profile = "1g.10gb", .uuid = GpuUuid("MIG-b")},
                          .memory_used_mib = std::nullopt,
                          .memory_total_mib = 9'856}};
  const auto all = Parse(Render(t));
  EXPECT_EQ(ValueOf(all, "gpufleet_mig_memory_used_bytes", {{"mig_uuid", "MIG-a"}}),
            1'000.0 * 1024 * 1024);
  const auto used = Select(all, "gpufleet_mig_memory_used_bytes");
  ASSERT_EQ(used.size(), 1u);  // MIG-b's use is unknown: no series
  EXPECT_EQ(used[0].labels.at("UUID"), "GPU-mig");
  EXPECT_EQ(used[0].labels.at("profile"), "3g.40gb");
  EXPECT_EQ(ValueOf(all, "gpufleet_mig_memory_total_bytes", {{"mig_uuid", "MIG-b"}}),
            9'856.0 * 1024 * 1024);
  EXPECT_TRUE(Select(Parse(Render({})), "gpufleet_mig_memory_used_bytes").empty());
}

TEST(PrometheusTest, XidErrorsIsTheLastXidTheGpuReported) {
  TelemetrySnapshot t;
  t.gpus.push_back(MinimalGpu(0, "GPU-x"));
  t.gpus[0].last_xid = XidEvent{79, {}};  // from an earlier sample: this one carries none
  EXPECT_EQ(ValueOf(Parse(Render(t)), "DCGM_FI_DEV_XID_ERRORS"), 79);
}

TEST(PrometheusTest, LostGpuExportsOnlyItsHealth) {
  const TelemetrySnapshot t = ExampleTelemetry(4, /*lost_gpus=*/1);
  const std::string lost_uuid = t.gpus[3].gpu.uuid.value();
  std::vector<Series> of_lost;
  for (const Series& s : Parse(Render(t))) {
    if (s.labels.count("UUID") && s.labels.at("UUID") == lost_uuid) {
      of_lost.push_back(s);
    }
  }
  ASSERT_EQ(of_lost.size(), 1u) << "first: " << (of_lost.empty() ? "" : of_lost[0].name);
  EXPECT_EQ(of_lost[0].name, "gpufleet_gpu_health");
  EXPECT_EQ(of_lost[0].value, 2);
  EXPECT_EQ(of_lost[0].labels.at("cause"), t.gpus[3].gpu.health_cause);
}

TEST(PrometheusTest, HealthValuesAndCauseLabel) {
  TelemetrySnapshot t;
  t.gpus = {MinimalGpu(0, "GPU-ok"), MinimalGpu(1, "GPU-deg"), MinimalGpu(2, "GPU-fail")};
  t.gpus[1].gpu.health = GpuHealth::kDegraded;
  t.gpus[1].gpu.health_cause = "temperature 93 C >= 90 C";
  t.gpus[2].gpu.health = GpuHealth::kFailed;
  t.gpus[2].gpu.health_cause = "remap failure";
  const auto all = Parse(Render(t));
  const auto ok = Select(all, "gpufleet_gpu_health", {{"UUID", "GPU-ok"}});
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].value, 0);
  EXPECT_FALSE(HasLabel(ok[0], "cause"));
  EXPECT_EQ(
      ValueOf(
          all, "gpufleet_gpu_health", {{"UUID", "GPU-deg"}, {"cause", "temperature 93 C >= 90 C"}}),
      1);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_health", {{"UUID", "GPU-fail"}, {"cause", "remap failure"}}),
            2);
}

TEST(PrometheusTest, JobLabelsOnlyOnAllocatedGpusAndNotOnHealth) {
  TelemetrySnapshot t;
  t.gpus = {MinimalGpu(0, "GPU-free"), MinimalGpu(1, "GPU-held")};
  t.gpus[1].assignments = {GpuAssignment{JobId(42), "alice", ""}};
  t.gpus[1].sample->power_limit_mw = 400'000;
  const auto all = Parse(Render(t));
  const auto held = Select(all, "DCGM_FI_DEV_FB_USED", {{"UUID", "GPU-held"}});
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].labels.at("job"), "42");
  EXPECT_EQ(held[0].labels.at("user"), "alice");
  EXPECT_EQ(held[0].labels.at("team"), "default");  // "" is the default team
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_power_limit_watts", {{"UUID", "GPU-held"}, {"job", "42"}}),
            400);
  for (const Series& s : all) {
    const bool free_gpu = s.labels.count("UUID") && s.labels.at("UUID") == "GPU-free";
    const bool identity_only =
        s.name == "gpufleet_gpu_health" || s.name == "gpufleet_gpu_condition";
    if (free_gpu || identity_only) {
      EXPECT_FALSE(HasLabel(s, "job") || HasLabel(s, "user") || HasLabel(s, "team")) << s.name;
    }
  }
}

// Kubernetes mode: dcgm-exporter's pod labels on every GPU series of a cluster whose GPUs pods
// hold: the pod's and its container's on a GPU it holds, empty elsewhere (one label set per
// series); none at all on a cluster without pods.
TEST(PrometheusTest, PodLabelsAsDcgmExporterNamesThemWhenPodsHoldGpus) {
  TelemetrySnapshot t;
  t.gpus = {MinimalGpu(0, "GPU-pod"), MinimalGpu(1, "GPU-free")};
  const std::string before = Render(t);
  for (const Series& s : Parse(before)) {
    EXPECT_FALSE(HasLabel(s, "namespace") || HasLabel(s, "pod") || HasLabel(s, "container"))
        << s.name;
  }
  t.gpus[0].assignments = {GpuAssignment{.job = JobId(16684241787773),
                                         .user = "research",
                                         .team = "research",
                                         .pod_namespace = "research",
                                         .pod = "train-0",
                                         .container = "trainer"}};
  const auto all = Parse(Render(t));
  const auto held = Select(all, "DCGM_FI_DEV_FB_USED", {{"UUID", "GPU-pod"}});
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].labels.at("namespace"), "research");
  EXPECT_EQ(held[0].labels.at("pod"), "train-0");
  EXPECT_EQ(held[0].labels.at("container"), "trainer");
  EXPECT_EQ(held[0].labels.at("job"), "16684241787773");
  const auto free_gpu = Select(all, "DCGM_FI_DEV_FB_USED", {{"UUID", "GPU-free"}});
  ASSERT_EQ(free_gpu.size(), 1u);
  EXPECT_EQ(free_gpu[0].labels.at("namespace"), "");
  EXPECT_EQ(free_gpu[0].labels.at("pod"), "");
  EXPECT_EQ(free_gpu[0].labels.at("container"), "");
  EXPECT_FALSE(HasLabel(free_gpu[0], "job"));
}

// A shared GPU's series are copied per holder, each with the GPU's value and the holder's
// job/user/team (as dcgm-exporter's HPC job mapping does); health and conditions stay one.
TEST(PrometheusTest, SharedGpuHasOneSeriesPerHolder) {
  TelemetrySnapshot t;
  t.gpus = {MinimalGpu(0, "GPU-shared"), MinimalGpu(1, "GPU-whole")};
  t.gpus[0].assignments = {
      GpuAssignment{
          .job = JobId(12), .user = "ann", .share_milli = 250, .memory_limit_mib = 20'480},
      GpuAssignment{.job = JobId(13), .user = "bo", .team = "nlp", .share_milli = 500}};
  t.gpus[0].sample->power_mw = 300'000;
  t.gpus[0].last_xid = XidEvent{31, {}};
  t.gpus[0].conditions = {"gpu_memory_over_limit"};
  t.gpus[1].assignments = {GpuAssignment{.job = JobId(7), .user = "cy"}};
  const auto all = Parse(Render(t));

  const auto power = Select(all, "DCGM_FI_DEV_POWER_USAGE", {{"UUID", "GPU-shared"}});
  ASSERT_EQ(power.size(), 2u);
  EXPECT_EQ(power[0].labels.at("job"), "12");
  EXPECT_EQ(power[0].labels.at("user"), "ann");
  EXPECT_EQ(power[0].labels.at("team"), "default");
  EXPECT_EQ(power[1].labels.at("job"), "13");
  EXPECT_EQ(power[1].labels.at("team"), "nlp");
  EXPECT_EQ(power[0].value, 300);  // the GPU's reading, not a split of it
  EXPECT_EQ(power[1].value, 300);
  EXPECT_EQ(Select(all, "DCGM_FI_DEV_FB_USED", {{"UUID", "GPU-shared"}}).size(), 2u);
  EXPECT_EQ(ValueOf(all, "DCGM_FI_DEV_XID_ERRORS", {{"UUID", "GPU-shared"}, {"job", "13"}}), 31);
  EXPECT_EQ(Select(all, "DCGM_FI_DEV_FB_USED", {{"UUID", "GPU-whole"}}).size(), 1u);

  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_job_share", {{"UUID", "GPU-shared"}, {"job", "12"}}), 0.25);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_job_share", {{"UUID", "GPU-shared"}, {"job", "13"}}), 0.5);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_job_share", {{"UUID", "GPU-whole"}, {"job", "7"}}), 1);
  const auto limits = Select(all, "gpufleet_gpu_job_memory_limit_bytes");
  ASSERT_EQ(limits.size(), 1u);  // only job 12 has a limit
  EXPECT_EQ(limits[0].labels.at("job"), "12");
  EXPECT_EQ(limits[0].value, 20'480.0 * 1024 * 1024);

  EXPECT_EQ(Select(all, "gpufleet_gpu_health", {{"UUID", "GPU-shared"}}).size(), 1u);
  EXPECT_EQ(ValueOf(all,
                    "gpufleet_gpu_condition",
                    {{"UUID", "GPU-shared"}, {"condition", "gpu_memory_over_limit"}}),
            1);
  EXPECT_EQ(ValueOf(all,
                    "gpufleet_gpu_condition",
                    {{"UUID", "GPU-whole"}, {"condition", "gpu_memory_over_limit"}}),
            0);
}

TEST(PrometheusTest, LabelValuesAreEscaped) {
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"), R"(a\\b\"c)");
  EXPECT_EQ(EscapeLabelValue("two\nlines"), R"(two\nlines)");
  EXPECT_EQ(EscapeLabelValue("équipe ✓ 😀"), "équipe ✓ 😀");  // valid UTF-8 kept as is
  EXPECT_EQ(EscapeLabelValue("bad\xff"
                             "byte"),
            "bad\xEF\xBF\xBD"
            "byte");
  EXPECT_EQ(EscapeLabelValue("cut\xE2\x82"), "cut\xEF\xBF\xBD\xEF\xBF\xBD");  // truncated
  EXPECT_EQ(EscapeLabelValue("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");        // overlong '/'
  EXPECT_EQ(EscapeLabelValue("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate

  TelemetrySnapshot t;
  t.gpus.push_back(MinimalGpu(0, "GPU-e"));
  t.gpus[0].gpu.model = "weird \"model\"\\x";
  t.gpus[0].assignments = {GpuAssignment{JobId(1), "bob", "team\nname"}};
  const std::string text = Render(t);
  EXPECT_NE(text.find(R"(modelName="weird \"model\"\\x")"), std::string::npos);
  EXPECT_NE(text.find(R"(team="team\nname")"), std::string::npos);
  const auto held = Select(Parse(text), "DCGM_FI_DEV_FB_USED");
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].labels.at("modelName"), "weird \"model\"\\x");  // round-trips
}

TEST(PrometheusTest, ThrottleReasonsOneSeriesPerReason) {
  TelemetrySnapshot t;
  t.gpus.push_back(MinimalGpu(0, "GPU-t"));
  t.gpus[0].sample->throttle_reasons = 0x8U | 0x40U | 0x1000U;
  const auto all = Parse(Render(t));
  EXPECT_EQ(Select(all, "gpufleet_gpu_throttle_reason").size(), 10u);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_throttle_reason", {{"reason", "hw_slowdown"}}), 1);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_throttle_reason", {{"reason", "hw_thermal_slowdown"}}), 1);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_throttle_reason", {{"reason", "other"}}), 1);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_throttle_reason", {{"reason", "gpu_idle"}}), 0);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_throttle_reason", {{"reason", "sw_power_cap"}}), 0);
}

TEST(PrometheusTest, ConditionsAreZeroOrOne) {
  TelemetrySnapshot t;
  t.gpus.push_back(MinimalGpu(0, "GPU-c"));
  t.gpus[0].conditions = {"allocated_no_process", "future_kind"};
  const auto all = Parse(Render(t));
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_condition", {{"condition", "allocated_no_process"}}), 1);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_condition", {{"condition", "unallocated_process"}}), 0);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpu_condition", {{"condition", "future_kind"}}), 1);
}

TEST(PrometheusTest, WaitHistogramIsCumulativeAndEndsAtInf) {
  ClusterStats stats;
  stats.wait_bucket_bounds = {0.5, 10, 60};
  stats.wait_bucket_counts = {2, 5, 5};
  stats.wait_count = 7;
  stats.wait_sum_seconds = 1234.5;
  const std::string text = Render({}, stats);
  EXPECT_NE(text.find("gpufleet_queue_wait_seconds_bucket{le=\"0.5\"} 2\n"
                      "gpufleet_queue_wait_seconds_bucket{le=\"10\"} 5\n"
                      "gpufleet_queue_wait_seconds_bucket{le=\"60\"} 5\n"
                      "gpufleet_queue_wait_seconds_bucket{le=\"+Inf\"} 7\n"
                      "gpufleet_queue_wait_seconds_sum 1234.5\n"
                      "gpufleet_queue_wait_seconds_count 7\n"),
            std::string::npos)
      << text;
}

// The controller's group commit: commits, their time, and the requests that shared them.
TEST(PrometheusTest, CommitCountersAreRendered) {
  ClusterStats stats;
  stats.commits = 40;
  stats.commit_seconds = 0.25;
  stats.committed_requests = 130;
  const auto all = Parse(Render({}, stats));
  EXPECT_EQ(ValueOf(all, "gpufleet_store_commits_total"), 40);
  EXPECT_EQ(ValueOf(all, "gpufleet_store_commit_seconds_total"), 0.25);
  EXPECT_EQ(ValueOf(all, "gpufleet_store_committed_requests_total"), 130);
}

TEST(PrometheusTest, ClusterJobAndTeamCounts) {
  const TelemetrySnapshot t = ExampleTelemetry(8);
  const ClusterStats stats = ExampleClusterStats();
  const auto all = Parse(Render(t, stats));
  EXPECT_EQ(ValueOf(all, "gpufleet_jobs", {{"state", "RUNNING"}}), 40);
  EXPECT_EQ(Select(all, "gpufleet_jobs").size(), stats.jobs_by_state.size());
  EXPECT_EQ(ValueOf(all, "gpufleet_queue_pending_jobs", {{"priority", "normal"}}), 9);
  EXPECT_EQ(ValueOf(all, "gpufleet_queue_oldest_wait_seconds", {{"priority", "high"}}), 30.5);
  EXPECT_EQ(ValueOf(all, "gpufleet_team_allocated_gpus", {{"team", "default"}}), 4);
  EXPECT_EQ(ValueOf(all, "gpufleet_scheduler_passes_total", {{"kind", "incremental"}}), 4'000);
  EXPECT_EQ(ValueOf(all, "gpufleet_scheduler_pass_seconds_total", {{"kind", "full"}}), 0.75);
  EXPECT_EQ(ValueOf(all, "gpufleet_team_gpu_seconds_total", {{"team", "ml-research"}}),
            5'000'000.5);
  EXPECT_EQ(ValueOf(all, "gpufleet_team_pending_jobs", {{"team", "ml-research"}}), 9);
  EXPECT_EQ(ValueOf(all, "gpufleet_nodes"), 5);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpus"), 40);
  EXPECT_EQ(ValueOf(all, "gpufleet_gpus_allocated"), 40);
  EXPECT_EQ(
      ValueOf(all, "gpufleet_notifications_total", {{"channel", "webhook"}, {"outcome", "sent"}}),
      12);
  EXPECT_EQ(
      ValueOf(all, "gpufleet_notifications_total", {{"channel", "webhook"}, {"outcome", "failed"}}),
      1);
  EXPECT_EQ(Select(all, "gpufleet_notifications_total").size(), 3u);
  // Per job, from the telemetry: 8 GPUs, odd ones allocated two per job -> jobs 1 and 2.
  ASSERT_EQ(t.jobs.size(), 2u);
  const JobLive& job = t.jobs[1];
  const std::map<std::string, std::string> labels = {
      {"job", "2"}, {"user", job.user}, {"team", job.team.empty() ? "default" : job.team}};
  EXPECT_EQ(ValueOf(all, "gpufleet_job_gpus", labels), 2);
  EXPECT_EQ(ValueOf(all, "gpufleet_job_gpu_utilization_percent", labels), job.util_now_pct);
  EXPECT_EQ(ValueOf(all, "gpufleet_job_gpu_memory_used_bytes", labels),
            static_cast<double>(job.memory_now_mib) * 1024 * 1024);
  EXPECT_EQ(ValueOf(all, "gpufleet_job_gpu_energy_joules_total", labels),
            static_cast<double>(job.usage.energy_mj) / 1000);
  EXPECT_EQ(Select(all, "gpufleet_job_gpus").size(), 2u);
}

TEST(PrometheusTest, NumbersRoundTrip) {
  ClusterStats stats;
  stats.wait_sum_seconds = 0.1 + 0.2;  // not representable exactly: must survive text
  stats.queue = {{"low", 0, 1e300}};
  const auto all = Parse(Render({}, stats));
  EXPECT_EQ(ValueOf(all, "gpufleet_queue_wait_seconds_sum"), 0.1 + 0.2);
  EXPECT_EQ(ValueOf(all, "gpufleet_queue_oldest_wait_seconds"), 1e300);
}

}  // namespace
}  // namespace gf
