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

}  // namespace gf
