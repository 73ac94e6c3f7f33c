// The PostgreSQL backend: the conformance suite (and its properties) instantiated for it, and
// what only PostgreSQL has: URLs and schemas, migrations under an advisory lock, connection
// errors. The server comes from the CTest fixture `postgres` (tests/postgres/pg_fixture.sh):
// its URL is read from GF_TEST_POSTGRES_URL, or from the file GF_TEST_POSTGRES_URL_FILE names.
// Each test works in its own schema gf_test_<random>, dropped at the end, so tests run in
// parallel on one server.
#include "store/postgres/postgres_store.h"

#include <array>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include "store/open_store.h"
#include "store/postgres/postgres_migrations.h"
#include "store/postgres/postgres_util.h"
#include "store/store_conformance_test.h"
#include "store/store_test_util.h"

// LeakSanitizer: libpqxx 6.4 keeps the PGresult of a BEGIN that fails on a connection the
// server has ended (2 KB per lost connection; fixed in later libpqxx). The reconnect test
// provokes exactly that. gpufleet never calls libpq itself, so a leaked PGresult is always
// libpqxx's (its frames have no symbols for a narrower match).
// NOLINTNEXTLINE(readability-identifier-naming,bugprone-reserved-identifier): the sanitizer's hook
extern "C" const char* __lsan_default_suppressions() {
  return "leak:PQmakeEmptyPGresult\n";
}

namespace gf::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kHowToRun =
    "no test PostgreSQL: run through ctest (its fixture starts one), or set "
    "GF_TEST_POSTGRES_URL=postgresql://USER@HOST:PORT/DB";

// The test server's URL; an error when the fixture should have written one and did not.
// nullopt when nothing is configured (a run by hand).
Result<std::optional<std::string>> TestUrl() {
  // Read before any test starts a thread.
  // NOLINTNEXTLINE(concurrency-mt-unsafe)
  if (const char* url = std::getenv("GF_TEST_POSTGRES_URL"); url != nullptr && *url != '\0') {
    return std::optional<std::string>(url);
  }
  const char* file = std::getenv("GF_TEST_POSTGRES_URL_FILE");  // NOLINT(concurrency-mt-unsafe)
  if (file == nullptr || *file == '\0') {
    return std::optional<std::string>();
  }
  std::ifstream in(file);
  std::string url;
  if (!(in >> url)) {
    return Unavailable(std::string("the postgres fixture wrote no URL to ") + file +
                       "; see the output of the test postgres_fixture_start");
  }
  return std::optional<std::string>(url);
}

std::string RandomSchema() {
  std::random_device rd;
  std::uniform_int_distribution<std::uint64_t> dist;
  char buf[32];
  std::snprintf(buf, sizeof buf, "gf_test_%016llx", static_cast<unsigned long long>(dist(rd)));
  return buf;
}

// A fresh schema on the test server, dropped with everything in it when destroyed.
class TestSchema {
 public:
  TestSchema() : schema_(RandomSchema()) {
    auto url = TestUrl();
    if (!url.ok()) {
      error_ = url.error().message;
    } else if (url->has_value()) {
      url_ = **url;
    }
  }
  ~TestSchema() {
    if (url_.empty()) {
      return;
    }
    try {
      pqxx::connection conn(url_);
      pqxx::nontransaction txn(conn);
      txn.exec("DROP SCHEMA IF EXISTS \"" + schema_ + "\" CASCADE");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "drop schema " << schema_ << ": " << e.what();
    }
  }
  TestSchema(const TestSchema&) = delete;
  TestSchema& operator=(const TestSchema&) = delete;

  // The store's URL: the server's with ?schema= (and more parameters, "&a=b").
  std::string StoreUrl(const std::string& more = "") const {
    return url_ + "?schema=" + schema_ + more;
  }
  Result<std::unique_ptr<Store>> Open() const {
    if (!error_.empty()) {
      return Unavailable(error_);
    }
    return OpenPostgresStore(StoreUrl());
  }
  // A plain connection with the schema first on the search path, to look behind the store.
  std::unique_ptr<pqxx::connection> Raw() const {
    auto conn = std::make_unique<pqxx::connection>(url_);
    conn->set_variable("search_path", "\"" + schema_ + "\"");
    return conn;
  }
  std::string Query(const std::string& sql) const {
    auto conn = Raw();
    pqxx::nontransaction txn(*conn);
    const pqxx::result r = txn.exec(sql);
    return r.empty() || r[0][0].is_null() ? std::string() : r[0][0].c_str();
  }
  std::optional<std::string> SkipReason() const {
    if (url_.empty() && error_.empty()) {
      return std::string(kHowToRun);
    }
    return std::nullopt;
  }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  const std::string& schema() const { return schema_; }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  const std::string& server_url() const { return url_; }

 private:
  std::string schema_;
  std::string url_;
  std::string error_;  // the fixture should have run and did not: tests fail, not skip
};

class PostgresTestBackend final : public StoreTestBackend {
 public:
  Result<std::unique_ptr<Store>> Open() override { return schema_.Open(); }
  std::optional<std::string> SkipReason() const override { return schema_.SkipReason(); }

 private:
  TestSchema schema_;
};

INSTANTIATE_TEST_SUITE_P(Postgres,
                         StoreConformanceTest,
                         ::testing::Values(StoreBackendFactory{
                             "postgres",
                             [] {
                               return std::make_unique<PostgresTestBackend>();
                             }}),
                         StoreBackendName);

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = schema_.SkipReason()) {
      GTEST_SKIP() << *why;
    }
  }
  std::unique_ptr<Store> MustOpen() {
    auto store = schema_.Open();
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  TestSchema schema_;
};

TEST_F(PostgresStoreTest, CreatesItsSchemaAndRecordsEveryVersion) {
  ASSERT_NE(MustOpen(), nullptr);
  EXPECT_EQ(schema_.Query("SELECT string_agg(version::text, ',' ORDER BY version) "
                          "FROM schema_version"),
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16");
  EXPECT_EQ(PostgresMigrations().size(), 16u);  // one per version above
  // Reopening applies nothing again.
  ASSERT_NE(MustOpen(), nullptr);
  EXPECT_EQ(schema_.Query("SELECT count(*) FROM schema_version"), "16");
}

// Strings are stored as their bytes (BYTEA): one that is not UTF-8 round-trips, where a TEXT
// column would refuse it.
TEST_F(PostgresStoreTest, StringsThatAreNotUtf8RoundTrip) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  Job job = MinimalJob(3);
  constexpr char kName[] = "bad\xff\xfe name\0nul";  // a NUL inside, too
  job.spec.name = std::string(kName, sizeof kName - 1);
  job.spec.workdir = "/tmp/\xc3\x28";
  job.reason = "\x80";
  Node node = SampleNode(std::string("n\xff", 2), 1);
  ASSERT_TRUE(store->Commit({.jobs = {job}, .nodes = {node}}).ok());
  EXPECT_EQ(DebugString(**store->GetJob(JobId(3))), DebugString(job));
  EXPECT_EQ(store->ListNodes()->at(0), node);
}

// Two servers starting at once on a new schema: both open, and each step is applied once
// (the advisory lock orders them; the second finds the work done).
TEST_F(PostgresStoreTest, TwoOpensAtOnceMigrateOnce) {
  std::array<std::optional<Result<std::unique_ptr<Store>>>, 2> results;
  {
    std::vector<std::jthread> threads;
    threads.reserve(results.size());
    for (auto& result : results) {
      threads.emplace_back([&result, this] { result.emplace(schema_.Open()); });
    }
  }
  for (const auto& result : results) {
    ASSERT_TRUE(result->ok()) << result->error().ToString();
  }
  EXPECT_EQ(schema_.Query("SELECT count(*) FROM schema_version"), "16");
  ASSERT_TRUE((**results[0])->Commit({.jobs = {MinimalJob(1)}}).ok());
  EXPECT_TRUE((**results[1])->GetJob(JobId(1))->has_value());
}

// A schema written by version 4 (no tokens, no node state reason) opens and is migrated.
TEST_F(PostgresStoreTest, MigratesAVersion4Schema) {
  {
    auto conn = schema_.Raw();
    ASSERT_TRUE(
        ApplyPostgresMigrations(*conn, schema_.schema(), PostgresMigrations().first(4)).ok());
    pqxx::work txn(*conn);
    // The columns version 4 required, as that version wrote them (strings as bytes).
    txn.exec(R"sql(
      INSERT INTO jobs (id, uid, gid, user_name, name, argv, workdir, env, gpus, priority, team,
                        state, terminal, submit_ms, reason)
      VALUES (6, 1000, 100, 'ana', 'v4', '["true"]', '/tmp', '[]', 1, 'normal', 'cv',
              'PENDING', 0, 1700000000000, 'queued');
      INSERT INTO nodes (name, cpus, memory_mib, state, gpu_backend, last_seen_ms, gpus, labels)
      VALUES ('n1', 8, 1024, 'up', 'sim', 0, '[]', '{}');)sql");
    txn.commit();
  }
  EXPECT_EQ(schema_.Query("SELECT to_regclass('tokens')::text"), "");
  Job old = MinimalJob(6);
  old.owner = Owner{1000, 100, "ana"};
  old.spec.name = "v4";
  old.spec.team = "cv";
  old.submit_time = FromUnixMillis(1'700'000'000'000);
  old.reason = "queued";

  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(DebugString(**store->GetJob(JobId(6))), DebugString(old));
  auto nodes = store->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].state_reason, "");
  const ApiToken token = SampleToken("admin1");
  ASSERT_TRUE(store->Commit({.tokens = {token}}).ok());
  EXPECT_EQ(DebugString(**store->GetToken("admin1")), DebugString(token));
  EXPECT_EQ(schema_.Query("SELECT max(version) FROM schema_version"),
            std::to_string(PostgresMigrations().back().version));
}

// A role that owns its schema but may not create schemas in the database (PostgreSQL's
// default for a new role) can open the store: the schema is only created when missing.
TEST_F(PostgresStoreTest, OpensASchemaTheRoleOwnsWithoutCreateOnTheDatabase) {
  const std::string role = schema_.schema();
  schema_.Query("CREATE ROLE " + role + " LOGIN; CREATE SCHEMA " + role + " AUTHORIZATION " + role +
                "; SELECT 1");
  std::string url = schema_.StoreUrl();
  const std::size_t at = url.find('@');
  ASSERT_NE(at, std::string::npos);
  url = "postgresql://" + role + url.substr(at);
  {
    auto store = OpenPostgresStore(url);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    EXPECT_TRUE((*store)->Commit({.jobs = {MinimalJob(1)}}).ok());
  }
  schema_.Query("DROP SCHEMA " + role + " CASCADE; DROP ROLE " + role + "; SELECT 1");
}

TEST_F(PostgresStoreTest, RefusesANewerSchema) {
  ASSERT_NE(MustOpen(), nullptr);
  schema_.Query("INSERT INTO schema_version VALUES (99, 'future', 0) RETURNING version");
  auto store = schema_.Open();
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(
      store.error().message,
      HasSubstr("database schema version 99 is newer than this gpufleet (" +
                std::to_string(PostgresMigrations().size()) + "): a newer gpufleet wrote it"));
  EXPECT_THAT(store.error().message, HasSubstr("restore a backup taken before the upgrade"));
}

TEST_F(PostgresStoreTest, RefusesASchemaOfAnotherProgram) {
  schema_.Query("CREATE SCHEMA " + schema_.schema() + "; CREATE TABLE " + schema_.schema() +
                ".accounts (id int); SELECT 1");
  auto store = schema_.Open();
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(store.error().message, HasSubstr("has tables but no schema_version table"));
}

// A constraint only the schema checks (an event's job must be stored) fails the batch whole
// with kInvalidArgument naming the event, and the store goes on.
TEST_F(PostgresStoreTest, ConstraintErrorNamesTheRowAndRollsBack) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  Status status =
      store->Commit({.jobs = {MinimalJob(1)}, .events = {SampleEvent(JobId(42), "orphan")}});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.error().message, HasSubstr("event 'orphan' for job 42 (is the job stored?)"));
  EXPECT_THAT(status.error().message, HasSubstr("?schema=" + schema_.schema()));
  EXPECT_FALSE(store->GetJob(JobId(1))->has_value());
  EXPECT_EQ(*store->MaxEventSeq(), 0) << "a rolled-back batch leaves no gap in seqs";
  ASSERT_TRUE(store->Commit({.events = {SampleEvent(std::nullopt, "next")}}).ok());
  EXPECT_EQ(store->ListEvents(std::nullopt, 0, 10)->at(0).seq, 1);
}

// The server ends the store's connection (a restart, a fail-over of the database): the call
// that sees it may fail with kUnavailable, and the store reconnects for the next ones.
TEST_F(PostgresStoreTest, ReconnectsAfterTheServerDropsTheConnection) {
  const std::string app = "gf_reconnect_" + schema_.schema().substr(8);
  auto store = OpenPostgresStore(schema_.StoreUrl("&application_name=" + app));
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  ASSERT_TRUE((*store)->Commit({.jobs = {MinimalJob(1)}}).ok());
  EXPECT_EQ(schema_.Query("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                          "WHERE application_name = '" +
                          app + "'"),
            "1");
  Status first = (*store)->Commit({.jobs = {MinimalJob(2)}});
  if (!first.ok()) {
    EXPECT_EQ(first.error().code, ErrorCode::kUnavailable) << first.error().ToString();
  }
  Status second = (*store)->Commit({.jobs = {MinimalJob(3)}});
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  auto jobs = (*store)->ListJobs({});
  ASSERT_TRUE(jobs.ok()) << jobs.error().ToString();
  EXPECT_EQ(jobs->front().id, JobId(3));
}

// --- What needs no server ---

TEST(PostgresUrlTest, TakesTheSchemaOutAndHidesThePassword) {
  auto url = ParsePostgresUrl(
      "postgresql://gf:s3cret@db.example:5433/fleet?schema=prod_1&sslmode=require", "");
  ASSERT_TRUE(url.ok()) << url.error().ToString();
  EXPECT_EQ(url->schema, "prod_1");
  EXPECT_EQ(url->conninfo,
            "postgresql://gf:s3cret@db.example:5433/fleet?sslmode=require&connect_timeout=10"
            "&application_name=gpufleet");
  EXPECT_EQ(url->display,
            "postgresql://gf:***@db.example:5433/fleet?schema=prod_1&sslmode=require");
  EXPECT_EQ(ParsePostgresUrl("postgres://h/db", "")->schema, "public");
  EXPECT_EQ(ParsePostgresUrl("postgres://h/db?schema=a", "b")->schema, "b");
  EXPECT_EQ(ParsePostgresUrl("postgres://h/db?connect_timeout=3", "")->conninfo,
            "postgres://h/db?connect_timeout=3&application_name=gpufleet");
}

TEST(PostgresUrlTest, RefusesBadSchemasAndOtherSchemes) {
  for (const char* bad : {"postgresql://h/db?schema=",
                          "postgresql://h/db?schema=Prod",
                          "postgresql://h/db?schema=a;drop",
                          "postgresql://h/db?schema=1a"}) {
    auto url = ParsePostgresUrl(bad, "");
    ASSERT_FALSE(url.ok()) << bad;
    EXPECT_EQ(url.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(url.error().message, HasSubstr("is not a plain name")) << bad;
  }
  auto mysql = ParsePostgresUrl("mysql://u:pw@h/db", "");
  ASSERT_FALSE(mysql.ok());
  EXPECT_THAT(mysql.error().message, HasSubstr("is not a PostgreSQL URL"));
  EXPECT_THAT(mysql.error().message, Not(HasSubstr("pw")));
}

// Nothing listens on port 1 of 127.0.0.1: the error says where gpufleet tried, not the password.
TEST(PostgresOpenTest, ConnectionRefusedNamesHostAndPortButNotThePassword) {
  auto store = OpenPostgresStore("postgresql://gf:s3cret@127.0.0.1:1/fleet");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(store.error().message, HasSubstr("127.0.0.1"));
  EXPECT_THAT(store.error().message, HasSubstr("port 1"));
  EXPECT_THAT(store.error().message, HasSubstr("postgresql://gf:***@127.0.0.1:1/fleet"));
  EXPECT_THAT(store.error().message, Not(HasSubstr("s3cret")));
}

TEST(OpenStoreTest, PicksTheBackendFromTheDbValue) {
  TempDir dir;
  const auto fallback = dir.path() / "default.db";
  ASSERT_TRUE(OpenStore("", fallback).ok());
  EXPECT_TRUE(std::filesystem::exists(fallback));
  ASSERT_TRUE(OpenStore("sqlite:" + (dir.path() / "a.db").string(), fallback).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "a.db"));
  ASSERT_TRUE(OpenStore((dir.path() / "b.db").string(), fallback).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "b.db"));
  // A PostgreSQL URL goes to PostgreSQL (nothing listens on port 1: its error proves it).
  auto pg = OpenStore("postgres://u:pw@127.0.0.1:1/db", fallback);
  ASSERT_FALSE(pg.ok());
  EXPECT_EQ(pg.error().code, ErrorCode::kUnavailable);
  for (const char* bad : {"mysql://u:pw@h/db", "postgresq://h/db", "sqlite:"}) {
    auto store = OpenStore(bad, fallback);
    ASSERT_FALSE(store.ok()) << bad;
    EXPECT_EQ(store.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_THAT(store.error().message, HasSubstr("--db")) << bad;
    EXPECT_THAT(store.error().message, HasSubstr("postgresql://USER@HOST:PORT/DB")) << bad;
    EXPECT_THAT(store.error().message, Not(HasSubstr("pw"))) << bad;
  }
  EXPECT_EQ(DescribeStore("postgresql://u:pw@h/db", fallback), "postgresql://u:***@h/db");
  EXPECT_EQ(DescribeStore("", fallback), fallback.string());
}

}  // namespace
}  // namespace gf::testing
