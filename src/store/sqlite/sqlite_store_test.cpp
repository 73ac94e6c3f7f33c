// The SQLite backend: the conformance suite instantiated for it, and what only SQLite has
// (the file, its mode and permissions, migrations, damaged files and rows, lock contention).
#include "store/sqlite/sqlite_store.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "store/sqlite/migrations.h"
#include "store/sqlite/sqlite_rows.h"
#include "store/sqlite/sqlite_test_util.h"
#include "store/sqlite/sqlite_util.h"
#include "store/store_conformance_test.h"
#include "store/store_test_util.h"

namespace gf::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SqliteTestBackend final : public StoreTestBackend {
 public:
  Result<std::unique_ptr<Store>> Open() override {
    return OpenSqliteStore(dir_.path() / "state.db");
  }

 private:
  TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Sqlite,
                         StoreConformanceTest,
                         ::testing::Values(StoreBackendFactory{
                             "sqlite",
                             [] {
                               return std::make_unique<SqliteTestBackend>();
                             }}),
                         StoreBackendName);

// A database at schema `version` holding job 6 ('v<version>' of ana, team cv, pending) with only
// the columns that version required, as its BindJob wrote them. Returns the open handle.
SqliteHandle WriteOldJob(const std::filesystem::path& file, std::size_t version) {
  auto db = RawOpen(file);
  EXPECT_TRUE(ApplyMigrations(db.get(), SqliteMigrations().first(version)).ok());
  MustExec(db.get(),
           R"sql(
    INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, priority, team,
                      state, terminal, submit_ms, reason)
    VALUES (6, 1000, 100, 'ana', 'v)sql" +
               std::to_string(version) + R"sql(', '["true"]', '/tmp',
            '[]', 1, 'normal', 'cv', 'PENDING', 0, 1700000000000, 'queued');)sql");
  return db;
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<Store> MustOpen(const SqliteStoreOptions& options = {}) {
    auto store = OpenSqliteStore(file_, options);
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  TempDir dir_;
  std::filesystem::path file_ = dir_.path() / "state.db";
};

TEST_F(SqliteStoreTest, CreatesPrivateFoldersAndFile) {
  const auto nested = dir_.path() / "a" / "b" / "state.db";
  ASSERT_TRUE(OpenSqliteStore(nested).ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir_.path() / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_.path() / "a" / "b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(nested.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(SqliteStoreTest, UsesWalMode) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto db = RawOpen(file_);
  EXPECT_EQ(QueryText(db.get(), "PRAGMA journal_mode"), "wal");
}

TEST_F(SqliteStoreTest, MigrationsAppliedOnceAndIdempotentOnReopen) {
  for (int i = 0; i < 3; ++i) {
    auto store = MustOpen();
    ASSERT_NE(store, nullptr);
    if (i == 0) {
      ASSERT_TRUE(store->Commit({.jobs = {MinimalJob(1)}}).ok());
    }
  }
  auto db = RawOpen(file_);
  EXPECT_EQ(QueryText(db.get(), "SELECT count(*) FROM schema_version"),
            std::to_string(SqliteMigrations().size()));
  EXPECT_EQ(QueryText(db.get(), "SELECT MAX(version) FROM schema_version"),
            std::to_string(LatestSqliteSchemaVersion()));
  EXPECT_EQ(QueryText(db.get(), "SELECT count(*) FROM jobs"), "1");
}

TEST_F(SqliteStoreTest, RefusesNewerSchema) {
  ASSERT_NE(MustOpen(), nullptr);
  {
    auto db = RawOpen(file_);
    MustExec(db.get(),
             "INSERT INTO schema_version (version, description, applied_ms) "
             "VALUES (99, 'from the future', 0)");
  }
  auto store = OpenSqliteStore(file_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(
      store.error().message,
      HasSubstr("database schema version 99 is newer than this gpufleet (" +
                std::to_string(LatestSqliteSchemaVersion()) + "): a newer gpufleet wrote it"));
  EXPECT_THAT(store.error().message, HasSubstr("restore a backup taken before the upgrade"));
  EXPECT_THAT(store.error().message, HasSubstr(file_.string()));
}

TEST_F(SqliteStoreTest, RefusesGarbageFile) {
  {
    std::ofstream out(file_, std::ios::binary);
    for (int i = 0; i < 200; ++i) {
      out << "this is not a database, it is a shopping list\n";
    }
  }
  auto store = OpenSqliteStore(file_);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(store.error().code == ErrorCode::kIo || store.error().code == ErrorCode::kUnavailable)
      << store.error().ToString();
  EXPECT_THAT(store.error().message, HasSubstr(file_.string()));
  EXPECT_THAT(store.error().message, HasSubstr("not a database"));
}

TEST_F(SqliteStoreTest, RefusesAnotherProgramsDatabase) {
  {
    auto db = RawOpen(file_);
    MustExec(db.get(), "CREATE TABLE recipes (name TEXT)");
  }
  auto store = OpenSqliteStore(file_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(store.error().message, HasSubstr("not a gpufleet database"));
}

TEST_F(SqliteStoreTest, RefusesFolderAsFile) {
  std::filesystem::create_directories(file_);
  auto store = OpenSqliteStore(file_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, ErrorCode::kIo) << store.error().ToString();
  EXPECT_THAT(store.error().message, HasSubstr(file_.string()));
}

TEST_F(SqliteStoreTest, RefusesFolderThatCannotBeCreated) {
  { std::ofstream(dir_.path() / "plain-file") << "x"; }
  auto store = OpenSqliteStore(dir_.path() / "plain-file" / "sub" / "state.db");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, ErrorCode::kIo) << store.error().ToString();
  EXPECT_THAT(store.error().message, HasSubstr("plain-file"));
}

TEST_F(SqliteStoreTest, BadEnumInRowIsInternalErrorNamingTheRow) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit({.jobs = {MinimalJob(6), MinimalJob(7)}}).ok());
  {
    auto db = RawOpen(file_);
    MustExec(db.get(), "UPDATE jobs SET state = 'BOGUS' WHERE id = 7");
  }
  auto job = store->GetJob(JobId(7));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code, ErrorCode::kInternal);
  EXPECT_THAT(job.error().message, HasSubstr("job 7"));
  EXPECT_THAT(job.error().message, HasSubstr("BOGUS"));
  EXPECT_FALSE(store->ListJobs({}).ok());
  EXPECT_TRUE(store->GetJob(JobId(6)).ok());  // other rows still read
}

TEST_F(SqliteStoreTest, BadJsonInRowIsInternalErrorNamingTheRow) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit({.jobs = {MinimalJob(3)}, .nodes = {SampleNode("n1", 2)}}).ok());
  {
    auto db = RawOpen(file_);
    MustExec(db.get(), "UPDATE jobs SET argv = '[\"unterminated' WHERE id = 3");
    MustExec(db.get(), "UPDATE nodes SET gpus = '[{\"index\": \"zero\"}]'");
  }
  auto job = store->GetJob(JobId(3));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code, ErrorCode::kInternal);
  EXPECT_THAT(job.error().message, HasSubstr("job 3 argv"));
  auto nodes = store->ListNodes();
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.error().code, ErrorCode::kInternal);
  EXPECT_THAT(nodes.error().message, HasSubstr("node 'n1'"));
}

// Another process holding the write lock makes Commit fail after busy_timeout, with nothing
// applied; once the lock is free the same batch goes through.
TEST_F(SqliteStoreTest, CommitFailsWhileAnotherWriterHoldsTheLock) {
  auto store = MustOpen({.busy_timeout = std::chrono::milliseconds(50)});
  ASSERT_NE(store, nullptr);
  auto other = RawOpen(file_);
  MustExec(other.get(), "BEGIN IMMEDIATE");
  StoreBatch batch{.jobs = {MinimalJob(1)}, .nodes = {SampleNode("n", 1)}};
  Status status = store->Commit(batch);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kUnavailable) << status.error().ToString();
  MustExec(other.get(), "ROLLBACK");
  auto listed = store->ListJobs({});
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  ASSERT_TRUE(store->Commit(batch).ok());
  EXPECT_EQ(store->ListJobs({})->size(), 1u);
}

TEST_F(SqliteStoreTest, MaxIdsSurviveDeletedRows) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(
      store->Commit({.jobs = {MinimalJob(40)}, .events = {SampleEvent(std::nullopt, "x")}}).ok());
  {
    auto db = RawOpen(file_);  // as a future pruner would
    MustExec(db.get(), "DELETE FROM events; DELETE FROM jobs");
  }
  EXPECT_EQ(*store->MaxJobId(), 40);
  EXPECT_EQ(*store->MaxEventSeq(), 1);
}

TEST_F(SqliteStoreTest, NonUtf8LabelKeyIsRefused) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  Node node = SampleNode("n", 0);
  node.labels["\xff\xfe"] = "v";
  Status status = store->Commit({.jobs = {MinimalJob(1)}, .nodes = {node}});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(store->ListJobs({})->empty());
}

TEST_F(SqliteStoreTest, HalfSetUsageInRowIsInternalErrorNamingTheRowAndColumn) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit({.jobs = {FullJob(8)}}).ok());
  {
    auto db = RawOpen(file_);
    MustExec(db.get(), "UPDATE jobs SET usage_energy_mj = NULL WHERE id = 8");
  }
  auto job = store->GetJob(JobId(8));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code, ErrorCode::kInternal);
  EXPECT_THAT(job.error().message, HasSubstr("job 8: usage_samples is set but usage_energy_mj"));
}

TEST_F(SqliteStoreTest, BadHealthInGpuMinuteRowIsInternalErrorNamingTheRow) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Commit({.gpu_minutes = {SampleGpuMinute("n1", "GPU-7", 0)}}).ok());
  {
    auto db = RawOpen(file_);
    MustExec(db.get(), "UPDATE gpu_minutes SET health = 'melted'");
  }
  auto rows = store->ListGpuMinutes(FromUnixMillis(0), FromUnixMillis(1'800'000'000'000), 10);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().code, ErrorCode::kInternal);
  EXPECT_THAT(rows.error().message, HasSubstr("gpu minute (GPU 'GPU-7', minute 1700000040000 ms)"));
  EXPECT_THAT(rows.error().message, HasSubstr("melted"));
}

// The details of SQLite's plan for `sql` on the database at `file`, one step a line; "" (and a
// test failure) when it cannot be read.
std::string QueryPlan(const std::filesystem::path& file, const std::string& sql) {
  auto db = RawOpen(file);
  auto plan = SqliteStatement::Prepare(db.get(), "EXPLAIN QUERY PLAN " + sql, false);
  EXPECT_TRUE(plan.ok()) << plan.error().ToString();
  std::string details;
  while (plan.ok()) {
    auto row = plan->Step("explain");
    EXPECT_TRUE(row.ok()) << row.error().ToString();
    if (!row.ok() || !*row) {
      break;
    }
    details += plan->Text(3) + "\n";
  }
  return details;
}

// Reports read a month of minutes for every GPU: the range read must walk the primary key in
// order, neither scanning the whole table nor sorting the range.
TEST_F(SqliteStoreTest, GpuMinuteRangeReadIsAnOrderedKeyScan) {
  ASSERT_NE(MustOpen(), nullptr);
  const std::string details = QueryPlan(file_, ListGpuMinutesSql());
  EXPECT_THAT(details,
              HasSubstr("SEARCH gpu_minutes USING PRIMARY KEY (minute_ms>? AND minute_ms<?)"));
  EXPECT_THAT(details, Not(HasSubstr("TEMP B-TREE")));
}

// A GPU's series reads its minutes by the (uuid, minute) index, in order, whatever the table
// holds of the other GPUs.
TEST_F(SqliteStoreTest, OneGpusMinutesAreAnOrderedIndexScan) {
  ASSERT_NE(MustOpen(), nullptr);
  const std::string details = QueryPlan(file_, ListGpuMinutesOfSql());
  EXPECT_THAT(details,
              HasSubstr("USING INDEX gpu_minutes_by_gpu (uuid=? AND minute_ms>? AND "
                        "minute_ms<?)"));
  EXPECT_THAT(details, Not(HasSubstr("TEMP B-TREE")));
}

// A database written by an earlier version (schema 1: no usage, no gpu_minutes, no checkpoint
// signal) opens, is migrated in place, and its rows read back unchanged with no usage, SIGTERM
// as checkpoint signal and not preemptible.
TEST_F(SqliteStoreTest, MigratesAVersion1Database) {
  {
    auto db = RawOpen(file_);
    ASSERT_TRUE(ApplyMigrations(db.get(), SqliteMigrations().first(1)).ok());
    ASSERT_EQ(*ReadSchemaVersion(db.get()), 1);
    // The columns version 1 had, as that version's BindJob wrote them.
    MustExec(db.get(), R"sql(
      INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, gpu_type,
                        priority, team, time_limit_s, state, terminal, alloc_node, alloc_gpus,
                        submit_ms, start_ms, end_ms, exit_code, reason, pid)
      VALUES (3, 1000, 100, 'ana', 'old', '["sleep","1"]', '/tmp', '[["A","1"]]', 1, NULL,
              'low', 'nlp', 60, 'COMPLETED', 1, 'n1', '["GPU-1"]', 1700000000000,
              1700000001000, 1700000002000, 0, 'exited', NULL);
      INSERT INTO events (time_ms, job_id, kind, actor, message)
      VALUES (1700000002000, 3, 'exit', 'agent', 'exited 0');)sql");
  }
  Job old = MinimalJob(3);
  old.owner = Owner{1000, 100, "ana"};
  old.spec.name = "old";
  old.spec.argv = {"sleep", "1"};
  old.spec.env = {{"A", "1"}};
  old.spec.priority = PriorityClass::kLow;
  old.spec.team = "nlp";
  old.spec.time_limit = std::chrono::seconds(60);
  old.state = JobState::kCompleted;
  old.allocation = Allocation{NodeId("n1"), {GpuUuid("GPU-1")}};
  old.submit_time = FromUnixMillis(1'700'000'000'000);
  old.start_time = FromUnixMillis(1'700'000'001'000);
  old.end_time = FromUnixMillis(1'700'000'002'000);
  old.exit_code = 0;
  old.reason = "exited";

  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto job = store->GetJob(JobId(3));
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  ASSERT_TRUE(job->has_value());
  EXPECT_EQ(DebugString(**job), DebugString(old));
  EXPECT_FALSE((*job)->usage.has_value());
  auto events = store->ListEvents(JobId(3), 0, 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].kind, "exit");

  // What versions 2 and 3 added works on the migrated file.
  old.usage = JobUsage{.samples = 2,
                       .mean_util_pct = 50.5,
                       .peak_util_pct = 99,
                       .peak_memory_mib = 1024,
                       .energy_mj = 3000};
  old.spec.checkpoint_signal = 12;  // SIGUSR2
  old.preemptible = true;
  const GpuMinute minute = SampleGpuMinute("n1", "GPU-1", 0);
  ASSERT_TRUE(store->Commit({.jobs = {old}, .gpu_minutes = {minute}}).ok());
  EXPECT_EQ(DebugString(**store->GetJob(JobId(3))), DebugString(old));
  EXPECT_EQ(*store->ListGpuMinutes(minute.minute, minute.minute + Millis(60'000), 10),
            std::vector<GpuMinute>{minute});

  auto db = RawOpen(file_);
  EXPECT_EQ(QueryText(db.get(), "SELECT group_concat(version) FROM schema_version"),
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16");
  EXPECT_EQ(*ReadSchemaVersion(db.get()), LatestSqliteSchemaVersion());
}

// A database written by schema 3 (checkpoint signal and preemptible, but no constraints,
// dependencies, arrays, approval, checkpoint time or usage records) opens, is migrated, and its
// job reads back unchanged with the v4 fields empty; then every v4 field and a usage record
// are written and read back.
TEST_F(SqliteStoreTest, MigratesAVersion3Database) {
  {
    auto db = RawOpen(file_);
    ASSERT_TRUE(ApplyMigrations(db.get(), SqliteMigrations().first(3)).ok());
    ASSERT_EQ(*ReadSchemaVersion(db.get()), 3);
    // The columns version 3 had, as that version's BindJob wrote them.
    MustExec(db.get(), R"sql(
      INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, gpu_type,
                        priority, team, time_limit_s, state, terminal, alloc_node, alloc_gpus,
                        submit_ms, start_ms, end_ms, exit_code, reason, pid, usage_samples,
                        usage_mean_util_pct, usage_peak_util_pct, usage_peak_memory_mib,
                        usage_energy_mj, checkpoint_signal, preemptible)
      VALUES (4, 1000, 100, 'ana', 'v3', '["sleep","1"]', '/tmp', '[]', 2, 'H100-80GB',
              'high', 'cv', NULL, 'RUNNING', 0, 'n1', '["GPU-1","GPU-2"]', 1700000000000,
              1700000001000, NULL, NULL, 'running', 77, NULL, NULL, NULL, NULL, NULL, 10, 1);)sql");
  }
  Job old = MinimalJob(4);
  old.owner = Owner{1000, 100, "ana"};
  old.spec.name = "v3";
  old.spec.argv = {"sleep", "1"};
  old.spec.request = JobRequest{.gpus = 2, .gpu_type = "H100-80GB"};
  old.spec.priority = PriorityClass::kHigh;
  old.spec.team = "cv";
  old.spec.checkpoint_signal = 10;
  old.preemptible = true;
  old.state = JobState::kRunning;
  old.allocation = Allocation{NodeId("n1"), {GpuUuid("GPU-1"), GpuUuid("GPU-2")}};
  old.submit_time = FromUnixMillis(1'700'000'000'000);
  old.start_time = FromUnixMillis(1'700'000'001'000);
  old.reason = "running";
  old.pid = 77;

  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto job = store->GetJob(JobId(4));
  ASSERT_TRUE(job.ok()) << job.error().ToString();
  ASSERT_TRUE(job->has_value());
  EXPECT_EQ(DebugString(**job), DebugString(old));

  old.spec.request.node_labels = {{"rack", "a"}};
  old.spec.after = {Dependency{.job = JobId(2), .kind = DependencyKind::kOk}};
  old.spec.array = ArrayTask{.array_job = JobId(3), .index = 1, .max_running = std::nullopt};
  old.budget_approved = true;
  old.last_checkpoint = FromUnixMillis(1'700'000'005'000);
  const UsageRecord run{.job = JobId(4),
                        .start = old.start_time.value(),
                        .end = FromUnixMillis(1'700'000'011'000),
                        .team = "cv",
                        .user = "ana",
                        .priority = "high",
                        .gpus = 2,
                        .gpu_models = {"H100-80GB"},
                        .gpu_seconds = 20,
                        .energy_mj = 5};
  ASSERT_TRUE(store->Commit({.jobs = {old}, .usage = {run}}).ok());
  EXPECT_EQ(DebugString(**store->GetJob(JobId(4))), DebugString(old));
  auto sums = store->SumUsage(FromUnixMillis(0), FromUnixMillis(1'800'000'000'000));
  ASSERT_TRUE(sums.ok()) << sums.error().ToString();
  EXPECT_EQ(
      *sums,
      (std::vector<UsageSum>{{.team = "cv", .user = "ana", .gpu_seconds = 20, .energy_mj = 5}}));
  EXPECT_EQ(*ReadSchemaVersion(RawOpen(file_).get()), LatestSqliteSchemaVersion());
}

// A database written by schema 4 (no tokens) opens and is migrated: its job reads back
// unchanged and tokens can then be stored and read.
TEST_F(SqliteStoreTest, MigratesAVersion4Database) {
  {
    auto db = WriteOldJob(file_, 4);
    EXPECT_EQ(QueryText(db.get(), "SELECT count(*) FROM sqlite_master WHERE name = 'tokens'"), "0");
  }
  Job old = MinimalJob(6);
  old.owner = Owner{1000, 100, "ana"};
  old.spec.name = "v4";
  old.spec.team = "cv";
  old.submit_time = FromUnixMillis(1'700'000'000'000);
  old.reason = "queued";

  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(DebugString(**store->GetJob(JobId(6))), DebugString(old));
  const ApiToken token = SampleToken("admin1");
  ASSERT_TRUE(store->Commit({.tokens = {token}}).ok());
  auto got = store->GetToken("admin1");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(DebugString(**got), DebugString(token));
  EXPECT_EQ(*ReadSchemaVersion(RawOpen(file_).get()), LatestSqliteSchemaVersion());
}

// A database written by schema 6 (no requeue column) opens and is migrated: its jobs were all
// requeued when preempted or lost with their node, so they read back requeueable.
TEST_F(SqliteStoreTest, MigratesAVersion6DatabaseToRequeueableJobs) {
  WriteOldJob(file_, 6);
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto job = store->GetJob(JobId(6));
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_TRUE((*job)->spec.requeue);
  EXPECT_EQ(*ReadSchemaVersion(RawOpen(file_).get()), LatestSqliteSchemaVersion());
}

// A database written by schema 7 (no interactive, idle_reap, subscriptions) opens and is
// migrated: its jobs read back as they ran, not interactive and reapable; no subscriptions.
TEST_F(SqliteStoreTest, MigratesAVersion7DatabaseToReapableBatchJobs) {
  {
    auto db = RawOpen(file_);
    ASSERT_TRUE(ApplyMigrations(db.get(), SqliteMigrations().first(7)).ok());
    MustExec(db.get(), R"sql(
      INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, priority, team,
                        state, terminal, submit_ms, reason, requeue)
      VALUES (7, 1000, 100, 'ana', 'v7', '["true"]', '/tmp', '[]', 1, 'normal', 'cv',
              'PENDING', 0, 1700000000000, 'queued', 0);)sql");
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto job = store->GetJob(JobId(7));
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_FALSE((*job)->spec.interactive);
  EXPECT_TRUE((*job)->spec.idle_reap);
  EXPECT_FALSE((*job)->spec.requeue);
  auto subs = store->ListSubscriptions();
  ASSERT_TRUE(subs.ok()) << subs.error().ToString();
  EXPECT_TRUE(subs->empty());
  EXPECT_FALSE((*job)->spec.gang.has_value());  // and schema 9's: not a multi-node job
  EXPECT_EQ((*job)->spec.request.nodes, 1);
  EXPECT_EQ(*ReadSchemaVersion(RawOpen(file_).get()), LatestSqliteSchemaVersion());
}

// A database written by schema 9 (no GPU fractions) opens and is migrated: a running job reads
// back as holding its whole GPU, and its request as whole GPUs.
TEST_F(SqliteStoreTest, MigratesAVersion9DatabaseToWholeGpuJobs) {
  {
    auto db = RawOpen(file_);
    ASSERT_TRUE(ApplyMigrations(db.get(), SqliteMigrations().first(9)).ok());
    MustExec(db.get(), R"sql(
      INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, priority, team,
                        state, terminal, submit_ms, reason, alloc_node, alloc_gpus)
      VALUES (9, 1000, 100, 'ana', 'v9', '["true"]', '/tmp', '[]', 1, 'normal', 'cv',
              'RUNNING', 0, 1700000000000, '', 'node-a', '["GPU-0"]');)sql");
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto job = store->GetJob(JobId(9));
  ASSERT_TRUE(job.ok() && job->has_value()) << (job.ok() ? "no job 9" : job.error().ToString());
  EXPECT_FALSE(IsFractional((*job)->spec.request));
  ASSERT_TRUE((*job)->allocation.has_value());
  EXPECT_EQ((*job)->allocation->gpu_milli, kWholeGpuMilli);
  EXPECT_EQ((*job)->allocation->gpu_memory_mib, 0);
  EXPECT_EQ(*ReadSchemaVersion(RawOpen(file_).get()), LatestSqliteSchemaVersion());
}

// A version-10 database (before MIG): its jobs read back asking for no MIG device and holding
// none.
TEST_F(SqliteStoreTest, MigratesAVersion10DatabaseToJobsWithoutMig) {
  {
    auto db = RawOpen(file_);
    ASSERT_TRUE(ApplyMigrations(db.get(), SqliteMigrations().first(10)).ok());
    MustExec(db.get(), R"sql(
      INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, priority, team,
                        state, terminal, submit_ms, reason, alloc_node, alloc_gpus, gpu_milli,
                        alloc_gpu_milli, alloc_gpu_memory_mib)
      VALUES (10, 1000, 100, 'ana', 'v10', '["true"]', '/tmp', '[]', 1, 'normal', 'cv',
              'RUNNING', 0, 1700000000000, '', 'node-a', '["GPU-0"]', 250, 250, 20480);)sql");
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto job = store->GetJob(JobId(10));
  ASSERT_TRUE(job.ok() && job->has_value()) << (job.ok() ? "no job 10" : job.error().ToString());
  EXPECT_FALSE(IsMig((*job)->spec.request));
  EXPECT_EQ((*job)->spec.request.gpu_milli, 250);
  ASSERT_TRUE((*job)->allocation.has_value());
  EXPECT_TRUE((*job)->allocation->mig.value().empty());
  EXPECT_EQ(*ReadSchemaVersion(RawOpen(file_).get()), LatestSqliteSchemaVersion());
}

// A version-11 database (before holds): its jobs read back not held.
TEST_F(SqliteStoreTest, MigratesAVersion11DatabaseToJobsNotHeld) {
  {
    auto db = RawOpen(file_);
    ASSERT_TRUE(ApplyMigrations(db.get(), SqliteMigrations().first(11)).ok());
    MustExec(db.get(), R"sql(
      INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, priority, team,
                        state, terminal, submit_ms, reason)
      VALUES (11, 1000, 100, 'ana', 'v11', '["true"]', '/tmp', '[]', 1, 'normal', 'cv',
              'PENDING', 0, 1700000000000, '');)sql");
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto job = store->GetJob(JobId(11));
  ASSERT_TRUE(job.ok() && job->has_value()) << (job.ok() ? "no job 11" : job.error().ToString());
  EXPECT_EQ((*job)->held_by, "");
  EXPECT_EQ(*ReadSchemaVersion(RawOpen(file_).get()), LatestSqliteSchemaVersion());
}

// GPU minutes from before schema 16 have no allocated_ms: the holder of the minute's last
// sample counted for the whole minute, so they read as held the whole minute (or not at all
// without a holder), and the report's figures of those months stay what they were.
TEST_F(SqliteStoreTest, MigratesAVersion15DatabaseToMinutesWithHeldTime) {
  {
    auto db = RawOpen(file_);
    ASSERT_TRUE(ApplyMigrations(db.get(), SqliteMigrations().first(15)).ok());
    MustExec(db.get(), R"sql(
      INSERT INTO gpu_minutes (minute_ms, node, uuid, job_id, user_name, team, samples,
                               util_mean_pct, util_max_pct, memory_used_max_mib, power_mean_w,
                               energy_mj, health)
      VALUES (1700000040000, 'n1', 'GPU-held', 7, 'ana', 'cv', 12, 50, 60, 1, 100, 5, 'ok'),
             (1700000040000, 'n1', 'GPU-free', NULL, '', '', 12, 0, 0, 0, 60, 5, 'ok');)sql");
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto rows = store->ListGpuMinutes(FromUnixMillis(0), FromUnixMillis(1'800'000'000'000), 10);
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  ASSERT_EQ(rows->size(), 2U);
  for (const GpuMinute& row : *rows) {
    EXPECT_EQ(row.allocated_ms, row.job ? 60'000 : 0) << row.uuid.value();
  }
}

// A budget reads the runs of one period by end time: it must use index usage_by_end rather
// than scan every run ever recorded. (ListUsage pages by seq, the primary key, once at start.)
TEST_F(SqliteStoreTest, SumUsageUsesTheEndIndex) {
  ASSERT_NE(MustOpen(), nullptr);
  auto db = RawOpen(file_);
  for (const std::string& sql : {std::string(kSumUsageSql)}) {
    auto plan = SqliteStatement::Prepare(db.get(), "EXPLAIN QUERY PLAN " + sql, false);
    ASSERT_TRUE(plan.ok()) << plan.error().ToString();
    std::string details;
    while (true) {
      auto row = plan->Step("explain");
      ASSERT_TRUE(row.ok()) << row.error().ToString();
      if (!*row) {
        break;
      }
      details += plan->Text(3) + "\n";
    }
    EXPECT_THAT(details, HasSubstr("usage_by_end")) << sql;
  }
}

// Migration mechanics on a custom list: steps apply in order, once, each in its own
// transaction; a failing step is rolled back and the ones before it stay.
TEST(SqliteStoreMigrationsTest, AppliesNewStepsOnlyAndRollsBackAFailingOne) {
  TempDir dir;
  auto db = RawOpen(dir.path() / "m.db");
  const Migration v1{1, "one", "CREATE TABLE t1 (x INTEGER);"};
  const Migration v2{2, "two", "CREATE TABLE t2 (x INTEGER); INSERT INTO t1 VALUES (1);"};
  const Migration bad3{3, "bad", "CREATE TABLE t3 (x INTEGER); INSERT INTO nowhere VALUES (1);"};
  const std::vector<Migration> first = {v1};
  const std::vector<Migration> second = {v1, v2};
  const std::vector<Migration> third = {v1, v2, bad3};

  ASSERT_TRUE(ApplyMigrations(db.get(), first).ok());
  EXPECT_EQ(*ReadSchemaVersion(db.get()), 1);
  ASSERT_TRUE(ApplyMigrations(db.get(), second).ok());
  ASSERT_TRUE(ApplyMigrations(db.get(), second).ok());  // idempotent
  EXPECT_EQ(*ReadSchemaVersion(db.get()), 2);
  EXPECT_EQ(QueryText(db.get(), "SELECT count(*) FROM t1"), "1");  // v2 ran once

  Status status = ApplyMigrations(db.get(), third);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("schema migration 3"));
  EXPECT_EQ(*ReadSchemaVersion(db.get()), 2);
  EXPECT_EQ(QueryText(db.get(), "SELECT count(*) FROM sqlite_master WHERE name = 't3'"), "0");

  Status older = ApplyMigrations(db.get(), first);
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.error().code, ErrorCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gf::testing
