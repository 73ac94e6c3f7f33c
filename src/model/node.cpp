#include "model/node.h"

namespace gf {

std::string_view ToString(GpuHealth h) {
  switch (h) {
    case GpuHealth::kOk: return "ok";
    case GpuHealth::kDegraded: return "degraded";
    case GpuHealth::kFailed: return "failed";
  }
  return "ok";
}

int Severity(GpuHealth h) {
  switch (h) {
    case GpuHealth::kOk:
      return 0;
    case GpuHealth::kDegraded:
      return 1;
    case GpuHealth::kFailed:
      break;
  }
  return 2;
}

Result<GpuHealth> ParseGpuHealth(std::string_view s) {
  if (s == "ok") {
    return GpuHealth::kOk;
  }
  if (s == "degraded") {
    return GpuHealth::kDegraded;
  }
  if (s == "failed") {
    return GpuHealth::kFailed;
  }
  return InvalidArgument("unknown GPU health '" + std::string(s) + "'; use ok, degraded or failed");
}

std::string_view ToString(NodeState s) {
  switch (s) {
    case NodeState::kUp: return "up";
    case NodeState::kDraining: return "draining";
    case NodeState::kDrained: return "drained";
    case NodeState::kDown: return "down";
  }
  return "up";
}

Result<NodeState> ParseNodeState(std::string_view s) {
  if (s == "up") {
    return NodeState::kUp;
  }
  if (s == "draining") {
    return NodeState::kDraining;
  }
  if (s == "drained") {
    return NodeState::kDrained;
  }
  if (s == "down") {
    return NodeState::kDown;
  }
  return InvalidArgument("unknown node state '" + std::string(s) + "'; use up, draining, drained or down");
}

}  // namespace gf
