// The Slurm variables every job sees beside gpufleet's own (issue #23), so that a script written
// for sbatch finds what it reads: SLURM_JOB_ID, SLURM_ARRAY_TASK_ID, SLURM_NTASKS, SLURM_PROCID,
// SLURM_JOB_NODELIST and their usual companions. Built in one place, PlanChild (shim_child.h),
// from the launch and the GPUFLEET_* variables already set there. Plain functions.
#pragma once

#include <map>
#include <string>

#include "executor/executor.h"

namespace gf::exec {

// Adds the SLURM_* variables to `env`, the job's environment with GPUFLEET_JOB_ID and, for a
// member of a multi-node job, GPUFLEET_GANG_ID, GPUFLEET_NODE_RANK, GPUFLEET_NUM_NODES and
// GPUFLEET_NODELIST already in it. As in Slurm, a multi-node job is one job: SLURM_JOB_ID is
// its id (rank 0's) on every node, and each node runs one task, SLURM_PROCID being its rank.
// SLURM_SUBMIT_DIR already in `env` (the client sets it) is kept; else it is the workdir.
void AddSlurmVariables(const LaunchSpec& spec, std::map<std::string, std::string>& env);

}  // namespace gf::exec
