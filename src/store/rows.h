// Row mapping shared by the store backends: the column lists of every table and the functions
// that bind a Job, Event, Node, GpuMinute, UsageRecord or ApiToken to a statement's numbered
// parameters or decode one from a result row. Each backend writes its own SQL text (dialects
// differ) but numbers the parameters and orders the columns as documented here, so both store
// and read every field alike.
//
// Pure functions over a statement or row the caller owns; no state.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "model/event.h"
#include "model/gpu_minute.h"
#include "model/job.h"
#include "model/node.h"
#include "model/notification.h"
#include "model/token.h"
#include "model/usage_record.h"
#include "store/row_io.h"
#include "store/store.h"

namespace gf {

// SELECT lists; the Decode functions read the columns in this order.
extern const std::string_view kJobColumns;
extern const std::string_view kEventColumns;
extern const std::string_view kNodeColumns;
extern const std::string_view kGpuMinuteColumns;
extern const std::string_view kUsageColumns;
extern const std::string_view kTokenColumns;
extern const std::string_view kSubscriptionColumns;

// Parameters set by the Bind functions, in the order of these column lists:
//   BindJob: the 53 columns of kJobColumns and `terminal` (IsTerminal(state)) as ?15 after
//            state, so ?1..?50 = id .. pid (23), usage (5), checkpoint_signal, preemptible,
//            node_labels, after_deps, array_job, array_index, array_max_running,
//            budget_approved, last_checkpoint_ms, requeue, interactive, idle_reap, gang_job,
//            gang_rank, gang_size, gpu_milli, gpu_memory_mib, alloc_gpu_milli,
//            alloc_gpu_memory_mib, mig_profile, alloc_mig, held_by, cpus, memory_mib (?51, ?52),
//            host_cpu_ms, host_peak_memory_kib (?53, ?54)
//   BindEvent: ?1 time_ms, ?2 job_id, ?3 kind, ?4 actor, ?5 message (seq is the store's)
//   BindNode: ?1..?9 as kNodeColumns
//   BindGpuMinute: ?1..?14 as kGpuMinuteColumns
//   BindUsageRecord: ?1..?10 as kUsageColumns without seq
//   BindToken: ?1..?11 as kTokenColumns
//   BindSubscription: ?1..?8 as kSubscriptionColumns (kinds: names joined by commas)
// Errors: kInvalidArgument when a field cannot be stored (a label key that is not UTF-8).
// Require a batch that passed ValidateBatch (store/validation.h): SQLite would store a NaN in a
// job's usage or a gpu minute as NULL.
Status BindJob(ParamSink& stmt, const Job& job);
void BindEvent(ParamSink& stmt, const Event& event);
Status BindNode(ParamSink& stmt, const Node& node);
void BindGpuMinute(ParamSink& stmt, const GpuMinute& row);
Status BindUsageRecord(ParamSink& stmt, const UsageRecord& record);
void BindToken(ParamSink& stmt, const ApiToken& token);
void BindSubscription(ParamSink& stmt, const Subscription& sub);

// Errors: kInternal naming the row ("job 12: unknown job state 'DONE'") when a stored value is
// not one this build can read.
Result<Job> DecodeJob(const RowSource& row);
Event DecodeEvent(const RowSource& row);
Result<Node> DecodeNode(const RowSource& row);
Result<GpuMinute> DecodeGpuMinute(const RowSource& row);
Result<UsageRecord> DecodeUsageRecord(const RowSource& row);
Result<ApiToken> DecodeToken(const RowSource& row);
Result<Subscription> DecodeSubscription(const RowSource& row);

// ListJobHistory's SELECT for `query` (both backends: SQLite reads ?N, PostgreSQL $N), with the
// parameters ?1.. that BindJobHistory sets: a filter that is not set adds no term, so each
// page is a range scan of the primary key (or of jobs_by_uid for one owner) from `before` down.
std::string JobHistorySql(const JobHistoryQuery& query);
void BindJobHistory(ParamSink& stmt, const JobHistoryQuery& query);
// kInvalidArgument naming what is wrong (limit <= 0, until before since), else OK.
Status ValidateJobHistoryQuery(const JobHistoryQuery& query);

}  // namespace gf
