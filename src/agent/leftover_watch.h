// LeftoverWatch: keeps the GPUs of an ended job out of new work while processes of the job that
// the executor could not stop still live (Executor's JobExit::leftovers: its shim died and they
// escaped it, where no cgroup v2 holds the job; issue #20).
//
// Each sampling round (Apply) marks the sample of every such GPU `degraded`, with a cause naming
// the job and the pids, after the health tracker's verdict (a worse verdict stays, the causes
// are joined). The controller keeps a degraded GPU out of placement (model/node.h TakesWork)
// and marks the GPUs itself when the exit report names leftovers (JobExitReport::leftover_pids),
// so no launch slips in before the first sample. A job's entry goes once its processes are all
// gone and a sample has carried the mark: the next sample of the GPU is `ok` again, which the
// controller sees as a change and returns the GPU to service.
//
// An agent restart forgets the entries (the GPU then shows the processes as unmanaged ones,
// telemetry's unallocated_process condition, on a card whose driver lists them).
//
// Thread-safety: not thread-safe; the agent's sampler thread owns it.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "core/ids.h"
#include "executor/pid_record.h"
#include "model/gpu_sample.h"

namespace gf {

class LeftoverWatch {
 public:
  // Whether a recorded process still lives (default: exec::IsAlive, which a reused pid fails).
  using AliveFn = std::function<bool(const exec::PidRecord&)>;
  explicit LeftoverWatch(AliveFn alive = {});

  void Add(JobId job, std::vector<GpuUuid> gpus, std::vector<exec::PidRecord> processes);

  // Marks the samples of GPUs still held, and forgets jobs whose processes are gone and whose
  // mark has been reported.
  void Apply(std::span<GpuSample> samples);

  bool Empty() const { return held_.empty(); }

 private:
  struct Held {
    JobId job;
    std::vector<GpuUuid> gpus;
    std::vector<exec::PidRecord> processes;  // those alive at the last round
    bool marked = false;                     // a sample has carried the mark
  };
  AliveFn alive_;
  std::vector<Held> held_;
};

}  // namespace gf
