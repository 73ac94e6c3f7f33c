#include "scheduler/policy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <tuple>

#include "core/check.h"
#include "scheduler/idle_policy.h"

namespace gf {

Result<PredictionPolicy::UserFairShare> ParseUserFairShare(std::string_view text) {
  if (text == "size") {
    return PredictionPolicy::UserFairShare::kSize;
  }
  if (text == "band") {
    return PredictionPolicy::UserFairShare::kBand;
  }
  return InvalidArgument("'" + std::string(text) + "' is not a user fair share; use size or band");
}

std::string_view ToString(PredictionPolicy::UserFairShare mode) {
  return mode == PredictionPolicy::UserFairShare::kSize ? "size" : "band";
}

std::vector<PriorityClassPolicy> DefaultPriorityClasses() {
  // Each class may preempt every class below it: the field case of issue #4 (preemption for
  // high priority), and normal work ahead of low.
  return {
      PriorityClassPolicy{.name = PriorityClass::kHigh.name,
                          .rank = 0,
                          .preempts = {PriorityClass::kNormal.name, PriorityClass::kLow.name}},
      PriorityClassPolicy{
          .name = PriorityClass::kNormal.name, .rank = 1, .preempts = {PriorityClass::kLow.name}},
      PriorityClassPolicy{.name = PriorityClass::kLow.name, .rank = 2},
  };
}

namespace {

const PriorityClassPolicy* FindClass(const PolicyConfig& policy, std::string_view name) {
  for (const PriorityClassPolicy& cls : policy.classes) {
    if (cls.name == name) {
      return &cls;
    }
  }
  return nullptr;
}

std::string ClassNames(const std::vector<PriorityClassPolicy>& classes) {
  std::vector<const PriorityClassPolicy*> sorted;
  sorted.reserve(classes.size());
  for (const PriorityClassPolicy& cls : classes) {
    sorted.push_back(&cls);
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return std::tie(a->rank, a->name) < std::tie(b->rank, b->name);  // as ClassTable numbers them
  });
  std::string text;
  for (const PriorityClassPolicy* cls : sorted) {
    text += (text.empty() ? "" : ", ") + cls->name;
  }
  return text;
}

}  // namespace

JobRequest WithHostDefaults(JobRequest request, const HostDefaults& defaults) {
  const std::int64_t gpus = IsFractional(request) || IsMig(request) ? 1 : std::max(request.gpus, 0);
  if (request.cpus == 0 && defaults.cpus_per_gpu > 0) {
    request.cpus =
        static_cast<int>(std::min<std::int64_t>(gpus * defaults.cpus_per_gpu, kMaxJobCpus));
  }
  if (request.memory_mib == 0 && defaults.memory_mib_per_gpu > 0) {
    request.memory_mib = std::min(gpus * defaults.memory_mib_per_gpu, kMaxJobMemoryMib);
  }
  return request;
}

PriorityClassPolicy ClassPolicyFor(const PolicyConfig& policy, const PriorityClass& priority) {
  if (const PriorityClassPolicy* cls = FindClass(policy, priority.name)) {
    return *cls;
  }
  int last = 0;
  for (const PriorityClassPolicy& cls : policy.classes) {
    last = std::max(last, cls.rank);
  }
  return PriorityClassPolicy{.name = priority.name, .rank = policy.classes.empty() ? 0 : last + 1};
}

Status CheckClassExists(const PolicyConfig& policy, const PriorityClass& priority) {
  if (FindClass(policy, priority.name) != nullptr) {
    return OkStatus();
  }
  return InvalidArgument("priority: no class '" + priority.name + "'; the classes are " +
                         ClassNames(policy.classes));
}

std::optional<std::chrono::seconds> EffectiveTimeLimit(
    const PriorityClassPolicy& cls, std::optional<std::chrono::seconds> requested) {
  std::optional<std::chrono::seconds> limit =
      requested.has_value() ? requested : cls.default_time_limit;
  if (cls.max_time_limit.has_value() && (!limit.has_value() || *limit > *cls.max_time_limit)) {
    limit = cls.max_time_limit;
  }
  return limit;
}

double ModelWeight(const FairSharePolicy& fair_share, std::string_view model) {
  for (const auto& [name, weight] : fair_share.model_weights) {  // a handful: a scan is fine
    if (std::equal(name.begin(), name.end(), model.begin(), model.end(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return weight;
    }
  }
  return 1;
}

double ModelWeight(const FairSharePolicy& fair_share, const std::vector<std::string>& models) {
  if (models.empty()) {
    return 1;
  }
  double sum = 0;
  for (const std::string& model : models) {
    sum += ModelWeight(fair_share, model);
  }
  return sum / static_cast<double>(models.size());
}

double DecayedUsage(double gpu_seconds, Millis elapsed, std::chrono::seconds half_life) {
  GF_CHECK(half_life.count() > 0);
  const double half_lives =
      static_cast<double>(elapsed.count()) / static_cast<double>(Millis(half_life).count());
  return gpu_seconds * std::exp2(-half_lives);
}

namespace {

// A class may preempt only a listed class ranked after it: preempting its own class or a
// higher one would let two jobs preempt each other back and forth.
Status ValidatePreempts(const PolicyConfig& policy, const PriorityClassPolicy& cls) {
  for (const std::string& victim : cls.preempts) {
    const PriorityClassPolicy* target = FindClass(policy, victim);
    if (target == nullptr) {
      return InvalidArgument("classes[" + cls.name + "].preempts: no class '" + victim +
                             "'; name a listed class (" + ClassNames(policy.classes) + ")");
    }
    if (target->rank <= cls.rank) {
      return InvalidArgument("classes[" + cls.name + "].preempts: '" + victim + "' has rank " +
                             std::to_string(target->rank) + ", not after " + cls.name + "'s rank " +
                             std::to_string(cls.rank) +
                             "; a class may preempt only classes ranked after it");
    }
  }
  return OkStatus();
}

Status ValidateClasses(const PolicyConfig& policy) {
  const std::vector<PriorityClassPolicy>& classes = policy.classes;
  if (classes.empty()) {
    return InvalidArgument("classes: none defined; define at least one class");
  }
  std::set<std::string> names;
  for (const PriorityClassPolicy& cls : classes) {
    if (const auto parsed = ParsePriorityClass(cls.name); !parsed.ok()) {
      return InvalidArgument("classes[" + cls.name + "].name: not a class name; use 1 to " +
                             std::to_string(kMaxPriorityClassName) +
                             " lower-case letters, digits, '-' or '_'");
    }
    if (!names.insert(cls.name).second) {
      return InvalidArgument("classes[" + cls.name + "]: listed twice; keep one");
    }
    if (cls.max_gpus_per_user.has_value() && *cls.max_gpus_per_user < 0) {
      return InvalidArgument("classes[" + cls.name + "].max_gpus_per_user: must be 0 or more");
    }
    GF_TRY(ValidateIdleRule(cls.idle, "classes[" + cls.name + "]"));
    if (cls.default_time_limit.has_value() && cls.max_time_limit.has_value() &&
        *cls.default_time_limit > *cls.max_time_limit) {
      return InvalidArgument("classes[" + cls.name +
                             "].default_time_limit: above max_time_limit; lower it");
    }
  }
  for (const PriorityClassPolicy& cls : classes) {
    GF_TRY(ValidatePreempts(policy, cls));
  }
  if (FindClass(policy, policy.default_class) == nullptr) {
    return InvalidArgument("default_class: no class '" + policy.default_class +
                           "'; name a listed class (" + ClassNames(classes) + ")");
  }
  return OkStatus();
}

Status ValidateTeam(const TeamPolicy& team, const std::string& where) {
  if (team.guaranteed_gpus < 0) {
    return InvalidArgument(where + ".guaranteed_gpus: must be 0 or more");
  }
  if (team.max_gpus.has_value() && *team.max_gpus < team.guaranteed_gpus) {
    return InvalidArgument(where + ".max_gpus: " + std::to_string(*team.max_gpus) +
                           " is below guaranteed_gpus " + std::to_string(team.guaranteed_gpus) +
                           "; raise max_gpus or lower the guarantee");
  }
  if (team.gpu_hour_budget.has_value() && *team.gpu_hour_budget < 0) {
    return InvalidArgument(where + ".gpu_hour_budget: must be 0 or more");
  }
  if (!(team.fair_share_weight > 0)) {
    return InvalidArgument(where + ".fair_share_weight: must be above 0");
  }
  GF_TRY(ValidateIdleRule(team.idle, where));
  return OkStatus();
}

}  // namespace

Status ValidatePolicy(const PolicyConfig& policy) {
  GF_TRY(ValidateClasses(policy));
  std::set<std::string> names;
  for (const TeamPolicy& team : policy.teams) {
    GF_TRY(ValidateTeam(team, "teams[" + team.name + "]"));
    if (!names.insert(team.name).second) {
      return InvalidArgument("teams[" + team.name + "]: listed twice; keep one");
    }
  }
  GF_TRY(ValidateTeam(policy.other_teams, "other_teams"));
  if (policy.fair_share.half_life.count() <= 0) {
    return InvalidArgument("fair_share.half_life: must be above 0s");
  }
  for (const auto& [model, weight] : policy.fair_share.model_weights) {
    if (!(weight > 0)) {
      return InvalidArgument("fair_share.model_weights[" + model + "]: must be above 0");
    }
  }
  for (const auto& [user, weight] : policy.fair_share.user_weights) {
    if (!(weight > 0)) {
      return InvalidArgument("fair_share.user_weights[" + user + "]: must be above 0");
    }
  }
  if (!(policy.prediction.fair_share_band >= 1)) {
    return InvalidArgument(
        "prediction.fair_share_band: must be 1 or more (1: exact shares; 2: a band per doubling)");
  }
  if (!(policy.prediction.size_preemption_ratio > 1)) {
    return InvalidArgument(
        "prediction.size_preemption_ratio: must be above 1 (jobs of one size would preempt each "
        "other back and forth); 2 is stock");
  }
  if (policy.preemption.min_run_time.count() < 0) {
    return InvalidArgument("preemption.min_run_time: must be 0s or more");
  }
  if (policy.preemption.max_preemptors_per_pass < 0) {
    return InvalidArgument("preemption.max_preemptors_per_pass: must be 0 or more");
  }
  if (policy.backfill.depth < 0) {
    return InvalidArgument("backfill.depth: must be 0 or more");
  }
  const std::vector<double>& thresholds = policy.ordering.las_thresholds;
  for (std::size_t i = 0; i < thresholds.size(); ++i) {
    if (!(thresholds[i] > (i == 0 ? 0 : thresholds[i - 1]))) {
      return InvalidArgument(
          "ordering.las_thresholds: must be above 0 and increasing, e.g. "
          "[3250, 7200] (GPU-seconds)");
    }
  }
  return OkStatus();
}

std::string_view ToString(QueueOrder order) {
  switch (order) {
    case QueueOrder::kPriority:
      return "priority";
    case QueueOrder::kFifo:
      return "fifo";
    case QueueOrder::kSjf:
      return "sjf";
    case QueueOrder::kSrtf:
      return "srtf";
    case QueueOrder::kLas:
      return "las";
  }
  return "priority";
}

Result<QueueOrder> ParseQueueOrder(std::string_view text) {
  for (const QueueOrder order : {QueueOrder::kPriority,
                                 QueueOrder::kFifo,
                                 QueueOrder::kSjf,
                                 QueueOrder::kSrtf,
                                 QueueOrder::kLas}) {
    if (text == ToString(order)) {
      return order;
    }
  }
  return InvalidArgument("'" + std::string(text) +
                         "' is not an order; use priority, fifo, sjf, srtf or las");
}

std::string_view ToString(SharePlacement placement) {
  return placement == SharePlacement::kFirstFit ? "first-fit" : "fullest";
}

Result<SharePlacement> ParseSharePlacement(std::string_view text) {
  for (const SharePlacement placement : {SharePlacement::kFullest, SharePlacement::kFirstFit}) {
    if (text == ToString(placement)) {
      return placement;
    }
  }
  return InvalidArgument("'" + std::string(text) +
                         "' is not a placement; use fullest or first-fit");
}

}  // namespace gf
