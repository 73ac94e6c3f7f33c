// RunScenario(): plays parsed scenario steps through Decide() (declared in scenario.h).
#include <algorithm>
#include <map>
#include <set>

#include "scheduler/ordering/baseline.h"
#include "scheduler/scenario.h"
#include "scheduler/scheduler.h"

namespace gf {
namespace {

// "placement/no_free_gpus": how `expect code` names a structured reason.
std::string CodeText(const PendingReason& reason) {
  return std::string(ToString(reason.stage)) + "/" + std::string(ToString(reason.code));
}

std::string JoinIndexes(const std::vector<int>& indexes) {
  std::string text;
  for (int index : indexes) {
    text += (text.empty() ? "" : ",") + std::to_string(index);
  }
  return text;
}

std::string JobName(JobId id) {
  return "job " + std::to_string(id.value());
}

// The state a scenario builds up, one step at a time.
class ScenarioRunner {
 public:
  Result<std::vector<std::string>> Run(const Scenario& scenario) {
    for (const ScenarioStep& step : scenario.steps) {
      line_ = step.line;
      Status status = std::visit([this](const auto& action) { return Do(action); }, step.action);
      if (!status.ok()) {
        return InvalidArgument("line " + std::to_string(line_) + ": " + status.error().message);
      }
    }
    return failures_;
  }

 private:
  void Fail(const std::string& message) {
    failures_.push_back("line " + std::to_string(line_) + ": " + message);
  }

  Result<NodeSnapshot*> FindNode(const NodeId& name) {
    for (NodeSnapshot& node : cluster_.nodes) {
      if (node.node.name == name) {
        return &node;
      }
    }
    return InvalidArgument("no node '" + name.value() + "'; add it with a node line first");
  }

  Result<Gpu*> FindGpu(const NodeId& name, int index) {
    GF_ASSIGN_OR_RETURN(NodeSnapshot * node, FindNode(name));
    for (Gpu& gpu : node->node.gpus) {
      if (gpu.index == index) {
        return &gpu;
      }
    }
    return InvalidArgument("node '" + name.value() + "' has no GPU " + std::to_string(index));
  }

  // The GPU indexes of `allocation`, in allocation order; -1 for an unknown UUID.
  std::vector<int> Indexes(const Allocation& allocation) {
    std::vector<int> indexes;
    Result<NodeSnapshot*> node = FindNode(allocation.node);
    for (const GpuUuid& uuid : allocation.gpus) {
      int index = -1;
      if (node.ok()) {
        for (const Gpu& gpu : (*node)->node.gpus) {
          index = gpu.uuid == uuid ? gpu.index : index;
        }
      }
      indexes.push_back(index);
    }
    return indexes;
  }

  Status Do(const AddNodeStep& step) {
    if (FindNode(step.node.name).ok()) {
      return InvalidArgument("node '" + step.node.name.value() + "' is already there");
    }
    cluster_.nodes.push_back(NodeSnapshot{.node = step.node, .allocated = {}});
    return OkStatus();
  }

  Status Do(const SetStateStep& step) {
    GF_ASSIGN_OR_RETURN(NodeSnapshot * node, FindNode(step.node));
    node->node.state = step.state;
    return OkStatus();
  }

  Status Do(const SetHealthStep& step) {
    GF_ASSIGN_OR_RETURN(Gpu * gpu, FindGpu(step.node, step.index));
    gpu->health = step.health;
    gpu->health_cause = step.health == GpuHealth::kOk ? "" : "set by scenario";
    return OkStatus();
  }

  Status Do(const AllocateStep& step) {
    GF_ASSIGN_OR_RETURN(NodeSnapshot * node, FindNode(step.node));
    for (int index : step.indexes) {
      GF_ASSIGN_OR_RETURN(const Gpu* gpu, FindGpu(step.node, index));
      node->allocated.insert(gpu->uuid);
    }
    return OkStatus();
  }

  Status Do(const SubmitStep& step) {
    const int members = std::max(step.job.request.nodes, 1);
    for (int rank = 0; rank < members; ++rank) {
      QueuedJob job = step.job;
      job.id = JobId(step.job.id.value() + rank);
      if (members > 1) {
        job.gang = step.job.id;
      }
      if (!known_jobs_.insert(job.id).second) {
        return InvalidArgument(JobName(job.id) + " is already submitted");
      }
      job.submit_time = Time(step.submit.value_or(now_));
      submitted_[job.id] = job;
      queue_.pending.push_back(std::move(job));
    }
    return OkStatus();
  }

  Status Do(const RunStep& step) {
    if (!known_jobs_.insert(step.job.id).second) {
      return InvalidArgument(JobName(step.job.id) + " is already submitted");
    }
    GF_ASSIGN_OR_RETURN(NodeSnapshot * node, FindNode(step.job.allocation.node));
    RunningJob job = step.job;
    for (const int index : step.indexes) {
      GF_ASSIGN_OR_RETURN(const Gpu* gpu, FindGpu(job.allocation.node, index));
      if (!node->allocated.insert(gpu->uuid).second && !HoldsFractions(gpu->sharing)) {
        return InvalidArgument("GPU " + std::to_string(index) + " of " +
                               job.allocation.node.value() + " is already held");
      }
      job.allocation.gpus.push_back(gpu->uuid);
    }
    job.start_time = Time(step.start.value_or(now_));
    if (step.checkpoint.has_value()) {
      job.last_checkpoint = Time(*step.checkpoint);
    }
    // Requeued as it was submitted, should it be preempted.
    QueuedJob queued{job.id, job.priority, job.start_time, JobRequest{}, job.user};
    queued.request.gpus = static_cast<int>(step.indexes.size());
    queued.team = job.team;
    queued.time_limit = job.time_limit;
    queued.expected_duration = job.expected_duration;
    queued.attained_gpu_seconds = job.attained_gpu_seconds;
    submitted_[job.id] = queued;
    running_[job.id] = std::move(job);
    return OkStatus();
  }

  Status Do(const ClassStep& step) {
    GF_ASSIGN_OR_RETURN(const PriorityClass named, ParsePriorityClass(step.name));
    if (step.remove) {
      std::erase_if(policy_.classes, [&](const auto& c) { return c.name == step.name; });
      return OkStatus();
    }
    auto cls = std::find_if(policy_.classes.begin(), policy_.classes.end(), [&](const auto& c) {
      return c.name == step.name;
    });
    if (cls == policy_.classes.end()) {
      // Ranked after the others (ClassPolicyFor of a class not listed), unless rank= says.
      cls = policy_.classes.insert(policy_.classes.end(), ClassPolicyFor(policy_, named));
    }
    cls->rank = step.rank.value_or(cls->rank);
    cls->preempts = step.preempts.value_or(cls->preempts);
    cls->allowed_users = step.users.value_or(cls->allowed_users);
    cls->max_gpus_per_user =
        step.max_gpus_per_user.has_value() ? step.max_gpus_per_user : cls->max_gpus_per_user;
    cls->default_time_limit =
        step.default_limit.has_value() ? step.default_limit : cls->default_time_limit;
    cls->max_time_limit = step.max_limit.has_value() ? step.max_limit : cls->max_time_limit;
    return OkStatus();
  }

  Status Do(const TeamStep& step) {
    std::erase_if(policy_.teams, [&](const TeamPolicy& t) { return t.name == step.team.name; });
    policy_.teams.push_back(step.team);
    return OkStatus();
  }

  Status Do(const PreemptionStep& step) {
    policy_.preemption = step.preemption;
    return OkStatus();
  }

  Status Do(const BackfillStep& step) {
    policy_.backfill = step.backfill;
    return OkStatus();
  }

  Status Do(const OrderStep& step) {
    policy_.ordering = step.ordering;
    return OkStatus();
  }

  Status Do(const SharePlacementStep& step) {
    policy_.share_placement = step.placement;
    return OkStatus();
  }

  Status Do(const UsageStep& step) {
    if (!step.team) {
      cluster_.user_decayed_gpu_seconds[step.name] = step.decayed_gpu_seconds.value_or(0);
      return OkStatus();
    }
    TeamUsage& usage = cluster_.team_usage[step.name];
    usage.decayed_gpu_seconds = step.decayed_gpu_seconds.value_or(usage.decayed_gpu_seconds);
    usage.period_gpu_hours = step.period_gpu_hours.value_or(usage.period_gpu_hours);
    return OkStatus();
  }

  Status Do(const AdvanceStep& step) {
    now_ += step.by;
    return OkStatus();
  }

  Status Do(const DecideStep& step) {
    if (step.at.has_value()) {
      now_ = *step.at;
    }
    GF_TRY(ValidatePolicy(policy_));
    cluster_.running.clear();
    for (const auto& [id, job] : running_) {
      cluster_.running.push_back(job);
    }
    last_ = Decide(cluster_, queue_, policy_, Time(now_));
    for (const PreemptDecision& preemption : last_->preemptions) {
      Requeue(preemption);
    }
    for (const StartDecision& start : last_->starts) {
      Apply(start);
    }
    return OkStatus();
  }

  // A preempted job stops at once and waits again with its original submit time.
  void Requeue(const PreemptDecision& preemption) {
    const auto it = running_.find(preemption.victim);
    if (it == running_.end() || it->second.stopping) {
      Fail(JobName(preemption.victim) +
           " was preempted, but it is not running or already stopping");
      return;
    }
    Release(it->second.allocation);
    QueuedJob& requeued = submitted_.at(preemption.victim);
    requeued.attained_gpu_seconds = AttainedGpuSeconds(it->second, Time(now_));
    running_.erase(it);
    queue_.pending.push_back(requeued);
  }

  // Called before the job leaves running_: a shared GPU stays held while another job holds it.
  void Release(const Allocation& allocation) {
    Result<NodeSnapshot*> node = FindNode(allocation.node);
    for (const GpuUuid& uuid : allocation.gpus) {
      const auto holders = std::count_if(running_.begin(), running_.end(), [&](const auto& r) {
        const auto& gpus = r.second.allocation.gpus;
        return std::find(gpus.begin(), gpus.end(), uuid) != gpus.end();
      });
      if (node.ok() && holders <= 1) {
        (*node)->allocated.erase(uuid);
      }
    }
  }

  // Holds a started job's GPUs and takes it off the queue; reports GPUs handed out wrongly.
  void Apply(const StartDecision& start) {
    Result<NodeSnapshot*> node = FindNode(start.allocation.node);
    if (!node.ok()) {
      Fail(JobName(start.job) + " started on unknown node " + start.allocation.node.value());
      return;
    }
    for (const GpuUuid& uuid : start.allocation.gpus) {
      const auto gpu = std::find_if((*node)->node.gpus.begin(),
                                    (*node)->node.gpus.end(),
                                    [&](const Gpu& g) { return g.uuid == uuid; });
      // A shared GPU is held by several fractional jobs at once.
      const bool shared = gpu != (*node)->node.gpus.end() && TakesFractions(*gpu) &&
                          start.allocation.gpu_milli < kWholeGpuMilli;
      if (gpu == (*node)->node.gpus.end() || !TakesWork(*gpu) ||
          (!(*node)->allocated.insert(uuid).second && !shared)) {
        Fail(JobName(start.job) + " was given " + uuid.value() +
             ", which is unknown, unhealthy or already held");
      }
    }
    const QueuedJob& queued = submitted_.at(start.job);
    RunningJob job;
    job.id = start.job;
    job.team = queued.team;
    job.user = queued.user;
    job.priority = queued.priority;
    job.allocation = start.allocation;
    job.start_time = Time(now_);
    job.time_limit =
        EffectiveTimeLimit(ClassPolicyFor(policy_, queued.priority), queued.time_limit);
    job.preemptible = start.preemptible;
    job.expected_duration = queued.expected_duration;
    job.attained_gpu_seconds = queued.attained_gpu_seconds;
    running_[start.job] = std::move(job);
    std::erase_if(queue_.pending, [&](const QueuedJob& j) { return j.id == start.job; });
  }

  Status Do(const FinishStep& step) {
    const auto it = running_.find(step.job);
    if (it == running_.end()) {
      return InvalidArgument(JobName(step.job) + " is not running");
    }
    Release(it->second.allocation);
    running_.erase(it);
    return OkStatus();
  }

  // What the last decide said about `job`, for failure messages.
  std::string Outcome(JobId job) {
    for (const StartDecision& start : last_->starts) {
      if (start.job == job) {
        const Allocation& a = start.allocation;
        return "it started on " + a.node.value() + " (gpus " + JoinIndexes(Indexes(a)) +
               (a.gpu_milli < kWholeGpuMilli ? " share " + GpuAmountText(a.gpu_milli) + " mem " +
                                                   std::to_string(a.gpu_memory_mib)
                                             : "") +
               ")";
      }
    }
    for (const PendingDecision& pending : last_->pending) {
      if (pending.job == job) {
        return "it is pending: \"" + pending.reason.text + "\"";
      }
    }
    return "the decide said nothing about it";
  }

  // " (placement/no_free_gpus, ever)" for a pending job, for `expect code`'s message.
  std::string CodeOf(JobId job) const {
    for (const PendingDecision& pending : last_->pending) {
      if (pending.job == job) {
        return " (" + CodeText(pending.reason) +
               (pending.reason.can_ever_fit ? ", ever)" : ", never)");
      }
    }
    return "";
  }

  Status Do(const ExpectStartStep& step) {
    GF_TRY(RequireDecide());
    for (const StartDecision& start : last_->starts) {
      if (start.job == step.job && start.allocation.node == step.node &&
          (!step.gpus.has_value() || *step.gpus == Indexes(start.allocation)) &&
          (!step.milli.has_value() || *step.milli == start.allocation.gpu_milli) &&
          (!step.memory_mib.has_value() || *step.memory_mib == start.allocation.gpu_memory_mib)) {
        return OkStatus();
      }
    }
    Fail("expected " + JobName(step.job) + " to start on " + step.node.value() +
         (step.gpus.has_value() ? " (gpus " + JoinIndexes(*step.gpus) + ")" : "") +
         (step.milli.has_value() ? " share " + GpuAmountText(*step.milli) : "") +
         (step.memory_mib.has_value() ? " mem " + std::to_string(*step.memory_mib) : "") + "; " +
         Outcome(step.job));
    return OkStatus();
  }

  Status Do(const ExpectPendingStep& step) {
    GF_TRY(RequireDecide());
    for (const PendingDecision& pending : last_->pending) {
      if (pending.job != step.job) {
        continue;
      }
      const bool matches = !step.text.has_value() ||
                           (step.exact ? pending.reason.text == *step.text
                                       : pending.reason.text.find(*step.text) != std::string::npos);
      const bool code_matches = !step.code.has_value() || *step.code == CodeText(pending.reason);
      const bool fit_matches =
          !step.can_ever_fit.has_value() || *step.can_ever_fit == pending.reason.can_ever_fit;
      if (matches && code_matches && fit_matches) {
        return OkStatus();
      }
    }
    Fail(
        "expected " + JobName(step.job) + " pending" +
        (step.text.has_value()
             ? (step.exact ? " with reason \"" : " with a reason containing \"") + *step.text + "\""
             : "") +
        (step.code.has_value()
             ? " with code " + *step.code + (*step.can_ever_fit ? " (ever)" : " (never)")
             : "") +
        "; " + Outcome(step.job) + (step.code.has_value() ? CodeOf(step.job) : ""));
    return OkStatus();
  }

  Status Do(const ExpectStartCountStep& step) {
    GF_TRY(RequireDecide());
    if (static_cast<int>(last_->starts.size()) != step.count) {
      std::string started;
      for (const StartDecision& start : last_->starts) {
        started += " " + std::to_string(start.job.value());
      }
      Fail("expected " + std::to_string(step.count) + " starts; got " +
           std::to_string(last_->starts.size()) + (started.empty() ? "" : ":" + started));
    }
    return OkStatus();
  }

  Status Do(const ExpectBorrowedStep& step) {
    GF_TRY(RequireDecide());
    for (const StartDecision& start : last_->starts) {
      if (start.job == step.job && start.preemptible == step.borrowed) {
        return OkStatus();
      }
    }
    Fail("expected " + JobName(step.job) + " to start " +
         (step.borrowed ? "borrowed (preemptible)" : "within its guarantee (not preemptible)") +
         "; " + Outcome(step.job));
    return OkStatus();
  }

  Status Do(const ExpectPreemptStep& step) {
    GF_TRY(RequireDecide());
    std::string seen;
    for (const PreemptDecision& p : last_->preemptions) {
      if (p.victim == step.victim && p.for_job == step.for_job &&
          (!step.text.has_value() || p.cause.find(*step.text) != std::string::npos)) {
        return OkStatus();
      }
      seen += " " + std::to_string(p.victim.value()) + " for " + std::to_string(p.for_job.value()) +
              " (\"" + p.cause + "\")";
    }
    Fail("expected " + JobName(step.victim) + " preempted for " + JobName(step.for_job) +
         (step.text.has_value() ? " with a cause containing \"" + *step.text + "\"" : "") +
         "; preemptions:" + (seen.empty() ? " none" : seen));
    return OkStatus();
  }

  Status Do(const ExpectPreemptCountStep& step) {
    GF_TRY(RequireDecide());
    if (static_cast<int>(last_->preemptions.size()) != step.count) {
      Fail("expected " + std::to_string(step.count) + " preemptions; got " +
           std::to_string(last_->preemptions.size()));
    }
    return OkStatus();
  }

  Status Do(const ExpectEstimateStep& step) {
    GF_TRY(RequireDecide());
    for (const PendingDecision& pending : last_->pending) {
      if (pending.job != step.job) {
        continue;
      }
      const std::optional<Millis> at =
          pending.estimated_start.has_value()
              ? std::optional(pending.estimated_start->time_since_epoch())
              : std::nullopt;
      if (at != step.at) {
        Fail("expected " + JobName(step.job) + " to be estimated to start at " +
             (step.at ? std::to_string(step.at->count()) + "ms" : "none") + "; it is at " +
             (at ? std::to_string(at->count()) + "ms" : "none") + " (\"" + pending.reason.text +
             "\")");
      }
      return OkStatus();
    }
    Fail("expected " + JobName(step.job) + " pending with an estimate; " + Outcome(step.job));
    return OkStatus();
  }

  Status RequireDecide() const {
    if (!last_.has_value()) {
      return InvalidArgument("expect before any decide");
    }
    return OkStatus();
  }

  ClusterSnapshot cluster_;
  Queue queue_;
  PolicyConfig policy_;
  std::map<JobId, RunningJob> running_;
  std::map<JobId, QueuedJob> submitted_;  // as submitted, to requeue a preempted job
  std::set<JobId> known_jobs_;
  Millis now_{0};
  std::optional<Decisions> last_;
  std::vector<std::string> failures_;
  int line_ = 0;
};

}  // namespace

Result<std::vector<std::string>> RunScenario(const Scenario& scenario) {
  return ScenarioRunner().Run(scenario);
}

}  // namespace gf
