// Property test of the conformance suite (needs librapidcheck): any Job, with arbitrary bytes
// in its strings and arbitrary integers in its fields, reads back identically, both from
// GetJob and after a reopen.
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

rc::Gen<std::string> AnyString() { return rc::gen::arbitrary<std::string>(); }

Job ArbitraryJob() {
  Job job;
  job.id = JobId(*rc::gen::inRange<std::int64_t>(1, std::numeric_limits<std::int64_t>::max()));
  job.owner = Owner{*rc::gen::arbitrary<std::uint32_t>(), *rc::gen::arbitrary<std::uint32_t>(),
                    *AnyString()};
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
  job.state = *rc::gen::element(JobState::kPending, JobState::kStarting, JobState::kRunning,
                                JobState::kCompleted, JobState::kFailed, JobState::kCancelled,
                                JobState::kTimeout, JobState::kPreempted, JobState::kNodeFail);
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

}  // namespace
}  // namespace gf::testing
