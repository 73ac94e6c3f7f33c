// Multi-node (gang) jobs in the controller (controller.h; model/job.h GangMember): the
// submission of `--nodes N`, the environment each member starts with, holding a requeued gang
// back until every member has stopped, and the rules that keep a gang whole.
//
// Why members are jobs of their own: each runs on one node like any job, so launching, exit
// reports, logs, GPU attribution, usage, energy, the idle reaper and GPU fail-over need nothing
// new; only starting (the scheduler places the members together) and stopping (below) are
// done per gang. Slurm does the same with the components of a heterogeneous job.
#include <algorithm>
#include <string>
#include <vector>

#include "controller/controller.h"

namespace gf {
namespace {

// The members of `gang` still in `active` (the controller's active jobs), by rank: Job* or
// const Job* as `active` is, so that settling (which changes them) and the hold reason (which
// only reads) share the one lookup.
template <typename Active>
auto MembersOf(Active& active, const GangMember& gang) {
  std::vector<decltype(&active.begin()->second)> members;
  for (int rank = 0; rank < gang.size; ++rank) {
    const auto it = active.find(JobId(gang.gang_job.value() + rank));
    if (it != active.end() && it->second.spec.gang.has_value() &&
        it->second.spec.gang->gang_job == gang.gang_job) {
      members.push_back(&it->second);
    }
  }
  return members;
}

std::string MemberName(const Job& job) {
  return "member " + std::to_string(job.id.value()) + " (node " +
         std::to_string(job.spec.gang->rank + 1) + " of " + std::to_string(job.spec.gang->size) +
         ")";
}

}  // namespace

Result<Job> Controller::DoSubmitGang(const Caller& caller, const JobSpec& spec) {
  const JobId first(next_job_id_);
  const int size = spec.request.nodes;
  std::optional<Job> lead;
  for (int rank = 0; rank < size; ++rank) {
    JobSpec member = spec;
    member.gang = GangMember{.gang_job = first, .rank = rank, .size = size};
    Job job = AddJob(caller, std::move(member));
    if (rank == 0) {
      lead = std::move(job);
    }
  }
  return *lead;
}

void Controller::NoteGang(const Job& job) {
  if (job.spec.gang.has_value()) {
    gangs_to_settle_.emplace(job.spec.gang->gang_job, *job.spec.gang);
  }
}

void Controller::SettleGangs() {
  // Each action below notes the gang again (Transition, RequestKill); the second look finds
  // every member ended or stopping and does nothing, so the loop ends.
  while (!gangs_to_settle_.empty()) {
    const GangMember gang = gangs_to_settle_.begin()->second;
    gangs_to_settle_.erase(gangs_to_settle_.begin());
    const std::vector<Job*> members = MembersOf(active_, gang);
    // A member that ended other than COMPLETED (failed, cancelled, timed out), or that is
    // being stopped to end so: the gang cannot go on.
    const auto failed = std::find_if(members.begin(), members.end(), [&](const Job* job) {
      if (IsTerminal(job->state)) {
        return job->state != JobState::kCompleted;
      }
      const auto t = terminating_.find(job->id);
      return t != terminating_.end() && !Requeues(t->second);
    });
    if (failed != members.end()) {
      const Job& cause_job = **failed;
      const std::string cause =
          "its gang's " + MemberName(cause_job) +
          (IsTerminal(cause_job.state) ? " ended " + std::string(ToString(cause_job.state))
                                       : std::string(" is being stopped")) +
          " (" + cause_job.reason + ")";
      for (Job* job : members) {
        if (IsTerminal(job->state) || job == &cause_job) {
          continue;
        }
        const auto stopping = terminating_.find(job->id);
        if (job->state == JobState::kPending) {
          Transition(*job, JobState::kCancelled, cause, "controller");
        } else if (stopping == terminating_.end()) {
          Record(job->id, "cancel", "controller", cause + ": stopping the job's processes");
          RequestKill(*job, JobState::kCancelled, cause, kSigTerm);
        } else if (Requeues(stopping->second)) {
          stopping->second = Termination{.final_state = JobState::kCancelled, .cause = cause};
        }
      }
      continue;
    }
    // A member back in the queue, or being stopped to go back: the members still running
    // follow it, so that the gang starts again whole.
    const auto requeued = std::find_if(members.begin(), members.end(), [&](const Job* job) {
      const auto t = terminating_.find(job->id);
      return job->state == JobState::kPending || (t != terminating_.end() && Requeues(t->second));
    });
    if (requeued == members.end()) {
      continue;
    }
    const std::string cause =
        "requeued with its gang's " + MemberName(**requeued) + " (" + (*requeued)->reason + ")";
    for (Job* job : members) {
      if (HoldsGpus(*job) && !terminating_.contains(job->id)) {
        Record(job->id,
               "requeue",
               "controller",
               cause + ": sending SIG" + CheckpointSignalName(job->spec.checkpoint_signal) + ", " +
                   AfterStopText(*job, JobState::kCancelled));
        job->reason = cause;
        StopToRequeue(
            *job, JobState::kPreempted, "its gang's requeue", cause, job->spec.checkpoint_signal);
      }
    }
  }
}

std::optional<std::string> Controller::GangHoldReason(const Job& job) const {
  if (!job.spec.gang.has_value()) {
    return std::nullopt;
  }
  std::string holding;
  for (const Job* member : MembersOf(active_, *job.spec.gang)) {
    if (HoldsGpus(*member)) {
      holding += (holding.empty() ? "" : ", ") + std::to_string(member->id.value());
    }
  }
  if (holding.empty()) {
    return std::nullopt;
  }
  return "waiting for its gang's members " + holding + " to stop: the gang starts again whole";
}

void Controller::AddGangEnvironment(Job& launched) const {
  // The members' nodes by rank, from their allocations: the gang starts whole, so at any
  // launch (the first, or one re-sent after an agent reconnects) every member has its node.
  std::string list;
  int rank = 0;
  int position = 0;
  std::string master;
  for (const Job* member : MembersOf(active_, *launched.spec.gang)) {
    if (!member->allocation.has_value()) {
      continue;
    }
    const NodeId& node = member->allocation->node;
    list += (list.empty() ? "" : ",") + node.value();
    if (master.empty()) {
      master = node.value();
    }
    if (member->spec.gang->rank == launched.spec.gang->rank) {
      rank = position;
    }
    ++position;
  }
  auto& env = launched.spec.env;
  env.emplace_back("GPUFLEET_GANG_ID", std::to_string(launched.spec.gang->gang_job.value()));
  env.emplace_back("GPUFLEET_NODE_RANK", std::to_string(rank));
  env.emplace_back("GPUFLEET_NUM_NODES", std::to_string(position));
  env.emplace_back("GPUFLEET_NODELIST", list);
  env.emplace_back("GPUFLEET_MASTER_ADDR", master);
}

}  // namespace gf
