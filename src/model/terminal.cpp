#include "model/terminal.h"

#include <algorithm>
#include <charconv>

namespace gf {

Status ValidateTerminalSide(std::int64_t value, std::string_view field) {
  if (value < 1 || value > kMaxTerminalSide) {
    return InvalidArgument(std::string(field) + ": " + std::to_string(value) +
                           " is not a terminal size; give 1 to " +
                           std::to_string(kMaxTerminalSide));
  }
  return OkStatus();
}

Result<TerminalSize> ParseTerminalSize(std::string_view text, std::string_view field) {
  const std::size_t x = text.find('x');
  TerminalSize size;
  const auto number = [](std::string_view part, int& out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return !part.empty() && ec == std::errc() && end == part.data() + part.size();
  };
  if (x == std::string_view::npos || !number(text.substr(0, x), size.rows) ||
      !number(text.substr(x + 1), size.cols)) {
    return InvalidArgument(std::string(field) + ": '" + std::string(text) +
                           "' is not a terminal size; write ROWSxCOLS, e.g. 24x80");
  }
  GF_TRY(ValidateTerminalSide(size.rows, std::string(field) + " rows"));
  GF_TRY(ValidateTerminalSide(size.cols, std::string(field) + " columns"));
  return size;
}

std::optional<std::string_view> TerminalSizeText(
    const std::vector<std::pair<std::string, std::string>>& env) {
  const auto it = std::find_if(
      env.begin(), env.end(), [](const auto& kv) { return kv.first == kTerminalVariable; });
  return it == env.end() ? std::nullopt : std::optional<std::string_view>(it->second);
}

std::string FormatTerminalSize(const TerminalSize& size) {
  return std::to_string(size.rows) + "x" + std::to_string(size.cols);
}

}  // namespace gf
