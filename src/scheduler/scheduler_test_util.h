// Helpers for the scheduler's tests: small clusters and queues in one line each.
// Test code only; plain functions over values, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/snapshot.h"

namespace gf::testing {

// A node with `count` GPUs of `model`, indexes 0..count-1, UUIDs "GPU-<name>-<index>".
inline NodeSnapshot MakeNode(const std::string& name,
                             int count,
                             const std::string& model,
                             NodeState state = NodeState::kUp) {
  NodeSnapshot snapshot;
  snapshot.node.name = NodeId(name);
  snapshot.node.state = state;
  for (int i = 0; i < count; ++i) {
    Gpu gpu;
    gpu.index = i;
    gpu.uuid = GpuUuid("GPU-" + name + "-" + std::to_string(i));
    gpu.model = model;
    snapshot.node.gpus.push_back(gpu);
  }
  return snapshot;
}

inline GpuUuid Uuid(const std::string& node, int index) {
  return GpuUuid("GPU-" + node + "-" + std::to_string(index));
}

// A running job `id` holding the GPUs of `node` with these indexes; the caller sets the rest
// (class, team, start, limit) as its test needs.
inline RunningJob RunningOn(std::int64_t id,
                            const std::string& node,
                            const std::vector<int>& gpus) {
  RunningJob job;
  job.id = JobId(id);
  job.allocation.node = NodeId(node);
  for (const int g : gpus) {
    job.allocation.gpus.push_back(Uuid(node, g));
  }
  return job;
}

inline QueuedJob MakeJob(std::int64_t id,
                         int gpus,
                         std::optional<std::string> type = std::nullopt,
                         PriorityClass priority = PriorityClass::kNormal,
                         std::int64_t submit_s = 0) {
  QueuedJob job;
  job.id = JobId(id);
  job.priority = std::move(priority);
  job.submit_time = FromUnixMillis(submit_s * 1000);
  job.request.gpus = gpus;
  job.request.gpu_type = std::move(type);
  return job;
}

// The ids of an ordering, in order: what ordering tests compare.
inline std::vector<std::int64_t> Ids(const std::vector<const QueuedJob*>& order) {
  std::vector<std::int64_t> ids;
  ids.reserve(order.size());
  for (const QueuedJob* job : order) {
    ids.push_back(job->id.value());
  }
  return ids;
}

inline JobRequest Request(int gpus, std::optional<std::string> type = std::nullopt) {
  JobRequest request;
  request.gpus = gpus;
  request.gpu_type = std::move(type);
  return request;
}

}  // namespace gf::testing
