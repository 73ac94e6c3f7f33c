// PolicyConfig: the administrator's scheduling rules (priority classes, teams and their
// quotas, fair share, preemption, backfill), as plain values that Decide() reads.
//
// A default-constructed PolicyConfig is the stock policy: classes high / normal / low (high
// may preempt normal and low, normal may preempt low), no teams (no quotas, no budgets), fair
// share with a 7-day half-life, a 10-minute minimum run time before preemption, and backfill
// with reservations for the first 100 waiting jobs. The settings file (src/config,
// docs/config.md) fills it; ValidatePolicy() states what a valid one is.
//
// Plain values and pure functions: safe from any thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/job.h"

namespace gf {

// What to do with a job whose GPUs stay idle past its grace (the idle reaper, issue #8).
enum class IdleAction {
  kRequeue,  // stop it with its checkpoint signal and put it back in the queue at its place
  kCancel,   // stop it for good (CANCELLED)
  // Kubernetes mode only (`gpufleet server --kubernetes`, docs/kubernetes.md): an admin's
  // opt-in, per namespace ([team.NAMESPACE]) or for every pod ([class.kubernetes]). Anywhere
  // else gpufleet stops no pod: requeue and cancel only warn there.
  kDeletePod,   // delete the pod through the API server
  kScaleOwner,  // scale its Deployment, StatefulSet or ReplicaSet to 0 (else delete the pod)
};

// What one `[class.NAME]` or `[team.NAME]` table says about idle GPUs (docs/config.md, keys
// idle_*). Unset: the table does not say; a team's values override its jobs' class's
// (idle_policy.h resolves them). Durations of 0 are allowed: `idle_after = "0s"` in a team
// turns reaping off for it where its class has it on.
struct IdleRule {
  std::optional<std::chrono::seconds> after{};              // idle this long: warning
  std::optional<std::chrono::seconds> interactive_after{};  // the same for --interactive jobs
  std::optional<std::chrono::seconds> grace{};              // warning → action
  std::optional<int> util_below_pct{};  // a GPU under this utilisation (0..100) may be idle
  std::optional<IdleAction> action{};
  bool operator==(const IdleRule&) const = default;
};

// One priority class, defined by the administrator. Jobs name their class through
// JobSpec::priority (PriorityClass::name is the name looked up here). Any number of classes;
// ValidatePolicy: unique names, and a class preempts only listed classes ranked after it.
struct PriorityClassPolicy {
  std::string name{};
  int rank = 0;                              // lower goes first; equal ranks share a tier
  std::vector<std::string> preempts{};       // names of the classes its jobs may preempt
  std::vector<std::string> allowed_users{};  // empty = everyone may use it
  std::optional<int> max_gpus_per_user{};    // GPUs one user may hold in this class
  std::optional<std::chrono::seconds> default_time_limit{};  // for jobs that give none
  std::optional<std::chrono::seconds> max_time_limit{};      // caps what jobs ask for
  IdleRule idle{};  // the idle reaper's rule for its jobs (a team's may override it)
  // Whether its jobs may opt out of idle reaping (`gpufleet submit --no-reap`).
  bool idle_opt_out = false;
};

// What happens to a team's jobs once it has used its GPU-hour budget for the period.
enum class OverBudget {
  kBorrowOnly,  // they still run, but only as preemptible borrowed work
  kHold,        // they wait until an admin raises the budget or approves the job
};

struct TeamPolicy {
  std::string name{};
  int guaranteed_gpus = 0;                  // never borrowed; may preempt borrowed work to get them
  std::optional<int> max_gpus{};            // most GPUs it may hold, borrowed ones included
  std::optional<double> gpu_hour_budget{};  // per period (the controller's accounting)
  OverBudget over_budget = OverBudget::kBorrowOnly;
  double fair_share_weight = 1;  // its usage counts usage / weight
  IdleRule idle{};               // overrides the idle rule of its jobs' class, key by key
};

struct FairSharePolicy {
  // Usage halves every half_life (DecayedUsage applies it; the accounting keeps the sums).
  std::chrono::seconds half_life = std::chrono::hours(24 * 7);
  std::map<std::string, double> user_weights{};  // by user; absent = 1
  // What a GPU-second on each model counts for in fair share (an H100 second worth two of an
  // A100 one, say); by model name, matched ignoring case; absent = 1. Budgets stay in plain
  // GPU-hours.
  std::map<std::string, double> model_weights{};
};

struct PreemptionPolicy {
  bool enabled = true;
  // A running job is never preempted before it has run this long.
  std::chrono::seconds min_run_time = std::chrono::minutes(10);
  // How many waiting jobs may preempt in one pass. Bounds the disruption (and the work) of a
  // pass in which a flood of high-priority jobs meets a cluster full of lower work; the rest
  // wait for the next pass (Kubernetes preempts for one pod per scheduling cycle).
  int max_preemptors_per_pass = 100;
};

struct BackfillPolicy {
  bool enabled = true;
  // How many waiting jobs, first in order, get a reservation. Jobs after them may be overtaken
  // by later ones; with backfill off every waiting job keeps later ones off the GPUs it could use.
  int depth = 100;
};

// The run-time predictor's part in the stock order and in backfill (scheduler/prediction.h,
// docs/scheduling.md "Predicted run times"). Only under the priority order: the baselines keep
// their own keys.
struct PredictionPolicy {
  // Whether QueuedJob/RunningJob::estimate count: a job's place in its class and fair-share
  // group moves back by its predicted GPU-time (shorter work first), and backfill plans a run
  // that has no time limit (or a longer one) to end at its high estimate.
  bool enabled = true;
  // The most a job's place moves back for its predicted size: no job is ever passed by a job
  // of its group submitted more than this after it (the anti-starvation rule). 7 days, as
  // Slurm's PriorityMaxAge: the wait after which a job's age counts in full there.
  std::chrono::seconds max_delay = std::chrono::hours(24 * 7);
  // Fair-share bands: a team's users compare by band, not by exact share, so that among users
  // whose usage is comparable the place (submit time moved back by the predicted GPU-time)
  // decides, across users as within one. A band spans this factor of share relative to the
  // mean share of the users that used GPUs: with 2, users at 1.5 x the mean and at 1.9 x share
  // a band, one at 0.7 x is a band ahead, and one who used nothing goes before every one who
  // did. Teams compare exact shares: their weights are the admin's contract. 1: exact shares
  // for users too, as without prediction.
  double fair_share_band = 2;
  // What a user's band does (`[scheduler] user_fair_share`). kSize (stock): users compare
  // equal, and a job's predicted GPU-time counts fair_share_band^band in its place: a user at
  // 4x the mean share has their jobs' sizes count 4x, one at half the mean half (at least
  // 1/8: kLowestSizeBand). So the order within a team is Smith's rule, the order that
  // minimises the sum of completion times weighted by each user's fair-share weight: a heavy
  // user's short job still goes before a light user's long one, where bands made every job
  // of the heavier band wait. kBand: users compare by band first, the place within a band
  // (decision 0008).
  enum class UserFairShare { kBand, kSize };
  UserFairShare user_fair_share = UserFairShare::kSize;
  // Preemption by size (scheduler/estimates.h, docs/scheduling.md "Predicted run times"): a
  // waiting job may preempt a running job of its class tier, of its team or of a team that does
  // not go before its own in fair share, whose predicted remaining
  // GPU-time is at least `size_preemption_ratio` times its own, that has run min_run_time, may
  // be requeued, and would go after it in the queue. A job's remaining work is what its
  // estimate leaves, or at least as long again as it has run once it is past half of it (run
  // times are heavy-tailed: a job that outlived its prediction is likely a long one), so
  // without any estimate this is least-attained-service first. false: only classes and
  // guarantees preempt (the policy before, docs/sim-policies/stock-no-size-preemption.toml).
  bool size_preemption = true;
  // How much more remaining work a victim must have than its preemptor: above 1, so that two
  // jobs of about the same size never preempt each other back and forth, and a preemption
  // (whose cost is the victim's work since its last checkpoint) is taken only where the gain
  // is large. 2: one level of a multi-level feedback queue with levels a factor 2 apart.
  double size_preemption_ratio = 2;
};

// Which waiting job goes first within a class tier (docs/sim.md, "Policies and baselines").
// kPriority is gpufleet's order (fair share, README.md "Algorithm"); the others are the
// research baselines `gpufleet sim` compares against, which ignore fair share and teams'
// guarantees in the order (quotas still apply):
// - kFifo: submit time.
// - kSjf: the shortest job first, by QueuedJob::expected_duration (an oracle the simulator
//   fills); a job without one ranks as if its effective time limit were its length, or last
//   when it has none. Not preemptive.
// - kSrtf: SJF's order, and preemptive: a waiting job may preempt a running job of its class
//   tier with more work left (RunningJob::expected_duration from its start, else its limit).
// - kLas: Tiresias' 2D-LAS: attained service (GPUs x time run, over all runs) cut into queues
//   by `las_thresholds` (GPU-seconds); the lower queue first, submit time within one; a
//   waiting job may preempt a running job of its class tier in a later queue.
// Preemption by order honours PreemptionPolicy (enabled, min_run_time) like any other.
enum class QueueOrder { kPriority, kFifo, kSjf, kSrtf, kLas };
std::string_view ToString(QueueOrder order);  // "priority", "fifo", "sjf", "srtf", "las"
// "sjf" → kSjf. Errors: "'x' is not an order; use priority, fifo, sjf, srtf or las".
Result<QueueOrder> ParseQueueOrder(std::string_view text);

struct OrderingPolicy {
  QueueOrder order = QueueOrder::kPriority;
  // kLas: the attained GPU-seconds where queue 1, 2, ... begin; increasing, above 0. The
  // default is the Tiresias artifact's (3 queues: jobs.py queue_limit).
  std::vector<double> las_thresholds = {3250, 7200};
};

// Where a fractional job goes among the shared GPUs that fit it (SharePool, `[sharing]
// placement`): kFullest, the GPU left with the least free compute (gpufleet's: fills shared
// GPUs before opening another); kFirstFit, the first in node-name, GPU-index order (the plain
// baseline the `gpufleet sim` fragmentation bench compares against, docs/sim.md).
enum class SharePlacement { kFullest, kFirstFit };
std::string_view ToString(SharePlacement placement);  // "fullest", "first-fit"
// Errors: "'x' is not a placement; use fullest or first-fit" (the config prefixes the key).
Result<SharePlacement> ParseSharePlacement(std::string_view text);

// "band" → kBand, "size" → kSize. Errors: "'x' is not a user fair share; use size or band".
Result<PredictionPolicy::UserFairShare> ParseUserFairShare(std::string_view text);
std::string_view ToString(PredictionPolicy::UserFairShare mode);

std::vector<PriorityClassPolicy> DefaultPriorityClasses();

// The host CPUs and memory a job that asks none gets per GPU it asks (issue #24; Slurm's
// DefCpuPerGPU and DefMemPerGPU): [scheduler] default_cpus_per_gpu, default_mem_per_gpu. 0 = none
// (the default: a job that asks nothing reserves nothing and is not limited). The controller
// fills them in at submission, where the job then shows them as its request.
struct HostDefaults {
  int cpus_per_gpu = 0;
  std::int64_t memory_mib_per_gpu = 0;
  bool operator==(const HostDefaults&) const = default;
};

struct PolicyConfig {
  std::vector<PriorityClassPolicy> classes = DefaultPriorityClasses();
  // The class of a job submitted without one (the controller fills it in). Must be listed.
  std::string default_class = PriorityClass::kNormal.name;
  // When empty, quotas and budgets are off: no job is borrowed. When not empty, a job of a
  // team not listed here (or of no team) follows `other_teams`.
  std::vector<TeamPolicy> teams{};
  TeamPolicy other_teams;  // guarantee 0, no max, no budget: everything it runs is borrowed
  FairSharePolicy fair_share;
  PreemptionPolicy preemption;
  BackfillPolicy backfill;
  OrderingPolicy ordering{};
  PredictionPolicy prediction{};
  SharePlacement share_placement = SharePlacement::kFullest;
  HostDefaults host_defaults{};
};

// `request` with the per-GPU defaults filled in where it asks no CPUs or no memory (whole GPUs
// only: a share or a MIG device counts as one GPU).
JobRequest WithHostDefaults(JobRequest request, const HostDefaults& defaults);

// The class policy for `priority` (looked up by its name); a class the config does not list
// (dropped since the job was submitted) gets a permissive one: no rules, preempts nothing,
// ranked after every listed class (the scheduler's ClassTable treats it the same way).
PriorityClassPolicy ClassPolicyFor(const PolicyConfig& policy, const PriorityClass& priority);

// Whether jobs may be submitted under `priority`: the config lists that class. Errors
// (kInvalidArgument): "priority: no class 'urgent'; the classes are high, normal, low".
Status CheckClassExists(const PolicyConfig& policy, const PriorityClass& priority);

// The time limit a job runs under: the one it asked for or else the class default, capped by
// the class maximum; nullopt when neither the job nor the class gives one.
std::optional<std::chrono::seconds> EffectiveTimeLimit(
    const PriorityClassPolicy& cls, std::optional<std::chrono::seconds> requested);

// `gpu_seconds` of usage recorded `elapsed` ago, decayed with `half_life` (halves each
// half-life). Requires half_life > 0.
double DecayedUsage(double gpu_seconds, Millis elapsed, std::chrono::seconds half_life);

// The fair-share weight of a GPU-second on `model` (FairSharePolicy::model_weights).
double ModelWeight(const FairSharePolicy& fair_share, std::string_view model);
// The mean ModelWeight of `models` (a job's GPUs); 1 when empty.
double ModelWeight(const FairSharePolicy& fair_share, const std::vector<std::string>& models);

// Whether the config is usable. Errors (kInvalidArgument) name the field and the fix:
// "teams[ml].max_gpus: 4 is below guaranteed_gpus 8; raise max_gpus or lower the guarantee".
Status ValidatePolicy(const PolicyConfig& policy);

}  // namespace gf
