// GET /metrics: the Prometheus route, through the Router (with and without a Telemetry) and
// through a real ApiServer on both listeners. The exposition itself is tested in metrics/.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "api/api_client.h"
#include "api/api_server.h"
#include "api/fake_cluster_service.h"
#include "api/routes.h"
#include "metrics/prometheus.h"
#include "monitor/telemetry.h"

namespace gf {
namespace {

using testing::FakeClusterService;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

HttpResponse GetMetrics(const Router& router, const Caller& caller) {
  return router.Handle(caller, HttpRequest{"GET", "/metrics", {}, ""});
}

// One node with two GPUs; GPU 1 is held by job 42 of alice and busy at 87 %.
void FeedTelemetry(Telemetry& telemetry) {
  Node node;
  node.name = NodeId("node-a");
  for (int i = 0; i < 2; ++i) {
    Gpu gpu;
    gpu.index = i;
    gpu.uuid = GpuUuid("GPU-" + std::to_string(i));
    gpu.model = "H100-80GB";
    gpu.memory_mib = 81'559;
    node.gpus.push_back(gpu);
  }
  telemetry.SetInventory(node);
  telemetry.Assign(GpuUuid("GPU-1"), GpuAssignment{JobId(42), "alice", "vision"});
  std::vector<GpuSample> samples;
  for (const Gpu& gpu : node.gpus) {
    GpuSample s;
    s.uuid = gpu.uuid;
    s.time = FromUnixMillis(1'700'000'000'000);
    s.memory_total_mib = gpu.memory_mib;
    s.util_gpu_pct = gpu.index == 1 ? 87 : 0;
    samples.push_back(s);
  }
  (void)telemetry.Ingest(node.name, std::move(samples));
}

TEST(MetricsRouteTest, AnswersPrometheusTextToAnyoneWithoutTelemetry) {
  FakeClusterService fake;
  fake.stats.nodes = 3;
  fake.stats.jobs_by_state = {{"RUNNING", 5}};
  const Router router(fake);
  const HttpResponse r = GetMetrics(router, Caller{});  // anonymous, as over TCP
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("Content-Type"), std::string(kPrometheusContentType));
  EXPECT_TRUE(Contains(r.body, "\ngpufleet_nodes 3\n")) << r.body;
  EXPECT_TRUE(Contains(r.body, "\ngpufleet_jobs{state=\"RUNNING\"} 5\n"));
  // No Telemetry: GPU families are declared but empty.
  EXPECT_TRUE(Contains(r.body, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"));
  EXPECT_FALSE(Contains(r.body, "\nDCGM_FI_DEV_GPU_UTIL{"));
  ASSERT_TRUE(fake.LastCaller().has_value());
  EXPECT_FALSE(fake.LastCaller()->authenticated);
}

TEST(MetricsRouteTest, GpuSeriesComeFromTheTelemetry) {
  FakeClusterService fake;
  Telemetry telemetry;
  FeedTelemetry(telemetry);
  const Router router(fake, &telemetry);
  const HttpResponse r = GetMetrics(router, Caller{});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Contains(r.body,
                       "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\",Hostname=\"node-a\","
                       "device=\"nvidia1\",modelName=\"H100-80GB\",job=\"42\","
                       "user=\"alice\",team=\"vision\"} 87\n"))
      << r.body;
  EXPECT_TRUE(Contains(r.body,
                       "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",Hostname=\"node-a\","
                       "device=\"nvidia0\",modelName=\"H100-80GB\"} 0\n"));
}

TEST(MetricsRouteTest, ServiceErrorsAreJsonErrors) {
  FakeClusterService fake;
  fake.fail_with = Unavailable("controller stopped");
  const HttpResponse r = GetMetrics(Router(fake), Caller{});
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(Contains(r.body, "controller stopped"));
}

TEST(MetricsRouteTest, RejectsOtherMethodsAndQueryParameters) {
  FakeClusterService fake;
  const Router router(fake);
  EXPECT_EQ(router.Handle(Caller{}, HttpRequest{"POST", "/metrics", {}, ""}).status, 405);
  EXPECT_EQ(router.Handle(Caller{}, HttpRequest{"GET", "/metrics?x=1", {}, ""}).status, 400);
  EXPECT_EQ(fake.Calls(), 0);
}

TEST(MetricsRouteTest, ServedOnTheUnixSocketAndOnTcp) {
  char tmpl[] = "/tmp/gf-metrics-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  FakeClusterService fake;
  fake.stats.gpus = 2;
  Telemetry telemetry;
  FeedTelemetry(telemetry);
  ApiServerOptions options;
  options.unix_socket_path = dir + "/gpufleet.sock";
  options.telemetry = &telemetry;
  {
    ApiServer server(fake, options);
    ASSERT_TRUE(server.Start().ok());
    for (const std::string& endpoint :
         {*options.unix_socket_path, "http://127.0.0.1:" + std::to_string(server.tcp_port())}) {
      ApiClient client(endpoint);
      const auto r = client.Call("GET", "/metrics");
      ASSERT_TRUE(r.ok()) << endpoint << ": " << r.error().ToString();
      EXPECT_EQ(r->status, 200) << endpoint;
      EXPECT_EQ(r->Header("Content-Type"), std::string(kPrometheusContentType)) << endpoint;
      EXPECT_TRUE(Contains(r->body, "\ngpufleet_gpus 2\n")) << endpoint;
      EXPECT_TRUE(Contains(r->body, "job=\"42\"")) << endpoint;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gf
