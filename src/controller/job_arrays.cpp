#include "controller/job_arrays.h"

#include <algorithm>
#include <set>

namespace gf {

Status ValidateArrayRequest(const ArrayRequest& array) {
  if (array.indices.empty()) {
    return InvalidArgument("array.indices: empty; give at least one task index (e.g. 0-9)");
  }
  if (array.indices.size() > static_cast<std::size_t>(kMaxArrayTasks)) {
    return InvalidArgument("array.indices: " + std::to_string(array.indices.size()) +
                           " tasks; an array has at most " + std::to_string(kMaxArrayTasks) +
                           "; split it into several arrays");
  }
  std::set<int> seen;
  for (int index : array.indices) {
    if (index < 0 || index > kMaxArrayIndex) {
      return InvalidArgument("array.indices: " + std::to_string(index) +
                             " is out of range; task indices go from 0 to " +
                             std::to_string(kMaxArrayIndex));
    }
    if (!seen.insert(index).second) {
      return InvalidArgument("array.indices: " + std::to_string(index) +
                             " is given twice; give each task index once");
    }
  }
  if (array.max_running && *array.max_running < 1) {
    return InvalidArgument("array.max_running: " + std::to_string(*array.max_running) +
                           "; give how many tasks may run at once, 1 or more (e.g. 0-99%4)");
  }
  return OkStatus();
}

std::map<JobId, std::string> ThrottledTasks(const std::vector<ArrayMember>& members) {
  struct Array {
    int limit = 0;
    int running = 0;
    std::vector<const ArrayMember*> pending;
  };
  std::map<JobId, Array> arrays;
  for (const ArrayMember& m : members) {
    if (!m.task.max_running) {
      continue;
    }
    Array& a = arrays[m.task.array_job];
    a.limit = *m.task.max_running;
    if (m.running) {
      a.running += 1;
    } else {
      a.pending.push_back(&m);
    }
  }
  std::map<JobId, std::string> held;
  for (auto& [id, a] : arrays) {
    // Lowest index first, as Slurm starts array tasks; the job id breaks ties (none expected).
    std::sort(a.pending.begin(), a.pending.end(), [](const ArrayMember* x, const ArrayMember* y) {
      return x->task.index != y->task.index ? x->task.index < y->task.index : x->job < y->job;
    });
    const auto room = static_cast<std::size_t>(std::max(0, a.limit - a.running));
    const std::string running =
        std::to_string(a.running) + (a.running == 1 ? " task" : " tasks") + " running";
    // With room left, the tasks before it by index take that room first.
    const std::string reason =
        "array " + std::to_string(id.value()) + ": " +
        (room == 0 ? running + ", limit " + std::to_string(a.limit)
                   : "at most " + std::to_string(a.limit) + " at once; " + running + ", " +
                         std::to_string(room) + " lower-index " +
                         (room == 1 ? "task goes" : "tasks go") + " first");
    for (std::size_t i = room; i < a.pending.size(); ++i) {
      held.emplace(a.pending[i]->job, reason);
    }
  }
  return held;
}

std::string ArrayTaskName(const ArrayTask& task) {
  return std::to_string(task.array_job.value()) + "_" + std::to_string(task.index);
}

}  // namespace gf
