// The scheduling policy's tables of the config file: [scheduler] (with its weights), the
// priority classes [class.NAME], the teams [team.NAME] and [other_teams], and their idle
// rules. Apart from the daemon's own tables (config_up.cpp): they become PolicyConfig, which
// ValidatePolicy checks.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config_parser.h"
#include "scheduler/idle_policy.h"

namespace gf {
namespace {

// The idle reaper's keys, in [class.NAME] and [team.NAME] (and [other_teams]).
constexpr std::array<std::string_view, 5> kIdleKeys = {
    "idle_action", "idle_after", "idle_grace", "idle_interactive_after", "idle_util_below"};

}  // namespace

Status ConfigParser::ParseScheduler(const TomlValue& v) {
  GF_ASSIGN_OR_RETURN(const Section s, TableSection(v, "[scheduler]", ""));
  GF_TRY(CheckKeys(s,
                   {"backfill",
                    "backfill_depth",
                    "default_class",
                    "default_cpus_per_gpu",
                    "default_mem_per_gpu",
                    "fair_share_band",
                    "fair_share_half_life",
                    "las_thresholds",
                    "max_preemptors_per_pass",
                    "min_run_time",
                    "model_weights",
                    "order",
                    "prediction",
                    "prediction_max_delay",
                    "preemption",
                    "size_preemption",
                    "size_preemption_ratio",
                    "user_fair_share",
                    "user_weights"}));
  PolicyConfig& p = config_.policy;
  GF_ASSIGN_OR_RETURN(const auto default_class, String(s, "default_class"));
  Set(p.default_class, default_class);
  GF_ASSIGN_OR_RETURN(const auto cpus_per_gpu, IntIn(s, "default_cpus_per_gpu", 0, kMaxJobCpus));
  Set(p.host_defaults.cpus_per_gpu, cpus_per_gpu);
  GF_ASSIGN_OR_RETURN(const auto mem_per_gpu, String(s, "default_mem_per_gpu"));
  if (mem_per_gpu.has_value() && *mem_per_gpu != "0") {
    Result<std::int64_t> mib = ParseMemoryMib(*mem_per_gpu, "[scheduler] default_mem_per_gpu");
    if (!mib.ok()) {
      return InvalidArgument(KeyAt(s, "default_mem_per_gpu") + ": " + mib.error().message);
    }
    p.host_defaults.memory_mib_per_gpu = *mib;
  }
  GF_ASSIGN_OR_RETURN(const auto half_life, Duration(s, "fair_share_half_life"));
  Set(p.fair_share.half_life, half_life);
  GF_ASSIGN_OR_RETURN(const auto preemption, Bool(s, "preemption"));
  Set(p.preemption.enabled, preemption);
  GF_ASSIGN_OR_RETURN(const auto min_run, Duration(s, "min_run_time", /*zero_ok=*/true));
  Set(p.preemption.min_run_time, min_run);
  GF_ASSIGN_OR_RETURN(const auto preemptors, IntIn(s, "max_preemptors_per_pass"));
  Set(p.preemption.max_preemptors_per_pass, preemptors);
  GF_ASSIGN_OR_RETURN(const auto backfill, Bool(s, "backfill"));
  Set(p.backfill.enabled, backfill);
  GF_ASSIGN_OR_RETURN(const auto depth, IntIn(s, "backfill_depth"));
  Set(p.backfill.depth, depth);
  GF_ASSIGN_OR_RETURN(const auto order, Parsed(s, "order", &ParseQueueOrder));
  Set(p.ordering.order, order);
  GF_ASSIGN_OR_RETURN(const auto thresholds, NumberList(s, "las_thresholds"));
  Set(p.ordering.las_thresholds, thresholds);
  GF_ASSIGN_OR_RETURN(const auto prediction, Bool(s, "prediction"));
  Set(p.prediction.enabled, prediction);
  GF_ASSIGN_OR_RETURN(const auto max_delay, Duration(s, "prediction_max_delay", /*zero_ok=*/true));
  Set(p.prediction.max_delay, max_delay);
  GF_ASSIGN_OR_RETURN(const auto band, Number(s, "fair_share_band"));
  Set(p.prediction.fair_share_band, band);
  GF_ASSIGN_OR_RETURN(const auto user_fair_share,
                      Parsed(s, "user_fair_share", &ParseUserFairShare));
  Set(p.prediction.user_fair_share, user_fair_share);
  GF_ASSIGN_OR_RETURN(const auto size_preemption, Bool(s, "size_preemption"));
  Set(p.prediction.size_preemption, size_preemption);
  GF_ASSIGN_OR_RETURN(const auto size_ratio, Number(s, "size_preemption_ratio"));
  Set(p.prediction.size_preemption_ratio, size_ratio);
  for (const auto& [key, field] :
       {std::pair<std::string, std::string>{"default_class", "default_class"},
        {"fair_share_half_life", "fair_share.half_life"},
        {"min_run_time", "preemption.min_run_time"},
        {"max_preemptors_per_pass", "preemption.max_preemptors_per_pass"},
        {"backfill_depth", "backfill.depth"},
        {"las_thresholds", "ordering.las_thresholds"},
        {"prediction_max_delay", "prediction.max_delay"},
        {"fair_share_band", "prediction.fair_share_band"},
        {"size_preemption_ratio", "prediction.size_preemption_ratio"}}) {
    if (s.Table().contains(key)) {
      Remember(s, key, field);
    }
  }
  if (auto it = s.Table().find("user_weights"); it != s.Table().end()) {
    GF_TRY(ParseWeights(it->second, "user_weights", p.fair_share.user_weights));
  }
  if (auto it = s.Table().find("model_weights"); it != s.Table().end()) {
    GF_TRY(ParseWeights(it->second, "model_weights", p.fair_share.model_weights));
  }
  return OkStatus();
}

// [scheduler.NAME]: a number per key (a user, a GPU model), into fair_share.NAME.
Status ConfigParser::ParseWeights(const TomlValue& v,
                                  const std::string& name,
                                  std::map<std::string, double>& weights) {
  GF_ASSIGN_OR_RETURN(const Section s,
                      TableSection(v, "[scheduler." + name + "]", "fair_share." + name));
  for (const auto& [key, value] : s.Table()) {
    GF_ASSIGN_OR_RETURN(const std::optional<double> weight, Number(s, key));
    weights[key] = *weight;
    std::string field = "fair_share." + name;
    field.append("[").append(key).append("]");
    where_[field] = KeyAt(s, key);
  }
  return OkStatus();
}

// Which classes the file starts from. Tables that all name stock classes (high, normal,
// low) tune them: a key a table leaves out keeps the stock value, so
// `[class.high] max_gpus_per_user = 8` is all it takes to cap one class. A table naming a
// class of its own means the admin defines the tiers: the classes are then exactly the
// file's tables (a stock name among them starts blank too), as an admin listing their
// tiers expects, rather than their tiers mixed with ours.
void ConfigParser::ChooseClassSet(const TomlTable& root) {
  const auto it = root.find("class");
  if (it == root.end() || !it->second.is_table()) {
    return;  // ForEachNamed reports a "class" that is not tables
  }
  const std::vector<PriorityClassPolicy> stock = DefaultPriorityClasses();
  for (const auto& entry : it->second.as_table()) {
    // Not a structured binding: clang 14 (the fuzz preset) cannot capture one in a lambda.
    const std::string& name = entry.first;
    const bool is_stock =
        std::any_of(stock.begin(), stock.end(), [&](const auto& c) { return c.name == name; });
    own_classes_ = own_classes_ || !is_stock;
  }
  if (own_classes_) {
    config_.policy.classes.clear();
  }
}

// [class.NAME]: tunes the stock class of that name, or defines one (ChooseClassSet).
Status ConfigParser::ParseClass(const std::string& name, const TomlValue& v) {
  GF_ASSIGN_OR_RETURN(const Section s,
                      TableSection(v, "[class." + name + "]", "classes[" + name + "]"));
  std::vector<std::string> known = {"allowed_users",
                                    "default_time_limit",
                                    "idle_opt_out",
                                    "max_gpus_per_user",
                                    "max_time_limit",
                                    "preempts",
                                    "rank"};
  known.insert(known.end(), kIdleKeys.begin(), kIdleKeys.end());
  GF_TRY(CheckKeys(s, known));
  std::vector<PriorityClassPolicy>& classes = config_.policy.classes;
  auto it = std::find_if(
      classes.begin(), classes.end(), [&](const PriorityClassPolicy& c) { return c.name == name; });
  if (it == classes.end()) {
    if (!s.Table().contains("rank")) {
      // Without it the order of the admin's tiers would be a guess.
      return InvalidArgument(At(v) + ": " + s.label +
                             " rank: missing; a file that defines its own classes gives "
                             "each a rank (lower goes first)");
    }
    PriorityClassPolicy added;
    added.name = name;
    it = classes.insert(classes.end(), std::move(added));
  }
  PriorityClassPolicy& cls = *it;
  where_[s.policy_prefix] = where_[s.policy_prefix + ".name"] = At(v) + ": " + s.label;
  GF_ASSIGN_OR_RETURN(const auto rank, IntIn(s, "rank"));
  Set(cls.rank, rank);
  GF_ASSIGN_OR_RETURN(const auto preempts, StringList(s, "preempts"));
  Set(cls.preempts, preempts);
  GF_ASSIGN_OR_RETURN(const auto users, StringList(s, "allowed_users"));
  Set(cls.allowed_users, users);
  GF_ASSIGN_OR_RETURN(const auto max_gpus, IntIn(s, "max_gpus_per_user"));
  SetOptional(cls.max_gpus_per_user, max_gpus);
  GF_ASSIGN_OR_RETURN(const auto default_limit, Duration(s, "default_time_limit"));
  SetOptional(cls.default_time_limit, default_limit);
  GF_ASSIGN_OR_RETURN(const auto max_limit, Duration(s, "max_time_limit"));
  SetOptional(cls.max_time_limit, max_limit);
  GF_TRY(ReadIdleRule(s, cls.idle));
  GF_ASSIGN_OR_RETURN(const auto opt_out, Bool(s, "idle_opt_out"));
  Set(cls.idle_opt_out, opt_out);
  RememberPresent(s);
  return OkStatus();
}

Status ConfigParser::ParseTeam(const std::string& name, const TomlValue& v) {
  GF_ASSIGN_OR_RETURN(const Section s,
                      TableSection(v, "[team." + name + "]", "teams[" + name + "]"));
  where_[s.policy_prefix] = At(v) + ": " + s.label;
  TeamPolicy team;
  team.name = name;
  GF_TRY(ReadTeamFields(s, team));
  config_.policy.teams.push_back(std::move(team));
  GF_ASSIGN_OR_RETURN(const auto members, StringList(s, "members"));
  for (const std::string& user : members.value_or(std::vector<std::string>{})) {
    auto [it, added] = config_.team_of_user.emplace(user, name);
    if (!added) {
      return KeyError(s,
                      "members",
                      "user '" + user + "' is already a member of team '" + it->second +
                          "'; a user belongs to one team (an admin may still charge a job to "
                          "another)");
    }
  }
  return OkStatus();
}

// The keys of [team.NAME] and [other_teams] (which has no members: it is everyone else).
Status ConfigParser::ReadTeamFields(const Section& s, TeamPolicy& team) {
  std::vector<std::string> known = {
      "fair_share_weight", "gpu_hour_budget", "guaranteed_gpus", "max_gpus", "over_budget"};
  if (s.policy_prefix != "other_teams") {
    known.emplace_back("members");
  }
  known.insert(known.end(), kIdleKeys.begin(), kIdleKeys.end());
  GF_TRY(CheckKeys(s, known));
  GF_ASSIGN_OR_RETURN(const auto guaranteed, IntIn(s, "guaranteed_gpus"));
  Set(team.guaranteed_gpus, guaranteed);
  GF_ASSIGN_OR_RETURN(const auto max_gpus, IntIn(s, "max_gpus"));
  SetOptional(team.max_gpus, max_gpus);
  GF_ASSIGN_OR_RETURN(const auto budget, Number(s, "gpu_hour_budget"));
  SetOptional(team.gpu_hour_budget, budget);
  GF_ASSIGN_OR_RETURN(const auto weight, Number(s, "fair_share_weight"));
  Set(team.fair_share_weight, weight);
  GF_ASSIGN_OR_RETURN(const auto over, String(s, "over_budget"));
  if (over.has_value()) {
    if (*over == "borrow_only") {
      team.over_budget = OverBudget::kBorrowOnly;
    } else if (*over == "hold") {
      team.over_budget = OverBudget::kHold;
    } else {
      return KeyError(
          s, "over_budget", "'" + *over + "' is not a choice; use \"borrow_only\" or \"hold\"");
    }
  }
  GF_TRY(ReadIdleRule(s, team.idle));
  RememberPresent(s);
  return OkStatus();
}

// The idle reaper's keys (kIdleKeys) of a [class.NAME] or [team.NAME] table; ranges and
// the like are ValidatePolicy's (ValidateIdleRule), located through RememberPresent.
Status ConfigParser::ReadIdleRule(const Section& s, IdleRule& rule) const {
  GF_ASSIGN_OR_RETURN(const auto after, Duration(s, "idle_after", /*zero_ok=*/true));
  SetOptional(rule.after, after);
  GF_ASSIGN_OR_RETURN(const auto interactive,
                      Duration(s, "idle_interactive_after", /*zero_ok=*/true));
  SetOptional(rule.interactive_after, interactive);
  GF_ASSIGN_OR_RETURN(const auto grace, Duration(s, "idle_grace", /*zero_ok=*/true));
  SetOptional(rule.grace, grace);
  GF_ASSIGN_OR_RETURN(const auto below, IntIn(s, "idle_util_below"));
  SetOptional(rule.util_below_pct, below);
  GF_ASSIGN_OR_RETURN(const auto action, Parsed(s, "idle_action", &ParseIdleAction));
  SetOptional(rule.action, action);
  return OkStatus();
}

}  // namespace gf
