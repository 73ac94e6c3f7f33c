#include "api/routes.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/agent_wire.h"
#include "api/fake_cluster_service.h"
#include "api/json_mapping.h"

namespace gf {
namespace {

using nlohmann::json;
using testing::FakeClusterService;

class ApiRoutesTest : public ::testing::Test {
 protected:
  HttpResponse Do(const std::string& method,
                  const std::string& target,
                  const std::string& body = "",
                  const Caller* caller = nullptr) {
    return router_.Handle(caller ? *caller : alice_, Request(method, target, body));
  }
  // A request as our clients send it: a body is labelled application/json (ApiClient).
  static HttpRequest Request(const std::string& method,
                             const std::string& target,
                             const std::string& body) {
    HttpHeaders headers;
    if (!body.empty()) {
      headers.emplace_back("Content-Type", "application/json");
    }
    return HttpRequest{method, target, std::move(headers), body};
  }
  static json Body(const HttpResponse& r) { return json::parse(r.body); }
  static std::string Message(const HttpResponse& r) {
    return Body(r)["error"]["message"].get<std::string>();
  }

  FakeClusterService fake_;
  Router router_{fake_};
  Caller alice_{true, 1000, 1000, "alice"};
  Caller anonymous_{};
};

TEST_F(ApiRoutesTest, Health) {
  const auto r = Do("GET", "/api/v1/health", "", &anonymous_);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Body(r)["status"], "ok");
  EXPECT_EQ(Body(r)["version"], std::string(ApiVersion()));
  EXPECT_EQ(fake_.Calls(), 0);
}

TEST_F(ApiRoutesTest, SubmitMapsSpecAndCaller) {
  const auto r = Do("POST",
                    "/api/v1/jobs",
                    R"({"command":["python","t.py"],"gpus":2,"priority":"high",)"
                    R"("time_limit":"1h","name":"n","workdir":"/w","env":{"X":"y"}})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.Header("location"), "/api/v1/jobs/7");
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  ASSERT_TRUE(fake_.last_spec.has_value());
  EXPECT_EQ(fake_.last_spec->argv, (std::vector<std::string>{"python", "t.py"}));
  EXPECT_EQ(fake_.last_spec->request.gpus, 2);
  EXPECT_EQ(fake_.last_spec->priority, PriorityClass::kHigh);
  EXPECT_EQ(fake_.last_spec->time_limit, std::chrono::seconds(3600));
  EXPECT_EQ(fake_.last_caller->user, "alice");
  EXPECT_EQ(Body(r)["command"], json({"python", "t.py"}));
}

TEST_F(ApiRoutesTest, BadSubmissionsAreRejectedBeforeTheService) {
  struct Case {
    std::string body;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {R"({"command":["x"],"gpu":2})", "unknown field \"gpu\""},
      {R"({"command":["x"],"gpus":"two"})", "gpus: must be a whole number ≥ 0, got \"two\""},
      {R"({"gpus":1})", "command: required"},
      {R"({"command":["x"],)", "not valid JSON"},
      {"", "not valid JSON"},
  };
  for (const auto& c : cases) {
    const auto r = Do("POST", "/api/v1/jobs", c.body);
    EXPECT_EQ(r.status, 400) << c.body;
    EXPECT_EQ(Body(r)["error"]["code"], "invalid_argument");
    EXPECT_NE(Message(r).find(c.expected), std::string::npos) << Message(r);
  }
  EXPECT_EQ(fake_.Calls(), 0);
}

TEST_F(ApiRoutesTest, ADeeplyNestedBodyIsRefusedNamingTheLimit) {
  // The reproduction of issue #20: 100,000 levels (200 KB, under the 1 MiB body limit) used to
  // overflow the daemon's stack while the error message quoted the value.
  const std::string deep = R"({"command":["true"],"workdir":"/","env":)" +
                           std::string(100'000, '[') + std::string(100'000, ']') + "}";
  const auto r = Do("POST", "/api/v1/jobs", deep);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Body(r)["error"]["code"], "invalid_argument");
  EXPECT_EQ(Message(r), "request body: JSON nested deeper than 64 levels (the limit); flatten it");
  EXPECT_EQ(fake_.Calls(), 0);
}

TEST_F(ApiRoutesTest, ADuplicateKeyIsRefusedRatherThanTheLastOneWinning) {
  const auto r = Do("POST", "/api/v1/jobs", R"({"command":["true"],"command":["rm","-rf","x"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Message(r),
            "request body: duplicate key \"command\" in the top-level object; send each key once");
  EXPECT_EQ(fake_.Calls(), 0);
}

TEST_F(ApiRoutesTest, ABodyMustBeLabelledJson) {
  const std::string body = R"({"command":["true"]})";
  const auto post = [&](HttpHeaders headers) {
    return router_.Handle(alice_, HttpRequest{"POST", "/api/v1/jobs", std::move(headers), body});
  };
  for (const std::string type :
       {"text/plain", "application/x-www-form-urlencoded", "application/jsonx", ""}) {
    const auto r = post({{"Content-Type", type}});
    EXPECT_EQ(r.status, 415) << type;
    EXPECT_EQ(Body(r)["error"]["code"], "unsupported_media_type");
    EXPECT_EQ(Message(r).rfind("POST /api/v1/jobs: the body must be JSON sent with Content-Type: "
                               "application/json, not \"" +
                                   type + "\"",
                               0),
              0U)
        << Message(r);
  }
  // No Content-Type at all: every client of ours sends one (curl -d would send a form type).
  const auto none = post({});
  EXPECT_EQ(none.status, 415);
  EXPECT_NE(Message(none).find("(none was sent)"), std::string::npos) << Message(none);
  EXPECT_EQ(fake_.Calls(), 0);
  EXPECT_EQ(ErrorCodeForHttpStatus(415), ErrorCode::kInvalidArgument);

  // Any case, with parameters.
  EXPECT_EQ(post({{"content-type", "Application/JSON; charset=utf-8"}}).status, 201);
  // A request without a body needs no Content-Type.
  EXPECT_EQ(router_.Handle(alice_, HttpRequest{"POST", "/api/v1/jobs/42/cancel", {}, ""}).status,
            200);
}

TEST_F(ApiRoutesTest, JobRoutesNeedAnIdentity) {
  for (const auto& [method, target] :
       std::vector<std::pair<std::string, std::string>>{{"POST", "/api/v1/jobs"},
                                                        {"GET", "/api/v1/jobs"},
                                                        {"GET", "/api/v1/jobs/1"},
                                                        {"POST", "/api/v1/jobs/1/cancel"},
                                                        {"GET", "/api/v1/jobs/1/events"},
                                                        {"GET", "/api/v1/jobs/1/runs"},
                                                        {"GET", "/api/v1/jobs/1/logs"}}) {
    const auto r = Do(method, target, "{}", &anonymous_);
    EXPECT_EQ(r.status, 401) << target;
    EXPECT_EQ(Body(r)["error"]["code"], "unauthenticated");
    EXPECT_NE(Message(r).find("Unix socket"), std::string::npos);
  }
  EXPECT_EQ(fake_.Calls(), 0);
  EXPECT_EQ(Do("GET", "/api/v1/nodes", "", &anonymous_).status, 200);
  EXPECT_EQ(Do("GET", "/api/v1/gpus", "", &anonymous_).status, 200);
  EXPECT_FALSE(fake_.last_caller->authenticated);
}

TEST_F(ApiRoutesTest, IdsAreChecked) {
  for (const std::string bad : {"abc", "-1", "0", "1x", "99999999999999999999"}) {
    const auto r = Do("GET", "/api/v1/jobs/" + bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(Message(r).find("job id"), std::string::npos);
  }
  EXPECT_EQ(fake_.Calls(), 0);
  EXPECT_EQ(Do("POST", "/api/v1/jobs/42/cancel").status, 200);
  EXPECT_EQ(fake_.last_id, JobId(42));
}

TEST_F(ApiRoutesTest, UnknownPathAndWrongMethod) {
  EXPECT_EQ(Do("GET", "/api/v1/nope").status, 404);
  EXPECT_EQ(Do("GET", "/api/v1/jobs/1/nope").status, 404);
  auto r = Do("DELETE", "/api/v1/jobs");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.Header("Allow"), "POST, GET");
  r = Do("GET", "/api/v1/jobs/1/cancel");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.Header("Allow"), "POST");
}

TEST_F(ApiRoutesTest, ListJobsQuery) {
  auto r = Do("GET", "/api/v1/jobs?all=1&user=b%40b&limit=5");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["jobs"].size(), 1u);
  EXPECT_TRUE(fake_.last_filter->include_finished);
  EXPECT_EQ(fake_.last_filter->user, "b@b");
  EXPECT_EQ(fake_.last_filter->limit, 5);
  EXPECT_EQ(Do("GET", "/api/v1/jobs").status, 200);
  EXPECT_FALSE(fake_.last_filter->include_finished);
  EXPECT_FALSE(fake_.last_filter->user.has_value());
  EXPECT_NE(Message(Do("GET", "/api/v1/jobs?limit=0")).find("limit"), std::string::npos);
  EXPECT_NE(Message(Do("GET", "/api/v1/jobs?all=maybe")).find("all"), std::string::npos);
  r = Do("GET", "/api/v1/jobs?colour=red");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(Message(r).find("colour"), std::string::npos);
}

// GET /jobs answers rows: every field of the job but its environment, which GET /jobs/{id}
// shows; the JSON is compact (one line) and pages by cursor like /history.
TEST_F(ApiRoutesTest, ListJobsAnswersCompactRowsWithoutEnvAndPagesByCursor) {
  fake_.job.spec.env = {{"TOKEN", "secret"}};
  auto r = Do("GET", "/api/v1/jobs?limit=5&cursor=40");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.body.find('\n'), r.body.size() - 1) << "one line";
  const json listed = Body(r);
  ASSERT_EQ(listed["jobs"].size(), 1u);
  EXPECT_FALSE(listed["jobs"][0].contains("env"));
  EXPECT_EQ(listed["jobs"][0]["id"], 7);
  EXPECT_TRUE(listed["next_cursor"].is_null()) << "one job is less than the page of 5";
  EXPECT_EQ(fake_.last_filter->before, JobId(40));
  EXPECT_EQ(Body(Do("GET", "/api/v1/jobs/7"))["env"]["TOKEN"], "secret");
  // A full page names the cursor of the next: the last job's id.
  EXPECT_EQ(Body(Do("GET", "/api/v1/jobs?limit=1"))["next_cursor"], 7);
  EXPECT_FALSE(fake_.last_filter->before.has_value());
  EXPECT_EQ(Do("GET", "/api/v1/jobs?cursor=0").status, 400);
}

// A pending job's row is kept between listings while the service hands out the same job object;
// a running job's is rendered each time (its usage moves). The fake hands out a new object per
// call, so what is kept can only show in the row being the same as rendered fresh.
TEST_F(ApiRoutesTest, ListJobsRowsMatchTheJobAsItIsNow) {
  fake_.job.state = JobState::kPending;
  fake_.job.spec.name = "before";
  EXPECT_EQ(Body(Do("GET", "/api/v1/jobs"))["jobs"][0]["name"], "before");
  fake_.job.spec.name = "after";
  EXPECT_EQ(Body(Do("GET", "/api/v1/jobs"))["jobs"][0]["name"], "after");
  json row = Body(Do("GET", "/api/v1/jobs"))["jobs"][0];
  row.erase("queue_position");
  EXPECT_EQ(row, JobRowToJson(fake_.job));
}

// A pending job's queue_position is its 1-based place in the service's scheduling order; null
// when it is not in that order (held back, too new) or not pending.
TEST_F(ApiRoutesTest, ListJobsNumbersPendingJobsInSchedulingOrder) {
  fake_.job.state = JobState::kPending;
  fake_.queue_order = {JobId(3), JobId(12), JobId(7)};
  auto r = Do("GET", "/api/v1/jobs");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["jobs"][0]["queue_position"], 3);
  fake_.queue_order = {JobId(3)};
  r = Do("GET", "/api/v1/jobs");
  EXPECT_TRUE(Body(r)["jobs"][0]["queue_position"].is_null());
  fake_.queue_order = {JobId(7)};
  fake_.job.state = JobState::kRunning;
  r = Do("GET", "/api/v1/jobs");
  EXPECT_TRUE(Body(r)["jobs"][0].contains("queue_position"));
  EXPECT_TRUE(Body(r)["jobs"][0]["queue_position"].is_null());
}

TEST_F(ApiRoutesTest, HistoryPassesTheFilterAndAnswersAPageWithItsCursor) {
  fake_.history_next = JobId(41);
  const auto r = Do("GET",
                    "/api/v1/history?since_ms=1000&until_ms=2000&state=COMPLETED,failed&user=bob"
                    "&team=cv&cursor=50&limit=20");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["jobs"].size(), 1u);
  EXPECT_EQ(Body(r)["next_cursor"], 41);
  ASSERT_TRUE(fake_.last_history_filter.has_value());
  const HistoryFilter& f = *fake_.last_history_filter;
  EXPECT_EQ(f.since, FromUnixMillis(1000));
  EXPECT_EQ(f.until, FromUnixMillis(2000));
  EXPECT_EQ(f.states, (std::vector<JobState>{JobState::kCompleted, JobState::kFailed}));
  EXPECT_EQ(f.user, "bob");
  EXPECT_EQ(f.team, "cv");
  EXPECT_EQ(f.before, JobId(50));
  EXPECT_EQ(f.limit, 20);
  // The last page: no cursor; nothing set: no filter.
  fake_.history_next.reset();
  const auto last = Do("GET", "/api/v1/history");
  ASSERT_EQ(last.status, 200) << last.body;
  EXPECT_TRUE(Body(last)["next_cursor"].is_null());
  EXPECT_FALSE(fake_.last_history_filter->since.has_value());
  EXPECT_TRUE(fake_.last_history_filter->states.empty());
  EXPECT_FALSE(fake_.last_history_filter->user.has_value());
  EXPECT_EQ(fake_.last_history_filter->limit, 100);
}

TEST_F(ApiRoutesTest, HistoryRefusesBadParametersNamingThem) {
  const int before = fake_.Calls();
  for (const auto& [target, named] : std::vector<std::pair<std::string, std::string>>{
           {"/api/v1/history?state=DONE", "state: unknown job state 'DONE'"},
           {"/api/v1/history?since_ms=yesterday", "since_ms: must be Unix milliseconds"},
           {"/api/v1/history?limit=0", "limit: must be a whole number from 1 to 10000"},
           {"/api/v1/history?cursor=-1", "cursor: must be the next_cursor"},
           {"/api/v1/history?sort=id", "sort"}}) {
    const auto r = Do("GET", target);
    EXPECT_EQ(r.status, 400) << target;
    EXPECT_NE(Message(r).find(named), std::string::npos) << target << ": " << Message(r);
  }
  EXPECT_EQ(fake_.Calls(), before);
  EXPECT_EQ(Do("GET", "/api/v1/history", "", &anonymous_).status, 401);
}

TEST_F(ApiRoutesTest, ErrorCodesMapThroughTheTable) {
  const std::vector<std::pair<ErrorCode, int>> table = {{ErrorCode::kInvalidArgument, 400},
                                                        {ErrorCode::kNotFound, 404},
                                                        {ErrorCode::kAlreadyExists, 409},
                                                        {ErrorCode::kPermissionDenied, 403},
                                                        {ErrorCode::kFailedPrecondition, 409},
                                                        {ErrorCode::kResourceExhausted, 429},
                                                        {ErrorCode::kUnavailable, 503},
                                                        {ErrorCode::kIo, 500},
                                                        {ErrorCode::kInternal, 500}};
  for (const auto& [code, status] : table) {
    fake_.fail_with = Error{code, "because"};
    const auto r = Do("GET", "/api/v1/jobs/3");
    EXPECT_EQ(r.status, status);
    EXPECT_EQ(HttpStatusFor(code), status);
    EXPECT_EQ(Body(r)["error"]["message"], "because");
    EXPECT_EQ(Body(r)["error"]["code"], std::string(ErrorCodeName(code)));
  }
  EXPECT_EQ(ErrorCodeForHttpStatus(401), ErrorCode::kPermissionDenied);
  EXPECT_EQ(ErrorCodeForHttpStatus(413), ErrorCode::kResourceExhausted);
  EXPECT_EQ(ErrorCodeForHttpStatus(404), ErrorCode::kNotFound);
  EXPECT_EQ(ErrorCodeForHttpStatus(502), ErrorCode::kInternal);
}

TEST_F(ApiRoutesTest, ServiceExceptionsBecome500) {
  fake_.throw_exception = true;
  const auto r = Do("GET", "/api/v1/nodes");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(Body(r)["error"]["code"], "internal");
}

TEST_F(ApiRoutesTest, EventsNodesGpus) {
  fake_.events.push_back(Event{1, FromUnixMillis(0), JobId(3), "submit", "alice", "ok"});
  fake_.nodes.push_back(Node{});
  EXPECT_EQ(Body(Do("GET", "/api/v1/jobs/3/events"))["events"].size(), 1u);
  EXPECT_EQ(Body(Do("GET", "/api/v1/nodes"))["nodes"].size(), 1u);
  EXPECT_EQ(Body(Do("GET", "/api/v1/gpus"))["gpus"].size(), 0u);
}

// A job requeued once: its first run from its events (GPUs by index on the node), the second
// from the job itself.
TEST_F(ApiRoutesTest, RunsOfARequeuedJob) {
  const auto state = [](std::int64_t ms, JobState from, JobState to, const std::string& cause) {
    return Event{0,
                 FromUnixMillis(ms),
                 JobId(7),
                 "state",
                 "scheduler",
                 StateChangeText(ToString(from), ToString(to), cause)};
  };
  fake_.events = {state(1000, JobState::kPending, JobState::kStarting, StartingText("n1", {1})),
                  state(2000, JobState::kStarting, JobState::kRunning, "running on n1"),
                  state(5000, JobState::kRunning, JobState::kPreempted, "gpufleet requeue 7"),
                  state(5000, JobState::kPreempted, JobState::kPending, "requeued"),
                  state(6000, JobState::kPending, JobState::kStarting, StartingText("n1", {0}))};
  Node node;
  node.name = NodeId("n1");
  for (const auto& [index, uuid] : {std::pair{0, "GPU-a"}, std::pair{1, "GPU-b"}}) {
    Gpu gpu;
    gpu.index = index;
    gpu.uuid = GpuUuid(uuid);
    node.gpus.push_back(gpu);
  }
  fake_.nodes = {node};
  fake_.job.state = JobState::kRunning;
  fake_.job.start_time = FromUnixMillis(6500);
  fake_.job.allocation = Allocation{.node = NodeId("n1"), .gpus = {GpuUuid("GPU-a")}};
  const auto body = Body(Do("GET", "/api/v1/jobs/7/runs"));
  EXPECT_EQ(fake_.last_id, JobId(7));
  ASSERT_EQ(body["runs"].size(), 2u) << body.dump();
  const auto& first = body["runs"][0];
  EXPECT_EQ(first["run"], 1);
  EXPECT_EQ(first["node"], "n1");
  EXPECT_EQ(first["gpus"], nlohmann::json::parse(R"([{"index":1,"uuid":"GPU-b"}])"));
  EXPECT_EQ(first["start_time_ms"], 2000);
  EXPECT_EQ(first["end_time_ms"], 5000);
  EXPECT_EQ(first["end_time"], "1970-01-01T00:00:05.000Z");
  EXPECT_EQ(first["end_state"], "PREEMPTED");
  EXPECT_EQ(first["end_cause"], "gpufleet requeue 7");
  const auto& second = body["runs"][1];
  EXPECT_EQ(second["placed_time_ms"], 6000);
  EXPECT_EQ(second["start_time_ms"], 6500);
  EXPECT_TRUE(second["end_time_ms"].is_null());
  EXPECT_TRUE(second["end_state"].is_null());
  EXPECT_EQ(second["gpus"], nlohmann::json::parse(R"([{"index":0,"uuid":"GPU-a"}])"));
}

TEST_F(ApiRoutesTest, RunsOfAJobTheCallerMayNotSeeAre404) {
  fake_.fail_with = NotFound("job 7 not found");
  const auto r = Do("GET", "/api/v1/jobs/7/runs");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(Body(r)["error"]["code"], "not_found");
}

TEST_F(ApiRoutesTest, LogsPassTheReadToTheServiceAndAnswerItsChunk) {
  fake_.log_chunk = LogChunk{.data = std::string("3456\0\xff", 6), .size = 10, .next_offset = 9};
  auto r = Do("GET", "/api/v1/jobs/3/logs?stream=stderr&offset=3&limit=4");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(fake_.last_log_request.has_value());
  EXPECT_EQ(fake_.last_log_request->job, JobId(3));
  EXPECT_EQ(fake_.last_log_request->stream, LogStream::kStderr);
  EXPECT_EQ(fake_.last_log_request->offset, 3);
  EXPECT_EQ(fake_.last_log_request->limit, 4);
  EXPECT_EQ(fake_.last_caller->uid, 1000u);
  EXPECT_EQ(r.body, std::string("3456\0\xff", 6));  // bytes, as the node read them
  EXPECT_EQ(r.Header("X-Gpufleet-Log-Size"), "10");
  EXPECT_EQ(r.Header("X-Gpufleet-Next-Offset"), "9");
  EXPECT_EQ(r.Header("Content-Type"), "text/plain; charset=utf-8");

  r = Do("GET", "/api/v1/jobs/3/logs");  // the defaults
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(fake_.last_log_request->stream, LogStream::kStdout);
  EXPECT_EQ(fake_.last_log_request->offset, 0);
  EXPECT_EQ(fake_.last_log_request->limit, kDefaultLogChunkBytes);
}

TEST_F(ApiRoutesTest, TerminalInputGoesToTheServiceDecoded) {
  auto r = Do("POST",
              "/api/v1/jobs/3/terminal",
              R"({"input_base64": "bHMKAw==", "rows": 40, "cols": 120})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["job"], 3);
  ASSERT_TRUE(fake_.last_terminal_input.has_value());
  EXPECT_EQ(fake_.last_id, JobId(3));
  EXPECT_EQ(fake_.last_terminal_input->data, "ls\n\x03");
  EXPECT_EQ(fake_.last_terminal_input->size, (TerminalSize{40, 120}));
  EXPECT_EQ(fake_.last_caller->uid, 1000u);

  const int calls = fake_.Calls();
  EXPECT_NE(Message(Do("POST", "/api/v1/jobs/3/terminal", R"({"input_base64": "%%"})"))
                .find("body.input_base64"),
            std::string::npos);
  EXPECT_EQ(fake_.Calls(), calls);  // refused before the service
  EXPECT_EQ(Do("POST", "/api/v1/jobs/3/terminal", "{}", &anonymous_).status, 401);
  fake_.fail_with = FailedPrecondition("job 3 has no terminal");
  EXPECT_EQ(Do("POST", "/api/v1/jobs/3/terminal", "{}").status, 409);
}

TEST_F(ApiRoutesTest, LogsRefuseBadParametersAndMapTheServicesErrors) {
  EXPECT_NE(Message(Do("GET", "/api/v1/jobs/3/logs?stream=both")).find("stream"),
            std::string::npos);
  EXPECT_NE(Message(Do("GET", "/api/v1/jobs/3/logs?limit=8388609")).find("limit"),
            std::string::npos);
  EXPECT_NE(Message(Do("GET", "/api/v1/jobs/3/logs?offset=-1")).find("offset"), std::string::npos);
  EXPECT_EQ(fake_.Calls(), 0);
  EXPECT_EQ(Do("GET", "/api/v1/jobs/3/logs", "", &anonymous_).status, 401);

  fake_.fail_with = Unavailable(
      "node gpu-03 is down (no report); job 3's output is on that "
      "node in /var/lib/gpufleet/agent/jobs/3/stdout.log");
  auto r = Do("GET", "/api/v1/jobs/3/logs");
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(Message(r).find("/var/lib/gpufleet/agent/jobs/3/stdout.log"), std::string::npos);
  fake_.fail_with = FailedPrecondition("job 3 is PENDING and has not started");
  EXPECT_EQ(Do("GET", "/api/v1/jobs/3/logs").status, 409);
}

// The agent link as the routes see it: records the log replies it is handed.
class RecordingAgentLink final : public AgentLinkService {
 public:
  Result<AgentSession> Hello(const Caller&, AgentHello) override { return AgentSession{}; }
  Status Report(const Caller&, std::int64_t, AgentReportBatch) override { return OkStatus(); }
  Result<std::shared_ptr<CommandStream>> Commands(const Caller&,
                                                  std::int64_t,
                                                  std::int64_t) override {
    return Unavailable("no streams here");
  }
  Status LogReply(const Caller& caller, std::int64_t session, AgentLogReply reply) override {
    last_caller = caller;
    last_session = session;
    replies.push_back(std::move(reply));
    return answer;
  }
  Status answer = OkStatus();
  std::optional<Caller> last_caller;
  std::int64_t last_session = 0;
  std::vector<AgentLogReply> replies;
};

TEST_F(ApiRoutesTest, AgentLogsHandsTheReplyToTheLink) {
  RecordingAgentLink link;
  Router router(fake_, nullptr, &link);
  const Caller node{.authenticated = false,
                    .uid = 0,
                    .gid = 0,
                    .user = "",
                    .role = Role::kUser,
                    .node = NodeId("gpu-03")};
  const auto post = [&](const std::string& target, const json& body) {
    return router.Handle(node, Request("POST", target, body.dump()));
  };
  const json reply = AgentLogReplyToJson(AgentLogReply{
      .request = 12, .chunk = LogChunk{.data = "line\n", .size = 5, .next_offset = 5}});
  auto r = post("/api/v1/agent/logs?session=77", reply);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(link.replies.size(), 1u);
  EXPECT_EQ(link.last_session, 77);
  EXPECT_EQ(link.last_caller->node, NodeId("gpu-03"));
  EXPECT_EQ(link.replies[0].request, 12);
  ASSERT_TRUE(link.replies[0].chunk.ok());
  EXPECT_EQ(link.replies[0].chunk->data, "line\n");

  EXPECT_EQ(post("/api/v1/agent/logs", reply).status, 400);  // no session
  EXPECT_EQ(post("/api/v1/agent/logs?session=77", json{{"request", "x"}}).status, 400);
  link.answer = NotFound("no log read 12 waits on node gpu-03");
  EXPECT_EQ(post("/api/v1/agent/logs?session=77", reply).status, 404);
  // Without remote agents (gpufleet up) the route is not there.
  EXPECT_EQ(
      router_.Handle(node, Request("POST", "/api/v1/agent/logs?session=1", reply.dump())).status,
      404);
}

TEST_F(ApiRoutesTest, ExplainAnswersTheServicesExplanation) {
  fake_.explanation.state = "pending";
  fake_.explanation.outcome = "waits";
  fake_.explanation.reason = "behind job 3 (high priority, needs 4 GPUs)";
  fake_.explanation.nodes = {NodeExplanation{}};
  fake_.explanation.nodes[0].node = NodeId("gpu01");
  fake_.explanation.nodes[0].verdict = "busy";
  const auto r = Do("GET", "/api/v1/jobs/12/explain");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(fake_.last_id, JobId(12));
  EXPECT_EQ(fake_.last_caller->uid, 1000u);
  EXPECT_EQ(Body(r)["job"], 12);
  EXPECT_EQ(Body(r)["reason"], "behind job 3 (high priority, needs 4 GPUs)");
  EXPECT_EQ(Body(r)["nodes"][0]["node"], "gpu01");
  EXPECT_EQ(Body(r)["nodes"][0]["verdict"], "busy");
}

TEST_F(ApiRoutesTest, ExplainNeedsAnIdentityAndHidesOthersJobs) {
  EXPECT_EQ(Do("GET", "/api/v1/jobs/12/explain", "", &anonymous_).status, 401);
  EXPECT_EQ(fake_.Calls(), 0);                     // an anonymous caller never reaches the service
  fake_.fail_with = NotFound("job 12 not found");  // what the service says of another's job
  const auto hidden = Do("GET", "/api/v1/jobs/12/explain");
  EXPECT_EQ(hidden.status, 404);
  EXPECT_EQ(Message(hidden), "job 12 not found");
  fake_.fail_with = FailedPrecondition("job 12 has ended (COMPLETED)");
  EXPECT_EQ(Do("GET", "/api/v1/jobs/12/explain").status, 409);
  EXPECT_EQ(Do("GET", "/api/v1/jobs/x/explain").status, 400);
  EXPECT_EQ(Do("POST", "/api/v1/jobs/12/explain").status, 405);
}

TEST_F(ApiRoutesTest, ArraySubmissionCallsSubmitArrayAndAnswersTheFirstTask) {
  const auto r = Do("POST",
                    "/api/v1/jobs",
                    R"({"command":["t"],"after":[{"job":3,"kind":"ok"}],)"
                    R"("array":{"indices":[0,2,4],"max_running":2}})");
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(fake_.last_array.has_value());
  EXPECT_EQ(fake_.last_array->indices, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(fake_.last_array->max_running, 2);
  EXPECT_EQ(fake_.last_spec->after,
            (std::vector<Dependency>{{.job = JobId(3), .kind = DependencyKind::kOk}}));
  EXPECT_EQ(Body(r)["id"], 7);
  EXPECT_EQ(Body(r)["array_job"], 7);
  EXPECT_EQ(Body(r)["array_index"], 0);
  EXPECT_EQ(r.Header("location"), "/api/v1/jobs/7");
  const auto bad = Do("POST", "/api/v1/jobs", R"({"command":["t"],"array":{"indices":"0-9"}})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(Message(bad).find("array.indices"), std::string::npos) << Message(bad);
}

TEST_F(ApiRoutesTest, AMultiJobSubmissionCallsSubmitBatchAndAnswersTheIdsInOrder) {
  const auto r = Do("POST",
                    "/api/v1/jobs",
                    R"({"jobs":[{"command":["a"],"gpus":2},{"command":["b"],"name":"second"}]})");
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_EQ(fake_.last_batch.size(), 2u);
  EXPECT_EQ(fake_.last_batch[0].argv, (std::vector<std::string>{"a"}));
  EXPECT_EQ(fake_.last_batch[0].request.gpus, 2);
  EXPECT_EQ(fake_.last_batch[1].name, "second");
  EXPECT_EQ(Body(r), json::parse(R"({"ids":[7,8]})"));
  EXPECT_EQ(fake_.last_caller->uid, alice_.uid);
}

// Nothing reaches the service when any spec is malformed; the error names the spec's index
// and its field.
TEST_F(ApiRoutesTest, AMultiJobSubmissionNamesTheIndexAndFieldOfABadSpec) {
  const auto bad_gpus =
      Do("POST", "/api/v1/jobs", R"({"jobs":[{"command":["a"]},{"command":["b"],"gpus":"two"}]})");
  EXPECT_EQ(bad_gpus.status, 400);
  EXPECT_EQ(Message(bad_gpus).rfind("jobs[1]: gpus:", 0), 0u) << Message(bad_gpus);
  const auto no_command = Do("POST", "/api/v1/jobs", R"({"jobs":[{"gpus":1}]})");
  EXPECT_EQ(no_command.status, 400);
  EXPECT_EQ(Message(no_command).rfind("jobs[0]: command:", 0), 0u) << Message(no_command);
  const auto array_inside =
      Do("POST", "/api/v1/jobs", R"({"jobs":[{"command":["a"],"array":{"indices":[0]}}]})");
  EXPECT_EQ(array_inside.status, 400);
  EXPECT_EQ(Message(array_inside).rfind("jobs[0]: array:", 0), 0u) << Message(array_inside);
  const auto beside = Do("POST", "/api/v1/jobs", R"({"jobs":[{"command":["a"]}],"gpus":1})");
  EXPECT_EQ(beside.status, 400);
  EXPECT_NE(Message(beside).find("no other field"), std::string::npos) << Message(beside);
  for (const char* body : {R"({"jobs":[]})", R"({"jobs":{"command":["a"]}})"}) {
    const auto r = Do("POST", "/api/v1/jobs", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(Message(r).rfind("jobs: must be a non-empty array", 0), 0u) << Message(r);
  }
  EXPECT_TRUE(fake_.last_batch.empty());
  EXPECT_EQ(fake_.calls, 0);
}

TEST_F(ApiRoutesTest, CancelArrayAnswersTheTasks) {
  const auto r = Do("POST", "/api/v1/arrays/7/cancel");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(fake_.last_id, JobId(7));
  ASSERT_EQ(Body(r)["jobs"].size(), 1u);
  EXPECT_EQ(Body(r)["jobs"][0]["id"], 7);
  EXPECT_EQ(Do("POST", "/api/v1/arrays/7/cancel", "", &anonymous_).status, 401);
  EXPECT_EQ(Do("POST", "/api/v1/arrays/x/cancel").status, 400);
  fake_.fail_with = NotFound("job 7 not found");
  EXPECT_EQ(Do("POST", "/api/v1/arrays/7/cancel").status, 404);
}

// Approve and checkpoint need an identity; the service's refusals keep their meaning: a user
// who is not root gets 403 with the service's message, a job in the wrong state 409.
TEST_F(ApiRoutesTest, ApproveAndCheckpointMapTheServicesAnswers) {
  for (const std::string action : {"approve", "checkpoint"}) {
    const std::string target = "/api/v1/jobs/9/" + action;
    const auto ok = Do("POST", target);
    ASSERT_EQ(ok.status, 200) << action << ": " << ok.body;
    EXPECT_EQ(fake_.last_id, JobId(9));
    EXPECT_EQ(fake_.last_caller->user, "alice");
    EXPECT_EQ(Body(ok)["id"], 9);
    EXPECT_TRUE(Body(ok).contains("budget_approved"));
    EXPECT_TRUE(Body(ok).contains("last_checkpoint_ms"));
    EXPECT_EQ(Do("POST", target, "", &anonymous_).status, 401) << action;
    EXPECT_EQ(Do("GET", target).status, 405) << action;

    fake_.fail_with = PermissionDenied("quota approve: only root may let a job run past");
    const auto denied = Do("POST", target);
    EXPECT_EQ(denied.status, 403) << action;
    EXPECT_NE(Message(denied).find("only root"), std::string::npos);
    fake_.fail_with = FailedPrecondition("job 9 is RUNNING, not PENDING");
    const auto conflict = Do("POST", target);
    EXPECT_EQ(conflict.status, 409) << action;
    EXPECT_NE(Message(conflict).find("RUNNING"), std::string::npos);
    fake_.fail_with.reset();
  }
}

// Hold, release and requeue: the job after, the caller passed on, the service's refusals kept
// (403 for an administrator's hold, 409 naming a state, 404 for others' jobs).
TEST_F(ApiRoutesTest, HoldReleaseAndRequeueMapTheServicesAnswers) {
  fake_.job.held_by = "alice";
  for (const std::string action : {"hold", "release", "requeue"}) {
    const std::string target = "/api/v1/jobs/9/" + action;
    const auto ok = Do("POST", target);
    ASSERT_EQ(ok.status, 200) << action << ": " << ok.body;
    EXPECT_EQ(fake_.last_id, JobId(9));
    EXPECT_EQ(fake_.last_caller->user, "alice");
    EXPECT_EQ(Body(ok)["held_by"], "alice");
    EXPECT_EQ(Do("POST", target, "", &anonymous_).status, 401) << action;
    EXPECT_EQ(Do("GET", target).status, 405) << action;
    EXPECT_EQ(Do("POST", "/api/v1/jobs/x/" + action).status, 400) << action;
    for (const auto& [error, status] : std::vector<std::pair<Error, int>>{
             {PermissionDenied("release: job 9 is held by root"), 403},
             {FailedPrecondition("hold: job 9 is RUNNING, not PENDING"), 409},
             {NotFound("job 9 not found"), 404}}) {
      fake_.fail_with = error;
      const auto refused = Do("POST", target);
      EXPECT_EQ(refused.status, status) << action;
      EXPECT_EQ(Message(refused), error.message);
    }
    fake_.fail_with.reset();
  }
  fake_.job.held_by.clear();
  EXPECT_TRUE(Body(Do("GET", "/api/v1/jobs/9"))["held_by"].is_null());
}

TEST_F(ApiRoutesTest, UpdateReadsItsFieldsAsASubmissionDoes) {
  const auto ok = Do("POST",
                     "/api/v1/jobs/9/update",
                     R"({"gpus":2,"time_limit":"2h","priority":"low","team":"cv","name":"x"})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(fake_.last_id, JobId(9));
  ASSERT_TRUE(fake_.last_update.has_value());
  EXPECT_EQ(fake_.last_update->gpus, 2);
  EXPECT_EQ(fake_.last_update->time_limit, std::chrono::seconds(7200));
  EXPECT_EQ(fake_.last_update->priority, PriorityClass::kLow);
  EXPECT_EQ(fake_.last_update->team, "cv");
  EXPECT_EQ(fake_.last_update->name, "x");
  // Only what is sent is changed.
  ASSERT_EQ(Do("POST", "/api/v1/jobs/9/update", R"({"name":"y"})").status, 200);
  EXPECT_FALSE(fake_.last_update->gpus.has_value());
  EXPECT_FALSE(fake_.last_update->time_limit.has_value());
  EXPECT_EQ(fake_.last_update->name, "y");
  // Refused before the service, naming the field.
  const int calls = fake_.Calls();
  const auto gpus = Do("POST", "/api/v1/jobs/9/update", R"({"gpus":-1})");
  EXPECT_EQ(gpus.status, 400);
  EXPECT_NE(Message(gpus).find("gpus"), std::string::npos) << Message(gpus);
  const auto command = Do("POST", "/api/v1/jobs/9/update", R"({"command":["x"]})");
  EXPECT_EQ(command.status, 400);
  EXPECT_NE(Message(command).find("known fields: gpus, cpus, mem, mem_mib, time_limit"),
            std::string::npos);
  EXPECT_EQ(fake_.Calls(), calls);
  EXPECT_EQ(Do("POST", "/api/v1/jobs/9/update", R"({"name":"y"})", &anonymous_).status, 401);
}

TEST_F(ApiRoutesTest, CancelByFilterPassesTheFilterAndAnswersTheJobs) {
  const auto ok = Do(
      "POST", "/api/v1/jobs/cancel", R"({"user":"alice","state":"pending","name":"n","team":""})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  ASSERT_TRUE(fake_.last_selector.has_value());
  EXPECT_EQ(fake_.last_selector->user, "alice");
  EXPECT_EQ(fake_.last_selector->state, JobState::kPending);
  EXPECT_EQ(fake_.last_selector->name, "n");
  EXPECT_EQ(fake_.last_selector->team, "");
  ASSERT_EQ(Body(ok)["jobs"].size(), 1U);
  const auto state = Do("POST", "/api/v1/jobs/cancel", R"({"state":"DONE"})");
  EXPECT_EQ(state.status, 400);
  EXPECT_NE(Message(state).find("state: unknown job state 'DONE'"), std::string::npos)
      << Message(state);
  EXPECT_EQ(Do("POST", "/api/v1/jobs/cancel", R"({"signal":"USR1"})").status, 400);
  EXPECT_EQ(Do("POST", "/api/v1/jobs/cancel", R"({"user":"a"})", &anonymous_).status, 401);
}

TEST_F(ApiRoutesTest, SignalTakesANameOrANumberAndAFilter) {
  const auto one = Do("POST", "/api/v1/jobs/7/signal", R"({"signal":"SIGUSR1"})");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(fake_.last_id, JobId(7));
  EXPECT_EQ(fake_.last_signal, 10);
  ASSERT_EQ(Do("POST", "/api/v1/jobs/7/signal", R"({"signal":12})").status, 200);
  EXPECT_EQ(fake_.last_signal, 12);
  const auto bad = Do("POST", "/api/v1/jobs/7/signal", R"({"signal":"FOO"})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(Message(bad).find("signal: 'FOO' is not a signal; use a name such as USR1"),
            std::string::npos)
      << Message(bad);
  EXPECT_EQ(Do("POST", "/api/v1/jobs/7/signal", R"({"signal":"KILL"})").status, 400);
  EXPECT_EQ(Do("POST", "/api/v1/jobs/7/signal", R"({})").status, 400);
  EXPECT_EQ(Do("POST", "/api/v1/jobs/7/signal", R"({"signal":"USR1","user":"a"})").status, 400);

  const auto many =
      Do("POST", "/api/v1/jobs/signal", R"({"signal":"HUP","name":"sweep","state":"RUNNING"})");
  ASSERT_EQ(many.status, 200) << many.body;
  EXPECT_EQ(fake_.last_signal, 1);
  ASSERT_TRUE(fake_.last_selector.has_value());
  EXPECT_EQ(fake_.last_selector->name, "sweep");
  EXPECT_EQ(fake_.last_selector->state, JobState::kRunning);
  EXPECT_EQ(Body(many)["jobs"].size(), 1U);
  ASSERT_EQ(Body(many)["skipped"].size(), 1U);
  EXPECT_EQ(Body(many)["skipped"][0]["state"], "PENDING");
  EXPECT_EQ(Do("POST", "/api/v1/jobs/signal", R"({"signal":"USR1","x":1})").status, 400);
  EXPECT_EQ(Do("POST", "/api/v1/jobs/signal", R"({"signal":"USR1"})", &anonymous_).status, 401);
}

TEST_F(ApiRoutesTest, QuotaAnswersTeamsAndUsers) {
  fake_.quota =
      QuotaReport{.period_start = FromUnixMillis(1'772'323'200'000),
                  .period_end = FromUnixMillis(1'775'001'600'000),
                  .quotas_on = true,
                  .teams = {TeamQuota{.team = "cv",
                                      .listed = true,
                                      .guaranteed_gpus = 4,
                                      .max_gpus = 8,
                                      .held_milli = 6000,
                                      .borrowed_milli = 2000,
                                      .budget_gpu_hours = 100,
                                      .used_gpu_hours = 30.5,
                                      .left_gpu_hours = 69.5,
                                      .over_budget = "hold"},
                            TeamQuota{.team = "", .over_budget = "borrow_only"},
                            TeamQuota{.team = "nlp",
                                      .budget_gpu_hours = 10,
                                      .used_gpu_hours = 12,
                                      .left_gpu_hours = 0,
                                      .over_budget = "borrow_only",
                                      .out_of_budget = true}},
                  .users = {UserQuota{.team = "cv", .user = "alice", .used_gpu_hours = 30.5}}};
  const auto r = Do("GET", "/api/v1/quota");
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = Body(r);
  EXPECT_EQ(body["period_start"], "2026-03-01T00:00:00.000Z");
  EXPECT_EQ(body["period_end_ms"], 1'775'001'600'000);
  EXPECT_EQ(body["quotas_on"], true);
  ASSERT_EQ(body["teams"].size(), 3u);
  EXPECT_EQ(body["teams"][0]["team"], "cv");
  EXPECT_EQ(body["teams"][0]["max_gpus"], 8);
  EXPECT_EQ(body["teams"][0]["gpus_borrowed"], 2);
  EXPECT_EQ(body["teams"][0]["left_gpu_hours"], 69.5);
  // The policy for when a team is over its budget, apart from whether it is over now.
  EXPECT_EQ(body["teams"][0]["over_budget"], "hold");
  EXPECT_EQ(body["teams"][0]["out_of_budget"], false);
  EXPECT_EQ(body["teams"][2]["out_of_budget"], true);
  EXPECT_TRUE(body["teams"][1]["budget_gpu_hours"].is_null());  // no budget: null, not 0
  EXPECT_TRUE(body["teams"][1]["max_gpus"].is_null());
  EXPECT_EQ(body["users"][0]["user"], "alice");
  EXPECT_EQ(body["users"][0]["used_gpu_hours"], 30.5);
  EXPECT_EQ(Do("GET", "/api/v1/quota", "", &anonymous_).status, 401);
  EXPECT_EQ(Do("GET", "/api/v1/quota?all=1").status, 400);  // no query parameters
}

TEST_F(ApiRoutesTest, ReportTakesPeriodAndTeam) {
  fake_.report.period = "2026-11";
  fake_.report.teams = {TeamFigures{.team = "cv", .budget_gpu_hours = 10.0}};
  const auto r = Do("GET", "/api/v1/report?period=2026-11&team=cv");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(fake_.last_report_request);
  EXPECT_EQ(fake_.last_report_request->period, "2026-11");
  EXPECT_EQ(fake_.last_report_request->team, "cv");
  const json body = Body(r);
  EXPECT_EQ(body["period"], "2026-11");
  EXPECT_EQ(body["teams"][0]["budget_gpu_hours"], 10.0);
  EXPECT_TRUE(body["teams"][0]["budget_used_pct"].is_null());

  Do("GET", "/api/v1/report?period=2026-12");
  EXPECT_FALSE(fake_.last_report_request->team);
  const auto missing = Do("GET", "/api/v1/report");
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(Message(missing).find("period"), std::string::npos) << Message(missing);
  EXPECT_EQ(Do("GET", "/api/v1/report?period=2026-11&month=3").status, 400);
  EXPECT_EQ(Do("GET", "/api/v1/report?period=2026-11", "", &anonymous_).status, 401);
}

TEST_F(ApiRoutesTest, SubscriptionsCreateListAndDelete) {
  auto r = Do("POST",
              "/api/v1/subscriptions",
              R"({"scope":"team","team":"cv","channel":"webhook",)"
              R"("target":"https://h.example/x","events":["job_end","quota_80","job_end"]})");
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(fake_.last_subscription.has_value());
  EXPECT_EQ(fake_.last_subscription->scope, SubscriptionScope::kTeam);
  EXPECT_EQ(fake_.last_subscription->team, "cv");
  EXPECT_EQ(fake_.last_subscription->channel, NotifyChannel::kWebhook);
  EXPECT_EQ(fake_.last_subscription->kinds,
            (std::vector<NotifyKind>{NotifyKind::kJobEnd, NotifyKind::kQuota80}));
  EXPECT_EQ(Body(r)["id"], "sub-1");
  EXPECT_EQ(Body(r)["owner"], "alice");
  EXPECT_EQ(Body(r)["events"], json({"job_end", "quota_80"}));

  r = Do("POST",
         "/api/v1/subscriptions",
         R"({"channel":"email","target":"a@b","events":["job_ended"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(Message(r).find("events: event 'job_ended' is not one gpufleet notifies of"),
            std::string::npos)
      << Message(r);
  r = Do("POST", "/api/v1/subscriptions", R"({"channel":"sms","target":"1"})");
  EXPECT_EQ(r.status, 400);
  r = Do("POST", "/api/v1/subscriptions", R"({"channel":"email","target":"a@b","x":1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(Message(r).find("x: unknown field"), std::string::npos);
  r = Do("POST", "/api/v1/subscriptions", R"({"channel":"email","target":"a@b"})", &anonymous_);
  EXPECT_EQ(r.status, 401);

  fake_.subscriptions = {Subscription{.id = "sub-2", .owner = "alice", .target = "http://h"}};
  r = Do("GET", "/api/v1/subscriptions");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(Body(r)["subscriptions"].size(), 1u);
  EXPECT_EQ(Body(r)["subscriptions"][0]["scope"], "user");
  EXPECT_TRUE(Body(r)["subscriptions"][0]["team"].is_null());

  r = Do("DELETE", "/api/v1/subscriptions/sub-2");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(fake_.last_subscription_id, "sub-2");
}

}  // namespace
}  // namespace gf
