// ReadyGpus (ready_gpus.h) on its own: a job book, two nodes with fake agents, a SQLite store
// with stored runs, a manual clock; a turn is a call to Run and the outbox's actions.
#include "controller/ready_gpus.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

TEST(SpreadReadyTest, TheNodesWithTheMostIdleGpusFirstEachAtMostItsIdleOnes) {
  const std::map<NodeId, int> idle = {{NodeId("a"), 4}, {NodeId("b"), 8}, {NodeId("c"), 4}};
  EXPECT_EQ(SpreadReady(10, idle),
            (std::map<NodeId, int>{{NodeId("a"), 2}, {NodeId("b"), 8}, {NodeId("c"), 0}}));
  EXPECT_EQ(SpreadReady(14, idle),
            (std::map<NodeId, int>{{NodeId("a"), 4}, {NodeId("b"), 8}, {NodeId("c"), 2}}));
  EXPECT_EQ(SpreadReady(99, idle), idle);  // never more than a node has
  EXPECT_EQ(SpreadReady(0, idle),
            (std::map<NodeId, int>{{NodeId("a"), 0}, {NodeId("b"), 0}, {NodeId("c"), 0}}));
}

class ReadyGpusTest : public ::testing::Test, private JobBookListener {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf-ready-gpus-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(*store);
    // Monday 2026-03-02 10:30 UTC.
    clock_.Set(FromUnixMillis(1'772'447'400'000));
    for (const auto& [name, agent] : {std::pair{"n1", &n1_}, std::pair{"n2", &n2_}}) {
      nodes_.AttachAgent(NodeId(name), agent);
      nodes_.MergeHello(TestNode(4, name, std::string(name) + "-"),
                        clock_.Now(),
                        std::chrono::steady_clock::now());
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void OnReleasing(Job& /*job*/) override {}
  void OnEnded(const Job& /*job*/) override {}
  void OnRequeueing(const Job& /*job*/) override {}

  // `gpus` held from `from` to `to`, stored as a run of job `id`.
  void StoreRun(std::int64_t id, int gpus, Time from, Time to) {
    const UsageRecord run{.job = JobId(id),
                          .start = from,
                          .end = to,
                          .gpus = gpus,
                          .gpu_seconds = gpus * std::chrono::duration<double>(to - from).count()};
    ASSERT_TRUE(store_->Commit(StoreBatch{.usage = {run}}).ok());
  }

  // One turn: Run, then what the turn hands the agents after its commit.
  void Turn() {
    ready_.Run();
    for (auto& action : std::exchange(out_.after_commit, {})) {
      action();
    }
  }

  std::filesystem::path dir_;
  ManualClock clock_;
  JobBook jobs_{JobBookOptions{}, [this] { return clock_.Now(); }, *this};
  NodeRegistry nodes_;
  TurnOutbox out_;
  FakeAgent n1_;
  FakeAgent n2_;
  std::unique_ptr<Store> store_;
  ReadyGpus ready_{ReadyGpusOptions{},
                   ReadyGpusParts{.jobs = jobs_, .nodes = nodes_, .out = out_, .clock = clock_}};
};

// Seeded with 6 GPUs held every hour of the last two days, the forecast wants 6 ready: the
// emptiest node first (a tie: by name), n1 all 4 of its idle GPUs, n2 the other 2. Each node
// is told once; again only after its agent's hello.
TEST_F(ReadyGpusTest, StoredRunsSeedTheForecastAndEachNodeIsToldItsShareOnce) {
  StoreRun(1, 6, clock_.Now() - hours(48), clock_.Now() - minutes(1));
  ASSERT_TRUE(ready_.Load(*store_).ok());
  EXPECT_EQ(ready_.Forecast().HoursObserved(), 48);
  Turn();
  EXPECT_EQ(n1_.ready_gpus(), (std::vector<std::optional<int>>{4}));
  EXPECT_EQ(n2_.ready_gpus(), (std::vector<std::optional<int>>{2}));
  clock_.Advance(Millis(30'000));
  Turn();  // the same minute: nothing read
  clock_.Advance(minutes(1));
  Turn();  // the same targets: nothing sent
  EXPECT_EQ(n1_.ready_gpus().size(), 1U);
  ready_.Forget(NodeId("n2"));  // its agent said hello again
  clock_.Advance(minutes(1));
  Turn();
  EXPECT_EQ(n1_.ready_gpus().size(), 1U);
  EXPECT_EQ(n2_.ready_gpus(), (std::vector<std::optional<int>>{2, 2}));
}

// A new cluster has no forecast: the agents are told so (their idle wait decides) until an
// hour has been read; then the demand of that hour (3 GPUs asked for by a pending job) is
// what the forecast wants ready.
TEST_F(ReadyGpusTest, WithoutHistoryTheFirstHourReadDecides) {
  ASSERT_TRUE(ready_.Load(*store_).ok());
  EXPECT_EQ(ready_.Forecast().HoursObserved(), 0);
  Job pending;
  pending.id = JobId(7);
  pending.spec.request.gpus = 3;
  pending.submit_time = clock_.Now();
  jobs_.Add(pending);
  Turn();
  EXPECT_EQ(n1_.ready_gpus(), (std::vector<std::optional<int>>{std::nullopt}));
  EXPECT_EQ(n2_.ready_gpus(), (std::vector<std::optional<int>>{std::nullopt}));
  for (int m = 0; m < 30; ++m) {  // readings to the end of the hour, then one in the next
    clock_.Advance(minutes(1));
    Turn();
  }
  EXPECT_EQ(ready_.Forecast().HoursObserved(), 1);
  EXPECT_EQ(n1_.ready_gpus().back(), 3);
  EXPECT_EQ(n2_.ready_gpus().back(), 0);
}

}  // namespace
}  // namespace gf
