// ReadyGpus: the load forecast's part in the idle power policy (issue #22, item 4;
// docs/automation.md "Idle power"), a component of the controller. It learns the cluster's
// demand hour by hour (predict/load_forecast.h: GPUs held or asked for by pending jobs, the
// mean of one reading a minute) and tells each node's agent how many of its idle GPUs to keep
// ready (NodeAgent::KeepGpusReady): what GpusToKeepReady says the forecast wants within
// `lead_hours` beyond the GPUs in use, spread over the nodes with the most idle GPUs first
// (placement packs small jobs onto busy nodes, so the idle GPUs a coming job takes are most
// likely on the emptiest ones, and a multi-GPU job needs them together). An agent with a power
// policy caps the rest once they settle, and lifts caps ahead of demand (agent/power_saver.h);
// one without ignores it.
//
// At start the forecast is seeded from the stored runs of the last `seed_weeks` weeks (their
// GPUs held, hour by hour); the usage records do not say how long a job waited before its run,
// so the seeded hours count what was held, and the waits count from the start on. Until an hour
// has been seen no forecast is sent (nullopt: the agents' idle wait decides). A node's target
// is sent when it changes and again after its agent's hello (a restarted agent knows nothing).
//
// State thread only.
#pragma once

#include <map>
#include <optional>

#include "controller/node_registry.h"
#include "controller/turn_outbox.h"
#include "core/clock.h"
#include "core/result.h"
#include "lifecycle/job_book.h"
#include "predict/load_forecast.h"
#include "store/store.h"

namespace gf {

struct ReadyGpusOptions {
  int lead_hours = 2;  // how far ahead the forecast is read (sim/idle_power.h, the same rule)
  int seed_weeks = 4;  // stored runs read at start
  LoadForecastConfig forecast{};
};

// The controller's parts it works with; each must outlive it.
struct ReadyGpusParts {
  const JobBook& jobs;
  const NodeRegistry& nodes;
  TurnOutbox& out;  // the targets go to the agents after the turn's commit
  const Clock& clock;
};

// How many GPUs to keep ready on each node: `ready` in all, the nodes with the most idle GPUs
// first (ties by name), each at most its idle GPUs. Pure.
std::map<NodeId, int> SpreadReady(int ready, const std::map<NodeId, int>& idle_by_node);

class ReadyGpus {
 public:
  ReadyGpus(ReadyGpusOptions options, ReadyGpusParts parts);

  // Seeds the forecast from the store's runs of the last seed_weeks (Controller::Load).
  Status Load(StoreReader& store);
  // Each turn: once a minute, reads the demand, closes the hour that ended (the forecast
  // learns it), and sends the targets that changed.
  void Run();
  // The node's agent said hello: its target is sent again at the next reading.
  void Forget(const NodeId& node) { sent_.erase(node); }

  const LoadForecast& Forecast() const { return forecast_; }

 private:
  // GPUs held or asked for by pending jobs now (a share counts as its fraction).
  double Wanted() const;

  ReadyGpusOptions options_;
  ReadyGpusParts p_;
  LoadForecast forecast_;
  std::optional<Time> last_reading_;  // the minute of the last reading
  Time hour_{};                       // the hour the readings below belong to
  double hour_sum_ = 0;
  int hour_readings_ = 0;
  std::map<NodeId, std::optional<int>> sent_;  // what each node's agent was told last
};

}  // namespace gf
