// The conformance tests themselves; backends instantiate them (see store_conformance_test.h).
#include "store/store_conformance_test.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include <gmock/gmock.h>

#include "store/store_test_util.h"

namespace gf::testing {

void StoreConformanceTest::SetUp() {
  backend_ = GetParam().make();
  ASSERT_NE(backend_, nullptr);
  if (std::optional<std::string> why = backend_->SkipReason()) {
    GTEST_SKIP() << *why;
  }
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
using ::testing::HasSubstr;
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
Job MustGet(StoreReader& store, std::int64_t id) {
  auto job = store.GetJob(JobId(id));
  EXPECT_TRUE(job.ok()) << job.error().ToString();
  if (!job.ok() || !job->has_value()) {
    ADD_FAILURE() << "job " << id << " not found";
    return Job{};
  }
  return **job;
}

std::vector<Job> MustList(StoreReader& store, const JobQuery& query) {
  auto jobs = store.ListJobs(query);
  EXPECT_TRUE(jobs.ok()) << jobs.error().ToString();
  return jobs.ok() ? *jobs : std::vector<Job>{};
}

std::vector<Event> MustEvents(StoreReader& store,
                              std::optional<JobId> job,
                              std::int64_t after,
                              int limit = 1000) {
  auto events = store.ListEvents(job, after, limit);
  EXPECT_TRUE(events.ok()) << events.error().ToString();
  return events.ok() ? *events : std::vector<Event>{};
}

std::int64_t MustMaxJobId(StoreReader& store) {
  auto max = store.MaxJobId();
  EXPECT_TRUE(max.ok()) << max.error().ToString();
  return max.value_or(-1);
}

std::int64_t MustMaxSeq(StoreReader& store) {
  auto max = store.MaxEventSeq();
  EXPECT_TRUE(max.ok()) << max.error().ToString();
  return max.value_or(-1);
}

std::vector<Node> MustNodes(StoreReader& store) {
  auto nodes = store.ListNodes();
  EXPECT_TRUE(nodes.ok()) << nodes.error().ToString();
  return nodes.ok() ? *nodes : std::vector<Node>{};
}

std::vector<GpuMinute> MustMinutes(StoreReader& store, Time from, Time to, int limit = 100'000) {
  auto minutes = store.ListGpuMinutes(from, to, limit);
  EXPECT_TRUE(minutes.ok()) << minutes.error().ToString();
  return minutes.ok() ? *minutes : std::vector<GpuMinute>{};
}

// Every stored minute: the widest range there is.
std::vector<GpuMinute> MustAllMinutes(StoreReader& store) {
  return MustMinutes(store,
                     FromUnixMillis(std::numeric_limits<std::int64_t>::min()),
                     FromUnixMillis(std::numeric_limits<std::int64_t>::max()));
}

std::vector<std::string> DebugStrings(const std::vector<GpuMinute>& minutes) {
  std::vector<std::string> out;
  out.reserve(minutes.size());
  for (const GpuMinute& m : minutes) {
    out.push_back(DebugString(m));
  }
  return out;
}

// "node/uuid@minute-offset" of each row, to assert on order and range compactly.
std::vector<std::string> Keys(const std::vector<GpuMinute>& minutes) {
  std::vector<std::string> keys;
  keys.reserve(minutes.size());
  for (const GpuMinute& m : minutes) {
    const auto offset = (m.minute - SampleGpuMinute("n", "u", 0).minute) / std::chrono::minutes(1);
    keys.push_back(m.node.value() + "/" + m.uuid.value() + "@" + std::to_string(offset));
  }
  return keys;
}

TEST_P(StoreConformanceTest, NewStoreIsEmpty) {
  EXPECT_EQ(MustMaxJobId(*store_), 0);
  EXPECT_EQ(MustMaxSeq(*store_), 0);
  EXPECT_THAT(MustList(*store_, {}), IsEmpty());
  EXPECT_THAT(MustNodes(*store_), IsEmpty());
  EXPECT_THAT(MustEvents(*store_, std::nullopt, 0), IsEmpty());
  EXPECT_THAT(MustAllMinutes(*store_), IsEmpty());
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
  job.submit_time = FromUnixMillis(-1);          // before 1970 still round-trips
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
  MustCommit(
      {.jobs = {MinimalJob(1, 1000), MinimalJob(2, 2000), MinimalJob(3, 1000), MinimalJob(4, 0)}});
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 1000})), ElementsAre(3, 1));
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 0})), ElementsAre(4));
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 3000})), IsEmpty());
}

TEST_P(StoreConformanceTest, ListJobsActiveOnlySkipsTerminalStates) {
  const std::vector<JobState> states = {JobState::kPending,
                                        JobState::kStarting,
                                        JobState::kRunning,
                                        JobState::kCompleted,
                                        JobState::kFailed,
                                        JobState::kCancelled,
                                        JobState::kTimeout,
                                        JobState::kPreempted,
                                        JobState::kNodeFail};
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
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 1000, .active_only = true})), ElementsAre(10, 8, 4, 2));
  EXPECT_THAT(
      Ids(MustList(*store_, {.uid = 1000, .active_only = true, .before = JobId(10), .limit = 2})),
      ElementsAre(8, 4));
  EXPECT_THAT(Ids(MustList(*store_, {.uid = 2000, .before = JobId(7)})), ElementsAre(5, 3, 1));
  EXPECT_THAT(Ids(MustList(*store_, {.active_only = true, .before = JobId(6), .limit = 3})),
              ElementsAre(5, 4, 2));
}

TEST_P(StoreConformanceTest, ListJobsFiltersByArray) {
  // Two arrays (ids 3-5 and 8-9) among plain jobs; the filter combines with the others.
  StoreBatch batch;
  for (int id = 1; id <= 10; ++id) {
    Job job = MinimalJob(id);
    if (id >= 3 && id <= 5) {
      job.spec.array = ArrayTask{.array_job = JobId(3), .index = id - 3, .max_running = 2};
    } else if (id >= 8 && id <= 9) {
      job.spec.array = ArrayTask{.array_job = JobId(8), .index = id - 8};
    }
    job.state = id == 4 ? JobState::kCompleted : JobState::kPending;
    batch.jobs.push_back(job);
  }
  MustCommit(batch);
  EXPECT_THAT(Ids(MustList(*store_, {.array_job = JobId(3)})), ElementsAre(5, 4, 3));
  EXPECT_THAT(Ids(MustList(*store_, {.array_job = JobId(8)})), ElementsAre(9, 8));
  EXPECT_THAT(Ids(MustList(*store_, {.active_only = true, .array_job = JobId(3)})),
              ElementsAre(5, 3));
  EXPECT_THAT(Ids(MustList(*store_, {.array_job = JobId(4)})), IsEmpty());  // a task, not an array
}

TEST_P(StoreConformanceTest, ListRejectsNonPositiveLimit) {
  EXPECT_FALSE(store_->ListJobs({.limit = 0}).ok());
  EXPECT_FALSE(store_->ListJobs({.limit = -5}).ok());
  EXPECT_FALSE(store_->ListEvents(std::nullopt, 0, 0).ok());
  for (int limit : {0, -1}) {
    auto minutes = store_->ListGpuMinutes(FromUnixMillis(0), FromUnixMillis(60'000), limit);
    ASSERT_FALSE(minutes.ok());
    EXPECT_EQ(minutes.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(minutes.error().message, HasSubstr("limit must be positive"));
  }
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
  MustCommit({.events = {SampleEvent(JobId(1), "a"),
                         SampleEvent(JobId(2), "b"),
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
  n1.state_reason = "swap GPU 3 (ticket #42, 'fan')";
  n1.last_seen = FromUnixMillis(1'800'000'000'000);
  MustCommit({.nodes = {n1}});
  auto nodes = MustNodes(*store_);
  EXPECT_THAT(Names(nodes), ElementsAre("n1", "n2"));
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(DebugString(nodes[0]), DebugString(n1));
  // Resumed: the reason is cleared, not kept from the drain.
  n1.state = NodeState::kUp;
  n1.state_reason.clear();
  MustCommit({.nodes = {n1}});
  EXPECT_EQ(DebugString(MustNodes(*store_)[0]), DebugString(n1));
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
  MustCommit({.jobs = {MinimalJob(1), full},
              .events = {SampleEvent(JobId(9), "submit")},
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

// --- Job usage (schema v2) ---

constexpr double kInfinity = std::numeric_limits<double>::infinity();

TEST_P(StoreConformanceTest, JobUsageIsSetReplacedAndCleared) {
  Job job = MinimalJob(4);
  MustCommit({.jobs = {job}});
  EXPECT_FALSE(MustGet(*store_, 4).usage.has_value());

  job.state = JobState::kCompleted;
  job.usage = JobUsage{.samples = 3,
                       .mean_util_pct = 1.0 / 3.0,
                       .peak_util_pct = 2,
                       .peak_memory_mib = 5,
                       .energy_mj = 7};
  MustCommit({.jobs = {job}});
  EXPECT_EQ(DebugString(MustGet(*store_, 4)), DebugString(job));

  job.usage = JobUsage{};  // all zero is a usage, not "none"
  MustCommit({.jobs = {job}});
  ASSERT_TRUE(MustGet(*store_, 4).usage.has_value());
  EXPECT_EQ(*MustGet(*store_, 4).usage, JobUsage{});

  job.usage.reset();  // a requeued job loses its figures
  MustCommit({.jobs = {job}});
  EXPECT_FALSE(MustGet(*store_, 4).usage.has_value());
}

TEST_P(StoreConformanceTest, JobUsageEdgeValuesRoundTrip) {
  Job job = MinimalJob(2);
  job.usage = JobUsage{.samples = std::numeric_limits<std::int64_t>::max(),
                       .mean_util_pct = std::numeric_limits<double>::denorm_min(),
                       .peak_util_pct = std::numeric_limits<int>::min(),
                       .peak_memory_mib = std::numeric_limits<std::int64_t>::min(),
                       .energy_mj = -1};  // a counter reset makes a negative delta
  MustCommit({.jobs = {job}});
  EXPECT_EQ(DebugString(MustGet(*store_, 2)), DebugString(job));
}

TEST_P(StoreConformanceTest, InvalidJobUsageRefusesTheBatch) {
  const std::vector<std::pair<JobUsage, std::string>> cases = {
      {JobUsage{.samples = -1}, "samples is -1"},
      {JobUsage{.samples = 1, .mean_util_pct = std::nan("")}, "mean_util_pct is nan"},
      {JobUsage{.samples = 1, .mean_util_pct = kInfinity}, "mean_util_pct is inf"},
  };
  for (const auto& [usage, message] : cases) {
    Job bad = MinimalJob(5);
    bad.usage = usage;
    Status status = store_->Commit({.jobs = {MinimalJob(1), bad}});
    ASSERT_FALSE(status.ok()) << message;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(status.error().message, HasSubstr("job 5 usage: " + message));
    EXPECT_THAT(MustList(*store_, {}), IsEmpty()) << message;
  }
}

// --- Host usage (schema v14) ---

TEST_P(StoreConformanceTest, JobHostUsageRoundTripsAndIsAbsentUntilMeasured) {
  Job job = MinimalJob(6);
  MustCommit({.jobs = {job}});
  EXPECT_FALSE(MustGet(*store_, 6).host_usage.has_value());
  job.state = JobState::kCompleted;
  job.host_usage = HostUsage{.cpu_ms = 3'723'456, .peak_memory_kib = 1'258'291};
  MustCommit({.jobs = {job}});
  EXPECT_EQ(MustGet(*store_, 6).host_usage, job.host_usage);
  job.host_usage = HostUsage{};  // all zero is a measure, not "none"
  MustCommit({.jobs = {job}});
  EXPECT_EQ(MustGet(*store_, 6).host_usage, HostUsage{});

  Job bad = MinimalJob(7);
  bad.host_usage = HostUsage{.cpu_ms = -1, .peak_memory_kib = 0};
  Status status = store_->Commit({.jobs = {bad}});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.error().message, HasSubstr("job 7 host usage"));
}

// --- GPU minutes (schema v2) ---

TEST_P(StoreConformanceTest, GpuMinutesRoundTripInMinuteNodeUuidOrder) {
  GpuMinute idle = SampleGpuMinute("node-b", "GPU-1", 0);
  idle.job.reset();  // nobody held it
  idle.user.clear();
  idle.team.clear();
  idle.health = GpuHealth::kOk;
  // Written out of order; within a minute node sorts before uuid ("a"/"GPU-9" before
  // "b"/"GPU-1"), and minute before both.
  const std::vector<GpuMinute> rows = {SampleGpuMinute("node-a", "GPU-9", 1),
                                       idle,
                                       SampleGpuMinute("node-a", "GPU-9", 0),
                                       SampleGpuMinute("node-b", "GPU-2", 0),
                                       SampleGpuMinute("node-a", "GPU-3", 0),
                                       SampleGpuMinute("node-b", "GPU-1", -1)};
  MustCommit({.gpu_minutes = rows});
  const std::vector<GpuMinute> expected = {rows[5], rows[4], rows[2], idle, rows[3], rows[0]};
  EXPECT_THAT(Keys(MustAllMinutes(*store_)),
              ElementsAre("node-b/GPU-1@-1",
                          "node-a/GPU-3@0",
                          "node-a/GPU-9@0",
                          "node-b/GPU-1@0",
                          "node-b/GPU-2@0",
                          "node-a/GPU-9@1"));
  EXPECT_EQ(DebugStrings(MustAllMinutes(*store_)), DebugStrings(expected));
  EXPECT_EQ(MustAllMinutes(*store_), expected);

  Reopen();
  EXPECT_EQ(DebugStrings(MustAllMinutes(*store_)), DebugStrings(expected));
}

TEST_P(StoreConformanceTest, GpuMinuteReplacedByUuidAndMinute) {
  MustCommit(
      {.gpu_minutes = {SampleGpuMinute("n1", "GPU-1", 0), SampleGpuMinute("n1", "GPU-1", 1)}});
  // Same GPU and minute, every other field new, the node name included (a renamed node):
  // it replaces the row instead of adding a second one for that minute.
  GpuMinute again = SampleGpuMinute("n2", "GPU-1", 0);
  again.job = JobId(99);
  again.user = "ana";
  again.team = "nlp";
  again.samples = 30;
  again.allocated_ms = 30'000;
  again.util_mean_pct = 1.5;
  again.util_max_pct = 3;
  again.memory_used_max_mib = 1;
  again.power_mean_w = 70.25;
  again.energy_mj = 2;
  again.health = GpuHealth::kFailed;
  MustCommit({.gpu_minutes = {again}});
  auto rows = MustAllMinutes(*store_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(DebugString(rows[0]), DebugString(again));
  EXPECT_EQ(DebugString(rows[1]), DebugString(SampleGpuMinute("n1", "GPU-1", 1)));

  // Within one batch the last row for a (uuid, minute) wins.
  GpuMinute last = again;
  last.samples = 59;
  MustCommit({.gpu_minutes = {again, SampleGpuMinute("n3", "GPU-1", 0), last}});
  rows = MustAllMinutes(*store_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(DebugString(rows[0]), DebugString(last));
}

// from is included, to is not; bounds need not be minute-aligned.
TEST_P(StoreConformanceTest, ListGpuMinutesReadsHalfOpenRange) {
  StoreBatch batch;
  for (int minute = 0; minute < 5; ++minute) {
    batch.gpu_minutes.push_back(SampleGpuMinute("n", "GPU-0", minute));
    batch.gpu_minutes.push_back(SampleGpuMinute("n", "GPU-1", minute));
  }
  MustCommit(batch);
  const Time t0 = SampleGpuMinute("n", "u", 0).minute;
  const auto at = [t0](int minutes) {
    return t0 + std::chrono::minutes(minutes);
  };
  EXPECT_THAT(Keys(MustMinutes(*store_, at(1), at(3))),
              ElementsAre("n/GPU-0@1", "n/GPU-1@1", "n/GPU-0@2", "n/GPU-1@2"));
  EXPECT_THAT(Keys(MustMinutes(*store_, at(1) + Millis(1), at(3) + Millis(1))),
              ElementsAre("n/GPU-0@2", "n/GPU-1@2", "n/GPU-0@3", "n/GPU-1@3"));
  EXPECT_THAT(Keys(MustMinutes(*store_, at(4), at(4))), IsEmpty());  // from == to: empty
  EXPECT_THAT(Keys(MustMinutes(*store_, at(5), at(100))), IsEmpty());
  EXPECT_THAT(Keys(MustMinutes(*store_, at(-100), at(1))), ElementsAre("n/GPU-0@0", "n/GPU-1@0"));
}

// One GPU's minutes (the series' history past the rings): that GPU's only, oldest first, the
// same half-open range, at most the limit.
TEST_P(StoreConformanceTest, ListGpuMinutesOfReadsOneGpuOldestFirst) {
  StoreBatch batch;
  for (int minute = 4; minute >= 0; --minute) {
    batch.gpu_minutes.push_back(SampleGpuMinute("n", "GPU-0", minute));
    batch.gpu_minutes.push_back(SampleGpuMinute("m", "GPU-1", minute));
  }
  MustCommit(batch);
  const Time t0 = SampleGpuMinute("n", "u", 0).minute;
  const auto of = [&](const std::string& uuid, int from, int to, int limit) {
    auto minutes = store_->ListGpuMinutesOf(
        GpuUuid(uuid), t0 + std::chrono::minutes(from), t0 + std::chrono::minutes(to), limit);
    EXPECT_TRUE(minutes.ok()) << minutes.error().ToString();
    return Keys(minutes.value_or(std::vector<GpuMinute>{}));
  };
  EXPECT_THAT(of("GPU-1", 1, 4, 100), ElementsAre("m/GPU-1@1", "m/GPU-1@2", "m/GPU-1@3"));
  EXPECT_THAT(of("GPU-0", 0, 100, 2), ElementsAre("n/GPU-0@0", "n/GPU-0@1"));
  EXPECT_THAT(of("GPU-9", 0, 100, 100), IsEmpty());
  EXPECT_THAT(of("GPU-0", 3, 3, 100), IsEmpty());
  auto backwards = store_->ListGpuMinutesOf(GpuUuid("GPU-0"), t0, t0 - Millis(1), 10);
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.error().code, ErrorCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, ListGpuMinutesStopsAtLimitInOrder) {
  MustCommit({.gpu_minutes = {SampleGpuMinute("b", "GPU-0", 1),
                              SampleGpuMinute("b", "GPU-0", 0),
                              SampleGpuMinute("a", "GPU-7", 1),
                              SampleGpuMinute("a", "GPU-7", 0)}});
  const Time t0 = SampleGpuMinute("n", "u", 0).minute;
  const Time end = t0 + std::chrono::hours(1);
  EXPECT_THAT(Keys(MustMinutes(*store_, t0, end, 1)), ElementsAre("a/GPU-7@0"));
  EXPECT_THAT(Keys(MustMinutes(*store_, t0, end, 3)),
              ElementsAre("a/GPU-7@0", "b/GPU-0@0", "a/GPU-7@1"));
  EXPECT_EQ(MustMinutes(*store_, t0, end, 4).size(), 4u);
  EXPECT_EQ(MustMinutes(*store_, t0, end, 1000).size(), 4u);
}

TEST_P(StoreConformanceTest, ListGpuMinutesRefusesToBeforeFrom) {
  const Time t0 = SampleGpuMinute("n", "u", 0).minute;
  auto minutes = store_->ListGpuMinutes(t0, t0 - Millis(1), 10);
  ASSERT_FALSE(minutes.ok());
  EXPECT_EQ(minutes.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(minutes.error().message, HasSubstr("to ("));
  EXPECT_THAT(minutes.error().message, HasSubstr("is before from ("));
}

// Each bad row refuses the whole batch, the good rows and the jobs, events and nodes before it
// included, with a message that names the row and what to fix.
TEST_P(StoreConformanceTest, InvalidGpuMinuteRefusesTheWholeBatch) {
  MustCommit({.jobs = {MinimalJob(1)}});
  const std::int64_t seq_before = MustMaxSeq(*store_);
  struct Case {
    std::function<void(GpuMinute&)> spoil;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](GpuMinute& m) { m.uuid = GpuUuid(""); }, "uuid is empty"},
      {[](GpuMinute& m) { m.node = NodeId(""); }, "node is empty"},
      {[](GpuMinute& m) { m.samples = -1; }, "samples is -1"},
      {[](GpuMinute& m) { m.minute += Millis(1'500); },
       "is not the start of a minute (a multiple of 60 s); round it down to 1700000040000 ms"},
      {[](GpuMinute& m) { m.minute = FromUnixMillis(-1); }, "round it down to -60000 ms"},
      {[](GpuMinute& m) { m.minute = FromUnixMillis(std::numeric_limits<std::int64_t>::min()); },
       "round it to a whole minute"},
      {[](GpuMinute& m) { m.util_mean_pct = std::nan(""); }, "util_mean_pct is nan"},
      {[](GpuMinute& m) { m.power_mean_w = -kInfinity; }, "power_mean_w is -inf"},
  };
  for (const Case& c : cases) {
    GpuMinute bad = SampleGpuMinute("n1", "GPU-bad", 0);
    c.spoil(bad);
    Job changed = MinimalJob(1);
    changed.state = JobState::kCancelled;
    StoreBatch batch{.jobs = {changed, MinimalJob(2)},
                     .events = {SampleEvent(JobId(2), "submit")},
                     .nodes = {SampleNode("n1", 1)},
                     .gpu_minutes = {SampleGpuMinute("n1", "GPU-good", 0), bad}};
    Status status = store_->Commit(batch);
    ASSERT_FALSE(status.ok()) << c.message;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(status.error().message, HasSubstr("gpu_minutes[1]"));
    EXPECT_THAT(status.error().message, HasSubstr(c.message));
    EXPECT_THAT(MustAllMinutes(*store_), IsEmpty()) << c.message;
    EXPECT_EQ(MustGet(*store_, 1).state, JobState::kPending) << c.message;
    EXPECT_EQ(MustMaxJobId(*store_), 1) << c.message;
    EXPECT_EQ(MustMaxSeq(*store_), seq_before) << c.message;
    EXPECT_THAT(MustNodes(*store_), IsEmpty()) << c.message;
  }
}

TEST_P(StoreConformanceTest, GpuMinuteEdgeValuesRoundTrip) {
  GpuMinute m = SampleGpuMinute("n", "GPU-0", 0);
  m.minute = FromUnixMillis(-120'000);  // before 1970 still round-trips
  m.job = JobId(std::numeric_limits<std::int64_t>::max());
  m.samples = 0;  // a minute with no sample is still a row
  m.allocated_ms = 0;
  m.util_mean_pct = 0;
  m.util_max_pct = std::numeric_limits<int>::max();
  m.memory_used_max_mib = std::numeric_limits<std::int64_t>::max();
  m.power_mean_w = std::numeric_limits<double>::max();
  m.energy_mj = std::numeric_limits<std::int64_t>::min();
  m.health = GpuHealth::kFailed;
  MustCommit({.gpu_minutes = {m}});
  auto rows = MustAllMinutes(*store_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(DebugString(rows[0]), DebugString(m));
}

// A day of minutes for 8 GPUs in one batch, read back a page at a time as a report would.
TEST_P(StoreConformanceTest, DayOfGpuMinutesPagesByMinute) {
  constexpr int kGpus = 8;
  constexpr int kMinutes = 24 * 60;
  StoreBatch batch;
  for (int minute = 0; minute < kMinutes; ++minute) {
    for (int gpu = 0; gpu < kGpus; ++gpu) {
      batch.gpu_minutes.push_back(SampleGpuMinute("n", "GPU-" + std::to_string(gpu), minute));
    }
  }
  MustCommit(batch);
  const Time t0 = SampleGpuMinute("n", "u", 0).minute;
  std::size_t total = 0;
  Time from = t0;
  const Time to = t0 + std::chrono::hours(24);
  for (int page = 0; page < kMinutes && from < to; ++page) {
    auto rows = MustMinutes(*store_, from, to, 1000);  // 1000 = 125 whole minutes of 8 GPUs
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(rows.front().minute, from);
    total += rows.size();
    from = rows.back().minute + std::chrono::minutes(1);
  }
  EXPECT_EQ(total, std::size_t{kGpus} * kMinutes);
}

}  // namespace
// --- Usage records (schema v4) ---

// A run of `gpus` GPUs of job `job` from `start_s` to `end_s` seconds after a fixed instant.
UsageRecord UsageRun(std::int64_t job,
                     const std::string& team,
                     const std::string& user,
                     int gpus,
                     std::int64_t start_s,
                     std::int64_t end_s) {
  const Time base = FromUnixMillis(1'700'000'000'000);
  return UsageRecord{.job = JobId(job),
                     .start = base + std::chrono::seconds(start_s),
                     .end = base + std::chrono::seconds(end_s),
                     .team = team,
                     .user = user,
                     .priority = "normal",
                     .gpus = gpus,
                     .gpu_models = {"A100-40GB", "H100-80GB"},
                     .gpu_seconds = static_cast<double>(gpus * (end_s - start_s)),
                     .energy_mj = 123'456'789'012};
}

Time At(std::int64_t seconds) {
  return FromUnixMillis(1'700'000'000'000) + std::chrono::seconds(seconds);
}

std::vector<UsageRecord> MustListUsage(StoreReader& store,
                                       Time ended_after,
                                       std::int64_t after_seq,
                                       int limit) {
  auto records = store.ListUsage(ended_after, after_seq, limit);
  EXPECT_TRUE(records.ok()) << records.error().ToString();
  return records.ok() ? *records : std::vector<UsageRecord>{};
}

std::vector<UsageSum> MustSum(StoreReader& store, Time from, Time to) {
  auto sums = store.SumUsage(from, to);
  EXPECT_TRUE(sums.ok()) << sums.error().ToString();
  return sums.ok() ? *sums : std::vector<UsageSum>{};
}

TEST_P(StoreConformanceTest, UsageRecordsRoundTripWithIncreasingSeqs) {
  // A record does not need its job stored: it is history that outlives the job.
  UsageRecord first = UsageRun(12, "vision", "zoë", 4, 0, 3600);
  UsageRecord second = UsageRun(13, "", "bob", 0, 10, 10);  // no team, CPU-only, zero length
  second.gpu_models.clear();
  second.priority = "high";
  MustCommit({.usage = {first, second}});
  Reopen();
  std::vector<UsageRecord> records = MustListUsage(*store_, At(-1), 0, 10);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_GT(records[0].seq, 0);
  EXPECT_GT(records[1].seq, records[0].seq);
  first.seq = records[0].seq;
  second.seq = records[1].seq;
  EXPECT_EQ(records[0], first);
  EXPECT_EQ(records[1], second);
}

TEST_P(StoreConformanceTest, ListUsageFiltersByEndAndPagesBySeq) {
  MustCommit({.usage = {UsageRun(1, "a", "u", 1, 0, 100),
                        UsageRun(2, "a", "u", 1, 0, 200),
                        UsageRun(3, "a", "u", 1, 0, 300),
                        UsageRun(4, "a", "u", 1, 0, 400)}});
  std::vector<UsageRecord> page = MustListUsage(*store_, At(100), 0, 2);  // ended after 100 s
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].job, JobId(2));
  EXPECT_EQ(page[1].job, JobId(3));
  std::vector<UsageRecord> rest = MustListUsage(*store_, At(100), page[1].seq, 2);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].job, JobId(4));
  EXPECT_EQ(store_->ListUsage(At(0), 0, 0).error().code, ErrorCode::kInvalidArgument);
}

// A budget period counts only the part of each run inside it: a run crossing a bound counts
// its share of the time inside, runs wholly outside count nothing, and the range is half-open.
TEST_P(StoreConformanceTest, SumUsageClipsRunsToTheRange) {
  MustCommit({.usage = {
                  UsageRun(1, "cv", "ana", 2, 0, 100),       // wholly inside [0, 1000): 200
                  UsageRun(2, "cv", "ana", 4, 900, 1100),    // half inside: 400 of 800
                  UsageRun(3, "cv", "bob", 1, -500, 500),    // half inside: 500 of 1000
                  UsageRun(4, "cv", "bob", 8, 1000, 1200),   // starts at the end: outside
                  UsageRun(5, "cv", "bob", 8, -100, 0),      // ends at the start: outside
                  UsageRun(6, "nlp", "cy", 1, 500, 500),     // zero length inside: counts whole (0)
                  UsageRun(7, "nlp", "cy", 3, -1000, 2000),  // covers it: 3000 of 9000
              }});
  std::vector<UsageSum> sums = MustSum(*store_, At(0), At(1000));
  // Energy is clipped like time: each run used E = 123,456,789,012 mJ.
  constexpr double kE = 123'456'789'012.0;
  const std::vector<UsageSum> expected = {
      UsageSum{
          .team = "cv", .user = "ana", .gpu_seconds = 600, .energy_mj = std::llround(kE * 1.5)},
      UsageSum{
          .team = "cv", .user = "bob", .gpu_seconds = 500, .energy_mj = std::llround(kE * 0.5)},
      UsageSum{
          .team = "nlp", .user = "cy", .gpu_seconds = 3000, .energy_mj = std::llround(kE + kE / 3)},
  };
  ASSERT_EQ(sums.size(), expected.size());
  for (std::size_t i = 0; i < sums.size(); ++i) {
    EXPECT_EQ(sums[i].team, expected[i].team);
    EXPECT_EQ(sums[i].user, expected[i].user);
    EXPECT_NEAR(sums[i].gpu_seconds, expected[i].gpu_seconds, 1e-9) << sums[i].user;
    EXPECT_NEAR(
        static_cast<double>(sums[i].energy_mj), static_cast<double>(expected[i].energy_mj), 1.0)
        << sums[i].user;
  }
  EXPECT_THAT(MustSum(*store_, At(5000), At(6000)), IsEmpty());
  EXPECT_EQ(store_->SumUsage(At(10), At(5)).error().code, ErrorCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, InvalidUsageRecordRefusesTheWholeBatch) {
  UsageRecord backwards = UsageRun(3, "a", "u", 1, 100, 50);
  backwards.gpu_seconds = 0;
  UsageRecord nan = UsageRun(4, "a", "u", 1, 0, 10);
  nan.gpu_seconds = std::nan("");
  UsageRecord negative = UsageRun(5, "a", "u", -1, 0, 10);
  negative.gpu_seconds = 0;
  const std::vector<std::pair<UsageRecord, std::string>> cases = {
      {backwards, "usage[1] (job 3): end"},
      {nan, "usage[1] (job 4): gpu_seconds is nan"},
      {negative, "usage[1] (job 5): gpus is -1"},
  };
  for (const auto& [record, message] : cases) {
    Status status = store_->Commit(
        {.jobs = {MinimalJob(1)}, .usage = {UsageRun(1, "a", "u", 1, 0, 10), record}});
    ASSERT_FALSE(status.ok()) << message;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(status.error().message, HasSubstr(message));
    EXPECT_THAT(MustList(*store_, {}), IsEmpty()) << message;
    EXPECT_THAT(MustListUsage(*store_, At(-100), 0, 10), IsEmpty()) << message;
  }
}

TEST_P(StoreConformanceTest, JobApprovalAndCheckpointAreUpdatedInPlace) {
  Job job = MinimalJob(9);
  MustCommit({.jobs = {job}});
  job.budget_approved = true;
  job.last_checkpoint = FromUnixMillis(1'700'000'123'456);
  MustCommit({.jobs = {job}});
  EXPECT_EQ(DebugString(MustGet(*store_, 9)), DebugString(job));
  job.last_checkpoint.reset();  // cleared at a new start
  MustCommit({.jobs = {job}});
  EXPECT_EQ(DebugString(MustGet(*store_, 9)), DebugString(job));
}

// `--no-requeue` (schema v7) is stored, and changing it back is an update like any other.
TEST_P(StoreConformanceTest, JobRequeueRoundTrips) {
  Job job = MinimalJob(11);
  job.spec.requeue = false;
  MustCommit({.jobs = {job}});
  EXPECT_FALSE(MustGet(*store_, 11).spec.requeue);
  job.spec.requeue = true;
  MustCommit({.jobs = {job}});
  EXPECT_TRUE(MustGet(*store_, 11).spec.requeue);
}

// --- Tokens (schema v5) ---

std::vector<std::string> TokenIds(const std::vector<ApiToken>& tokens) {
  std::vector<std::string> ids;
  ids.reserve(tokens.size());
  for (const ApiToken& t : tokens) {
    ids.push_back(t.id);
  }
  return ids;
}

std::vector<ApiToken> MustTokens(StoreReader& store) {
  auto tokens = store.ListTokens();
  EXPECT_TRUE(tokens.ok()) << tokens.error().ToString();
  return tokens.ok() ? *tokens : std::vector<ApiToken>{};
}

std::optional<ApiToken> MustGetToken(StoreReader& store, const std::string& id) {
  auto token = store.GetToken(id);
  EXPECT_TRUE(token.ok()) << token.error().ToString();
  return token.ok() ? *token : std::nullopt;
}

TEST_P(StoreConformanceTest, TokenRoundTripsAndSurvivesReopen) {
  ApiToken user = SampleToken("u1");
  ApiToken node = SampleToken("n1");
  node.kind = TokenKind::kNode;
  node.subject = "";  // a join token: any one node may use it
  node.uid = 0;
  node.gid = 0;
  node.role = Role::kUser;
  node.expires.reset();
  node.revoked = FromUnixMillis(1'700'000'400'001);
  MustCommit({.tokens = {user, node}});
  Reopen();
  auto got = MustGetToken(*store_, "u1");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(DebugString(*got), DebugString(user));
  got = MustGetToken(*store_, "n1");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(DebugString(*got), DebugString(node));
  EXPECT_FALSE(MustGetToken(*store_, "absent").has_value());
  EXPECT_FALSE(MustGetToken(*store_, "U1").has_value()) << "ids are compared exactly";
}

TEST_P(StoreConformanceTest, TokenReplacedById) {
  ApiToken token = SampleToken("t1");
  MustCommit({.tokens = {token}});
  token.revoked = FromUnixMillis(1'700'000'500'000);
  token.role = Role::kAdmin;
  token.uid = std::numeric_limits<std::uint32_t>::max();
  token.description.clear();
  MustCommit({.tokens = {token}});
  auto tokens = MustTokens(*store_);
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(DebugString(tokens[0]), DebugString(token));
}

TEST_P(StoreConformanceTest, TokensListedById) {
  MustCommit({.tokens = {SampleToken("b2"), SampleToken("a9"), SampleToken("b10")}});
  MustCommit({.tokens = {SampleToken("0z")}});
  EXPECT_THAT(TokenIds(MustTokens(*store_)), ElementsAre("0z", "a9", "b10", "b2"));
}

TEST_P(StoreConformanceTest, InvalidTokenRefusesTheWholeBatch) {
  auto with = [](std::string id, std::string hash) {
    ApiToken t = SampleToken("x");
    t.id = std::move(id);
    if (!hash.empty()) {
      t.secret_hash = std::move(hash);
    }
    return t;
  };
  const std::string good_hash(64, 'a');
  const std::vector<std::pair<ApiToken, std::string>> cases = {
      {with("", ""), "tokens[1]: id must be 1 to 32 characters of a-z and 0-9"},
      {with(std::string(33, 'a'), ""), "tokens[1]: id must be"},
      {with("Upper", ""), "tokens[1]: id must be"},
      {with("a-b", ""), "tokens[1]: id must be"},
      {with("ok", std::string(63, 'a')), "tokens[1]: secret_hash must be 64 lowercase hex"},
      {with("ok", std::string(64, 'A')), "tokens[1]: secret_hash must be"},
      {with("ok", std::string(63, 'a') + "g"), "tokens[1]: secret_hash must be"},
  };
  for (const auto& [token, message] : cases) {
    Status status =
        store_->Commit({.jobs = {MinimalJob(1)}, .tokens = {with("fine", good_hash), token}});
    ASSERT_FALSE(status.ok()) << message;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(status.error().message, HasSubstr(message));
    EXPECT_THAT(MustList(*store_, {}), IsEmpty()) << message;
    EXPECT_THAT(MustTokens(*store_), IsEmpty()) << message;
  }
  // The longest id and the smallest hash digits are accepted.
  MustCommit({.tokens = {with(std::string(32, 'z'), std::string(64, '0'))}});
  EXPECT_EQ(MustTokens(*store_).size(), 1u);
}

// ---- The controller lease (schema v6) ----

TEST_P(StoreConformanceTest, LeaseGoesToOneHolderUntilItExpires) {
  const Time t0 = FromUnixMillis(1'700'000'000'000);
  const std::chrono::milliseconds ttl(8000);
  auto a = store_->AcquireLease("a:1", t0, ttl);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  ASSERT_TRUE(a->acquired);
  EXPECT_EQ(a->lease.holder, "a:1");
  EXPECT_EQ(a->lease.expires, t0 + ttl);
  // Another holder waits while the lease runs, and learns who holds it until when.
  auto b = store_->AcquireLease("b:2", t0 + std::chrono::seconds(7), ttl);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->acquired);
  EXPECT_EQ(b->lease.holder, "a:1");
  EXPECT_EQ(b->lease.epoch, a->lease.epoch);
  // A renewal moves the end; then b must wait longer.
  ASSERT_TRUE(store_->RenewLease(a->lease.epoch, t0 + std::chrono::seconds(7), ttl).ok());
  b = store_->AcquireLease("b:2", t0 + std::chrono::seconds(9), ttl);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->acquired) << "renewed until t0+15s";
  // Past the end, b takes it with a larger epoch, and a's renewal fails.
  b = store_->AcquireLease("b:2", t0 + std::chrono::seconds(15), ttl);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->acquired);
  EXPECT_GT(b->lease.epoch, a->lease.epoch);
  Status renew = store_->RenewLease(a->lease.epoch, t0 + std::chrono::seconds(16), ttl);
  ASSERT_FALSE(renew.ok());
  EXPECT_EQ(renew.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(renew.error().message.find("lost the lease"), std::string::npos);
  // The holder itself may take it again (a restart), with a new epoch.
  auto again = store_->AcquireLease("b:2", t0 + std::chrono::seconds(16), ttl);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->acquired);
  EXPECT_GT(again->lease.epoch, b->lease.epoch);
}

TEST_P(StoreConformanceTest, FencedStoreRefusesCommitsOnceTheLeaseIsLost) {
  const Time t0 = FromUnixMillis(1'700'000'000'000);
  const std::chrono::milliseconds ttl(8000);
  auto a = store_->AcquireLease("a:1", t0, ttl);
  ASSERT_TRUE(a.ok() && a->acquired);
  store_->FenceWith(a->lease.epoch);
  MustCommit({.tokens = {SampleToken("f1")}});          // still the leader
  auto b = store_->AcquireLease("b:2", t0 + ttl, ttl);  // a's lease ended
  ASSERT_TRUE(b.ok() && b->acquired);
  Status late = store_->Commit({.tokens = {SampleToken("f2")}});
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(late.error().message.find("lost the lease"), std::string::npos);
  EXPECT_FALSE(MustGetToken(*store_, "f2").has_value()) << "a deposed leader wrote nothing";
  EXPECT_TRUE(MustGetToken(*store_, "f1").has_value());
  // The lease outlives a reopen (it is in the store, not the process).
  Reopen();
  auto c = store_->AcquireLease("c:3", t0 + ttl + std::chrono::seconds(1), ttl);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->acquired);
  EXPECT_EQ(c->lease.holder, "b:2");
}

// --- Interactive and idle reaping on jobs, notification subscriptions (schema v8) ---

TEST_P(StoreConformanceTest, JobInteractiveAndIdleReapRoundTrip) {
  Job job = MinimalJob(12);
  EXPECT_FALSE(job.spec.interactive);
  EXPECT_TRUE(job.spec.idle_reap);
  MustCommit({.jobs = {job}});
  EXPECT_FALSE(MustGet(*store_, 12).spec.interactive);
  EXPECT_TRUE(MustGet(*store_, 12).spec.idle_reap);
  job.spec.interactive = true;
  job.spec.idle_reap = false;
  MustCommit({.jobs = {job}});
  Reopen();
  EXPECT_TRUE(MustGet(*store_, 12).spec.interactive);
  EXPECT_FALSE(MustGet(*store_, 12).spec.idle_reap);
}

// --- Multi-node jobs (schema v9) ---

TEST_P(StoreConformanceTest, GangMemberRoundTripsAndOthersReadBackAsOneNode) {
  Job member = MinimalJob(21);
  member.spec.gang = GangMember{.gang_job = JobId(20), .rank = 1, .size = 4};
  member.spec.request.nodes = 4;
  Job single = MinimalJob(22);
  MustCommit({.jobs = {member, single}});
  Reopen();
  const Job got = MustGet(*store_, 21);
  ASSERT_TRUE(got.spec.gang.has_value());
  EXPECT_EQ(got.spec.gang->gang_job, JobId(20));
  EXPECT_EQ(got.spec.gang->rank, 1);
  EXPECT_EQ(got.spec.gang->size, 4);
  EXPECT_EQ(got.spec.request.nodes, 4);
  EXPECT_FALSE(MustGet(*store_, 22).spec.gang.has_value());
  EXPECT_EQ(MustGet(*store_, 22).spec.request.nodes, 1);
}

// --- GPU sharing (schema v10) ---

TEST_P(StoreConformanceTest, FractionalJobRoundTripsAndWholeJobsReadBackWhole) {
  Job fractional = MinimalJob(31);
  fractional.spec.request.gpu_milli = 250;
  fractional.spec.request.gpu_memory_mib = 20'480;
  fractional.state = JobState::kRunning;
  fractional.allocation = Allocation{.node = NodeId("node-a"),
                                     .gpus = {GpuUuid("GPU-a-2")},
                                     .gpu_milli = 250,
                                     .gpu_memory_mib = 20'480};
  Job whole = MinimalJob(32);
  whole.state = JobState::kRunning;
  whole.allocation = Allocation{.node = NodeId("node-a"), .gpus = {GpuUuid("GPU-a-0")}};
  MustCommit({.jobs = {fractional, whole, MinimalJob(33)}});
  Reopen();
  const Job got = MustGet(*store_, 31);
  EXPECT_EQ(DebugString(got), DebugString(fractional));
  EXPECT_EQ(got.spec.request.gpu_milli, 250);
  EXPECT_EQ(got.spec.request.gpu_memory_mib, 20'480);
  ASSERT_TRUE(got.allocation.has_value());
  EXPECT_EQ(got.allocation->gpu_milli, 250);
  EXPECT_EQ(got.allocation->gpu_memory_mib, 20'480);
  const Job got_whole = MustGet(*store_, 32);
  EXPECT_FALSE(IsFractional(got_whole.spec.request));
  ASSERT_TRUE(got_whole.allocation.has_value());
  EXPECT_EQ(got_whole.allocation->gpu_milli, kWholeGpuMilli);
  EXPECT_EQ(got_whole.allocation->gpu_memory_mib, 0);
  EXPECT_FALSE(IsFractional(MustGet(*store_, 33).spec.request));
}

// --- Host CPUs and memory (schema v13) ---

TEST_P(StoreConformanceTest, HostCpusAndMemoryRoundTrip) {
  Job running = MinimalJob(41);
  running.spec.request.cpus = 16;
  running.spec.request.memory_mib = 65'536;
  running.state = JobState::kRunning;
  running.allocation = Allocation{.node = NodeId("node-a"), .gpus = {GpuUuid("GPU-a-0")}};
  running.allocation->cpus = 16;
  running.allocation->memory_mib = 65'536;
  Job pending = MinimalJob(42);
  pending.spec.request.cpus = 4;
  MustCommit({.jobs = {running, pending, MinimalJob(43)}});
  Reopen();
  const Job got = MustGet(*store_, 41);
  EXPECT_EQ(DebugString(got), DebugString(running));
  EXPECT_EQ(got.spec.request.cpus, 16);
  EXPECT_EQ(got.spec.request.memory_mib, 65'536);
  ASSERT_TRUE(got.allocation.has_value());
  EXPECT_EQ(got.allocation->cpus, 16);
  EXPECT_EQ(got.allocation->memory_mib, 65'536);
  EXPECT_EQ(MustGet(*store_, 42).spec.request.cpus, 4);
  EXPECT_EQ(MustGet(*store_, 42).spec.request.memory_mib, 0);
  EXPECT_FALSE(AsksHost(MustGet(*store_, 43).spec.request));  // not asked: none reserved
}

// --- MIG (schema v11) ---

TEST_P(StoreConformanceTest, MigJobAndWaitingLayoutRoundTrip) {
  Job mig = MinimalJob(35);
  mig.spec.request.mig_profile = "3g.40gb";
  mig.state = JobState::kRunning;
  mig.allocation = Allocation{.node = NodeId("node-m"),
                              .gpus = {GpuUuid("GPU-m-0")},
                              .gpu_milli = 428,
                              .gpu_memory_mib = 40'192,
                              .mig = GpuUuid("MIG-m-0-1")};
  Node node = SampleNode("node-m", 1);
  node.gpus[0].sharing = SharingMode::kMig;
  node.gpus[0].mig_enabled = true;
  node.gpus[0].mig_profiles = {"1g.10gb", "3g.40gb", "7g.80gb"};
  node.gpus[0].mig_instances = {MigInstance{.profile = "3g.40gb",
                                            .uuid = GpuUuid("MIG-m-0-1"),
                                            .gpu_instance_id = 2,
                                            .compute_instance_id = 0,
                                            .slices = 3,
                                            .memory_mib = 40'192}};
  node.gpus[0].mig_layout_next = std::vector<std::string>{"7g.80gb"};
  MustCommit({.jobs = {mig, MinimalJob(36)}, .nodes = {node}});
  Reopen();
  const Job got = MustGet(*store_, 35);
  EXPECT_EQ(DebugString(got), DebugString(mig));
  EXPECT_EQ(got.spec.request.mig_profile, "3g.40gb");
  ASSERT_TRUE(got.allocation.has_value());
  EXPECT_EQ(got.allocation->mig, GpuUuid("MIG-m-0-1"));
  EXPECT_FALSE(IsMig(MustGet(*store_, 36).spec.request));
  auto nodes = MustNodes(*store_);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0], node);
}

// --- holds (schema v12) ---

// A hold outlives a restart: who placed it reads back (an administrator's included), and a
// release (held_by cleared) is stored as well.
TEST_P(StoreConformanceTest, JobHoldRoundTripsAndIsReleased) {
  Job own = MinimalJob(37);
  own.held_by = own.owner.user;
  Job by_admin = MinimalJob(38);
  by_admin.held_by = "root";
  MustCommit({.jobs = {own, by_admin, MinimalJob(39)}});
  Reopen();
  EXPECT_EQ(DebugString(MustGet(*store_, 37)), DebugString(own));
  EXPECT_EQ(MustGet(*store_, 38).held_by, "root");
  EXPECT_EQ(MustGet(*store_, 39).held_by, "");
  own.held_by.clear();
  MustCommit({.jobs = {own}});
  Reopen();
  EXPECT_EQ(MustGet(*store_, 37).held_by, "");
  EXPECT_EQ(MustGet(*store_, 38).held_by, "root");
}

TEST_P(StoreConformanceTest, FractionOutsideItsRangeRefusesTheBatch) {
  Job bad = MinimalJob(34);
  bad.spec.request.gpu_milli = 1001;  // more than one GPU: the schema's CHECK refuses
  EXPECT_FALSE(store_->Commit({.jobs = {bad}}).ok());
  EXPECT_EQ(MustMaxJobId(*store_), 0);
}

TEST_P(StoreConformanceTest, GpuSharingModeRoundTrips) {
  Node node = SampleNode("node-s", 3);
  node.gpus[1].sharing = SharingMode::kShared;
  node.gpus[2].sharing = SharingMode::kMps;
  node.gpus[2].sharing_next = SharingMode::kExclusive;  // waits for its jobs to end
  MustCommit({.nodes = {node}});
  Reopen();
  auto nodes = MustNodes(*store_);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(DebugString(nodes[0]), DebugString(node));
  EXPECT_EQ(nodes[0], node);
}

Subscription SampleSubscription(std::string id) {
  return Subscription{.id = std::move(id),
                      .owner = "ana",
                      .scope = SubscriptionScope::kTeam,
                      .team = "vision",
                      .channel = NotifyChannel::kWebhook,
                      .target = "https://hooks.example.com/gpufleet?x=1",
                      .kinds = {NotifyKind::kJobFailed, NotifyKind::kQuota100},
                      .created = FromUnixMillis(1'700'000'123'456)};
}

std::vector<Subscription> MustSubscriptions(StoreReader& store) {
  auto subs = store.ListSubscriptions();
  EXPECT_TRUE(subs.ok()) << subs.error().ToString();
  return subs.ok() ? *subs : std::vector<Subscription>{};
}

TEST_P(StoreConformanceTest, SubscriptionsRoundTripReplaceAndRemove) {
  Subscription team = SampleSubscription("sub-b");
  Subscription mail{.id = "sub-a",
                    .owner = "bo",
                    .scope = SubscriptionScope::kUser,
                    .channel = NotifyChannel::kEmail,
                    .target = "bo@example.com",
                    .created = FromUnixMillis(1'700'000'000'001)};  // kinds empty: every kind
  Subscription cluster = SampleSubscription("sub-c");
  cluster.scope = SubscriptionScope::kCluster;
  cluster.team.clear();
  cluster.kinds = {NotifyKind::kGpuFailed};
  Subscription job = SampleSubscription("sub-d");  // #SBATCH --mail-type: one job
  job.scope = SubscriptionScope::kJob;
  job.team.clear();
  job.job = JobId(4711);
  MustCommit({.subscriptions = {team, mail, cluster, job}});
  Reopen();
  EXPECT_THAT(MustSubscriptions(*store_), ElementsAre(mail, team, cluster, job));  // by id

  team.kinds = {NotifyKind::kJobEnd};  // replaced whole, by id
  team.target = "http://other.example/hook";
  MustCommit({.subscriptions = {team}, .removed_subscriptions = {"sub-a", "sub-unknown", "sub-d"}});
  EXPECT_THAT(MustSubscriptions(*store_), ElementsAre(team, cluster));
}

TEST_P(StoreConformanceTest, InvalidSubscriptionRefusesTheWholeBatch) {
  Subscription no_target = SampleSubscription("sub-x");
  no_target.target.clear();
  Subscription no_team = SampleSubscription("sub-y");
  no_team.team.clear();
  Subscription no_job = SampleSubscription("sub-z");
  no_job.scope = SubscriptionScope::kJob;
  const std::vector<std::pair<Subscription, std::string>> cases = {
      {SampleSubscription(""), "subscriptions[1] (''): id must not be empty"},
      {no_target, "subscriptions[1] ('sub-x'): target"},
      {no_team, "subscriptions[1] ('sub-y'): a team subscription needs its team"},
      {no_job, "subscriptions[1] ('sub-z'): a job subscription needs its job"},
  };
  for (const auto& [sub, message] : cases) {
    Status status = store_->Commit(
        {.jobs = {MinimalJob(1)}, .subscriptions = {SampleSubscription("sub-ok"), sub}});
    ASSERT_FALSE(status.ok()) << message;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(status.error().message, HasSubstr(message));
    EXPECT_THAT(MustList(*store_, {}), IsEmpty()) << message;
    EXPECT_THAT(MustSubscriptions(*store_), IsEmpty()) << message;
  }
}

// A read connection (Store::OpenReader) sees each batch once its Commit returned, the writer's
// data as it is now (not as it was when the reader opened), and survives its Store.
TEST_P(StoreConformanceTest, ReaderSeesWhatWasCommitted) {
  MustCommit({.jobs = {MinimalJob(1)}, .events = {SampleEvent(JobId(1), "submit")}});
  auto opened = store_->OpenReader();
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  std::unique_ptr<StoreReader> reader = std::move(opened).value();
  EXPECT_EQ(DebugString(MustGet(*reader, 1)), DebugString(MinimalJob(1)));
  Job ended = MinimalJob(2);
  ended.state = JobState::kCompleted;
  ended.end_time = FromUnixMillis(1'700'000'100'000);
  MustCommit({.jobs = {ended},
              .events = {SampleEvent(JobId(2), "state")},
              .nodes = {SampleNode("n1", 2)},
              .tokens = {SampleToken("t1")}});
  EXPECT_EQ(DebugString(MustGet(*reader, 2)), DebugString(ended));
  EXPECT_THAT(Ids(MustList(*reader, {})), ElementsAre(2, 1));
  EXPECT_THAT(Kinds(MustEvents(*reader, std::nullopt, 0)), ElementsAre("submit", "state"));
  EXPECT_THAT(Kinds(MustEvents(*reader, JobId(2), 0)), ElementsAre("state"));
  EXPECT_THAT(Names(MustNodes(*reader)), ElementsAre("n1"));
  EXPECT_THAT(TokenIds(MustTokens(*reader)), ElementsAre("t1"));
  EXPECT_EQ(MustMaxJobId(*reader), 2);
  store_.reset();
  EXPECT_EQ(MustMaxJobId(*reader), 2) << "a reader outlives its Store";
}

// Reads on another thread while the owner commits: each read sees whole batches only (a job
// and its event are committed together), and never waits for the writer to finish.
TEST_P(StoreConformanceTest, ReaderReadsWhileTheOwnerCommits) {
  MustCommit({.jobs = {MinimalJob(1)}});
  auto opened = store_->OpenReader();
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  std::unique_ptr<StoreReader> reader = std::move(opened).value();
  constexpr int kBatches = 50;
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<int> failed{0};
  std::thread reads([&] {
    while (!done.load()) {
      auto jobs = reader->ListJobs({});
      auto events = reader->ListEvents(std::nullopt, 0, 10'000);
      if (!jobs.ok() || !events.ok()) {
        failed += 1;
        continue;
      }
      // Jobs are read first: every event read after names a job that is there by then, and
      // a batch's two jobs are there together.
      if (jobs->size() % 2 == 0) {
        torn += 1;
      }
    }
  });
  for (int i = 0; i < kBatches; ++i) {
    const std::int64_t id = 2 + std::int64_t{2} * i;
    Status s = store_->Commit({.jobs = {MinimalJob(id), MinimalJob(id + 1)},
                               .events = {SampleEvent(JobId(id), "submit")}});
    EXPECT_TRUE(s.ok()) << s.error().ToString();
  }
  done = true;
  reads.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(torn.load(), 0) << "a read saw half a batch";
  EXPECT_EQ(MustList(*reader, {.limit = 1000}).size(), 1u + 2 * kBatches);
}

}  // namespace gf::testing
