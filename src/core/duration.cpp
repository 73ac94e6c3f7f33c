#include "core/duration.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <vector>

namespace gf {
namespace {

// The longest duration accepted: 100 years, the bound the API puts on a numeric time_limit.
// It keeps every sum far from int64 overflow, and what FormatDuration prints parseable again
// (a day count above 9 digits would not be).
constexpr std::int64_t kMaxSeconds = 100LL * 365 * 86400;

constexpr std::string_view kForms =
    "use e.g. 90s, 30m, 2h, 1d, 1h30m, 45 (minutes), MM:SS, HH:MM:SS or D-HH:MM:SS";

Error Bad(std::string_view text, std::string_view why) {
  return InvalidArgument("duration '" + std::string(text) + "' " + std::string(why) + "; " +
                         std::string(kForms));
}

bool ParseUint(std::string_view s, std::int64_t* out) {
  if (s.empty() || s.size() > 9) {
    return false;
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && *out >= 0;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

// "1h30m", "90s", "2d": number-unit pairs.
Result<std::int64_t> ParseUnits(std::string_view text) {
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') {
      ++j;
    }
    std::int64_t n = 0;
    if (!ParseUint(text.substr(i, j - i), &n) || j == text.size()) {
      return Bad(text, "is not a duration");
    }
    std::int64_t unit = 0;
    switch (text[j]) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      default:
        return Bad(text, "has an unknown unit");
    }
    total += n * unit;  // n * unit < 10^9 * 86400: no overflow while total <= kMaxSeconds
    if (total > kMaxSeconds) {
      return Bad(text, "is longer than 100 years");
    }
    i = j + 1;
  }
  return total;
}

// Slurm forms: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS".
Result<std::int64_t> ParseClockForm(std::string_view text) {
  std::int64_t days = 0;
  std::string_view rest = text;
  const bool has_days = rest.find('-') != std::string_view::npos;
  if (has_days) {
    auto dash = rest.find('-');
    if (!ParseUint(rest.substr(0, dash), &days)) {
      return Bad(text, "has a malformed day count");
    }
    rest = rest.substr(dash + 1);
  }
  auto parts = Split(rest, ':');
  if (parts.size() > 3) {
    return Bad(text, "has too many ':' fields");
  }
  std::vector<std::int64_t> v;
  for (auto p : parts) {
    std::int64_t n = 0;
    if (!ParseUint(p, &n)) {
      return Bad(text, "is not a duration");
    }
    v.push_back(n);
  }
  std::int64_t secs = 0;
  if (has_days) {  // D-HH[:MM[:SS]]
    secs = v[0] * 3600 + (v.size() > 1 ? v[1] * 60 : 0) + (v.size() > 2 ? v[2] : 0);
  } else if (v.size() == 1) {  // minutes
    secs = v[0] * 60;
  } else if (v.size() == 2) {  // MM:SS
    secs = v[0] * 60 + v[1];
  } else {  // HH:MM:SS
    secs = v[0] * 3600 + v[1] * 60 + v[2];
  }
  return days * 86400 + secs;
}

}  // namespace

Result<std::chrono::seconds> ParseDuration(std::string_view text) {
  if (text.empty()) {
    return Bad(text, "is empty");
  }
  const bool unit_form = text.find_first_of("smhd") != std::string_view::npos;
  Result<std::int64_t> secs = unit_form ? ParseUnits(text) : ParseClockForm(text);
  if (!secs.ok()) {
    return secs.error();
  }
  if (*secs <= 0) {
    return Bad(text, "must be longer than zero");
  }
  if (*secs > kMaxSeconds) {
    return Bad(text, "is longer than 100 years");
  }
  return std::chrono::seconds(*secs);
}

std::string FormatDuration(std::chrono::seconds d) {
  std::int64_t s = d.count();
  if (s <= 0) {
    return "0s";
  }
  std::string out;
  const std::pair<std::int64_t, char> units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
  for (auto [size, name] : units) {
    if (s >= size) {
      out += std::to_string(s / size);
      out += name;
      s %= size;
    }
  }
  return out;
}

std::string FormatRfc3339(Time t) {
  const std::int64_t ms = ToUnixMillis(t);
  // Floor division so that times before 1970 still print correctly.
  std::int64_t secs = ms / 1000;
  std::int64_t frac = ms % 1000;
  if (frac < 0) {
    frac += 1000;
    secs -= 1;
  }
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  std::array<char, 40> buf{};
  std::snprintf(buf.data(),
                buf.size(),
                "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                tm.tm_year + 1900,
                tm.tm_mon + 1,
                tm.tm_mday,
                tm.tm_hour,
                tm.tm_min,
                tm.tm_sec,
                static_cast<int>(frac));
  return buf.data();
}

std::string FormatUtcSeconds(Time t) {
  const std::int64_t ms = ToUnixMillis(t);
  const std::int64_t past_second = ((ms % 1000) + 1000) % 1000;  // also before 1970
  const std::int64_t up = past_second == 0 ? ms : ms - past_second + 1000;
  // "2023-11-14T22:13:21.000Z": the date and the time of day, without the fraction.
  const std::string rfc = FormatRfc3339(FromUnixMillis(up));
  return rfc.substr(0, 10) + " " + rfc.substr(11, 8) + " UTC";
}

}  // namespace gf
