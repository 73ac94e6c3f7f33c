// Traces: the jobs a simulation replays, read from the two CSV formats the simulator takes.
//
// - normalized (../shared/traces/README.md): job_id,submit_time_s,duration_s,num_gpus,user,
//   queue_or_team,status. `queue_or_team` becomes the job's team and `user` its user (blank =
//   none); `status` is ignored (every job runs for its `duration_s`). A row whose `duration_s`
//   is blank (unknown in the source: the Alibaba trace's pods that never ran) is left out and
//   counted. A fractional `num_gpus`
//   (the Alibaba sharing trace: 0.46 = 460 milli-GPU) is rounded UP to whole GPUs: gpufleet
//   has no GPU sharing yet (TODO(#5): map onto shares once sharing exists).
// - tiresias (the Tiresias simulator's job CSV): job_id,num_gpu,submit_time,iterations,
//   model_name,duration,interval. Only job_id, num_gpu, submit_time and duration are used; no
//   team or user.
//
// Times are seconds (fractions allowed, kept to the millisecond) from any origin. Jobs come
// back sorted by submit time, ties in file order. Plain values: safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace gf::sim {

struct TraceJob {
  std::string id;      // the trace's own job id, as written (shown in outputs)
  Millis submit{0};    // since the trace's origin
  Millis duration{0};  // run time from start to end when never interrupted
  int gpus = 1;        // whole GPUs on one node (fractional requests rounded up)
  std::string user{};  // "" = none
  std::string team{};  // "" = none
};

struct Trace {
  std::vector<TraceJob> jobs;
  int unknown_duration = 0;  // rows left out: no duration_s (normalized format)
};

enum class TraceFormat { kNormalized, kTiresias };
std::string_view ToString(TraceFormat format);  // "normalized", "tiresias"
// Errors: kInvalidArgument "format: 'x' is not a trace format; use normalized or tiresias".
Result<TraceFormat> ParseTraceFormat(std::string_view name);

// Parses `text`; `source` names it in errors. With no format, it is guessed from the header
// (a `submit_time_s` column: normalized; a `num_gpu` column: tiresias).
// Errors (kInvalidArgument) name the source, the line and the column: a missing column, a
// wrong field count, a number that is not one or is negative, an empty or repeated job id.
Result<Trace> ParseTrace(std::string_view text,
                         const std::string& source,
                         std::optional<TraceFormat> format);

// Reads and parses the file at `path`. Errors: kNotFound, kIo, or as ParseTrace.
Result<Trace> ReadTrace(const std::string& path, std::optional<TraceFormat> format);

}  // namespace gf::sim
