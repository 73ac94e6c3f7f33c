// ClusterReader: the controller's read side (issue #21), everything the API reads without a
// command on the state thread: ListJobs, GetJob, JobHistory, JobEvents, ListNodes, ListGpus,
// Stats, the monthly report and the token list.
//
// It answers from three sources and nothing else:
//   - the view the state thread last published (view.h): the active jobs as callers see them,
//     the nodes and the counters behind Stats;
//   - Telemetry (monitor/telemetry.h): a running job's live usage, the GPUs;
//   - store read connections of its own (ReadConnections over Store::OpenReader): the history,
//     i.e. finished jobs, events, tokens and the month a report covers.
// Who may read what is the authorization table's (authorization.h). It never sees the
// Controller's state-thread fields: a read sees a committed turn, never one under way. A job
// that ends is in every view published until the turn that ended it has committed, and in the
// store from then on, so a read that takes the view first and the store after finds it in one
// or the other (every read here does so).
//
// Owner: the Controller. At the end of each turn, after the commit and before it answers the
// turn's callers, its state thread builds the next view from Latest() (NextView) and hands it
// over with Publish; Close() when it stops.
//
// Thread-safety: every method may be called from any thread, concurrently. The view is swapped
// under a small mutex and read through a shared_ptr, so no read holds a lock while it works;
// each read borrows a store connection of its own (ReadConnections); Telemetry is thread-safe;
// the options and the clock are only read.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "controller/accounting.h"
#include "controller/view.h"
#include "core/background_worker.h"
#include "core/clock.h"
#include "core/result.h"
#include "model/energy.h"
#include "monitor/telemetry.h"
#include "report/report.h"
#include "scheduler/policy.h"
#include "service/service.h"
#include "store/store.h"

namespace gf {

// The settings reads need (a copy of the controller's; they do not change while it runs).
struct ReadSideOptions {
  // Stats lists every configured class in the config's order; a report shows each team's
  // guarantee, limit and budget.
  PolicyConfig policy;
  // A user's configured team: a report shows a user their teams.
  std::map<std::string, std::string> team_of_user;
  // A job's energy charge on every read, and a report's prices.
  EnergyPrice energy_price{};
};

class ClusterReader {
 public:
  using OpenReader = std::function<Result<std::unique_ptr<StoreReader>>()>;

  // `open_reader` opens one more store read connection (any thread). `telemetry` and `clock`
  // must outlive the reader. Until the first Publish, reads see an empty cluster.
  ClusterReader(const Clock& clock,
                const Telemetry& telemetry,
                ReadSideOptions options,
                OpenReader open_reader);
  ClusterReader(const ClusterReader&) = delete;
  ClusterReader& operator=(const ClusterReader&) = delete;

  // The published view holder. Publish replaces the view reads are served from (the state
  // thread, once per turn). Latest is the last one published, failed or not: the base NextView
  // builds the next one from. Close makes every later read fail with kUnavailable (the
  // controller is stopping, as its commands do).
  void Publish(std::shared_ptr<const ControllerView> view);
  std::shared_ptr<const ControllerView> Latest() const;
  void Close();
  // The latest view, or the error every command would get now: the store failed or the lease
  // was lost (ControllerView::fatal), or the controller is stopping.
  Result<std::shared_ptr<const ControllerView>> Read() const;

  // ClusterService's reads, with the same contracts (service/service.h). A job another caller
  // may not read is kNotFound, as if it did not exist, and lists leave it out.
  Result<std::vector<Job>> ListJobs(const Caller& caller, const JobFilter& filter) const;
  // ListJobs' page with the view's own copies of the active jobs (service.h, JobListing);
  // ListJobs copies it.
  Result<JobListing> ListSharedJobs(const Caller& caller, const JobFilter& filter) const;
  Result<std::vector<JobId>> QueueOrder(const Caller& caller) const;
  Result<Job> GetJob(const Caller& caller, JobId id) const;
  // One page of `gpufleet history` from the store (read_side_history.cpp): the store's keyset
  // page, scoped to what the caller may see, active jobs as the view has them.
  Result<HistoryPage> JobHistory(const Caller& caller, const HistoryFilter& filter) const;
  // Every committed event of the job (at most 10,000), the view's turn included.
  Result<std::vector<Event>> JobEvents(const Caller& caller, JobId id) const;
  Result<std::vector<Node>> ListNodes(const Caller& caller) const;
  Result<std::vector<GpuStatus>> ListGpus(const Caller& caller) const;
  // From the store (read_side_history.cpp).
  Result<std::vector<GpuMinute>> GpuHistory(const Caller& caller,
                                            const GpuUuid& uuid,
                                            Time from,
                                            Time to) const;
  // `notifications`: the notifier's delivery counts, passed through to ClusterStats.
  Result<ClusterStats> Stats(std::vector<NotificationCount> notifications) const;
  // Computed on the background worker (reports_), at background CPU priority.
  Result<Report> MonthlyReport(const Caller& caller, const ReportRequest& request) const;
  Result<std::vector<ApiToken>> ListTokens(const Caller& caller) const;

 private:
  // `id` as `caller` may read it: from `view` while active, else from the store through
  // `reader`.
  Result<Job> FindInView(const ControllerView& view,
                         StoreReader& reader,
                         const Caller& caller,
                         JobId id) const;
  // Whether `caller` may list jobs, of `user` when given (another user's: operators and admins).
  static Status AuthorizeList(const Caller& caller, const std::optional<std::string>& user);
  // A job read from the store as callers see it: an active one as `view` has it (its pending
  // reason), with its live usage (WithLiveUsage).
  Job AsRead(const ControllerView& view, Job stored) const;
  std::shared_ptr<const Job> SharedRead(const ControllerView& view, Job stored) const;
  // An active job of the view as reads show it: the view's own copy when WithLiveUsage would
  // change nothing, else a new one with its live usage.
  std::shared_ptr<const Job> SharedLive(const std::shared_ptr<const Job>& live) const;
  // A running job's usage so far from Telemetry, and the energy's charge at today's price.
  Job WithLiveUsage(Job job) const;
  ClusterStats ComputeStats(const ControllerView& view) const;
  // The monthly report (read_side_report.cpp): the store's minutes, runs, events and jobs of
  // the month, read in pages through `reader`, and the view's running jobs, fed to a
  // ReportBuilder.
  Result<Report> DoReport(const ControllerView& view,
                          StoreReader& reader,
                          const Caller& caller,
                          const ReportRequest& request) const;
  Result<ReportScope> ReportScopeFor(const ControllerView& view,
                                     const Caller& caller,
                                     const ReportRequest& request,
                                     const std::set<std::string>& ran_in) const;
  static Status FeedReportMinutes(StoreReader& reader,
                                  ReportBuilder& builder,
                                  const Period& period);
  Result<std::set<std::string>> FeedReportRuns(const ControllerView& view,
                                               StoreReader& reader,
                                               ReportBuilder& builder,
                                               const Period& period,
                                               Time until,
                                               const std::string& user) const;
  static Status FeedReportEvents(StoreReader& reader, ReportBuilder& builder, const Period& period);
  static Status FeedReportJobs(const ControllerView& view,
                               StoreReader& reader,
                               ReportBuilder& builder);

  const Clock& clock_;
  const Telemetry& telemetry_;
  const ReadSideOptions options_;
  // Lent to one read at a time; mutable: lending one is not a change a caller can see.
  mutable ReadConnections readers_;
  mutable std::mutex mu_;
  std::shared_ptr<const ControllerView> view_;  // GUARDED_BY(mu_); never null
  std::atomic<bool> closed_{false};
  // Reports run here, one at a time, at background CPU priority: a month's report must not take
  // a core from the listings and the state thread (bench/README.md, the listing during reports).
  // Last: its thread stops before the rest goes.
  mutable BackgroundWorker reports_;
};

}  // namespace gf
