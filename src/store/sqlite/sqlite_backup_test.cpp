// Upgrades from every earlier schema, and backup and restore of the SQLite store
// (sqlite_backup.h): what `gpufleet backup` and `gpufleet restore` rest on.
#include "store/sqlite/sqlite_backup.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "store/schema_steps.h"
#include "store/sqlite/migrations.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_test_util.h"
#include "store/store_test_util.h"

namespace gf::testing {
namespace {

using ::testing::HasSubstr;

// The jobs of an earlier release's database: one in each state a database keeps, written with
// the columns of schema 1 alone (every later column has a default or may be NULL, so a row of
// any version 1 .. N-1 can be written so), with one event each.
constexpr std::string_view kOldJobs = R"sql(
  INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, gpu_type, priority,
                    team, time_limit_s, state, terminal, alloc_node, alloc_gpus, submit_ms,
                    start_ms, end_ms, exit_code, reason, pid)
  VALUES
    (1, 1000, 100, 'ana', 'queued', '["sleep","60"]', '/home/ana', '[["A","1"]]', 2, 'H100',
     'high', 'ml', 3600, 'PENDING', 0, NULL, NULL, 1700000000000, NULL, NULL, NULL,
     'waiting for 2 GPUs', NULL),
    (2, 1000, 100, 'ana', 'training', '["python","train.py"]', '/home/ana', '[]', 1, NULL,
     'normal', 'ml', NULL, 'RUNNING', 0, 'n1', '["GPU-1"]', 1700000001000, 1700000002000, NULL,
     NULL, 'started', 4242),
    (3, 1001, 100, 'bo', 'done', '["true"]', '/tmp', '[]', 1, NULL, 'low', 'cv', NULL,
     'COMPLETED', 1, 'n1', '["GPU-2"]', 1700000003000, 1700000004000, 1700000005000, 0,
     'exited 0', NULL),
    (4, 1001, 100, 'bo', 'broken', '["false"]', '/tmp', '[]', 1, NULL, 'normal', 'cv', NULL,
     'FAILED', 1, 'n1', '["GPU-2"]', 1700000006000, 1700000007000, 1700000008000, 1,
     'exited 1', NULL),
    (5, 1000, 100, 'ana', 'stopped', '["sleep","9"]', '/tmp', '[]', 1, NULL, 'normal', 'ml',
     NULL, 'CANCELLED', 1, NULL, NULL, 1700000009000, NULL, 1700000010000, NULL,
     'cancelled by ana', NULL);
  INSERT INTO events (time_ms, job_id, kind, actor, message)
  VALUES (1700000000000, 1, 'submit', 'ana', 'submitted'),
         (1700000002000, 2, 'start', 'controller', 'on n1'),
         (1700000005000, 3, 'exit', 'agent', 'exited 0'),
         (1700000008000, 4, 'exit', 'agent', 'exited 1'),
         (1700000010000, 5, 'cancel', 'ana', 'cancelled');
)sql";

// "id state user name node", one line per job, by id: what a reader of the store must find.
std::string Summary(const std::vector<Job>& jobs) {
  std::string out;
  for (const Job& job : jobs) {
    out += std::to_string(job.id.value()) + " " + std::string(ToString(job.state)) + " " +
           job.owner.user + " " + job.spec.name + " " +
           (job.allocation ? job.allocation->node.value() : "-") + "\n";
  }
  return out;
}

constexpr std::string_view kOldJobsSummary =
    "1 PENDING ana queued -\n"
    "2 RUNNING ana training n1\n"
    "3 COMPLETED bo done n1\n"
    "4 FAILED bo broken n1\n"
    "5 CANCELLED ana stopped -\n";

// Every job of the store, oldest first.
std::vector<Job> AllJobs(Store& store) {
  auto jobs = store.ListJobs(JobQuery{});
  EXPECT_TRUE(jobs.ok()) << jobs.error().ToString();
  std::vector<Job> out = jobs.ok() ? *jobs : std::vector<Job>{};
  std::sort(out.begin(), out.end(), [](const Job& a, const Job& b) { return a.id < b.id; });
  return out;
}

std::unique_ptr<Store> MustOpen(const std::filesystem::path& file) {
  auto store = OpenSqliteStore(file);
  EXPECT_TRUE(store.ok()) << store.error().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

// The upgrade promise: a database left by any earlier release (schema 1 .. N-1) opens in this
// one with every job, in every state, and every event kept. The databases are made here from
// the schema steps themselves (ApplyMigrations of the first k steps) with rows as those
// versions wrote them, rather than from files committed to the repository: a new step is
// covered the day it is added, with no fixture to regenerate.
TEST(SqliteUpgradeTest, UpgradesEveryPreviousSchemaKeepingEveryJob) {
  ASSERT_EQ(LatestSqliteSchemaVersion(), LatestSchemaVersion());
  for (int version = 1; version < LatestSchemaVersion(); ++version) {
    SCOPED_TRACE("from schema " + std::to_string(version));
    TempDir dir;
    const std::filesystem::path file = dir.path() / "state.db";
    {
      SqliteHandle db = RawOpen(file);
      ASSERT_TRUE(ApplyMigrations(db.get(), SqliteMigrations().first(version)).ok());
      MustExec(db.get(), std::string(kOldJobs));
    }
    auto store = MustOpen(file);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(Summary(AllJobs(*store)), kOldJobsSummary);
    auto events = store->ListEvents(std::nullopt, 0, 100);
    ASSERT_TRUE(events.ok());
    EXPECT_EQ(events->size(), 5U);
    EXPECT_EQ(*store->MaxJobId(), 5);
    SqliteHandle db = RawOpen(file);
    EXPECT_EQ(*ReadSchemaVersion(db.get()), LatestSchemaVersion());
  }
}

class SqliteBackupTest : public ::testing::Test {
 protected:
  // A store holding jobs 1..n, left open (as a running daemon holds it: the jobs may still be
  // in its WAL, not yet in the main file).
  std::unique_ptr<Store> LiveStore(int n) {
    auto store = MustOpen(db_);
    std::vector<Job> jobs;
    for (int id = 1; id <= n; ++id) {
      jobs.push_back(MinimalJob(id));
    }
    EXPECT_TRUE(store->Commit({.jobs = jobs}).ok());
    return store;
  }

  TempDir dir_;
  std::filesystem::path db_ = dir_.path() / "data" / "state.db";
  std::filesystem::path output_ = dir_.path() / "backup.db";
};

TEST_F(SqliteBackupTest, CopiesALiveDatabaseIntoOnePrivateFile) {
  auto live = LiveStore(3);
  ASSERT_TRUE(std::filesystem::exists(db_.string() + "-wal"));

  auto info = BackupSqliteStore(db_, output_);
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  EXPECT_EQ(info->jobs, 3);
  EXPECT_EQ(info->schema_version, LatestSchemaVersion());
  EXPECT_EQ(info->bytes, std::filesystem::file_size(output_));
  struct stat st {};
  ASSERT_EQ(::stat(output_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  // One file: a rollback journal, nothing beside it, no temporary left.
  EXPECT_FALSE(std::filesystem::exists(output_.string() + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(output_.string() + ".partial"));
  EXPECT_EQ(QueryText(RawOpen(output_).get(), "PRAGMA journal_mode"), "delete");

  // The daemon goes on; the backup is the state at its time.
  ASSERT_TRUE(live->Commit({.jobs = {MinimalJob(4)}}).ok());
  auto copy = MustOpen(output_);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(AllJobs(*copy).size(), 3U);
  EXPECT_EQ(AllJobs(*live).size(), 4U);
}

// Backups taken while another connection commits (as the daemon does) are each one commit's
// state: jobs 1..k for some k, every one whole, never a torn mix.
TEST_F(SqliteBackupTest, CopiesTakenDuringCommitsAreEachOneCommitsState) {
  auto live = LiveStore(1);
  constexpr int kJobs = 150;
  {
    std::jthread writer([&live] {
      for (int id = 2; id <= kJobs; ++id) {
        ASSERT_TRUE(live->Commit({.jobs = {MinimalJob(id)}}).ok());
      }
    });
    for (int round = 0; round < 5; ++round) {
      auto info = BackupSqliteStore(db_, output_);
      ASSERT_TRUE(info.ok()) << info.error().ToString();
      auto copy = MustOpen(output_);
      ASSERT_NE(copy, nullptr);
      const std::vector<Job> jobs = AllJobs(*copy);
      ASSERT_EQ(static_cast<std::int64_t>(jobs.size()), info->jobs);
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        EXPECT_EQ(jobs[i].id.value(), static_cast<std::int64_t>(i) + 1);
      }
    }
  }
  ASSERT_TRUE(BackupSqliteStore(db_, output_).ok());
  EXPECT_EQ(AllJobs(*MustOpen(output_)).size(), static_cast<std::size_t>(kJobs));
}

TEST_F(SqliteBackupTest, RefusesWhatIsNotAGpufleetDatabase) {
  auto missing = BackupSqliteStore(db_, output_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(missing.error().message, HasSubstr(db_.string()));

  const std::filesystem::path other = dir_.path() / "other.db";
  MustExec(RawOpen(other).get(), "CREATE TABLE accounts (id INTEGER)");
  auto foreign = BackupSqliteStore(other, output_);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(foreign.error().message, HasSubstr("not a gpufleet database"));
  EXPECT_FALSE(std::filesystem::exists(output_));

  const std::filesystem::path text = dir_.path() / "notes.txt";
  std::ofstream(text) << std::string(4096, 'x');
  auto garbage = InspectSqliteBackup(text);
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code, ErrorCode::kIo);
  EXPECT_THAT(garbage.error().message, HasSubstr(text.string()));
}

TEST_F(SqliteBackupTest, RestoreReplacesTheDatabaseAndKeepsTheOldOneAside) {
  {
    auto live = LiveStore(2);
    ASSERT_TRUE(BackupSqliteStore(db_, output_).ok());
    ASSERT_TRUE(live->Commit({.jobs = {MinimalJob(3)}}).ok());
  }
  auto restored = RestoreSqliteStore(output_, db_, ".replaced-test");
  ASSERT_TRUE(restored.ok()) << restored.error().ToString();
  EXPECT_EQ(restored->restored.jobs, 2);
  EXPECT_EQ(restored->replaced, std::filesystem::path(db_.string() + ".replaced-test"));
  EXPECT_FALSE(std::filesystem::exists(db_.string() + ".restoring"));

  auto store = MustOpen(db_);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(AllJobs(*store).size(), 2U);
  auto before = MustOpen(restored->replaced);  // the database it replaced, whole
  ASSERT_NE(before, nullptr);
  EXPECT_EQ(AllJobs(*before).size(), 3U);
}

TEST_F(SqliteBackupTest, RestoreOntoANewDataDirHasNothingToPutAside) {
  { auto live = LiveStore(1); }
  ASSERT_TRUE(BackupSqliteStore(db_, output_).ok());
  const std::filesystem::path fresh = dir_.path() / "state.db";
  auto restored = RestoreSqliteStore(output_, fresh, ".replaced");
  ASSERT_TRUE(restored.ok()) << restored.error().ToString();
  EXPECT_TRUE(restored->replaced.empty());
  EXPECT_EQ(AllJobs(*MustOpen(fresh)).size(), 1U);
}

// A backup a newer gpufleet wrote cannot be restored by this one (it could not open it), and
// the database in place is left alone.
TEST_F(SqliteBackupTest, RestoreRefusesANewerBackupAndTouchesNothing) {
  { auto live = LiveStore(2); }
  ASSERT_TRUE(BackupSqliteStore(db_, output_).ok());
  const int newer = LatestSchemaVersion() + 1;
  MustExec(RawOpen(output_).get(),
           "INSERT INTO schema_version (version, description, applied_ms) VALUES (" +
               std::to_string(newer) + ", 'from the future', 0)");
  auto restored = RestoreSqliteStore(output_, db_, ".replaced");
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(restored.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(restored.error().message, HasSubstr(output_.string()));
  EXPECT_THAT(
      restored.error().message,
      HasSubstr("database schema version " + std::to_string(newer) +
                " is newer than this gpufleet (" + std::to_string(LatestSchemaVersion()) + ")"));
  EXPECT_FALSE(std::filesystem::exists(db_.string() + ".replaced"));
  EXPECT_EQ(AllJobs(*MustOpen(db_)).size(), 2U);
}

}  // namespace
}  // namespace gf::testing
