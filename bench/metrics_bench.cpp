// gf_metrics_bench: how long GET /metrics takes to render (RenderPrometheus) for 8 and for
// 1,000 GPUs, every sample field set and half of the GPUs allocated (example_telemetry.h),
// plus the bytes it produces. Issue #3's target: 1,000 GPUs well under 50 ms.
// Google Benchmark; how to run it and the figures measured: bench/README.md.
#include <string>

#include <benchmark/benchmark.h>

#include "metrics/example_telemetry.h"
#include "metrics/prometheus.h"

namespace gf {
namespace {

void BM_RenderPrometheus(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const TelemetrySnapshot telemetry = ExampleTelemetry(gpus);
  const ClusterStats stats = ExampleClusterStats();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = RenderPrometheus(telemetry, stats);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["gpus"] = gpus;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_RenderPrometheus)->Arg(8)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gf

BENCHMARK_MAIN();
