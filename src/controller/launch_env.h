// What an agent is sent to launch a job: the job as allocated, with the environment of its gang
// (GPUFLEET_NODE_RANK, GPUFLEET_NODELIST, ...) and of its GPU share (GPUFLEET_GPU_SHARE, MPS's
// limits). Every launch goes through LaunchOf, the first and one re-sent after an agent
// reconnects. Pure.
#pragma once

#include <map>

#include "model/job.h"
#include "model/node.h"

namespace gf {

// `job` (allocated) as its agent launches it; `active` holds its gang's members (a gang starts
// whole, so each has its node), `node` is the node it runs on.
Job LaunchOf(const Job& job, const std::map<JobId, Job>& active, const Node& node);

}  // namespace gf
