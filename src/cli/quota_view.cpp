#include "cli/quota_view.h"

#include "cli/table.h"
#include "cli/views.h"
#include "core/gpu_hours.h"
#include "model/team.h"

namespace gf {
namespace {

using nlohmann::json;

// The team's name as the scheduler's reasons write it: jobs of no team are "(none)".
std::string TeamName(const json& row) {
  const std::string name = JsonText(row, "team", "");
  return TeamLabel(name);
}

// A GPU-hour figure of `row`, "-" when null (no budget).
std::string Hours(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_number() ? FormatGpuHours(it->get<double>()) : "-";
}

// "2026-03-01" from "2026-03-01T00:00:00.000Z".
std::string Day(const json& quota, const char* key) {
  return JsonText(quota, key).substr(0, 10);
}

// The row's energy charge; an empty object when absent (an older server).
const json& Energy(const json& row) {
  static const json none = json::object();
  auto it = row.find("energy");
  return it != row.end() && it->is_object() ? *it : none;
}

const json& Rows(const json& quota, const char* key) {
  static const json empty = json::array();
  auto it = quota.find(key);
  return it != quota.end() && it->is_array() ? *it : empty;
}

}  // namespace

void PrintQuota(const json& quota, std::ostream& out) {
  out << "Budget period: " << Day(quota, "period_start") << " to " << Day(quota, "period_end")
      << " (a calendar month, UTC)\n";
  if (quota.find("quotas_on") == quota.end() || !quota["quotas_on"].is_boolean() ||
      !quota["quotas_on"].get<bool>()) {
    out << "No teams are configured: no guarantees, limits or budgets apply (add [team.NAME] "
           "sections to the settings file, docs/config.md)\n";
  }
  Table teams({"TEAM",
               "GUARANTEE",
               "MAX",
               "HELD",
               "BORROWED",
               "BUDGET GPU-H",
               "USED",
               "LEFT",
               "OVER BUDGET",
               "KWH",
               "COST",
               "CO2"});
  for (const json& team : Rows(quota, "teams")) {
    teams.AddRow({TeamName(team),
                  JsonText(team, "guaranteed_gpus"),
                  JsonText(team, "max_gpus"),
                  JsonText(team, "gpus_held"),
                  JsonText(team, "gpus_borrowed"),
                  Hours(team, "budget_gpu_hours"),
                  Hours(team, "used_gpu_hours"),
                  Hours(team, "left_gpu_hours"),
                  JsonText(team, "over_budget"),
                  EnergyKwh(Energy(team)),
                  EnergyCost(Energy(team)),
                  EnergyCo2(Energy(team))});
  }
  teams.Print(out);
  if (Rows(quota, "users").empty()) {
    return;
  }
  out << '\n';
  Table users({"USER", "TEAM", "USED GPU-H", "KWH", "COST", "CO2"});
  for (const json& user : Rows(quota, "users")) {
    users.AddRow({JsonText(user, "user"),
                  TeamName(user),
                  Hours(user, "used_gpu_hours"),
                  EnergyKwh(Energy(user)),
                  EnergyCost(Energy(user)),
                  EnergyCo2(Energy(user))});
  }
  users.Print(out);
}

}  // namespace gf
