// gf_metrics_example: prints /metrics for an example cluster (example_telemetry.h: every
// field set, allocated GPUs, one lost GPU, escaped label values), for promtool_test.sh.
#include <cstdio>

#include "metrics/example_telemetry.h"
#include "metrics/prometheus.h"

int main() {
  const std::string text = gf::RenderPrometheus(gf::ExampleTelemetry(/*gpus=*/16, /*lost_gpus=*/1),
                                                gf::ExampleClusterStats());
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}
