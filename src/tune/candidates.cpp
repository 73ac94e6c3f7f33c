#include "tune/candidates.h"

#include <charconv>
#include <chrono>

#include "core/duration.h"

namespace gf::tune {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

constexpr seconds kDay = hours(24);
constexpr seconds kWeek = hours(24 * 7);

std::string Bool(bool value) {
  return value ? "true" : "false";
}

std::string Duration(seconds value) {
  return "\"" + FormatDuration(value) + "\"";
}

// The shortest text that reads back as the same double ("2", "1.5").
std::string Number(double value) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return ec == std::errc() ? std::string(text, end) : std::to_string(value);
}

// A TOML basic string: quotes and backslashes escaped, control characters as \uXXXX.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Weights(const std::string& table, const std::map<std::string, double>& weights) {
  if (weights.empty()) {
    return {};
  }
  std::string out = "\n[scheduler." + table + "]\n";
  for (const auto& [key, weight] : weights) {
    out += Quoted(key) + " = " + Number(weight) + "\n";
  }
  return out;
}

// Builds candidates from `current`, each with its changes, skipping any whose settings another
// already has.
class Builder {
 public:
  explicit Builder(const PolicyConfig& current) : current_(current) { Add({}, current); }

  // `edit` applied to a copy of the current policy, described by `change`.
  template <typename Edit>
  void Vary(Change change, Edit edit) {
    PolicyConfig policy = current_;
    edit(policy);
    Add({std::move(change)}, policy);
  }

  std::vector<Candidate> Take() { return std::move(candidates_); }

 private:
  void Add(std::vector<Change> changes, const PolicyConfig& policy) {
    const std::string toml = SchedulerToml(policy);
    for (const std::string& seen : seen_) {
      if (seen == toml) {
        return;
      }
    }
    seen_.push_back(toml);
    std::string name;
    for (const Change& c : changes) {
      name += (name.empty() ? "" : ", ") + c.key + " = " + c.value;
    }
    candidates_.push_back(Candidate{
        .name = name.empty() ? "current" : name, .policy = policy, .changes = std::move(changes)});
  }

  const PolicyConfig& current_;
  std::vector<std::string> seen_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::vector<Candidate> CandidatesFrom(const PolicyConfig& current) {
  Builder b(current);
  const bool priority_order = current.ordering.order == QueueOrder::kPriority;
  if (!priority_order) {
    b.Vary({"order", "\"priority\""},
           [](PolicyConfig& p) { p.ordering.order = QueueOrder::kPriority; });
  }
  const bool preemption = current.preemption.enabled;
  b.Vary({"preemption", Bool(!preemption)},
         [&](PolicyConfig& p) { p.preemption.enabled = !preemption; });
  if (preemption) {
    const seconds min_run = current.preemption.min_run_time;
    if (min_run >= seconds(2)) {
      const seconds half = min_run / 2;
      b.Vary({"min_run_time", Duration(half)},
             [&](PolicyConfig& p) { p.preemption.min_run_time = half; });
    }
    const seconds twice = min_run > seconds(0) ? 2 * min_run : std::chrono::minutes(10);
    b.Vary({"min_run_time", Duration(twice)},
           [&](PolicyConfig& p) { p.preemption.min_run_time = twice; });
  }
  const bool backfill = current.backfill.enabled;
  b.Vary({"backfill", Bool(!backfill)}, [&](PolicyConfig& p) { p.backfill.enabled = !backfill; });
  if (priority_order) {
    const bool prediction = current.prediction.enabled;
    b.Vary({"prediction", Bool(!prediction)},
           [&](PolicyConfig& p) { p.prediction.enabled = !prediction; });
    if (prediction) {
      const double band = current.prediction.fair_share_band;
      b.Vary({"fair_share_band", "1"}, [](PolicyConfig& p) { p.prediction.fair_share_band = 1; });
      b.Vary({"fair_share_band", Number(2 * band)},
             [&](PolicyConfig& p) { p.prediction.fair_share_band = 2 * band; });
      const bool by_size = current.prediction.size_preemption;
      b.Vary({"size_preemption", Bool(!by_size)},
             [&](PolicyConfig& p) { p.prediction.size_preemption = !by_size; });
      const seconds delay = current.prediction.max_delay > kDay ? kDay : kWeek;
      b.Vary({"prediction_max_delay", Duration(delay)},
             [&](PolicyConfig& p) { p.prediction.max_delay = delay; });
    }
  }
  const seconds half_life = current.fair_share.half_life > kDay ? kDay : kWeek;
  b.Vary({"fair_share_half_life", Duration(half_life)},
         [&](PolicyConfig& p) { p.fair_share.half_life = half_life; });
  return b.Take();
}

std::string SchedulerToml(const PolicyConfig& p) {
  std::string out = "[scheduler]\n";
  out += "default_class = " + Quoted(p.default_class) + "\n";
  out += "order = \"" + std::string(ToString(p.ordering.order)) + "\"\n";
  out += "fair_share_half_life = " + Duration(p.fair_share.half_life) + "\n";
  out += "preemption = " + Bool(p.preemption.enabled) + "\n";
  out += "min_run_time = " + Duration(p.preemption.min_run_time) + "\n";
  out += "max_preemptors_per_pass = " + std::to_string(p.preemption.max_preemptors_per_pass) + "\n";
  out += "backfill = " + Bool(p.backfill.enabled) + "\n";
  out += "backfill_depth = " + std::to_string(p.backfill.depth) + "\n";
  out += "prediction = " + Bool(p.prediction.enabled) + "\n";
  out += "fair_share_band = " + Number(p.prediction.fair_share_band) + "\n";
  out += "prediction_max_delay = " + Duration(p.prediction.max_delay) + "\n";
  out += "user_fair_share = \"" + std::string(ToString(p.prediction.user_fair_share)) + "\"\n";
  out += "size_preemption = " + Bool(p.prediction.size_preemption) + "\n";
  out += "size_preemption_ratio = " + Number(p.prediction.size_preemption_ratio) + "\n";
  std::string thresholds;
  for (const double t : p.ordering.las_thresholds) {
    thresholds += (thresholds.empty() ? "" : ", ") + Number(t);
  }
  out += "las_thresholds = [" + thresholds + "]\n";
  out += Weights("user_weights", p.fair_share.user_weights);
  out += Weights("model_weights", p.fair_share.model_weights);
  return out;
}

}  // namespace gf::tune
