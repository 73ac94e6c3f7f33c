#include "controller/read_side.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "controller/authorization.h"
#include "controller/tokens.h"

namespace gf {

ClusterReader::ClusterReader(const Clock& clock,
                             const Telemetry& telemetry,
                             ReadSideOptions options,
                             OpenReader open_reader)
    : clock_(clock),
      telemetry_(telemetry),
      options_(std::move(options)),
      readers_(std::move(open_reader)),
      view_(std::make_shared<const ControllerView>()) {}

void ClusterReader::Publish(std::shared_ptr<const ControllerView> view) {
  GF_CHECK(view != nullptr);
  std::lock_guard lock(mu_);
  view_ = std::move(view);
}

std::shared_ptr<const ControllerView> ClusterReader::Latest() const {
  std::lock_guard lock(mu_);
  return view_;
}

void ClusterReader::Close() {
  closed_.store(true);
}

Result<std::shared_ptr<const ControllerView>> ClusterReader::Read() const {
  std::shared_ptr<const ControllerView> view = Latest();
  if (view->fatal) {
    return *view->fatal;
  }
  if (closed_.load()) {
    return Unavailable("gpufleet is shutting down");
  }
  return view;
}

// Every user's queued jobs: a position counts the jobs ahead, whoever they are (as `explain`
// shows anyone); the ids of other users' jobs go no further than the route's lookup. The last
// pass's order, less the jobs no longer pending in this view (one that left in a turn without
// a pass), so that positions have no gaps.
Result<std::vector<JobId>> ClusterReader::QueueOrder(const Caller& /*caller*/) const {
  GF_ASSIGN_OR_RETURN(const std::shared_ptr<const ControllerView> view, Read());
  std::vector<JobId> order;
  if (view->queue_order) {
    order.reserve(view->queue_order->size());
    for (const JobId id : *view->queue_order) {
      const Job* job = view->Find(id);
      if (job != nullptr && job->state == JobState::kPending) {
        order.push_back(id);
      }
    }
  }
  return order;
}

Result<std::vector<Job>> ClusterReader::ListJobs(const Caller& caller,
                                                 const JobFilter& filter) const {
  GF_ASSIGN_OR_RETURN(const JobListing page, ListSharedJobs(caller, filter));
  std::vector<Job> out;
  out.reserve(page.jobs.size());
  for (const auto& job : page.jobs) {
    out.push_back(*job);
  }
  return out;
}

Result<JobListing> ClusterReader::ListSharedJobs(const Caller& caller,
                                                 const JobFilter& filter) const {
  GF_ASSIGN_OR_RETURN(const std::shared_ptr<const ControllerView> view, Read());
  GF_TRY(AuthorizeList(caller, filter.user));
  JobListing out;
  auto wanted = [&](const Job& job) {
    if (!Visible(caller, job)) {
      return false;
    }
    return !filter.user || job.owner.user == *filter.user;
  };
  if (!filter.include_finished) {
    view->NewestBelow(filter.before, [&](const std::shared_ptr<const Job>& job) {
      if (static_cast<int>(out.jobs.size()) >= filter.limit) {
        if (!out.jobs.empty()) {
          out.next = out.jobs.back()->id;  // another job follows the full page
        }
        return false;
      }
      if (wanted(*job)) {
        out.jobs.push_back(SharedLive(job));
      }
      return true;
    });
    return out;
  }
  JobQuery query;
  if (!Allows(caller, Resource::kJob, Action::kRead, Ownership::kOther)) {
    query.uid = caller.uid;
  }
  query.before = filter.before;
  query.limit = filter.limit;
  GF_ASSIGN_OR_RETURN(ReadConnections::Lease reader, readers_.Acquire());
  // Read after the view was taken: a stored copy is as new as the view's or newer.
  GF_ASSIGN_OR_RETURN(std::vector<Job> stored, reader->ListJobs(query));
  if (!stored.empty() && static_cast<int>(stored.size()) >= query.limit) {
    out.next = stored.back().id;
  }
  for (auto& job : stored) {
    if (wanted(job)) {
      out.jobs.push_back(SharedRead(*view, std::move(job)));
    }
  }
  return out;
}

Status ClusterReader::AuthorizeList(const Caller& caller, const std::optional<std::string>& user) {
  const bool others = user.has_value() && *user != caller.user;
  return Authorize(caller,
                   Resource::kJob,
                   Action::kList,
                   others ? Ownership::kOther : Ownership::kOwn,
                   others ? "user" : "jobs");
}

Job ClusterReader::AsRead(const ControllerView& view, Job stored) const {
  return *SharedRead(view, std::move(stored));
}

std::shared_ptr<const Job> ClusterReader::SharedRead(const ControllerView& view, Job stored) const {
  // The view's copy carries the current pending reason; a job stored as ended has left it.
  const std::shared_ptr<const Job>* live =
      IsTerminal(stored.state) ? nullptr : view.FindShared(stored.id);
  return live != nullptr ? SharedLive(*live)
                         : std::make_shared<const Job>(WithLiveUsage(std::move(stored)));
}

std::shared_ptr<const Job> ClusterReader::SharedLive(const std::shared_ptr<const Job>& live) const {
  // Only a job that held GPUs (live usage) or has measured usage (its energy's charge) reads
  // differently from the view's copy; every other one, a pending job above all, is shared as
  // it is, so that callers see the same object until the job changes (JobListing).
  const bool live_usage = live->state == JobState::kStarting || live->state == JobState::kRunning;
  if (!live_usage && !live->usage) {
    return live;
  }
  return std::make_shared<const Job>(WithLiveUsage(*live));
}

Result<Job> ClusterReader::FindInView(const ControllerView& view,
                                      StoreReader& reader,
                                      const Caller& caller,
                                      JobId id) const {
  GF_TRY(Authorize(
      caller, Resource::kJob, Action::kRead, Ownership::kOwn, "job " + std::to_string(id.value())));
  std::optional<Job> found;
  if (const Job* live = view.Find(id)) {
    found = *live;
  } else {
    // Not active when the view was published: ended and committed by then (or submitted since).
    GF_ASSIGN_OR_RETURN(found, reader.GetJob(id));
  }
  if (!found || !Visible(caller, *found)) {
    return NotVisible(id);
  }
  return std::move(*found);
}

Result<Job> ClusterReader::GetJob(const Caller& caller, JobId id) const {
  GF_ASSIGN_OR_RETURN(const std::shared_ptr<const ControllerView> view, Read());
  GF_ASSIGN_OR_RETURN(ReadConnections::Lease reader, readers_.Acquire());
  GF_ASSIGN_OR_RETURN(Job job, FindInView(*view, *reader, caller, id));
  return WithLiveUsage(std::move(job));
}

Result<std::vector<Event>> ClusterReader::JobEvents(const Caller& caller, JobId id) const {
  GF_ASSIGN_OR_RETURN(const std::shared_ptr<const ControllerView> view, Read());
  GF_ASSIGN_OR_RETURN(ReadConnections::Lease reader, readers_.Acquire());
  GF_TRY(FindInView(*view, *reader, caller, id));
  constexpr int kMaxEvents = 10'000;
  return reader->ListEvents(id, 0, kMaxEvents);  // every committed turn's, the view's included
}

Result<std::vector<Node>> ClusterReader::ListNodes(const Caller& /*caller*/) const {
  GF_ASSIGN_OR_RETURN(const std::shared_ptr<const ControllerView> view, Read());
  std::vector<Node> out;
  out.reserve(view->nodes.size());
  std::map<NodeId, std::size_t> index;
  for (const auto& node : view->nodes) {
    index.emplace(node->name, out.size());
    out.push_back(*node);
  }
  // What the jobs holding GPUs hold of each node's CPUs and memory (`gpufleet nodes`), as the
  // scheduler counts it: their allocations. Totals only, so every caller may see them.
  for (const auto& [page_id, page] : view->pages) {
    for (const std::shared_ptr<const Job>& job : *page) {
      if (!HoldsGpus(*job)) {
        continue;
      }
      if (auto it = index.find(job->allocation->node); it != index.end()) {
        out[it->second].cpus_in_use += job->allocation->cpus;
        out[it->second].memory_mib_in_use += job->allocation->memory_mib;
      }
    }
  }
  return out;
}

// Every caller may list GPUs (see docs/decisions/0001), so the caller is not consulted. Which
// job and user hold a GPU is shown to everyone (like nvidia-smi shows processes); the job itself
// stays private to its owner. Served from Telemetry alone.
namespace {

// A process's command line is as private as a job's command: only who may read the jobs of its
// owner sees it (an argument may hold a token or a password). Pid, owner and memory stay:
// `nvidia-smi` shows those to every user of the machine.
void HideOthersCommands(const Caller& caller, GpuSample& sample) {
  for (GpuProcessSample& p : sample.processes) {
    const Ownership whose = p.uid ? Whose(caller, *p.uid) : Ownership::kOther;
    if (!Allows(caller, Resource::kJob, Action::kRead, whose)) {
      p.command.clear();
    }
  }
}

}  // namespace

Result<std::vector<GpuStatus>> ClusterReader::ListGpus(const Caller& caller) const {
  TelemetrySnapshot snapshot = telemetry_.Snapshot();
  std::vector<GpuStatus> out;
  out.reserve(snapshot.gpus.size());
  for (GpuView& view : snapshot.gpus) {
    GpuStatus status;
    status.node = std::move(view.node);
    status.gpu = std::move(view.gpu);
    for (GpuAssignment& a : view.assignments) {
      status.holders.push_back(GpuHolder{.job = a.job,
                                         .user = std::move(a.user),
                                         .team = std::move(a.team),
                                         .share_milli = a.share_milli,
                                         .memory_limit_mib = a.memory_limit_mib,
                                         .pod_namespace = std::move(a.pod_namespace),
                                         .pod = std::move(a.pod),
                                         .container = std::move(a.container)});
    }
    if (status.holders.size() == 1) {  // job/user/team: as before sharing, for one holder
      status.job = status.holders[0].job;
      status.user = status.holders[0].user;
      status.team = status.holders[0].team;
    }
    status.sample = std::move(view.sample);
    if (status.sample) {
      HideOthersCommands(caller, *status.sample);
    }
    status.conditions = std::move(view.conditions);
    out.push_back(std::move(status));
  }
  return out;
}

Result<ClusterStats> ClusterReader::Stats(std::vector<NotificationCount> notifications) const {
  GF_ASSIGN_OR_RETURN(const std::shared_ptr<const ControllerView> view, Read());
  ClusterStats stats = ComputeStats(*view);
  stats.notifications = std::move(notifications);
  return stats;
}

// From a published view: the active jobs, nodes and counters of the last turn, times to now.
ClusterStats ClusterReader::ComputeStats(const ControllerView& view) const {
  const ControllerCounters& counters = view.counters;
  const Time now = clock_.Now();
  ClusterStats stats;
  std::map<JobState, int> by_state;
  // Every configured class, so that one with nothing pending still shows 0; a class the
  // config dropped shows while jobs of it wait.
  std::map<PriorityClass, QueueStats> queue;
  for (const PriorityClassPolicy& cls : options_.policy.classes) {
    queue[PriorityClass{.name = cls.name}].priority = cls.name;
  }
  std::map<std::string, TeamStats> teams;
  for (const auto& [team, seconds] : counters.team_gpu_seconds) {
    teams[team].gpu_seconds_total = seconds;
  }
  view.ForEach([&](const Job& job) {
    by_state[job.state] += 1;
    TeamStats& team = teams[CountedTeam(job)];
    if (job.state == JobState::kPending) {
      team.pending_jobs += 1;
      QueueStats& q = queue[job.spec.priority];
      q.priority = job.spec.priority.name;
      q.pending += 1;
      q.oldest_wait_seconds = std::max(
          q.oldest_wait_seconds, std::chrono::duration<double>(now - job.submit_time).count());
    } else if (job.allocation) {
      team.running_jobs += 1;
      team.allocated_gpus += static_cast<int>(job.allocation->gpus.size());
      team.gpu_seconds_total += HeldGpuSeconds(job, now);
      stats.gpus_allocated += static_cast<int>(job.allocation->gpus.size());
    }
  });
  for (JobState s : {JobState::kPending,
                     JobState::kStarting,
                     JobState::kRunning,
                     JobState::kCompleted,
                     JobState::kFailed,
                     JobState::kCancelled,
                     JobState::kTimeout,
                     JobState::kPreempted,
                     JobState::kNodeFail}) {
    auto ended = counters.ended.find(s);
    const std::int64_t count =
        IsTerminal(s) ? (ended == counters.ended.end() ? 0 : ended->second) : by_state[s];
    stats.jobs_by_state.emplace_back(std::string(ToString(s)), static_cast<int>(count));
  }
  for (auto& [p, q] : queue) {
    stats.queue.push_back(q);
  }
  std::stable_sort(stats.queue.begin(), stats.queue.end(), [&](const auto& a, const auto& b) {
    return ClassPolicyFor(options_.policy, PriorityClass{.name = a.priority}).rank <
           ClassPolicyFor(options_.policy, PriorityClass{.name = b.priority}).rank;
  });  // in the config's order, as `gpufleet queue` lists classes
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i < kWaitBucketBounds.size(); ++i) {
    cumulative += counters.wait_buckets[i];
    stats.wait_bucket_bounds.push_back(kWaitBucketBounds[i]);
    stats.wait_bucket_counts.push_back(cumulative);
  }
  stats.wait_count = counters.wait_count;
  stats.wait_sum_seconds = counters.wait_sum_seconds;
  for (auto& [name, team] : teams) {
    team.team = name;
    stats.teams.push_back(team);
  }
  for (const auto& node : view.nodes) {
    stats.nodes += 1;
    stats.gpus += static_cast<int>(node->gpus.size());
  }
  stats.passes = {counters.full_passes, counters.incremental_passes};
  stats.commits = counters.commits;
  stats.commit_seconds = counters.commit_seconds;
  stats.committed_requests = counters.committed_requests;
  return stats;
}

// A running job's usage is live in Telemetry; the stored copy is written when it ends. Its
// energy's cost and CO2 follow the current [energy] price.
Job ClusterReader::WithLiveUsage(Job job) const {
  if (job.state == JobState::kStarting || job.state == JobState::kRunning) {
    if (std::optional<JobUsage> usage = telemetry_.Usage(job.id)) {
      job.usage = job.usage ? CombineUsage(*job.usage, *usage) : *usage;
    }
  }
  if (job.usage) {
    job.energy_charge = ChargeFor(job.usage->energy_mj, options_.energy_price);
  }
  return job;
}

Result<std::vector<ApiToken>> ClusterReader::ListTokens(const Caller& caller) const {
  GF_TRY(Authorize(caller, Resource::kToken, Action::kRead, Ownership::kOwn, "token list"));
  // Through a read connection: every token whose creation or revocation was answered is
  // committed.
  GF_TRY(Read());  // the error every command would get, if any
  GF_ASSIGN_OR_RETURN(ReadConnections::Lease reader, readers_.Acquire());
  GF_ASSIGN_OR_RETURN(std::vector<ApiToken> all, reader->ListTokens());
  std::vector<ApiToken> out;
  for (ApiToken& t : all) {
    if (Allows(caller, Resource::kToken, Action::kRead, WhoseToken(caller, t))) {
      out.push_back(Listed(std::move(t)));
    }
  }
  return out;
}

}  // namespace gf
