#include "cli/job_ref.h"

#include <charconv>

namespace gf {

Result<std::int64_t> ParseJobId(const std::string& text) {
  std::int64_t id = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || ptr != text.data() + text.size() || id <= 0) {
    return InvalidArgument("JOB: '" + text +
                           "' is not a job id; use the number shown by "
                           "gpufleet submit or gpufleet queue");
  }
  return id;
}

}  // namespace gf
