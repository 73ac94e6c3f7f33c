#include "core/gpu_hours.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace gf {

std::string FormatGpuHours(double hours) {
  if (!std::isfinite(hours)) {
    return "-";
  }
  std::vector<char> text(64);
  std::snprintf(text.data(), text.size(), "%.4f", hours);
  std::string out(text.data());
  out.erase(out.find_last_not_of('0') + 1);
  if (!out.empty() && out.back() == '.') {
    out.pop_back();
  }
  return out == "-0" ? "0" : out;
}

}  // namespace gf
