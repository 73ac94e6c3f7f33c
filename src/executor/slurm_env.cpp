#include "executor/slurm_env.h"

namespace gf::exec {
namespace {

std::string ValueOr(const std::map<std::string, std::string>& env,
                    const std::string& name,
                    const std::string& fallback) {
  const auto it = env.find(name);
  return it == env.end() || it->second.empty() ? fallback : it->second;
}

}  // namespace

void AddSlurmVariables(const LaunchSpec& spec, std::map<std::string, std::string>& env) {
  const std::string job = ValueOr(env, "GPUFLEET_GANG_ID", std::to_string(spec.job.value()));
  const std::string nodes = ValueOr(env, "GPUFLEET_NUM_NODES", "1");
  const std::string rank = ValueOr(env, "GPUFLEET_NODE_RANK", "0");
  const std::string nodelist = ValueOr(env, "GPUFLEET_NODELIST", spec.node);
  env["SLURM_JOB_ID"] = job;
  env["SLURM_JOBID"] = job;  // the older spelling, still read by many scripts
  env["SLURM_JOB_NAME"] = spec.name;
  env["SLURM_JOB_USER"] = spec.owner.user;
  env["SLURM_JOB_NUM_NODES"] = nodes;
  env["SLURM_NNODES"] = nodes;
  env["SLURM_NTASKS"] = nodes;  // one task (this command) per node
  env["SLURM_NPROCS"] = nodes;
  env["SLURM_PROCID"] = rank;
  env["SLURM_NODEID"] = rank;
  env["SLURM_LOCALID"] = "0";
  env["SLURM_JOB_NODELIST"] = nodelist;
  env["SLURM_NODELIST"] = nodelist;
  env["SLURMD_NODENAME"] = spec.node;
  env["SLURM_GPUS_ON_NODE"] = std::to_string(spec.gpus.size());
  env["SLURM_SUBMIT_DIR"] = ValueOr(env, "SLURM_SUBMIT_DIR", spec.workdir);
  if (spec.array) {
    env["SLURM_ARRAY_JOB_ID"] = std::to_string(spec.array->array_job.value());
    env["SLURM_ARRAY_TASK_ID"] = std::to_string(spec.array->index);
  } else {
    // Left from a submitter's own Slurm job (sbatch --export=ALL passes them along too), they
    // would make this job look like an array task.
    env.erase("SLURM_ARRAY_JOB_ID");
    env.erase("SLURM_ARRAY_TASK_ID");
  }
}

}  // namespace gf::exec
