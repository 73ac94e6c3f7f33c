// GpuCare: the controller's component for the GPUs themselves (issues #7, #8), apart from the
// jobs on them: health changes the agents report and the fail-over of a failed GPU's jobs, GPUs
// held back for processes a job left behind, an operator's resume, sharing modes and MIG layouts
// (set now, or waiting until the GPU is empty, then sent to its agent), the MIG devices the
// samples show, and fractional jobs over their GPU memory limit (memory_breach_watch.h, which it
// owns). Placement keeps new work off GPUs that are not ok (model/node.h TakesWork); this deals
// with the work already there and the GPUs' own state.
//
// It changes nodes through the NodeRegistry's methods and jobs through the job book; what it
// writes, sends to agents and notifies goes to the turn's outbox. State thread only.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "controller/memory_breach_watch.h"
#include "controller/node_registry.h"
#include "controller/scheduling_stage.h"
#include "controller/slurm_link.h"
#include "controller/turn_outbox.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"
#include "monitor/telemetry.h"
#include "service/node_agent.h"
#include "service/service.h"

namespace gf {

// Which GPU samples the state thread must see for MIG: those whose MIG devices differ from
// the GPU's previous sample (a layout applied, MIG turned on or off) or that carry a layout's
// refusal. Thread-safe: samples arrive on the agents' threads, and until any GPU was ever in MIG
// mode a round of samples takes no lock and builds nothing (the usual fleet).
class MigChangeFilter {
 public:
  std::vector<GpuSample> Changed(const std::vector<GpuSample>& samples);

 private:
  std::mutex mu_;
  std::map<GpuUuid, std::pair<bool, std::vector<GpuUuid>>> seen_;  // MIG on, its devices
  std::atomic<bool> any_{false};
};

struct GpuCareParts {
  NodeRegistry& nodes;
  Telemetry& telemetry;
  JobBook& jobs;
  TurnOutbox& out;
  SchedulingStage& scheduling;  // told when where work may go changed
  const Clock& clock;
  // Companion mode (slurm_link.h): a failed GPU drains its node in Slurm (Slurm drains nodes,
  // not single GPUs), and resuming the node's last failed GPU resumes the node there.
  SlurmLink* slurm = nullptr;
};

class GpuCare {
 public:
  GpuCare(const SharingConfig& sharing, GpuCareParts parts);

  // ---- what the agents report
  // GPUs of `node` changed health: recorded and stored; a GPU that just failed has its jobs
  // stopped and requeued (with their checkpoint signal while it still answers).
  void ApplyHealth(const NodeId& node, const std::vector<HealthChange>& changes);
  // Conditions raised or cleared on GPUs of `node` (idle while allocated, over a memory limit,
  // an unmanaged process): recorded; a fractional job over its memory limit is answered.
  void ApplyConditions(const NodeId& node, const std::vector<ConditionChange>& changes);
  // The MIG devices (a layout applied, MIG turned on or off) or a layout's refusal that samples
  // of `node` show.
  void ApplyMigSamples(const NodeId& node, const std::vector<GpuSample>& samples);
  // The job ended leaving processes its agent could not stop: its GPUs take no new work from
  // now, before the agent's next sample says so (agent/leftover_watch.h), which also returns them.
  void HoldForLeftovers(const Job& job, const JobExitReport& report);

  // ---- each turn
  // A mode change that waited for its GPU to empty takes effect, and a waiting MIG layout is
  // sent to its agent (before each pass).
  void ApplyWaitingModes();
  // A job whose breach outlasts [sharing] memory_breach_grace after its process was killed is
  // stopped (FAILED, with the cause).
  void EnforceMemoryLimits();

  // ---- an operator's commands (authorized by the caller of these)
  Result<Gpu> Resume(const Caller& caller, const NodeId& node, const std::string& gpu);
  Result<Gpu> SetMode(const Caller& caller,
                      const NodeId& node,
                      const std::string& gpu,
                      SharingMode wanted);
  Result<Gpu> SetMigLayout(const Caller& caller,
                           const NodeId& node,
                           const std::string& gpu,
                           const std::vector<std::string>& profiles);

 private:
  void FailOver(const NodeId& node, const HealthChange& change);
  void OnMemoryBreach(const Job& job, const ConditionChange& change);
  // The node changed: stored with the turn, telemetry's inventory and the next pass told.
  void Changed(const Node& node);
  // The jobs holding the GPU now, "12, 14".
  std::string Holders(const NodeId& node, const GpuUuid& uuid) const;

  GpuCareParts p_;
  // Jobs over their GPU memory whose largest process was killed, until the breach clears or the
  // job is stopped.
  MemoryBreachWatch breaches_;
};

}  // namespace gf
