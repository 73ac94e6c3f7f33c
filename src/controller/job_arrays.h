// Job arrays (`gpufleet submit --array 0-99%4`): checking an array request at submit. The
// throttle that keeps at most max_running tasks of an array holding GPUs is an admission
// stage of the job lifecycle (lifecycle/admission.h).
//
// The controller expands an array into one job per index at submit (service/service.h,
// SubmitArray);
// from then on each task is an ordinary job that carries JobSpec::array. Pure functions; safe
// from any thread.
#pragma once

#include "core/ids.h"
#include "core/result.h"
#include "model/job.h"
#include "service/service.h"

namespace gf {

// Checks an array request: 1 to kMaxArrayTasks indices, each 0..kMaxArrayIndex, none twice,
// max_running >= 1 when given. Errors: kInvalidArgument naming the field and the fix.
Status ValidateArrayRequest(const ArrayRequest& array);

}  // namespace gf
