// `gpufleet tune` end to end: a recorded history (in a SQLite store written by the product's
// store code, and as a trace file) whose replays can be worked out by hand, the recommendation
// that the hand calculation says meets the goals, and the settings file it writes, read back
// by the real config loader.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "config/config.h"
#include "store/open_store.h"

#include "tune/history.h"
#include "tune/tune_command.h"
#include "tune/tune_test_history.h"

namespace gf::tune {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

// The history and its hand calculation: tune_test_history.h.

class TuneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf_tune_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TuneEnvironment Environment() const {
    return TuneEnvironment{.settings_file = [](const std::string& flag) { return flag; },
                           .default_data_dir = [this] { return dir_; },
                           .progress = false};
  }

  // Runs the tune; returns its status, and its stdout in `out`.
  Status Tune(const TuneCommandOptions& options, std::string& out) const {
    std::ostringstream stdout_text;
    std::ostringstream stderr_text;
    Status status = RunTune(options, Environment(), stdout_text, stderr_text);
    out = stdout_text.str();
    return status;
  }

  // The history above in the store at DATA_DIR/state.db (tune_test_history.h).
  void WriteStore() const {
    auto store = OpenStore("", dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().message;
    const Status written = WriteHandCheckedHistory(**store);
    ASSERT_TRUE(written.ok()) << written.error().message;
  }

  void WriteTrace() const {
    std::ofstream(dir_ / "history.csv") << "job_id,submit_time_s,duration_s,num_gpus,user,"
                                           "queue_or_team,class\n"
                                           "low,0,14400,1,alice,,low\n"
                                           "high,60,600,1,alice,,high\n";
  }

  std::filesystem::path dir_;
};

const nlohmann::json& Candidate(const nlohmann::json& tuned, const std::string& name) {
  for (const nlohmann::json& c : tuned["candidates"]) {
    if (c["name"] == name) {
      return c;
    }
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no candidate " << name;
  return none;
}

TEST_F(TuneTest, StoreHistoryIsReadAsTheJobsThatRanInTheWindow) {
  WriteStore();
  auto store = OpenStore("", dir_ / "state.db");
  ASSERT_TRUE(store.ok());
  const Time now = std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
  auto history = ReadHistory(**store, now - hours(24 * 7));
  ASSERT_TRUE(history.ok()) << history.error().message;
  ASSERT_EQ(history->jobs.size(), 2U);
  EXPECT_EQ(history->unfinished, 1);
  EXPECT_EQ(history->never_ran, 1);
  EXPECT_EQ(history->jobs[0].id, "2");
  EXPECT_EQ(history->jobs[0].priority, "low");
  EXPECT_EQ(history->jobs[0].duration, hours(4));
  EXPECT_EQ(history->jobs[0].name, "train");  // its own name: the command family
  EXPECT_EQ(history->jobs[1].submit, seconds(60));
  auto nodes = (*store)->ListNodes();
  ASSERT_TRUE(nodes.ok());
  const std::vector<Node> cluster = ReplayCluster(*nodes);
  ASSERT_EQ(cluster.size(), 1U);
  EXPECT_EQ(cluster[0].state, NodeState::kUp);
  EXPECT_EQ(cluster[0].gpus[0].health, GpuHealth::kOk);
}

TEST_F(TuneTest, OnTheStoreItRecommendsThePolicyTheHandCalculationSaysMeetsTheGoal) {
  WriteStore();
  std::string out;
  const Status status = Tune(
      TuneCommandOptions{
          .goals = {"high.p95_wait<8m"}, .write = (dir_ / "tuned.toml").string(), .json = true},
      out);
  ASSERT_TRUE(status.ok()) << status.error().message;
  const nlohmann::json tuned = nlohmann::json::parse(out);
  EXPECT_EQ(tuned["recommended"], kFiveMinutes);
  EXPECT_EQ(tuned["meets_all"], true);
  EXPECT_EQ(tuned["input"]["jobs"], 2);
  EXPECT_EQ(tuned["input"]["gpus"], 1);
  EXPECT_EQ(Candidate(tuned, "current")["figures"][0]["value"], 540);
  EXPECT_EQ(Candidate(tuned, "current")["figures"][0]["met"], false);
  EXPECT_EQ(Candidate(tuned, kFiveMinutes)["figures"][0]["value"], 240);
  EXPECT_EQ(Candidate(tuned, "min_run_time = \"20m\"")["figures"][0]["value"], 1140);
  EXPECT_EQ(Candidate(tuned, "preemption = false")["figures"][0]["value"], 14340);
  int meeting = 0;
  for (const nlohmann::json& c : tuned["candidates"]) {
    meeting += c["meets_all"] == true ? 1 : 0;
  }
  EXPECT_EQ(meeting, 1);

  // The settings file it wrote is one gpufleet reads, with that policy.
  auto config = LoadConfig((dir_ / "tuned.toml").string());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->policy.preemption.min_run_time, minutes(5));
  EXPECT_TRUE(config->policy.preemption.enabled);
  EXPECT_TRUE(config->policy.prediction.enabled);
}

TEST_F(TuneTest, OnATraceTheObjectiveDecidesAmongThoseThatMeetTheBound) {
  WriteTrace();
  TuneCommandOptions options{.goals = {"high.p95_wait<30m", "minimize avg_jct"},
                             .trace = (dir_ / "history.csv").string(),
                             .cluster = "1x1xV100"};
  std::string out;
  Status status = Tune(options, out);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_THAT(out, HasSubstr("replayed 2 jobs from trace "));
  EXPECT_THAT(out, HasSubstr("history.csv, on 1 node with 1 GPU\n"));
  EXPECT_THAT(out, ::testing::ContainsRegex("\\* min_run_time = \"5m\" +4m ok +2h14m30s\n"));
  EXPECT_THAT(out, HasSubstr("  current  "));
  EXPECT_THAT(out, HasSubstr("2h19m30s"));      // current's mean JCT: 8,370 s
  EXPECT_THAT(out, HasSubstr("3h59m MISSED"));  // preemption = false
  EXPECT_THAT(out, HasSubstr("recommended: min_run_time = \"5m\"\n"));

  // Without the objective every candidate that meets the bound ties: the current one stays.
  options.goals = {"high.p95_wait<30m"};
  status = Tune(options, out);
  ASSERT_TRUE(status.ok());
  EXPECT_THAT(out, HasSubstr("recommended: current (the current policy meets the goals best"));
}

TEST_F(TuneTest, NothingIsWrittenWhenNoCandidateMeetsTheGoals) {
  WriteTrace();
  std::string out;
  const Status status = Tune(TuneCommandOptions{.goals = {"high.p95_wait<1m"},
                                                .trace = (dir_ / "history.csv").string(),
                                                .cluster = "1x1xV100",
                                                .write = (dir_ / "tuned.toml").string()},
                             out);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("--write: nothing written"));
  EXPECT_THAT(out, HasSubstr("no candidate meets every goal; the closest: min_run_time = \"5m\""));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "tuned.toml"));
}

TEST_F(TuneTest, ProgressBarOnlyWhenAsked) {
  WriteTrace();
  // One replay at a time, the current policy first: side by side, which candidate ends first
  // (the bar's first step names it) depends on the threads' timing.
  const TuneCommandOptions options{.goals = {"maximize utilisation"},
                                   .trace = (dir_ / "history.csv").string(),
                                   .cluster = "1x1xV100",
                                   .jobs = 1};
  for (const bool progress : {false, true}) {
    TuneEnvironment env = Environment();
    env.progress = progress;
    std::ostringstream out;
    std::ostringstream err;
    ASSERT_TRUE(RunTune(options, env, out, err).ok());
    if (progress) {
      EXPECT_THAT(err.str(),
                  HasSubstr("\r\033[Kgpufleet tune: [#...................] 1/11 current\r"));
    } else {
      EXPECT_EQ(err.str().find('\r'), std::string::npos) << err.str();
    }
    EXPECT_THAT(err.str(), HasSubstr("gpufleet tune: 11 policies replayed on 2 jobs in "));
    EXPECT_EQ(out.str().find('\r'), std::string::npos);  // the table stays clean
  }
}

TEST_F(TuneTest, ErrorsNameTheFlagOrGoal) {
  std::string out;
  Status status = Tune(TuneCommandOptions{}, out);
  EXPECT_THAT(status.error().message, HasSubstr("--goal: give at least one"));
  status = Tune(TuneCommandOptions{.goals = {"high.p95_wait<soon"}}, out);
  EXPECT_THAT(status.error().message,
              HasSubstr("goal 'high.p95_wait<soon': 'soon' is not a duration"));
  status = Tune(TuneCommandOptions{.goals = {"maximize utilisation"}}, out);
  EXPECT_THAT(status.error().message, HasSubstr("no store at " + (dir_ / "state.db").string()));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "state.db"));  // and none was made
  WriteTrace();
  status = Tune(TuneCommandOptions{.goals = {"maximize utilisation"},
                                   .trace = (dir_ / "history.csv").string()},
                out);
  EXPECT_THAT(status.error().message, HasSubstr("--cluster: required with --trace"));
}

// The replays run side by side (--jobs): the table and the choice are the serial run's, value
// for value, whatever the number of threads.
TEST_F(TuneTest, ParallelReplaysGiveTheSerialResult) {
  // 60 jobs of 6 users, 4 lengths and 3 classes on 2 x 4 GPUs, so that the candidates' figures
  // differ (a result put in the wrong candidate's place would show).
  std::ofstream trace(dir_ / "busy.csv");
  trace << "job_id,submit_time_s,duration_s,num_gpus,user,queue_or_team,class\n";
  for (int i = 0; i < 60; ++i) {
    const int lengths[] = {120, 900, 3600, 14400};
    const char* classes[] = {"low", "normal", "high"};
    trace << "j" << i << "," << i * 97 << "," << lengths[(i * 7) % 4] << "," << 1 + (i % 3) << ",u"
          << i % 6 << ",," << classes[(i * 5) % 3] << "\n";
  }
  trace.close();
  TuneCommandOptions options{.goals = {"high.p95_wait<1h", "minimize avg_jct"},
                             .trace = (dir_ / "busy.csv").string(),
                             .cluster = "2x4xA100",
                             .json = true};
  std::string serial;
  options.jobs = 1;
  ASSERT_TRUE(Tune(options, serial).ok());
  std::string parallel;
  options.jobs = 4;
  ASSERT_TRUE(Tune(options, parallel).ok());
  EXPECT_EQ(parallel, serial);
  const nlohmann::json tuned = nlohmann::json::parse(serial);
  std::set<std::string> figures;
  for (const nlohmann::json& c : tuned["candidates"]) {
    figures.insert(c["figures"].dump());
  }
  EXPECT_GE(figures.size(), 3U) << serial;  // the candidates are told apart
  options.jobs = 64;                        // more threads than candidates
  ASSERT_TRUE(Tune(options, parallel).ok());
  EXPECT_EQ(parallel, serial);
  options.jobs = -1;
  const Status bad = Tune(options, parallel);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("--jobs: -1 is not a number of threads; give 1"));
}

}  // namespace
}  // namespace gf::tune
