// Row mapping of the SQLite store: the SQL text of its statements and the functions that bind a
// Job, Event, Node or GpuMinute to a statement's parameters or decode one from a result row.
//
// Private to the SQLite backend. Pure functions over a statement the caller owns; no state.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "model/event.h"
#include "model/gpu_minute.h"
#include "model/job.h"
#include "model/node.h"
#include "model/usage_record.h"
#include "store/sqlite/sqlite_util.h"

namespace gf {

// SELECT lists; the Decode functions read the columns in this order.
extern const std::string_view kJobColumns;
extern const std::string_view kEventColumns;
extern const std::string_view kNodeColumns;
extern const std::string_view kGpuMinuteColumns;
extern const std::string_view kUsageColumns;

// Insert-or-replace statements, parameters ?1.. as the Bind functions set them.
extern const std::string_view kUpsertJobSql;
extern const std::string_view kInsertEventSql;
extern const std::string_view kUpsertNodeSql;
extern const std::string_view kUpsertGpuMinuteSql;
extern const std::string_view kInsertUsageSql;

// SumUsage: ?1 from, ?2 to (unix ms); rows (team, user_name, gpu_seconds).
extern const std::string_view kSumUsageSql;
// ListUsage: ?1 ended after (unix ms), ?2 after seq, ?3 limit; kUsageColumns.
std::string ListUsageSql();

// ListGpuMinutes: ?1 from (unix ms, included), ?2 to (excluded), ?3 limit; kGpuMinuteColumns.
std::string ListGpuMinutesSql();

// Errors: kInvalidArgument when a field cannot be stored (a label key that is not UTF-8).
// Require a batch that passed ValidateBatch (store/validation.h): SQLite would store a NaN in a
// job's usage or a gpu minute as NULL.
Status BindJob(SqliteStatement& stmt, const Job& job);
void BindEvent(SqliteStatement& stmt, const Event& event);
Status BindNode(SqliteStatement& stmt, const Node& node);
void BindGpuMinute(SqliteStatement& stmt, const GpuMinute& row);
Status BindUsageRecord(SqliteStatement& stmt, const UsageRecord& record);

// Errors: kInternal naming the row ("job 12: unknown job state 'DONE'") when a stored value is
// not one this build can read.
Result<Job> DecodeJob(const SqliteStatement& row);
Event DecodeEvent(const SqliteStatement& row);
Result<Node> DecodeNode(const SqliteStatement& row);
Result<GpuMinute> DecodeGpuMinute(const SqliteStatement& row);
Result<UsageRecord> DecodeUsageRecord(const SqliteStatement& row);

}  // namespace gf
