// The read side alone (read_side.h): a published view and a store, no controller. Who sees
// which job, a finished job read through the store, the view's copy preferred to the store's,
// the counters, GPUs from Telemetry, tokens, a report, and the errors a view carries.
#include "controller/read_side.h"

#include <filesystem>
#include <map>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

constexpr std::uint32_t kAlice = 1000;
constexpr std::uint32_t kBob = 1001;

Job MakeJob(std::int64_t id, std::uint32_t uid, const std::string& user, JobState state) {
  Job job;
  job.id = JobId(id);
  job.owner = Owner{.uid = uid, .gid = uid, .user = user};
  job.spec.argv = {"sleep", "100"};
  job.spec.workdir = "/tmp";
  job.spec.request.gpus = 1;
  job.spec.team = "ml";
  job.state = state;
  return job;
}

class ReadSideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf-read-side-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    store_ = std::move(*store);
    ReadSideOptions options;
    options.policy.classes = {PriorityClassPolicy{.name = "high", .rank = 0},
                              PriorityClassPolicy{.name = "normal", .rank = 1}};
    reader_ = std::make_unique<ClusterReader>(
        clock_, telemetry_, options, [this] { return store_->OpenReader(); });

    // Job 1, alice's, ended in an earlier turn: only the store has it.
    Job done = MakeJob(1, kAlice, "alice", JobState::kCompleted);
    done.exit_code = 0;
    done.end_time = clock_.Now() - std::chrono::minutes(5);
    // Job 2, alice's, pending: the store's copy is as old as its submission.
    Job stored_pending = MakeJob(2, kAlice, "alice", JobState::kPending);
    stored_pending.reason = "waiting for the scheduler";
    ASSERT_TRUE(store_
                    ->Commit(StoreBatch{
                        .jobs = {done, stored_pending},
                        .events = {Event{.time = clock_.Now(),
                                         .job = JobId(1),
                                         .kind = "state",
                                         .actor = "alice",
                                         .message = "RUNNING -> COMPLETED: exited with 0"}},
                        .usage = {UsageRecord{.job = JobId(1),
                                              .start = clock_.Now() - std::chrono::minutes(35),
                                              .end = clock_.Now() - std::chrono::minutes(5),
                                              .team = "ml",
                                              .user = "alice",
                                              .priority = "normal",
                                              .gpus = 1,
                                              .gpu_models = {"H100-80GB"},
                                              .gpu_seconds = 1800,
                                              .energy_mj = 0}},
                    })
                    .ok());

    // The view: job 2 pending (with the pass's reason), job 3 bob's, running on 2 GPUs for an
    // hour.
    pending_ = MakeJob(2, kAlice, "alice", JobState::kPending);
    pending_.reason = "Resources: needs 1 GPU, 0 free";
    running_ = MakeJob(3, kBob, "bob", JobState::kRunning);
    running_.spec.request.gpus = 2;
    running_.start_time = clock_.Now() - std::chrono::hours(1);
    running_.allocation =
        Allocation{.node = NodeId("gpu01"), .gpus = {GpuUuid("GPU-0"), GpuUuid("GPU-1")}};
    node_ = TestNode(2);
    ControllerCounters counters;
    counters.wait_buckets.assign(kWaitBucketBounds.size(), 0);
    counters.ended[JobState::kCompleted] = 1;
    reader_->Publish(NextView(*reader_->Latest(),
                              {{pending_.id, pending_}, {running_.id, running_}},
                              {&node_},
                              counters,
                              std::nullopt));
  }
  void TearDown() override {
    reader_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  template <typename T>
  static std::string ErrorOf(const Result<T>& result) {
    return result.ok() ? "ok" : result.error().message;
  }
  static std::vector<std::int64_t> Ids(const std::vector<Job>& jobs) {
    std::vector<std::int64_t> out;
    out.reserve(jobs.size());
    for (const Job& job : jobs) {
      out.push_back(job.id.value());
    }
    return out;
  }

  std::filesystem::path dir_;
  ManualClock clock_;
  Telemetry telemetry_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<ClusterReader> reader_;
  Job pending_;
  Job running_;
  Node node_;
  Caller root_ = TestCaller(0, "root");
  Caller alice_ = TestCaller(kAlice, "alice");
  Caller bob_ = TestCaller(kBob, "bob");
};

TEST_F(ReadSideTest, EachCallerListsTheActiveJobsItMaySee) {
  auto root = reader_->ListJobs(root_, JobFilter{});
  ASSERT_TRUE(root.ok()) << root.error().ToString();
  EXPECT_EQ(Ids(*root), (std::vector<std::int64_t>{3, 2})) << "newest first";
  auto alice = reader_->ListJobs(alice_, JobFilter{});
  ASSERT_TRUE(alice.ok());
  EXPECT_EQ(Ids(*alice), (std::vector<std::int64_t>{2}));
  EXPECT_EQ((*alice)[0].reason, "Resources: needs 1 GPU, 0 free");
  EXPECT_EQ(Ids(*reader_->ListJobs(bob_, JobFilter{})), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(Ids(*reader_->ListJobs(
                root_, JobFilter{.include_finished = false, .user = std::nullopt, .limit = 1})),
            (std::vector<std::int64_t>{3}));
}

// ListSharedJobs (GET /jobs) hands out the view's own copy of a pending job for as long as it
// does not change, so that the API may keep the job's rendered row; a change comes with the next
// view as a new copy. A running job comes with its live usage, a copy of its own each time.
TEST_F(ReadSideTest, SharedListingKeepsAnUnchangedJobsCopyAndShowsAChangeInTheNextView) {
  auto first = reader_->ListSharedJobs(root_, JobFilter{});
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_EQ(first->jobs.size(), 2u);
  EXPECT_FALSE(first->next.has_value()) << "the whole list fits a page";
  const std::shared_ptr<const Job> pending = first->jobs[1];
  EXPECT_EQ(pending->id, JobId(2));
  EXPECT_EQ(pending.get(), reader_->Latest()->Find(JobId(2))) << "the view's own copy";
  auto again = reader_->ListSharedJobs(root_, JobFilter{});
  EXPECT_EQ(again->jobs[1], pending);
  EXPECT_NE(again->jobs[0], first->jobs[0]) << "a running job is read with its live usage";

  // A turn that changed only job 3 shares job 2's copy with the view before it.
  Job running = running_;
  running.reason = "running on gpu01";
  reader_->Publish(NextView(*reader_->Latest(),
                            {{pending_.id, pending_}, {running.id, running}},
                            {&node_},
                            ControllerCounters{},
                            std::nullopt));
  EXPECT_EQ(reader_->ListSharedJobs(root_, JobFilter{})->jobs[1], pending);

  // A turn that changed job 2: the next listing has a new copy with the change.
  Job changed = pending_;
  changed.reason = "Priority: 3 jobs ahead";
  reader_->Publish(NextView(*reader_->Latest(),
                            {{changed.id, changed}, {running.id, running}},
                            {&node_},
                            ControllerCounters{},
                            std::nullopt));
  auto after = reader_->ListSharedJobs(root_, JobFilter{});
  ASSERT_EQ(after->jobs.size(), 2u);
  EXPECT_NE(after->jobs[1], pending);
  EXPECT_EQ(after->jobs[1]->reason, "Priority: 3 jobs ahead");
  EXPECT_EQ(pending->reason, "Resources: needs 1 GPU, 0 free") << "an old copy never changes";
}

// The shared listing answers each caller exactly what ListJobs does (authorization.h): a user
// their own jobs, an admin everyone's; another user's jobs only for operators and admins.
TEST_F(ReadSideTest, SharedListingShowsEachCallerWhatItMaySee) {
  auto ids = [](const Result<JobListing>& page) {
    std::vector<std::int64_t> out;
    for (const auto& job : page->jobs) {
      out.push_back(job->id.value());
    }
    return out;
  };
  EXPECT_EQ(ids(reader_->ListSharedJobs(root_, JobFilter{})), (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(ids(reader_->ListSharedJobs(alice_, JobFilter{})), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(ids(reader_->ListSharedJobs(bob_, JobFilter{})), (std::vector<std::int64_t>{3}));
  const auto others = reader_->ListSharedJobs(alice_, JobFilter{.user = "bob"});
  ASSERT_FALSE(others.ok());
  EXPECT_EQ(others.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(ids(reader_->ListSharedJobs(root_, JobFilter{.user = "bob"})),
            (std::vector<std::int64_t>{3}));
}

// Pages follow the cursor (ids below the last page's), newest first. Jobs submitted between two
// pages have larger ids: they do not shift the pages that follow, and every job is listed once.
TEST_F(ReadSideTest, PagesByCursorStayStableWhileJobsAreSubmitted) {
  std::map<JobId, Job> active;
  for (std::int64_t id = 10; id <= 200; ++id) {
    active.emplace(JobId(id), MakeJob(id, kAlice, "alice", JobState::kPending));
  }
  reader_->Publish(
      NextView(*reader_->Latest(), active, {&node_}, ControllerCounters{}, std::nullopt));
  std::vector<std::int64_t> seen;
  JobFilter filter;
  filter.limit = 70;
  std::int64_t next_id = 201;
  for (int page = 0; page < 10; ++page) {
    auto listed = reader_->ListSharedJobs(alice_, filter);
    ASSERT_TRUE(listed.ok()) << listed.error().ToString();
    for (const auto& job : listed->jobs) {
      seen.push_back(job->id.value());
    }
    // Submissions between two pages (at every view's turn, as the controller publishes).
    for (int i = 0; i < 30; ++i, ++next_id) {
      active.emplace(JobId(next_id), MakeJob(next_id, kAlice, "alice", JobState::kPending));
    }
    reader_->Publish(
        NextView(*reader_->Latest(), active, {&node_}, ControllerCounters{}, std::nullopt));
    if (!listed->next) {
      break;
    }
    EXPECT_EQ(*listed->next, JobId(seen.back()));
    filter.before = listed->next;
  }
  std::vector<std::int64_t> want;
  for (std::int64_t id = 200; id >= 10; --id) {
    want.push_back(id);
  }
  EXPECT_EQ(seen, want) << "each job of the first page's time once, in order";
}

TEST_F(ReadSideTest, FinishedJobsComeFromTheStoreAndActiveOnesFromTheView) {
  auto alice = reader_->ListJobs(alice_, JobFilter{.include_finished = true, .user = std::nullopt});
  ASSERT_TRUE(alice.ok()) << alice.error().ToString();
  ASSERT_EQ(Ids(*alice), (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ((*alice)[0].reason, "Resources: needs 1 GPU, 0 free") << "the view's copy, not the "
                                                                     "store's";
  EXPECT_EQ((*alice)[1].state, JobState::kCompleted);
  EXPECT_TRUE(
      reader_->ListJobs(bob_, JobFilter{.include_finished = true, .user = std::nullopt})->empty())
      << "job 3 is in the view only (not stored yet) and the others are alice's";

  auto done = reader_->GetJob(alice_, JobId(1));
  ASSERT_TRUE(done.ok()) << done.error().ToString();
  EXPECT_EQ(done->state, JobState::kCompleted);
  EXPECT_EQ(done->exit_code, 0);
  auto running = reader_->GetJob(root_, JobId(3));
  ASSERT_TRUE(running.ok()) << running.error().ToString();
  EXPECT_EQ(running->state, JobState::kRunning);
}

TEST_F(ReadSideTest, OthersJobsReadAsNotFound) {
  for (const JobId id : {JobId(1), JobId(2), JobId(99)}) {
    auto job = reader_->GetJob(bob_, id);
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().code, ErrorCode::kNotFound);
    EXPECT_EQ(job.error().message, "job " + std::to_string(id.value()) + " not found");
  }
  EXPECT_EQ(reader_->GetJob(alice_, JobId(3)).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(reader_->JobEvents(bob_, JobId(1)).error().code, ErrorCode::kNotFound);
  auto events = reader_->JobEvents(alice_, JobId(1));
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].kind, "state");
}

// A GPU's stored minutes (its series past the Telemetry's rings): for anyone, that GPU's only,
// the newest 31 days of a longer range, and a backwards range refused naming the field.
TEST_F(ReadSideTest, GpuHistoryReadsOneGpusStoredMinutes) {
  const Time t0 = FromUnixMillis(1'700'000'040'000);  // a minute's start
  StoreBatch batch;
  for (const int days : {40, 2, 1}) {
    for (const char* uuid : {"GPU-a", "GPU-b"}) {
      batch.gpu_minutes.push_back(GpuMinute{.node = NodeId("n1"),
                                            .uuid = GpuUuid(uuid),
                                            .minute = t0 - std::chrono::days(days),
                                            .samples = 12,
                                            .util_mean_pct = static_cast<double>(days)});
    }
  }
  ASSERT_TRUE(store_->Commit(batch).ok());
  auto rows = reader_->GpuHistory(bob_, GpuUuid("GPU-a"), t0 - std::chrono::days(60), t0);
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  ASSERT_EQ(rows->size(), 2U);  // day 40 is before the newest 31 days of the range
  EXPECT_EQ((*rows)[0].util_mean_pct, 2);
  EXPECT_EQ((*rows)[1].util_mean_pct, 1);
  EXPECT_EQ((*rows)[1].uuid, GpuUuid("GPU-a"));
  auto backwards = reader_->GpuHistory(bob_, GpuUuid("GPU-a"), t0, t0 - Millis(1));
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(backwards.error().message.find("to_ms"), std::string::npos);
}

TEST_F(ReadSideTest, HistoryShowsEachUserOnlyTheirOwnJobsPageByPage) {
  ASSERT_TRUE(store_->Commit(StoreBatch{.jobs = {running_}}).ok());  // bob's, stored at its start
  auto alice = reader_->JobHistory(alice_, HistoryFilter{});
  ASSERT_TRUE(alice.ok()) << alice.error().ToString();
  EXPECT_EQ(Ids(alice->jobs), (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(alice->jobs[0].reason, "Resources: needs 1 GPU, 0 free") << "the view's copy";
  EXPECT_FALSE(alice->next.has_value());
  EXPECT_EQ(Ids(reader_->JobHistory(bob_, HistoryFilter{})->jobs), (std::vector<std::int64_t>{3}));
  // bob may not ask for alice's jobs; asking for his own name is his own history.
  auto asked = reader_->JobHistory(bob_, HistoryFilter{.user = "alice"});
  ASSERT_FALSE(asked.ok());
  EXPECT_EQ(asked.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(Ids(reader_->JobHistory(bob_, HistoryFilter{.user = "bob"})->jobs),
            (std::vector<std::int64_t>{3}));
  // root sees everyone's, filtered, and pages with the cursor.
  auto first = reader_->JobHistory(root_, HistoryFilter{.limit = 2});
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(Ids(first->jobs), (std::vector<std::int64_t>{3, 2}));
  ASSERT_EQ(first->next, JobId(2));
  auto second = reader_->JobHistory(root_, HistoryFilter{.before = first->next, .limit = 2});
  EXPECT_EQ(Ids(second->jobs), (std::vector<std::int64_t>{1}));
  EXPECT_FALSE(second->next.has_value());
  EXPECT_EQ(Ids(reader_->JobHistory(root_, HistoryFilter{.states = {JobState::kCompleted}})->jobs),
            (std::vector<std::int64_t>{1}));
  EXPECT_EQ(Ids(reader_->JobHistory(root_, HistoryFilter{.user = "alice"})->jobs),
            (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(reader_->JobHistory(root_, HistoryFilter{.limit = 0}).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(reader_
                ->JobHistory(root_,
                             HistoryFilter{.since = clock_.Now(),
                                           .until = clock_.Now() - std::chrono::hours(1)})
                .error()
                .code,
            ErrorCode::kInvalidArgument);
}

TEST_F(ReadSideTest, StatsAndNodesFromTheView) {
  auto nodes = reader_->ListNodes(alice_);
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].name, NodeId("gpu01"));

  clock_.Advance(std::chrono::minutes(1));
  auto stats =
      reader_->Stats({NotificationCount{.channel = "email", .outcome = "sent", .count = 2}});
  ASSERT_TRUE(stats.ok()) << stats.error().ToString();
  std::map<std::string, int> by_state(stats->jobs_by_state.begin(), stats->jobs_by_state.end());
  EXPECT_EQ(by_state["PENDING"], 1);
  EXPECT_EQ(by_state["RUNNING"], 1);
  EXPECT_EQ(by_state["COMPLETED"], 1);
  EXPECT_EQ(stats->nodes, 1);
  EXPECT_EQ(stats->gpus, 2);
  EXPECT_EQ(stats->gpus_allocated, 2);
  ASSERT_EQ(stats->teams.size(), 1u);
  EXPECT_EQ(stats->teams[0].team, "ml");
  EXPECT_DOUBLE_EQ(stats->teams[0].gpu_seconds_total, 2 * 3660.0);
  ASSERT_EQ(stats->queue.size(), 2u);  // every configured class, in the config's order
  EXPECT_EQ(stats->queue[0].priority, "high");
  EXPECT_EQ(stats->queue[1].priority, "normal");
  EXPECT_EQ(stats->wait_bucket_bounds.size(), kWaitBucketBounds.size());
  ASSERT_EQ(stats->notifications.size(), 1u);
  EXPECT_EQ(stats->notifications[0].count, 2);
}

TEST_F(ReadSideTest, GpusComeFromTelemetry) {
  telemetry_.SetInventory(node_);
  telemetry_.Assign(GpuUuid("GPU-0"),
                    GpuAssignment{.job = running_.id, .user = "bob", .team = "ml"});
  auto gpus = reader_->ListGpus(alice_);
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[0].job, running_.id) << "who holds a GPU is shown to everyone";
  EXPECT_EQ((*gpus)[0].user, "bob");
  EXPECT_FALSE((*gpus)[1].job.has_value());
}

TEST_F(ReadSideTest, AProcessCommandLineIsShownToItsOwnerAndAdminsOnly) {
  telemetry_.SetInventory(node_);
  GpuSample sample;
  sample.uuid = GpuUuid("GPU-0");
  sample.time = clock_.Now();
  sample.processes = {
      GpuProcessSample{.pid = 10, .uid = kAlice, .user = "alice", .command = "python a.py"},
      GpuProcessSample{.pid = 11, .uid = kBob, .user = "bob", .command = "train --token=s3cret"},
      GpuProcessSample{.pid = 12, .command = "unknown owner"}};
  telemetry_.Ingest(node_.name, {sample});
  const auto commands = [this](const Caller& caller) {
    std::vector<std::string> out;
    const auto gpus = reader_->ListGpus(caller);
    for (const GpuStatus& gpu : *gpus) {
      for (const GpuProcessSample& p :
           gpu.sample ? gpu.sample->processes : std::vector<GpuProcessSample>{}) {
        out.push_back(std::to_string(p.pid) + ":" + p.command);
      }
    }
    return out;
  };
  EXPECT_EQ(commands(alice_), (std::vector<std::string>{"10:python a.py", "11:", "12:"}));
  EXPECT_EQ(commands(bob_), (std::vector<std::string>{"10:", "11:train --token=s3cret", "12:"}));
  EXPECT_EQ(
      commands(root_),
      (std::vector<std::string>{"10:python a.py", "11:train --token=s3cret", "12:unknown owner"}));
}

TEST_F(ReadSideTest, TokensAreListedWithoutTheirHash) {
  ApiToken mine{.id = "aaaaaaaaaaaa",
                .secret_hash = std::string(64, 'a'),
                .kind = TokenKind::kUser,
                .subject = "alice",
                .uid = kAlice};
  ApiToken theirs = mine;
  theirs.id = "bbbbbbbbbbbb";
  theirs.subject = "bob";
  theirs.uid = kBob;
  const Status committed = store_->Commit(StoreBatch{.tokens = {mine, theirs}});
  ASSERT_TRUE(committed.ok()) << committed.error().ToString();
  auto alice = reader_->ListTokens(TokenCaller(kAlice, "alice", Role::kUser));
  ASSERT_TRUE(alice.ok()) << alice.error().ToString();
  ASSERT_EQ(alice->size(), 1u);
  EXPECT_EQ((*alice)[0].id, "aaaaaaaaaaaa");
  EXPECT_TRUE((*alice)[0].secret_hash.empty());
  auto root = reader_->ListTokens(root_);
  ASSERT_TRUE(root.ok()) << root.error().ToString();
  EXPECT_EQ(root->size(), 2u);
}

TEST_F(ReadSideTest, AReportAddsTheViewsRunningJobsToTheStoredRuns) {
  auto report = reader_->MonthlyReport(root_, ReportRequest{.period = "2023-11"});
  ASSERT_TRUE(report.ok()) << report.error().ToString();
  ASSERT_EQ(report->teams.size(), 1u);
  EXPECT_EQ(report->teams[0].team, "ml");
  EXPECT_EQ(report->teams[0].usage.jobs, 2);
  // The stored run's half hour, and the running job's 2 GPUs for an hour less the 20 s since the
  // minute began: the report runs to the start of the current minute, as its GPU minutes do.
  EXPECT_NEAR(report->teams[0].usage.gpu_hours_allocated, 0.5 + 2.0 * (3600 - 20) / 3600, 1e-9);
  EXPECT_EQ(report->covered_until, FromUnixMillis(1'700'000'000'000 - 20'000));

  auto alice = reader_->MonthlyReport(alice_, ReportRequest{.period = "2023-11"});
  ASSERT_TRUE(alice.ok()) << alice.error().ToString();
  EXPECT_FALSE(alice->all_teams);
  for (const UserFigures& user : alice->users) {
    EXPECT_EQ(user.user, "alice") << "a user sees only its own rows";
  }
  auto other = reader_->MonthlyReport(bob_, ReportRequest{.period = "2023-11", .team = "vision"});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kPermissionDenied);
}

TEST_F(ReadSideTest, ReadsFailWithTheViewsErrorAndOnceClosed) {
  reader_->Publish(NextView(*reader_->Latest(),
                            {{pending_.id, pending_}},
                            {&node_},
                            {},
                            Unavailable("lost the lease to another server")));
  const std::string lost = "lost the lease to another server";
  EXPECT_EQ(ErrorOf(reader_->ListJobs(alice_, JobFilter{})), lost);
  EXPECT_EQ(ErrorOf(reader_->GetJob(alice_, JobId(1))), lost);
  EXPECT_EQ(ErrorOf(reader_->JobEvents(alice_, JobId(1))), lost);
  EXPECT_EQ(ErrorOf(reader_->ListNodes(alice_)), lost);
  EXPECT_EQ(ErrorOf(reader_->Stats({})), lost);
  EXPECT_EQ(ErrorOf(reader_->MonthlyReport(root_, ReportRequest{.period = "2023-11"})), lost);
  EXPECT_EQ(ErrorOf(reader_->ListTokens(root_)), lost);
  reader_->Publish(
      NextView(*reader_->Latest(), {{pending_.id, pending_}}, {&node_}, {}, std::nullopt));
  EXPECT_TRUE(reader_->GetJob(alice_, JobId(2)).ok());
  reader_->Close();
  auto closed = reader_->GetJob(alice_, JobId(2));
  ASSERT_FALSE(closed.ok());
  EXPECT_EQ(closed.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace gf
