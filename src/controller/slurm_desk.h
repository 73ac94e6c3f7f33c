// SlurmDesk: the controller's side of Slurm companion mode (`gpufleet server --slurm`, issue
// #23), on the state thread. gpufleet schedules nothing there: Slurm does. Each reading of
// Slurm's jobs (SlurmLink, slurm_link.h) is applied to the job book so that every other part —
// `gpus`, `top`, the dashboard, /metrics, accounting and `report`, the idle reaper — sees Slurm's
// jobs as it sees its own:
//   - a job gpufleet has not seen is added under Slurm's job id, with its user and uid, its
//     account as team, its partition as class (so `[class.PARTITION]` idle rules apply), name,
//     working directory, time limit and submit time; pending, or started at once on the GPUs
//     Slurm gave it (`GRES=gpu…(IDX:…)`, the indices mapped to the UUIDs its node's agent
//     reported);
//   - a pending job Slurm started is started on its GPUs, at Slurm's start time;
//   - a running job Slurm put back in its queue (requeued, preempted) goes back to pending;
//   - a job that ended in Slurm, or that Slurm no longer lists, ends: as gpufleet's own stop
//     meant it when gpufleet asked Slurm to stop it (the idle reaper, a GPU failure: the stop
//     book's intent), otherwise in Slurm's state (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...)
//     with Slurm's exit code.
// A job's GPUs on a node whose agent has not joined yet are filled in once it has.
// A multi-node job is one gpufleet job per node (the first under the Slurm id, the r-th under
// SlurmNodeJobId, slurm_jobs.h), each holding its GPUs there, so every node's GPUs, processes
// (the agent reads SLURM_NODEID) and GPU-hours are counted; they start, requeue and end together
// as Slurm says, and a stop of any of them stops the whole Slurm job.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "controller/node_desk.h"
#include "controller/node_registry.h"
#include "core/clock.h"
#include "lifecycle/job_book.h"

#include "slurm/slurm_jobs.h"

namespace gf {

struct SlurmDeskParts {
  JobBook& jobs;
  NodeRegistry& nodes;
  NodeDesk& node_desk;
  const Clock& clock;
};

class SlurmDesk {
 public:
  explicit SlurmDesk(SlurmDeskParts parts) : p_(parts) {}

  // One complete reading of Slurm's jobs.
  void Apply(const std::vector<SlurmJob>& jobs);

  // Kill orders become Slurm actions: a stop meant to requeue is `scontrol requeue`, any other
  // stop `scancel`.
  static bool RequeueMeant(const JobBook& jobs, JobId job);

 private:
  // A job as gpufleet keeps it, from Slurm's account of it (not yet started).
  Job Adopt(const SlurmJob& slurm) const;
  // The allocation Slurm gave the job: its first node, the GPU indices as its agent's UUIDs
  // (none while that node's agent has not joined).
  Allocation AllocationOf(const SlurmJob& slurm) const;
  void StartOn(Job& job, const SlurmJob& slurm);
  void End(Job& job, const SlurmJob* slurm, JobState state);

  SlurmDeskParts p_;
};

}  // namespace gf
