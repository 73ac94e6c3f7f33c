#include "sim/csv.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace gf::sim {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t comma = line.find(',');
    out.push_back(Trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) {
      return out;
    }
    line.remove_prefix(comma + 1);
  }
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    out += (out.empty() ? "" : ",") + name;
  }
  return out;
}

}  // namespace

Result<CsvTable> CsvTable::Open(std::string_view text,
                                std::string source,
                                const std::vector<CsvColumn>& columns) {
  CsvTable table(text, std::move(source));
  const std::optional<std::string_view> header = table.NextLine();
  if (!header) {
    return InvalidArgument(table.source_ +
                           ": empty file; expected a header line naming the columns");
  }
  for (std::string_view name : Split(*header)) {
    table.header_.emplace_back(name);
  }
  for (const CsvColumn& column : columns) {
    std::optional<std::size_t> found;
    for (std::size_t i = 0; i < table.header_.size(); ++i) {
      if (table.header_[i] == column.name) {
        found = i;
        break;
      }
    }
    if (!found && column.required) {
      return table.LineError("no column '" + std::string(column.name) + "' in the header (" +
                             Joined(table.header_) + ")");
    }
    table.index_.push_back(found);
  }
  return table;
}

std::optional<std::string_view> CsvTable::NextLine() {
  while (pos_ < text_.size()) {
    const std::size_t end = std::min(text_.find('\n', pos_), text_.size());
    std::string_view line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++line_number_;
    if (!Trim(line).empty()) {
      return line;
    }
  }
  return std::nullopt;
}

Result<std::optional<int>> CsvTable::Next() {
  const std::optional<std::string_view> line = NextLine();
  if (!line) {
    return std::optional<int>();
  }
  if (line->find('"') != std::string_view::npos) {
    return LineError("a quoted field; this reader takes plain comma-separated fields only");
  }
  fields_ = Split(*line);
  if (fields_.size() != header_.size()) {
    return LineError(std::to_string(fields_.size()) + " fields, but the header has " +
                     std::to_string(header_.size()) + " (" + Joined(header_) + ")");
  }
  return std::optional<int>(line_number_);
}

std::string_view CsvTable::Field(std::size_t column) const {
  const std::optional<std::size_t> at = index_.at(column);
  return at ? fields_.at(*at) : std::string_view();
}

Error CsvTable::FieldError(std::size_t column, const std::string& message) const {
  const std::optional<std::size_t> at = index_.at(column);
  const std::string where =
      at ? "column " + std::to_string(*at + 1) + " (" + header_.at(*at) + ")" : "a column";
  return LineError(where + ": " + message);
}

Error CsvTable::LineError(const std::string& message) const {
  return InvalidArgument(source_ + ":" + std::to_string(line_number_) + ": " + message);
}

Result<double> CsvTable::NonNegative(std::size_t column, std::string_view what) const {
  const std::string_view text = Field(column);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value) || value < 0) {
    return FieldError(
        column,
        "'" + std::string(text) + "' is not " + std::string(what) + " (a number, 0 or more)");
  }
  return value;
}

Result<std::string> ReadWholeFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) {
      return NotFound(std::string(what) + ": " + path + " does not exist");
    }
    return IoError(std::string(what) + ": cannot read " + path + ": " + ErrnoText(err));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return IoError(std::string(what) + ": error reading " + path);
  }
  return text.str();
}

Status WriteWholeFile(std::string_view flag, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    return IoError(std::string(flag) + ": cannot write " + path);
  }
  return OkStatus();
}

}  // namespace gf::sim
