// gf_predict_bench: the cost of the run-time predictor's two calls (issue #22: an update under
// 5 microseconds, at every job end on the controller's state thread). A history of 10,000
// users x 10 job families x 3 GPU counts is learned first, so that the hash lookups are those of
// a large cluster; then each iteration learns, or predicts, one job of a random key.
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "predict/runtime_predictor.h"

namespace gf {
namespace {

std::vector<RunKey> Keys() {
  std::vector<RunKey> keys;
  for (int u = 0; u < 10'000; ++u) {
    for (int f = 0; f < 10; ++f) {
      keys.push_back(RunKey{.user = "user" + std::to_string(u),
                            .team = "team" + std::to_string(u % 50),
                            .family = "python3 train" + std::to_string(f) + ".py",
                            .gpus = 1 << (f % 3)});
    }
  }
  return keys;
}

RuntimePredictor Learned(const std::vector<RunKey>& keys) {
  RuntimePredictor predictor;
  std::mt19937 random(1);
  std::lognormal_distribution<double> seconds(7.0, 1.5);
  for (const RunKey& key : keys) {
    predictor.Learn(
        key, Millis(static_cast<std::int64_t>(seconds(random) * 1000)), RunEnd::kCompleted);
  }
  return predictor;
}

void BM_Learn(benchmark::State& state) {
  const std::vector<RunKey> keys = Keys();
  RuntimePredictor predictor = Learned(keys);
  std::mt19937 random(2);
  std::uniform_int_distribution<std::size_t> pick(0, keys.size() - 1);
  for (auto _ : state) {
    predictor.Learn(keys[pick(random)], Millis(3'600'000), RunEnd::kCompleted);
  }
  state.counters["keys"] = static_cast<double>(predictor.KeyCount());
}
BENCHMARK(BM_Learn);

void BM_Predict(benchmark::State& state) {
  const std::vector<RunKey> keys = Keys();
  const RuntimePredictor predictor = Learned(keys);
  std::mt19937 random(3);
  std::uniform_int_distribution<std::size_t> pick(0, keys.size() - 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(predictor.Predict(keys[pick(random)]));
  }
}
BENCHMARK(BM_Predict);

}  // namespace
}  // namespace gf

BENCHMARK_MAIN();
