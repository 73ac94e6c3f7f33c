// The conformance tests themselves; backends instantiate them (see store_conformance_test.h).
#include "store/store_conformance_test.h"

#include <gmock/gmock.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "store/store_test_util.h"

namespace gf::testing {

void StoreConformanceTest::SetUp() {
  backend_ = GetParam().make();
  ASSERT_NE(backend_, nullptr);
  Reopen();
}

void StoreConformanceTest::Reopen() {
  store_.reset();  // close first: a backend may allow one open Store at a time
  auto store = backend_->Open();
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  store_ = std::move(store).value();
}

void StoreConformanceTest::MustCommit(const StoreBatch& batch) {
  Status status = store_->Commit(batch);
  ASSERT_TRUE(status.ok()) << status.error().ToString();
}

namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

std::vector<std::int64_t> Ids(const std::vector<Job>& jobs) {
  std::vector<std::int64_t> ids;
  ids.reserve(jobs.size());
  for (const Job& j : jobs) {
    ids.push_back(j.id.value());
  }
  return ids;
}

std::vector<std::int64_t> Seqs(const std::vector<Event>& events) {
  std::vector<std::int64_t> seqs;
  seqs.reserve(events.size());
  for (const Event& e : events) {
    seqs.push_back(e.seq);
  }
  return seqs;
}

std::vector<std::string> Kinds(const std::vector<Event>& events) {
  std::vector<std::string> kinds;
  kinds.reserve(events.size());
  for (const Event& e : events) {
    kinds.push_back(e.kind);
  }
  return kinds;
}

std::vector<std::string> Names(const std::vector<Node>& nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const Node& n : nodes) {
    names.push_back(n.name.value());
  }
  return names;
}

// GetJob that must succeed and find the job.
Job MustGet(Store& store, std::int64_t id) {
  auto job = store.GetJob(JobId(id));
  EXPECT_TRUE(job.ok()) << job.error().ToString();
  if (!job.ok() || !job->has_value()) {
    ADD_FAILURE() << "job " << id << " not found";
    return Job{};
  }
  return **job;
}

std::vector<Job> MustList(Store& store, const JobQuery& query) {
  auto jobs = store.ListJobs(query);
  EXPECT_TRUE(jobs.ok()) << jobs.error().ToString();
  return jobs.ok() ? *jobs : std::vector<Job>{};
}

std::vector<Event> MustEvents(Store& store, std::optional<JobId> job, std::int64_t after,
                              int limit = 1000) {
  auto events = store.ListEvents(job, after, limit);
  EXPECT_TRUE(events.ok()) << events.error().ToString();
  return events.ok() ? *events : std::vector<Event>{};
}

std::int64_t MustMaxJobId(Store& store) {
  auto max = store.MaxJobId();
  EXPECT_TRUE(max.ok()) << max.error().ToString();
  return max.value_or(-1);
}

std::int64_t MustMaxSeq(Store& store) {
  auto max = store.MaxEventSeq();
  EXPECT_TRUE(max.ok()) << max.error().ToString();
  return max.value_or(-1);
}

std::vector<Node> MustNodes(Store& store) {
  auto nodes = store.ListNodes();
  EXPECT_TRUE(nodes.ok()) << nodes.error().ToString();
  return nodes.ok() ? *nodes : std::vector<Node>{};
}

TEST_P(StoreConformanceTest, NewStoreIsEmpty) {
  EXPECT_EQ(MustMaxJobId(*store_), 0);
  EXPECT_EQ(MustMaxSeq(*store_), 0);
  EXPECT_THAT(MustList(*store_, {}), IsEmpty());
  EXPECT_THAT(MustNodes(*store_), IsEmpty());
  EXPECT_THAT(MustEvents(*store_, std::nullopt, 0), IsEmpty());
  auto job = store_->GetJob(JobId(1));
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->has_value());
}

TEST_P(StoreConformanceTest, EmptyBatchCommits) {
  MustCommit(StoreBatch{});
  EXPECT_EQ(MustMaxJobId(*store_), 0);
}

TEST_P(StoreConformanceTest, JobWithOptionalFieldsEmptyRoundTrips) {
  Job job = MinimalJob(1);
  MustCommit({.jobs = {job}});
  EXPECT_EQ(DebugString(MustGet(*store_, 1)), DebugString(job));
}

TEST_P(StoreConformanceTest, JobWithEveryFieldSetRoundTrips) {
  Job job = FullJob(7);
  MustCommit({.jobs = {job}});
  EXPECT_EQ(DebugString(MustGet(*store_, 7)), DebugString(job));
  auto listed = MustList(*store_, {});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(DebugString(listed[0]), DebugString(job));
}

TEST_P(StoreConformanceTest, JobEdgeValuesRoundTrip) {
  Job job = MinimalJob(std::numeric_limits<std::int64_t>::max());
  job.owner.uid = std::numeric_limits<std::uint32_t>::max();
  job.owner.gid = std::numeric_limits<std::uint32_t>::max();
  job.spec.argv.clear();
  job.spec.request = JobRequest{0, std::string()};  // CPU-only; an empty type is not "any"
  job.spec.time_limit = std::chrono::seconds(0);
  job.state = JobState::kRunning;
  job.allocation = Allocation{NodeId("n"), {}};  // CPU-only job placed on a node
  job.submit_time = FromUnixMillis(-1);           // before 1970 still round-trips
  job.exit_code = -1;
  job.pid = 0;
  MustCommit({.jobs = {job}});
  EXPECT_EQ(DebugString(MustGet(*store_, job.id.value())), DebugString(job));
}

TEST_P(StoreConformanceTest, JobReplacedById) {
  Job job = FullJob(3);
  MustCommit({.jobs = {job}});
  Job changed = MinimalJob(3, 77);  // every field different, optionals now empty
  changed.state = JobState::kPending;
  changed.spec.name = "renamed";
  MustCommit({.jobs = {changed}});
  EXPECT_EQ(DebugString(MustGet(*store_, 3)), DebugString(changed));
  EXPECT_THAT(Ids(MustList(*store_, {})), ElementsAre(3));
  // Last write wins inside one batch too.
  Job again = changed;
  again.reason = "second";
  MustCommit({.jobs = {changed, again}});
  EXPECT_EQ(MustGet(*store_, 3).reason, "second");
}

TEST_P(StoreConformanceTest, ListJobsNewestFirst) {
  MustCommit({.jobs = {MinimalJob(2), MinimalJob(10), MinimalJob(5)}});
  MustCommit({.jobs = {MinimalJob(7)}});
  EXPECT_THAT(Ids(MustList(*store_, {})), ElementsAre(10, 7, 5, 2));
}

TEST_P(StoreConformanceTest, ListJobsFiltersByUid) {
  MustCommit({.jobs = {MinimalJob(1, 1000), MinimalJob(2, 2000), MinimalJob(3, 1000),
                       MinimalJob(4, 0)}});
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 1000})), ElementsAre(3, 1));
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 0})), ElementsAre(4));
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 3000})), IsEmpty());
}

TEST_P(StoreConformanceTest, ListJobsActiveOnlySkipsTerminalStates) {
  const std::vector<JobState> states = {
      JobState::kPending,   JobState::kStarting, JobState::kRunning,
      JobState::kCompleted, JobState::kFailed,   JobState::kCancelled,
      JobState::kTimeout,   JobState::kPreempted, JobState::kNodeFail};
  StoreBatch batch;
  std::vector<std::int64_t> active;
  for (std::size_t i = 0; i < states.size(); ++i) {
    Job job = MinimalJob(static_cast<std::int64_t>(i) + 1);
    job.state = states[i];
    batch.jobs.push_back(job);
    if (!IsTerminal(states[i])) {
      active.insert(active.begin(), job.id.value());
    }
  }
  MustCommit(batch);
  EXPECT_THAT(Ids(MustList(*store_, {.active_only = true})), ElementsAreArray(active));

  // A job that finishes leaves the active list; one requeued comes back.
  Job running = MinimalJob(3);
  running.state = JobState::kCompleted;
  Job requeued = MinimalJob(4);
  requeued.state = JobState::kPending;
  MustCommit({.jobs = {running, requeued}});
  EXPECT_THAT(Ids(MustList(*store_, {.active_only = true})), ElementsAre(9, 8, 4, 2, 1));
}

TEST_P(StoreConformanceTest, ListJobsPagesWithBeforeAndLimit) {
  StoreBatch batch;
  for (int id = 1; id <= 10; ++id) {
    batch.jobs.push_back(MinimalJob(id));
  }
  MustCommit(batch);
  std::vector<std::int64_t> seen;
  JobQuery query{.limit = 3};
  for (int page = 0; page < 10; ++page) {
    auto jobs = MustList(*store_, query);
    if (jobs.empty()) {
      break;
    }
    EXPECT_LE(jobs.size(), 3u);
    for (const Job& j : jobs) {
      seen.push_back(j.id.value());
    }
    query.before = jobs.back().id;
  }
  EXPECT_THAT(seen, ElementsAre(10, 9, 8, 7, 6, 5, 4, 3, 2, 1));
  EXPECT_THAT(Ids(MustList(*store_, {.before = JobId(1)})), IsEmpty());
  EXPECT_THAT(Ids(MustList(*store_, {.before = JobId(100), .limit = 2})), ElementsAre(10, 9));
}

TEST_P(StoreConformanceTest, ListJobsCombinesFilters) {
  StoreBatch batch;
  for (int id = 1; id <= 12; ++id) {
    Job job = MinimalJob(id, id % 2 == 0 ? 1000 : 2000);
    job.state = id % 3 == 0 ? JobState::kFailed : JobState::kRunning;
    batch.jobs.push_back(job);
  }
  MustCommit(batch);
  // uid 1000: 2 4 6 8 10 12; of those active (not divisible by 3): 2 4 8 10.
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 1000, .active_only = true})),
              ElementsAre(10, 8, 4, 2));
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 1000, .active_only = true, .before = JobId(10),
                                     .limit = 2})),
              ElementsAre(8, 4));
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 2000, .before = JobId(7)})), ElementsAre(5, 3, 1));
  EXPECT_THAT(Ids(MustList(*store_, {.active_only = true, .before = JobId(6), .limit = 3})),
              ElementsAre(5, 4, 2));
}

TEST_P(StoreConformanceTest, ListRejectsNonPositiveLimit) {
  EXPECT_FALSE(store_->ListJobs({.limit = 0}).ok());
  EXPECT_FALSE(store_->ListJobs({.limit = -5}).ok());
  EXPECT_FALSE(store_->ListEvents(std::nullopt, 0, 0).ok());
}

TEST_P(StoreConformanceTest, MaxJobIdNeverDecreases) {
  EXPECT_EQ(MustMaxJobId(*store_), 0);
  MustCommit({.jobs = {MinimalJob(5), MinimalJob(3)}});
  EXPECT_EQ(MustMaxJobId(*store_), 5);
  MustCommit({.jobs = {MinimalJob(4)}});
  EXPECT_EQ(MustMaxJobId(*store_), 5);
  Job replaced = MinimalJob(5);
  replaced.state = JobState::kCancelled;
  MustCommit({.jobs = {replaced}});
  EXPECT_EQ(MustMaxJobId(*store_), 5);
  MustCommit({.jobs = {MinimalJob(1'000'000'000'000)}});
  EXPECT_EQ(MustMaxJobId(*store_), 1'000'000'000'000);
}

TEST_P(StoreConformanceTest, EventsGetIncreasingSeqsAndRoundTrip) {
  MustCommit({.jobs = {MinimalJob(1)}});
  Event submit = SampleEvent(JobId(1), "submit");
  submit.seq = 999;  // ignored: the store assigns seq
  submit.actor = "zoë";
  submit.message = "submitted \"train\" — 4 × H100";
  Event node = SampleEvent(std::nullopt, "node");
  MustCommit({.events = {submit, node}});
  auto events = MustEvents(*store_, std::nullopt, 0);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_GT(events[0].seq, 0);
  EXPECT_GT(events[1].seq, events[0].seq);
  submit.seq = events[0].seq;
  node.seq = events[1].seq;
  EXPECT_EQ(DebugString(events[0]), DebugString(submit));
  EXPECT_EQ(DebugString(events[1]), DebugString(node));
  EXPECT_EQ(MustMaxSeq(*store_), events[1].seq);
}

TEST_P(StoreConformanceTest, EventsFilterByJobAndAfterSeq) {
  MustCommit({.jobs = {MinimalJob(1), MinimalJob(2)}});
  MustCommit({.events = {SampleEvent(JobId(1), "a"), SampleEvent(JobId(2), "b"),
                         SampleEvent(std::nullopt, "c")}});
  MustCommit({.events = {SampleEvent(JobId(1), "d"), SampleEvent(JobId(2), "e")}});
  auto all = MustEvents(*store_, std::nullopt, 0);
  EXPECT_THAT(Kinds(all), ElementsAre("a", "b", "c", "d", "e"));
  auto seqs = Seqs(all);
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
  EXPECT_EQ(std::adjacent_find(seqs.begin(), seqs.end()), seqs.end());  // no duplicates

  EXPECT_THAT(Kinds(MustEvents(*store_, JobId(1), 0)), ElementsAre("a", "d"));
  EXPECT_THAT(Kinds(MustEvents(*store_, JobId(2), all[1].seq)), ElementsAre("e"));
  EXPECT_THAT(Kinds(MustEvents(*store_, std::nullopt, all[2].seq)), ElementsAre("d", "e"));
  EXPECT_THAT(Kinds(MustEvents(*store_, std::nullopt, 0, 2)), ElementsAre("a", "b"));
  EXPECT_THAT(Kinds(MustEvents(*store_, std::nullopt, all[4].seq)), IsEmpty());
  EXPECT_THAT(Kinds(MustEvents(*store_, JobId(3), 0)), IsEmpty());
}

TEST_P(StoreConformanceTest, EventsCanBePagedWithAfterSeq) {
  MustCommit({.jobs = {MinimalJob(1)}});
  StoreBatch batch;
  for (int i = 0; i < 25; ++i) {
    batch.events.push_back(SampleEvent(JobId(1), std::to_string(i)));
  }
  MustCommit(batch);
  std::vector<std::string> kinds;
  std::int64_t after = 0;
  while (true) {
    auto page = MustEvents(*store_, JobId(1), after, 10);
    if (page.empty()) {
      break;
    }
    for (const Event& e : page) {
      kinds.push_back(e.kind);
    }
    after = page.back().seq;
  }
  ASSERT_EQ(kinds.size(), 25u);
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(kinds[static_cast<std::size_t>(i)], std::to_string(i));
  }
}

TEST_P(StoreConformanceTest, EventForJobInSameBatchIsAccepted) {
  MustCommit({.jobs = {MinimalJob(1)}, .events = {SampleEvent(JobId(1), "submit")}});
  EXPECT_THAT(Kinds(MustEvents(*store_, JobId(1), 0)), ElementsAre("submit"));
}

TEST_P(StoreConformanceTest, NodeRoundTripsAndListsByName) {
  Node b = SampleNode("node-b", 8);
  b.gpus[3].health = GpuHealth::kFailed;
  b.gpus[3].health_cause = "XID 79: fallen off the bus";
  b.gpus[5].health = GpuHealth::kDegraded;
  b.state = NodeState::kDraining;
  b.labels["zone"] = "ü-west";
  Node a = SampleNode("node-a", 0);
  a.labels.clear();
  a.state = NodeState::kDown;
  MustCommit({.nodes = {b, a}});
  auto nodes = MustNodes(*store_);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(DebugString(nodes[0]), DebugString(a));
  EXPECT_EQ(DebugString(nodes[1]), DebugString(b));
  EXPECT_EQ(nodes[1], b);
}

TEST_P(StoreConformanceTest, NodeReplacedByName) {
  MustCommit({.nodes = {SampleNode("n1", 4), SampleNode("n2", 2)}});
  Node n1 = SampleNode("n1", 2);
  n1.labels = {{"rack", "r99"}};
  n1.state = NodeState::kDrained;
  n1.last_seen = FromUnixMillis(1'800'000'000'000);
  MustCommit({.nodes = {n1}});
  auto nodes = MustNodes(*store_);
  EXPECT_THAT(Names(nodes), ElementsAre("n1", "n2"));
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(DebugString(nodes[0]), DebugString(n1));
}

// The batch's jobs are written before its events, so a bad event fails the transaction half-way
// through: the jobs and nodes written before it must be rolled back too.
TEST_P(StoreConformanceTest, BatchFailingHalfWayAppliesNothing) {
  MustCommit({.jobs = {MinimalJob(1)}, .events = {SampleEvent(JobId(1), "submit")}});
  const auto events_before = MustEvents(*store_, std::nullopt, 0);
  const std::int64_t seq_before = MustMaxSeq(*store_);

  Job changed = MinimalJob(1);
  changed.state = JobState::kCancelled;
  StoreBatch bad;
  bad.jobs = {MinimalJob(50), changed};
  bad.events = {SampleEvent(JobId(50), "submit"), SampleEvent(JobId(999), "orphan")};
  bad.nodes = {SampleNode("n1", 1)};
  Status status = store_->Commit(bad);
  ASSERT_FALSE(status.ok()) << "an event for a job that is not stored must be refused";

  auto job50 = store_->GetJob(JobId(50));
  ASSERT_TRUE(job50.ok());
  EXPECT_FALSE(job50->has_value());
  EXPECT_EQ(MustGet(*store_, 1).state, JobState::kPending);
  EXPECT_EQ(MustMaxJobId(*store_), 1);
  EXPECT_EQ(Seqs(MustEvents(*store_, std::nullopt, 0)), Seqs(events_before));
  EXPECT_THAT(MustNodes(*store_), IsEmpty());

  // The store is still usable, and the next batch is applied whole.
  bad.events.pop_back();
  MustCommit(bad);
  EXPECT_EQ(MustGet(*store_, 1).state, JobState::kCancelled);
  EXPECT_THAT(Kinds(MustEvents(*store_, std::nullopt, seq_before)), ElementsAre("submit"));
  EXPECT_THAT(Names(MustNodes(*store_)), ElementsAre("n1"));
}

TEST_P(StoreConformanceTest, BatchWithInvalidJobIdAppliesNothing) {
  StoreBatch bad;
  bad.jobs = {MinimalJob(1), MinimalJob(2), MinimalJob(0)};  // 0 never names a job
  bad.nodes = {SampleNode("n1", 1)};
  EXPECT_FALSE(store_->Commit(bad).ok());
  EXPECT_THAT(MustList(*store_, {}), IsEmpty());
  EXPECT_EQ(MustMaxJobId(*store_), 0);
  EXPECT_THAT(MustNodes(*store_), IsEmpty());
}

TEST_P(StoreConformanceTest, DataSurvivesReopen) {
  Job full = FullJob(9);
  Node node = SampleNode("gpu-1", 4);
  MustCommit({.jobs = {MinimalJob(1), full}, .events = {SampleEvent(JobId(9), "submit")},
              .nodes = {node}});
  const auto events = MustEvents(*store_, std::nullopt, 0);
  ASSERT_EQ(events.size(), 1u);

  Reopen();
  EXPECT_EQ(DebugString(MustGet(*store_, 9)), DebugString(full));
  EXPECT_THAT(Ids(MustList(*store_, {})), ElementsAre(9, 1));
  EXPECT_EQ(MustMaxJobId(*store_), 9);
  auto nodes = MustNodes(*store_);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0], node);
  auto reread = MustEvents(*store_, std::nullopt, 0);
  ASSERT_EQ(reread.size(), 1u);
  EXPECT_EQ(DebugString(reread[0]), DebugString(events[0]));

  // Seqs keep increasing across a restart: a watcher's after_seq stays meaningful.
  MustCommit({.events = {SampleEvent(std::nullopt, "restart")}});
  auto after = MustEvents(*store_, std::nullopt, events[0].seq);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_GT(after[0].seq, events[0].seq);
}

TEST_P(StoreConformanceTest, ManyJobsInOneBatch) {
  StoreBatch batch;
  for (int id = 1; id <= 500; ++id) {
    batch.jobs.push_back(MinimalJob(id, static_cast<std::uint32_t>(id % 7)));
    batch.events.push_back(SampleEvent(JobId(id), "submit"));
  }
  MustCommit(batch);
  EXPECT_EQ(MustList(*store_, {}).size(), 500u);
  EXPECT_EQ(MustList(*store_, {.uid = 3}).size(), 72u);  // 3, 10, ..., 500
  EXPECT_EQ(MustEvents(*store_, std::nullopt, 0).size(), 500u);
}

}  // namespace
}  // namespace gf::testing
