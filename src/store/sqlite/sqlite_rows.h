// SQL text of the SQLite store's statements. Parameters ?1.. are numbered as the Bind
// functions of store/rows.h set them; SELECTs read the column lists there.
//
// Private to the SQLite backend. Constants only.
#pragma once

#include <string>
#include <string_view>

#include "store/rows.h"

namespace gf {

// Insert-or-replace statements, parameters ?1.. as the Bind functions set them.
extern const std::string_view kUpsertJobSql;
extern const std::string_view kInsertEventSql;
extern const std::string_view kUpsertNodeSql;
extern const std::string_view kUpsertGpuMinuteSql;
extern const std::string_view kInsertUsageSql;
extern const std::string_view kUpsertTokenSql;
extern const std::string_view kUpsertSubscriptionSql;  // ?1..?8 as BindSubscription
extern const std::string_view kDeleteSubscriptionSql;  // ?1 the id

// SumUsage: ?1 from, ?2 to (unix ms); rows (team, user_name, gpu_seconds).
extern const std::string_view kSumUsageSql;
// ListUsage: ?1 ended after (unix ms), ?2 after seq, ?3 limit; kUsageColumns.
std::string ListUsageSql();

// ListGpuMinutes: ?1 from (unix ms, included), ?2 to (excluded), ?3 limit; kGpuMinuteColumns.
std::string ListGpuMinutesSql();
// ListGpuMinutesOf: ?1 uuid, ?2 from (included), ?3 to (excluded), ?4 limit; kGpuMinuteColumns.
std::string ListGpuMinutesOfSql();

}  // namespace gf
