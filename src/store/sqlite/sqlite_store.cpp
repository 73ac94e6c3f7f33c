#include "store/sqlite/sqlite_store.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/sqlite/migrations.h"
#include "store/sqlite/sqlite_rows.h"
#include "store/sqlite/sqlite_util.h"
#include "store/validation.h"

namespace gf {
namespace {

// The statements every call uses, prepared once when the store opens.
struct CachedStatements {
  SqliteStatement begin;
  SqliteStatement commit;
  SqliteStatement rollback;
  SqliteStatement upsert_job;
  SqliteStatement insert_event;
  SqliteStatement upsert_node;
  SqliteStatement upsert_gpu_minute;
  SqliteStatement get_job;
  SqliteStatement max_job_id;
  SqliteStatement max_event_seq;
  SqliteStatement list_nodes;
  SqliteStatement list_gpu_minutes;
  SqliteStatement list_gpu_minutes_of;
  SqliteStatement insert_usage;
  SqliteStatement sum_usage;
  SqliteStatement list_usage;
  SqliteStatement upsert_token;
  SqliteStatement get_token;
  SqliteStatement list_tokens;
  SqliteStatement upsert_subscription;
  SqliteStatement delete_subscription;
  SqliteStatement list_subscriptions;
};

Result<CachedStatements> PrepareStatements(sqlite3* db) {
  auto prepare = [db](std::string_view sql) {
    return SqliteStatement::Prepare(db, sql, true);
  };
  const std::string cols_jobs(kJobColumns);
  const std::string cols_nodes(kNodeColumns);
  // BEGIN IMMEDIATE takes the write lock up front: a batch never fails half-way because
  // another writer got in between its reads and its writes.
  GF_ASSIGN_OR_RETURN(SqliteStatement begin, prepare("BEGIN IMMEDIATE"));
  GF_ASSIGN_OR_RETURN(SqliteStatement commit, prepare("COMMIT"));
  GF_ASSIGN_OR_RETURN(SqliteStatement rollback, prepare("ROLLBACK"));
  GF_ASSIGN_OR_RETURN(SqliteStatement upsert_job, prepare(kUpsertJobSql));
  GF_ASSIGN_OR_RETURN(SqliteStatement insert_event, prepare(kInsertEventSql));
  GF_ASSIGN_OR_RETURN(SqliteStatement upsert_node, prepare(kUpsertNodeSql));
  GF_ASSIGN_OR_RETURN(SqliteStatement upsert_gpu_minute, prepare(kUpsertGpuMinuteSql));
  GF_ASSIGN_OR_RETURN(SqliteStatement get_job,
                      prepare("SELECT " + cols_jobs + " FROM jobs WHERE id = ?1"));
  // sqlite_sequence holds the largest key ever inserted (AUTOINCREMENT), which outlives
  // deleted rows; MAX() covers a table written before sqlite_sequence had its row.
  GF_ASSIGN_OR_RETURN(
      SqliteStatement max_job_id,
      prepare("SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'jobs'), 0), "
              "COALESCE((SELECT MAX(id) FROM jobs), 0))"));
  GF_ASSIGN_OR_RETURN(
      SqliteStatement max_event_seq,
      prepare("SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0), "
              "COALESCE((SELECT MAX(seq) FROM events), 0))"));
  GF_ASSIGN_OR_RETURN(SqliteStatement list_nodes,
                      prepare("SELECT " + cols_nodes + " FROM nodes ORDER BY name"));
  GF_ASSIGN_OR_RETURN(SqliteStatement list_gpu_minutes, prepare(ListGpuMinutesSql()));
  GF_ASSIGN_OR_RETURN(SqliteStatement list_gpu_minutes_of, prepare(ListGpuMinutesOfSql()));
  GF_ASSIGN_OR_RETURN(SqliteStatement insert_usage, prepare(kInsertUsageSql));
  GF_ASSIGN_OR_RETURN(SqliteStatement sum_usage, prepare(kSumUsageSql));
  GF_ASSIGN_OR_RETURN(SqliteStatement list_usage, prepare(ListUsageSql()));
  const std::string cols_tokens(kTokenColumns);
  GF_ASSIGN_OR_RETURN(SqliteStatement upsert_token, prepare(kUpsertTokenSql));
  GF_ASSIGN_OR_RETURN(SqliteStatement get_token,
                      prepare("SELECT " + cols_tokens + " FROM tokens WHERE id = ?1"));
  GF_ASSIGN_OR_RETURN(SqliteStatement list_tokens,
                      prepare("SELECT " + cols_tokens + " FROM tokens ORDER BY id"));
  GF_ASSIGN_OR_RETURN(SqliteStatement upsert_subscription, prepare(kUpsertSubscriptionSql));
  GF_ASSIGN_OR_RETURN(SqliteStatement delete_subscription, prepare(kDeleteSubscriptionSql));
  GF_ASSIGN_OR_RETURN(
      SqliteStatement list_subscriptions,
      prepare("SELECT " + std::string(kSubscriptionColumns) + " FROM subscriptions ORDER BY id"));
  return CachedStatements{std::move(begin),
                          std::move(commit),
                          std::move(rollback),
                          std::move(upsert_job),
                          std::move(insert_event),
                          std::move(upsert_node),
                          std::move(upsert_gpu_minute),
                          std::move(get_job),
                          std::move(max_job_id),
                          std::move(max_event_seq),
                          std::move(list_nodes),
                          std::move(list_gpu_minutes),
                          std::move(list_gpu_minutes_of),
                          std::move(insert_usage),
                          std::move(sum_usage),
                          std::move(list_usage),
                          std::move(upsert_token),
                          std::move(get_token),
                          std::move(list_tokens),
                          std::move(upsert_subscription),
                          std::move(delete_subscription),
                          std::move(list_subscriptions)};
}

// ListJobs has three optional filters; each combination gets its own statement (built on first
// use, then cached) so that SQLite can use the index that fits, which one statement with
// "(?1 IS NULL OR uid = ?1)" terms would prevent.
constexpr unsigned kByUid = 1;
constexpr unsigned kActiveOnly = 2;
constexpr unsigned kBefore = 4;
constexpr unsigned kByArray = 8;

std::string ListJobsSql(unsigned filters) {
  std::string sql = "SELECT " + std::string(kJobColumns) + " FROM jobs WHERE 1";
  if ((filters & kByUid) != 0) {
    sql += " AND uid = :uid";
  }
  if ((filters & kActiveOnly) != 0) {  // as in index jobs_active
    sql += " AND terminal = 0";
  }
  if ((filters & kBefore) != 0) {
    sql += " AND id < :before";
  }
  if ((filters & kByArray) != 0) {  // index jobs_by_array
    sql += " AND array_job = :array_job";
  }
  return sql + " ORDER BY id DESC LIMIT :limit";
}

Result<std::unique_ptr<StoreReader>> OpenReadOnly(const std::string& db_file,
                                                  const SqliteStoreOptions& options);

class SqliteStore final : public Store {
 public:
  SqliteStore(SqliteHandle db,
              std::string name,
              CachedStatements statements,
              const SqliteStoreOptions& options,
              bool read_only)
      : db_(std::move(db)),
        name_(std::move(name)),
        stmts_(std::move(statements)),
        options_(options),
        read_only_(read_only) {}

  Status Commit(const StoreBatch& batch) override;
  Result<std::unique_ptr<StoreReader>> OpenReader() override {
    return OpenReadOnly(name_, options_);
  }
  Result<std::optional<Job>> GetJob(JobId id) override;
  Result<std::vector<Job>> ListJobs(const JobQuery& query) override;
  Result<std::vector<Job>> ListJobHistory(const JobHistoryQuery& query) override;
  Result<std::int64_t> MaxJobId() override { return QueryMax(stmts_.max_job_id, "max job id"); }
  Result<std::vector<Node>> ListNodes() override;
  Result<std::vector<Event>> ListEvents(std::optional<JobId> job,
                                        std::int64_t after_seq,
                                        int limit) override;
  Result<std::vector<GpuMinute>> ListGpuMinutes(Time from, Time to, int limit) override;
  Result<std::vector<GpuMinute>> ListGpuMinutesOf(const GpuUuid& uuid,
                                                  Time from,
                                                  Time to,
                                                  int limit) override;
  Result<std::vector<UsageSum>> SumUsage(Time from, Time to) override;
  Result<std::vector<UsageRecord>> ListUsage(Time ended_after,
                                             std::int64_t after_seq,
                                             int limit) override;
  Result<std::optional<ApiToken>> GetToken(const std::string& id) override;
  Result<std::vector<ApiToken>> ListTokens() override;
  Result<std::vector<Subscription>> ListSubscriptions() override;
  Result<std::int64_t> MaxEventSeq() override {
    return QueryMax(stmts_.max_event_seq, "max event seq");
  }
  Result<LeaseAttempt> AcquireLease(const std::string& holder,
                                    Time now,
                                    std::chrono::milliseconds ttl) override;
  Status RenewLease(std::int64_t epoch, Time now, std::chrono::milliseconds ttl) override;
  void FenceWith(std::int64_t epoch) override { fence_ = epoch; }

 private:
  // The lease row, if any (inside the caller's transaction, or alone).
  Result<std::optional<LeaseHolder>> ReadLease();
  // Inside Commit's transaction: kFailedPrecondition unless fence_ still holds the lease.
  Status CheckFence();
  // Runs `body` in one BEGIN IMMEDIATE transaction: committed when it returns OK, rolled back
  // otherwise.
  Status InTransaction(std::string_view what, const std::function<Status()>& body);
  Status WriteBatch(const StoreBatch& batch);
  Result<std::int64_t> QueryMax(SqliteStatement& stmt, std::string_view operation);
  // Steps `stmt` (bound, selecting kGpuMinuteColumns) to its end.
  Result<std::vector<GpuMinute>> ReadGpuMinutes(SqliteStatement& stmt) const;
  // Every row `stmt` (bound) yields, decoded as jobs.
  Result<std::vector<Job>> ReadJobs(SqliteStatement& stmt, std::string_view operation);
  // A statement from `cache`, preparing it from `sql` on first use.
  Result<SqliteStatement*> Cached(std::optional<SqliteStatement>& cache, const std::string& sql);
  // `error` with this store's path in front, for the controller's log.
  Error InStore(const Error& error) const {
    return MakeError(error.code, "store '" + name_ + "': " + error.message);
  }

  // Declared first so that it is destroyed last: statements must be finalized before the
  // connection closes.
  SqliteHandle db_;
  std::string name_;  // the file's path, for messages
  CachedStatements stmts_;
  std::array<std::optional<SqliteStatement>, 16> list_jobs_;   // by filter bits
  std::array<std::optional<SqliteStatement>, 2> list_events_;  // [all, one job]
  std::optional<SqliteStatement> read_lease_;
  std::optional<SqliteStatement> write_lease_;
  std::optional<SqliteStatement> renew_lease_;
  std::optional<std::int64_t> fence_;  // FenceWith
  SqliteStoreOptions options_;         // for OpenReader
  bool read_only_;                     // an OpenReader connection: no writes
};

Status SqliteStore::Commit(const StoreBatch& batch) {
  if (batch.empty()) {
    return OkStatus();
  }
  if (read_only_) {
    return InStore(FailedPrecondition("commit: a read-only connection"));
  }
  // Before the transaction: a row the schema cannot judge (a NaN) refuses the batch whole.
  if (Status valid = ValidateBatch(batch); !valid.ok()) {
    return InStore(valid.error());
  }
  return InTransaction("commit", [&]() -> Status {
    GF_TRY(CheckFence());
    return WriteBatch(batch);
  });
}

Status SqliteStore::InTransaction(std::string_view what, const std::function<Status()>& body) {
  Status status = [&]() -> Status {
    ScopedReset reset_begin(stmts_.begin);
    return stmts_.begin.Run(std::string(what) + ": begin transaction");
  }();
  if (status.ok()) {
    status = body();
  }
  if (status.ok()) {
    ScopedReset reset_commit(stmts_.commit);
    status = stmts_.commit.Run(std::string(what) + ": commit transaction");
  }
  // SQLite ends the transaction by itself after some errors (disk full, I/O); roll back only
  // when one is still open.
  if (!status.ok() && sqlite3_get_autocommit(db_.get()) == 0) {
    ScopedReset reset_rollback(stmts_.rollback);
    // The first error is the one that explains the failure; report that one.
    static_cast<void>(stmts_.rollback.Run(std::string(what) + ": roll back"));
  }
  return status.ok() ? status : InStore(status.error());
}

Result<std::optional<LeaseHolder>> SqliteStore::ReadLease() {
  GF_ASSIGN_OR_RETURN(
      SqliteStatement * stmt,
      Cached(read_lease_, "SELECT holder, epoch, expires_ms FROM leader WHERE id = 1"));
  ScopedReset reset(*stmt);
  GF_ASSIGN_OR_RETURN(bool row, stmt->Step("read the lease"));
  if (!row) {
    return std::optional<LeaseHolder>();
  }
  return std::optional<LeaseHolder>(LeaseHolder{
      .holder = stmt->Text(0), .epoch = stmt->Int64(1), .expires = FromUnixMillis(stmt->Int64(2))});
}

Status SqliteStore::CheckFence() {
  if (!fence_) {
    return OkStatus();
  }
  GF_ASSIGN_OR_RETURN(std::optional<LeaseHolder> lease, ReadLease());
  return gf::CheckFence(*fence_, lease);
}

Result<LeaseAttempt> SqliteStore::AcquireLease(const std::string& holder,
                                               Time now,
                                               std::chrono::milliseconds ttl) {
  if (read_only_) {
    return InStore(FailedPrecondition("acquire the lease: a read-only connection"));
  }
  LeaseAttempt attempt;
  Status status = InTransaction("acquire the lease", [&]() -> Status {
    GF_ASSIGN_OR_RETURN(std::optional<LeaseHolder> current, ReadLease());
    attempt = DecideLease(current, holder, now, ttl);
    if (!attempt.acquired) {
      return OkStatus();  // held by another: nothing to write
    }
    GF_ASSIGN_OR_RETURN(
        SqliteStatement * stmt,
        Cached(write_lease_,
               "INSERT INTO leader (id, holder, epoch, expires_ms) VALUES (1, ?1, ?2, ?3) "
               "ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, epoch = excluded.epoch, "
               "expires_ms = excluded.expires_ms"));
    ScopedReset reset(*stmt);
    stmt->BindText(1, holder);
    stmt->BindInt64(2, attempt.lease.epoch);
    stmt->BindInt64(3, ToUnixMillis(attempt.lease.expires));
    return stmt->Run("acquire the lease");
  });
  if (!status.ok()) {
    return status.error();
  }
  return attempt;
}

Status SqliteStore::RenewLease(std::int64_t epoch, Time now, std::chrono::milliseconds ttl) {
  if (read_only_) {
    return InStore(FailedPrecondition("renew the lease: a read-only connection"));
  }
  GF_ASSIGN_OR_RETURN(
      SqliteStatement * stmt,
      Cached(renew_lease_, "UPDATE leader SET expires_ms = ?1 WHERE id = 1 AND epoch = ?2"));
  ScopedReset reset(*stmt);
  stmt->BindInt64(1, ToUnixMillis(now + ttl));
  stmt->BindInt64(2, epoch);
  if (Status s = stmt->Run("renew the lease"); !s.ok()) {
    return InStore(s.error());
  }
  if (sqlite3_changes(db_.get()) != 1) {
    return InStore(FailedPrecondition("lost the lease (epoch " + std::to_string(epoch) +
                                      "): another controller took it"));
  }
  return OkStatus();
}

Status SqliteStore::WriteBatch(const StoreBatch& batch) {
  for (const Job& job : batch.jobs) {
    ScopedReset reset(stmts_.upsert_job);
    GF_TRY(BindJob(stmts_.upsert_job, job));
    GF_TRY(stmts_.upsert_job.Run("commit: job " + std::to_string(job.id.value())));
  }
  for (const Event& event : batch.events) {
    ScopedReset reset(stmts_.insert_event);
    BindEvent(stmts_.insert_event, event);
    Status status = stmts_.insert_event.Run("commit: event");
    if (!status.ok()) {
      std::string about = event.job.has_value() ? " for job " + std::to_string(event.job->value()) +
                                                      " (is the job stored?)"
                                                : "";
      return MakeError(
          status.error().code,
          "commit: event '" + event.kind + "'" + about + ": " + status.error().message);
    }
  }
  for (const Node& node : batch.nodes) {
    ScopedReset reset(stmts_.upsert_node);
    GF_TRY(BindNode(stmts_.upsert_node, node));
    GF_TRY(stmts_.upsert_node.Run("commit: node '" + node.name.value() + "'"));
  }
  for (const GpuMinute& row : batch.gpu_minutes) {
    ScopedReset reset(stmts_.upsert_gpu_minute);
    BindGpuMinute(stmts_.upsert_gpu_minute, row);
    GF_TRY(stmts_.upsert_gpu_minute.Run("commit: gpu minute (GPU '" + row.uuid.value() +
                                        "', minute " + std::to_string(ToUnixMillis(row.minute)) +
                                        " ms)"));
  }
  for (const UsageRecord& record : batch.usage) {
    ScopedReset reset(stmts_.insert_usage);
    GF_TRY(BindUsageRecord(stmts_.insert_usage, record));
    GF_TRY(stmts_.insert_usage.Run("commit: usage of job " + std::to_string(record.job.value())));
  }
  for (const ApiToken& token : batch.tokens) {
    ScopedReset reset(stmts_.upsert_token);
    BindToken(stmts_.upsert_token, token);
    GF_TRY(stmts_.upsert_token.Run("commit: token '" + token.id + "'"));
  }
  for (const Subscription& sub : batch.subscriptions) {
    ScopedReset reset(stmts_.upsert_subscription);
    BindSubscription(stmts_.upsert_subscription, sub);
    GF_TRY(stmts_.upsert_subscription.Run("commit: subscription '" + sub.id + "'"));
  }
  for (const std::string& id : batch.removed_subscriptions) {
    ScopedReset reset(stmts_.delete_subscription);
    stmts_.delete_subscription.BindText(1, id);
    GF_TRY(stmts_.delete_subscription.Run("commit: remove subscription '" + id + "'"));
  }
  return OkStatus();
}

Result<std::optional<Job>> SqliteStore::GetJob(JobId id) {
  SqliteStatement& stmt = stmts_.get_job;
  ScopedReset reset(stmt);
  stmt.BindInt64(1, id.value());
  GF_ASSIGN_OR_RETURN(bool row, stmt.Step("get job"));
  if (!row) {
    return std::optional<Job>();
  }
  auto job = DecodeJob(stmt);
  if (!job.ok()) {
    return InStore(job.error());
  }
  return std::optional<Job>(std::move(job).value());
}

Result<std::vector<Job>> SqliteStore::ListJobs(const JobQuery& query) {
  if (query.limit <= 0) {
    return InvalidArgument("list jobs: limit must be positive, got " + std::to_string(query.limit));
  }
  unsigned filters = (query.uid.has_value() ? kByUid : 0) | (query.active_only ? kActiveOnly : 0) |
                     (query.before.has_value() ? kBefore : 0) |
                     (query.array_job.has_value() ? kByArray : 0);
  GF_ASSIGN_OR_RETURN(SqliteStatement * stmt, Cached(list_jobs_[filters], ListJobsSql(filters)));
  ScopedReset reset(*stmt);
  if (query.uid.has_value()) {
    stmt->BindInt64(stmt->ParameterIndex(":uid"), *query.uid);
  }
  if (query.before.has_value()) {
    stmt->BindInt64(stmt->ParameterIndex(":before"), query.before->value());
  }
  if (query.array_job.has_value()) {
    stmt->BindInt64(stmt->ParameterIndex(":array_job"), query.array_job->value());
  }
  stmt->BindInt64(stmt->ParameterIndex(":limit"), query.limit);
  return ReadJobs(*stmt, "list jobs");
}

Result<std::vector<Job>> SqliteStore::ReadJobs(SqliteStatement& stmt, std::string_view operation) {
  std::vector<Job> jobs;
  while (true) {
    GF_ASSIGN_OR_RETURN(bool row, stmt.Step(operation));
    if (!row) {
      return jobs;
    }
    auto job = DecodeJob(stmt);
    if (!job.ok()) {
      return InStore(job.error());
    }
    jobs.push_back(std::move(job).value());
  }
}

// Prepared for each page: its filters vary (a list of states), and preparing is a small part
// of a page's time next to reading its rows.
Result<std::vector<Job>> SqliteStore::ListJobHistory(const JobHistoryQuery& query) {
  GF_TRY(ValidateJobHistoryQuery(query));
  GF_ASSIGN_OR_RETURN(SqliteStatement stmt,
                      SqliteStatement::Prepare(db_.get(), JobHistorySql(query), false));
  BindJobHistory(stmt, query);
  return ReadJobs(stmt, "job history");
}

Result<std::vector<Node>> SqliteStore::ListNodes() {
  SqliteStatement& stmt = stmts_.list_nodes;
  ScopedReset reset(stmt);
  std::vector<Node> nodes;
  while (true) {
    GF_ASSIGN_OR_RETURN(bool row, stmt.Step("list nodes"));
    if (!row) {
      return nodes;
    }
    auto node = DecodeNode(stmt);
    if (!node.ok()) {
      return InStore(node.error());
    }
    nodes.push_back(std::move(node).value());
  }
}

Result<std::vector<Event>> SqliteStore::ListEvents(std::optional<JobId> job,
                                                   std::int64_t after_seq,
                                                   int limit) {
  if (limit <= 0) {
    return InvalidArgument("list events: limit must be positive, got " + std::to_string(limit));
  }
  const std::string sql = "SELECT " + std::string(kEventColumns) + " FROM events WHERE seq > ?1" +
                          (job.has_value() ? " AND job_id = ?3" : "") + " ORDER BY seq LIMIT ?2";
  GF_ASSIGN_OR_RETURN(SqliteStatement * stmt, Cached(list_events_[job.has_value() ? 1 : 0], sql));
  ScopedReset reset(*stmt);
  stmt->BindInt64(1, after_seq);
  stmt->BindInt64(2, limit);
  if (job.has_value()) {
    stmt->BindInt64(3, job->value());
  }
  std::vector<Event> events;
  while (true) {
    GF_ASSIGN_OR_RETURN(bool row, stmt->Step("list events"));
    if (!row) {
      return events;
    }
    events.push_back(DecodeEvent(*stmt));
  }
}

Result<std::vector<GpuMinute>> SqliteStore::ListGpuMinutes(Time from, Time to, int limit) {
  GF_TRY(ValidateGpuMinuteRange(from, to, limit));
  SqliteStatement& stmt = stmts_.list_gpu_minutes;
  ScopedReset reset(stmt);
  stmt.BindInt64(1, ToUnixMillis(from));
  stmt.BindInt64(2, ToUnixMillis(to));
  stmt.BindInt64(3, limit);
  return ReadGpuMinutes(stmt);
}

Result<std::vector<GpuMinute>> SqliteStore::ListGpuMinutesOf(const GpuUuid& uuid,
                                                             Time from,
                                                             Time to,
                                                             int limit) {
  GF_TRY(ValidateGpuMinuteRange(from, to, limit));
  SqliteStatement& stmt = stmts_.list_gpu_minutes_of;
  ScopedReset reset(stmt);
  stmt.BindText(1, uuid.value());
  stmt.BindInt64(2, ToUnixMillis(from));
  stmt.BindInt64(3, ToUnixMillis(to));
  stmt.BindInt64(4, limit);
  return ReadGpuMinutes(stmt);
}

Result<std::vector<GpuMinute>> SqliteStore::ReadGpuMinutes(SqliteStatement& stmt) const {
  std::vector<GpuMinute> rows;
  while (true) {
    GF_ASSIGN_OR_RETURN(bool row, stmt.Step("list gpu minutes"));
    if (!row) {
      return rows;
    }
    auto minute = DecodeGpuMinute(stmt);
    if (!minute.ok()) {
      return InStore(minute.error());
    }
    rows.push_back(std::move(minute).value());
  }
}

Result<std::vector<UsageSum>> SqliteStore::SumUsage(Time from, Time to) {
  GF_TRY(ValidateUsageRange(from, to));
  SqliteStatement& stmt = stmts_.sum_usage;
  ScopedReset reset(stmt);
  stmt.BindInt64(1, ToUnixMillis(from));
  stmt.BindInt64(2, ToUnixMillis(to));
  std::vector<UsageSum> sums;
  while (true) {
    GF_ASSIGN_OR_RETURN(bool row, stmt.Step("sum usage"));
    if (!row) {
      return sums;
    }
    sums.push_back(UsageSum{.team = stmt.Text(0),
                            .user = stmt.Text(1),
                            .gpu_seconds = stmt.Double(2),
                            .energy_mj = std::llround(stmt.Double(3))});
  }
}

Result<std::vector<UsageRecord>> SqliteStore::ListUsage(Time ended_after,
                                                        std::int64_t after_seq,
                                                        int limit) {
  if (limit <= 0) {
    return InvalidArgument("list usage: limit must be positive, got " + std::to_string(limit));
  }
  SqliteStatement& stmt = stmts_.list_usage;
  ScopedReset reset(stmt);
  stmt.BindInt64(1, ToUnixMillis(ended_after));
  stmt.BindInt64(2, after_seq);
  stmt.BindInt64(3, limit);
  std::vector<UsageRecord> records;
  while (true) {
    GF_ASSIGN_OR_RETURN(bool row, stmt.Step("list usage"));
    if (!row) {
      return records;
    }
    auto record = DecodeUsageRecord(stmt);
    if (!record.ok()) {
      return InStore(record.error());
    }
    records.push_back(std::move(record).value());
  }
}

Result<std::optional<ApiToken>> SqliteStore::GetToken(const std::string& id) {
  SqliteStatement& stmt = stmts_.get_token;
  ScopedReset reset(stmt);
  stmt.BindText(1, id);
  GF_ASSIGN_OR_RETURN(bool row, stmt.Step("get token"));
  if (!row) {
    return std::optional<ApiToken>();
  }
  auto token = DecodeToken(stmt);
  if (!token.ok()) {
    return InStore(token.error());
  }
  return std::optional<ApiToken>(std::move(token).value());
}

Result<std::vector<ApiToken>> SqliteStore::ListTokens() {
  SqliteStatement& stmt = stmts_.list_tokens;
  ScopedReset reset(stmt);
  std::vector<ApiToken> tokens;
  while (true) {
    GF_ASSIGN_OR_RETURN(bool row, stmt.Step("list tokens"));
    if (!row) {
      return tokens;
    }
    auto token = DecodeToken(stmt);
    if (!token.ok()) {
      return InStore(token.error());
    }
    tokens.push_back(std::move(token).value());
  }
}

Result<std::vector<Subscription>> SqliteStore::ListSubscriptions() {
  SqliteStatement& stmt = stmts_.list_subscriptions;
  ScopedReset reset(stmt);
  std::vector<Subscription> subs;
  while (true) {
    GF_ASSIGN_OR_RETURN(bool row, stmt.Step("list subscriptions"));
    if (!row) {
      return subs;
    }
    auto sub = DecodeSubscription(stmt);
    if (!sub.ok()) {
      return InStore(sub.error());
    }
    subs.push_back(std::move(sub).value());
  }
}

Result<std::int64_t> SqliteStore::QueryMax(SqliteStatement& stmt, std::string_view operation) {
  ScopedReset reset(stmt);
  GF_ASSIGN_OR_RETURN(bool row, stmt.Step(operation));
  if (!row) {
    return Internal(std::string(operation) + ": no row");
  }
  return stmt.Int64(0);
}

Result<SqliteStatement*> SqliteStore::Cached(std::optional<SqliteStatement>& cache,
                                             const std::string& sql) {
  if (!cache.has_value()) {
    GF_ASSIGN_OR_RETURN(SqliteStatement stmt, SqliteStatement::Prepare(db_.get(), sql, true));
    cache.emplace(std::move(stmt));
  }
  return &*cache;
}

// Creates the missing folders above `file`, each with mode 0700 (mkdir applies the umask,
// which can only narrow it). Existing folders are left as they are: they are the admin's.
Status CreateParentFolders(const std::filesystem::path& file) {
  std::filesystem::path folder;
  for (const auto& part : file.parent_path()) {
    folder /= part;
    struct stat st {};
    if (::stat(folder.c_str(), &st) == 0) {
      continue;
    }
    if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
      const int err = errno;
      return IoError("create folder '" + folder.string() + "': " + ErrnoText(err));
    }
  }
  return OkStatus();
}

// Reads a PRAGMA's value as text ("wal", "2", "1").
Result<std::string> Pragma(sqlite3* db, const std::string& pragma, std::string_view operation) {
  GF_ASSIGN_OR_RETURN(SqliteStatement stmt,
                      SqliteStatement::Prepare(db, "PRAGMA " + pragma, false));
  GF_ASSIGN_OR_RETURN(bool row, stmt.Step(operation));
  if (!row) {
    return std::string();
  }
  return stmt.Text(0);
}

// Sets and checks the settings the store's promises rest on. The first statement is also the
// first read of the file, so a file that is not a database fails here.
Status ConfigureConnection(sqlite3* db) {
  GF_ASSIGN_OR_RETURN(std::string mode, Pragma(db, "journal_mode = WAL", "enable WAL"));
  if (mode != "wal") {
    return Unavailable("enable WAL: SQLite kept journal mode '" + mode +
                       "' (WAL needs a local file system with shared memory)");
  }
  // FULL: in WAL mode, every commit is fsync'd before it returns, so an acknowledged
  // submission survives a power loss. NORMAL would only protect against corruption.
  GF_TRY(SqliteExec(db, "PRAGMA synchronous = FULL", "set synchronous"));
  GF_ASSIGN_OR_RETURN(std::string synchronous, Pragma(db, "synchronous", "read synchronous"));
  // ON: an event must name a stored job (schema v1); a batch that breaks it fails whole.
  GF_TRY(SqliteExec(db, "PRAGMA foreign_keys = ON", "enable foreign keys"));
  GF_ASSIGN_OR_RETURN(std::string fk, Pragma(db, "foreign_keys", "read foreign_keys"));
  if (synchronous != "2" || fk != "1") {
    return Internal("SQLite did not accept synchronous=FULL (" + synchronous +
                    ") and foreign_keys=ON (" + fk + ")");
  }
  return OkStatus();
}

// Opens a connection to `db_file` with `flags`, its busy timeout set.
Result<SqliteHandle> Connect(const std::filesystem::path& db_file,
                             int flags,
                             const SqliteStoreOptions& options) {
  sqlite3* raw = nullptr;
  // NOMUTEX: a connection is used by one thread at a time; SQLite's own locking would only
  // cost time.
  int rc = sqlite3_open_v2(db_file.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteHandle db(raw);  // closes the handle on every path, even when open failed
  if (rc != SQLITE_OK) {
    return SqliteError(db.get(), rc, "open");
  }
  sqlite3_extended_result_codes(db.get(), 1);
  const std::int64_t max_busy_ms = std::int64_t{24} * 3600 * 1000;
  auto busy_ms = std::clamp<std::int64_t>(options.busy_timeout.count(), 0, max_busy_ms);
  sqlite3_busy_timeout(db.get(), static_cast<int>(busy_ms));
  return db;
}

Result<std::unique_ptr<Store>> Open(const std::filesystem::path& db_file,
                                    const SqliteStoreOptions& options) {
  GF_TRY(CreateParentFolders(db_file));
  GF_TRY(CreatePrivateFile(db_file));
  GF_ASSIGN_OR_RETURN(SqliteHandle db, Connect(db_file, SQLITE_OPEN_READWRITE, options));
  GF_TRY(ConfigureConnection(db.get()));
  GF_TRY(ApplyMigrations(db.get(), SqliteMigrations()));
  GF_ASSIGN_OR_RETURN(CachedStatements statements, PrepareStatements(db.get()));
  return std::unique_ptr<Store>(std::make_unique<SqliteStore>(
      std::move(db), db_file.string(), std::move(statements), options, /*read_only=*/false));
}

// A second connection on the WAL database its Store opened (and migrated): SQLITE_OPEN_READONLY
// and query_only, so nothing can write through it. In WAL mode its reads do not wait for the
// writer, nor the writer for them; each statement reads the last committed state.
Result<std::unique_ptr<StoreReader>> OpenReadOnly(const std::string& db_file,
                                                  const SqliteStoreOptions& options) {
  auto opened = [&]() -> Result<std::unique_ptr<StoreReader>> {
    GF_ASSIGN_OR_RETURN(SqliteHandle db, Connect(db_file, SQLITE_OPEN_READONLY, options));
    GF_TRY(SqliteExec(db.get(), "PRAGMA query_only = 1", "set query_only"));
    GF_ASSIGN_OR_RETURN(CachedStatements statements, PrepareStatements(db.get()));
    return std::unique_ptr<StoreReader>(std::make_unique<SqliteStore>(
        std::move(db), db_file, std::move(statements), options, /*read_only=*/true));
  }();
  if (!opened.ok()) {
    return MakeError(opened.error().code,
                     "store '" + db_file + "': open a read connection: " + opened.error().message);
  }
  return opened;
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::filesystem::path& db_file,
                                               const SqliteStoreOptions& options) {
  auto store = Open(db_file, options);
  if (!store.ok()) {
    return MakeError(store.error().code,
                     "store '" + db_file.string() + "': " + store.error().message);
  }
  return store;
}

}  // namespace gf
