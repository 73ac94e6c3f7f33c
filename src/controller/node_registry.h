// NodeRegistry: the nodes a controller knows and what it knows of each — the node as last
// reported (and as the store had it at start), the agent that speaks for it, whether that agent
// is connected and when it was last heard from, and an admin's drain. It decides a node's own
// state (up, down, draining, drained) and its liveness, merges an agent's hello into the known
// node, and keeps the bookkeeping of GPU mode changes that wait for their GPU to empty.
//
// It only answers: what happens to jobs, events, the store and subscribers as a consequence (a
// silent node's jobs requeued, a state change recorded) is the Controller's, which acts on the
// values these methods return. Whether a node or GPU is busy is asked of the caller (`busy`,
// `in_use`), since the jobs are not the registry's.
//
// Owned by the Controller; state thread only (not thread-safe). The NodeAgent pointers are not
// owned: an attached agent outlives the controller (Controller::AttachAgent).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/job.h"
#include "model/node.h"
#include "model/snapshot.h"
#include "service/node_agent.h"

namespace gf {

// One known node.
struct NodeEntry {
  Node node;
  NodeAgent* agent = nullptr;
  bool connected = false;  // hello received since start (and not down since)
  std::chrono::steady_clock::time_point last_heard{};  // its agent's last report
  // Loaded from the store and not yet heard from since this controller started: it too goes
  // down after node_timeout (from the start) if its agent does not come back.
  bool awaiting_hello = false;
  // An admin drained it (the reason): no new jobs, whether its agent is there or not.
  std::optional<std::string> drain;
};

// MIG mode is the hardware's: a GPU with MIG on is in mig mode, one with it off leaves it.
void FollowMigMode(Gpu& gpu);

class NodeRegistry {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  // ---- Membership and lookups

  // A node as the store had it (Controller::Load): a draining or drained one keeps its drain,
  // the reason being its stored state reason.
  void Restore(Node node);
  // Registers the agent of `node`, adding the node (by name only) if it is new.
  void AttachAgent(const NodeId& node, NodeAgent* agent);
  std::size_t Count() const { return nodes_.size(); }
  const std::map<NodeId, NodeEntry>& Entries() const { return nodes_; }
  // The nodes by name (for a published view).
  std::vector<const Node*> Nodes() const {
    std::vector<const Node*> out;
    out.reserve(nodes_.size());
    for (const auto& [name, entry] : nodes_) {
      out.push_back(&entry.node);
    }
    return out;
  }
  // The entry of `node`, or null when unknown.
  const NodeEntry* Find(const NodeId& node) const;
  // REQUIRES: `node` is known (a job's allocated node always is).
  const NodeEntry& At(const NodeId& node) const { return nodes_.at(node); }
  // The node's record for changes to its GPUs (health, sharing modes, MIG), which are the GPU
  // code's (gpu_health.cpp); null when unknown. The registry's own fields (state, drain, agent,
  // liveness) change only through the methods below.
  Node* EditNode(const NodeId& node);
  // The GPU `ref` names on `node`: its index ("3") or its UUID, for EditNode's changes.
  // Errors: kNotFound naming the node or the GPU and where to find the names.
  Result<Gpu*> FindGpu(const NodeId& node, const std::string& ref);
  // The agent of the node `job` is allocated to; null when it has no allocation or its node
  // has no agent attached.
  NodeAgent* AgentFor(const Job& job) const;

  // ---- Liveness

  // At the controller's start: every node known but neither connected nor down awaits its
  // agent's hello, and goes down if it does not come within the node timeout from `now`.
  void AwaitHellos(SteadyTime now);
  // Its agent reported (a heartbeat or any report): counts only while it is connected.
  void Heard(const NodeId& node, SteadyTime now);
  // A node just marked down by CheckLiveness: `node` as it now is (to be stored), the agent to
  // end the session of (may be null), and the cause ("node n1 down: no report from its agent
  // for 30s").
  struct NodeDown {
    Node node;
    NodeAgent* agent = nullptr;
    std::string cause;
  };
  // Marks down every node connected (or awaiting its hello) whose agent has not been heard from
  // for `timeout` at `now`, and returns them in name order. `timeout` <= 0: never.
  std::vector<NodeDown> CheckLiveness(Millis timeout, SteadyTime now);

  // ---- An agent's hello

  struct HelloMerged {
    bool was_down = false;  // the node was down before this hello
    bool changed = false;   // the node differs from the one known (or was down, or is new)
  };
  // Merges the node an agent's hello reports into the known one (a new node joins): the sharing
  // modes and waiting changes an admin set are kept, MIG mode follows the hardware, the node is
  // connected, heard from at `steady_now`, last seen `now`, and up; call RefreshState next for
  // an admin's drain, which outlives the agent's reconnects. A MIG layout sent to the agent's
  // old connection is sent again (ApplyWaitingModes).
  HelloMerged MergeHello(Node reported, Time now, SteadyTime steady_now);

  // ---- Node state and drains

  // What RefreshState changed: the node as it now is (to be stored), and whether it just went
  // from draining to drained.
  struct StateChange {
    Node node;
    bool drained = false;
  };
  // Sets the node's state from what is known of it: down while its agent is away (or silent),
  // else draining/drained while an admin's drain holds (draining while `busy`: some job holds
  // GPUs on it), else up. Returns the change, or nullopt when state and reason stay as they were.
  // REQUIRES: `node` is known.
  std::optional<StateChange> RefreshState(const NodeId& node, bool busy);
  // An admin's drain of `node` (`reason`), or its end (nullopt); RefreshState applies it.
  // Errors: kNotFound when the node is unknown.
  Status SetDrain(const NodeId& node, std::optional<std::string> reason);
  // The nodes whose state is draining: each becomes drained once its last job leaves.
  std::vector<NodeId> Draining() const;

  // ---- What the scheduler sees

  // The nodes with the `allocated` GPUs taken, each GPU's load from `loads` when given (for
  // spreading). A node without a connected agent is down to the scheduler: known from the
  // store, but no agent has reported.
  ClusterSnapshot Snapshot(
      std::map<NodeId, std::set<GpuUuid>> allocated,
      const std::function<std::map<GpuUuid, GpuLoad>(const Node&)>& loads) const;

  // ---- Mode changes waiting for their GPU to empty (Gpu::sharing_next, mig_layout_next)

  // A change was set to wait (gpu mode, gpu mig-layout): the next ApplyWaitingModes looks.
  void NoteModeWaiting() { modes_waiting_ = true; }
  // A layout sent to `gpu`'s agent is settled (applied, refused) or replaced: a new one waiting
  // there is sent again.
  void ForgetMigLayoutSent(const GpuUuid& gpu) { mig_layouts_sent_.erase(gpu); }
  struct ModeApplied {
    NodeId node;
    int index = 0;
    GpuUuid uuid;
    SharingMode from{};
    SharingMode to{};
  };
  struct MigLayoutSend {
    NodeAgent* agent = nullptr;
    GpuUuid uuid;
    std::vector<std::string> profiles;
  };
  struct WaitingModes {
    std::vector<ModeApplied> applied;    // in node and GPU order
    std::vector<Node> changed;           // the nodes of `applied`, as they now are
    std::vector<MigLayoutSend> layouts;  // to send to their agents, once (until forgotten)
  };
  // Applies each waiting sharing mode whose GPU is no longer `in_use`, and returns the MIG
  // layouts now to be sent (a GPU no longer in use whose agent is attached). Walks the GPUs
  // only while some change may wait: returns nothing at once in the usual fleet.
  WaitingModes ApplyWaitingModes(const std::function<bool(const NodeId&, const GpuUuid&)>& in_use);

 private:
  std::map<NodeId, NodeEntry> nodes_;
  // Whether some GPU may have a mode change waiting for it to empty: ApplyWaitingModes walks
  // the GPUs only then. True at first: nodes restored from the store may carry one.
  bool modes_waiting_ = true;
  // GPUs whose waiting MIG layout was sent to their agent; until the outcome shows in a sample
  // (or the agent reconnects, which sends it again).
  std::set<GpuUuid> mig_layouts_sent_;
};

}  // namespace gf
