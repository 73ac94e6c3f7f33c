// PowerSaver over a fake backend that records every limit it is asked to set, and a manual
// clock: when GPUs are capped and restored, and what a refusing or failing GPU does.
#include "agent/power_saver.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

constexpr std::int64_t kDefaultMw = 700'000;
constexpr Millis kIdleAfter{60'000};
constexpr Millis kSettle{10'000};  // with a forecast

struct SetCall {
  int index = 0;
  std::int64_t limit_mw = 0;
  bool operator==(const SetCall&) const = default;
};

// GPUs with power limits; each SetPowerLimit is recorded (refused or not), and a test may make
// a GPU's sets or reads fail with a given error.
class PowerBackend final : public GpuBackend {
 public:
  explicit PowerBackend(int gpus) {
    for (int i = 0; i < gpus; ++i) {
      limits_.push_back(GpuPowerLimits{.current_mw = kDefaultMw,
                                       .default_mw = kDefaultMw,
                                       .min_mw = 100'000,
                                       .max_mw = kDefaultMw});
    }
  }
  std::string Describe() const override { return "power-fake"; }
  Result<std::vector<Gpu>> Discover() override {
    std::vector<Gpu> gpus;
    for (std::size_t i = 0; i < limits_.size(); ++i) {
      Gpu gpu;
      gpu.index = static_cast<int>(i);
      gpu.uuid = Uuid(gpu.index);
      gpus.push_back(gpu);
    }
    return gpus;
  }
  Result<GpuSample> Sample(int index) override {
    return NotFound("not sampled here: " + std::to_string(index));
  }
  Result<GpuPowerLimits> PowerLimits(int index) override {
    if (read_error_.contains(index)) {
      return read_error_.at(index);
    }
    return limits_.at(static_cast<std::size_t>(index));
  }
  Status SetPowerLimit(int index, std::int64_t limit_mw) override {
    sets.push_back(SetCall{index, limit_mw});
    if (set_error_.contains(index)) {
      return set_error_.at(index);
    }
    limits_.at(static_cast<std::size_t>(index)).current_mw = limit_mw;
    return OkStatus();
  }

  static GpuUuid Uuid(int index) { return GpuUuid("GPU-p-" + std::to_string(index)); }
  GpuPowerLimits& Limits(int index) { return limits_.at(static_cast<std::size_t>(index)); }
  void FailSets(int index, Error error) { set_error_[index] = std::move(error); }
  void HealSets(int index) { set_error_.erase(index); }
  void FailReads(int index, Error error) { read_error_[index] = std::move(error); }
  std::int64_t Current(int index) { return Limits(index).current_mw; }

  std::vector<SetCall> sets;  // every set asked for, in order

 private:
  std::vector<GpuPowerLimits> limits_;
  std::map<int, Error> set_error_;
  std::map<int, Error> read_error_;
};

GpuSample IdleSample(int index) {
  GpuSample s;
  s.uuid = PowerBackend::Uuid(index);
  return s;
}

GpuSample BusySample(int index) {
  GpuSample s = IdleSample(index);
  GpuProcessSample p;
  p.pid = 4242;
  s.processes.push_back(p);
  return s;
}

class PowerSaverTest : public ::testing::Test {
 protected:
  void Start(std::int64_t idle_limit_mw = 150'000,
             const std::map<JobId, std::vector<GpuUuid>>& running = {}) {
    saver_.emplace(
        PowerSaverOptions{
            .idle_limit_mw = idle_limit_mw, .idle_after = kIdleAfter, .settle = kSettle},
        backend_,
        clock_);
    saver_->Start(*backend_.Discover(), running);
  }
  // Advances the clock and runs one tick with these samples (none: a round that read nothing).
  void TickAfter(Millis elapsed, const std::vector<GpuSample>& samples = {}) {
    clock_.Advance(elapsed);
    saver_->Tick(samples);
  }
  static std::vector<GpuUuid> Uuids(const std::vector<int>& indexes) {
    std::vector<GpuUuid> out;
    out.reserve(indexes.size());
    for (int i : indexes) {
      out.push_back(PowerBackend::Uuid(i));
    }
    return out;
  }

  ManualClock clock_;
  PowerBackend backend_{2};
  std::optional<PowerSaver> saver_;
};

TEST_F(PowerSaverTest, GpusWithoutAJobAreCappedAfterIdleAfterOnce) {
  Start();
  TickAfter(Millis(0));
  TickAfter(kIdleAfter - Millis(1));
  EXPECT_TRUE(backend_.sets.empty());
  TickAfter(Millis(1));
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{0, 150'000}, {1, 150'000}}));
  EXPECT_EQ(saver_->Capped(), Uuids({0, 1}));
  TickAfter(kIdleAfter * 3);
  EXPECT_EQ(backend_.sets.size(), 2u);  // a capped GPU is not set again
}

TEST_F(PowerSaverTest, CapIsRaisedToTheCardsLeastAndACardWithNoRoomIsLeftAlone) {
  backend_.Limits(0).min_mw = 200'000;
  backend_.Limits(1) = GpuPowerLimits{
      .current_mw = 72'000, .default_mw = 72'000, .min_mw = 40'000, .max_mw = 72'000};
  Start(/*idle_limit_mw=*/150'000);
  TickAfter(kIdleAfter);
  // An L4-like card whose default is under the idle limit has nothing to save.
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{0, 200'000}}));
}

TEST_F(PowerSaverTest, ALaunchRestoresItsGpusFirstAndTheirIdleTimeRestartsAtTheEnd) {
  Start();
  TickAfter(kIdleAfter);
  backend_.sets.clear();
  saver_->JobStarting(JobId(7), Uuids({0}));
  // Restored by the time JobStarting returns, before the launch.
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{0, kDefaultMw}}));
  EXPECT_EQ(saver_->Capped(), Uuids({1}));
  TickAfter(kIdleAfter * 10);  // a running job's GPU is never capped
  EXPECT_EQ(backend_.sets.size(), 1u);

  saver_->JobEnded(JobId(7));
  TickAfter(kIdleAfter - Millis(1));
  EXPECT_EQ(backend_.sets.size(), 1u);
  TickAfter(Millis(1));
  EXPECT_EQ(backend_.sets.back(), (SetCall{0, 150'000}));
  EXPECT_EQ(saver_->Capped(), Uuids({0, 1}));
}

TEST_F(PowerSaverTest, AGpuSharedByTwoJobsIdlesOnlyOnceBothEnded) {
  Start();
  saver_->JobStarting(JobId(1), Uuids({0}));
  saver_->JobStarting(JobId(2), Uuids({0}));
  saver_->JobEnded(JobId(1));
  TickAfter(kIdleAfter * 2);
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{1, 150'000}}));
  saver_->JobEnded(JobId(2));
  saver_->JobEnded(JobId(2));  // an exit reported twice changes nothing
  TickAfter(kIdleAfter);
  EXPECT_EQ(backend_.sets.back(), (SetCall{0, 150'000}));
}

TEST_F(PowerSaverTest, AGpuThatRefusesIsLeftAloneAndTheOthersCarryOn) {
  backend_.FailSets(0,
                    PermissionDenied("GPU 0: ... failed: Insufficient Permissions (needs root)"));
  Start();
  TickAfter(kIdleAfter);
  TickAfter(kIdleAfter * 5);
  saver_->JobStarting(JobId(3), Uuids({0}));
  saver_->JobEnded(JobId(3));
  TickAfter(kIdleAfter * 5);
  // GPU 0 was asked once; GPU 1 is capped as usual.
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{0, 150'000}, {1, 150'000}}));
  EXPECT_EQ(saver_->Capped(), Uuids({1}));
}

TEST_F(PowerSaverTest, GpusWhoseLimitsCannotBeReadAreNeverTouched) {
  backend_.FailReads(0, FailedPrecondition("GPU 0: no power management"));
  backend_.FailReads(1, Unavailable("GPU 1: GPU is lost"));
  Start();
  TickAfter(kIdleAfter * 2);
  saver_->RestoreAll();
  EXPECT_TRUE(backend_.sets.empty());
}

TEST_F(PowerSaverTest, APassingFailureIsRetriedAfterAnotherIdlePeriodNotEveryRound) {
  backend_.FailSets(0, Unavailable("GPU 0: driver busy"));
  Start();
  TickAfter(kIdleAfter);
  TickAfter(Millis(1'000));
  TickAfter(kIdleAfter - Millis(2'000));
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{0, 150'000}, {1, 150'000}}));
  backend_.HealSets(0);
  TickAfter(Millis(1'000));
  EXPECT_EQ(backend_.sets.back(), (SetCall{0, 150'000}));
  EXPECT_EQ(saver_->Capped(), Uuids({0, 1}));
}

TEST_F(PowerSaverTest, AFailedRestoreLetsTheLaunchGoOnAndIsTriedAgain) {
  Start();
  TickAfter(kIdleAfter);
  backend_.FailSets(0, Unavailable("GPU 0: driver busy"));
  saver_->JobStarting(JobId(9), Uuids({0}));  // returns: the launch is not held up
  EXPECT_EQ(backend_.sets.back(), (SetCall{0, kDefaultMw}));
  EXPECT_EQ(saver_->Capped(), Uuids({0, 1}));
  backend_.HealSets(0);
  saver_->RestoreAll();
  EXPECT_EQ(backend_.Current(0), kDefaultMw);
  EXPECT_EQ(backend_.Current(1), kDefaultMw);
  EXPECT_TRUE(saver_->Capped().empty());
}

TEST_F(PowerSaverTest, RestoreAllRestoresEveryCappedGpuAndCappingStops) {
  Start();
  saver_->JobStarting(JobId(1), Uuids({1}));
  TickAfter(kIdleAfter);
  backend_.sets.clear();
  saver_->RestoreAll();
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{0, kDefaultMw}}));  // GPU 1 was not capped
  TickAfter(kIdleAfter * 2);
  EXPECT_EQ(backend_.sets.size(), 1u);
}

TEST_F(PowerSaverTest, StartPutsBackALimitLeftFromBeforeUnlessItIsTheCapOfAnIdleGpu) {
  PowerBackend& b = backend_;
  b.Limits(0).current_mw = 150'000;  // the cap, idle: kept
  b.Limits(1).current_mw = 300'000;  // something else: restored
  Start();
  EXPECT_EQ(b.sets, (std::vector<SetCall>{{1, kDefaultMw}}));
  EXPECT_EQ(saver_->Capped(), Uuids({0}));
  saver_->RestoreAll();
  EXPECT_EQ(b.Current(0), kDefaultMw);
}

TEST_F(PowerSaverTest, AJobRunningAtStartHasItsGpuRestoredAndNeverCapped) {
  backend_.Limits(0).current_mw = 150'000;
  Start(150'000, {{JobId(5), Uuids({0})}});
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{0, kDefaultMw}}));
  TickAfter(kIdleAfter * 2);
  EXPECT_EQ(saver_->Capped(), Uuids({1}));
  saver_->JobEnded(JobId(5));
  TickAfter(kIdleAfter);
  EXPECT_EQ(saver_->Capped(), Uuids({0, 1}));
}

TEST_F(PowerSaverTest, AProcessOnAGpuKeepsItUncappedAndLiftsACap) {
  Start();
  TickAfter(kIdleAfter - Millis(1'000), {BusySample(0), IdleSample(1)});
  TickAfter(Millis(1'000), {BusySample(0), IdleSample(1)});
  EXPECT_EQ(saver_->Capped(), Uuids({1}));
  TickAfter(Millis(1'000), {IdleSample(0), BusySample(1)});
  EXPECT_TRUE(saver_->Capped().empty());
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{1, 150'000}, {1, kDefaultMw}}));
  TickAfter(kIdleAfter - Millis(1'000), {IdleSample(0), IdleSample(1)});
  EXPECT_EQ(saver_->Capped(), Uuids({0}));  // idle since its last process
}

// With the load forecast, the idle GPUs it wants ready stay uncapped (the one in use last
// first) and the others are capped once settled, well before the idle wait; a forecast that
// wants more lifts caps ahead of the demand, and without one the idle wait decides again.
TEST_F(PowerSaverTest, TheForecastKeepsTheWarmestIdleGpusReadyAndCapsTheRestOnceSettled) {
  Start();
  saver_->JobStarting(JobId(7), Uuids({0}));
  TickAfter(kSettle - Millis(1));
  saver_->JobEnded(JobId(7));  // GPU 0 was in use last: the warmest
  saver_->KeepReady(1);
  TickAfter(Millis(0));
  EXPECT_TRUE(backend_.sets.empty());  // GPU 1, idle since the start, has not settled yet
  TickAfter(Millis(1));
  EXPECT_EQ(backend_.sets, (std::vector<SetCall>{{1, 150'000}}));
  TickAfter(kIdleAfter * 10);
  EXPECT_EQ(saver_->Capped(), Uuids({1}));  // the one wanted ready is never capped

  saver_->KeepReady(2);  // demand is coming: the cap is lifted before any job asks
  TickAfter(Millis(0));
  EXPECT_TRUE(saver_->Capped().empty());
  EXPECT_EQ(backend_.sets.back(), (SetCall{1, kDefaultMw}));

  saver_->KeepReady(0);  // none wanted: every idle GPU that settled is capped
  TickAfter(Millis(0));
  EXPECT_EQ(saver_->Capped(), Uuids({0, 1}));

  saver_->KeepReady(std::nullopt);  // no forecast: the idle wait alone, caps kept
  saver_->JobStarting(JobId(8), Uuids({1}));
  saver_->JobEnded(JobId(8));
  TickAfter(kIdleAfter - Millis(1));
  EXPECT_EQ(saver_->Capped(), Uuids({0}));
  TickAfter(Millis(1));
  EXPECT_EQ(saver_->Capped(), Uuids({0, 1}));
}

}  // namespace
}  // namespace gf
