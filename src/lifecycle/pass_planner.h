// PassPlanner: which scheduling pass a turn runs, for the controller and `gpufleet sim` alike
// (decision 0007, step 2). Two kinds of pass give one set of decisions:
// - a full pass hands the IncrementalScheduler (scheduler/incremental.h) the whole state and
//   queue; its decisions are Decide()'s;
// - an incremental pass tells it the arrivals and ends since, one by one, each decided on the
//   last full pass's state with the events since applied, at a cost that does not grow with
//   the queue (issue #6).
// The rule, in one place so that a simulated replay passes exactly as the product does:
//   1. A full pass when something changed that the scheduler is not told event by event
//      (NeedFull: a node, a requeue, a met dependency, a throttled array task, a checkpoint, a
//      decision that could not be applied as given), when one is due, when more events
//      gathered than one full pass costs (max_incremental_events), or when a team crossed its
//      GPU-hour budget since the last full pass (a hard threshold on usage that grows with
//      time, which the kept state does not see).
//   2. Else an incremental pass over the events, when there are any.
//   3. A full pass is due `full_pass_interval` after the first incremental pass since the last
//      full one that left jobs waiting (the jobs an incremental pass did not look at keep their
//      last reason and miss backfill until then, and the fair-share order moves with usage:
//      Slurm's quick scheduling followed by its periodic main pass; with nothing waiting there
//      is nothing to refresh), and at the moment a running job may be preempted on unchanged
//      state (ArmAt: lifecycle/wakeups.h NextPassAt).
// The shells keep their clocks: the controller wakes its loop at WakeAt(), the simulator puts a
// wake-up event on its virtual clock there. Pure; not thread-safe (one owner: the shell's
// scheduling step).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"

namespace gf {

struct PassRules {
  // A full pass follows the first incremental pass within this long (decision 0003).
  Millis full_pass_interval{1000};
  // An arrival this soon after the last pass is decided against that pass's end state as it
  // was then (IncrementalOptions::reuse_within): one job considered, not the ~200 a replay
  // re-decides with the stock backfill depth and preemptors. The only effect of the lag: a job
  // backfilled then may end up to this much later than its check assumed, which is within what
  // launching a job takes anyway; the next full pass decides from the present again.
  Millis arrival_reuse{50};
  // Beyond this many events in one turn (an array's tasks, a burst), one full pass is cheaper
  // than an incremental pass per event.
  std::size_t max_incremental_events = 64;
};

enum class PassKind { kNone, kIncremental, kFull };

// What an incremental pass tells the scheduler, in this order: the jobs that left the queue or
// gave up their GPUs, together (IncrementalScheduler::OnCompletions: the head of the queue sees
// every GPU they freed, as a full pass would), then the jobs that joined the queue, one by one
// in the order they came.
struct IncrementalBatch {
  std::vector<JobId> ends;
  std::vector<JobId> arrivals;
};

class PassPlanner {
 public:
  explicit PassPlanner(PassRules rules = {}) : rules_(rules) {}

  // Something changed that the scheduler is not told of event by event.
  void NeedFull() { full_needed_ = true; }
  bool FullNeeded() const { return full_needed_; }
  // A job joined the queue, or left it or gave up its GPUs: told to the next incremental pass.
  // The shell calls NeedFull instead for a job whose queue change is more than itself (a gang
  // member, an array task under a limit, a job waiting for a dependency).
  void Arrival(JobId job) { events_.arrivals.push_back(job); }
  void End(JobId job) { events_.ends.push_back(job); }
  // A pass may decide something new at `at` on unchanged state (a running job becomes old
  // enough to be preempted): keeps the earliest such moment until the next full pass.
  void ArmAt(Time at);
  std::optional<Time> ArmedAt() const { return armed_at_; }

  // Which pass to run at `now`. `budgets_crossed` is asked only when the answer would otherwise
  // be an incremental pass (it costs a walk over the running jobs).
  PassKind Plan(Time now, const std::function<bool()>& budgets_crossed = {}) const;

  // A full pass is starting: the events and every debt are settled by it.
  void StartFull();
  // An incremental pass is starting: what it tells the scheduler.
  IncrementalBatch StartIncremental();
  // It ran at `now` and left `waiting` jobs in the queue: a full pass is due full_pass_interval
  // after the first such pass since the last full one.
  void IncrementalRan(Time now, std::size_t waiting);

  // When a pass is next owed on unchanged state (the shell's wake-up), or nullopt.
  std::optional<Time> WakeAt() const;

 private:
  PassRules rules_;
  bool full_needed_ = true;  // the first pass is a full one: the scheduler has no state yet
  IncrementalBatch events_;
  std::optional<Time> full_due_;  // set by the first incremental pass after a full one
  std::optional<Time> armed_at_;
};

}  // namespace gf
