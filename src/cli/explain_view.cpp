#include "cli/explain_view.h"

#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "cli/views.h"
#include "core/duration.h"
#include "model/team.h"

namespace gf {
namespace {

using nlohmann::json;

constexpr int kLabelWidth = 16;

// Reads j[key] as T, or `fallback` when it is missing, null or of another type.
template <typename T>
T Get(const json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return fallback;
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

const json& Part(const json& j, const char* key) {
  static const json null_json;
  const auto it = j.find(key);
  return it == j.end() || !it->is_object() ? null_json : *it;
}

const json& List(const json& j, const char* key) {
  static const json empty_list = json::array();
  const auto it = j.find(key);
  return it == j.end() || !it->is_array() ? empty_list : *it;
}

// "2026-12-01T10:00:00.000Z (in 50m)" / "(25m ago)"; "-" when unknown.
std::string When(const json& j, const std::string& key, std::int64_t now_ms) {
  std::string text = JsonText(j, key);
  const auto ms = j.find(key + "_ms");
  if (text == "-" || ms == j.end() || !ms->is_number()) {
    return text;
  }
  const std::int64_t delta_s = (ms->get<std::int64_t>() - now_ms) / 1000;
  const std::string span = FormatDuration(std::chrono::seconds(delta_s < 0 ? -delta_s : delta_s));
  return text + (delta_s > 0   ? " (in " + span + ")"
                 : delta_s < 0 ? " (" + span + " ago)"
                               : " (now)");
}

void Line(std::ostream& out, const std::string& label, const std::string& text) {
  out << "  " << label
      << std::string(label.size() < kLabelWidth ? kLabelWidth - label.size() : 1, ' ') << text
      << '\n';
}

std::string Join(const json& items, const std::string& separator = ", ") {
  return JsonJoined(items, separator);
}

// One decimal at most: "3600", "2.9".
std::string Number(double value) {
  std::string text = std::to_string(std::round(value * 10) / 10);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') {
    text.pop_back();
  }
  return text;
}

// "job 17", or "another user's job" where the server left the id out for a caller who may
// not see other users' jobs (`other_key` true).
std::string JobName(const json& j, const char* id_key, const char* other_key = "other_user") {
  return Get<bool>(j, other_key, false) ? "another user's job" : "job " + JsonText(j, id_key);
}

// "job(s) 3, 4", "job(s) 3 and 2 jobs of other users", "another user's job".
std::string Victims(const json& e) {
  const json& ids = List(e, "preempts");
  const int others = Get<int>(e, "preempts_other_users", 0);
  const std::string theirs =
      others == 1 ? "another user's job" : std::to_string(others) + " jobs of other users";
  if (others == 0) {
    return "job(s) " + Join(ids);
  }
  return ids.empty() ? theirs : "job(s) " + Join(ids) + " and " + theirs;
}

// ---- header ----

// The estimated start with its range and basis (start_estimate): "between 2027-01-15T08:40:00Z
// (in 40m) and 2027-01-15T08:50:00Z (in 50m), by predicted run times (median to high
// estimates)", "... (in 50m), by time limits (the latest they allow)".
std::string StartText(const json& e, std::int64_t now_ms) {
  const json& start = Part(e, "start_estimate");
  std::string latest = When(e, "estimated_start", now_ms);
  if (start.is_null()) {
    return latest;  // a server older than ranges
  }
  const std::string basis = JsonText(start, "basis");
  if (basis == "time_limits") {
    return latest + ", by time limits (the latest they allow)";
  }
  if (basis == "preemption") {
    return latest + ", by preemption";
  }
  if (Get<std::int64_t>(start, "earliest_ms", 0) >= Get<std::int64_t>(start, "latest_ms", 0)) {
    return latest + ", by predicted run times";
  }
  return "between " + When(start, "earliest", now_ms) + " and " + latest +
         ", by predicted run times (median to high estimates)";
}

// How far the predictions behind a job's estimate were off so far: "off by 18% (median over
// the last 12 runs predicted)".
std::string PredictionError(const json& prediction) {
  const json& error = Part(prediction, "error");
  if (error.is_null()) {
    return "not measured yet (no run has ended since the first of these)";
  }
  const int runs = Get<int>(error, "runs", 0);
  return "off by " + std::to_string(std::llround(Get<double>(error, "median_relative", 0) * 100)) +
         "% (median over the last " +
         (runs == 1 ? std::string("run") : std::to_string(runs) + " runs") + " predicted)";
}

void PrintOutcome(const json& e, std::int64_t now_ms, std::ostream& out) {
  const std::string job = "Job " + JsonText(e, "job");
  const std::string outcome = JsonText(e, "outcome");
  const json& placement = Part(e, "placement");
  const std::string where = placement.is_null() ? "" : JsonText(placement, "node");
  if (outcome == "starts") {
    out << job << ": starts in the next pass on " << where << '\n';
  } else if (outcome == "preempts") {
    out << job << ": preempts " << Victims(e) << " to start on " << where << '\n';
  } else {
    out << job << ": " << (outcome == "held" ? "held by a rule" : "waits") << '\n';
  }
  if (!JsonText(e, "reason", "").empty()) {
    Line(out, "reason", JsonText(e, "reason"));
  }
  if (!JsonText(e, "reason_code", "").empty()) {
    Line(out,
         "reason code",
         JsonText(e, "reason_code") + " (stage " + JsonText(e, "reason_stage") + ")");
  }
  if (!e.value("estimated_start", json()).is_null()) {
    Line(out, "estimated start", StartText(e, now_ms));
  }
  if (const json& p = Part(e, "prediction"); !p.is_null()) {
    const auto seconds = [&](const char* key) {
      return FormatDuration(std::chrono::seconds(std::llround(Get<double>(p, key, 0))));
    };
    Line(
        out,
        "predicted run",
        seconds("expected_s") + " (high " + seconds("high_s") + "): " + JsonText(p, "explanation"));
    Line(out, "prediction error", PredictionError(p));
  }
  Line(out,
       "position",
       JsonText(e, "position") + " of " + JsonText(e, "waiting") + " waiting (scheduling order)");
}

void PrintAhead(const json& e, std::int64_t now_ms, std::ostream& out) {
  const json& ahead = List(e, "ahead");
  if (ahead.empty()) {
    return;
  }
  out << "\nJobs ahead that take or set aside GPUs it could use\n";
  for (const json& a : ahead) {
    std::string where = Join(List(a, "nodes"));
    if (Get<int>(a, "more_nodes", 0) > 0) {
      where += " and " + JsonText(a, "more_nodes") + " more nodes";
    }
    const std::string action = JsonText(a, "action");
    const std::string what = action == "starts" ? "starts on " + where
                             : action == "reserved"
                                 ? "reserved GPUs on " + where + " from " + When(a, "from", now_ms)
                                 : "claimed GPUs on " + where;
    const std::string team = JsonText(a, "team", "");
    out << "  #" << JsonText(a, "position") << " " << JobName(a, "id") << " ("
        << JsonText(a, "priority") << (team.empty() ? "" : ", team " + team) << ", "
        << JsonText(a, "gpus") << (Get<int>(a, "gpus", 0) == 1 ? " GPU): " : " GPUs): ") << what
        << '\n';
  }
  if (Get<int>(e, "ahead_omitted", 0) > 0) {
    out << "  ... and " << JsonText(e, "ahead_omitted") << " more\n";
  }
}

// ---- Priority ----

std::string Share(const json& p, const std::string& who) {
  return Number(Get<double>(p, (who + "_usage_gpu_seconds").c_str(), 0)) + " GPU-s / weight " +
         Number(Get<double>(p, (who + "_weight").c_str(), 1)) + " = " +
         Number(Get<double>(p, (who + "_share").c_str(), 0));
}

void PrintPriority(const json& e, std::ostream& out) {
  const json& p = Part(e, "priority");
  if (p.is_null()) {
    return;
  }
  const std::string team = TeamLabel(JsonText(p, "team", ""));
  out << "\nPriority (factors in the order they are compared; lower goes first)\n";
  Line(out, "class", JsonText(p, "priority") + " (rank " + JsonText(p, "class_rank") + ")");
  if (Get<bool>(p, "quotas_on", false)) {
    Line(out,
         "guarantee",
         "team " + team +
             (Get<bool>(p, "team_below_guarantee", false) ? " is below its guarantee: goes first"
                                                          : " is not below its guarantee"));
  }
  Line(out,
       "team share",
       team + ": " + Share(p, "team") + " (" + JsonText(p, "team_rank") + " of " +
           JsonText(p, "teams_waiting") + " teams waiting)");
  Line(out,
       "user share",
       JsonText(p, "user") + ": " + Share(p, "user") + " (" + JsonText(p, "user_rank") + " of " +
           JsonText(p, "users_waiting") + " users of the team waiting)");
  Line(out,
       "submitted",
       JsonText(p, "submit_time") + " (waited " +
           FormatDuration(std::chrono::seconds(Get<std::int64_t>(p, "waited_s", 0))) + ")");
  if (!p.value("place", json()).is_null()) {
    Line(out, "place", JsonText(p, "place") + " (submitted + predicted GPU-time; compared last)");
  }
}

// ---- Quota ----

std::string Optional(const json& j, const char* key, const std::string& none) {
  return JsonText(j, key, none);
}

void PrintQuota(const json& e, std::ostream& out) {
  const json& q = Part(e, "quota");
  const std::string limit =
      e.value("time_limit_s", json()).is_null()
          ? "none"
          : FormatDuration(std::chrono::seconds(Get<std::int64_t>(e, "time_limit_s", 0))) + " (" +
                JsonText(e, "time_limit_source") + ")";
  if (q.is_null()) {
    return;
  }
  out << "\nQuota\n";
  std::string verdict = !Get<bool>(q, "may_start", true) ? "held: " + JsonText(q, "reason")
                        : Get<bool>(q, "borrowed", false)
                            ? "may start, as borrowed work (preemptible)"
                            : "may start, within its team's guarantee";
  if (Get<bool>(q, "guarantee_right", false)) {
    verdict += "; may preempt other teams' borrowed work";
  }
  Line(out, "verdict", verdict);
  const json& allowed = List(q, "class_allowed_users");
  Line(out,
       "class rules",
       "users: " + (allowed.empty() ? "everyone" : Join(allowed)) +
           "; max GPUs per user: " + Optional(q, "class_max_gpus_per_user", "no limit"));
  if (Get<bool>(q, "quotas_on", false)) {
    Line(out,
         "team",
         "holds " + JsonText(q, "team_held_gpus") + " GPUs; guarantee " +
             JsonText(q, "team_guaranteed_gpus") + ", max " +
             Optional(q, "team_max_gpus", "no limit"));
    const bool budget = !q.value("team_budget_gpu_hours", json()).is_null();
    Line(out,
         "budget",
         Number(Get<double>(q, "team_period_gpu_hours", 0)) + " of " +
             (budget ? Number(Get<double>(q, "team_budget_gpu_hours", 0))
                     : std::string("unlimited")) +
             " GPU-hours this period; over budget: " + JsonText(q, "over_budget") +
             (Get<bool>(q, "budget_approved", false) ? " (job approved)" : ""));
  } else {
    Line(out, "team", "no teams configured: no guarantees, limits or budgets");
  }
  Line(out, "time limit", limit);
}

// ---- Placement per node ----

// "GPUs 0,1 running job 100 until ...": holds grouped by what holds them.
std::vector<std::string> Holds(const json& node, std::int64_t now_ms) {
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<Key, std::string> groups;
  std::vector<Key> order;
  for (const json& hold : List(node, "held")) {
    std::string then;
    if (!hold.value("then_for", json()).is_null() ||
        Get<bool>(hold, "then_for_other_user", false)) {
      const std::string next = JobName(hold, "then_for", "then_for_other_user");
      then = hold.value("then_from", json()).is_null()
                 ? "; then set aside for " + next
                 : "; then reserved for " + next + " from " + When(hold, "then_from", now_ms);
    }
    // Another user's running job comes without its end: it is theirs (explain_privacy.h).
    const std::string until =
        Get<bool>(hold, "other_user", false) && JsonText(hold, "kind") == "running"
            ? ""
            : When(hold, "until", now_ms);
    const Key key{JsonText(hold, "kind"), JobName(hold, "job"), until, then};
    auto [it, added] = groups.emplace(key, "");
    it->second += (added ? "" : ",") + JsonText(hold, "index");
    if (added) {
      order.push_back(key);
    }
  }
  std::vector<std::string> lines;
  for (const auto& key : order) {
    const auto& [kind, job, until, then] = key;
    std::string text = "GPU " + groups[key] + ": ";
    if (kind == "running") {
      text += "held by " + job +
              (until.empty()  ? ""
               : until == "-" ? " (no time limit)"
                              : " until " + until);
    } else if (kind == "started") {
      text += "taken by " + job + ", which starts in this pass";
    } else if (kind == "claimed") {
      text += "set aside for " + job + " (ahead)";
    } else if (kind == "reserved") {
      text += "reserved for " + job + " from ";
      text += until + "; this job would not end by then";
    } else {
      text += "allocated to a job the scheduler does not see";
    }
    lines.push_back(text + then);
  }
  return lines;
}

void PrintNode(const json& node, std::int64_t now_ms, std::ostream& out) {
  out << "  " << JsonText(node, "node") << " (" << JsonText(node, "state") << ", "
      << JsonText(node, "gpus") << " GPUs " << Join(List(node, "models"), "/")
      << "): " << JsonText(node, "verdict") << " - " << JsonText(node, "detail") << '\n';
  for (const std::string& hold : Holds(node, now_ms)) {
    out << "      " << hold << '\n';
  }
  for (const json& v : List(node, "victims")) {
    out << "      " << JobName(v, "job") << " (" << JsonText(v, "priority")
        << (Get<bool>(v, "borrowed", false) ? ", borrowed" : "") << "): "
        << (Get<bool>(v, "chosen", false)        ? "preempted for it: "
            : Get<bool>(v, "may_preempt", false) ? "could be preempted: "
                                                 : "spared: ")
        << JsonText(v, "why") << '\n';
  }
}

void PrintNodes(const json& e, std::int64_t now_ms, std::ostream& out) {
  const json& nodes = List(e, "nodes");
  const int omitted = Get<int>(e, "nodes_omitted", 0);
  std::string counts;
  for (const auto& [verdict, count] : Part(e, "nodes_by_verdict").items()) {
    counts += (counts.empty() ? "" : ", ") + verdict + " " + count.dump();
  }
  out << "\nPlacement per node (" << nodes.size() + static_cast<std::size_t>(omitted)
      << " nodes: " << (counts.empty() ? "none" : counts) << ")\n";
  for (const json& node : nodes) {
    PrintNode(node, now_ms, out);
  }
  if (omitted > 0) {
    out << "  ... and " << omitted << " less relevant nodes (--json lists the counts above)\n";
  }
}

// ---- a running job ----

void PrintRunning(const json& e, std::int64_t now_ms, std::ostream& out) {
  const json& r = Part(e, "running");
  const json& placement = Part(r, "placement");
  out << "Job " << JsonText(e, "job") << ": running on "
      << (placement.is_null() ? "-" : JsonText(placement, "node")) << " GPUs "
      << Join(List(r, "gpu_indexes"), ",") << '\n';
  Line(out, "since", When(r, "since", now_ms));
  Line(out,
       "expected end",
       r.value("expected_end", json()).is_null() ? "unknown (no time limit)"
                                                 : When(r, "expected_end", now_ms));
  Line(out,
       "preemptible",
       Get<bool>(r, "preemptible", false) ? "yes: it runs on borrowed GPUs"
                                          : "only by a class that preempts its class");
  if (Get<bool>(r, "stopping", false)) {
    Line(out, "stopping", "yes: it has been told to stop");
  }
  if (!r.value("protected_until", json()).is_null()) {
    Line(out, "protected until", When(r, "protected_until", now_ms) + " (minimum run time)");
  }
  Line(out, "preempted by", Join(List(r, "preempted_by"), "; "));
}

}  // namespace

void PrintExplanation(const json& explanation, std::int64_t now_ms, std::ostream& out) {
  if (JsonText(explanation, "state") == "running") {
    PrintRunning(explanation, now_ms, out);
    return;
  }
  PrintOutcome(explanation, now_ms, out);
  PrintAhead(explanation, now_ms, out);
  PrintPriority(explanation, out);
  PrintQuota(explanation, out);
  PrintNodes(explanation, now_ms, out);
}

}  // namespace gf
