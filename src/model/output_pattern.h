// Output file patterns: `--output slurm-%j.out`, `--error logs/%x-%A_%a.err` (Slurm's filename
// patterns, issue #23). The client checks a pattern at submit time; the job's supervisor expands
// it at launch, when the job's id, node and array index are known, and opens the file as the
// job's owner, relative to its working directory (executor/shim_child.cpp).
//
// A job carries its patterns in its environment, as GPUFLEET_OUTPUT and GPUFLEET_ERROR (the
// names below), so that they travel with the spec through the store, the API and the agents
// unchanged. Plain functions; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gf {

inline constexpr std::string_view kOutputVariable = "GPUFLEET_OUTPUT";
inline constexpr std::string_view kErrorVariable = "GPUFLEET_ERROR";

// What the placeholders stand for in one job.
struct OutputNames {
  std::int64_t job = 0;            // %j, %J
  std::int64_t array_job = 0;      // %A: the array's id; the job's own id when not in an array
  std::optional<int> array_index;  // %a; Slurm writes 4294967294 when the job is not in an array
  std::string name;                // %x
  std::string user;                // %u
  std::string node;                // %N
  int node_rank = 0;               // %n (and %t: one task per node)
};

// Checks a pattern: not empty, no NUL byte, and each '%' followed by an optional zero-padding
// width (one digit) and one of % A a j J N n s t u x. Errors: kInvalidArgument naming
// `field` ("--output"), the placeholder and the ones that exist.
Status ValidateOutputPattern(std::string_view pattern, std::string_view field);

// The file name for one job: each placeholder replaced (%4a → 0007), %% by '%'. Requires a
// pattern that ValidateOutputPattern accepts; an unknown placeholder is copied as it is.
std::string ExpandOutputPattern(std::string_view pattern, const OutputNames& names);

}  // namespace gf
