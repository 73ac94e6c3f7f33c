// Store: durable state of the controller (DESIGN.md §3, decided: one interface, SQLite and
// PostgreSQL backends, versioned migrations, one conformance suite for both).
//
// Owned and called by the controller thread only; implementations need not be thread-safe.
// Commit() is the group-commit point: everything a loop turn changed goes in one transaction,
// durable (fsync'd) when Commit returns OK. Other threads read through connections of their own
// (Store::OpenReader), each used by one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/event.h"
#include "model/gpu_minute.h"
#include "model/job.h"
#include "model/node.h"
#include "model/notification.h"
#include "model/token.h"
#include "model/usage_record.h"

namespace gf {

// Applied in this order: jobs, then events, then nodes. An event's job (if any) must be stored,
// earlier or in the same batch; job ids must be positive.
struct StoreBatch {
  // The {} initializers let callers write StoreBatch{.jobs = {job}} under
  // -Wmissing-field-initializers.
  std::vector<Job> jobs{};      // inserted or replaced whole, by id
  std::vector<Event> events{};  // appended in order; their seq is assigned by the store
  std::vector<Node> nodes{};    // inserted or replaced whole, by name
  // Per-minute GPU rollups; inserted or replaced by (uuid, minute).
  std::vector<GpuMinute> gpu_minutes{};
  // One record per ended run of a job (appended; their seq is assigned by the store). A
  // record carries its own team and user and does not need its job stored.
  std::vector<UsageRecord> usage{};
  // API and node tokens (schema v5), inserted or replaced whole, by id.
  std::vector<ApiToken> tokens{};
  // Notification subscriptions (schema v8), inserted or replaced whole, by id; then the ids in
  // removed_subscriptions are deleted (an id that is not stored is no error).
  std::vector<Subscription> subscriptions{};
  std::vector<std::string> removed_subscriptions{};
  // NOLINTNEXTLINE(readability-identifier-naming): named like the containers' empty()
  bool empty() const {
    return jobs.empty() && events.empty() && nodes.empty() && gpu_minutes.empty() &&
           usage.empty() && tokens.empty() && subscriptions.empty() &&
           removed_subscriptions.empty();
  }
};

struct JobQuery {
  std::optional<std::uint32_t> uid{};  // only this owner's jobs
  bool active_only = false;            // not in a terminal state
  std::optional<JobId> before{};       // ids below this (paging, newest first)
  std::optional<JobId> array_job{};    // only the tasks of this job array (ArrayTask::array_job)
  int limit = 1000;                    // > 0
};

// `gpufleet history` (issue #24): jobs of any state, newest (largest id) first, paged by id.
// Every filter that is set must hold. The window keeps the jobs that were in the system during
// [since, until): submitted before `until` and not ended before `since` (Slurm's sacct -S/-E).
struct JobHistoryQuery {
  std::optional<std::uint32_t> uid{};  // only this owner's jobs (a user's scope)
  std::optional<std::string> user{};   // only jobs of this login name (`--user`)
  std::optional<std::string> team{};   // only this team's jobs ("" = the default team)
  std::vector<JobState> states{};      // only jobs in one of these states; empty = any
  std::optional<Time> since{};         // not ended before this
  std::optional<Time> until{};         // submitted before this
  std::optional<JobId> before{};       // ids below this: the cursor of the next page
  int limit = 100;                     // > 0
};

// Controller leadership (issue #6, schema v6): several `gpufleet server` on one database; the
// one holding the lease writes, the others wait. Each acquisition gets a larger epoch than any
// before, and once a store is fenced with its epoch every Commit checks, inside its
// transaction, that the epoch still holds the lease: a controller that lost it (it stalled
// past its lease and another took over) can no longer write anything.
struct LeaseHolder {
  std::string holder{};  // who holds it ("host:pid")
  std::int64_t epoch = 0;
  Time expires{};
};
struct LeaseAttempt {
  bool acquired = false;
  LeaseHolder lease{};  // acquired: ours (with the new epoch); else the current holder's
};

// The reads of a Store. Every read may also fail with kInternal when a stored row cannot be
// decoded (the message names the row), or with the backend's I/O errors; no method throws.
class StoreReader {
 public:
  virtual ~StoreReader() = default;

  virtual Result<std::optional<Job>> GetJob(JobId id) = 0;
  // Newest (largest id) first. Errors: kInvalidArgument if limit <= 0.
  virtual Result<std::vector<Job>> ListJobs(const JobQuery& query) = 0;
  // The jobs `query` selects, newest (largest id) first, at most query.limit: the next page
  // starts before the last one's id (keyset paging: each page is one index range scan, however
  // many jobs the store holds). Errors: kInvalidArgument if limit <= 0 or until < since.
  virtual Result<std::vector<Job>> ListJobHistory(const JobHistoryQuery& query) = 0;
  // The largest job id ever stored, 0 if none (ids are never reused).
  virtual Result<std::int64_t> MaxJobId() = 0;

  // Ordered by name.
  virtual Result<std::vector<Node>> ListNodes() = 0;

  // Events with seq > after_seq, oldest first, at most limit; only those of `job` if given.
  // Errors: kInvalidArgument if limit <= 0.
  virtual Result<std::vector<Event>> ListEvents(std::optional<JobId> job,
                                                std::int64_t after_seq,
                                                int limit) = 0;
  // GPU minutes with from <= minute < to, ordered by (minute, node, uuid), at most limit.
  // Errors: kInvalidArgument if limit <= 0 or to < from.
  virtual Result<std::vector<GpuMinute>> ListGpuMinutes(Time from, Time to, int limit) = 0;
  // One GPU's minutes with from <= minute < to, oldest first, at most limit (the GPU series'
  // history past the Telemetry's rings; an index range scan). Errors: as ListGpuMinutes.
  virtual Result<std::vector<GpuMinute>> ListGpuMinutesOf(const GpuUuid& uuid,
                                                          Time from,
                                                          Time to,
                                                          int limit) = 0;

  // GPU-seconds per (team, user) of the runs that overlap [from, to), each counted only for
  // its part inside the range (a run crossing a bound counts pro rata to its time inside; a
  // zero-length run counts whole when it lies in the range). Ordered by (team, user); pairs
  // with nothing in the range are absent. Errors: kInvalidArgument if to < from.
  virtual Result<std::vector<UsageSum>> SumUsage(Time from, Time to) = 0;
  // Usage records that ended after `ended_after` with seq > after_seq, by seq, at most limit:
  // page with the last record's seq. Errors: kInvalidArgument if limit <= 0.
  virtual Result<std::vector<UsageRecord>> ListUsage(Time ended_after,
                                                     std::int64_t after_seq,
                                                     int limit) = 0;

  // The token with this id, nullopt when none (revoked and expired ones too: the caller judges).
  virtual Result<std::optional<ApiToken>> GetToken(const std::string& id) = 0;
  // Every token, ordered by id.
  virtual Result<std::vector<ApiToken>> ListTokens() = 0;

  // Every notification subscription (schema v8), ordered by id.
  virtual Result<std::vector<Subscription>> ListSubscriptions() = 0;

  // The largest event seq ever assigned, 0 if none: where a watcher that wants only new
  // events starts (its after_seq).
  virtual Result<std::int64_t> MaxEventSeq() = 0;
};

class Store : public StoreReader {
 public:
  // Applies the batch in one transaction; durable when it returns OK. On error nothing of the
  // batch is applied. Errors: kInvalidArgument when the batch breaks a rule above (the
  // message names the job or event), kUnavailable when another process holds the database,
  // kIo when the disk fails.
  virtual Status Commit(const StoreBatch& batch) = 0;

  // A read-only connection of its own to the same database (SQLite: a second connection on
  // the WAL file, opened read-only; PostgreSQL: another session, read-only), for a thread other
  // than this Store's: each of its reads sees every batch whose Commit returned before the read
  // began, and never part of a batch. It may outlive this Store. Like a Store it is used by one
  // thread at a time. OpenReader itself may be called on any thread, while the Store is in use
  // (it reads only what the Store was opened with). Errors: the backend's, as when opening a
  // Store.
  virtual Result<std::unique_ptr<StoreReader>> OpenReader() = 0;

  // Takes the lease for `holder` until now + ttl when nobody holds it, its holder's lease ended
  // (expires <= now), or `holder` holds it already; the epoch then is one more than the last.
  // Otherwise acquired is false and `lease` says who holds it until when.
  virtual Result<LeaseAttempt> AcquireLease(const std::string& holder,
                                            Time now,
                                            std::chrono::milliseconds ttl) = 0;
  // Extends the lease of `epoch` to now + ttl. kFailedPrecondition "lost the lease" when the
  // lease has another epoch now.
  virtual Status RenewLease(std::int64_t epoch, Time now, std::chrono::milliseconds ttl) = 0;
  // From now on each Commit fails with kFailedPrecondition, applying nothing, unless `epoch`
  // still holds the lease. Unfenced (the default: one `gpufleet up`), Commit does not look.
  virtual void FenceWith(std::int64_t epoch) = 0;
};

}  // namespace gf
