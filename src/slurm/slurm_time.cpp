#include "slurm/slurm_time.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace gf {
namespace {

// The digits of text[pos, pos + n) as a number; nullopt when any is not a digit.
std::optional<int> Digits(std::string_view text, std::size_t pos, std::size_t n) {
  if (pos + n > text.size()) {
    return std::nullopt;
  }
  int value = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) == 0) {
      return std::nullopt;
    }
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

Result<std::optional<std::chrono::seconds>> ParseSlurmTime(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  if (lower == "unlimited" || lower == "infinite") {
    return std::optional<std::chrono::seconds>();
  }
  const Error bad = InvalidArgument(
      "'" + std::string(text) +
      "' is not a Slurm time; use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. "
      "90, 1:30:00, 2-00:00:00) or UNLIMITED");
  std::int64_t days = 0;
  std::string_view rest = text;
  const std::size_t dash = text.find('-');
  if (dash != std::string_view::npos) {
    const std::string_view d = text.substr(0, dash);
    const auto [ptr, ec] = std::from_chars(d.data(), d.data() + d.size(), days);
    if (d.empty() || ec != std::errc() || ptr != d.data() + d.size() || days < 0 || days > 365000) {
      return bad;
    }
    rest = text.substr(dash + 1);
  }
  std::vector<std::int64_t> fields;
  for (std::size_t start = 0;;) {
    const std::size_t colon = rest.find(':', start);
    const std::string_view f =
        rest.substr(start, colon == std::string_view::npos ? colon : colon - start);
    std::int64_t n = 0;
    const auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), n);
    if (f.empty() || ec != std::errc() || ptr != f.data() + f.size() || n < 0 || n > 100'000'000) {
      return bad;
    }
    fields.push_back(n);
    if (colon == std::string_view::npos) {
      break;
    }
    start = colon + 1;
  }
  if (fields.size() > 3) {
    return bad;
  }
  std::int64_t seconds = 0;
  if (dash != std::string_view::npos) {  // D-HH, D-HH:MM, D-HH:MM:SS
    const std::int64_t weights[] = {3600, 60, 1};
    for (std::size_t i = 0; i < fields.size(); ++i) {
      seconds += fields[i] * weights[i];
    }
    seconds += days * 86400;
  } else if (fields.size() == 1) {  // MM
    seconds = fields[0] * 60;
  } else if (fields.size() == 2) {  // MM:SS
    seconds = fields[0] * 60 + fields[1];
  } else {  // HH:MM:SS
    seconds = fields[0] * 3600 + fields[1] * 60 + fields[2];
  }
  if (seconds == 0) {
    return std::optional<std::chrono::seconds>();  // Slurm: a zero limit is no limit
  }
  return std::optional(std::chrono::seconds(seconds));
}

std::optional<Time> ParseSlurmTimestamp(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS, exactly.
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  const auto year = Digits(text, 0, 4);
  const auto month = Digits(text, 5, 2);
  const auto day = Digits(text, 8, 2);
  const auto hour = Digits(text, 11, 2);
  const auto minute = Digits(text, 14, 2);
  const auto second = Digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second || *month < 1 || *month > 12 ||
      *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  tm.tm_isdst = -1;  // the zone's rules say whether daylight time applies
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) {
    return std::nullopt;
  }
  return FromUnixMillis(static_cast<std::int64_t>(t) * 1000);
}

}  // namespace gf
