// JobRowCache: the rendered list rows of the jobs GET /api/v1/jobs serves, kept from one
// listing to the next so that a job is rendered once per change instead of once per listing
// (issue #26: 2,000 pending in under 10 ms; most of a listing's cost was building and dumping
// each job's JSON).
//
// A row is the compact text of JobRowToJson(job) without its closing brace, so that the route
// can append what changes per request (queue_position). It is kept per job id, valid for one
// immutable Job object: ClusterService::ListSharedJobs hands out the controller's published
// copies, which it replaces whenever the job changes (controller/view.h), so the same object
// means the same row. An entry names its object by a weak_ptr (compared by owner, without
// touching the count), which keeps no Job alive (only its allocation, made with the count, until
// the entry goes); once the job changes or leaves, the entry no longer matches and the next
// sweep drops it.
//
// Thread-safety: every method may be called from any thread; a mutex guards the map, and a row
// is rendered outside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "model/job.h"

namespace gf {

// Appends the compact JSON text of JobRowToJson(job) without its closing '}' to `out` (bytes
// that are not UTF-8 become U+FFFD, as in every JSON answer).
void AppendOpenRow(const Job& job, std::string& out);

class JobRowCache {
 public:
  // AppendOpenRow(*job, out), from the row kept for this very object when there is one.
  void AppendRow(const std::shared_ptr<const Job>& job, std::string& out);

  // Rows kept now (tests: the sweep bounds them).
  std::size_t RowCount() const;

 private:
  struct Entry {
    std::weak_ptr<const Job> job;
    std::string row;
  };
  // Drops the entries whose job object is gone. REQUIRES: mu_ held.
  void Sweep();

  // The first sweep comes at this many rows; each later one at twice the rows it kept.
  static constexpr std::size_t kMinSweepRows = 4096;

  mutable std::mutex mu_;
  std::unordered_map<std::int64_t, Entry> rows_;  // by job id; GUARDED_BY(mu_)
  std::size_t sweep_at_ = kMinSweepRows;          // GUARDED_BY(mu_)
};

}  // namespace gf
