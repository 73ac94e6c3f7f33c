// Table: column-aligned text output for the CLI's human-readable views (like squeue).
// A plain value; not thread-safe.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gf {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Columns separated by two spaces; the last column is not padded (reasons can be long).
  // Every cell is printed through EscapeControl (core/printable_text.h): a cell holds other
  // users' text (job names, reasons), and a control character in it must neither drive the
  // reader's terminal nor break the row.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gf
