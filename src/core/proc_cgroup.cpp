#include "core/proc_cgroup.h"

namespace gf {

std::vector<std::string_view> CgroupPaths(std::string_view proc_cgroup) {
  std::vector<std::string_view> paths;
  std::size_t pos = 0;
  while (pos < proc_cgroup.size()) {
    std::size_t end = proc_cgroup.find('\n', pos);
    if (end == std::string_view::npos) {
      end = proc_cgroup.size();
    }
    const std::string_view line = proc_cgroup.substr(pos, end - pos);
    pos = end + 1;
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second != std::string_view::npos) {
      paths.push_back(line.substr(second + 1));
    }
  }
  return paths;
}

}  // namespace gf
