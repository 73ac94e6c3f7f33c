// docs/openapi.json and the server's route table describe the same API, in both directions;
// its object schemas name exactly the fields json_mapping.cpp writes.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/admin_json.h"
#include "api/json_mapping.h"
#include "api/report_json.h"
#include "api/routes.h"

namespace gf {
namespace {

nlohmann::json LoadSpec() {
  std::ifstream in(GF_OPENAPI_PATH);
  EXPECT_TRUE(in.good()) << "cannot open " << GF_OPENAPI_PATH;
  return nlohmann::json::parse(in);
}

TEST(OpenApiTest, DescribesExactlyTheRouteTable) {
  const nlohmann::json spec = LoadSpec();
  EXPECT_EQ(spec["openapi"].get<std::string>().rfind("3.0", 0), 0u);
  std::set<std::pair<std::string, std::string>> documented;
  for (const auto& [path, item] : spec["paths"].items()) {
    for (const auto& [method, op] : item.items()) {
      if (method == "parameters") {
        continue;
      }
      std::string upper = method;
      std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) {
        return static_cast<char>(std::toupper(c));
      });
      documented.emplace(upper, path);
      EXPECT_TRUE(op.contains("responses")) << method << " " << path;
      EXPECT_TRUE(op.contains("operationId")) << method << " " << path;
    }
  }
  std::set<std::pair<std::string, std::string>> served;
  for (const RouteInfo& route : RouteTable()) {
    served.emplace(std::string(route.method), std::string(route.path));
  }
  for (const auto& route : served) {
    EXPECT_TRUE(documented.count(route))
        << "not in openapi.json: " << route.first << " " << route.second;
  }
  for (const auto& route : documented) {
    EXPECT_TRUE(served.count(route))
        << "documented but not served: " << route.first << " " << route.second;
  }
}

TEST(OpenApiTest, ErrorBodyIsDescribed) {
  const nlohmann::json spec = LoadSpec();
  const auto& error = spec["components"]["schemas"]["Error"];
  EXPECT_TRUE(error["properties"].contains("error"));
}

// The properties of a component schema, merged over its allOf parts (GpuStatus = Gpu + more).
nlohmann::json SchemaProperties(const nlohmann::json& spec, const std::string& name) {
  const nlohmann::json& schema = spec["components"]["schemas"][name];
  nlohmann::json props = schema.value("properties", nlohmann::json::object());
  for (const auto& part : schema.value("allOf", nlohmann::json::array())) {
    const nlohmann::json more =
        part.contains("$ref") ? SchemaProperties(spec,
                                                 part["$ref"].get<std::string>().substr(
                                                     std::string("#/components/schemas/").size()))
                              : part.value("properties", nlohmann::json::object());
    props.update(more);
  }
  return props;
}

// The documented properties `props` are exactly the keys of `mapped`, and every key that is
// null in `mapped` is nullable there. (Explanation's parts are described inline, the rest as
// named schemas.)
void ExpectInlineMatches(const nlohmann::json& props,
                         const nlohmann::json& mapped,
                         const std::string& name) {
  for (const auto& [key, value] : mapped.items()) {
    ASSERT_TRUE(props.contains(key)) << name << "." << key << " is written but not documented";
    if (value.is_null()) {
      EXPECT_TRUE(props[key].value("nullable", false)) << name << "." << key << " can be null";
    }
  }
  for (const auto& [key, value] : props.items()) {
    EXPECT_TRUE(mapped.contains(key)) << name << "." << key << " is documented but not written";
  }
}

// The schema `name` lists exactly the keys of `mapped`, nullable where they are null.
void ExpectSchemaMatches(const nlohmann::json& spec,
                         const std::string& name,
                         const nlohmann::json& mapped) {
  const nlohmann::json props = SchemaProperties(spec, name);
  ASSERT_FALSE(props.empty()) << "no schema " << name;
  ExpectInlineMatches(props, mapped, name);
}

TEST(OpenApiTest, SchemasNameTheMappedFields) {
  const nlohmann::json spec = LoadSpec();
  GpuSample sample;  // nothing optional known: every nullable field is null
  sample.lost = true;
  GpuSample full;
  full.remapped_rows = RemappedRows{};
  full.xids = {XidEvent{}};
  full.processes = {GpuProcessSample{}};
  full.mig = {MigSample{}};
  GpuStatus status;
  status.sample = full;
  status.holders = {GpuHolder{
      .job = JobId(1), .user = "ann", .team = "", .share_milli = 250, .memory_limit_mib = 1024}};
  Job job;
  job.usage = JobUsage{};
  for (const GpuSample& s : {sample, full}) {
    ExpectSchemaMatches(spec, "GpuSample", GpuSampleToJson(s));
  }
  const nlohmann::json mapped = GpuSampleToJson(full);
  ExpectSchemaMatches(spec, "EccCounters", mapped["ecc"]);
  ExpectSchemaMatches(spec, "RemappedRows", mapped["remapped_rows"]);
  ExpectSchemaMatches(spec, "XidEvent", mapped["xids"][0]);
  ExpectSchemaMatches(spec, "GpuProcess", mapped["processes"][0]);
  ExpectSchemaMatches(spec, "MigSample", mapped["mig"][0]);
  Gpu mig_gpu;
  mig_gpu.mig_instances = {MigInstance{}};
  ExpectSchemaMatches(spec, "MigInstance", GpuToJson(mig_gpu)["mig_instances"][0]);
  ExpectSchemaMatches(spec, "GpuStatus", GpuStatusToJson(status));
  ExpectSchemaMatches(spec, "GpuStatus", GpuStatusToJson(GpuStatus{}));
  ExpectSchemaMatches(spec, "GpuHolder", GpuStatusToJson(status)["holders"][0]);
  ExpectSchemaMatches(spec, "Job", JobToJson(Job{}));
  ExpectSchemaMatches(spec, "Job", JobToJson(job));
  ExpectSchemaMatches(spec, "JobRow", JobRowToJson(job));
  ExpectSchemaMatches(spec, "JobUsage", JobUsageToJson(JobUsage{}));
  ExpectSchemaMatches(spec, "EnergyCharge", EnergyChargeToJson(EnergyCharge{}));
  ExpectSchemaMatches(spec,
                      "EnergyCharge",
                      EnergyChargeToJson(ChargeFor(
                          3'600'000, EnergyPrice{.price_per_kwh = 0.3, .co2_g_per_kwh = 400})));
  ExpectSchemaMatches(spec, "Node", NodeToJson(Node{}));
  ExpectSchemaMatches(spec, "Event", EventToJson(Event{}));
  ExpectSchemaMatches(spec, "JobRun", JobRunToJson(JobRun{}));
  const nlohmann::json run = JobRunToJson(JobRun{.node = NodeId("n1"),
                                                 .gpus = {RunGpu{.index = 0}},
                                                 .start = Time{},
                                                 .end = Time{},
                                                 .end_state = JobState::kPreempted});
  ExpectSchemaMatches(spec, "JobRun", run);
  ExpectInlineMatches(
      spec["components"]["schemas"]["JobRun"]["properties"]["gpus"]["items"]["properties"],
      run["gpus"][0],
      "JobRun.gpus");
  ExpectSchemaMatches(spec, "Subscription", SubscriptionToJson(Subscription{}));
  ExpectSchemaMatches(
      spec,
      "Subscription",
      SubscriptionToJson(Subscription{
          .scope = SubscriptionScope::kTeam, .team = "cv", .kinds = {NotifyKind::kJobEnd}}));
  const QuotaReport quota{.teams = {TeamQuota{}}, .users = {UserQuota{}}};
  const nlohmann::json mapped_quota = QuotaToJson(quota);
  ExpectSchemaMatches(spec, "Quota", mapped_quota);
  const nlohmann::json quota_schema = spec["components"]["schemas"]["Quota"]["properties"];
  for (const char* list : {"teams", "users"}) {
    const nlohmann::json props = quota_schema[list]["items"]["properties"];
    for (const auto& [key, value] : mapped_quota[list][0].items()) {
      ASSERT_TRUE(props.contains(key)) << "Quota." << list << "." << key << " not documented";
      EXPECT_TRUE(!value.is_null() || props[key].value("nullable", false)) << key;
    }
    EXPECT_EQ(props.size(), mapped_quota[list][0].size()) << list;
  }
}

// Every part of the report: one of each row, optional figures both set and unset.
TEST(OpenApiTest, ReportSchemasNameTheMappedFields) {
  const nlohmann::json spec = LoadSpec();
  const Report report{.team_filter = "cv",
                      .nodes = {NodeFigures{}},
                      .gpus = {GpuFigures{}, GpuFigures{.index = 2}},
                      .days = {DayFigures{}},
                      .teams = {TeamFigures{},
                                TeamFigures{.max_gpus = 2,
                                            .guarantee_used_pct = 1,
                                            .budget_gpu_hours = 3,
                                            .budget_used_pct = 4}},
                      .users = {UserFigures{}},
                      .workloads = {WorkloadFigures{}},
                      .waste_jobs = {WasteJob{}},
                      .queue = {QueueFigures{}},
                      .recommendations = {Recommendation{.figures = {{"x", 1}}}}};
  const nlohmann::json mapped = ReportToJson(report);
  ExpectSchemaMatches(spec, "Report", mapped);
  ExpectSchemaMatches(spec, "Report", ReportToJson(Report{}));
  ExpectSchemaMatches(spec, "ReportFigures", mapped["cluster"]["figures"]);
  ExpectInlineMatches(
      spec["components"]["schemas"]["Report"]["properties"]["cluster"]["properties"],
      mapped["cluster"],
      "Report.cluster");
  ExpectInlineMatches(
      spec["components"]["schemas"]["Report"]["properties"]["nodes"]["items"]["properties"],
      mapped["nodes"][0],
      "Report.nodes");
  ExpectInlineMatches(
      spec["components"]["schemas"]["Report"]["properties"]["days"]["items"]["properties"],
      mapped["days"][0],
      "Report.days");
  ExpectInlineMatches(spec["components"]["schemas"]["Report"]["properties"]["waste"]["properties"],
                      mapped["waste"],
                      "Report.waste");
  for (const auto& gpu : mapped["gpus"]) {
    ExpectSchemaMatches(spec, "ReportGpu", gpu);
  }
  for (const auto& team : mapped["teams"]) {
    ExpectSchemaMatches(spec, "ReportTeam", team);
  }
  ExpectSchemaMatches(spec, "ReportUsage", mapped["teams"][0]["usage"]);
  ExpectSchemaMatches(spec, "ReportEvents", mapped["events"]);
  ExpectSchemaMatches(spec, "ReportUser", mapped["users"][0]);
  ExpectSchemaMatches(spec, "ReportWorkload", mapped["workloads"][0]);
  ExpectSchemaMatches(spec, "ReportWasteJob", mapped["waste"]["jobs"][0]);
  ExpectSchemaMatches(spec, "ReportQueue", mapped["queue"][0]);
  ExpectSchemaMatches(spec, "ReportRecommendation", mapped["recommendations"][0]);
}

TEST(OpenApiTest, ExplanationSchemaNamesTheMappedFields) {
  const nlohmann::json spec = LoadSpec();
  Explanation pending;
  pending.priority = PriorityFactors{};
  pending.quota = QuotaExplanation{};
  pending.ahead = {JobAhead{}};
  pending.nodes = {NodeExplanation{}};
  pending.nodes[0].held = {GpuHold{}};
  pending.nodes[0].victims = {VictimCandidate{}};
  Explanation running;
  running.running = RunningExplanation{};
  ExpectSchemaMatches(spec, "Explanation", ExplanationToJson(running));
  const nlohmann::json mapped = ExplanationToJson(pending);
  ExpectSchemaMatches(spec, "Explanation", mapped);
  const nlohmann::json& props = spec["components"]["schemas"]["Explanation"]["properties"];
  ExpectInlineMatches(props["priority"]["properties"], mapped["priority"], "priority");
  ExpectInlineMatches(props["quota"]["properties"], mapped["quota"], "quota");
  ExpectInlineMatches(props["ahead"]["items"]["properties"], mapped["ahead"][0], "ahead");
  const nlohmann::json& node = props["nodes"]["items"]["properties"];
  ExpectInlineMatches(node, mapped["nodes"][0], "nodes");
  ExpectInlineMatches(node["held"]["items"]["properties"], mapped["nodes"][0]["held"][0], "held");
  ExpectInlineMatches(
      node["victims"]["items"]["properties"], mapped["nodes"][0]["victims"][0], "victims");
  ExpectInlineMatches(
      props["running"]["properties"], ExplanationToJson(running)["running"], "running");
}

}  // namespace
}  // namespace gf
