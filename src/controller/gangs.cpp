// Multi-node (gang) jobs in the controller (controller.h; model/job.h GangMember): the
// submission of `--nodes N`, the environment each member starts with, holding a requeued gang
// back until every member has stopped (lifecycle/admission.h), and applying the rules that keep
// a gang whole (lifecycle/gang_rules.h).
//
// Why members are jobs of their own: each runs on one node like any job, so launching, exit
// reports, logs, GPU attribution, usage, energy, the idle reaper and GPU fail-over need nothing
// new; only starting (the scheduler places the members together) and stopping (below) are
// done per gang. Slurm does the same with the components of a heterogeneous job.
#include <algorithm>
#include <string>
#include <vector>

#include "controller/controller.h"
#include "lifecycle/gang_rules.h"

namespace gf {

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

void Controller::AddGangEnvironment(Job& launched) const {
  // The members' nodes by rank, from their allocations: the gang starts whole, so at any
  // launch (the first, or one re-sent after an agent reconnects) every member has its node.
  std::string list;
  int rank = 0;
  int position = 0;
  std::string master;
  for (const Job* member : GangMembers(jobs_.Active(), *launched.spec.gang)) {
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
