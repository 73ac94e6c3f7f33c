#include "tune/tune_test_history.h"

#include <chrono>

namespace gf::tune {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

Job Recorded(std::int64_t id, const std::string& cls, Time submit, Millis ran) {
  Job job;
  job.id = JobId(id);
  job.owner = Owner{.uid = 1000, .gid = 1000, .user = "alice"};
  job.spec.name = "train";
  job.spec.argv = {"python3", "train.py"};
  job.spec.workdir = "/work";
  job.spec.priority = PriorityClass{cls};
  job.state = JobState::kCompleted;
  job.submit_time = submit;
  job.start_time = submit + hours(5);  // when it ran then does not matter: only for how long
  job.end_time = *job.start_time + ran;
  job.exit_code = 0;
  return job;
}

Node OneGpuNode() {
  Node node;
  node.name = NodeId("n1");
  Gpu gpu;
  gpu.uuid = GpuUuid("GPU-1");
  gpu.model = "V100";
  gpu.health = GpuHealth::kFailed;
  node.gpus.push_back(gpu);
  node.state = NodeState::kDown;
  return node;
}

}  // namespace

Status WriteHandCheckedHistory(Store& store) {
  const Time t0 = std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now()) - hours(6);
  const Job old = Recorded(1, "high", t0 - hours(24 * 30), hours(100));  // before --since 7d
  const Job low = Recorded(2, "low", t0, hours(4));
  const Job high = Recorded(3, "high", t0 + seconds(60), minutes(10));
  Job pending = Recorded(4, "normal", t0 + seconds(70), minutes(10));
  pending.state = JobState::kPending;
  pending.start_time.reset();
  pending.end_time.reset();
  Job cancelled = Recorded(5, "normal", t0 + seconds(80), minutes(10));
  cancelled.state = JobState::kCancelled;
  cancelled.start_time.reset();
  return store.Commit(
      StoreBatch{.jobs = {old, low, high, pending, cancelled}, .nodes = {OneGpuNode()}});
}

}  // namespace gf::tune
