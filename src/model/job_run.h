// JobRun: one run of a job, from the scheduler placing it to its end. A job that goes back to
// the queue (preempted, `gpufleet requeue`, lost with its node) runs again; the Job itself keeps
// only its latest run (start and end time, allocation) and its usage record is written when a
// run ends, but the job's "state" events keep every run: JobRuns reads them back.
//
// The texts here are those events' messages, written and read in one place so that they cannot
// drift apart: JobBook::Transition writes StateChangeText ("RUNNING -> PREEMPTED: cause"), the
// scheduling stage starts its cause with StartingText ("starting on node1 GPUs 0,1").
//
// Plain value types and pure functions; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "model/event.h"
#include "model/job.h"
#include "model/node.h"

namespace gf {

// "FROM -> TO: CAUSE": a job's state change (states as ToString(JobState) names them), or a
// GPU's health change ("ok -> failed: XID 79").
struct StateChange {
  std::string from{};
  std::string to{};
  std::string cause{};
};
std::string StateChangeText(std::string_view from, std::string_view to, std::string_view cause);
// nullopt when `message` has no " -> "; the cause is "" without ": ".
std::optional<StateChange> ParseStateChange(std::string_view message);

// "starting on NODE GPUs 0,1" ("GPUs none" for a job without GPUs): the start of the cause of
// a job's PENDING -> STARTING change; the scheduler may add more after it.
std::string StartingText(std::string_view node, const std::vector<int>& gpu_indexes);

struct RunGpu {
  int index = 0;
  std::optional<GpuUuid> uuid{};  // unknown where the node no longer lists that index
  bool operator==(const RunGpu&) const = default;
};

struct JobRun {
  int number = 1;  // 1 for the first run
  std::optional<NodeId> node{};
  std::vector<RunGpu> gpus{};
  Time placed{};                        // the scheduler started it (PENDING -> STARTING)
  std::optional<Time> start{};          // it ran (-> RUNNING); none if it never did
  std::optional<Time> end{};            // none while it runs
  std::optional<JobState> end_state{};  // the state it ended in: PREEMPTED, NODE_FAIL, ..
  std::string end_cause{};
  bool operator==(const JobRun&) const = default;
};

// Every run of `job`, oldest first, from its events (oldest first, as the store lists them; only
// "state" events are read). The latest run takes the job's own start and end times and
// allocation where it holds one (the agent's times, as the job and its usage record have
// them; an earlier run's times are those of its events); an earlier run's GPUs are found by
// index on its node in `nodes`. A job that started but has no events (a journal kept
// elsewhere) gets one run from its own fields.
std::vector<JobRun> JobRuns(const Job& job,
                            const std::vector<Event>& events,
                            const std::vector<Node>& nodes);

}  // namespace gf
