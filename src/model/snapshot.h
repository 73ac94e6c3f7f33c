// ClusterSnapshot and Queue: the read-only view the scheduler decides on.
// Built by the controller thread for each scheduling pass; plain values.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "model/job.h"
#include "model/node.h"

namespace gf {

struct NodeSnapshot {
  Node node;
  std::set<GpuUuid> allocated;  // GPUs held by STARTING/RUNNING jobs
};

struct ClusterSnapshot {
  std::vector<NodeSnapshot> nodes;
};

// A job that is waiting, with what the scheduler needs to know of it.
struct QueuedJob {
  JobId id;
  PriorityClass priority = PriorityClass::kNormal;
  Time submit_time{};
  JobRequest request;
  std::string user;
};

struct Queue {
  std::vector<QueuedJob> pending;  // any order; the scheduler sorts
};

}  // namespace gf
