#include "slurm/slurm_attribution.h"

#include "core/proc_cgroup.h"

#include "slurm/slurm_jobs.h"

namespace gf {
namespace {

std::optional<std::int64_t> PositiveNumber(std::string_view text) {
  const std::optional<std::int64_t> n = SlurmNumber(text);
  return n && *n > 0 ? n : std::nullopt;
}

// The job of one cgroup path: the first `job_<id>` component after a component that names
// Slurm ("slurm", "slurm_gpu01", "slurmstepd.scope", "gpu01_slurmstepd.scope").
std::optional<std::int64_t> JobOfPath(std::string_view path) {
  bool under_slurm = false;
  std::size_t pos = 0;
  while (pos < path.size()) {
    std::size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) {
      slash = path.size();
    }
    const std::string_view part = path.substr(pos, slash - pos);
    pos = slash + 1;
    if (under_slurm && part.starts_with("job_")) {
      return PositiveNumber(part.substr(4));
    }
    if (part.find("slurm") != std::string_view::npos) {
      under_slurm = true;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::int64_t> SlurmJobFromCgroup(std::string_view proc_cgroup) {
  for (const std::string_view path : CgroupPaths(proc_cgroup)) {
    if (const auto job = JobOfPath(path)) {
      return job;
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> EnvironValue(std::string_view environ_block,
                                             std::string_view name) {
  std::size_t pos = 0;
  while (pos < environ_block.size()) {
    std::size_t end = environ_block.find('\0', pos);
    if (end == std::string_view::npos) {
      end = environ_block.size();
    }
    const std::string_view entry = environ_block.substr(pos, end - pos);
    pos = end + 1;
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

int SlurmNodeRankFromEnviron(std::string_view environ_block) {
  const auto value = EnvironValue(environ_block, "SLURM_NODEID");
  const std::optional<std::int64_t> rank = value ? SlurmNumber(*value) : std::nullopt;
  return rank && *rank >= 0 && *rank <= 100000 ? static_cast<int>(*rank) : 0;
}

std::optional<std::int64_t> SlurmJobFromEnviron(std::string_view environ_block) {
  const auto value = EnvironValue(environ_block, "SLURM_JOB_ID");
  return value ? PositiveNumber(*value) : std::nullopt;
}

}  // namespace gf
