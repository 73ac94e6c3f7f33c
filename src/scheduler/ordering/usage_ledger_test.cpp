#include "scheduler/ordering/usage_ledger.h"

#include <numbers>

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::hours;

constexpr double kHourS = 3600;

TEST(UsageLedgerTest, FirstAdvanceOnlySetsTheStart) {
  UsageLedger ledger(hours(1));
  ledger.Advance(Time{} + hours(5), {{"a", 4}});
  EXPECT_TRUE(ledger.Sums().empty());
}

TEST(UsageLedgerTest, UsageHalvesEveryHalfLife) {
  UsageLedger ledger(hours(1));
  ledger.Advance(Time{}, {});
  // Two GPUs for one minute: short enough that decay within it is below 1 %.
  ledger.Advance(Time{} + std::chrono::minutes(1), {{"a", 2}});
  const double used = ledger.Sums().at("a");
  EXPECT_NEAR(used, 120, 1);
  ledger.Advance(Time{} + std::chrono::minutes(61), {});
  EXPECT_NEAR(ledger.Sums().at("a"), used / 2, 1e-6);
}

TEST(UsageLedgerTest, HeldGpusDecayWhileTheyAccrue) {
  // One GPU held for one half-life is worth h / ln 2 * (1 - 1/2) at its end, whether it is
  // counted in one step or in many: the sum does not depend on how often the loop runs.
  UsageLedger one_step(hours(1));
  one_step.Advance(Time{}, {});
  one_step.Advance(Time{} + hours(1), {{"a", 1}});
  UsageLedger many_steps(hours(1));
  many_steps.Advance(Time{}, {});
  for (int minute = 1; minute <= 60; ++minute) {
    many_steps.Advance(Time{} + std::chrono::minutes(minute), {{"a", 1}});
  }
  const double expected = kHourS / std::numbers::ln2 * 0.5;
  EXPECT_NEAR(one_step.Sums().at("a"), expected, 1e-6);
  EXPECT_NEAR(many_steps.Sums().at("a"), expected, 1e-6);
}

TEST(UsageLedgerTest, TimeGoingBackChangesNothing) {
  UsageLedger ledger(hours(1));
  ledger.Advance(Time{} + hours(1), {});
  ledger.Advance(Time{} + hours(2), {{"a", 1}});
  const double before = ledger.Sums().at("a");
  ledger.Advance(Time{} + hours(1), {{"a", 8}});
  EXPECT_EQ(ledger.Sums().at("a"), before);
}

}  // namespace
}  // namespace gf
