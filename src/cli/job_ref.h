// How the client commands read the job a user names on the command line (show, cancel, logs,
// explain, checkpoint, quota approve): a job id ("17"), or an array task as `gpufleet queue`
// prints it ("17_1": task of index 1 of array 17). Plain functions; no shared state.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/client_commands.h"
#include "core/result.h"

namespace gf {

// A job as typed: `id`, and for "ID_INDEX" the array task's index.
struct JobRef {
  std::int64_t id = 0;
  std::optional<std::int64_t> array_index;
};

// The id of a whole job array (`cancel --array 17`): "17". Errors: kInvalidArgument naming JOB;
// for one task ("17_1"), the array's id and how to cancel the task alone.
Result<std::int64_t> ParseArrayId(const std::string& text);

// "17" or "17_1". Errors: kInvalidArgument naming JOB and both forms.
Result<JobRef> ParseJobRef(const std::string& text);

// A job's JSON as GET /api/v1/jobs/ID answers it; kNotFound for a job that does not exist or
// that the caller may not see.
using JobFetcher = std::function<Result<nlohmann::json>(std::int64_t id)>;

// The job id of array task `ref` (array_index set). An array's tasks have consecutive ids from
// the array's, in index order, so the task of index I is at most I - first index after it: a
// binary search over those ids, which hits at once when the indices have no gaps. Errors:
// kInvalidArgument when `ref.id` is no array, kNotFound when it has no task of that index (or
// `fetch`'s error for the array itself).
Result<std::int64_t> FindArrayTask(const JobRef& ref, const JobFetcher& fetch);

// The job id `text` names, looking an array task up over `client`. Errors: ParseJobRef's,
// FindArrayTask's, the server's.
Result<std::int64_t> ResolveJobId(ApiClient& client, const std::string& text);
// The same over a client of its own, opened only for an array task.
Result<std::int64_t> ResolveJobId(const ClientContext& ctx, const std::string& text);

}  // namespace gf
