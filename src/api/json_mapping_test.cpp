#include "api/json_mapping.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

using nlohmann::json;

std::string SpecError(const json& body) {
  auto spec = JobSpecFromJson(body);
  EXPECT_FALSE(spec.ok()) << body.dump();
  return spec.ok() ? "" : spec.error().message;
}

TEST(ApiJsonMappingTest, FormatsRfc3339InUtcWithMillis) {
  EXPECT_EQ(FormatRfc3339(FromUnixMillis(1'700'000'000'123)), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(FormatRfc3339(FromUnixMillis(0)), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339(FromUnixMillis(-1)), "1969-12-31T23:59:59.999Z");
}

TEST(ApiJsonMappingTest, JobToJsonHasEveryField) {
  Job job;
  job.id = JobId(12);
  job.owner = Owner{1000, 100, "alice"};
  job.spec.name = "train";
  job.spec.argv = {"python", "train.py"};
  job.spec.workdir = "/home/alice";
  job.spec.env = {{"A", "1"}};
  job.spec.request.gpus = 2;
  job.spec.request.gpu_type = "H100-80GB";
  job.spec.priority = PriorityClass::kHigh;
  job.spec.team = "vision";
  job.spec.time_limit = std::chrono::seconds(7200);
  job.state = JobState::kRunning;
  job.allocation = Allocation{NodeId("n1"), {GpuUuid("GPU-a"), GpuUuid("GPU-b")}};
  job.submit_time = FromUnixMillis(1'700'000'000'000);
  job.start_time = FromUnixMillis(1'700'000'001'000);
  job.reason = "started";
  const json j = JobToJson(job);
  EXPECT_EQ(j["id"], 12);
  EXPECT_EQ(j["name"], "train");
  EXPECT_EQ(j["user"], "alice");
  EXPECT_EQ(j["uid"], 1000);
  EXPECT_EQ(j["team"], "vision");
  EXPECT_EQ(j["state"], "RUNNING");
  EXPECT_EQ(j["priority"], "high");
  EXPECT_EQ(j["gpus"], 2);
  EXPECT_EQ(j["gpu_type"], "H100-80GB");
  EXPECT_EQ(j["command"], json({"python", "train.py"}));
  EXPECT_EQ(j["workdir"], "/home/alice");
  EXPECT_EQ(j["env"], json({{"A", "1"}}));
  EXPECT_EQ(j["time_limit_s"], 7200);
  EXPECT_EQ(j["node"], "n1");
  EXPECT_EQ(j["gpu_uuids"], json({"GPU-a", "GPU-b"}));
  EXPECT_EQ(j["submit_time"], "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(j["submit_time_ms"], 1'700'000'000'000);
  EXPECT_EQ(j["start_time_ms"], 1'700'000'001'000);
  EXPECT_TRUE(j["end_time"].is_null());
  EXPECT_TRUE(j["end_time_ms"].is_null());
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_EQ(j["reason"], "started");
}

TEST(ApiJsonMappingTest, SpecFromJsonMapsEveryField) {
  const json body = {{"command", {"python", "train.py"}}, {"name", "t"},
                     {"workdir", "/w"},  {"env", {{"B", "2"}, {"A", "1"}}},
                     {"gpus", 4},        {"gpu_type", "A100"},
                     {"priority", "low"}, {"team", "nlp"},
                     {"time_limit", "2h"}};
  auto spec = JobSpecFromJson(body);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->argv, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(spec->name, "t");
  EXPECT_EQ(spec->workdir, "/w");
  EXPECT_EQ(spec->env, (std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "2"}}));
  EXPECT_EQ(spec->request.gpus, 4);
  EXPECT_EQ(spec->request.gpu_type, "A100");
  EXPECT_EQ(spec->priority, PriorityClass::kLow);
  EXPECT_EQ(spec->team, "nlp");
  EXPECT_EQ(spec->time_limit, std::chrono::seconds(7200));
}

TEST(ApiJsonMappingTest, SpecDefaultsAndIntegerTimeLimit) {
  auto spec = JobSpecFromJson({{"command", {"true"}}, {"time_limit", 90}, {"gpu_type", nullptr}});
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->request.gpus, 1);
  EXPECT_FALSE(spec->request.gpu_type.has_value());
  EXPECT_EQ(spec->priority, PriorityClass::kNormal);
  EXPECT_EQ(spec->time_limit, std::chrono::seconds(90));
}

TEST(ApiJsonMappingTest, SpecErrorsNameTheField) {
  const json cmd = {"true"};
  EXPECT_EQ(SpecError({{"command", cmd}, {"gpus", "two"}}),
            "gpus: must be a whole number ≥ 0, got \"two\"");
  EXPECT_NE(SpecError({{"command", cmd}, {"gpus", -1}}).find("gpus"), std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"gpus", 1.5}}).find("gpus"), std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"gpu", 2}}).find("unknown field \"gpu\""),
            std::string::npos);
  EXPECT_NE(SpecError({{"gpus", 2}}).find("command: required"), std::string::npos);
  EXPECT_NE(SpecError({{"command", json::array()}}).find("command"), std::string::npos);
  EXPECT_NE(SpecError({{"command", {"a", 1}}}).find("command[1]"), std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"env", {{"A", 1}}}}).find("env.A"), std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"priority", "urgent"}}).find("priority"),
            std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"time_limit", "soon"}}).find("time_limit"),
            std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"time_limit", 0}}).find("time_limit"),
            std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"name", 3}}).find("name: must be a string"),
            std::string::npos);
  EXPECT_NE(SpecError(json::array()).find("JSON object"), std::string::npos);
}

TEST(ApiJsonMappingTest, ErrorRoundTrips) {
  const json body = ErrorToJson(NotFound("job 7 not found"));
  EXPECT_EQ(body["error"]["code"], "not_found");
  auto back = ErrorFromJson(body);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->code, ErrorCode::kNotFound);
  EXPECT_EQ(back->message, "job 7 not found");
  auto transport = ErrorFromJson(ErrorToJson("unauthenticated", "use the socket"));
  ASSERT_TRUE(transport.has_value());
  EXPECT_FALSE(transport->code.has_value());
  EXPECT_FALSE(ErrorFromJson(json{{"jobs", json::array()}}).has_value());
  for (ErrorCode code : {ErrorCode::kInvalidArgument, ErrorCode::kNotFound,
                         ErrorCode::kAlreadyExists, ErrorCode::kPermissionDenied,
                         ErrorCode::kFailedPrecondition, ErrorCode::kResourceExhausted,
                         ErrorCode::kUnavailable, ErrorCode::kIo, ErrorCode::kInternal}) {
    EXPECT_EQ(ParseErrorCodeName(ErrorCodeName(code)), code);
  }
}

TEST(ApiJsonMappingTest, NodeGpuAndEvent) {
  Node node;
  node.name = NodeId("n1");
  node.gpus.push_back(Gpu{0, GpuUuid("GPU-a"), "H100-80GB", 81920, GpuHealth::kDegraded, "xid"});
  node.labels["rack"] = "r1";
  const json n = NodeToJson(node);
  EXPECT_EQ(n["name"], "n1");
  EXPECT_EQ(n["state"], "up");
  EXPECT_EQ(n["labels"]["rack"], "r1");
  EXPECT_EQ(n["gpus"][0]["health"], "degraded");

  GpuStatus status{NodeId("n1"), node.gpus[0], JobId(3), "bob", std::nullopt};
  json g = GpuStatusToJson(status);
  EXPECT_EQ(g["uuid"], "GPU-a");
  EXPECT_EQ(g["job"], 3);
  EXPECT_TRUE(g["sample"].is_null());
  GpuSample sample;
  sample.uuid = GpuUuid("GPU-a");
  sample.util_gpu_pct = 55;
  status.sample = sample;
  g = GpuStatusToJson(status);
  EXPECT_EQ(g["sample"]["util_gpu_pct"], 55);
  EXPECT_TRUE(g["sample"]["power_mw"].is_null());

  Event event{5, FromUnixMillis(0), JobId(3), "submit", "alice", "submitted"};
  const json e = EventToJson(event);
  EXPECT_EQ(e["seq"], 5);
  EXPECT_EQ(e["job"], 3);
  EXPECT_EQ(e["time"], "1970-01-01T00:00:00.000Z");
}

}  // namespace
}  // namespace gf
