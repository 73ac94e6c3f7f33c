// Store: durable state of the controller (DESIGN.md §3, decided: one interface, SQLite and
// PostgreSQL backends, versioned migrations, one conformance suite for both).
//
// Owned and called by the controller thread only; implementations need not be thread-safe.
// Commit() is the group-commit point: everything a loop turn changed goes in one transaction,
// durable (fsync'd) when Commit returns OK.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/event.h"
#include "model/job.h"
#include "model/node.h"

namespace gf {

struct StoreBatch {
  std::vector<Job> jobs;      // inserted or replaced whole, by id
  std::vector<Event> events;  // appended; their seq is assigned by the store
  std::vector<Node> nodes;    // inserted or replaced whole, by name
  bool empty() const { return jobs.empty() && events.empty() && nodes.empty(); }
};

struct JobQuery {
  std::optional<std::uint32_t> uid;   // only this owner's jobs
  bool active_only = false;           // not in a terminal state
  std::optional<JobId> before;        // ids below this (paging, newest first)
  int limit = 1000;
};

class Store {
 public:
  virtual ~Store() = default;

  // Applies the batch in one transaction; durable when it returns OK. On error nothing of the
  // batch is applied.
  virtual Status Commit(const StoreBatch& batch) = 0;

  virtual Result<std::optional<Job>> GetJob(JobId id) = 0;
  // Newest first.
  virtual Result<std::vector<Job>> ListJobs(const JobQuery& query) = 0;
  // The largest job id ever stored, 0 if none (ids are never reused).
  virtual Result<std::int64_t> MaxJobId() = 0;

  virtual Result<std::vector<Node>> ListNodes() = 0;

  // Events with seq > after_seq, oldest first, at most limit; only those of `job` if given.
  virtual Result<std::vector<Event>> ListEvents(std::optional<JobId> job,
                                                std::int64_t after_seq,
                                                int limit) = 0;
};

}  // namespace gf
