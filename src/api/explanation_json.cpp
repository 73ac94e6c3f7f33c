// JSON of GET /jobs/{id}/explain (model/explanation.h): why a job waits or where it runs,
// node by node. Apart from the job itself (json_mapping.cpp): a tree of its own.
#include <optional>
#include <string>
#include <vector>

#include "api/json_mapping.h"
#include "api/json_mapping_internal.h"

namespace gf {

namespace {

using nlohmann::json;

// A time as both fields of the API's convention: "<name>" (RFC 3339) and "<name>_ms".
void PutTime(json& out, const std::string& name, const std::optional<Time>& t) {
  out[name] = OptionalTime(t);
  out[name + "_ms"] = OptionalMillis(t);
}

json AllocationToJson(const std::optional<Allocation>& allocation) {
  if (!allocation) {
    return json();
  }
  json uuids = json::array();
  for (const GpuUuid& uuid : allocation->gpus) {
    uuids.push_back(uuid.value());
  }
  return json{{"node", allocation->node.value()},
              {"gpu_uuids", std::move(uuids)},
              {"gpu_share", GpuAmountJson(allocation->gpu_milli)},
              {"gpu_mem_mib", GpuMemJson(allocation->gpu_memory_mib)},
              {"mig", allocation->mig.value().empty() ? json() : json(allocation->mig.value())}};
}

json JobsAheadToJson(const std::vector<JobAhead>& ahead) {
  json out = json::array();
  for (const JobAhead& a : ahead) {
    json nodes = json::array();
    for (const NodeId& node : a.nodes) {
      nodes.push_back(node.value());
    }
    json entry{{"id", OptionalId(a.id)},
               {"other_user", !a.id.has_value()},
               {"position", a.position},
               {"priority", a.priority},
               {"team", a.team},
               {"gpus", a.gpus},
               {"action", a.action},
               {"nodes", std::move(nodes)},
               {"more_nodes", a.more_nodes}};
    PutTime(entry, "from", a.from);
    out.push_back(std::move(entry));
  }
  return out;
}

json PriorityFactorsToJson(const std::optional<PriorityFactors>& p) {
  if (!p) {
    return json();
  }
  json out{{"priority", p->priority},
           {"class_rank", p->class_rank},
           {"team", p->team},
           {"quotas_on", p->quotas_on},
           {"team_below_guarantee", p->team_below_guarantee},
           {"team_usage_gpu_seconds", p->team_usage_gpu_seconds},
           {"team_weight", p->team_weight},
           {"team_share", p->team_share},
           {"team_rank", p->team_rank},
           {"teams_waiting", p->teams_waiting},
           {"user", p->user},
           {"user_usage_gpu_seconds", p->user_usage_gpu_seconds},
           {"user_weight", p->user_weight},
           {"user_share", p->user_share},
           {"user_rank", p->user_rank},
           {"users_waiting", p->users_waiting},
           {"waited_s", p->waited.count() / 1000}};
  PutTime(out, "submit_time", p->submit_time);
  PutTime(out, "place", p->place);
  return out;
}

json QuotaToJson(const std::optional<QuotaExplanation>& q) {
  if (!q) {
    return json();
  }
  return json{{"may_start", q->may_start},
              {"borrowed", q->borrowed},
              {"guarantee_right", q->guarantee_right},
              {"reason", q->reason},
              {"class_allowed_users", q->class_allowed_users},
              {"class_max_gpus_per_user", OptionalValue(q->class_max_gpus_per_user)},
              {"quotas_on", q->quotas_on},
              {"team_held_gpus", GpuAmountJson(q->team_held_milli)},
              {"team_guaranteed_gpus", q->team_guaranteed_gpus},
              {"team_max_gpus", OptionalValue(q->team_max_gpus)},
              {"team_budget_gpu_hours", OptionalValue(q->team_budget_gpu_hours)},
              {"team_period_gpu_hours", q->team_period_gpu_hours},
              {"over_budget", q->over_budget},
              {"budget_approved", q->budget_approved}};
}

json NodeExplanationToJson(const NodeExplanation& node) {
  json held = json::array();
  for (const GpuHold& hold : node.held) {
    json entry{{"index", hold.index},
               {"kind", hold.kind},
               {"job", OptionalId(hold.job)},
               {"other_user", hold.other_user},
               {"then_for", OptionalId(hold.then_for)},
               {"then_for_other_user", hold.then_for_other_user}};
    PutTime(entry, "until", hold.until);
    PutTime(entry, "then_from", hold.then_from);
    held.push_back(std::move(entry));
  }
  json victims = json::array();
  for (const VictimCandidate& v : node.victims) {
    victims.push_back(json{{"job", OptionalId(v.job)},
                           {"other_user", !v.job.has_value()},
                           {"priority", v.priority},
                           {"borrowed", v.borrowed},
                           {"may_preempt", v.may_preempt},
                           {"chosen", v.chosen},
                           {"why", v.why}});
  }
  return json{{"node", node.node.value()},
              {"state", node.state},
              {"verdict", node.verdict},
              {"detail", node.detail},
              {"gpus", node.gpus},
              {"failed", node.failed},
              {"degraded", node.degraded},
              {"matching", node.matching},
              {"free", node.free},
              {"givable", node.givable},
              {"models", node.models},
              {"held", std::move(held)},
              {"victims", std::move(victims)}};
}

json RunningExplanationToJson(const std::optional<RunningExplanation>& r) {
  if (!r) {
    return json();
  }
  json out{{"placement", AllocationToJson(r->allocation)},
           {"gpu_indexes", r->gpu_indexes},
           {"preemptible", r->preemptible},
           {"stopping", r->stopping},
           {"preempted_by", r->preempted_by}};
  PutTime(out, "since", r->since);
  PutTime(out, "expected_end", r->expected_end);
  PutTime(out, "protected_until", r->protected_until);
  return out;
}

}  // namespace

json ExplanationToJson(const Explanation& e) {
  json preempts = json::array();
  for (const JobId& victim : e.preempts) {
    preempts.push_back(victim.value());
  }
  json nodes = json::array();
  for (const NodeExplanation& node : e.nodes) {
    nodes.push_back(NodeExplanationToJson(node));
  }
  json out{{"job", e.job.value()},
           {"state", e.state},
           {"outcome", e.outcome},
           {"reason", e.reason},
           {"reason_code", e.pending_reason ? json(ToString(e.pending_reason->code)) : json()},
           {"reason_stage", e.pending_reason ? json(ToString(e.pending_reason->stage)) : json()},
           {"placement", AllocationToJson(e.placement)},
           {"preempts", std::move(preempts)},
           {"preempts_other_users", e.preempts_other_users},
           {"position", e.position},
           {"waiting", e.waiting},
           {"ahead", JobsAheadToJson(e.ahead)},
           {"ahead_omitted", e.ahead_omitted},
           {"priority", PriorityFactorsToJson(e.priority)},
           {"quota", QuotaToJson(e.quota)},
           {"time_limit_s", e.time_limit ? json(e.time_limit->count()) : json()},
           {"time_limit_source", e.time_limit_source},
           {"prediction", e.prediction ? JobPredictionToJson(*e.prediction) : json()},
           {"nodes", std::move(nodes)},
           {"nodes_omitted", e.nodes_omitted},
           {"nodes_by_verdict", e.nodes_by_verdict},
           {"running", RunningExplanationToJson(e.running)}};
  PutTime(out, "estimated_start", e.estimated_start);
  out["start_estimate"] = StartEstimateJson(e.start_estimate);
  return out;
}

}  // namespace gf
