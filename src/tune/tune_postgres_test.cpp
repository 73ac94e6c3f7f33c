// `gpufleet tune` on the PostgreSQL store of `gpufleet server`: the hand-checked history
// (tune_test_history.h) written by the store's own code, read back through --db, and the
// recommendation the hand calculation gives. Needs the test server the `postgres` ctest
// fixture starts (its URL in GF_TEST_POSTGRES_URL_FILE) or GF_TEST_POSTGRES_URL; skips without.
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "store/open_store.h"

#include "tune/tune_command.h"
#include "tune/tune_test_history.h"

namespace gf::tune {
namespace {

// The server's URL; "" when none is configured.
std::string TestUrl() {
  if (const char* url = std::getenv("GF_TEST_POSTGRES_URL"); url != nullptr) {  // NOLINT
    return url;
  }
  const char* file = std::getenv("GF_TEST_POSTGRES_URL_FILE");  // NOLINT(concurrency-mt-unsafe)
  std::string url;
  if (file != nullptr) {
    std::ifstream(file) >> url;
  }
  return url;
}

TEST(TunePostgresTest, RecommendsFromAServersStoreWhatTheHandCalculationSays) {
  const std::string url = TestUrl();
  if (url.empty()) {
    GTEST_SKIP() << "no test PostgreSQL: run through ctest (its fixture starts one), or set "
                    "GF_TEST_POSTGRES_URL";
  }
  // A schema of its own on the fixture's throwaway server.
  const std::string db =
      url + "?schema=gf_tune_" + std::to_string(std::random_device()() % 1'000'000'000);
  {
    auto store = OpenStore(db, "/nonexistent/state.db");
    ASSERT_TRUE(store.ok()) << store.error().message;
    const Status written = WriteHandCheckedHistory(**store);
    ASSERT_TRUE(written.ok()) << written.error().message;
  }
  const TuneEnvironment env{
      .settings_file = [](const std::string& flag) { return flag; },
      .default_data_dir = [] { return std::filesystem::path("/nonexistent"); },
      .progress = false};
  std::ostringstream out;
  std::ostringstream err;
  const Status status = RunTune(
      TuneCommandOptions{.goals = {"high.p95_wait<8m"}, .db = db, .json = true}, env, out, err);
  ASSERT_TRUE(status.ok()) << status.error().message;
  const nlohmann::json tuned = nlohmann::json::parse(out.str());
  EXPECT_EQ(tuned["recommended"], kFiveMinutes);
  EXPECT_EQ(tuned["input"]["jobs"], 2);
  EXPECT_EQ(tuned["input"]["nodes"], 1);
  EXPECT_EQ(tuned["input"]["source"].get<std::string>().find("***"), std::string::npos);
}

}  // namespace
}  // namespace gf::tune
