#include "cli/command_names.h"

#include <algorithm>
#include <numeric>

namespace gf {

std::size_t EditDistance(std::string_view a, std::string_view b) {
  // One row of the classic table at a time: row[j] is the distance between the prefix of `a`
  // done so far and b[0, j).
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string UnknownCommandMessage(std::string_view word, const std::vector<std::string>& known) {
  std::string out = "'" + std::string(word) + "' is not a gpufleet command";
  const auto closest = std::min_element(
      known.begin(), known.end(), [word](const std::string& x, const std::string& y) {
        return EditDistance(word, x) < EditDistance(word, y);
      });
  if (closest != known.end()) {
    out += "; the closest is '" + *closest + "' (gpufleet " + *closest + " --help)";
  }
  return out + "; gpufleet --help lists every command";
}

}  // namespace gf
