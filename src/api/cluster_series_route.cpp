// GET /api/v1/cluster/series?window=1h|1d|1w: the cluster's figures over time (ClusterSeries,
// metrics/cluster_series.h), for the dashboard's overview. As public as GET /metrics, whose
// cluster-wide counts it shows over time (teams' held GPUs are in /metrics too).
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/routes_internal.h"
#include "metrics/cluster_series.h"

namespace gf {
namespace {

using nlohmann::json;

json ClusterPointToJson(const ClusterPoint& p) {
  json queue = json::array();
  for (const ClassPoint& q : p.queue) {
    queue.push_back(
        json{{"priority", q.priority}, {"pending", q.pending}, {"oldest_wait_s", q.oldest_wait_s}});
  }
  json teams = json::array();
  for (const TeamPoint& t : p.teams) {
    teams.push_back(json{{"team", t.team},
                         {"guaranteed", t.guaranteed},
                         {"held", t.held},
                         {"borrowed", t.borrowed}});
  }
  return json{{"time_ms", ToUnixMillis(p.time)},
              {"gpus", p.gpus},
              {"allocated", p.allocated},
              {"busy", p.busy},
              {"idle_allocated", p.idle_allocated},
              {"failed", p.failed},
              {"used", p.used},
              {"power_w", p.power_w},
              {"queue", std::move(queue)},
              {"teams", std::move(teams)}};
}

struct WindowName {
  std::string_view name;
  Millis span;
};
constexpr std::array<WindowName, 3> kWindows = {{
    {"1h", Millis(3'600'000)},
    {"1d", Millis(86'400'000)},
    {"1w", Millis(7 * 86'400'000LL)},
}};

}  // namespace

Result<HttpResponse> ClusterSeriesRoute(ClusterService&, const RequestContext& ctx) {
  const std::string name = QueryValue(ctx, "window").value_or("1h");
  const auto* const window = std::find_if(
      kWindows.begin(), kWindows.end(), [&](const WindowName& w) { return w.name == name; });
  if (window == kWindows.end()) {
    return InvalidArgument("window: must be 1h, 1d or 1w, got \"" + name + "\"");
  }
  if (ctx.cluster_series == nullptr) {
    return Unavailable("this server keeps no cluster series");
  }
  const ClusterSeries& series = *ctx.cluster_series;
  const std::optional<ClusterPoint> latest = series.Latest();
  // The window ends at the latest point, so that a server's own clock is the only one used.
  const Time now = latest ? latest->time : Time{};
  json points = json::array();
  for (const ClusterPoint& p : series.Window(now, window->span)) {
    points.push_back(ClusterPointToJson(p));
  }
  const bool fine = window->span <= series.options().fine_keep;
  return JsonResponse(
      200,
      json{{"window", name},
           {"window_ms", window->span.count()},
           {"step_ms", (fine ? series.options().fine_step : series.options().coarse_step).count()},
           {"max_points", ClusterSeries::kMaxPoints},
           {"busy_util_pct", kBusyUtilPct},
           {"points", std::move(points)},
           {"latest", latest ? ClusterPointToJson(*latest) : json()}});
}

}  // namespace gf
