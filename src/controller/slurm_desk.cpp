#include "controller/slurm_desk.h"

#include <algorithm>
#include <map>
#include <string>

#include <spdlog/spdlog.h>

namespace gf {
namespace {

constexpr const char* kActor = "slurm";

// The jobs gpufleet keeps for one Slurm job: one per node of its NodeList, each with its GPUs
// there, the first under the Slurm id and the others under SlurmNodeJobId (slurm_jobs.h); a job
// on one node, or on none yet, is one.
std::vector<SlurmJob> PerNode(const SlurmJob& slurm) {
  if (slurm.nodes.size() <= 1) {
    return {slurm};
  }
  std::vector<SlurmJob> out;
  const int count = static_cast<int>(slurm.nodes.size());
  for (int rank = 0; rank < count; ++rank) {
    SlurmJob unit = slurm;
    const std::string& node = slurm.nodes[static_cast<std::size_t>(rank)];
    unit.id = SlurmNodeJobId(slurm.id, rank);
    unit.nodes = {node};
    unit.gpus.clear();
    for (const SlurmNodeGpus& g : slurm.gpus) {
      if (g.node == node) {
        unit.gpus.push_back(g);
      }
    }
    unit.name += " [node " + std::to_string(rank + 1) + "/" + std::to_string(count) +
                 " of Slurm job " + std::to_string(slurm.id) + "]";
    out.push_back(std::move(unit));
  }
  return out;
}

}  // namespace

bool SlurmDesk::RequeueMeant(const JobBook& jobs, JobId job) {
  const std::optional<StopIntent> intent = jobs.Stops().Find(job);
  return intent && Requeues(*intent);
}

Allocation SlurmDesk::AllocationOf(const SlurmJob& slurm) const {
  Allocation allocation;
  if (slurm.gpus.empty()) {
    allocation.node = NodeId(slurm.nodes.empty() ? std::string() : slurm.nodes.front());
    return allocation;
  }
  const SlurmNodeGpus& first = slurm.gpus.front();
  allocation.node = NodeId(first.node);
  if (const NodeEntry* entry = p_.nodes.Find(allocation.node)) {
    for (const int index : first.gpu_indices) {
      const auto gpu = std::find_if(entry->node.gpus.begin(),
                                    entry->node.gpus.end(),
                                    [index](const Gpu& g) { return g.index == index; });
      if (gpu != entry->node.gpus.end()) {
        allocation.gpus.push_back(gpu->uuid);
      }
    }
  }
  return allocation;
}

Job SlurmDesk::Adopt(const SlurmJob& slurm) const {
  Job job;
  job.id = JobId(slurm.id);
  job.owner.uid = slurm.uid.value_or(0);
  job.owner.user = slurm.user;
  job.spec.name = slurm.name;
  job.spec.argv = {slurm.command.empty() ? "(sbatch --wrap)" : slurm.command};
  job.spec.workdir = slurm.work_dir;
  job.spec.team = slurm.account;
  job.spec.priority = PriorityClass{slurm.partition.empty() ? "slurm" : slurm.partition};
  job.spec.time_limit = slurm.time_limit;
  job.spec.request.gpus =
      slurm.gpus.empty() ? 0 : static_cast<int>(slurm.gpus.front().gpu_indices.size());
  job.spec.request.nodes = std::max<int>(1, static_cast<int>(slurm.nodes.size()));
  job.submit_time = slurm.submit_time.value_or(p_.clock.Now());
  job.state = JobState::kPending;
  job.reason =
      slurm.reason.empty() ? "pending in Slurm" : "pending in Slurm (" + slurm.reason + ")";
  return job;
}

void SlurmDesk::StartOn(Job& job, const SlurmJob& slurm) {
  const Allocation allocation = AllocationOf(slurm);
  p_.jobs.Start(
      job, allocation, /*preemptible=*/false, "started by Slurm on " + allocation.node.value());
  p_.jobs.Started(job, /*pid=*/0, slurm.start_time.value_or(p_.clock.Now()), kActor);
  p_.node_desk.AssignGpus(job);
}

void SlurmDesk::End(Job& job, const SlurmJob* slurm, JobState state) {
  const int exit_code = slurm != nullptr ? slurm->exit_code.value_or(0) : 0;
  // When Slurm says it ended (to the second), not when this reading saw it: the run's
  // GPU-hours are then Slurm's own start to end.
  Time end = p_.clock.Now();
  if (slurm != nullptr && slurm->end_time && *slurm->end_time <= end &&
      (!job.start_time || *slurm->end_time >= *job.start_time)) {
    end = *slurm->end_time;
  }
  if (p_.jobs.Stops().Stopping(job.id) || state == JobState::kCompleted ||
      state == JobState::kFailed) {
    // Its end as the stop book judges it: gpufleet's own stop as meant, or the exit code.
    const std::string how =
        slurm != nullptr ? "ended " + slurm->state + " in Slurm" : "no longer listed by Slurm";
    p_.jobs.Exited(job, exit_code, how, end, kActor);
    return;
  }
  job.exit_code = exit_code;
  job.end_time = end;
  p_.jobs.Transition(
      job, state, std::string("ended ") + std::string(ToString(state)) + " in Slurm", kActor);
}

void SlurmDesk::Apply(const std::vector<SlurmJob>& listed) {
  std::vector<SlurmJob> units;
  units.reserve(listed.size());
  for (const SlurmJob& slurm : listed) {
    for (SlurmJob& unit : PerNode(slurm)) {
      units.push_back(std::move(unit));
    }
  }
  std::set<JobId> seen;
  for (const SlurmJob& slurm : units) {
    const std::optional<JobState> state = JobStateOfSlurm(slurm.state);
    if (!state) {
      continue;  // a state this version does not know: left as it was until it changes
    }
    const JobId id(slurm.id);
    seen.insert(id);
    Job* job = p_.jobs.Find(id);
    if (job == nullptr) {
      if (IsTerminal(*state) || *state == JobState::kPreempted || *state == JobState::kNodeFail) {
        continue;  // ended before gpufleet saw it run (or ended here already and was erased)
      }
      p_.jobs.Add(Adopt(slurm));
      p_.jobs.Record(id, "submit", kActor, "seen in Slurm's queue (" + slurm.state + ")");
      job = p_.jobs.Find(id);
    }
    if (IsTerminal(job->state)) {
      continue;
    }
    const bool running = *state == JobState::kRunning;
    if (running && job->state == JobState::kPending) {
      StartOn(*job, slurm);
    } else if (running && HoldsGpus(*job) && job->allocation->gpus.empty()) {
      // Its node's agent has joined since: the GPUs can be named now.
      Allocation allocation = AllocationOf(slurm);
      if (!allocation.gpus.empty()) {
        job->allocation = std::move(allocation);
        p_.jobs.Write(*job);
        p_.node_desk.AssignGpus(*job);
      }
    } else if (*state == JobState::kPending && HoldsGpus(*job)) {
      // Slurm put it back in its queue (scontrol requeue, preemption, a node failure).
      p_.jobs.Transition(*job, JobState::kPreempted, "requeued in Slurm", kActor);
      p_.jobs.Requeue(*job, "a requeue in Slurm", slurm.reason.empty() ? "by Slurm" : slurm.reason);
    } else if (*state == JobState::kPending) {
      const std::string reason =
          slurm.reason.empty() ? "pending in Slurm" : "pending in Slurm (" + slurm.reason + ")";
      if (job->reason != reason) {
        job->reason = reason;
        p_.jobs.Write(*job);
      }
    } else if (!running) {
      const JobState end = *state == JobState::kPreempted || *state == JobState::kNodeFail
                               ? JobState::kCancelled
                               : *state;
      if (job->state == JobState::kPending && slurm.start_time) {
        StartOn(*job, slurm);  // it ran and ended between two readings
      }
      if (job->state == JobState::kPending) {
        p_.jobs.Transition(*job,
                           JobState::kCancelled,
                           "ended " + slurm.state + " in Slurm before it started",
                           kActor);
      } else {
        End(*job, &slurm, end);
      }
    }
  }
  // Jobs Slurm no longer lists (past its MinJobAge, or purged while gpufleet was away).
  std::vector<JobId> gone;
  for (const auto& [id, job] : p_.jobs.Active()) {
    if (!seen.contains(id) && !IsTerminal(job.state)) {
      gone.push_back(id);
    }
  }
  for (const JobId id : gone) {
    Job& job = p_.jobs.At(id);
    const JobId first(SlurmJobOfNodeJob(id.value()));
    const Job* whole = first != id ? p_.jobs.Find(first) : nullptr;
    if (whole != nullptr && whole->state == JobState::kPending) {
      // Another node's share of a multi-node job Slurm put back in its queue (which lists it
      // on no node now): it waits with it, and starts again with it.
      if (HoldsGpus(job)) {
        p_.jobs.Transition(job, JobState::kPreempted, "requeued in Slurm", kActor);
        p_.jobs.Requeue(job, "a requeue in Slurm", "by Slurm");
      }
      continue;
    }
    if (job.state == JobState::kPending) {
      p_.jobs.Transition(job, JobState::kCancelled, "no longer listed by Slurm", kActor);
    } else {
      End(job, nullptr, JobState::kCompleted);
    }
  }
}

}  // namespace gf
