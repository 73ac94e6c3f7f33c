#include "cli/job_ref.h"

#include <charconv>

#include "api/api_client.h"

namespace gf {
namespace {

// A whole number >= `min` filling `text`, or nullopt.
std::optional<std::int64_t> WholeAtLeast(std::string_view text, std::int64_t min) {
  std::int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || n < min) {
    return std::nullopt;
  }
  return n;
}

Error NotAJob(const std::string& text) {
  return InvalidArgument("JOB: '" + text +
                         "' is not a job id; use the number shown by gpufleet submit or gpufleet "
                         "queue, or an array task as queue prints it (ARRAY_INDEX, e.g. 17_1)");
}

}  // namespace

Result<JobRef> ParseJobRef(const std::string& text) {
  const std::string_view view = text;
  const std::size_t underscore = view.find('_');
  const std::optional<std::int64_t> id = WholeAtLeast(view.substr(0, underscore), 1);
  if (!id) {
    return NotAJob(text);
  }
  JobRef ref{.id = *id, .array_index = std::nullopt};
  if (underscore != std::string::npos) {
    ref.array_index = WholeAtLeast(view.substr(underscore + 1), 0);
    if (!ref.array_index) {
      return NotAJob(text);
    }
  }
  return ref;
}

Result<std::int64_t> ParseArrayId(const std::string& text) {
  GF_ASSIGN_OR_RETURN(const JobRef ref, ParseJobRef(text));
  if (ref.array_index) {
    const std::string array = std::to_string(ref.id);
    return InvalidArgument("JOB: '" + text + "' is one task of array " + array +
                           "; --array takes the array's id (gpufleet cancel --array " + array +
                           "), or cancel the task alone: gpufleet cancel " + text);
  }
  return ref.id;
}

Result<std::int64_t> FindArrayTask(const JobRef& ref, const JobFetcher& fetch) {
  const std::int64_t wanted = ref.array_index.value_or(0);
  const std::string task = std::to_string(ref.id) + "_" + std::to_string(wanted);
  GF_ASSIGN_OR_RETURN(const nlohmann::json head, fetch(ref.id));
  const auto array_of = [](const nlohmann::json& job) {
    return job.value("array_job", nlohmann::json()).is_number_integer()
               ? job["array_job"].get<std::int64_t>()
               : std::int64_t{0};
  };
  if (array_of(head) != ref.id) {
    return InvalidArgument("JOB: " + task + ": job " + std::to_string(ref.id) +
                           " is not a job array; give its id alone (" + std::to_string(ref.id) +
                           ")");
  }
  const std::int64_t first = head.value("array_index", std::int64_t{0});
  std::int64_t lo = ref.id;
  std::int64_t hi = wanted >= first ? ref.id + (wanted - first) : ref.id - 1;
  bool dense_guess = true;  // the first probe: where the task is when no index is skipped
  while (lo <= hi) {
    const std::int64_t mid = dense_guess ? hi : lo + (hi - lo) / 2;
    dense_guess = false;
    Result<nlohmann::json> job = fetch(mid);
    if (!job.ok() && job.error().code != ErrorCode::kNotFound) {
      return job.error();
    }
    // Past the array's last task: an id of another job (or of one the caller may not see).
    if (!job.ok() || array_of(*job) != ref.id) {
      hi = mid - 1;
      continue;
    }
    const std::int64_t index = job->value("array_index", std::int64_t{-1});
    if (index == wanted) {
      return mid;
    }
    if (index < wanted) {
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return NotFound("JOB: array " + std::to_string(ref.id) + " has no task of index " +
                  std::to_string(wanted) + "; gpufleet queue lists its tasks (ARRAY column)");
}

Result<std::int64_t> ResolveJobId(const ClientContext& ctx, const std::string& text) {
  GF_ASSIGN_OR_RETURN(const JobRef ref, ParseJobRef(text));
  if (!ref.array_index) {
    return ref.id;  // no round trip for a plain id
  }
  GF_ASSIGN_OR_RETURN(const std::unique_ptr<ApiClient> client, OpenClient(ctx));
  return ResolveJobId(*client, text);
}

Result<std::int64_t> ResolveJobId(ApiClient& client, const std::string& text) {
  GF_ASSIGN_OR_RETURN(const JobRef ref, ParseJobRef(text));
  if (!ref.array_index) {
    return ref.id;
  }
  return FindArrayTask(ref, [&client](std::int64_t id) {
    return client.CallJson("GET", "/api/v1/jobs/" + std::to_string(id), std::nullopt);
  });
}

}  // namespace gf
