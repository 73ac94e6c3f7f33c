// The published view (view.h): reads answered without the state thread, and a job that ends
// is found throughout, in the view or in the store.
#include "controller/view.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller.h"
#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using std::chrono::milliseconds;

JobSpec Spec(int gpus) {
  JobSpec s;
  s.argv = {"sleep", "100"};
  s.workdir = "/tmp";
  s.request.gpus = gpus;
  return s;
}

Job PendingJob(std::int64_t id, std::string reason = "waiting") {
  Job job;
  job.id = JobId(id);
  job.owner = Owner{.uid = 1000, .gid = 1000, .user = "alice"};
  job.spec = Spec(1);
  job.reason = std::move(reason);
  return job;
}

// ---- NextView: what a turn rebuilds ----------------------------------------------------------

// The queue-wait histogram has every bucket before the first start (the metrics and Stats read
// each), and a wait counts in the first bucket whose bound it does not exceed.
TEST(ControllerCountersTest, EveryWaitBucketIsThereFromTheStartAndAWaitFillsItsOwn) {
  ControllerCounters counters;
  ASSERT_EQ(counters.wait_buckets.size(), kWaitBucketBounds.size());
  EXPECT_EQ(std::count(counters.wait_buckets.begin(), counters.wait_buckets.end(), 0),
            static_cast<std::ptrdiff_t>(kWaitBucketBounds.size()));
  counters.CountWait(7);       // over 5 s, within 10 s: the third bucket
  counters.CountWait(100000);  // over the last bound: counted, in no bucket
  EXPECT_EQ(counters.wait_buckets[2], 1);
  EXPECT_EQ(std::accumulate(counters.wait_buckets.begin(), counters.wait_buckets.end(), 0L), 1);
  EXPECT_EQ(counters.wait_count, 2);
  EXPECT_DOUBLE_EQ(counters.wait_sum_seconds, 100007);
}

TEST(NextViewTest, SharesWhatDidNotChange) {
  std::map<JobId, Job> active;
  for (std::int64_t id = 1; id <= 3 * kViewPageJobs; ++id) {
    active.emplace(JobId(id), PendingJob(id));
  }
  const Node node = TestNode(2);
  const ControllerView empty;
  auto first = NextView(empty, active, {&node}, {}, std::nullopt);
  ASSERT_EQ(first->pages.size(), 4u);  // ids 1..192: pages 0 (1..63), 1, 2, 3 (192)
  ASSERT_NE(first->Find(JobId(100)), nullptr);
  EXPECT_EQ(first->Find(JobId(100))->reason, "waiting");
  EXPECT_EQ(first->Find(JobId(1000)), nullptr);

  auto same = NextView(*first, active, {&node}, {}, std::nullopt);
  for (const auto& [key, page] : first->pages) {
    EXPECT_EQ(same->pages.at(key), page) << "page " << key << " copied though unchanged";
  }
  EXPECT_EQ(same->nodes[0], first->nodes[0]);

  active.at(JobId(100)).reason = "Priority";           // page 1
  active.at(JobId(130)).state = JobState::kCancelled;  // page 2: ended this turn
  active.erase(JobId(192));                            // page 3: its only job, gone
  active.emplace(JobId(200), PendingJob(200));         // page 3 again
  Node drained = node;
  drained.state = NodeState::kDrained;
  auto next = NextView(*same, active, {&drained}, {}, std::nullopt);
  EXPECT_EQ(next->pages.at(0), same->pages.at(0));
  EXPECT_NE(next->pages.at(1), same->pages.at(1));
  EXPECT_EQ(next->Find(JobId(100))->reason, "Priority");
  EXPECT_EQ(next->Find(JobId(101)), same->Find(JobId(101))) << "an unchanged job is shared";
  EXPECT_EQ(next->Find(JobId(130)), nullptr) << "a job that ended leaves once committed";
  EXPECT_EQ(next->Find(JobId(192)), nullptr);
  EXPECT_NE(next->Find(JobId(200)), nullptr);
  EXPECT_NE(next->nodes[0], same->nodes[0]);
  EXPECT_EQ(next->nodes[0]->state, NodeState::kDrained);
  EXPECT_EQ(first->Find(JobId(100))->reason, "waiting") << "a published view never changes";

  std::vector<std::int64_t> newest;
  next->NewestFirst([&](const Job& job) {
    newest.push_back(job.id.value());
    return newest.size() < 3;
  });
  EXPECT_EQ(newest, (std::vector<std::int64_t>{200, 191, 190}));
}

// ---- the controller's reads ------------------------------------------------------------------

// Once armed, its Launch (called on the state thread, after a turn's commit) waits until
// released: the state thread is then busy for as long as the test wants, as with a long command.
class BlockingAgent final : public NodeAgent {
 public:
  void Launch(const Job& job) override {
    std::unique_lock lock(mu_);
    if (!armed_) {
      return;
    }
    launching_ = job.id;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
  }
  void Arm() {
    std::lock_guard lock(mu_);
    armed_ = true;
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  bool WaitLaunching() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return launching_.has_value(); });
  }
  void Kill(JobId /*job*/, std::chrono::seconds /*grace*/, const std::string&, int) override {}
  void Signal(JobId /*job*/, int /*sig*/) override {}
  void AcknowledgeExit(JobId /*job*/) override {}
  std::string LogPath(JobId /*job*/, bool /*err*/) const override { return "/dev/null"; }
  Result<LogChunk> ReadLog(const LogRequest& /*request*/) override { return LogChunk{}; }
  Status WriteTerminal(JobId /*job*/, const TerminalInput& /*input*/) override {
    return OkStatus();
  }
  void ResetGpuHealth(const GpuUuid& /*uuid*/) override {}
  void KillProcess(JobId /*job*/, std::uint32_t /*pid*/, const std::string&) override {}
  void ApplyMigLayout(const GpuUuid&, const std::vector<std::string>&) override {}
  void KeepGpusReady(std::optional<int> /*gpus*/) override {}

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<JobId> launching_;
  bool armed_ = false;
  bool released_ = false;
};

class ViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf-view-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    agent_.Release();
    controller_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Boot(NodeAgent* agent) {
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    ControllerOptions options;
    options.tick = Millis(10);
    controller_ = std::make_unique<Controller>(std::move(*store), clock_, options);
    ASSERT_TRUE(controller_->Load().ok());
    controller_->AttachAgent(NodeId("gpu01"), agent);
    controller_->Start();
    controller_->OnAgentHello(AgentHello{TestNode(4), {}, {}});
    ASSERT_TRUE(WaitFor([&] {
      auto nodes = controller_->ListNodes(root_);
      return nodes.ok() && nodes->size() == 1;
    }));
  }

  std::filesystem::path dir_;
  ManualClock clock_;
  Caller root_ = TestCaller(0, "root");
  Caller alice_ = TestCaller(1000, "alice");
  Caller bob_ = TestCaller(1001, "bob");
  BlockingAgent agent_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(ViewTest, ReadsAreAnsweredWhileTheStateThreadIsBusy) {
  Boot(&agent_);
  auto ended = controller_->Submit(alice_, Spec(4));  // runs, then ends
  ASSERT_TRUE(ended.ok()) << ended.error().ToString();
  auto started = controller_->Submit(alice_, Spec(1));  // starts when `ended` ends
  ASSERT_TRUE(started.ok()) << started.error().ToString();
  auto waiting = controller_->Submit(alice_, Spec(4));  // waits behind both
  ASSERT_TRUE(waiting.ok()) << waiting.error().ToString();
  controller_->OnJobStarted(ended->id, 4242, clock_.Now());
  ASSERT_TRUE(
      WaitFor([&] { return controller_->GetJob(alice_, ended->id)->state == JobState::kRunning; }));
  agent_.Arm();
  controller_->OnJobExited(
      JobExitReport{ended->id, 0, std::nullopt, clock_.Now(), "exited with 0"});
  ASSERT_TRUE(agent_.WaitLaunching());  // `started`'s launch, after the turn that ended `ended`

  // A command waits for the state thread...
  auto cancel =
      std::async(std::launch::async, [&] { return controller_->CancelJob(alice_, waiting->id); });
  EXPECT_EQ(cancel.wait_for(milliseconds(100)), std::future_status::timeout);

  // ...the reads do not.
  auto jobs = controller_->ListJobs(alice_, JobFilter{});
  ASSERT_TRUE(jobs.ok()) << jobs.error().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, waiting->id);
  EXPECT_EQ((*jobs)[0].state, JobState::kPending);
  EXPECT_NE((*jobs)[0].reason, "waiting for the scheduler") << "the pass's reason is shown";
  EXPECT_EQ((*jobs)[1].id, started->id);
  EXPECT_EQ((*jobs)[1].state, JobState::kStarting);
  EXPECT_TRUE(controller_->ListJobs(bob_, JobFilter{})->empty()) << "the same permissions";
  auto all =
      controller_->ListJobs(alice_, JobFilter{.include_finished = true, .user = std::nullopt});
  ASSERT_TRUE(all.ok()) << all.error().ToString();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].reason, (*jobs)[0].reason) << "an active job as the view has it";
  EXPECT_EQ((*all)[2].state, JobState::kCompleted);
  auto done = controller_->GetJob(alice_, ended->id);
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_EQ(done->state, JobState::kCompleted);
  auto history = controller_->JobEvents(alice_, ended->id);
  ASSERT_TRUE(history.ok()) << history.error().ToString();
  EXPECT_EQ(history->back().message.substr(0, 22), "RUNNING -> COMPLETED: ")
      << "the events of the turn that ended it";
  auto job = controller_->GetJob(alice_, started->id);
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  EXPECT_EQ(job->state, JobState::kStarting);
  EXPECT_EQ(controller_->GetJob(bob_, started->id).error().code, ErrorCode::kNotFound);
  auto events = controller_->JobEvents(alice_, started->id);
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  EXPECT_EQ(events->size(), 2u) << "submit, and the start its turn committed";
  auto nodes = controller_->ListNodes(alice_);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->size(), 1u);
  auto stats = controller_->Stats(root_);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->gpus_allocated, 1);
  EXPECT_EQ(stats->gpus, 4);
  EXPECT_TRUE(controller_->ListTokens(root_).ok());
  auto report = controller_->MonthlyReport(root_, ReportRequest{.period = "2023-11"});
  ASSERT_TRUE(report.ok()) << report.error().ToString();

  EXPECT_EQ(cancel.wait_for(milliseconds(0)), std::future_status::timeout);
  agent_.Release();
  ASSERT_TRUE(cancel.get().ok());
}

// A job is found at every moment of its end: in the view until the turn that ended it has
// committed, in the store from then on.
TEST_F(ViewTest, AJobThatEndsIsAlwaysFound) {
  Boot(&agent_);                                          // not armed: launches go through
  ASSERT_TRUE(controller_->Submit(root_, Spec(4)).ok());  // holds every GPU
  constexpr int kJobs = 40;
  std::vector<JobId> ids;
  for (int i = 0; i < kJobs; ++i) {
    auto job = controller_->Submit(alice_, Spec(1));  // pending
    ASSERT_TRUE(job.ok()) << job.error().ToString();
    ids.push_back(job->id);
  }
  std::atomic<bool> done{false};
  std::atomic<int> missing{0};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!done.load()) {
      for (JobId id : ids) {
        auto job = controller_->GetJob(alice_, id);
        if (!job.ok()) {
          missing += 1;
        }
        reads += 1;
      }
    }
  });
  for (JobId id : ids) {
    auto cancelled = controller_->CancelJob(alice_, id);
    ASSERT_TRUE(cancelled.ok()) << cancelled.error().ToString();
    EXPECT_EQ(controller_->GetJob(alice_, id)->state, JobState::kCancelled)
        << "the caller of a command reads what it did";
  }
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(missing.load(), 0);
  EXPECT_TRUE(controller_->ListJobs(alice_, JobFilter{})->empty());
  EXPECT_EQ(controller_->ListJobs(alice_, JobFilter{.include_finished = true, .user = std::nullopt})
                ->size(),
            static_cast<std::size_t>(kJobs));
}

}  // namespace
}  // namespace gf
