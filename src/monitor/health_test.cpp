#include "monitor/health.h"

#include <chrono>

#include <gtest/gtest.h>

namespace gf {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const Time kT0 = FromUnixMillis(1'700'000'000'000);

// A healthy, cool, idle sample of GPU `uuid` at kT0 + `at`.
GpuSample Healthy(Millis at = Millis(0), const std::string& uuid = "GPU-a") {
  GpuSample s;
  s.uuid = GpuUuid(uuid);
  s.time = kT0 + at;
  s.temperature_c = 40;
  s.memory_temperature_c = 45;
  s.throttle_reasons = 0x1;  // GPU idle: not a problem
  s.ecc.volatile_uncorrected = 0;
  s.ecc.aggregate_uncorrected = 0;
  s.remapped_rows = RemappedRows{};
  return s;
}

GpuSample WithXid(GpuSample s, int xid) {
  s.xids.push_back(XidEvent{xid, s.time});
  return s;
}

// Feeds one sample and returns it with the verdict.
GpuSample Feed(HealthTracker& tracker, GpuSample s) {
  tracker.Update(s);
  return s;
}

TEST(HealthTest, HealthySampleIsOkWithNoCause) {
  HealthTracker tracker;
  GpuSample s = Feed(tracker, Healthy());
  EXPECT_EQ(s.health, GpuHealth::kOk);
  EXPECT_EQ(s.health_cause, "");
}

TEST(HealthTest, LostGpuFailsWhileLost) {
  HealthTracker tracker;
  GpuSample lost;
  lost.uuid = GpuUuid("GPU-a");
  lost.time = kT0;
  lost.lost = true;
  GpuSample s = Feed(tracker, lost);
  EXPECT_EQ(s.health, GpuHealth::kFailed);
  EXPECT_EQ(s.health_cause, "GPU fell off the bus (NVML: GPU is lost)");
  // Back on the bus (after a reset): the state follows the card.
  EXPECT_EQ(Feed(tracker, Healthy(seconds(5))).health, GpuHealth::kOk);
}

TEST(HealthTest, FatalXidFailsAndStaysFailedUntilReset) {
  HealthTracker tracker;
  GpuSample s = Feed(tracker, WithXid(Healthy(), 79));
  EXPECT_EQ(s.health, GpuHealth::kFailed);
  EXPECT_EQ(s.health_cause, "XID 79 (GPU has fallen off the bus)");
  // Hours later, every counter clean: still failed (an admin must look at it).
  s = Feed(tracker, Healthy(minutes(600)));
  EXPECT_EQ(s.health, GpuHealth::kFailed);
  EXPECT_EQ(s.health_cause, "XID 79 (GPU has fallen off the bus)");
  tracker.Reset(GpuUuid("GPU-a"));
  EXPECT_EQ(Feed(tracker, Healthy(minutes(601))).health, GpuHealth::kOk);
}

TEST(HealthTest, EveryListedFatalXidFails) {
  for (int xid : {48, 63, 64, 74, 79, 92, 94, 95}) {
    HealthTracker tracker;
    EXPECT_EQ(Feed(tracker, WithXid(Healthy(), xid)).health, GpuHealth::kFailed) << xid;
  }
}

TEST(HealthTest, ApplicationXidsChangeNothing) {
  for (int xid : {13, 31, 43, 45, 68, 69}) {
    HealthTracker tracker;
    GpuSample s = Feed(tracker, WithXid(Healthy(), xid));
    EXPECT_EQ(s.health, GpuHealth::kOk) << xid;
    EXPECT_EQ(s.health_cause, "") << xid;
  }
}

TEST(HealthTest, OtherXidDegradesForTheWindowAfterTheLastOne) {
  HealthTracker tracker;  // window: 10 minutes
  GpuSample s = Feed(tracker, WithXid(Healthy(), 119));
  EXPECT_EQ(s.health, GpuHealth::kDegraded);
  EXPECT_EQ(s.health_cause, "XID 119 (GSP RPC timeout)");
  EXPECT_EQ(Feed(tracker, Healthy(minutes(9))).health, GpuHealth::kDegraded);
  // It happens again at 9 min: the window restarts from there.
  Feed(tracker, WithXid(Healthy(minutes(9)), 119));
  EXPECT_EQ(Feed(tracker, Healthy(minutes(18))).health, GpuHealth::kDegraded);
  GpuSample later = Feed(tracker, Healthy(minutes(19)));
  EXPECT_EQ(later.health, GpuHealth::kOk);
  EXPECT_EQ(later.health_cause, "");
}

TEST(HealthTest, XidWindowIsConfigurableAndUnknownXidsNamedByNumber) {
  HealthPolicy policy;
  policy.xid_degraded_for = seconds(30);
  HealthTracker tracker(policy);
  EXPECT_EQ(Feed(tracker, WithXid(Healthy(), 999)).health_cause, "XID 999");
  EXPECT_EQ(Feed(tracker, Healthy(seconds(29))).health, GpuHealth::kDegraded);
  EXPECT_EQ(Feed(tracker, Healthy(seconds(30))).health, GpuHealth::kOk);
}

TEST(HealthTest, XidWithoutATimeCountsFromTheSample) {
  HealthTracker tracker;
  GpuSample s = Healthy(minutes(60));
  s.xids.push_back(XidEvent{119, Time{}});  // the backend could not date it
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kDegraded);
  EXPECT_EQ(Feed(tracker, Healthy(minutes(65))).health, GpuHealth::kDegraded);
}

TEST(HealthTest, RisingVolatileUncorrectableEccFailsSticky) {
  HealthTracker tracker;
  GpuSample first = Healthy();
  first.ecc.volatile_uncorrected = 3;  // before the agent started: the baseline
  EXPECT_EQ(Feed(tracker, first).health, GpuHealth::kOk);
  GpuSample rose = Healthy(seconds(1));
  rose.ecc.volatile_uncorrected = 5;
  GpuSample s = Feed(tracker, rose);
  EXPECT_EQ(s.health, GpuHealth::kFailed);
  EXPECT_EQ(s.health_cause, "volatile uncorrectable ECC errors rose from 3 to 5");
  rose.time += seconds(1);
  rose.ecc.volatile_uncorrected = 6;
  EXPECT_EQ(Feed(tracker, rose).health_cause, "volatile uncorrectable ECC errors rose from 3 to 6");
  // The counter stops rising: still failed.
  rose.time += seconds(1);
  EXPECT_EQ(Feed(tracker, rose).health, GpuHealth::kFailed);
  // After Reset the current count is the new baseline.
  tracker.Reset(GpuUuid("GPU-a"));
  EXPECT_EQ(Feed(tracker, rose).health, GpuHealth::kOk);
}

TEST(HealthTest, AggregateUncorrectableAboveTheLimitDegrades) {
  HealthTracker tracker;  // limit 10
  GpuSample s = Healthy();
  s.ecc.aggregate_uncorrected = 10;
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kOk);
  s.ecc.aggregate_uncorrected = 11;
  GpuSample d = Feed(tracker, s);
  EXPECT_EQ(d.health, GpuHealth::kDegraded);
  EXPECT_EQ(d.health_cause, "11 uncorrectable ECC errors over the card's life (> 10)");
}

TEST(HealthTest, RemapFailureFailsAndPendingDegrades) {
  HealthTracker tracker;
  GpuSample s = Healthy();
  s.remapped_rows->pending = true;
  GpuSample d = Feed(tracker, s);
  EXPECT_EQ(d.health, GpuHealth::kDegraded);
  EXPECT_EQ(d.health_cause, "row remapping pending (reset the GPU to apply it)");
  s.remapped_rows->failure = true;
  GpuSample f = Feed(tracker, s);
  EXPECT_EQ(f.health, GpuHealth::kFailed);
  EXPECT_EQ(f.health_cause,
            "row remapping failed (the GPU needs service); "
            "row remapping pending (reset the GPU to apply it)");
  // Remapping state is the card's own: after a GPU reset it is clear and so is health.
  EXPECT_EQ(Feed(tracker, Healthy(seconds(1))).health, GpuHealth::kOk);
}

TEST(HealthTest, DieTemperatureDegradesWithHysteresis) {
  HealthTracker tracker;  // 90 C, 5 C hysteresis
  GpuSample s = Healthy();
  s.temperature_c = 89;
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kOk);
  s.temperature_c = 90;
  GpuSample hot = Feed(tracker, s);
  EXPECT_EQ(hot.health, GpuHealth::kDegraded);
  EXPECT_EQ(hot.health_cause, "temperature 90 C ≥ 90 C");
  s.temperature_c = 86;  // below the limit, not yet cool enough
  GpuSample cooling = Feed(tracker, s);
  EXPECT_EQ(cooling.health, GpuHealth::kDegraded);
  EXPECT_EQ(cooling.health_cause, "temperature 86 C, cooling from ≥ 90 C (ok at ≤ 85 C)");
  s.temperature_c = std::nullopt;  // a missing reading neither raises nor clears
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kOk);
  s.temperature_c = 87;
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kDegraded);
  s.temperature_c = 85;
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kOk);
  s.temperature_c = 88;  // rising again but under the limit: stays ok
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kOk);
}

TEST(HealthTest, MemoryTemperatureHasItsOwnLimit) {
  HealthTracker tracker;  // 95 C
  GpuSample s = Healthy();
  s.memory_temperature_c = 94;
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kOk);
  s.memory_temperature_c = 96;
  EXPECT_EQ(Feed(tracker, s).health_cause, "memory temperature 96 C ≥ 95 C");
  s.memory_temperature_c = 91;
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kDegraded);
  s.memory_temperature_c = 90;
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kOk);
}

TEST(HealthTest, HardwareThrottleDegradesWhileSet) {
  HealthTracker tracker;
  GpuSample s = Healthy();
  s.throttle_reasons = 0x4 | 0x20;  // SW power cap, SW thermal: the driver managing, fine
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kOk);
  s.throttle_reasons = kThrottleHwSlowdown | kThrottleHwPowerBrake | 0x4;
  GpuSample d = Feed(tracker, s);
  EXPECT_EQ(d.health, GpuHealth::kDegraded);
  EXPECT_EQ(d.health_cause, "throttled: HW slowdown, HW power brake");
  s.throttle_reasons = kThrottleHwThermal;
  EXPECT_EQ(Feed(tracker, s).health_cause, "throttled: HW thermal slowdown");
  s.throttle_reasons = 0;
  EXPECT_EQ(Feed(tracker, s).health, GpuHealth::kOk);
}

TEST(HealthTest, WorstStateWinsAndCauseListsEveryReasonWorstFirst) {
  HealthTracker tracker;
  GpuSample s = WithXid(Healthy(), 119);   // degraded
  s.temperature_c = 93;                    // degraded
  s.xids.push_back(XidEvent{79, s.time});  // failed
  GpuSample v = Feed(tracker, s);
  EXPECT_EQ(v.health, GpuHealth::kFailed);
  EXPECT_EQ(v.health_cause,
            "XID 79 (GPU has fallen off the bus); XID 119 (GSP RPC timeout); "
            "temperature 93 C ≥ 90 C");
}

TEST(HealthTest, GpusAreTrackedApart) {
  HealthTracker tracker;
  Feed(tracker, WithXid(Healthy(Millis(0), "GPU-a"), 79));
  EXPECT_EQ(Feed(tracker, Healthy(seconds(1), "GPU-b")).health, GpuHealth::kOk);
  tracker.Reset(GpuUuid("GPU-b"));  // resetting another GPU leaves GPU-a failed
  EXPECT_EQ(Feed(tracker, Healthy(seconds(1), "GPU-a")).health, GpuHealth::kFailed);
}

TEST(HealthTest, ThresholdsComeFromThePolicy) {
  HealthPolicy policy;
  policy.temperature_limit_c = 80;
  policy.temperature_hysteresis_c = 0;
  policy.fatal_xids = {};  // an operator who treats 79 as merely degrading
  policy.degrading_throttle_reasons = kThrottleHwPowerBrake;
  HealthTracker tracker(policy);
  GpuSample s = WithXid(Healthy(), 79);
  s.throttle_reasons = kThrottleHwSlowdown;
  GpuSample v = Feed(tracker, s);
  EXPECT_EQ(v.health, GpuHealth::kDegraded);
  EXPECT_EQ(v.health_cause, "XID 79 (GPU has fallen off the bus)");
  s = Healthy(seconds(1));
  s.temperature_c = 80;
  EXPECT_EQ(Feed(tracker, s).health_cause,
            "XID 79 (GPU has fallen off the bus); temperature 80 C ≥ 80 C");
  s.temperature_c = 79;
  EXPECT_EQ(Feed(tracker, s).health_cause, "XID 79 (GPU has fallen off the bus)");
}

TEST(HealthTest, XidDescriptionsNameKnownXidsOnly) {
  EXPECT_EQ(XidDescription(79), "GPU has fallen off the bus");
  EXPECT_EQ(XidDescription(48), "double-bit ECC error");
  EXPECT_EQ(XidDescription(1234), "");
}

}  // namespace
}  // namespace gf
