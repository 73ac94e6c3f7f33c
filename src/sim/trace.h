// Traces: the jobs a simulation replays, read from the two CSV formats the simulator takes.
//
// - normalized (../shared/traces/README.md): job_id,submit_time_s,duration_s,num_gpus,user,
//   queue_or_team,status. `queue_or_team` becomes the job's team and `user` its user (blank =
//   none); `status` is ignored (every job runs for its `duration_s`). A row whose `duration_s`
//   is blank (unknown in the source: the Alibaba trace's pods that never ran) is left out and
//   counted (kept, with a duration of 0, when ParseTrace is asked to: `--no-departures` runs
//   need no duration). A `num_gpus` between 0 and 1 (the Alibaba sharing trace: 0.46) is a
//   share of one GPU (issue #7): 460 milli-GPU, `--gpu-share 0.46`. Above 1, a fraction is
//   rounded UP to whole GPUs (a share is of one GPU; no trace has such rows). An optional
//   `after` column lists the job's dependencies as `gpufleet submit --after` takes them, on
//   the trace's ids, separated by `;` (a comma separates columns): `j12:ok;j13` waits for j12
//   to complete and for j13 to end. Each must name a job of an earlier row submitted no later.
//   An optional `class` column names the job's priority class (blank: the policy's default
//   class), as `gpufleet submit --priority` does; `gpufleet tune` writes recorded history so.
// - tiresias (the Tiresias simulator's job CSV): job_id,num_gpu,submit_time,iterations,
//   model_name,duration,interval. job_id, num_gpu, submit_time, duration and model_name (the
//   job's name, what the run-time predictor knows "the same job" by) are used; no team or
//   user.
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
#include "model/job.h"

namespace gf::sim {

// One dependency of a trace job (`after`): the trace id of an earlier job, and whether that
// job must complete (kOk) or only end (kAny), as `gpufleet submit --after ID[:ok]`.
struct TraceDependency {
  std::string job;
  DependencyKind kind = DependencyKind::kAny;
  bool operator==(const TraceDependency&) const = default;
};

struct TraceJob {
  std::string id;      // the trace's own job id, as written (shown in outputs)
  Millis submit{0};    // since the trace's origin
  Millis duration{0};  // run time from start to end when never interrupted
  int gpus = 1;        // whole GPUs (more than a node has: a gang, engine.h); 1 for a share
  int gpu_milli = 0;   // a share of one GPU (1..999 milli-GPU) for num_gpus < 1; 0 = whole GPUs
  std::string user{};  // "" = none
  std::string team{};  // "" = none
  std::string name{};  // the job's name (Tiresias' model_name); "" = none
  // Its priority class by name (normalized `class`; a recorded job's); "" = the policy's
  // default class. A class the policy does not list gets ClassPolicyFor's permissive one.
  std::string priority{};
  // The time limit it asked for (a recorded job's `--time`); nullopt = none, so the class's
  // default applies. The effective limit is EffectiveTimeLimit's, as under the controller.
  std::optional<std::chrono::seconds> time_limit{};
  std::vector<TraceDependency> after{};  // jobs it waits for (normalized `after`)
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
// `keep_unknown_duration`: rows with no duration_s are kept (duration 0) rather than left out.
Result<Trace> ParseTrace(std::string_view text,
                         const std::string& source,
                         std::optional<TraceFormat> format,
                         bool keep_unknown_duration = false);

// Reads and parses the file at `path`. Errors: kNotFound, kIo, or as ParseTrace.
Result<Trace> ReadTrace(const std::string& path,
                        std::optional<TraceFormat> format,
                        bool keep_unknown_duration = false);

// ReadTrace with the format named as `--format` takes it: "normalized", "tiresias", or "" (from
// the header). Errors: ParseTraceFormat's, or ReadTrace's.
Result<Trace> ReadTraceAs(const std::string& path,
                          std::string_view format_name,
                          bool keep_unknown_duration = false);

// The GPUs a job holds, a share counting its fraction: 2, or 0.46.
inline double GpusHeld(const TraceJob& job) {
  return job.gpu_milli > 0 ? job.gpu_milli / 1000.0 : job.gpus;
}

}  // namespace gf::sim
