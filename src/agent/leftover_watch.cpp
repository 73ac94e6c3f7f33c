#include "agent/leftover_watch.h"

#include <algorithm>
#include <string>
#include <utility>

#include "executor/process_tree.h"
#include "model/node.h"

namespace gf {
namespace {

std::vector<std::int64_t> Pids(const std::vector<exec::PidRecord>& processes) {
  std::vector<std::int64_t> out;
  for (const exec::PidRecord& p : processes) {
    out.push_back(p.pid);
  }
  return out;
}

void Mark(GpuSample& sample, const std::string& cause) {
  if (Severity(sample.health) < Severity(GpuHealth::kDegraded)) {
    sample.health = GpuHealth::kDegraded;
  }
  sample.health_cause += (sample.health_cause.empty() ? "" : "; ") + cause;
}

}  // namespace

LeftoverWatch::LeftoverWatch(AliveFn alive)
    : alive_(alive ? std::move(alive)
                   : AliveFn([](const exec::PidRecord& r) { return exec::IsAlive(r); })) {}

void LeftoverWatch::Add(JobId job,
                        std::vector<GpuUuid> gpus,
                        std::vector<exec::PidRecord> processes) {
  held_.push_back(Held{job, std::move(gpus), std::move(processes)});
}

void LeftoverWatch::Apply(std::span<GpuSample> samples) {
  for (Held& held : held_) {
    std::erase_if(held.processes, [this](const exec::PidRecord& r) { return !alive_(r); });
    if (held.processes.empty() && held.marked) {
      continue;  // erased below
    }
    // Gone before any sample carried the mark: one still goes out, as the controller marked the
    // GPUs at the job's exit and learns that they are free again only from a change back to ok.
    const std::string cause = held.processes.empty()
                                  ? "processes of job " + std::to_string(held.job.value()) +
                                        " that could not be stopped have ended"
                                  : LeftoverHoldCause(held.job, Pids(held.processes));
    for (GpuSample& sample : samples) {
      if (std::find(held.gpus.begin(), held.gpus.end(), sample.uuid) != held.gpus.end()) {
        Mark(sample, cause);
        held.marked = true;
      }
    }
  }
  std::erase_if(held_, [](const Held& h) { return h.processes.empty() && h.marked; });
}

}  // namespace gf
