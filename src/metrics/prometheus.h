// RenderPrometheus: the body of GET /metrics, in the Prometheus text exposition format 0.0.4.
//
// Two groups of families (README.md lists every one with its type, unit and labels):
//  - GPU series named and labelled exactly as NVIDIA's dcgm-exporter names them
//    (DCGM_FI_DEV_GPU_UTIL{gpu, UUID, device, modelName, Hostname}, ...), so dashboards and
//    alerts written for dcgm-exporter work unchanged; the series of a GPU held by a job also
//    carry `job`, `user` and `team` (a shared GPU: one copy of each series per job holding it,
//    as dcgm-exporter does per job). Fields dcgm-exporter lacks get gpufleet_gpu_* names.
//  - gpufleet_* series: GPU health and conditions, jobs by state, the queue, teams, jobs.
// A field the driver did not report (nullopt) is left out rather than exported as 0; a lost
// GPU exports only its health.
//
// A pure function of its inputs: no state, no I/O; safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "monitor/telemetry.h"
#include "service/service.h"

namespace gf {

// The Content-Type of the text format this renders.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Renders every family, each with its # HELP and # TYPE lines (also when it has no series,
// e.g. GPU families of an empty snapshot). Families appear in a fixed order and each
// family's samples are contiguous, as the format requires.
std::string RenderPrometheus(const TelemetrySnapshot& telemetry, const ClusterStats& stats);

// What the API server's limits refused since it started, and what it holds open now
// (api/client_limits.h, docs/config.md [api]). The API server appends these families to
// GET /metrics itself, so that the router needs no handle on its transport.
struct ApiServerCounts {
  std::int64_t connections_refused = 0;         // [api] max_connections, or the TCP share of it
  std::int64_t client_connections_refused = 0;  // connections_per_client
  std::int64_t watches_refused = 0;             // max_watches, or the TCP share of it
  std::int64_t client_watches_refused = 0;      // watches_per_client
  std::int64_t requests_limited = 0;            // rate_limit / rate_burst
  std::int64_t accept_errors = 0;               // failed accepts (e.g. no descriptor left)
  int socket_connections = 0;
  int tcp_connections = 0;
  int socket_watches = 0;  // watches and agent command streams
  int tcp_watches = 0;
};

// gpufleet_api_refusals_total{limit}, gpufleet_api_accept_errors_total and
// gpufleet_api_open{resource, listener}, each with its # HELP and # TYPE lines.
std::string RenderApiServerMetrics(const ApiServerCounts& counts);

// A label value as the format writes it between quotes: backslash, double quote and newline
// escaped; bytes that are not valid UTF-8 become U+FFFD (Prometheus rejects the whole scrape
// on one invalid label value, and a user-chosen team name must not be able to do that).
std::string EscapeLabelValue(std::string_view value);

}  // namespace gf
