// The dashboard's routes: its embedded files at / (web_assets.h), the GPU history it charts
// (GET /api/v1/gpus/{uuid}/series) and the cluster's (GET /api/v1/cluster/series), through the
// Router. The pages themselves are tested in a
// real browser (tests/browser).
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/fake_cluster_service.h"
#include "api/routes.h"
#include "api/web_assets.h"
#include "metrics/cluster_series.h"
#include "monitor/telemetry.h"

namespace gf {
namespace {

using testing::FakeClusterService;

HttpResponse Get(const Router& router, const std::string& target) {
  return router.Handle(Caller{}, HttpRequest{"GET", target, {}, ""});
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(WebAssetsTest, EveryFileIsServedToAnyoneWithItsTypeAndSafetyHeaders) {
  FakeClusterService fake;
  const Router router(fake);
  ASSERT_FALSE(WebAssets().empty());
  for (const WebAsset& asset : WebAssets()) {
    const HttpResponse r = Get(router, std::string(asset.path));  // anonymous, as over TCP
    ASSERT_EQ(r.status, 200) << asset.path;
    EXPECT_EQ(r.Header("Content-Type"), std::string(asset.content_type)) << asset.path;
    EXPECT_EQ(r.body, asset.body) << asset.path;
    EXPECT_EQ(r.Header("X-Content-Type-Options"), "nosniff") << asset.path;
    const std::string csp = r.Header("Content-Security-Policy").value_or("");
    EXPECT_TRUE(Contains(csp, "script-src 'self';")) << csp;
    EXPECT_FALSE(Contains(csp, "unsafe")) << csp;
    EXPECT_TRUE(Contains(csp, "frame-ancestors 'none'")) << csp;
  }
  EXPECT_FALSE(fake.LastCaller().has_value());  // no service call: the files hold no data
}

TEST(WebAssetsTest, TheIndexIsHtmlWithoutInlineScript) {
  FakeClusterService fake;
  const Router router(fake);
  const HttpResponse r = Get(router, "/?from=bookmark");  // a query does not change the file
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_TRUE(Contains(r.body, "<!doctype html>"));
  // The CSP allows no inline script: every <script> must name its file.
  for (std::size_t at = r.body.find("<script"); at != std::string::npos;
       at = r.body.find("<script", at + 1)) {
    EXPECT_TRUE(r.body.compare(at, 12, "<script src=") == 0) << r.body.substr(at, 40);
  }
}

TEST(WebAssetsTest, OtherMethodsAndPathsGoToTheApi) {
  FakeClusterService fake;
  const Router router(fake);
  const HttpResponse post = router.Handle(Caller{}, HttpRequest{"POST", "/", {}, ""});
  EXPECT_EQ(post.status, 404) << post.body;
  EXPECT_EQ(post.Header("Content-Type"), "application/json");
  EXPECT_EQ(Get(router, "/nothing.js").status, 404);
  EXPECT_EQ(Get(router, "/api/v1/health").Header("Content-Type"), "application/json");
}

// One GPU with readings at t0, t0+1 s, t0+2 s: 10, 20, 30 % busy.
constexpr std::int64_t kT0 = 1'700'000'000'000;
void FeedTelemetry(Telemetry& telemetry) {
  Node node;
  node.name = NodeId("node-a");
  Gpu gpu;
  gpu.index = 0;
  gpu.uuid = GpuUuid("GPU-0");
  gpu.model = "H100-80GB";
  gpu.memory_mib = 81'559;
  node.gpus.push_back(gpu);
  telemetry.SetInventory(node);
  for (std::int64_t i = 0; i < 3; ++i) {
    GpuSample s;
    s.uuid = gpu.uuid;
    s.time = FromUnixMillis(kT0 + 1000 * i);
    s.memory_total_mib = gpu.memory_mib;
    s.memory_used_mib = 1000 * (i + 1);
    s.util_gpu_pct = static_cast<int>(10 * (i + 1));
    (void)telemetry.Ingest(node.name, {s});
  }
}

TEST(GpuSeriesRouteTest, AnswersTheRingsPointsInTheAskedWindow) {
  FakeClusterService fake;
  Telemetry telemetry;
  FeedTelemetry(telemetry);
  const Router router(fake, &telemetry);
  HttpResponse r =
      Get(router,
          "/api/v1/gpus/GPU-0/series?metric=util_gpu_pct&from_ms=" + std::to_string(kT0 + 1000));
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["uuid"], "GPU-0");
  EXPECT_EQ(body["metric"], "util_gpu_pct");
  EXPECT_EQ(body["resolution"], "fine");
  EXPECT_EQ(body["points"],
            nlohmann::json::parse("[[" + std::to_string(kT0 + 1000) + ",20.0],[" +
                                  std::to_string(kT0 + 2000) + ",30.0]]"));
  r = Get(router,
          "/api/v1/gpus/GPU-0/series?metric=memory_used_mib&to_ms=" + std::to_string(kT0 + 1000));
  ASSERT_EQ(r.status, 200) << r.body;
  body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["points"], nlohmann::json::parse("[[" + std::to_string(kT0) + ",1000.0]]"));
}

// Coarse: the ring holds the recent minutes; what is older comes from the store's per-minute
// rollups (the fake's), before the ring's points, for the readings the store keeps.
TEST(GpuSeriesRouteTest, CoarseSeriesOlderThanTheRingComeFromTheStore) {
  FakeClusterService fake;
  Telemetry telemetry;
  FeedTelemetry(telemetry);  // its three samples fall in one minute of the coarse ring
  const std::int64_t minute0 = kT0 / 60'000 * 60'000;
  for (std::int64_t m = 1; m <= 2; ++m) {
    GpuMinute row{.node = NodeId("node-a"),
                  .uuid = GpuUuid("GPU-0"),
                  .minute = FromUnixMillis(minute0 - m * 60'000),
                  .samples = 12,
                  .util_mean_pct = 50.0 + static_cast<double>(m),
                  .memory_used_max_mib = 4096 * m,
                  .power_mean_w = 300.0 + static_cast<double>(m)};
    fake.gpu_minutes.push_back(row);
    row.uuid = GpuUuid("GPU-1");  // another GPU's: never in GPU-0's series
    fake.gpu_minutes.push_back(row);
  }
  std::sort(fake.gpu_minutes.begin(), fake.gpu_minutes.end(), [](const auto& a, const auto& b) {
    return a.minute < b.minute;
  });
  const Router router(fake, &telemetry);
  const std::string window = "&resolution=coarse&from_ms=" + std::to_string(minute0 - 600'000) +
                             "&to_ms=" + std::to_string(minute0 + 60'000);
  HttpResponse r = Get(router, "/api/v1/gpus/GPU-0/series?metric=util_gpu_pct" + window);
  ASSERT_EQ(r.status, 200) << r.body;
  // Two stored minutes, oldest first, then the ring's minute: the mean of 10, 20 and 30 %.
  EXPECT_EQ(nlohmann::json::parse(r.body)["points"],
            nlohmann::json::parse("[[" + std::to_string(minute0 - 120'000) + ",52.0],[" +
                                  std::to_string(minute0 - 60'000) + ",51.0],[" +
                                  std::to_string(minute0) + ",20.0]]"));
  r = Get(router, "/api/v1/gpus/GPU-0/series?metric=power_w" + window);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["points"][0][1], 302.0);
  // The store keeps no temperature: the ring's alone (the samples gave none).
  r = Get(router, "/api/v1/gpus/GPU-0/series?metric=temperature_c" + window);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(nlohmann::json::parse(r.body)["points"].empty()) << r.body;
  // Fine series never read the store.
  r = Get(
      router,
      "/api/v1/gpus/GPU-0/series?metric=util_gpu_pct&from_ms=" + std::to_string(minute0 - 600'000));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["points"].size(), 3U);
}

TEST(GpuSeriesRouteTest, RefusesWhatItCannotAnswerNamingTheField) {
  FakeClusterService fake;
  Telemetry telemetry;
  FeedTelemetry(telemetry);
  const Router router(fake, &telemetry);
  HttpResponse r = Get(router, "/api/v1/gpus/GPU-0/series");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(Contains(r.body, "metric: must be util_gpu_pct")) << r.body;
  r = Get(router, "/api/v1/gpus/GPU-0/series?metric=util_gpu_pct&resolution=daily");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(Contains(r.body, "resolution: must be fine or coarse")) << r.body;
  r = Get(router, "/api/v1/gpus/GPU-0/series?metric=util_gpu_pct&from_ms=yesterday");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(Contains(r.body, "from_ms")) << r.body;
  r = Get(router, "/api/v1/gpus/GPU-9/series?metric=util_gpu_pct");
  EXPECT_EQ(r.status, 404);
  EXPECT_TRUE(Contains(r.body, "gpu GPU-9 not found")) << r.body;
  const Router without(fake);
  r = Get(without, "/api/v1/gpus/GPU-0/series?metric=util_gpu_pct");
  EXPECT_EQ(r.status, 503) << r.body;
}

// The recorder takes its points from the service's Stats and Quota and the Telemetry; the
// route answers them with the window's span and the idle threshold the page colours with.
TEST(ClusterSeriesRouteTest, AnswersTheRecordedPointsOfTheWindow) {
  FakeClusterService fake;
  fake.stats.queue = {QueueStats{"normal", 2, 30}};
  fake.quota.teams = {TeamQuota{.team = "ml", .guaranteed_gpus = 1, .held_milli = 1000}};
  Telemetry telemetry;
  FeedTelemetry(telemetry);
  telemetry.Assign(GpuUuid("GPU-0"), GpuAssignment{.job = JobId(7)});
  ClusterSeries series;
  ManualClock clock(FromUnixMillis(kT0 + 5000));
  {
    ClusterSeriesRecorder recorder(series, fake, telemetry, clock);  // one point at once
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!series.Latest() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    ASSERT_TRUE(series.Latest()) << "the recorder's first point";
    clock.Advance(Millis(5000));
    recorder.RecordNow();
  }
  const Router router(fake, &telemetry, nullptr, &series);
  const HttpResponse r = Get(router, "/api/v1/cluster/series?window=1h");
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["window_ms"], 3'600'000);
  EXPECT_EQ(body["step_ms"], 5000);
  EXPECT_EQ(body["busy_util_pct"], kBusyUtilPct);
  ASSERT_EQ(body["points"].size(), 2U) << r.body;
  const nlohmann::json& last = body["points"][1];
  EXPECT_EQ(last, body["latest"]);
  EXPECT_EQ(last["time_ms"], kT0 + 10'000);
  EXPECT_EQ(last["gpus"], 1);
  EXPECT_EQ(last["allocated"], 1);
  EXPECT_EQ(last["busy"], 1);  // its latest reading: 30 %
  EXPECT_EQ(last["idle_allocated"], 0);
  EXPECT_DOUBLE_EQ(last["used"].get<double>(), 0.3);
  EXPECT_EQ(last["queue"],
            nlohmann::json::parse(R"([{"priority":"normal","pending":2.0,"oldest_wait_s":30.0}])"));
  EXPECT_EQ(last["teams"],
            nlohmann::json::parse(R"([{"team":"ml","guaranteed":1.0,"held":1.0,"borrowed":0.0}])"));
}

TEST(ClusterSeriesRouteTest, RefusesAnUnknownWindowAndAnswers503WithoutASeries) {
  FakeClusterService fake;
  ClusterSeries series;
  const Router router(fake, nullptr, nullptr, &series);
  HttpResponse r = Get(router, "/api/v1/cluster/series?window=2h");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(Contains(r.body, "window: must be 1h, 1d or 1w")) << r.body;
  r = Get(router, "/api/v1/cluster/series?window=1w");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["points"].size(), 0U);
  EXPECT_EQ(Get(Router(fake), "/api/v1/cluster/series").status, 503);
}

}  // namespace
}  // namespace gf
