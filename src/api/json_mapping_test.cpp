#include "api/json_mapping.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "api/admin_json.h"

namespace gf {
namespace {

using nlohmann::json;

std::string SpecError(const json& body) {
  auto spec = JobSpecFromJson(body);
  EXPECT_FALSE(spec.ok()) << body.dump();
  return spec.ok() ? "" : spec.error().message;
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
  EXPECT_EQ(j["checkpoint_signal"], "TERM");
  EXPECT_EQ(j["preemptible"], false);
  EXPECT_EQ(j["requeue"], true);
  EXPECT_EQ(j["interactive"], false);
  EXPECT_EQ(j["idle_reap"], true);
  EXPECT_TRUE(j["estimated_start"].is_null());
  job.spec.checkpoint_signal = 10;
  job.spec.requeue = false;
  job.preemptible = true;
  job.estimated_start = FromUnixMillis(1'700'000'060'000);
  const json borrowed = JobToJson(job);
  EXPECT_EQ(borrowed["checkpoint_signal"], "USR1");
  EXPECT_EQ(borrowed["preemptible"], true);
  EXPECT_EQ(borrowed["requeue"], false);
  EXPECT_EQ(borrowed["estimated_start"], "2023-11-14T22:14:20.000Z");
  EXPECT_EQ(borrowed["estimated_start_ms"], 1'700'000'060'000);
  EXPECT_TRUE(borrowed["prediction"].is_null());
  job.prediction = JobPrediction{.expected = Millis(90'500),
                                 .high = Millis(600'000),
                                 .basis = "user+gpus",
                                 .explanation = "mean of the last 2 of alice's 3 runs with 1 GPU"};
  const json predicted = JobToJson(job);
  EXPECT_EQ(predicted["prediction"]["expected_s"], 90.5);
  EXPECT_EQ(predicted["prediction"]["high_s"], 600);
  EXPECT_EQ(predicted["prediction"]["basis"], "user+gpus");
  EXPECT_EQ(predicted["prediction"]["explanation"],
            "mean of the last 2 of alice's 3 runs with 1 GPU");
}

TEST(ApiJsonMappingTest, SpecFromJsonMapsEveryField) {
  const json body = {{"command", {"python", "train.py"}},
                     {"name", "t"},
                     {"workdir", "/w"},
                     {"env", {{"B", "2"}, {"A", "1"}}},
                     {"gpus", 4},
                     {"gpu_type", "A100"},
                     {"priority", "low"},
                     {"team", "nlp"},
                     {"time_limit", "2h"},
                     {"checkpoint_signal", "SIGUSR2"},
                     {"requeue", false},
                     {"interactive", true},
                     {"idle_reap", false}};
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
  EXPECT_EQ(spec->checkpoint_signal, 12);
  EXPECT_FALSE(spec->requeue);
  EXPECT_TRUE(spec->interactive);
  EXPECT_FALSE(spec->idle_reap);
  auto plain = JobSpecFromJson({{"command", {"true"}}});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(plain->interactive);
  EXPECT_TRUE(plain->idle_reap);
  auto wrong = JobSpecFromJson({{"command", {"true"}}, {"idle_reap", "no"}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message,
            "idle_reap: must be false (gpufleet submit --no-reap) or true, got \"no\"");
  auto numbered = JobSpecFromJson({{"command", {"true"}}, {"checkpoint_signal", 10}});
  ASSERT_TRUE(numbered.ok()) << numbered.error().message;
  EXPECT_EQ(numbered->checkpoint_signal, 10);
}

TEST(ApiJsonMappingTest, AnyWellFormedClassNameParsesTheServiceChecksItExists) {
  auto spec = JobSpecFromJson({{"command", {"true"}}, {"priority", "urgent"}});
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->priority.name, "urgent");
}

TEST(ApiJsonMappingTest, SpecDefaultsAndIntegerTimeLimit) {
  auto spec = JobSpecFromJson({{"command", {"true"}}, {"time_limit", 90}, {"gpu_type", nullptr}});
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->request.gpus, 1);
  EXPECT_FALSE(spec->request.gpu_type.has_value());
  EXPECT_TRUE(spec->priority.name.empty());  // the service fills in the default class
  EXPECT_EQ(spec->time_limit, std::chrono::seconds(90));
  EXPECT_TRUE(spec->requeue);
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
  EXPECT_NE(
      SpecError({{"command", cmd}, {"priority", "Urgent!"}}).find("priority: must be a class"),
      std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"priority", 1}}).find("priority"), std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"time_limit", "soon"}}).find("time_limit"),
            std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"time_limit", 0}}).find("time_limit"), std::string::npos);
  EXPECT_NE(SpecError({{"command", cmd}, {"name", 3}}).find("name: must be a string"),
            std::string::npos);
  EXPECT_NE(SpecError(json::array()).find("JSON object"), std::string::npos);
  EXPECT_EQ(
      SpecError({{"command", cmd}, {"checkpoint_signal", "KILL"}}).rfind("checkpoint_signal:", 0),
      0U);
  EXPECT_EQ(SpecError({{"command", cmd}, {"checkpoint_signal", 9}}).rfind("checkpoint_signal:", 0),
            0U);
  // Not a string or a number: "false" would read as true in too many scripts.
  for (const json& wrong : {json("false"), json(0), json(nullptr)}) {
    EXPECT_EQ(SpecError({{"command", cmd}, {"requeue", wrong}}).rfind("requeue: must be true", 0),
              0U)
        << wrong.dump();
  }
}

TEST(ApiJsonMappingTest, NulBytesInStringsThatBecomeCStringsAreRefusedNamingTheField) {
  // exec, setenv and chdir would cut each of these at the NUL: the job would run something
  // other than what was sent (issue #20).
  const std::string nul("a\0b", 3);
  const json cmd = {"true"};
  const std::string says = ": contains a NUL byte";
  EXPECT_EQ(SpecError({{"command", {"sh", nul}}}).rfind("command[1]" + says, 0), 0U);
  EXPECT_EQ(SpecError({{"command", cmd}, {"env", {{"A", nul}}}}).rfind("env.A" + says, 0), 0U);
  EXPECT_EQ(SpecError({{"command", cmd}, {"env", {{nul, "1"}}}}).rfind("env: the name", 0), 0U);
  EXPECT_EQ(SpecError({{"command", cmd}, {"workdir", nul}}).rfind("workdir" + says, 0), 0U);
  EXPECT_EQ(SpecError({{"command", cmd}, {"name", nul}}).rfind("name" + says, 0), 0U);
  EXPECT_NE(SpecError({{"command", cmd}, {"name", nul}}).find("remove it"), std::string::npos);
}

TEST(ApiJsonMappingTest, AnErrorQuotesABoundedPreviewOfADeepOrHugeValue) {
  // A value quoted in an error used to be dump()ed whole first: recursion as deep as the value
  // (100,000 levels overflowed the daemon's stack) and a 1 MiB copy to show 60 bytes.
  json deep = json::array();
  for (int i = 0; i < 100'000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  json body = {{"command", {"true"}}};
  body["env"] = std::move(deep);  // moved, not copied: a copy would recurse 100,000 times
  EXPECT_EQ(SpecError(body),
            "env: must be an object of strings, e.g. {\"NCCL_DEBUG\": \"INFO\"}, got " +
                std::string(60, '[') + "...");
  json huge = json::array();
  for (int i = 0; i < 200'000; ++i) {
    huge.push_back(i);
  }
  EXPECT_EQ(SpecError(huge),
            "job spec must be a JSON object, got " + huge.dump().substr(0, 60) + "...");
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
  for (ErrorCode code : {ErrorCode::kInvalidArgument,
                         ErrorCode::kNotFound,
                         ErrorCode::kAlreadyExists,
                         ErrorCode::kPermissionDenied,
                         ErrorCode::kFailedPrecondition,
                         ErrorCode::kResourceExhausted,
                         ErrorCode::kUnavailable,
                         ErrorCode::kIo,
                         ErrorCode::kInternal}) {
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

  GpuStatus status;
  status.node = NodeId("n1");
  status.gpu = node.gpus[0];
  status.job = JobId(3);
  status.user = "bob";
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

// A sample with every optional counter set to a distinct value, so a field mapped from the wrong
// member shows up as a wrong number.
GpuSample FullSample() {
  GpuSample s;
  s.uuid = GpuUuid("GPU-a");
  s.time = FromUnixMillis(1'700'000'000'000);
  s.memory_total_mib = 81920;
  s.memory_used_mib = 40000;
  s.memory_free_mib = 41920;
  s.util_gpu_pct = 91;
  s.util_memory_pct = 42;
  s.temperature_c = 71;
  s.memory_temperature_c = 83;
  s.power_mw = 612'345;
  s.power_limit_mw = 700'000;
  s.energy_mj = 9'876'543'210;
  s.sm_clock_mhz = 1980;
  s.mem_clock_mhz = 2619;
  s.pcie_tx_kbps = 1234;
  s.pcie_rx_kbps = 5678;
  s.pcie_replay_count = 3;
  s.ecc = EccCounters{1, 2, 30, 40};
  s.remapped_rows = RemappedRows{5, 6, true, false};
  s.throttle_reasons = 0x1 | 0x40;
  s.fan_speed_pct = 55;
  s.pstate = 0;
  s.xids = {XidEvent{79, FromUnixMillis(1'700'000'000'500)}};
  s.health = GpuHealth::kFailed;
  s.health_cause = "XID 79: GPU has fallen off the bus";
  return s;
}

TEST(ApiJsonMappingTest, GpuSampleHasEveryCounter) {
  const json j = GpuSampleToJson(FullSample());
  EXPECT_EQ(j["uuid"], "GPU-a");
  EXPECT_EQ(j["time_ms"], 1'700'000'000'000);
  EXPECT_EQ(j["lost"], false);
  EXPECT_EQ(j["memory_total_mib"], 81920);
  EXPECT_EQ(j["memory_used_mib"], 40000);
  EXPECT_EQ(j["memory_free_mib"], 41920);
  EXPECT_EQ(j["util_gpu_pct"], 91);
  EXPECT_EQ(j["util_memory_pct"], 42);
  EXPECT_EQ(j["temperature_c"], 71);
  EXPECT_EQ(j["memory_temperature_c"], 83);
  EXPECT_EQ(j["power_mw"], 612'345);
  EXPECT_EQ(j["power_limit_mw"], 700'000);
  EXPECT_EQ(j["energy_mj"], 9'876'543'210);
  EXPECT_EQ(j["sm_clock_mhz"], 1980);
  EXPECT_EQ(j["mem_clock_mhz"], 2619);
  EXPECT_EQ(j["pcie_tx_kbps"], 1234);
  EXPECT_EQ(j["pcie_rx_kbps"], 5678);
  EXPECT_EQ(j["pcie_replay_count"], 3);
  EXPECT_EQ(j["ecc"],
            json({{"volatile_corrected", 1},
                  {"volatile_uncorrected", 2},
                  {"aggregate_corrected", 30},
                  {"aggregate_uncorrected", 40}}));
  const json remapped = {
      {"correctable", 5}, {"uncorrectable", 6}, {"pending", true}, {"failure", false}};
  EXPECT_EQ(j["remapped_rows"], remapped);
  EXPECT_EQ(j["throttle_reasons"], 0x41);
  EXPECT_EQ(j["throttle_reason_names"], json({"gpu_idle", "hw_thermal_slowdown"}));
  EXPECT_EQ(j["fan_speed_pct"], 55);
  EXPECT_EQ(j["pstate"], 0);
  ASSERT_EQ(j["xids"].size(), 1u);
  EXPECT_EQ(j["xids"][0]["xid"], 79);
  EXPECT_EQ(j["xids"][0]["time"], "2023-11-14T22:13:20.500Z");
  EXPECT_EQ(j["xids"][0]["time_ms"], 1'700'000'000'500);
  EXPECT_EQ(j["health"], "failed");
  EXPECT_EQ(j["health_cause"], "XID 79: GPU has fallen off the bus");
}

TEST(ApiJsonMappingTest, UnknownCountersAreNullNeverZero) {
  GpuSample s;  // a driver that offers nothing optional
  s.uuid = GpuUuid("GPU-b");
  s.memory_total_mib = 16384;
  const json j = GpuSampleToJson(s);
  for (const char* key : {"util_gpu_pct",
                          "util_memory_pct",
                          "temperature_c",
                          "memory_temperature_c",
                          "power_mw",
                          "power_limit_mw",
                          "energy_mj",
                          "sm_clock_mhz",
                          "mem_clock_mhz",
                          "pcie_tx_kbps",
                          "pcie_rx_kbps",
                          "pcie_replay_count",
                          "remapped_rows",
                          "throttle_reasons",
                          "throttle_reason_names",
                          "fan_speed_pct",
                          "pstate"}) {
    EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_null()) << key << " = " << j[key].dump();
  }
  for (const auto& [key, value] : j["ecc"].items()) {
    EXPECT_TRUE(value.is_null()) << "ecc." << key;
  }
  EXPECT_EQ(j["ecc"].size(), 4u);
  EXPECT_EQ(j["memory_total_mib"], 16384);  // always read, so a real number
  EXPECT_EQ(j["xids"], json::array());
  EXPECT_EQ(j["processes"], json::array());
  EXPECT_EQ(j["health"], "ok");
  EXPECT_EQ(j["health_cause"], "");
}

TEST(ApiJsonMappingTest, LostGpuHasNoMemoryFigures) {
  GpuSample s;
  s.uuid = GpuUuid("GPU-c");
  s.lost = true;
  s.health = GpuHealth::kFailed;
  s.health_cause = "GPU is lost";
  const json j = GpuSampleToJson(s);
  EXPECT_EQ(j["lost"], true);
  EXPECT_TRUE(j["memory_total_mib"].is_null());
  EXPECT_TRUE(j["memory_used_mib"].is_null());
  EXPECT_TRUE(j["memory_free_mib"].is_null());
  EXPECT_EQ(j["health"], "failed");
}

TEST(ApiJsonMappingTest, ThrottleReasonNamesCoverEveryBit) {
  EXPECT_TRUE(ThrottleReasonNames(0).empty());
  EXPECT_EQ(ThrottleReasonNames(0x1FF),
            (std::vector<std::string>{"gpu_idle",
                                      "applications_clocks_setting",
                                      "sw_power_cap",
                                      "hw_slowdown",
                                      "sync_boost",
                                      "sw_thermal_slowdown",
                                      "hw_thermal_slowdown",
                                      "hw_power_brake_slowdown",
                                      "display_clock_setting"}));
  // Bits this build does not know are kept, one name each, not dropped.
  EXPECT_EQ(
      ThrottleReasonNames(0x4 | 0x200 | (1ULL << 63)),
      (std::vector<std::string>{"sw_power_cap", "unknown_0x200", "unknown_0x8000000000000000"}));
}

TEST(ApiJsonMappingTest, ProcessesCarryAttribution) {
  GpuSample s = FullSample();
  GpuProcessSample managed;
  managed.pid = 4242;
  managed.used_memory_mib = 30000;
  managed.sm_util_pct = 88;
  managed.mem_util_pct = 40;
  managed.job = JobId(7);
  managed.uid = 1000;
  managed.user = "alice";
  managed.cpu_pct = 150.5;
  managed.host_memory_mib = 2048;
  managed.command = "python train.py";
  GpuProcessSample stray;  // started outside gpufleet; the driver hides its memory
  stray.pid = 999;
  stray.uid = 1001;
  stray.user = "mallory";
  stray.unmanaged = true;
  stray.mig_uuid = GpuUuid("MIG-1");  // on a MIG device of the GPU
  stray.pod = "ml/train-0";           // Kubernetes mode: a pod's process outside its allocation
  stray.container = "sidecar";
  s.processes = {managed, stray};
  const json p = GpuSampleToJson(s)["processes"];
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0],
            json({{"pid", 4242},
                  {"used_memory_mib", 30000},
                  {"sm_util_pct", 88},
                  {"mem_util_pct", 40},
                  {"job", 7},
                  {"uid", 1000},
                  {"user", "alice"},
                  {"unmanaged", false},
                  {"pod", ""},
                  {"container", ""},
                  {"mig_uuid", nullptr},
                  {"cpu_pct", 150.5},
                  {"host_memory_mib", 2048},
                  {"command", "python train.py"}}));
  EXPECT_EQ(p[1]["pid"], 999);
  EXPECT_TRUE(p[1]["cpu_pct"].is_null());
  EXPECT_TRUE(p[1]["host_memory_mib"].is_null());
  EXPECT_EQ(p[1]["command"], "");
  EXPECT_EQ(p[1]["mig_uuid"], "MIG-1");
  EXPECT_TRUE(p[1]["used_memory_mib"].is_null());
  EXPECT_TRUE(p[1]["sm_util_pct"].is_null());
  EXPECT_TRUE(p[1]["mem_util_pct"].is_null());
  EXPECT_TRUE(p[1]["job"].is_null());
  EXPECT_EQ(p[1]["uid"], 1001);
  EXPECT_EQ(p[1]["user"], "mallory");
  EXPECT_EQ(p[1]["unmanaged"], true);
  EXPECT_EQ(p[1]["pod"], "ml/train-0");
  EXPECT_EQ(p[1]["container"], "sidecar");
}

TEST(ApiJsonMappingTest, GpuStatusHasHolderTeamAndConditions) {
  GpuStatus status;
  status.node = NodeId("n2");
  status.gpu = Gpu{3, GpuUuid("GPU-d"), "A100-40GB", 40960, GpuHealth::kDegraded, "hot: 92 C"};
  status.job = JobId(11);
  status.user = "carol";
  status.team = "vision";
  status.conditions = {"allocated_no_process"};
  json g = GpuStatusToJson(status);
  EXPECT_EQ(g["node"], "n2");
  EXPECT_EQ(g["index"], 3);
  EXPECT_EQ(g["model"], "A100-40GB");
  EXPECT_EQ(g["health"], "degraded");
  EXPECT_EQ(g["health_cause"], "hot: 92 C");
  EXPECT_EQ(g["job"], 11);
  EXPECT_EQ(g["user"], "carol");
  EXPECT_EQ(g["team"], "vision");
  EXPECT_EQ(g["conditions"], json({"allocated_no_process"}));
  EXPECT_TRUE(g["sample"].is_null());

  status.job.reset();
  status.user.clear();
  status.team.clear();
  status.conditions.clear();
  g = GpuStatusToJson(status);
  EXPECT_TRUE(g["job"].is_null());
  EXPECT_EQ(g["conditions"], json::array());
  EXPECT_EQ(g["holders"], json::array());
}

TEST(ApiJsonMappingTest, SharedGpuListsEveryHolder) {
  GpuStatus status;
  status.node = NodeId("n1");
  status.holders = {GpuHolder{.job = JobId(12),
                              .user = "ann",
                              .team = "",
                              .share_milli = 250,
                              .memory_limit_mib = 20'480},
                    GpuHolder{.job = JobId(13),
                              .user = "bo",
                              .team = "nlp",
                              .share_milli = 500,
                              .memory_limit_mib = 0,
                              .pod_namespace = "nlp",
                              .pod = "notebook-bo",
                              .container = "jupyter"}};
  status.conditions = {"gpu_memory_over_limit"};
  const json g = GpuStatusToJson(status);
  EXPECT_TRUE(g["job"].is_null());  // several holders: no single job
  EXPECT_EQ(g["user"], "");
  EXPECT_EQ(g["holders"], json::parse(R"([{"job":12,"user":"ann","team":"","share_milli":250,
                             "memory_limit_mib":20480,"namespace":"","pod":"","container":""},
                            {"job":13,"user":"bo","team":"nlp","share_milli":500,
                             "memory_limit_mib":0,"namespace":"nlp","pod":"notebook-bo",
                             "container":"jupyter"}])"));
  EXPECT_EQ(g["conditions"], json({"gpu_memory_over_limit"}));
}

TEST(ApiJsonMappingTest, JobJsonShowsThePendingReasonsCodeAndStage) {
  Job job;
  job.id = JobId(3);
  job.reason = "requeued after preemption (x); needs 4 GPUs; 0 free";
  const json before = JobToJson(job);  // no pass has looked at it yet
  EXPECT_TRUE(before["reason_code"].is_null());
  EXPECT_TRUE(before["reason_stage"].is_null());
  job.pending_reason = PendingReason::Of(PendingCode::kNoFreeGpus, "needs 4 GPUs; 0 free");
  const json j = JobToJson(job);
  EXPECT_EQ(j["reason"], "requeued after preemption (x); needs 4 GPUs; 0 free");
  EXPECT_EQ(j["reason_code"], "no_free_gpus");
  EXPECT_EQ(j["reason_stage"], "placement");
}

TEST(ApiJsonMappingTest, JobUsageInMillijoulesJoulesAndKwh) {
  Job job;
  job.id = JobId(1);
  EXPECT_TRUE(JobToJson(job)["usage"].is_null());             // not measured yet: null, not zeros
  job.usage = JobUsage{120, 63.5, 99, 70000, 7'200'000'000};  // 7.2 MJ = 2 kWh
  const json u = JobToJson(job)["usage"];
  EXPECT_EQ(u["samples"], 120);
  EXPECT_DOUBLE_EQ(u["mean_util_pct"].get<double>(), 63.5);
  EXPECT_EQ(u["peak_util_pct"], 99);
  EXPECT_EQ(u["peak_memory_mib"], 70000);
  EXPECT_EQ(u["energy_mj"], 7'200'000'000);
  EXPECT_DOUBLE_EQ(u["energy_j"].get<double>(), 7'200'000.0);
  EXPECT_DOUBLE_EQ(u["energy_kwh"].get<double>(), 2.0);
}

TEST(ApiJsonMappingTest, SubmissionWithDependenciesAndArray) {
  auto s = SubmissionFromJson(
      json::parse(R"({"command":["t"],"after":[{"job":12,"kind":"ok"},{"job":13}],)"
                  R"("array":{"indices":[1,3],"max_running":null}})"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->spec.after,
            (std::vector<Dependency>{{.job = JobId(12), .kind = DependencyKind::kOk},
                                     {.job = JobId(13), .kind = DependencyKind::kAny}}));
  ASSERT_TRUE(s->array);
  EXPECT_EQ(s->array->indices, (std::vector<int>{1, 3}));
  EXPECT_FALSE(s->array->max_running);
  auto plain = SubmissionFromJson(json{{"command", {"t"}}});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->array);
  // A single-job parse refuses an array rather than drop it.
  EXPECT_NE(SpecError(json{{"command", {"t"}}, {"array", {{"indices", {0}}}}}).find("array"),
            std::string::npos);
}

TEST(ApiJsonMappingTest, DependencyAndArrayErrorsNameTheField) {
  auto error = [](const std::string& text) {
    auto s = SubmissionFromJson(json::parse(text));
    return s.ok() ? std::string("accepted") : s.error().message;
  };
  EXPECT_EQ(error(R"({"command":["t"],"after":12})").rfind("after: must be", 0), 0u);
  EXPECT_EQ(error(R"({"command":["t"],"after":[{"job":0}]})").rfind("after[0].job:", 0), 0u);
  EXPECT_EQ(
      error(R"({"command":["t"],"after":[{"job":5,"kind":"fail"}]})").rfind("after[0].kind:", 0),
      0u);
  EXPECT_EQ(error(R"({"command":["t"],"after":[{"job":5,"kid":"ok"}]})")
                .rfind("unknown field \"kid\" in after[0]", 0),
            0u);
  EXPECT_EQ(error(R"({"command":["t"],"array":[0,1]})").rfind("array: must be", 0), 0u);
  EXPECT_EQ(error(R"({"command":["t"],"array":{"indices":[-1]}})").rfind("array.indices:", 0), 0u);
  EXPECT_EQ(error(R"({"command":["t"],"array":{"indices":[0],"max_running":0}})")
                .rfind("array.max_running:", 0),
            0u);
  EXPECT_EQ(error(R"({"command":["t"],"array":{"indices":[0],"limit":2}})")
                .rfind("unknown field \"limit\" in array", 0),
            0u);
}

TEST(ApiJsonMappingTest, JobJsonShowsArrayTaskAndDependencies) {
  Job job;
  job.id = JobId(43);
  job.spec.after = {Dependency{.job = JobId(12), .kind = DependencyKind::kOk}};
  job.spec.array = ArrayTask{.array_job = JobId(40), .index = 3, .max_running = 4};
  const json j = JobToJson(job);
  EXPECT_EQ(j["after"], json::parse(R"([{"job":12,"kind":"ok"}])"));
  EXPECT_EQ(j["array_job"], 40);
  EXPECT_EQ(j["array_index"], 3);
  EXPECT_EQ(j["array_max_running"], 4);
  const json plain = JobToJson(Job{});
  EXPECT_EQ(plain["after"], json::array());
  EXPECT_TRUE(plain["array_job"].is_null());
  EXPECT_TRUE(plain["array_index"].is_null());
  EXPECT_TRUE(plain["array_max_running"].is_null());
}

TEST(ApiJsonMappingTest, MultiNodeRequestAndGangMember) {
  const json cmd = {"true"};
  auto spec = JobSpecFromJson({{"command", cmd}, {"gpus", 8}, {"nodes", 4}});
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->request.nodes, 4);
  EXPECT_EQ(JobSpecFromJson({{"command", cmd}})->request.nodes, 1);
  for (const json& wrong : {json(0), json(1025), json("2"), json(1.5)}) {
    EXPECT_EQ(
        SpecError({{"command", cmd}, {"nodes", wrong}}).rfind("nodes: must be a whole number", 0),
        0U)
        << wrong.dump();
  }
  Job member;
  member.spec.request.nodes = 3;
  member.spec.gang = GangMember{.gang_job = JobId(40), .rank = 2, .size = 3};
  const json j = JobToJson(member);
  EXPECT_EQ(j["nodes"], 3);
  EXPECT_EQ(j["gang_job"], 40);
  EXPECT_EQ(j["gang_rank"], 2);
  const json plain = JobToJson(Job{});
  EXPECT_EQ(plain["nodes"], 1);
  EXPECT_TRUE(plain["gang_job"].is_null());
  EXPECT_TRUE(plain["gang_rank"].is_null());
}

TEST(ApiJsonMappingTest, NodeLabelsAndGpuTopology) {
  auto spec = JobSpecFromJson({{"command", {"true"}}, {"node_labels", {{"rack", "a"}}}});
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->request.node_labels, (std::map<std::string, std::string>{{"rack", "a"}}));
  auto bad = JobSpecFromJson({{"command", {"true"}}, {"node_labels", {{"rack", 1}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("node_labels.rack"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(JobSpecFromJson({{"command", {"true"}}, {"node_labels", "rack=a"}}).ok());

  Gpu gpu;
  gpu.index = 1;
  gpu.numa_node = 0;
  gpu.nvlink_peers = {0, 2};
  const nlohmann::json j = GpuToJson(gpu);
  EXPECT_EQ(j["numa_node"], 0);
  EXPECT_TRUE(j["pcie_switch"].is_null());  // unknown
  EXPECT_EQ(j["nvlink_peers"], nlohmann::json::parse("[0,2]"));
}

// --- Host CPUs and memory (issue #24) ---

TEST(ApiJsonMappingTest, HostCpusAndMemoryParseAndErrorsNameTheField) {
  const json cmd = {"true"};
  auto spec = JobSpecFromJson({{"command", cmd}, {"cpus", 8}, {"mem", "64G"}});
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->request.cpus, 8);
  EXPECT_EQ(spec->request.memory_mib, 65'536);
  auto by_mib = JobSpecFromJson({{"command", cmd}, {"mem_mib", 512}, {"cpus", nullptr}});
  ASSERT_TRUE(by_mib.ok()) << by_mib.error().message;
  EXPECT_EQ(by_mib->request.memory_mib, 512);
  EXPECT_EQ(by_mib->request.cpus, 0);
  for (const json& wrong : {json(-1), json("8"), json(1.5), json(100'000)}) {
    auto bad = JobSpecFromJson({{"command", cmd}, {"cpus", wrong}});
    ASSERT_FALSE(bad.ok()) << wrong.dump();
    EXPECT_EQ(bad.error().message.rfind("cpus: ", 0), 0U) << bad.error().message;
  }
  EXPECT_EQ(JobSpecFromJson({{"command", cmd}, {"mem", "64X"}}).error().message.rfind("mem: ", 0),
            0U);
  auto update = JobUpdateFromJson({{"cpus", 4}, {"mem", "1G"}});
  ASSERT_TRUE(update.ok()) << update.error().message;
  EXPECT_EQ(update->cpus, 4);
  EXPECT_EQ(update->memory_mib, 1024);
  EXPECT_FALSE(JobUpdateFromJson({{"gpus", 1}})->cpus.has_value());
  Job job;
  job.spec.request.cpus = 8;
  job.spec.request.memory_mib = 1024;
  job.allocation = Allocation{.node = NodeId("n"), .gpus = {}};
  job.allocation->cpus = 8;
  job.allocation->memory_mib = 1024;
  const json out = JobToJson(job);
  EXPECT_EQ(out["cpus"], 8);
  EXPECT_EQ(out["mem_mib"], 1024);
  EXPECT_EQ(out["alloc_cpus"], 8);
  EXPECT_EQ(out["alloc_mem_mib"], 1024);
}

// --- GPU sharing (issue #7) ---

TEST(ApiJsonMappingTest, FractionalRequestParsesFromNumberOrText) {
  const json cmd = {"true"};
  for (const json& share : {json(0.25), json("0.25")}) {
    auto spec = JobSpecFromJson({{"command", cmd}, {"gpu_share", share}, {"gpu_mem", "20G"}});
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    EXPECT_EQ(spec->request.gpu_milli, 250) << share.dump();
    EXPECT_EQ(spec->request.gpu_memory_mib, 20'480);
  }
  // 0.1 is 100 milli exactly, not a binary fraction's 99.
  EXPECT_EQ(JobSpecFromJson({{"command", cmd}, {"gpu_share", 0.1}})->request.gpu_milli, 100);
  auto by_mib = JobSpecFromJson({{"command", cmd}, {"gpu_mem_mib", 512}, {"gpu_share", nullptr}});
  ASSERT_TRUE(by_mib.ok()) << by_mib.error().message;
  EXPECT_EQ(by_mib->request.gpu_memory_mib, 512);
  EXPECT_EQ(by_mib->request.gpu_milli, 0);
  EXPECT_FALSE(IsFractional(JobSpecFromJson({{"command", cmd}})->request));
}

TEST(ApiJsonMappingTest, BadFractionErrorsNameTheField) {
  const json cmd = {"true"};
  for (const json& wrong : {json(0), json(1.5), json("quarter"), json(0.0001), json(true)}) {
    EXPECT_EQ(SpecError({{"command", cmd}, {"gpu_share", wrong}}).rfind("gpu_share: ", 0), 0U)
        << wrong.dump();
  }
  for (const json& wrong : {json("20 GB"), json("lots"), json(20480)}) {
    EXPECT_EQ(SpecError({{"command", cmd}, {"gpu_mem", wrong}}).rfind("gpu_mem: ", 0), 0U)
        << wrong.dump();
  }
  for (const json& wrong : {json(0), json("20G"), json(1.5)}) {
    EXPECT_EQ(SpecError({{"command", cmd}, {"gpu_mem_mib", wrong}}).rfind("gpu_mem_mib: ", 0), 0U)
        << wrong.dump();
  }
}

TEST(ApiJsonMappingTest, JobJsonShowsShareAskedAndHeld) {
  Job job;
  job.spec.request.gpu_milli = 250;
  job.spec.request.gpu_memory_mib = 20'480;
  job.allocation = Allocation{
      .node = NodeId("n1"), .gpus = {GpuUuid("GPU-a")}, .gpu_milli = 250, .gpu_memory_mib = 20'480};
  const json j = JobToJson(job);
  EXPECT_EQ(j["gpu_share"], json(0.25));
  EXPECT_EQ(j["gpu_mem_mib"], 20'480);
  EXPECT_EQ(j["alloc_gpu_share"], json(0.25));
  EXPECT_EQ(j["alloc_gpu_mem_mib"], 20'480);

  Job whole;
  whole.allocation = Allocation{.node = NodeId("n1"), .gpus = {GpuUuid("GPU-b")}};
  const json w = JobToJson(whole);
  EXPECT_TRUE(w["gpu_share"].is_null());  // not asked
  EXPECT_TRUE(w["gpu_mem_mib"].is_null());
  EXPECT_EQ(w["alloc_gpu_share"], 1);  // the whole GPU, an integer
  EXPECT_TRUE(w["alloc_gpu_mem_mib"].is_null());
  EXPECT_TRUE(JobToJson(Job{})["alloc_gpu_share"].is_null());  // not placed
}

TEST(ApiJsonMappingTest, GpuJsonShowsSharingModeAndWaitingChange) {
  Gpu gpu;
  EXPECT_EQ(GpuToJson(gpu)["sharing"], "exclusive");
  EXPECT_TRUE(GpuToJson(gpu)["sharing_next"].is_null());
  gpu.sharing = SharingMode::kMps;
  gpu.sharing_next = SharingMode::kExclusive;
  const json j = GpuToJson(gpu);
  EXPECT_EQ(j["sharing"], "mps");
  EXPECT_EQ(j["sharing_next"], "exclusive");
}

// Issue #20: an admin body's strings become C strings too (a subscription's e-mail address on
// sendmail's command line, a drain reason in the log): a NUL inside one is refused, naming it.
TEST(ApiJsonMappingTest, AdminBodiesRefuseNulBytesNamingTheField) {
  const auto subscription = SubscriptionFromJson(
      json{{"scope", "user"}, {"channel", "email"}, {"target", std::string("a@b.c\0x@y.z", 11)}});
  ASSERT_FALSE(subscription.ok());
  EXPECT_NE(subscription.error().message.find("target: contains a NUL byte"), std::string::npos);
  const auto reason = DrainReasonFromJson(json{{"reason", std::string("disk\0full", 9)}});
  ASSERT_FALSE(reason.ok());
  EXPECT_NE(reason.error().message.find("reason: contains a NUL byte"), std::string::npos);
  const auto token = TokenRequestFromJson(
      json{{"kind", "user"}, {"user", "alice"}, {"description", std::string("ci\0x", 4)}});
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.error().message.find("description: contains a NUL byte"), std::string::npos);
}

}  // namespace
}  // namespace gf
