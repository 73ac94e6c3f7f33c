// MemoryBreachWatch (issue #7): a fractional job over its GPU memory limit, and the watch that
// stops it when killing its largest process did not bring it back under.
//
// A job's GPU memory limit is its share of a GPU that other jobs use too; Telemetry reports a
// breach (gpu_memory_over_limit) with the job's process using the most memory there. Under
// [sharing] memory_breach = "kill" that process is killed (through the job's node's agent,
// when there is one) and the job is watched from that first kill: still over its limit
// memory_breach_grace later (other processes of its own hold the memory, or the kill failed),
// the job is stopped whole (FAILED), so that the GPU's other jobs get their memory back in
// bounded time. Under "warn" the breach is only told. A cleared breach ends the watch, as does
// the job giving up its GPUs. What is to be done comes back as values; the controller records
// the events, sends the kills and stops the jobs through its own paths.
//
// Owned by the Controller; state thread only (thread-compatible). No clock of its own: time
// comes in as arguments.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "model/job.h"
#include "model/node.h"
#include "monitor/telemetry.h"

namespace gf {

// What to do about a breach just reported.
struct BreachResponse {
  bool kill = false;             // kill the change's pid through the job's agent (after commit)
  std::string event{};           // the `memory_breach` event's message
  std::string notify_subject{};  // the kMemoryBreach notification to the job's subscribers
  std::string notify_message{};
};

// A job still over its limit past the grace: stop it (FAILED) with `cause`, which is also
// the `memory_breach` event's message.
struct BreachStop {
  JobId job{};
  std::string cause{};
};

// How a watched job stands now, as the controller sees it.
enum class BreachWatched {
  kGone,      // ended, or gave up its GPUs (requeued): its breach went with it
  kStopping,  // already being stopped: its exit ends the watch
  kHolding,   // holds its GPUs and runs on
};

class MemoryBreachWatch {
 public:
  explicit MemoryBreachWatch(const SharingConfig& sharing) : sharing_(sharing) {}

  // A breach of `job` (which holds GPUs) began: `change` says how and names its largest
  // process, when known; `can_kill` says whether the job's node has an agent to kill it with.
  // With a kill the watch starts at `now` (a later breach keeps the first kill's time).
  BreachResponse OnBreach(const Job& job, const ConditionChange& change, bool can_kill, Time now);
  // The breach of `job` cleared: the watch ends.
  void OnCleared(JobId job) { killed_at_.erase(job); }

  // Whether any job is watched: when none, the controller skips Overdue.
  bool Empty() const { return killed_at_.empty(); }

  // The watched jobs to stop at `now`: holding their GPUs, not being stopped, and `grace`
  // past their first kill; the watch of each ends. `state` tells how a watched job stands;
  // the gone are forgotten.
  std::vector<BreachStop> Overdue(Time now, const std::function<BreachWatched(JobId)>& state);

 private:
  SharingConfig sharing_;
  std::map<JobId, Time> killed_at_;  // the watched jobs, from their first process kill
};

}  // namespace gf
