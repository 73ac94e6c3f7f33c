#include "scheduler/explain.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/duration.h"
#include "scheduler/estimates.h"
#include "scheduler/ordering/baseline.h"
#include "scheduler/ordering/fair_share.h"
#include "scheduler/pass_probe.h"
#include "scheduler/placement/gpu_pool.h"
#include "scheduler/preemption/victims.h"
#include "scheduler/quota/ledger.h"

namespace gf {
namespace {

constexpr int kNodesNamedPerJobAhead = 3;

// " (1 failed, 2 degraded)": the node's GPUs that take no work for their health; "" if none.
std::string UnhealthyNote(const NodeExplanation& node) {
  std::string parts;
  if (node.failed > 0) {
    parts = std::to_string(node.failed) + " failed";
  }
  if (node.degraded > 0) {
    parts += (parts.empty() ? "" : ", ") + std::to_string(node.degraded) + " degraded";
  }
  return parts.empty() ? "" : " (" + parts + ")";
}

std::optional<Time> TimeOf(std::int64_t ms) {
  return ms == kNever ? std::nullopt : std::optional<Time>(FromUnixMillis(ms));
}

std::string FormatMinutes(Millis d) {
  return FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(d));
}

// "requested", "class default", "class maximum" or "none": where the effective limit comes from.
std::string LimitSource(const PriorityClassPolicy& cls,
                        std::optional<std::chrono::seconds> requested,
                        std::optional<std::chrono::seconds> effective) {
  if (!effective.has_value()) {
    return "none";
  }
  if (cls.max_time_limit.has_value() && *effective == *cls.max_time_limit &&
      (!requested.has_value() || *requested > *effective)) {
    return "class maximum";
  }
  return requested.has_value() ? "requested" : "class default";
}

// 1 + how many of `others` come strictly before `mine`.
template <typename Key>
int RankAmong(const Key& mine, const std::vector<Key>& others) {
  return 1 + static_cast<int>(std::count_if(
                 others.begin(), others.end(), [&](const Key& k) { return k < mine; }));
}

// ---- a running job ----

std::vector<int> GpuIndexes(const ClusterSnapshot& cluster, const Allocation& allocation) {
  std::vector<int> indexes;
  for (const NodeSnapshot& node : cluster.nodes) {
    if (node.node.name != allocation.node) {
      continue;
    }
    for (const GpuUuid& uuid : allocation.gpus) {
      for (const Gpu& gpu : node.node.gpus) {
        if (gpu.uuid == uuid) {
          indexes.push_back(gpu.index);
        }
      }
    }
  }
  return indexes;
}

// Who could preempt running job `r`, by the rules RightToPreempt applies, evaluated once the
// job is old enough (so "protected for 4 more minutes" and "by class high" are both said).
std::vector<std::string> PreemptedBy(const ClusterSnapshot& cluster,
                                     int r,
                                     const PolicyConfig& policy,
                                     Time now) {
  const RunningJob& job = cluster.running[static_cast<std::size_t>(r)];
  if (!policy.preemption.enabled) {
    return {"nobody: preemption is off"};
  }
  if (job.stopping) {
    return {"nobody: it is already stopping"};
  }
  const Time old_enough = std::max(now, job.start_time + policy.preemption.min_run_time);
  const GpuPool pool(cluster, old_enough);
  const ClassTable classes(policy, cluster);
  const Shape one_gpu{.model = kAnyModel, .gpus = 1};
  std::vector<std::string> by;
  for (ClassIndex c = 0; classes.IsConfigured(c); ++c) {
    const Preemptor preemptor = MakePreemptor(one_gpu, classes, c, job.team, false);
    if (RightToPreempt(pool, cluster, r, preemptor, policy, old_enough) ==
        PreemptionRight::kHigherClass) {
      by.push_back("jobs of class " + classes.Policy(c).name);
    }
  }
  // A job of another team (a name no team can have) with the guarantee right and a class
  // that preempts nothing: what RightToPreempt says to it is the guarantee rule alone.
  const Preemptor guaranteed = MakePreemptor(
      one_gpu, classes, classes.Unconfigured(), "(a team other than " + job.team + ")", true);
  if (RightToPreempt(pool, cluster, r, guaranteed, policy, old_enough) ==
      PreemptionRight::kGuarantee) {
    by.emplace_back("jobs of other teams within their guarantee (it runs on borrowed GPUs)");
  }
  if (by.empty()) {
    by.emplace_back("nobody: no class preempts its class and it is not borrowed");
  }
  return by;
}

Explanation ExplainRunning(const ClusterSnapshot& cluster,
                           int r,
                           const PolicyConfig& policy,
                           Time now) {
  const RunningJob& job = cluster.running[static_cast<std::size_t>(r)];
  RunningExplanation running{
      .allocation = job.allocation,
      .gpu_indexes = GpuIndexes(cluster, job.allocation),
      .since = job.start_time,
      .expected_end = job.time_limit.has_value()
                          ? std::optional<Time>(job.start_time + *job.time_limit)
                          : std::nullopt,
      .preemptible = job.preemptible,
      .stopping = job.stopping,
      .protected_until = std::nullopt,
      .preempted_by = PreemptedBy(cluster, r, policy, now)};
  const Time old_enough = job.start_time + policy.preemption.min_run_time;
  if (policy.preemption.enabled && old_enough > now) {
    running.protected_until = old_enough;
  }
  Explanation explanation;
  explanation.job = job.id;
  explanation.state = "running";
  explanation.outcome = "running";
  explanation.placement = job.allocation;
  explanation.time_limit = job.time_limit;
  explanation.time_limit_source = job.time_limit.has_value() ? "effective" : "none";
  explanation.running = std::move(running);
  return explanation;
}

// ---- a queued job ----

class PendingExplainer {
 public:
  PendingExplainer(const ClusterSnapshot& cluster,
                   const Queue& queue,
                   const PolicyConfig& policy,
                   Time now)
      : cluster_(cluster), queue_(queue), policy_(policy), now_(now) {}

  // Called by the pass just before it considers the job.
  void Observe(const PassView& view) {
    const QueuedJob& job = *view.order[static_cast<std::size_t>(view.position)];
    const ClassTable& classes = view.ledger.Classes();
    const ClassIndex class_index = classes.IndexOf(job.priority);
    const PriorityClassPolicy& cls = classes.Policy(class_index);
    out_.job = job.id;
    out_.state = "pending";
    out_.position = view.position + 1;
    out_.waiting = static_cast<int>(view.order.size());
    out_.priority = Factors(job, cls);
    out_.time_limit = EffectiveTimeLimit(cls, job.time_limit);
    out_.time_limit_source = LimitSource(cls, job.time_limit, out_.time_limit);
    for (const StartDecision& start : view.so_far.starts) {
      for (const GpuUuid& uuid : start.allocation.gpus) {
        started_by_.emplace(uuid, start.job);
      }
    }
    if (job.request.gpus < 0) {
      return;  // Decide gives the reason; there is nothing to place
    }
    const Shape shape = view.pool.ShapeOf(job.request);
    const QuotaVerdict verdict = view.ledger.Check(job, class_index, shape.gpus * kWholeGpuMilli);
    out_.quota = Quota(job, cls, verdict, view.ledger);
    const std::int64_t end_ms = out_.time_limit.has_value()
                                    ? ToUnixMillis(now_) + Millis(*out_.time_limit).count()
                                    : kNever;
    const bool may_preempt =
        policy_.preemption.enabled && verdict.may_start && shape.gpus > 0 &&
        (!cls.preempts.empty() || verdict.guarantee_right || OrderPreempts(policy_));
    const Preemptor preemptor = JobPreemptor(job,
                                             shape,
                                             classes,
                                             class_index,
                                             verdict.guarantee_right,
                                             policy_,
                                             out_.time_limit,
                                             view.ledger);
    Nodes(view, job, shape, end_ms, may_preempt ? &preemptor : nullptr);
    Ahead(view, shape);
  }

  // After the pass: Decide's outcome for the job.
  Explanation Finish(const Decisions& decisions) {
    for (const StartDecision& start : decisions.starts) {
      if (start.job == out_.job) {
        out_.outcome = "starts";
        out_.placement = start.allocation;
      }
    }
    for (const PendingDecision& pending : decisions.pending) {
      if (pending.job == out_.job) {
        out_.reason = pending.reason.text;
        out_.pending_reason = pending.reason;
        out_.estimated_start = pending.estimated_start;
        out_.start_estimate = pending.start_estimate;
        out_.placement = pending.reservation;
        out_.outcome = pending.reservation.has_value()                    ? "reserved"
                       : out_.quota.has_value() && !out_.quota->may_start ? "held"
                                                                          : "waits";
      }
    }
    for (const PreemptDecision& preemption : decisions.preemptions) {
      if (preemption.for_job == out_.job) {
        out_.outcome = "preempts";
        out_.preempts.push_back(preemption.victim);
      }
    }
    MarkPlacement();
    Bound();
    return std::move(out_);
  }

 private:
  PriorityFactors Factors(const QueuedJob& job, const PriorityClassPolicy& cls) const {
    // The standing the order used: before the pass counted anything (a fresh ledger).
    const ClassTable classes(policy_, cluster_);
    const Ledger fresh(policy_, cluster_, classes);
    const ShareScale scale = ShareScaleOf(cluster_, policy_);
    const TeamStanding team = TeamStandingOf(job.team, cluster_, fresh);
    const UserStanding user = UserStandingOf(job.user, cluster_, policy_, scale);
    std::set<std::string> teams;
    std::set<std::string> users;
    for (const QueuedJob& other : queue_.pending) {
      teams.insert(other.team);
      if (other.team == job.team) {
        users.insert(other.user);
      }
    }
    using TeamKey = std::pair<bool, double>;  // (not below guarantee, share): lower first
    std::vector<TeamKey> team_keys;
    team_keys.reserve(teams.size());
    for (const std::string& name : teams) {
      const TeamStanding s = TeamStandingOf(name, cluster_, fresh);
      team_keys.emplace_back(!s.below_guarantee, s.share);
    }
    std::vector<double> user_keys;
    user_keys.reserve(users.size());
    for (const std::string& name : users) {
      user_keys.push_back(UserStandingOf(name, cluster_, policy_, scale).key);
    }
    const Time place = FromUnixMillis(PlaceMs(job, policy_, user.size_weight));
    return PriorityFactors{
        .priority = cls.name,
        .class_rank = cls.rank,
        .team = job.team,
        .quotas_on = fresh.QuotasOn(),
        .team_below_guarantee = team.below_guarantee,
        .team_usage_gpu_seconds = team.usage_gpu_seconds,
        .team_weight = team.weight,
        .team_share = team.share,
        .team_rank = RankAmong(TeamKey{!team.below_guarantee, team.share}, team_keys),
        .teams_waiting = static_cast<int>(teams.size()),
        .user = job.user,
        .user_usage_gpu_seconds = user.usage_gpu_seconds,
        .user_weight = user.weight,
        .user_share = user.share,
        .user_rank = RankAmong(user.key, user_keys),
        .users_waiting = static_cast<int>(users.size()),
        .submit_time = job.submit_time,
        .waited = std::max(Millis(0), now_ - job.submit_time),
        .place = place == job.submit_time ? std::nullopt : std::optional<Time>(place)};
  }

  QuotaExplanation Quota(const QueuedJob& job,
                         const PriorityClassPolicy& cls,
                         const QuotaVerdict& verdict,
                         const Ledger& ledger) const {
    const TeamPolicy& team = ledger.TeamRules(job.team);
    const auto usage = cluster_.team_usage.find(job.team);
    return QuotaExplanation{
        .may_start = verdict.may_start,
        .borrowed = verdict.borrowed,
        .guarantee_right = verdict.guarantee_right,
        .reason = verdict.reason.text,
        .class_allowed_users = cls.allowed_users,
        .class_max_gpus_per_user = cls.max_gpus_per_user,
        .quotas_on = ledger.QuotasOn(),
        .team_held_milli = ledger.TeamHeldMilli(job.team),
        .team_guaranteed_gpus = team.guaranteed_gpus,
        .team_max_gpus = team.max_gpus,
        .team_budget_gpu_hours = team.gpu_hour_budget,
        .team_period_gpu_hours =
            usage == cluster_.team_usage.end() ? 0 : usage->second.period_gpu_hours,
        .over_budget = team.over_budget == OverBudget::kHold ? "hold" : "borrow_only",
        .budget_approved = job.budget_approved};
  }

  // ---- nodes ----

  void Nodes(const PassView& view,
             const QueuedJob& job,
             Shape shape,
             std::int64_t end_ms,
             const Preemptor* preemptor) {
    std::map<std::string, int> up;  // name → position in the pool
    for (std::size_t n = 0; n < view.pool.Nodes().size(); ++n) {
      up.emplace(view.pool.Nodes()[n].name.value(), static_cast<int>(n));
    }
    for (const NodeSnapshot& snapshot : cluster_.nodes) {
      NodeExplanation node = Basics(snapshot);
      const auto n = up.find(snapshot.node.name.value());
      if (snapshot.node.state != NodeState::kUp || n == up.end()) {
        node.verdict = "not_up";
        node.detail = "node is " + node.state + ": it takes no new work";
      } else {
        OnUpNode(view, job, shape, end_ms, n->second, node);
        if (preemptor != nullptr && (node.verdict == "busy" || node.verdict == "set_aside")) {
          node.victims = Victims(view, n->second, *preemptor);
        }
      }
      out_.nodes.push_back(std::move(node));
    }
  }

  static NodeExplanation Basics(const NodeSnapshot& snapshot) {
    NodeExplanation node;
    node.node = snapshot.node.name;
    node.state = std::string(ToString(snapshot.node.state));
    node.gpus = static_cast<int>(snapshot.node.gpus.size());
    std::set<std::string> models;
    for (const Gpu& gpu : snapshot.node.gpus) {
      node.failed += gpu.health == GpuHealth::kFailed ? 1 : 0;
      node.degraded += gpu.health == GpuHealth::kDegraded ? 1 : 0;
      models.insert(gpu.model);
    }
    node.models.assign(models.begin(), models.end());
    return node;
  }

  void OnUpNode(const PassView& view,
                const QueuedJob& job,
                Shape shape,
                std::int64_t end_ms,
                int n,
                NodeExplanation& node) const {
    const GpuPool& pool = view.pool;
    const PoolNode& pool_node = pool.Nodes()[static_cast<std::size_t>(n)];
    if (!pool.Allows(n, shape)) {
      node.verdict = "labels";
      node.detail = "its labels do not satisfy the job's constraints";
      return;
    }
    if (!HostCapacity(pool_node, shape.cpus, shape.memory_mib)) {
      node.verdict = "too_small";
      node.detail =
          HostFacts(pool_node, false) + " for jobs; needs " + DescribeHostRequest(job.request);
      return;
    }
    if (shape.gpus == 0) {
      node.verdict = "fits";
      node.detail = "a CPU-only job fits on any up node";
      HostVerdict(job, shape, pool, n, end_ms, node);
      return;
    }
    for (int g = pool_node.first_gpu; g < pool_node.first_gpu + pool_node.gpu_count; ++g) {
      const PoolGpu& gpu = pool.Gpus()[static_cast<std::size_t>(g)];
      if (shape.model == kNoSuchModel || !pool.Matches(gpu, shape.model)) {
        continue;
      }
      ++node.matching;
      node.free += gpu.free ? 1 : 0;
      std::optional<GpuHold> hold = HoldOf(view, gpu, end_ms);
      if (hold.has_value()) {
        node.held.push_back(std::move(*hold));
      } else {
        ++node.givable;
      }
    }
    Verdict(job, shape, node);
    HostVerdict(job, shape, pool, n, end_ms, node);
  }

  // "16 CPUs, 64 GiB memory" the node has (`free`: has free now); a resource it does not
  // report is left out.
  static std::string HostFacts(const PoolNode& node, bool free) {
    std::string text;
    if (node.cpus > 0) {
      const int cpus = free ? FreeCpus(node) : node.cpus;
      text = std::to_string(cpus) + (cpus == 1 ? " CPU" : " CPUs");
    }
    if (node.memory_mib > 0) {
      text += (text.empty() ? "" : ", ") + FormatMib(free ? FreeMemoryMib(node) : node.memory_mib) +
              " memory";
    }
    return text;
  }

  // A node whose GPUs fit but whose free host CPUs or memory do not (issue #24) is busy;
  // where they are free now but set aside for a job ahead before this one would end, reserved.
  static void HostVerdict(const QueuedJob& job,
                          Shape shape,
                          const GpuPool& pool,
                          int n,
                          std::int64_t end_ms,
                          NodeExplanation& node) {
    const PoolNode& pool_node = pool.Nodes()[static_cast<std::size_t>(n)];
    if (node.verdict != "fits" || pool.HostRoomOn(n, shape.cpus, shape.memory_mib, end_ms)) {
      return;
    }
    if (HostRoom(pool_node, shape.cpus, shape.memory_mib)) {
      node.verdict = "reserved";
      node.detail +=
          "; but its host CPUs or memory are reserved for a job ahead before this "
          "one would end; needs " +
          DescribeHostRequest(job.request);
      return;
    }
    node.verdict = "busy";
    node.detail += "; but only " + HostFacts(pool_node, true) + " free; needs " +
                   DescribeHostRequest(job.request);
  }

  // Why this job may not take `gpu` now (as GpuPool gives GPUs: free, not claimed, and not
  // reserved before the job would end), or nullopt when it may.
  std::optional<GpuHold> HoldOf(const PassView& view,
                                const PoolGpu& gpu,
                                std::int64_t end_ms) const {
    GpuHold hold{.index = gpu.index, .kind = "", .job = std::nullopt, .until = std::nullopt};
    if (!gpu.free && !gpu.claimed && gpu.first_waiter >= 0) {
      hold.then_for = Waiter(view, gpu.first_waiter);
      hold.then_from = TimeOf(gpu.reserved_from);
    }
    if (gpu.claimed) {
      hold.kind = "claimed";
      hold.job = Waiter(view, gpu.first_waiter);
    } else if (!gpu.free && gpu.holder >= 0) {
      // Its holder's own planned end, as the pass plans it (PlannedEndMs: its limit, or its
      // estimate; the pool's available_at moves on to the end of a reservation made after it).
      const RunningJob& holder = cluster_.running[static_cast<std::size_t>(gpu.holder)];
      hold.kind = "running";
      hold.job = holder.id;
      const std::int64_t holder_end =
          PlannedEndMs(holder, ToUnixMillis(now_), UsesEstimates(policy_));
      hold.until =
          holder_end == kNever ? std::nullopt : std::optional<Time>(FromUnixMillis(holder_end));
    } else if (!gpu.free) {
      hold.job = StartedOn(gpu.uuid);
      hold.kind = hold.job.has_value() ? "started" : "allocated";
      hold.until = TimeOf(gpu.available_at);
    } else if (gpu.reserved_from != kNever && end_ms > gpu.reserved_from) {
      hold.kind = "reserved";
      hold.job = Waiter(view, gpu.first_waiter);
      hold.until = TimeOf(gpu.reserved_from);
    } else {
      return std::nullopt;
    }
    return hold;
  }

  static std::optional<JobId> Waiter(const PassView& view, int position) {
    if (position < 0 || position >= static_cast<int>(view.order.size())) {
      return std::nullopt;
    }
    return view.order[static_cast<std::size_t>(position)]->id;
  }

  // The job ahead that starts on `uuid` in this pass (started_by_, filled by Observe).
  std::optional<JobId> StartedOn(const GpuUuid& uuid) const {
    const auto it = started_by_.find(uuid);
    return it == started_by_.end() ? std::nullopt : std::optional<JobId>(it->second);
  }

  void Verdict(const QueuedJob& job, Shape shape, NodeExplanation& node) const {
    const std::string needs = DescribeRequest(job.request);
    const std::string failed = UnhealthyNote(node);
    if (node.matching == 0) {
      node.verdict = "no_model";
      node.detail = "no usable GPU of the requested type" + failed;
    } else if (node.matching < shape.gpus) {
      node.verdict = "too_small";
      node.detail =
          std::to_string(node.matching) + " usable matching GPUs" + failed + "; needs " + needs;
    } else if (node.givable >= shape.gpus) {
      node.verdict = "fits";
      node.detail = std::to_string(node.givable) + " of " + std::to_string(node.matching) +
                    " matching GPUs may be taken now";
    } else if (node.free >= shape.gpus) {
      node.verdict = "set_aside";
      node.detail = std::to_string(node.free) + " of " + std::to_string(node.matching) +
                    " matching GPUs free, but only " + std::to_string(node.givable) +
                    " not set aside for jobs ahead; needs " + needs;
    } else {
      node.verdict = "busy";
      node.detail = std::to_string(node.free) + " of " + std::to_string(node.matching) +
                    " matching GPUs free; needs " + needs;
    }
  }

  std::vector<VictimCandidate> Victims(const PassView& view,
                                       int n,
                                       const Preemptor& preemptor) const {
    std::vector<VictimCandidate> victims;
    for (const int r : view.pool.Nodes()[static_cast<std::size_t>(n)].holders) {
      const RunningJob& running = cluster_.running[static_cast<std::size_t>(r)];
      const PreemptionRight right =
          RightToPreempt(view.pool, cluster_, r, preemptor, policy_, now_);
      victims.push_back(
          VictimCandidate{.job = running.id,
                          .priority = std::string(ToString(running.priority)),
                          .borrowed = running.preemptible,
                          .may_preempt = right != PreemptionRight::kNone,
                          .chosen = false,
                          .why = right != PreemptionRight::kNone
                                     ? PreemptionCause(right, running, preemptor, policy_, now_)
                                     : WhyNot(view, r, preemptor)});
    }
    std::sort(
        victims.begin(), victims.end(), [](const auto& a, const auto& b) { return a.job < b.job; });
    return victims;
  }

  // The wording for RightToPreempt's kNone, in the order it checks.
  std::string WhyNot(const PassView& view, int r, const Preemptor& preemptor) const {
    const RunningJob& running = cluster_.running[static_cast<std::size_t>(r)];
    const Millis ran = now_ - running.start_time;
    if (running.stopping) {
      return "already stopping: its GPUs free up soon";
    }
    if (ran < policy_.preemption.min_run_time) {
      return "protected: ran " + FormatMinutes(ran) + " of the minimum run time " +
             FormatDuration(policy_.preemption.min_run_time);
    }
    const std::vector<int>& gpus = view.pool.RunningGpus(r);
    for (const int g : gpus) {
      const PoolGpu& gpu = view.pool.Gpus()[static_cast<std::size_t>(g)];
      if (gpu.claimed || gpu.reserved_from != kNever) {
        const std::optional<JobId> waiter = Waiter(view, gpu.first_waiter);
        return "its GPUs are set aside for " + (waiter.has_value()
                                                    ? "job " + std::to_string(waiter->value())
                                                    : std::string("a job ahead"));
      }
    }
    if (gpus.empty()) {
      return "it also holds GPUs that are not usable on an up node";
    }
    return "class " + preemptor.classes->Policy(preemptor.cls).name + " does not preempt class " +
           std::string(ToString(running.priority)) +
           (running.preemptible ? ", and its team's guarantee gives no right to"
                                : ", and it is not borrowed");
  }

  // ---- jobs ahead ----

  void Ahead(const PassView& view, Shape shape) {
    std::map<int, JobAhead> ahead;     // by position
    std::map<JobId, int> position_of;  // of the jobs that start: few, even in a deep queue
    for (const StartDecision& start : view.so_far.starts) {
      position_of.emplace(start.job, -1);
    }
    for (int p = 0; p < view.position && !position_of.empty(); ++p) {
      const auto it = position_of.find(view.order[static_cast<std::size_t>(p)]->id);
      if (it != position_of.end()) {
        it->second = p;
      }
    }
    const auto note =
        [&](int position, const std::string& action, const NodeId& node, std::optional<Time> from) {
          JobAhead& entry = ahead[position];
          if (entry.action.empty()) {
            const QueuedJob& other = *view.order[static_cast<std::size_t>(position)];
            entry = JobAhead{.id = other.id,
                             .position = position + 1,
                             .priority = std::string(ToString(other.priority)),
                             .team = other.team,
                             .gpus = other.request.gpus,
                             .action = action,
                             .nodes = {},
                             .more_nodes = 0,
                             .from = from};
          }
          if (std::find(entry.nodes.begin(), entry.nodes.end(), node) != entry.nodes.end()) {
            return;
          }
          if (static_cast<int>(entry.nodes.size()) < kNodesNamedPerJobAhead) {
            entry.nodes.push_back(node);
          } else {
            ++entry.more_nodes;
          }
        };
    const GpuPool& pool = view.pool;
    for (const PoolGpu& gpu : pool.Gpus()) {
      if (shape.gpus == 0 || shape.model == kNoSuchModel || !pool.Matches(gpu, shape.model) ||
          !pool.Allows(gpu.node, shape)) {
        continue;
      }
      const NodeId& node = pool.Nodes()[static_cast<std::size_t>(gpu.node)].name;
      if (gpu.first_waiter >= 0 && gpu.first_waiter < view.position) {
        note(gpu.first_waiter,
             gpu.claimed ? "claimed" : "reserved",
             node,
             gpu.claimed ? std::nullopt : TimeOf(gpu.reserved_from));
      }
      if (const std::optional<JobId> started = StartedOn(gpu.uuid); started.has_value()) {
        note(position_of.at(*started), "starts", node, std::nullopt);
      }
    }
    for (auto& [position, entry] : ahead) {
      out_.ahead.push_back(std::move(entry));
    }
  }

  // ---- after the pass ----

  void MarkPlacement() {
    for (NodeExplanation& node : out_.nodes) {
      for (VictimCandidate& victim : node.victims) {
        victim.chosen = victim.job.has_value() &&
                        std::find(out_.preempts.begin(), out_.preempts.end(), *victim.job) !=
                            out_.preempts.end();
      }
      if (!out_.placement.has_value() || node.node != out_.placement->node) {
        continue;
      }
      if (out_.outcome == "starts") {
        node.verdict = "chosen";
        node.detail = "starts here: " + node.detail;
      } else if (out_.outcome == "preempts") {
        node.verdict = "preempt";
        node.detail = "starts here once the chosen victims stop";
      } else if (out_.outcome == "reserved") {
        node.verdict = "reserved";
        node.detail = "GPUs reserved for it here: " + node.detail;
      }
    }
  }

  // The most relevant nodes first, at most kMaxExplainedNodes; counts over all.
  void Bound() {
    static const std::map<std::string, int> relevance_of = {{"chosen", 0},
                                                            {"preempt", 0},
                                                            {"reserved", 0},
                                                            {"fits", 1},
                                                            {"set_aside", 2},
                                                            {"busy", 3},
                                                            {"too_small", 4},
                                                            {"labels", 5},
                                                            {"no_model", 6},
                                                            {"not_up", 7}};
    for (const NodeExplanation& node : out_.nodes) {
      ++out_.nodes_by_verdict[node.verdict];
    }
    const auto key = [&](const NodeExplanation& node) {
      const auto relevance = relevance_of.find(node.verdict);
      return std::make_tuple(relevance == relevance_of.end() ? 8 : relevance->second,
                             -node.givable,
                             -node.free,
                             -node.matching,
                             node.node.value());
    };
    std::stable_sort(
        out_.nodes.begin(),
        out_.nodes.end(),
        [&](const NodeExplanation& a, const NodeExplanation& b) { return key(a) < key(b); });
    if (out_.nodes.size() > static_cast<std::size_t>(kMaxExplainedNodes)) {
      out_.nodes_omitted = static_cast<int>(out_.nodes.size()) - kMaxExplainedNodes;
      out_.nodes.resize(static_cast<std::size_t>(kMaxExplainedNodes));
    }
    if (out_.ahead.size() > static_cast<std::size_t>(kMaxJobsAhead)) {
      out_.ahead_omitted = static_cast<int>(out_.ahead.size()) - kMaxJobsAhead;
      out_.ahead.resize(static_cast<std::size_t>(kMaxJobsAhead));
    }
  }

  const ClusterSnapshot& cluster_;
  const Queue& queue_;
  const PolicyConfig& policy_;
  Time now_;
  Explanation out_;
  std::map<GpuUuid, JobId> started_by_;  // GPUs the jobs ahead start on in this pass
};

}  // namespace

Result<Explanation> Explain(const ClusterSnapshot& cluster,
                            const Queue& queue,
                            const PolicyConfig& policy,
                            Time now,
                            JobId job) {
  for (std::size_t r = 0; r < cluster.running.size(); ++r) {
    if (cluster.running[r].id == job) {
      return ExplainRunning(cluster, static_cast<int>(r), policy, now);
    }
  }
  const bool queued = std::any_of(
      queue.pending.begin(), queue.pending.end(), [&](const auto& q) { return q.id == job; });
  if (!queued) {
    return NotFound("job " + std::to_string(job.value()) + " is neither queued nor running");
  }
  PendingExplainer explainer(cluster, queue, policy, now);
  const Decisions decisions = DecideUpTo(
      cluster, queue, policy, now, job, [&](const PassView& view) { explainer.Observe(view); });
  return explainer.Finish(decisions);
}

}  // namespace gf
