#include "controller/node_registry.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "core/duration.h"

namespace gf {
namespace {

// An agent's hello reports the GPUs as the hardware has them; the sharing modes (and the
// changes waiting for a GPU to empty) are the admin's, kept from the node known.
void KeepSharingModes(const Node& known, Node& reported) {
  for (Gpu& gpu : reported.gpus) {
    const auto it = std::find_if(
        known.gpus.begin(), known.gpus.end(), [&](const Gpu& g) { return g.uuid == gpu.uuid; });
    if (it != known.gpus.end()) {
      gpu.sharing = it->sharing;
      gpu.sharing_next = it->sharing_next;
      gpu.mig_layout_next = it->mig_layout_next;
    }
    FollowMigMode(gpu);
  }
}

// The GPU `ref` names on the node: its index ("3") or its UUID.
Gpu* FindGpuOn(Node& node, const std::string& ref) {
  const bool is_index =
      !ref.empty() && ref.size() <= 4 &&
      std::all_of(ref.begin(), ref.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  for (Gpu& gpu : node.gpus) {
    if (is_index ? std::to_string(gpu.index) == ref : gpu.uuid.value() == ref) {
      return &gpu;
    }
  }
  return nullptr;
}

Error UnknownNode(const NodeId& node) {
  return NotFound("node " + node.value() + " not found (gpufleet nodes lists them)");
}

}  // namespace

void FollowMigMode(Gpu& gpu) {
  if (gpu.mig_enabled) {
    gpu.sharing = SharingMode::kMig;  // work runs only on its MIG devices
    gpu.sharing_next.reset();
  } else if (gpu.sharing == SharingMode::kMig) {
    gpu.sharing = SharingMode::kExclusive;  // MIG was turned off: a whole GPU again
    gpu.mig_layout_next.reset();
  }
}

void NodeRegistry::Restore(Node node) {
  NodeEntry& entry = nodes_[node.name];
  entry.node = std::move(node);
  if (entry.node.state == NodeState::kDraining || entry.node.state == NodeState::kDrained) {
    entry.drain = entry.node.state_reason;
  }
}

void NodeRegistry::AttachAgent(const NodeId& node, NodeAgent* agent) {
  NodeEntry& entry = nodes_[node];
  entry.agent = agent;
  entry.node.name = node;
}

const NodeEntry* NodeRegistry::Find(const NodeId& node) const {
  const auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &it->second;
}

Node* NodeRegistry::EditNode(const NodeId& node) {
  const auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &it->second.node;
}

Result<Gpu*> NodeRegistry::FindGpu(const NodeId& node, const std::string& ref) {
  Node* found_node = EditNode(node);
  if (found_node == nullptr) {
    return UnknownNode(node);
  }
  Gpu* found = FindGpuOn(*found_node, ref);
  if (found == nullptr) {
    return NotFound("GPU " + ref + " not found on " + node.value() +
                    "; name it by index or UUID (gpufleet gpus lists them)");
  }
  return found;
}

NodeAgent* NodeRegistry::AgentFor(const Job& job) const {
  if (!job.allocation) {
    return nullptr;
  }
  const NodeEntry* entry = Find(job.allocation->node);
  return entry == nullptr ? nullptr : entry->agent;
}

void NodeRegistry::AwaitHellos(SteadyTime now) {
  for (auto& [name, entry] : nodes_) {
    if (!entry.connected && entry.node.state != NodeState::kDown) {
      entry.awaiting_hello = true;
      entry.last_heard = now;
    }
  }
}

void NodeRegistry::Heard(const NodeId& node, SteadyTime now) {
  if (auto it = nodes_.find(node); it != nodes_.end() && it->second.connected) {
    it->second.last_heard = now;
  }
}

// Measured on the steady clock: a wall-clock jump must not fail a cluster.
std::vector<NodeRegistry::NodeDown> NodeRegistry::CheckLiveness(Millis timeout, SteadyTime now) {
  std::vector<NodeDown> down;
  if (timeout <= Millis(0)) {
    return down;
  }
  for (auto& [name, entry] : nodes_) {
    if ((!entry.connected && !entry.awaiting_hello) || now - entry.last_heard < timeout) {
      continue;
    }
    // Whole seconds read as a user set them ("30s"); a timeout under a minute (tests, tight
    // settings) keeps its tenths, so that it never reads "for 0s".
    const auto silent = now - entry.last_heard;
    std::string cause =
        "node " + name.value() + " down: no report from its agent for " +
        (silent < std::chrono::minutes(1)
             ? fmt::format("{:.1f}s", std::chrono::duration<double>(silent).count())
             : FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(silent)));
    entry.connected = false;
    entry.awaiting_hello = false;
    entry.node.state = NodeState::kDown;
    entry.node.state_reason = cause;
    down.push_back(NodeDown{.node = entry.node, .agent = entry.agent, .cause = std::move(cause)});
  }
  return down;
}

NodeRegistry::HelloMerged NodeRegistry::MergeHello(Node reported, Time now, SteadyTime steady_now) {
  NodeEntry& entry = nodes_[reported.name];
  HelloMerged merged{.was_down = entry.node.state == NodeState::kDown};
  KeepSharingModes(entry.node, reported);
  for (const Gpu& gpu : reported.gpus) {
    mig_layouts_sent_.erase(gpu.uuid);  // a layout sent to the old connection goes again
  }
  modes_waiting_ = true;
  reported.state = entry.node.state;
  reported.state_reason = entry.node.state_reason;
  reported.last_seen = entry.node.last_seen;  // not a change of the node by itself
  // The store does not keep the containment mode (each hello brings it): a node loaded from
  // the store has none, which is no change either.
  Node before = entry.node;
  before.containment = reported.containment;
  merged.changed = merged.was_down || !(before == reported);
  reported.last_seen = now;
  entry.node = std::move(reported);
  entry.connected = true;
  entry.awaiting_hello = false;
  entry.last_heard = steady_now;
  entry.node.state = NodeState::kUp;
  entry.node.state_reason.clear();
  return merged;
}

std::optional<NodeRegistry::StateChange> NodeRegistry::RefreshState(const NodeId& node, bool busy) {
  NodeEntry& entry = nodes_.at(node);
  NodeState state = NodeState::kUp;
  std::string reason;
  if (entry.node.state == NodeState::kDown && !entry.connected) {
    state = NodeState::kDown;
    reason = entry.node.state_reason;
  } else if (entry.drain) {
    state = busy ? NodeState::kDraining : NodeState::kDrained;
    reason = *entry.drain;
  }
  if (state == entry.node.state && reason == entry.node.state_reason) {
    return std::nullopt;
  }
  const bool drained = state == NodeState::kDrained && entry.node.state == NodeState::kDraining;
  entry.node.state = state;
  entry.node.state_reason = std::move(reason);
  return StateChange{.node = entry.node, .drained = drained};
}

Status NodeRegistry::SetDrain(const NodeId& node, std::optional<std::string> reason) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    return UnknownNode(node);
  }
  it->second.drain = std::move(reason);
  return OkStatus();
}

std::vector<NodeId> NodeRegistry::Draining() const {
  std::vector<NodeId> draining;
  for (const auto& [name, entry] : nodes_) {
    if (entry.node.state == NodeState::kDraining) {
      draining.push_back(name);
    }
  }
  return draining;
}

ClusterSnapshot NodeRegistry::Snapshot(
    std::map<NodeId, std::set<GpuUuid>> allocated,
    const std::function<std::map<GpuUuid, GpuLoad>(const Node&)>& loads) const {
  ClusterSnapshot snapshot;
  for (const auto& [name, entry] : nodes_) {
    NodeSnapshot ns{entry.node,
                    std::move(allocated[name]),
                    loads ? loads(entry.node) : std::map<GpuUuid, GpuLoad>{}};
    if (!entry.connected || entry.agent == nullptr) {
      ns.node.state = NodeState::kDown;  // known from the store, but no agent has reported
    }
    snapshot.nodes.push_back(std::move(ns));
  }
  return snapshot;
}

NodeRegistry::WaitingModes NodeRegistry::ApplyWaitingModes(
    const std::function<bool(const NodeId&, const GpuUuid&)>& in_use) {
  WaitingModes out;
  if (!modes_waiting_) {
    return out;  // the usual case: no GPU of the fleet is to change its mode
  }
  modes_waiting_ = false;
  for (auto& [name, entry] : nodes_) {
    bool changed = false;
    for (Gpu& gpu : entry.node.gpus) {
      // A MIG layout waits for its GPU to empty, then goes to its agent once.
      if (gpu.mig_layout_next.has_value()) {
        modes_waiting_ = true;  // until its outcome shows in a sample
        if (!mig_layouts_sent_.contains(gpu.uuid) && !in_use(name, gpu.uuid) &&
            entry.agent != nullptr) {
          mig_layouts_sent_.insert(gpu.uuid);
          out.layouts.push_back(MigLayoutSend{
              .agent = entry.agent, .uuid = gpu.uuid, .profiles = *gpu.mig_layout_next});
        }
      }
      if (!gpu.sharing_next.has_value()) {
        continue;
      }
      if (in_use(name, gpu.uuid)) {
        modes_waiting_ = true;
        continue;
      }
      out.applied.push_back(ModeApplied{.node = name,
                                        .index = gpu.index,
                                        .uuid = gpu.uuid,
                                        .from = gpu.sharing,
                                        .to = *gpu.sharing_next});
      gpu.sharing = *gpu.sharing_next;
      gpu.sharing_next.reset();
      changed = true;
    }
    if (changed) {
      out.changed.push_back(entry.node);
    }
  }
  return out;
}

}  // namespace gf
