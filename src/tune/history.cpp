#include "tune/history.h"

#include <algorithm>

#include "predict/runtime_predictor.h"

namespace gf::tune {
namespace {

constexpr int kPage = 1000;

bool Ran(const Job& job) {
  return IsTerminal(job.state) && job.start_time && job.end_time &&
         *job.end_time >= *job.start_time;
}

sim::TraceJob TraceJobOf(const Job& job) {
  const JobRequest& r = job.spec.request;
  const bool share = r.gpu_milli > 0 && r.gpu_milli < kWholeGpuMilli;
  return sim::TraceJob{.id = std::to_string(job.id.value()),
                       .submit = Millis(0),  // set once the window's first submit is known
                       .duration = *job.end_time - *job.start_time,
                       .gpus = share ? 1 : r.gpus * std::max(1, r.nodes),
                       .gpu_milli = share ? r.gpu_milli : 0,
                       .user = job.owner.user,
                       .team = job.spec.team,
                       .name = CommandFamily(job.spec.name, job.spec.argv),
                       .priority = job.spec.priority.name,
                       .time_limit = job.spec.time_limit,
                       .after = {}};
}

}  // namespace

Result<History> ReadHistory(StoreReader& store, Time since) {
  History history;
  std::vector<const Job*> kept;
  std::vector<Job> all;
  JobQuery query{.limit = kPage};
  while (true) {
    GF_ASSIGN_OR_RETURN(std::vector<Job> page, store.ListJobs(query));
    const bool last = static_cast<int>(page.size()) < kPage ||
                      std::any_of(page.begin(), page.end(), [&](const Job& job) {
                        return job.submit_time < since;
                      });
    if (!page.empty()) {
      query.before = page.back().id;
    }
    all.insert(
        all.end(), std::make_move_iterator(page.begin()), std::make_move_iterator(page.end()));
    if (last) {
      break;
    }
  }
  for (const Job& job : all) {
    if (job.submit_time < since || (job.spec.gang && job.spec.gang->rank > 0)) {
      continue;  // a gang is replayed once, as its first member with all the GPUs
    }
    if (!IsTerminal(job.state)) {
      history.unfinished += 1;
    } else if (!Ran(job)) {
      history.never_ran += 1;
    } else {
      kept.push_back(&job);
    }
  }
  std::sort(kept.begin(), kept.end(), [](const Job* a, const Job* b) {
    return a->submit_time != b->submit_time ? a->submit_time < b->submit_time : a->id < b->id;
  });
  if (!kept.empty()) {
    history.first_submit = kept.front()->submit_time;
  }
  for (const Job* job : kept) {
    sim::TraceJob trace_job = TraceJobOf(*job);
    trace_job.submit = job->submit_time - history.first_submit;
    history.jobs.push_back(std::move(trace_job));
  }
  return history;
}

std::vector<Node> ReplayCluster(std::vector<Node> nodes) {
  std::erase_if(nodes, [](const Node& node) { return node.gpus.empty(); });
  for (Node& node : nodes) {
    node.state = NodeState::kUp;
    node.state_reason.clear();
    for (Gpu& gpu : node.gpus) {
      gpu.health = GpuHealth::kOk;
      gpu.health_cause.clear();
      gpu.sharing_next.reset();
      gpu.mig_layout_next.reset();
    }
  }
  return nodes;
}

}  // namespace gf::tune
