#include "store/postgres/postgres_store.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pqxx/pqxx>

#include "store/postgres/postgres_migrations.h"
#include "store/postgres/postgres_util.h"
#include "store/rows.h"
#include "store/sqlite/sqlite_rows.h"
#include "store/validation.h"

namespace gf {
namespace {

// SQLite's "?N" parameters as PostgreSQL's "$N": the statements whose text is the same in both
// dialects (upserts by ON CONFLICT ... excluded, plain SELECTs) are written once.
std::string DollarParams(std::string_view sql) {
  std::string out(sql);
  std::replace(out.begin(), out.end(), '?', '$');
  return out;
}

// The statements this store prepares on its connection, by name. libpqxx prepares each on
// first use, and again after a reconnect.
struct Prepared {
  std::string_view name;
  std::string sql;
};

constexpr std::string_view kReserveSeqs =
    "UPDATE store_counters SET value = value + $2 WHERE name = $1 RETURNING value";

// SumUsage as in sqlite_rows.cpp, with LEAST/GREATEST for SQLite's two-argument MIN/MAX.
constexpr std::string_view kSumUsageSql = R"sql(
SELECT team, user_name,
       SUM(CASE WHEN end_ms = start_ms THEN gpu_seconds
                ELSE gpu_seconds * (LEAST(end_ms, $2) - GREATEST(start_ms, $1)) / (end_ms - start_ms)
           END),
       SUM(CASE WHEN end_ms = start_ms THEN CAST(energy_mj AS DOUBLE PRECISION)
                ELSE CAST(energy_mj AS DOUBLE PRECISION) * (LEAST(end_ms, $2) - GREATEST(start_ms, $1)) /
                     (end_ms - start_ms)
           END)
FROM usage_records
WHERE start_ms < $2 AND (end_ms > $1 OR (end_ms = start_ms AND start_ms >= $1))
GROUP BY team, user_name
ORDER BY team, user_name
)sql";

// ON CONFLICT on the (uuid, minute) identity: a GPU reported under a new node name replaces
// its row for that minute, node included (see kUpsertGpuMinuteSql for SQLite).
constexpr std::string_view kUpsertGpuMinuteSql = R"sql(
INSERT INTO gpu_minutes (minute_ms, node, uuid, job_id, user_name, team, samples, util_mean_pct,
                         util_max_pct, memory_used_max_mib, power_mean_w, energy_mj, health,
                         allocated_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
ON CONFLICT (uuid, minute_ms) DO UPDATE SET
  node = excluded.node, job_id = excluded.job_id, user_name = excluded.user_name,
  team = excluded.team, samples = excluded.samples, util_mean_pct = excluded.util_mean_pct,
  util_max_pct = excluded.util_max_pct, memory_used_max_mib = excluded.memory_used_max_mib,
  power_mean_w = excluded.power_mean_w, energy_mj = excluded.energy_mj, health = excluded.health,
  allocated_ms = excluded.allocated_ms
)sql";

std::vector<Prepared> Statements() {
  const std::string jobs(kJobColumns);
  const std::string tokens(kTokenColumns);
  return {
      {"upsert_job", DollarParams(kUpsertJobSql)},
      // seq is $6 / $11: after the parameters BindEvent / BindUsageRecord set.
      {"insert_event",
       "INSERT INTO events (time_ms, job_id, kind, actor, message, seq) "
       "VALUES ($1, $2, $3, $4, $5, $6)"},
      {"insert_usage",
       "INSERT INTO usage_records (job_id, start_ms, end_ms, team, user_name, priority, gpus, "
       "gpu_models, gpu_seconds, energy_mj, seq) "
       "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"},
      {"upsert_node", DollarParams(kUpsertNodeSql)},
      {"upsert_gpu_minute", std::string(kUpsertGpuMinuteSql)},
      {"upsert_token", DollarParams(kUpsertTokenSql)},
      {"upsert_subscription", DollarParams(kUpsertSubscriptionSql)},
      {"delete_subscription", DollarParams(kDeleteSubscriptionSql)},
      {"list_subscriptions",
       "SELECT " + std::string(kSubscriptionColumns) + " FROM subscriptions ORDER BY id"},
      {"reserve_seqs", std::string(kReserveSeqs)},
      {"raise_max_job_id",
       "UPDATE store_counters SET value = GREATEST(value, $1) WHERE name = 'max_job_id'"},
      {"read_counter", "SELECT value FROM store_counters WHERE name = $1"},
      {"get_job", "SELECT " + jobs + " FROM jobs WHERE id = $1"},
      {"list_nodes", "SELECT " + std::string(kNodeColumns) + " FROM nodes ORDER BY name"},
      {"list_gpu_minutes", DollarParams(ListGpuMinutesSql())},
      {"list_gpu_minutes_of", DollarParams(ListGpuMinutesOfSql())},
      {"sum_usage", std::string(kSumUsageSql)},
      {"list_usage", DollarParams(ListUsageSql())},
      {"get_token", "SELECT " + tokens + " FROM tokens WHERE id = $1"},
      {"list_tokens", "SELECT " + tokens + " FROM tokens ORDER BY id"},
      {"list_events_all",
       "SELECT " + std::string(kEventColumns) +
           " FROM events WHERE seq > $1 ORDER BY seq LIMIT $2"},
      {"list_events_job",
       "SELECT " + std::string(kEventColumns) +
           " FROM events WHERE seq > $1 AND job_id = $3 ORDER BY seq LIMIT $2"},
  };
}

// ListJobs has optional filters; each combination is its own statement (as in SQLite) so the
// planner picks the index that fits. $1 is the limit; the filters take the next numbers.
constexpr unsigned kByUid = 1;
constexpr unsigned kActiveOnly = 2;
constexpr unsigned kBefore = 4;
constexpr unsigned kByArray = 8;
constexpr unsigned kFilterCombinations = 16;

std::string ListJobsName(unsigned filters) {
  return "list_jobs_" + std::to_string(filters);
}

std::string ListJobsSql(unsigned filters) {
  std::string sql = "SELECT " + std::string(kJobColumns) + " FROM jobs WHERE TRUE";
  int next = 2;
  auto param = [&next] {
    return "$" + std::to_string(next++);
  };
  if ((filters & kByUid) != 0) {
    sql += " AND uid = " + param();
  }
  if ((filters & kActiveOnly) != 0) {
    sql += " AND terminal = 0";
  }
  if ((filters & kBefore) != 0) {
    sql += " AND id < " + param();
  }
  if ((filters & kByArray) != 0) {
    sql += " AND array_job = " + param();
  }
  return sql + " ORDER BY id DESC LIMIT $1";
}

// Session settings, kept by libpqxx and set again on every reconnect. synchronous_commit=on:
// a COMMIT returns once the WAL is flushed (the server's default, but a role or database may
// lower it, and the store's promise rests on it). extra_float_digits=3 and bytea_output=hex:
// the text forms PgRow reads (shortest exact doubles, hex bytes), whatever the server's config.
// A read-only session (Store::OpenReader) refuses every write the server sees.
void ConfigureSession(pqxx::connection& conn, const std::string& schema, bool read_only) {
  conn.set_variable("search_path", "\"" + schema + "\"");
  if (read_only) {
    conn.set_variable("default_transaction_read_only", "on");
  }
  conn.set_variable("synchronous_commit", "on");
  conn.set_variable("extra_float_digits", "3");
  conn.set_variable("bytea_output", "hex");
  for (const Prepared& p : Statements()) {
    conn.prepare(std::string(p.name), p.sql);
  }
  for (unsigned filters = 0; filters < kFilterCombinations; ++filters) {
    conn.prepare(ListJobsName(filters), ListJobsSql(filters));
  }
}

class PostgresStore final : public Store {
 public:
  PostgresStore(std::unique_ptr<pqxx::connection> conn, PostgresUrl url, bool read_only)
      : conn_(std::move(conn)), url_(std::move(url)), read_only_(read_only) {}

  Status Commit(const StoreBatch& batch) override;
  Result<std::unique_ptr<StoreReader>> OpenReader() override;
  Result<std::optional<Job>> GetJob(JobId id) override;
  Result<std::vector<Job>> ListJobs(const JobQuery& query) override;
  Result<std::vector<Job>> ListJobHistory(const JobHistoryQuery& query) override;
  Result<std::int64_t> MaxJobId() override { return ReadCounter("max_job_id", "max job id"); }
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
  Result<std::int64_t> MaxEventSeq() override { return ReadCounter("event_seq", "max event seq"); }
  Result<LeaseAttempt> AcquireLease(const std::string& holder,
                                    Time now,
                                    std::chrono::milliseconds ttl) override;
  Status RenewLease(std::int64_t epoch, Time now, std::chrono::milliseconds ttl) override;
  void FenceWith(std::int64_t epoch) override { fence_ = epoch; }

 private:
  // The lease row, locked until `txn` ends (FOR UPDATE: Acquire; FOR SHARE: Commit's fence,
  // which thus waits for an acquisition under way rather than missing it).
  static std::optional<LeaseHolder> ReadLease(pqxx::work& txn, bool for_update);
  // Inside Commit's transaction: kFailedPrecondition unless fence_ still holds the lease.
  Status CheckFence(pqxx::work& txn) const;
  Status WriteBatch(pqxx::work& txn, const StoreBatch& batch);
  // The first of `count` new sequence numbers of `counter` (event_seq, usage_seq).
  static std::int64_t ReserveSeqs(pqxx::work& txn, const char* counter, std::size_t count);
  Result<std::int64_t> ReadCounter(const char* counter, std::string_view operation);

  // Runs `read(txn)` in a read-only statement outside any transaction (autocommit: one round
  // trip), mapping exceptions to Errors that name this store.
  template <typename T, typename Fn>
  Result<T> Read(std::string_view operation, Fn&& read);
  // Decodes every row of `rows` with `decode` (a Result-returning function of a RowSource).
  template <typename T, typename Decode>
  Result<std::vector<T>> DecodeAll(const pqxx::result& rows, Decode&& decode) const;

  Error InStore(const Error& error) const {
    return MakeError(error.code, "store '" + url_.display + "': " + error.message);
  }
  // The connection, opened again (and configured) when the last one was lost.
  Result<pqxx::connection*> Connection();
  // `e`, thrown by a call on the connection, as an Error; forgets a connection that broke
  // (rather than trust libpqxx 6's own reactivation) so the next call opens a new one.
  Error Failed(const std::exception& e, std::string_view operation);

  std::unique_ptr<pqxx::connection> conn_;  // null after a connection was lost
  PostgresUrl url_;
  PgParams params_;                    // reused for every statement, to keep its capacity
  std::optional<std::int64_t> fence_;  // FenceWith
  bool read_only_;                     // an OpenReader session: every transaction read-only
};

Result<pqxx::connection*> PostgresStore::Connection() {
  if (conn_ != nullptr && !conn_->is_open()) {
    conn_.reset();  // lost since the last call, e.g. ended by the server with a FATAL error
  }
  if (conn_ == nullptr) {
    try {
      auto conn = std::make_unique<pqxx::connection>(url_.conninfo);
      ConfigureSession(*conn, url_.schema, read_only_);
      conn_ = std::move(conn);
    } catch (const std::exception& e) {
      return InStore(PostgresError(e, "reconnect"));
    }
  }
  return conn_.get();
}

Error PostgresStore::Failed(const std::exception& e, std::string_view operation) {
  if (dynamic_cast<const pqxx::sql_error*>(&e) == nullptr) {
    conn_.reset();  // broken, or in doubt: only a new connection is in a known state
  }
  return InStore(PostgresError(e, operation));
}

template <typename T, typename Fn>
Result<T> PostgresStore::Read(std::string_view operation, Fn&& read) {
  GF_ASSIGN_OR_RETURN(pqxx::connection * conn, Connection());
  try {
    pqxx::nontransaction txn(*conn);
    Result<T> result = read(txn);
    if (!result.ok()) {
      return InStore(result.error());
    }
    return result;
  } catch (const std::exception& e) {
    return Failed(e, operation);
  }
}

template <typename T, typename Decode>
Result<std::vector<T>> PostgresStore::DecodeAll(const pqxx::result& rows, Decode&& decode) const {
  std::vector<T> out;
  out.reserve(rows.size());
  for (pqxx::result::size_type i = 0; i < rows.size(); ++i) {
    Result<T> value = decode(PgRow(rows[i]));
    if (!value.ok()) {
      return value.error();
    }
    out.push_back(std::move(value).value());
  }
  return out;
}

// With the row mapping's Bind functions returning void or Status alike.
template <typename Bind, typename Value>
Status BindInto(PgParams& params, Bind&& bind, const Value& value) {
  params.Clear();
  if constexpr (std::is_void_v<decltype(bind(params, value))>) {
    bind(params, value);
    return OkStatus();
  } else {
    return bind(params, value);
  }
}

pqxx::result ExecParams(pqxx::work& txn, const char* statement, const PgParams& params) {
  return txn.exec_prepared(statement, pqxx::prepare::make_dynamic_params(params.Values()));
}

std::int64_t PostgresStore::ReserveSeqs(pqxx::work& txn, const char* counter, std::size_t count) {
  const pqxx::row row =
      txn.exec_prepared1("reserve_seqs", counter, static_cast<std::int64_t>(count));
  return row[0].as<std::int64_t>() - static_cast<std::int64_t>(count) + 1;
}

Status PostgresStore::Commit(const StoreBatch& batch) {
  if (batch.empty()) {
    return OkStatus();
  }
  if (Status valid = ValidateBatch(batch); !valid.ok()) {
    return InStore(valid.error());
  }
  GF_ASSIGN_OR_RETURN(pqxx::connection * conn, Connection());
  try {
    pqxx::work txn(*conn, "commit");
    Status status = CheckFence(txn);
    if (status.ok()) {
      status = WriteBatch(txn, batch);
    }
    if (!status.ok()) {
      return InStore(status.error());  // txn's destructor rolls back
    }
    txn.commit();
    return OkStatus();
  } catch (const std::exception& e) {
    return Failed(e, "commit");
  }
}

std::optional<LeaseHolder> PostgresStore::ReadLease(pqxx::work& txn, bool for_update) {
  const pqxx::result rows = txn.exec(
      std::string(
          "SELECT convert_from(holder, 'UTF8'), epoch, expires_ms FROM leader WHERE id = 1 ") +
      (for_update ? "FOR UPDATE" : "FOR SHARE"));
  if (rows.empty()) {
    return std::nullopt;
  }
  return LeaseHolder{.holder = rows[0][0].as<std::string>(),
                     .epoch = rows[0][1].as<std::int64_t>(),
                     .expires = FromUnixMillis(rows[0][2].as<std::int64_t>())};
}

Status PostgresStore::CheckFence(pqxx::work& txn) const {
  if (!fence_) {
    return OkStatus();
  }
  return gf::CheckFence(*fence_, ReadLease(txn, false));
}

Result<LeaseAttempt> PostgresStore::AcquireLease(const std::string& holder,
                                                 Time now,
                                                 std::chrono::milliseconds ttl) {
  GF_ASSIGN_OR_RETURN(pqxx::connection * conn, Connection());
  try {
    pqxx::work txn(*conn, "acquire lease");
    // Two servers starting at once on an empty table: the row is made first (once), so that
    // both then queue on its lock instead of both inserting.
    txn.exec(
        "INSERT INTO leader (id, holder, epoch, expires_ms) VALUES (1, ''::bytea, 1, 0) "
        "ON CONFLICT (id) DO NOTHING");
    const LeaseAttempt attempt = DecideLease(ReadLease(txn, true), holder, now, ttl);
    if (!attempt.acquired) {
      txn.commit();
      return attempt;
    }
    txn.exec_params(
        "UPDATE leader SET holder = convert_to($1, 'UTF8'), epoch = $2, "
        "expires_ms = $3 WHERE id = 1",
        holder,
        attempt.lease.epoch,
        ToUnixMillis(attempt.lease.expires));
    txn.commit();
    return attempt;
  } catch (const std::exception& e) {
    return Failed(e, "acquire the lease");
  }
}

Status PostgresStore::RenewLease(std::int64_t epoch, Time now, std::chrono::milliseconds ttl) {
  GF_ASSIGN_OR_RETURN(pqxx::connection * conn, Connection());
  try {
    pqxx::work txn(*conn, "renew lease");
    const pqxx::result r =
        txn.exec_params("UPDATE leader SET expires_ms = $1 WHERE id = 1 AND epoch = $2",
                        ToUnixMillis(now + ttl),
                        epoch);
    txn.commit();
    if (r.affected_rows() != 1) {
      return InStore(FailedPrecondition("lost the lease (epoch " + std::to_string(epoch) +
                                        "): another controller took it"));
    }
    return OkStatus();
  } catch (const std::exception& e) {
    return Failed(e, "renew the lease");
  }
}

// Throws libpqxx errors (a constraint: kInvalidArgument once mapped); returns the row
// mapping's own errors. The catch in Commit names the failing statement through `what`, which
// each loop sets before it runs one.
Status PostgresStore::WriteBatch(pqxx::work& txn, const StoreBatch& batch) {
  std::string what;
  try {
    std::int64_t max_id = 0;
    for (const Job& job : batch.jobs) {
      what = "job " + std::to_string(job.id.value());
      GF_TRY(BindInto(params_, BindJob, job));
      ExecParams(txn, "upsert_job", params_);
      max_id = std::max(max_id, job.id.value());
    }
    if (!batch.jobs.empty()) {
      txn.exec_prepared("raise_max_job_id", max_id);
    }
    if (!batch.events.empty()) {
      std::int64_t seq = ReserveSeqs(txn, "event_seq", batch.events.size());
      for (const Event& event : batch.events) {
        what = "event '" + event.kind + "'" +
               (event.job.has_value()
                    ? " for job " + std::to_string(event.job->value()) + " (is the job stored?)"
                    : "");
        GF_TRY(BindInto(params_, BindEvent, event));
        params_.BindInt64(6, seq++);
        ExecParams(txn, "insert_event", params_);
      }
    }
    for (const Node& node : batch.nodes) {
      what = "node '" + node.name.value() + "'";
      GF_TRY(BindInto(params_, BindNode, node));
      ExecParams(txn, "upsert_node", params_);
    }
    for (const GpuMinute& row : batch.gpu_minutes) {
      what = "gpu minute (GPU '" + row.uuid.value() + "', minute " +
             std::to_string(ToUnixMillis(row.minute)) + " ms)";
      GF_TRY(BindInto(params_, BindGpuMinute, row));
      ExecParams(txn, "upsert_gpu_minute", params_);
    }
    if (!batch.usage.empty()) {
      std::int64_t seq = ReserveSeqs(txn, "usage_seq", batch.usage.size());
      for (const UsageRecord& record : batch.usage) {
        what = "usage of job " + std::to_string(record.job.value());
        GF_TRY(BindInto(params_, BindUsageRecord, record));
        params_.BindInt64(11, seq++);
        ExecParams(txn, "insert_usage", params_);
      }
    }
    for (const ApiToken& token : batch.tokens) {
      what = "token '" + token.id + "'";
      GF_TRY(BindInto(params_, BindToken, token));
      ExecParams(txn, "upsert_token", params_);
    }
    for (const Subscription& sub : batch.subscriptions) {
      what = "subscription '" + sub.id + "'";
      GF_TRY(BindInto(params_, BindSubscription, sub));
      ExecParams(txn, "upsert_subscription", params_);
    }
    for (const std::string& id : batch.removed_subscriptions) {
      what = "remove subscription '" + id + "'";
      params_.Clear();
      params_.BindText(1, id);
      ExecParams(txn, "delete_subscription", params_);
    }
  } catch (const pqxx::sql_error& e) {
    return PostgresError(e, "commit: " + what);
  }
  return OkStatus();
}

Result<std::int64_t> PostgresStore::ReadCounter(const char* counter, std::string_view operation) {
  return Read<std::int64_t>(operation, [&](pqxx::nontransaction& txn) -> Result<std::int64_t> {
    return txn.exec_prepared1("read_counter", counter)[0].as<std::int64_t>();
  });
}

Result<std::optional<Job>> PostgresStore::GetJob(JobId id) {
  return Read<std::optional<Job>>("get job", [&](pqxx::nontransaction& txn) {
    const pqxx::result rows = txn.exec_prepared("get_job", id.value());
    if (rows.empty()) {
      return Result<std::optional<Job>>(std::optional<Job>());
    }
    Result<Job> job = DecodeJob(PgRow(rows[0]));
    if (!job.ok()) {
      return Result<std::optional<Job>>(job.error());
    }
    return Result<std::optional<Job>>(std::optional<Job>(std::move(job).value()));
  });
}

Result<std::vector<Job>> PostgresStore::ListJobs(const JobQuery& query) {
  if (query.limit <= 0) {
    return InvalidArgument("list jobs: limit must be positive, got " + std::to_string(query.limit));
  }
  const unsigned filters =
      (query.uid.has_value() ? kByUid : 0) | (query.active_only ? kActiveOnly : 0) |
      (query.before.has_value() ? kBefore : 0) | (query.array_job.has_value() ? kByArray : 0);
  // $1 the limit, then the filters that are set, in ListJobsSql's order.
  std::vector<std::int64_t> args = {query.limit};
  if (query.uid.has_value()) {
    args.push_back(*query.uid);
  }
  if (query.before.has_value()) {
    args.push_back(query.before->value());
  }
  if (query.array_job.has_value()) {
    args.push_back(query.array_job->value());
  }
  return Read<std::vector<Job>>("list jobs", [&](pqxx::nontransaction& txn) {
    const pqxx::result rows =
        txn.exec_prepared(ListJobsName(filters), pqxx::prepare::make_dynamic_params(args));
    return DecodeAll<Job>(rows, DecodeJob);
  });
}

// Not prepared: its filters vary (a list of states); one round trip all the same.
Result<std::vector<Job>> PostgresStore::ListJobHistory(const JobHistoryQuery& query) {
  GF_TRY(ValidateJobHistoryQuery(query));
  const std::string sql = DollarParams(JobHistorySql(query));
  PgParams params;
  BindJobHistory(params, query);
  return Read<std::vector<Job>>("job history", [&](pqxx::nontransaction& txn) {
    const pqxx::result rows =
        txn.exec_params(sql, pqxx::prepare::make_dynamic_params(params.Values()));
    return DecodeAll<Job>(rows, DecodeJob);
  });
}

Result<std::vector<Node>> PostgresStore::ListNodes() {
  return Read<std::vector<Node>>("list nodes", [&](pqxx::nontransaction& txn) {
    return DecodeAll<Node>(txn.exec_prepared("list_nodes"), DecodeNode);
  });
}

Result<std::vector<Event>> PostgresStore::ListEvents(std::optional<JobId> job,
                                                     std::int64_t after_seq,
                                                     int limit) {
  if (limit <= 0) {
    return InvalidArgument("list events: limit must be positive, got " + std::to_string(limit));
  }
  return Read<std::vector<Event>>("list events", [&](pqxx::nontransaction& txn) {
    const pqxx::result rows =
        job.has_value() ? txn.exec_prepared("list_events_job", after_seq, limit, job->value())
                        : txn.exec_prepared("list_events_all", after_seq, limit);
    return DecodeAll<Event>(rows,
                            [](const RowSource& row) { return Result<Event>(DecodeEvent(row)); });
  });
}

Result<std::vector<GpuMinute>> PostgresStore::ListGpuMinutes(Time from, Time to, int limit) {
  GF_TRY(ValidateGpuMinuteRange(from, to, limit));
  return Read<std::vector<GpuMinute>>("list gpu minutes", [&](pqxx::nontransaction& txn) {
    const pqxx::result rows =
        txn.exec_prepared("list_gpu_minutes", ToUnixMillis(from), ToUnixMillis(to), limit);
    return DecodeAll<GpuMinute>(rows, DecodeGpuMinute);
  });
}

Result<std::vector<GpuMinute>> PostgresStore::ListGpuMinutesOf(const GpuUuid& uuid,
                                                               Time from,
                                                               Time to,
                                                               int limit) {
  GF_TRY(ValidateGpuMinuteRange(from, to, limit));
  return Read<std::vector<GpuMinute>>("list gpu minutes", [&](pqxx::nontransaction& txn) {
    const pqxx::result rows = txn.exec_prepared(
        "list_gpu_minutes_of", uuid.value(), ToUnixMillis(from), ToUnixMillis(to), limit);
    return DecodeAll<GpuMinute>(rows, DecodeGpuMinute);
  });
}

Result<std::vector<UsageSum>> PostgresStore::SumUsage(Time from, Time to) {
  GF_TRY(ValidateUsageRange(from, to));
  return Read<std::vector<UsageSum>>("sum usage", [&](pqxx::nontransaction& txn) {
    const pqxx::result rows = txn.exec_prepared("sum_usage", ToUnixMillis(from), ToUnixMillis(to));
    return DecodeAll<UsageSum>(rows, [](const RowSource& row) {
      return Result<UsageSum>(UsageSum{.team = row.Text(0),
                                       .user = row.Text(1),
                                       .gpu_seconds = row.Double(2),
                                       .energy_mj = std::llround(row.Double(3))});
    });
  });
}

Result<std::vector<UsageRecord>> PostgresStore::ListUsage(Time ended_after,
                                                          std::int64_t after_seq,
                                                          int limit) {
  if (limit <= 0) {
    return InvalidArgument("list usage: limit must be positive, got " + std::to_string(limit));
  }
  return Read<std::vector<UsageRecord>>("list usage", [&](pqxx::nontransaction& txn) {
    const pqxx::result rows =
        txn.exec_prepared("list_usage", ToUnixMillis(ended_after), after_seq, limit);
    return DecodeAll<UsageRecord>(rows, DecodeUsageRecord);
  });
}

Result<std::optional<ApiToken>> PostgresStore::GetToken(const std::string& id) {
  return Read<std::optional<ApiToken>>("get token", [&](pqxx::nontransaction& txn) {
    PgParams key;
    key.BindText(1, id);
    const pqxx::result rows =
        txn.exec_prepared("get_token", pqxx::prepare::make_dynamic_params(key.Values()));
    if (rows.empty()) {
      return Result<std::optional<ApiToken>>(std::optional<ApiToken>());
    }
    Result<ApiToken> token = DecodeToken(PgRow(rows[0]));
    if (!token.ok()) {
      return Result<std::optional<ApiToken>>(token.error());
    }
    return Result<std::optional<ApiToken>>(std::optional<ApiToken>(std::move(token).value()));
  });
}

Result<std::vector<ApiToken>> PostgresStore::ListTokens() {
  return Read<std::vector<ApiToken>>("list tokens", [&](pqxx::nontransaction& txn) {
    return DecodeAll<ApiToken>(txn.exec_prepared("list_tokens"), DecodeToken);
  });
}

Result<std::vector<Subscription>> PostgresStore::ListSubscriptions() {
  return Read<std::vector<Subscription>>("list subscriptions", [&](pqxx::nontransaction& txn) {
    return DecodeAll<Subscription>(txn.exec_prepared("list_subscriptions"), DecodeSubscription);
  });
}

Result<std::unique_ptr<Store>> Open(const PostgresUrl& url) {
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(url.conninfo);
  } catch (const std::exception& e) {
    return PostgresError(e, "connect");  // libpq's reason names the host and port
  }
  try {
    GF_TRY(ApplyPostgresMigrations(*conn, url.schema, PostgresMigrations()));
    ConfigureSession(*conn, url.schema, /*read_only=*/false);
  } catch (const std::exception& e) {
    return PostgresError(e, "open schema '" + url.schema + "'");
  }
  return std::unique_ptr<Store>(
      std::make_unique<PostgresStore>(std::move(conn), url, /*read_only=*/false));
}

}  // namespace

// A session of its own on the schema this store opened (and migrated).
Result<std::unique_ptr<StoreReader>> PostgresStore::OpenReader() {
  try {
    auto conn = std::make_unique<pqxx::connection>(url_.conninfo);
    ConfigureSession(*conn, url_.schema, /*read_only=*/true);
    return std::unique_ptr<StoreReader>(
        std::make_unique<PostgresStore>(std::move(conn), url_, /*read_only=*/true));
  } catch (const std::exception& e) {
    return InStore(PostgresError(e, "open a read connection"));
  }
}

Result<std::unique_ptr<Store>> OpenPostgresStore(std::string_view url,
                                                 const PostgresStoreOptions& options) {
  GF_ASSIGN_OR_RETURN(PostgresUrl parsed, ParsePostgresUrl(url, options.schema));
  auto store = Open(parsed);
  if (!store.ok()) {
    return MakeError(store.error().code,
                     "store '" + parsed.display + "': " + store.error().message);
  }
  return store;
}

}  // namespace gf
