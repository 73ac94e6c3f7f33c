// A minimal reader of the comma-separated files the simulator takes (traces, machine lists):
// one header line naming the columns, then one record a line. No quoting: the trace files of
// ../shared/traces and the Tiresias inputs never quote, and a quote in a field is reported
// rather than guessed at. Blank lines are skipped; "\r\n" line ends are accepted.
//
// Every error names the source, the line number and, for a field, the column by number and
// header name: "trace.csv:17: column 3 (duration_s): 'abc' is not a number". Plain values:
// safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gf::sim {

// One column a file may have: its header name (compared after trimming spaces, as the Philly
// machine list writes "machineId, number of GPUs").
struct CsvColumn {
  std::string_view name;
  bool required = true;
};

class CsvTable {
 public:
  // Reads the header of `text` and finds `columns` in it (any order; other columns are
  // ignored). Errors: no header line; a required column missing (listing the header found).
  static Result<CsvTable> Open(std::string_view text,
                               std::string source,
                               const std::vector<CsvColumn>& columns);

  // The next record; nullopt at the end. Errors: a wrong number of fields, a quote.
  Result<std::optional<int>> Next();

  // The current record's field for `columns[column]` (trimmed); "" when the column is absent.
  std::string_view Field(std::size_t column) const;
  // Errors that name where: "SOURCE:LINE: column N (NAME): MESSAGE" and "SOURCE:LINE: MESSAGE".
  Error FieldError(std::size_t column, const std::string& message) const;
  Error LineError(const std::string& message) const;

  // The field parsed as a finite number >= 0; errors name the field and what it must be.
  Result<double> NonNegative(std::size_t column, std::string_view what) const;

 private:
  CsvTable(std::string_view text, std::string source) : text_(text), source_(std::move(source)) {}
  std::optional<std::string_view> NextLine();

  std::string_view text_;
  std::string source_;
  std::size_t pos_ = 0;
  int line_number_ = 0;
  std::vector<std::string> header_;
  std::vector<std::optional<std::size_t>> index_;  // column → header position
  std::vector<std::string_view> fields_;
};

// Whole file as text. Errors: kNotFound (names the path), kIo.
Result<std::string> ReadWholeFile(const std::string& path, std::string_view what);

// Writes `text` as the whole file at `path` (an output a flag named: `--jobs-csv`, `--write`).
// Errors: kIo "FLAG: cannot write PATH".
Status WriteWholeFile(std::string_view flag, const std::string& path, const std::string& text);

}  // namespace gf::sim
