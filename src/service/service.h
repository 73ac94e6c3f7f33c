// ClusterService: the operations the API (and so every client) can ask of the controller.
//
// Thread-safe: API worker threads call it concurrently; the implementation (Controller) turns
// each call into a command for its single state thread and blocks until that command is applied
// and, for writes, durable. Every call names its Caller; permission checks happen here, not in
// the transport, so every transport enforces the same rules.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/audit_report.h"
#include "model/energy.h"
#include "model/event.h"
#include "model/explanation.h"
#include "model/gpu_minute.h"
#include "model/gpu_sample.h"
#include "model/job.h"
#include "model/node.h"
#include "model/notification.h"
#include "model/slice.h"
#include "model/terminal.h"
#include "model/token.h"
#include "service/job_log.h"

namespace gf {

// The most per-minute rollups GpuHistory answers with: 31 days of one GPU.
inline constexpr int kMaxGpuHistoryMinutes = 31 * 24 * 60;

// Who is asking. From SO_PEERCRED on the Unix socket; from a bearer token (model/token.h)
// on TCP; unauthenticated on TCP without one.
struct Caller {
  bool authenticated = false;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string user;         // login name ("uid1234" when the uid has no passwd entry)
  Role role = Role::kUser;  // a token's role (read only when via_token)
  // Set when a node agent authenticated with a node token: the node it speaks for ("" for a
  // join token: any one node). Such a caller is not a user (`authenticated` stays false, so no
  // job route accepts it): it may use the agent link of that node and nothing else.
  std::optional<NodeId> node{};
  // How the caller proved who it is: an API token (true), or the kernel's SO_PEERCRED on the
  // Unix socket (false). What it may do follows from this (controller/authorization.h): root
  // on the socket is an admin, another socket user a user, and a token's caller has exactly
  // the token's role, whatever its uid (a root token of role user is a user).
  bool via_token = false;
};

struct JobFilter {
  bool include_finished = false;    // default: PENDING/STARTING/RUNNING only
  std::optional<std::string> user;  // root only: filter by owner name
  int limit = 1000;
  // The cursor: only ids below this (JobListing::next of the page before). Ids only grow, so a
  // page's successors do not shift when jobs are submitted meanwhile.
  std::optional<JobId> before{};
};

// One page of ClusterService::ListSharedJobs, newest (largest id) first. Each job is immutable
// and shared: an implementation that publishes a view of its jobs hands out the view's own
// copies, so while a job is unchanged every listing returns the same object, and a caller may
// key what it derives from a job (the API's rendered rows) by that object. `next` is the cursor
// of the page after (JobFilter::before) when there may be more, nullopt when this was the last.
struct JobListing {
  std::vector<std::shared_ptr<const Job>> jobs{};
  std::optional<JobId> next{};
};

// `gpufleet history` (issue #24, Slurm's sacct): which jobs, of any state. Every filter that is
// set must hold. The window keeps the jobs that were in the system during [since, until):
// submitted before `until` and not ended before `since`.
struct HistoryFilter {
  std::optional<Time> since{};
  std::optional<Time> until{};
  std::vector<JobState> states{};     // empty = any
  std::optional<std::string> user{};  // only this owner (another's: operators and admins)
  std::optional<std::string> team{};  // "" = the default team
  std::optional<JobId> before{};      // the cursor: ids below this (HistoryPage::next)
  int limit = 100;                    // jobs in the page, 1..kMaxHistoryPage
};
inline constexpr int kMaxHistoryPage = 10'000;

// One page of history, newest (largest id) first; `next` is the cursor of the page after it
// (HistoryFilter::before), nullopt when this was the last.
struct HistoryPage {
  std::vector<Job> jobs{};
  std::optional<JobId> next{};
};

// One job holding (a share of) a GPU.
struct GpuHolder {
  JobId job;
  std::string user;                   // the job's owner
  std::string team;                   // the job's team ("" = the default team)
  int share_milli = kWholeGpuMilli;   // its compute share; 1000 = the whole GPU
  std::int64_t memory_limit_mib = 0;  // its memory limit on the GPU; 0 = none
  // Kubernetes mode: the pod ("namespace", "name") and its container that hold the GPU; "".
  std::string pod_namespace{};
  std::string pod{};
  std::string container{};
};

struct GpuStatus {
  NodeId node;
  Gpu gpu;                          // health and health_cause as of the latest sample
  std::optional<JobId> job;         // the job holding it, when exactly one does
  std::string user;                 // that job's owner
  std::string team;                 // that job's team
  std::vector<GpuHolder> holders;   // every job holding it (a shared GPU: several), by job id
  std::optional<GpuSample> sample;  // latest reading, processes attributed
  // "allocated_no_process", "unallocated_process", "gpu_memory_over_limit"
  std::vector<std::string> conditions;
};

// Counts behind the gpufleet_* Prometheus series (metrics/).
struct QueueStats {
  std::string priority;  // "high", "normal", "low"
  int pending = 0;
  double oldest_wait_seconds = 0;  // 0 when none pending
};

struct TeamStats {
  std::string team;        // "" is shown as "default"
  int allocated_gpus = 0;  // held by the team's jobs now
  int running_jobs = 0;
  int pending_jobs = 0;
  double gpu_seconds_total = 0;  // allocated GPU-seconds, ended and running jobs
};

// The scheduler's passes of one kind since the controller started (like Slurm's sdiag), so
// that an operator sees what scheduling costs: "full" (the whole queue) and "incremental"
// (one arrival or end, counted per event).
struct PassStats {
  std::string kind;
  std::int64_t count = 0;
  double seconds = 0;  // their total time
};

// Notifications delivered since the server started, by channel ("webhook", "email") and
// outcome ("sent", "failed", "dropped"): gpufleet_notifications_total.
struct NotificationCount {
  std::string channel{};
  std::string outcome{};
  std::int64_t count = 0;
};

struct ClusterStats {
  std::vector<std::pair<std::string, int>> jobs_by_state;  // every JobState name, with count
  std::vector<QueueStats> queue;                           // one per priority class
  // Queue wait of jobs that started since the controller started (histogram, seconds).
  std::vector<double> wait_bucket_bounds;        // upper bounds, ascending (+Inf implied)
  std::vector<std::int64_t> wait_bucket_counts;  // cumulative, same length as bounds
  std::int64_t wait_count = 0;
  double wait_sum_seconds = 0;
  std::vector<TeamStats> teams;  // ordered by name
  int nodes = 0;
  int gpus = 0;
  int gpus_allocated = 0;
  std::vector<PassStats> passes;                   // "full", then "incremental"
  std::vector<NotificationCount> notifications{};  // empty without a notifier
  // The controller's durable commits since it started (one per turn that changed anything:
  // group commit), their total time, and the requests answered after them: requests / commits
  // is how many callers shared a commit.
  std::int64_t commits = 0;
  double commit_seconds = 0;
  std::int64_t committed_requests = 0;
};

// `gpufleet submit --array 0-99%4`: one job per index, created together. Each task gets
// JobSpec::array = {the first task's id, its index, max_running}.
struct ArrayRequest {
  std::vector<int> indices;        // distinct, each >= 0; the tasks' ids follow this order
  std::optional<int> max_running;  // the %N: tasks of the array holding GPUs at once; >= 1
};
// Bounds of an array, so one request cannot flood the queue (Slurm's MaxArraySize is 1001).
inline constexpr int kMaxArrayTasks = 10'000;
inline constexpr int kMaxArrayIndex = 9'999'999;
// Bound of a multi-job submission (ClusterService::SubmitBatch), as an array's.
inline constexpr int kMaxBatchJobs = kMaxArrayTasks;

// `gpufleet cancel --user U --state S --name N --team T` (scancel -u -t -n -A): the jobs a
// filtered cancel names; each set field must match, and at least one must be set.
struct JobSelector {
  std::optional<std::string> user{};  // the owner's login name
  std::optional<JobState> state{};    // PENDING, or RUNNING (STARTING ones too)
  std::optional<std::string> name{};  // the job's name, exactly
  std::optional<std::string> team{};  // its team, exactly ("" = no team)
  bool Empty() const { return !user && !state && !name && !team; }
};

// `gpufleet cancel --signal SIG` by filter: the running jobs the signal went to, and the jobs the
// filter matched that it could not reach (pending, or still starting), each as it is now.
struct SignalOutcome {
  std::vector<Job> signalled{};
  std::vector<Job> skipped{};
};

// `gpufleet update JOB --gpus N --time T --class C --team T --name N --cpus N --mem SIZE`
// (scontrol update): what to change on a pending job; an unset field stays as it is.
struct JobUpdate {
  std::optional<int> gpus{};                         // GPUs (per node)
  std::optional<std::chrono::seconds> time_limit{};  // > 0
  std::optional<PriorityClass> priority{};           // its class
  std::optional<std::string> team{};
  std::optional<std::string> name{};
  std::optional<int> cpus{};                 // host CPUs per node; 0 = none reserved
  std::optional<std::int64_t> memory_mib{};  // host memory per node; 0 = none reserved
  bool Empty() const {
    return !gpus && !time_limit && !priority && !team && !name && !cpus && !memory_mib;
  }
};

// `gpufleet quota`: one team's quota and GPU-hour budget (PolicyConfig teams) and its use.
struct TeamQuota {
  std::string team{};   // "" = jobs of no team
  bool listed = false;  // in the settings file; else it follows other_teams
  int guaranteed_gpus = 0;
  std::optional<int> max_gpus{};  // nullopt = no limit
  int held_milli = 0;      // milli-GPUs held by its starting and running jobs now (shares count)
  int borrowed_milli = 0;  // of which preemptible (beyond its guarantee or budget)
  std::optional<double> budget_gpu_hours{};  // per period; nullopt = no budget
  double used_gpu_hours = 0;                 // in the period so far, running jobs included
  std::optional<double> left_gpu_hours{};    // budget - used, at least 0; nullopt = no budget
  std::string over_budget{};                 // the policy when over: "borrow_only" | "hold"
  // It has a budget and has used all of it (used >= budget, the scheduler's test): its new
  // jobs start as over_budget says.
  bool out_of_budget = false;
  EnergyCharge energy{};  // its GPUs' energy in the period so far, with cost and CO2
};

struct UserQuota {
  std::string team{};
  std::string user{};
  double used_gpu_hours = 0;  // in the period so far, running jobs included
  EnergyCharge energy{};      // likewise
};

struct QuotaReport {
  Time period_start{};  // the budget period: a calendar month in UTC
  Time period_end{};
  bool quotas_on = false;          // teams are configured
  std::vector<TeamQuota> teams{};  // by name
  std::vector<UserQuota> users{};  // by team, then user
};

// What `gpufleet token create` / `gpufleet node token create` ask for.
struct TokenRequest {
  TokenKind kind = TokenKind::kUser;
  std::string subject{};    // user token: the login name; node token: the node ("" = any)
  Role role = Role::kUser;  // user token only
  std::string description{};
  std::optional<std::chrono::seconds> expires_in{};  // none = never expires
};

// A new token: the text to hand over (shown once) and what is stored.
struct IssuedToken {
  std::string text;
  ApiToken token;
};

class ClusterService {
 public:
  virtual ~ClusterService() = default;

  // Validates, stores durably, and returns the job (state PENDING). Errors: kInvalidArgument
  // naming the field (bad spec, more GPUs than any node has, unknown GPU type),
  // kPermissionDenied (unauthenticated caller).
  virtual Result<Job> Submit(const Caller& caller, JobSpec spec) = 0;

  // A job array: Submit's checks once, then one PENDING job per index with consecutive ids
  // (the first is the array's id), all in one commit. Returns the tasks in index order.
  // Errors: Submit's, and kInvalidArgument for an empty, oversized or repeating index list.
  virtual Result<std::vector<Job>> SubmitArray(const Caller& caller,
                                               JobSpec spec,
                                               ArrayRequest array) = 0;

  // Several jobs in one request (POST /api/v1/jobs {"jobs": [...]}): every spec passes Submit's
  // checks before any job is created, then all are queued in one commit, with increasing ids in
  // the order sent. All or none: the first refused spec refuses the batch, its error naming it
  // ("jobs[3]: gpus: ..."). Returns one job per spec, in that order (a multi-node spec: its
  // rank-0 member). Errors: Submit's, and kInvalidArgument for an empty or oversized batch.
  virtual Result<std::vector<Job>> SubmitBatch(const Caller& caller,
                                               std::vector<JobSpec> specs) = 0;

  // Cancels every unfinished task of the array whose first task is `array_job` (owner or
  // root). Returns the tasks as they are after the request. kNotFound when no such array is
  // visible; kFailedPrecondition when every task already ended.
  virtual Result<std::vector<Job>> CancelArray(const Caller& caller, JobId array_job) = 0;

  // Jobs the caller may see (root: all; others: their own), newest first.
  virtual Result<std::vector<Job>> ListJobs(const Caller& caller, const JobFilter& filter) = 0;
  // The same jobs as a page of shared immutable copies (JobListing), what GET /jobs serves. The
  // default copies ListJobs' answer (no job is shared between two calls): the controller's
  // published view overrides it.
  virtual Result<JobListing> ListSharedJobs(const Caller& caller, const JobFilter& filter) {
    GF_ASSIGN_OR_RETURN(std::vector<Job> jobs, ListJobs(caller, filter));
    JobListing page;
    page.jobs.reserve(jobs.size());
    for (Job& job : jobs) {
      page.jobs.push_back(std::make_shared<const Job>(std::move(job)));
    }
    if (!page.jobs.empty() && static_cast<int>(page.jobs.size()) >= filter.limit) {
      page.next = page.jobs.back()->id;
    }
    return page;
  }

  // Every queued job's id in scheduling order, as of the last pass: index + 1 is the 1-based
  // position `explain` shows. Other users' ids included: callers use it to number the jobs
  // they may see (GET /jobs' queue_position) and must not pass it on.
  virtual Result<std::vector<JobId>> QueueOrder(const Caller& caller) = 0;

  // kNotFound also when the job exists but belongs to someone else (no existence leak).
  virtual Result<Job> GetJob(const Caller& caller, JobId id) = 0;

  // A page of the jobs `filter` selects among those the caller may see (a user: their own;
  // operators and admins: everyone's), read from the store page by page: active jobs as
  // ListJobs shows them, finished ones with their usage. Errors: kInvalidArgument for a limit
  // outside 1..kMaxHistoryPage or `until` before `since`; kPermissionDenied for a user asking
  // for another user's jobs.
  virtual Result<HistoryPage> JobHistory(const Caller& caller, const HistoryFilter& filter) = 0;

  // Cancels a pending or running job (running: SIGTERM, grace, SIGKILL). Returns the job as
  // it is after the request was recorded. kFailedPrecondition if already finished.
  virtual Result<Job> CancelJob(const Caller& caller, JobId id) = 0;

  // Job control, as Slurm's scontrol hold/release/requeue/update and scancel's filters
  // (issue #24). Visibility as GetJob (kNotFound for a job the caller may not see); who may is
  // controller/authorization.h's table (hold, release, requeue, update: the owner, or an
  // operator or an admin).
  //
  // HoldJob: a PENDING job stays pending but is kept out of the passes (its reason names who
  // holds it and how to release it) until ReleaseJob; stored, so a hold outlives a restart. A
  // multi-node job is held whole. Holding a held job changes nothing, except that an
  // operator's or admin's hold replaces its owner's. kFailedPrecondition naming the state for a
  // job that is not PENDING.
  // ReleaseJob: the job is a candidate again. A hold placed by someone other than its owner
  // (an administrator's hold) is released by an operator or an admin only (kPermissionDenied
  // for its owner). kFailedPrecondition for a job that is not held.
  virtual Result<Job> HoldJob(const Caller& caller, JobId id) = 0;
  virtual Result<Job> ReleaseJob(const Caller& caller, JobId id) = 0;
  // A STARTING or RUNNING job is stopped as a preemption stops it (its checkpoint signal,
  // SIGKILL after the kill grace) and goes back to the queue at its place. kFailedPrecondition
  // for a job that does not hold GPUs, one already being stopped, and one submitted with
  // `--no-requeue` (it must not run twice), each saying what to do instead.
  virtual Result<Job> RequeueJob(const Caller& caller, JobId id) = 0;
  // Cancels every unfinished job the caller may cancel that `selector` matches (as CancelJob
  // each), in one command; returns them as they are after the request (none: an empty list).
  // kInvalidArgument for an empty selector.
  virtual Result<std::vector<Job>> CancelJobs(const Caller& caller,
                                              const JobSelector& selector) = 0;
  // `gpufleet cancel --signal SIG` (Slurm's scancel --signal): delivers `sig` (1..kMaxJobSignal,
  // not KILL: model/job.h ParseJobSignal) to every process of a RUNNING job, every member of a
  // multi-node job, through its node's agent, without ending it; an event records who sent
  // what. Who may: as CancelJob (own jobs; operators and admins any). Returns the job (its state
  // unchanged). Errors: kInvalidArgument for a signal outside that range; kNotFound as GetJob;
  // kFailedPrecondition naming the state for a job that is not RUNNING ("job 12 is pending:
  // --signal reaches running jobs only"), or whose node's agent is away.
  virtual Result<Job> SignalJob(const Caller& caller, JobId id, int sig) = 0;
  // The same for every unfinished job the caller may cancel that `selector` matches: the running
  // ones are signalled, the others (pending, starting) are skipped and returned as such.
  // kInvalidArgument for an empty selector or a bad signal.
  virtual Result<SignalOutcome> SignalJobs(const Caller& caller,
                                           const JobSelector& selector,
                                           int sig) = 0;
  // Changes a PENDING job as `update` says, checked as a submission is (the class exists, the
  // team is one the caller may charge, the GPUs fit some node), and stores it. A job it
  // changes goes back to the scheduler with its place kept. kFailedPrecondition naming the
  // state for a job that is not PENDING; kInvalidArgument naming the field for an empty
  // update, a multi-node job's GPUs, or what a submission would refuse.
  virtual Result<Job> UpdateJob(const Caller& caller, JobId id, const JobUpdate& update) = 0;

  // A chunk of the output of job `request.job` (its current run), read on the node it runs or
  // ran on (job_log.h). Visibility as GetJob (kNotFound). The controller resolves the job and
  // its node on its state thread; the read itself happens outside it, through the node's agent
  // (NodeAgent::ReadLog), so a slow node delays only this caller. Not a state change: nothing
  // is stored. Errors: kFailedPrecondition for a job that has not started (pending, or
  // requeued and not started again), naming its state; kUnavailable when the node is down or
  // its agent unreachable or too slow, naming the node and the file there; kIo.
  virtual Result<LogChunk> ReadJobLog(const Caller& caller, const LogRequest& request) = 0;

  // Hands keystrokes, a window size or a keepalive to the terminal of a running job started by
  // `gpufleet run` (model/terminal.h), through its node's agent as ReadJobLog reads: resolved
  // on the state thread, sent from the caller's. Only the job's owner may type into it
  // (kNotFound for anyone else; one who can see the job is told the terminal is its owner's).
  // kFailedPrecondition for a job without a terminal or not running; kUnavailable as ReadJobLog.
  virtual Status WriteTerminal(const Caller& caller, JobId id, const TerminalInput& input) = 0;

  virtual Result<std::vector<Event>> JobEvents(const Caller& caller, JobId id) = 0;

  // Why the scheduler does what it does with a pending or running job (`gpufleet explain`):
  // computed from the snapshot and queue a pass would see now (scheduler/explain.h). Owner or
  // root only (kNotFound otherwise, as GetJob). kFailedPrecondition for a job that has ended,
  // or that waits outside the queue (e.g. for a dependency), with its reason.
  virtual Result<Explanation> ExplainJob(const Caller& caller, JobId id) = 0;

  virtual Result<std::vector<Node>> ListNodes(const Caller& caller) = 0;
  virtual Result<std::vector<GpuStatus>> ListGpus(const Caller& caller) = 0;
  // One GPU's stored per-minute rollups with from <= minute < to, oldest first, at most
  // kMaxGpuHistoryMinutes of them (the newest when there are more): its series past what
  // the Telemetry's rings hold in memory. As public as ListGpus. Errors: kInvalidArgument
  // when to < from.
  virtual Result<std::vector<GpuMinute>> GpuHistory(const Caller& caller,
                                                    const GpuUuid& uuid,
                                                    Time from,
                                                    Time to) = 0;

  // Cluster-wide counts (no per-user detail beyond team totals): anyone may read them, as
  // Prometheus does over TCP.
  virtual Result<ClusterStats> Stats(const Caller& caller) = 0;

  // Teams' quotas, budgets and use in the current period, and users' GPU-hours. Root sees
  // every team; another user sees the teams they belong to (their default team and the teams
  // they have jobs or usage in this period) and only their own user rows.
  virtual Result<QuotaReport> Quota(const Caller& caller) = 0;

  // The monthly audit report (model/audit_report.h, docs/reports.md), computed from the store.
  // Operators and admins see every team, user and job; another user sees the figures of
  // their own teams (as Quota picks them, plus the teams they ran in that month) and only
  // their own user rows and jobs; cluster, node and GPU figures are everyone's. Errors:
  // kInvalidArgument naming `period` (not YYYY-MM) or `team` (empty); kPermissionDenied for a
  // user asking for a team that is not theirs.
  virtual Result<Report> MonthlyReport(const Caller& caller, const ReportRequest& request) = 0;

  // `gpufleet quota approve`: lets a pending job run past its team's GPU-hour budget (stored,
  // with an event). Root only (kPermissionDenied). kFailedPrecondition, naming the state, for a
  // job that is not pending; kNotFound for no such job.
  virtual Result<Job> ApproveJob(const Caller& caller, JobId id) = 0;

  // `gpufleet checkpoint`: the job saved a checkpoint now (its owner or root); preemption then
  // counts only the work since. kFailedPrecondition for a job that is not running.
  virtual Result<Job> CheckpointJob(const Caller& caller, JobId id) = 0;

  // Tokens for the API over TCP (controller/tokens.h). CreateToken: admins only
  // (kPermissionDenied); a user token acts as `subject`, a Unix user this server knows
  // (kInvalidArgument naming `user` otherwise); a node token may name its node. The answer
  // holds the token's text, which is shown this once. ListTokens: an admin sees every token, a
  // user their own user tokens. RevokeToken: an admin, or the user a token acts as (kNotFound
  // for a token the caller may not see).
  virtual Result<IssuedToken> CreateToken(const Caller& caller, TokenRequest request) = 0;
  virtual Result<std::vector<ApiToken>> ListTokens(const Caller& caller) = 0;
  virtual Result<ApiToken> RevokeToken(const Caller& caller, const std::string& id) = 0;

  // `gpufleet node drain NODE --reason ...`: the node takes no new jobs; its running jobs go on
  // (draining), and it is drained once they have ended. ResumeNode takes work again. Operators
  // and admins only (kPermissionDenied); kNotFound for an unknown node; kInvalidArgument for an
  // empty reason.
  virtual Result<Node> DrainNode(const Caller& caller, const NodeId& node, std::string reason) = 0;
  virtual Result<Node> ResumeNode(const Caller& caller, const NodeId& node) = 0;

  // `gpufleet gpu resume NODE GPU` (GPU: its index or UUID): returns a failed or degraded GPU
  // to service. The node's agent forgets what it held against the card (a fatal XID, rising
  // ECC errors) and judges it afresh from its next sample, so a card still broken fails again.
  // Operators and admins only (kPermissionDenied); kNotFound for an unknown node or GPU;
  // kFailedPrecondition when the GPU is healthy; kUnavailable when the node's agent is away.
  // Returns the GPU as known before the reset.
  // `gpufleet gpu mode NODE GPU exclusive|shared|mps`: how the GPU is shared (SharingMode).
  // Admins only (kPermissionDenied). On a GPU that jobs hold the change waits until they end
  // (Gpu::sharing_next; the GPU takes no new work meanwhile). kInvalidArgument for an unknown
  // mode (and for mig, not supported yet); kNotFound for an unknown node or GPU.
  virtual Result<Gpu> SetGpuMode(const Caller& caller,
                                 const NodeId& node,
                                 const std::string& gpu,
                                 const std::string& mode) = 0;
  // `gpufleet gpu mig-layout NODE GPU 3g.40gb,2g.20gb,1g.10gb,1g.10gb`: the MIG devices the
  // GPU is to have ("" or "none": none). Admins only. The GPU must have MIG on and offer each
  // profile; the layout waits until no job holds the GPU (Gpu::mig_layout_next), then its agent
  // applies it. kInvalidArgument for a bad layout, kFailedPrecondition with MIG off, kNotFound.
  virtual Result<Gpu> SetMigLayout(const Caller& caller,
                                   const NodeId& node,
                                   const std::string& gpu,
                                   const std::string& layout) = 0;
  virtual Result<Gpu> ResumeGpu(const Caller& caller,
                                const NodeId& node,
                                const std::string& gpu) = 0;

  // Notification subscriptions (issue #8, `gpufleet notify`). Create takes `request`'s scope,
  // team, channel, target and kinds; the id, owner (the caller) and time are the controller's.
  // A user subscribes for themselves (kUser); kTeam needs a member of the team ([team.NAME]
  // members) or an admin; kCluster an admin (kPermissionDenied naming the rule). Errors also:
  // kInvalidArgument for a target that does not fit its channel (CheckSubscriptionTarget) or
  // a team scope without a team. List: the caller's own, every one for an admin. Delete: the
  // caller's own or (admin) any; kNotFound otherwise. Authenticated callers only.
  virtual Result<Subscription> CreateSubscription(const Caller& caller, Subscription request) = 0;
  virtual Result<std::vector<Subscription>> ListSubscriptions(const Caller& caller) = 0;
  virtual Result<Subscription> DeleteSubscription(const Caller& caller, const std::string& id) = 0;
};

}  // namespace gf
