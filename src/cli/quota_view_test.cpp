#include "cli/quota_view.h"

#include <sstream>

#include <gtest/gtest.h>

namespace gf {
namespace {

using nlohmann::json;

TEST(QuotaViewTest, PrintsTeamsAndUsers) {
  const json quota = json::parse(R"({
    "period_start": "2026-03-01T00:00:00.000Z", "period_start_ms": 1772323200000,
    "period_end": "2026-04-01T00:00:00.000Z", "period_end_ms": 1775001600000,
    "quotas_on": true,
    "teams": [
      {"team": "cv", "listed": true, "guaranteed_gpus": 4, "max_gpus": 8, "gpus_held": 6,
       "gpus_borrowed": 2, "budget_gpu_hours": 0.001, "used_gpu_hours": 0.0025,
       "left_gpu_hours": 0, "over_budget": "hold",
       "energy": {"energy_mj": 9000000000, "energy_kwh": 2.5, "cost": 0.7, "currency": "EUR",
                  "co2_kg": 0.875}},
      {"team": "", "listed": false, "guaranteed_gpus": 0, "max_gpus": null, "gpus_held": 1,
       "gpus_borrowed": 1, "budget_gpu_hours": null, "used_gpu_hours": 2,
       "left_gpu_hours": null, "over_budget": "borrow_only"}],
    "users": [{"team": "cv", "user": "alice", "used_gpu_hours": 0.0025,
               "energy": {"energy_mj": 3600000, "energy_kwh": 0.001, "cost": null,
                          "currency": null, "co2_kg": null}}]})");
  std::ostringstream out;
  PrintQuota(quota, out);
  EXPECT_EQ(
      out.str(),
      "Budget period: 2026-03-01 to 2026-04-01 (a calendar month, UTC)\n"
      "TEAM    GUARANTEE  MAX  HELD  BORROWED  BUDGET GPU-H  USED    LEFT  OVER BUDGET  KWH    "
      "COST      CO2\n"
      "cv      4          8    6     2         0.001         0.0025  0     hold         2.500  "
      "0.70 EUR  0.875 kg\n"
      "(none)  0          -    1     1         -             2       -     borrow_only  -      "
      "-         -\n"
      "\n"
      "USER   TEAM  USED GPU-H  KWH    COST  CO2\n"
      "alice  cv    0.0025      0.001  -     -\n");
}

TEST(QuotaViewTest, SaysWhenQuotasAreOff) {
  std::ostringstream out;
  PrintQuota(json::parse(R"({"quotas_on": false, "teams": [], "users": []})"), out);
  EXPECT_NE(out.str().find("No teams are configured"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace gf
