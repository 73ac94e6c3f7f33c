#include "gpu/sim/sim_proc_scan.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <system_error>

#include "slurm/slurm_attribution.h"

namespace gf {
namespace {

constexpr std::array<std::string_view, 2> kVisibleDeviceVars = {"CUDA_VISIBLE_DEVICES=",
                                                                "NVIDIA_VISIBLE_DEVICES="};
constexpr std::string_view kUuidPrefix = "GPU-";
constexpr std::string_view kMigUuidPrefix = "MIG-";
constexpr std::string_view kSpaces = " \t";

// A /proc entry name as a pid: digits only, fitting in 32 bits.
std::optional<std::uint32_t> ParsePid(std::string_view name) {
  if (name.empty() || name.size() > 10) {
    return std::nullopt;
  }
  std::uint64_t pid = 0;
  for (char c : name) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    pid = pid * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (pid > std::numeric_limits<std::uint32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(pid);
}

std::string_view Trim(std::string_view s) {
  std::size_t begin = s.find_first_not_of(kSpaces);
  if (begin == std::string_view::npos) {
    return {};
  }
  std::size_t end = s.find_last_not_of(kSpaces);
  return s.substr(begin, end - begin + 1);
}

// Adds the UUID entries of one comma-separated device list to `out`, skipping duplicates.
void AddUuids(std::string_view list, std::vector<std::string>& out) {
  while (!list.empty()) {
    std::size_t comma = list.find(',');
    std::string_view item = Trim(list.substr(0, comma));
    if ((item.starts_with(kUuidPrefix) || item.starts_with(kMigUuidPrefix)) &&
        std::find(out.begin(), out.end(), item) == out.end()) {
      out.emplace_back(item);
    }
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
}

// The whole file, or nullopt when it cannot be opened (permission, process gone).
std::optional<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::vector<std::string> VisibleGpuUuids(std::string_view environ_block) {
  std::vector<std::string> uuids;
  while (!environ_block.empty()) {
    std::size_t nul = environ_block.find('\0');
    std::string_view entry = environ_block.substr(0, nul);
    for (std::string_view var : kVisibleDeviceVars) {
      if (entry.substr(0, var.size()) == var) {
        AddUuids(entry.substr(var.size()), uuids);
      }
    }
    environ_block =
        nul == std::string_view::npos ? std::string_view() : environ_block.substr(nul + 1);
  }
  return uuids;
}

std::optional<std::int64_t> MemoryLimitMib(std::string_view environ_block) {
  const std::optional<std::string_view> digits =
      EnvironValue(environ_block, "GPUFLEET_GPU_MEMORY_LIMIT_MIB");
  if (!digits) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(digits->data(), digits->data() + digits->size(), value);
  if (error == std::errc() && end == digits->data() + digits->size() && value > 0) {
    return value;
  }
  return std::nullopt;
}

std::vector<std::string> SlurmIndexedGpuUuids(std::string_view environ_block,
                                              const SimSlurmNode& slurm) {
  std::vector<std::string> uuids;
  if (EnvironValue(environ_block, "SLURMD_NODENAME") != slurm.node) {
    return uuids;
  }
  std::string_view list = EnvironValue(environ_block, "CUDA_VISIBLE_DEVICES").value_or("");
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view item = Trim(list.substr(0, comma));
    std::size_t index = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (!item.empty() && error == std::errc() && end == item.data() + item.size() &&
        index < slurm.uuid_of_index.size() &&
        std::find(uuids.begin(), uuids.end(), slurm.uuid_of_index[index]) == uuids.end()) {
      uuids.push_back(slurm.uuid_of_index[index]);
    }
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return uuids;
}

SimGpuProcessTable ScanSimGpuProcesses(const std::filesystem::path& proc_root,
                                       SimMemoryLimits* limits,
                                       const SimSlurmNode* slurm) {
  SimGpuProcessTable table;
  std::error_code ec;
  // Increment with an error_code: a process that exits mid-scan must not throw.
  for (std::filesystem::directory_iterator it(proc_root, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::optional<std::uint32_t> pid = ParsePid(it->path().filename().native());
    if (!pid) {
      continue;
    }
    std::optional<std::string> environ_block = ReadFile(it->path() / "environ");
    if (!environ_block) {
      continue;
    }
    std::vector<std::string> uuids = VisibleGpuUuids(*environ_block);
    if (uuids.empty() && slurm != nullptr) {
      uuids = SlurmIndexedGpuUuids(*environ_block, *slurm);
    }
    for (std::string& uuid : uuids) {
      table[std::move(uuid)].push_back(*pid);
    }
    if (limits != nullptr && !uuids.empty()) {
      if (const std::optional<std::int64_t> limit = MemoryLimitMib(*environ_block)) {
        (*limits)[*pid] = *limit;
      }
    }
  }
  // readdir order is arbitrary; ascending pids make samples reproducible.
  for (auto& [uuid, pids] : table) {
    std::sort(pids.begin(), pids.end());
  }
  return table;
}

}  // namespace gf
