// The controller's published view (issue #21): what the state thread last committed, for the
// API's reads to serve without a command on the state thread.
//
// At the end of each turn, after the turn's Store::Commit and before its callers are answered,
// the state thread publishes a new ControllerView: the active jobs as they are then (pending
// reasons and estimates included), the nodes, and the counters behind Stats. A view is
// immutable; readers hold it by shared_ptr for as long as they read it. Publishing copies only
// what changed: jobs sit in pages of kViewPageJobs consecutive ids, and a turn rebuilds the
// pages of the jobs it changed and shares the others with the last view; each node likewise.
//
// Read connections (ReadConnections): the history (finished jobs, events, tokens, the month a
// report covers) is read through store connections of their own (Store::OpenReader), on the
// reader's thread. A job ended in a turn stays in the views published before that turn's
// commit and leaves with the first one published after it, so a reader that takes the view
// first and then reads the store finds every job in one or the other.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/job.h"
#include "model/node.h"
#include "service/service.h"
#include "store/store.h"

namespace gf {

constexpr std::int64_t kViewPageJobs = 64;

// Upper bounds (seconds) of the queue-wait histogram behind gpufleet_queue_wait_seconds.
inline constexpr std::array<double, 12> kWaitBucketBounds = {
    1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600, 86400};

// The team Stats counts a job under: jobs that name no team are accounted to "default".
std::string CountedTeam(const Job& job);
// The GPU-seconds a job has held so far (or until its end), a fractional job its share.
double HeldGpuSeconds(const Job& job, Time now);

// Counters behind Stats() that are not derived from the active jobs (since this controller
// started).
struct ControllerCounters {
  std::map<JobState, std::int64_t> ended;  // terminal state → jobs
  // Of ended and requeued runs, by CountedTeam: HeldGpuSeconds.
  std::map<std::string, double> team_gpu_seconds;
  // Per kWaitBucketBounds entry, not cumulative; every bucket is there from the start (the
  // metrics read each).
  std::vector<std::int64_t> wait_buckets = std::vector<std::int64_t>(kWaitBucketBounds.size(), 0);
  std::int64_t wait_count = 0;
  double wait_sum_seconds = 0;
  PassStats full_passes{.kind = "full"};
  PassStats incremental_passes{.kind = "incremental"};
  // The turns' durable commits (ClusterStats::commits ..).
  std::int64_t commits = 0;
  double commit_seconds = 0;
  std::int64_t committed_requests = 0;

  // A job just started after waiting `wait_seconds`: the queue-wait histogram behind
  // gpufleet_queue_wait_seconds.
  void CountWait(double wait_seconds);
};

struct ControllerView {
  using Page = std::vector<std::shared_ptr<const Job>>;  // ascending ids
  // Active jobs by page (id / kViewPageJobs); no page is empty.
  std::map<std::int64_t, std::shared_ptr<const Page>> pages;
  std::vector<std::shared_ptr<const Node>> nodes;  // by name
  ControllerCounters counters;
  // The queued jobs' ids in scheduling order as of the last pass (SchedulingStage::QueueOrder);
  // null before the first.
  std::shared_ptr<const std::vector<JobId>> queue_order;
  // Set once the store failed or the lease was lost: every read gets this error, as every
  // command does.
  std::optional<Error> fatal;

  // The active job `id`, or null. FindShared: the view's own copy, which later views share for
  // as long as the job does not change (a reader may key what it derives from a job by it).
  const Job* Find(JobId id) const;
  const std::shared_ptr<const Job>* FindShared(JobId id) const;
  // Calls fn(job) for each active job, newest (largest id) first, until it returns false.
  template <typename Fn>
  void NewestFirst(Fn&& fn) const {
    NewestBelow(std::nullopt, [&fn](const std::shared_ptr<const Job>& job) { return fn(*job); });
  }
  // Calls fn(job), `job` the view's shared copy, for each active job whose id is below `below`
  // (every one when nullopt), newest first, until it returns false. Starts at `below`'s page:
  // the cost does not grow with the jobs above it (a listing's later pages).
  template <typename Fn>
  void NewestBelow(std::optional<JobId> below, Fn&& fn) const {
    auto page = below
                    ? std::make_reverse_iterator(pages.upper_bound(below->value() / kViewPageJobs))
                    : pages.rbegin();
    for (; page != pages.rend(); ++page) {
      for (auto job = page->second->rbegin(); job != page->second->rend(); ++job) {
        if (below && (*job)->id >= *below) {
          continue;
        }
        if (!fn(*job)) {
          return;
        }
      }
    }
  }
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [key, page] : pages) {
      for (const auto& job : *page) {
        fn(*job);
      }
    }
  }
};

// Whether a job's copy in a view still shows `job`: the fields a job's life changes (its id,
// submit time and spec but its environment never change once it is queued; a Kubernetes pod's
// job learns its user and its environment's workload after it started, KubeDesk::NameFromApi).
bool SameLiveFields(const Job& a, const Job& b);

// The next view: `last` with the pages of the jobs of `active` that differ from it rebuilt (a
// job not in `active`, or terminal there, leaves), and the nodes that differ replaced.
// `active` is by id; `nodes` by name. `queue_order` is kept as given (shared, not copied).
std::shared_ptr<const ControllerView> NextView(
    const ControllerView& last,
    const std::map<JobId, Job>& active,
    const std::vector<const Node*>& nodes,
    const ControllerCounters& counters,
    const std::optional<Error>& fatal,
    std::shared_ptr<const std::vector<JobId>> queue_order = nullptr);

// A few read connections (Store::OpenReader), each lent to one thread at a time; one is
// opened when every open one is lent.
class ReadConnections {
 public:
  // `open` opens one more connection; it may be called from any thread.
  explicit ReadConnections(std::function<Result<std::unique_ptr<StoreReader>>()> open)
      : open_(std::move(open)) {}

  class Lease {
   public:
    Lease(ReadConnections* pool, std::unique_ptr<StoreReader> reader)
        : pool_(pool), reader_(std::move(reader)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (reader_ != nullptr) {
        pool_->Return(std::move(reader_));
      }
    }
    StoreReader* operator->() const { return reader_.get(); }
    StoreReader& operator*() const { return *reader_; }

   private:
    ReadConnections* pool_;
    std::unique_ptr<StoreReader> reader_;
  };

  // A connection for this thread until the Lease ends. Errors: opening one failed.
  Result<Lease> Acquire();

 private:
  void Return(std::unique_ptr<StoreReader> reader);

  std::function<Result<std::unique_ptr<StoreReader>>()> open_;
  std::mutex mu_;
  std::vector<std::unique_ptr<StoreReader>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace gf
