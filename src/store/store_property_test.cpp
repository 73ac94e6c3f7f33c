// Property test of the conformance suite (needs librapidcheck): any Job, with arbitrary bytes
// in its strings and arbitrary integers in its fields, reads back identically, both from
// GetJob and after a reopen; any set of GPU minutes reads back as a map keyed by (uuid, minute)
// would hold it, in (minute, node, uuid) order.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <rapidcheck.h>

#include "store/store_conformance_test.h"
#include "store/store_test_util.h"

namespace gf::testing {
namespace {

template <typename T>
std::optional<T> MaybeOf(const rc::Gen<T>& gen) {
  if (*rc::gen::arbitrary<bool>()) {
    return *gen;
  }
  return std::nullopt;
}

rc::Gen<std::string> AnyString() {
  return rc::gen::arbitrary<std::string>();
}

// Any finite double. -0.0 becomes +0.0: SQLite keeps a REAL that has an integer value as an
// integer, so -0.0 reads back as 0.0 (equal by ==, yet it prints differently).
double AnyFinite() {
  const double d =
      *rc::gen::suchThat(rc::gen::arbitrary<double>(), [](double v) { return std::isfinite(v); });
  return d == 0 ? 0.0 : d;
}

JobUsage ArbitraryUsage() {
  return JobUsage{
      .samples = *rc::gen::inRange<std::int64_t>(0, std::numeric_limits<std::int64_t>::max()),
      .mean_util_pct = AnyFinite(),
      .peak_util_pct = *rc::gen::arbitrary<int>(),
      .peak_memory_mib = *rc::gen::arbitrary<std::int64_t>(),
      .energy_mj = *rc::gen::arbitrary<std::int64_t>()};
}

// A row that passes the store's checks: node and uuid not empty, samples >= 0, minute aligned,
// means finite. Everything else arbitrary.
GpuMinute ArbitraryGpuMinute() {
  constexpr std::int64_t kMinuteMs = 60'000;
  constexpr std::int64_t kMostMinutes = std::numeric_limits<std::int64_t>::max() / kMinuteMs;
  GpuMinute m;
  m.node = NodeId(*rc::gen::nonEmpty(AnyString()));
  m.uuid = GpuUuid(*rc::gen::nonEmpty(AnyString()));
  m.minute = FromUnixMillis(*rc::gen::inRange(-kMostMinutes, kMostMinutes) * kMinuteMs);
  if (auto job = MaybeOf(rc::gen::arbitrary<std::int64_t>())) {
    m.job = JobId(*job);
  }
  m.user = *AnyString();
  m.team = *AnyString();
  m.samples = *rc::gen::inRange(0, std::numeric_limits<int>::max());
  m.util_mean_pct = AnyFinite();
  m.util_max_pct = *rc::gen::arbitrary<int>();
  m.memory_used_max_mib = *rc::gen::arbitrary<std::int64_t>();
  m.power_mean_w = AnyFinite();
  m.energy_mj = *rc::gen::arbitrary<std::int64_t>();
  m.health = *rc::gen::element(GpuHealth::kOk, GpuHealth::kDegraded, GpuHealth::kFailed);
  return m;
}

Job ArbitraryJob() {
  Job job;
  job.id = JobId(*rc::gen::inRange<std::int64_t>(1, std::numeric_limits<std::int64_t>::max()));
  job.owner = Owner{
      *rc::gen::arbitrary<std::uint32_t>(), *rc::gen::arbitrary<std::uint32_t>(), *AnyString()};
  job.spec.name = *AnyString();
  job.spec.argv = *rc::gen::arbitrary<std::vector<std::string>>();
  job.spec.workdir = *AnyString();
  job.spec.env = *rc::gen::arbitrary<std::vector<std::pair<std::string, std::string>>>();
  job.spec.request.gpus = *rc::gen::arbitrary<int>();
  job.spec.request.gpu_type = MaybeOf(AnyString());
  job.spec.priority =
      *rc::gen::element(PriorityClass::kHigh, PriorityClass::kNormal, PriorityClass::kLow);
  job.spec.team = *AnyString();
  if (auto s = MaybeOf(rc::gen::arbitrary<std::int64_t>())) {
    job.spec.time_limit = std::chrono::seconds(*s);
  }
  job.state = *rc::gen::element(JobState::kPending,
                                JobState::kStarting,
                                JobState::kRunning,
                                JobState::kCompleted,
                                JobState::kFailed,
                                JobState::kCancelled,
                                JobState::kTimeout,
                                JobState::kPreempted,
                                JobState::kNodeFail);
  if (*rc::gen::arbitrary<bool>()) {
    Allocation a;
    a.node = NodeId(*AnyString());
    for (auto& g : *rc::gen::arbitrary<std::vector<std::string>>()) {
      a.gpus.emplace_back(g);
    }
    job.allocation = std::move(a);
  }
  job.submit_time = FromUnixMillis(*rc::gen::arbitrary<std::int64_t>());
  if (auto t = MaybeOf(rc::gen::arbitrary<std::int64_t>())) {
    job.start_time = FromUnixMillis(*t);
  }
  if (auto t = MaybeOf(rc::gen::arbitrary<std::int64_t>())) {
    job.end_time = FromUnixMillis(*t);
  }
  job.exit_code = MaybeOf(rc::gen::arbitrary<int>());
  job.reason = *AnyString();
  job.pid = MaybeOf(rc::gen::arbitrary<std::int64_t>());
  if (*rc::gen::arbitrary<bool>()) {
    job.usage = ArbitraryUsage();
  }
  return job;
}

TEST_P(StoreConformanceTest, PropertyAnyJobRoundTrips) {
  const bool ok = rc::check("any job reads back as written", [this] {
    Job job = ArbitraryJob();
    Status status = store_->Commit({.jobs = {job}});
    RC_ASSERT(status.ok());
    auto back = store_->GetJob(job.id);
    RC_ASSERT(back.ok());
    RC_ASSERT(back->has_value());
    RC_ASSERT(DebugString(**back) == DebugString(job));
  });
  EXPECT_TRUE(ok);
}

TEST_P(StoreConformanceTest, PropertyJobsSurviveReopen) {
  std::vector<Job> written;
  const bool ok = rc::check("jobs read back after reopen", [&] {
    Job job = ArbitraryJob();
    RC_ASSERT(store_->Commit({.jobs = {job}}).ok());
    written.push_back(job);
  });
  ASSERT_TRUE(ok);
  Reopen();
  // Later writes of the same id replace earlier ones: compare with the last one per id.
  std::map<std::int64_t, std::string> expected;
  for (const Job& j : written) {
    expected[j.id.value()] = DebugString(j);
  }
  for (const auto& [id, text] : expected) {
    auto back = store_->GetJob(JobId(id));
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    ASSERT_TRUE(back->has_value());
    EXPECT_EQ(DebugString(**back), text);
  }
}

// The model: a map by (uuid, minute) where the last write wins, listed by (minute, node, uuid).
// Strings compare as bytes, as SQLite's BINARY collation does.
TEST_P(StoreConformanceTest, PropertyGpuMinutesActLikeAMapListedInOrder) {
  std::map<std::pair<std::string, std::int64_t>, GpuMinute> model;
  const bool ok = rc::check("gpu minutes read back as a map would hold them", [&] {
    // Half the rows reuse an existing (uuid, minute), with new values and maybe a new node.
    auto rows = *rc::gen::container<std::vector<GpuMinute>>(rc::gen::exec([&] {
      GpuMinute m = ArbitraryGpuMinute();
      if (!model.empty() && *rc::gen::arbitrary<bool>()) {
        auto it = std::next(
            model.begin(),
            *rc::gen::inRange<std::ptrdiff_t>(0, static_cast<std::ptrdiff_t>(model.size())));
        m.uuid = it->second.uuid;
        m.minute = it->second.minute;
      }
      return m;
    }));
    RC_ASSERT(store_->Commit({.gpu_minutes = rows}).ok());
    for (const GpuMinute& m : rows) {
      model[{m.uuid.value(), ToUnixMillis(m.minute)}] = m;
    }
    std::vector<GpuMinute> expected;
    expected.reserve(model.size());
    for (const auto& [key, m] : model) {
      expected.push_back(m);
    }
    std::sort(expected.begin(), expected.end(), [](const GpuMinute& a, const GpuMinute& b) {
      return std::tie(a.minute, a.node.value(), a.uuid.value()) <
             std::tie(b.minute, b.node.value(), b.uuid.value());
    });
    auto listed = store_->ListGpuMinutes(FromUnixMillis(std::numeric_limits<std::int64_t>::min()),
                                         FromUnixMillis(std::numeric_limits<std::int64_t>::max()),
                                         std::numeric_limits<int>::max());
    RC_ASSERT(listed.ok());
    RC_ASSERT(*listed == expected);
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace gf::testing
