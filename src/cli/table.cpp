#include "cli/table.h"

#include <algorithm>

#include "core/printable_text.h"

namespace gf {
namespace {

// Columns line up by characters, not bytes: "mps→exclusive" or a user "jürgen" is wider in
// bytes than on screen. Counts UTF-8 lead bytes (every byte but continuation bytes).
std::size_t Columns(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
  }));
}

}  // namespace

void Table::Print(std::ostream& out) const {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(rows_.size());
  for (const auto& row : rows_) {
    std::vector<std::string> safe;
    safe.reserve(row.size());
    for (const std::string& cell : row) {
      safe.push_back(EscapeControl(cell));
    }
    rows.push_back(std::move(safe));
  }
  std::vector<std::size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], Columns(row[i]));
    }
  };
  measure(header_);
  for (const auto& row : rows) {
    measure(row);
  }
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line.append(width[i] - Columns(row[i]) + 2, ' ');
      }
    }
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    out << line << '\n';
  };
  print(header_);
  for (const auto& row : rows) {
    print(row);
  }
}

}  // namespace gf
