// Node and Gpu: the inventory of one server as the agent reports it.
// Plain value types; the controller thread owns the live copies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"

namespace gf {

enum class GpuHealth { kOk, kDegraded, kFailed };
std::string_view ToString(GpuHealth h);  // "ok", "degraded", "failed"
Result<GpuHealth> ParseGpuHealth(std::string_view s);
// 0 ok, 1 degraded, 2 failed: the worse, the larger (the gpufleet_gpu_health value).
int Severity(GpuHealth h);

struct Gpu {
  int index = 0;          // NVML index on its node
  GpuUuid uuid;
  std::string model;      // normalized model name, e.g. "H100-80GB"
  std::int64_t memory_mib = 0;
  GpuHealth health = GpuHealth::kOk;
  std::string health_cause;  // why it is not ok; "" when ok
  bool operator==(const Gpu&) const = default;
};

enum class NodeState { kUp, kDraining, kDrained, kDown };
std::string_view ToString(NodeState s);  // "up", "draining", "drained", "down"
Result<NodeState> ParseNodeState(std::string_view s);

struct Node {
  NodeId name;
  std::vector<Gpu> gpus;
  int cpus = 0;
  std::int64_t memory_mib = 0;
  std::map<std::string, std::string> labels;
  NodeState state = NodeState::kUp;
  std::string gpu_backend;  // "nvml", "sim:4xH100-80GB"
  Time last_seen{};
  bool operator==(const Node&) const = default;
};

}  // namespace gf
