#include "model/output_pattern.h"

#include <cctype>

namespace gf {
namespace {

// Slurm's value of %a for a job that is not an array task (its NO_VAL - 1).
constexpr std::string_view kNoArrayIndex = "4294967294";
constexpr std::string_view kPlaceholders = "%AajJNnstux";

// One "%<width><letter>" at `at` (the '%'): the width and the letter, or nullopt when the text
// there is not a placeholder.
struct Placeholder {
  std::size_t width = 0;
  char letter = 0;
  std::size_t length = 0;  // of the whole placeholder, '%' included
};

std::optional<Placeholder> PlaceholderAt(std::string_view pattern, std::size_t at) {
  std::size_t i = at + 1;
  std::size_t width = 0;
  while (i < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[i])) != 0 &&
         i - at <= 1) {
    width = width * 10 + static_cast<std::size_t>(pattern[i] - '0');
    ++i;
  }
  if (i >= pattern.size() || kPlaceholders.find(pattern[i]) == std::string_view::npos) {
    return std::nullopt;
  }
  return Placeholder{.width = width, .letter = pattern[i], .length = i - at + 1};
}

std::string Padded(std::string digits, std::size_t width) {
  if (digits.size() < width) {
    digits.insert(0, width - digits.size(), '0');
  }
  return digits;
}

}  // namespace

Status ValidateOutputPattern(std::string_view pattern, std::string_view field) {
  if (pattern.empty()) {
    return InvalidArgument(std::string(field) +
                           ": empty file name; give a path such as slurm-%j.out");
  }
  if (pattern.find('\0') != std::string_view::npos) {
    return InvalidArgument(std::string(field) + ": the file name holds a NUL byte");
  }
  for (std::size_t at = pattern.find('%'); at != std::string_view::npos;) {
    const std::optional<Placeholder> p = PlaceholderAt(pattern, at);
    if (!p) {
      const std::string_view bad = pattern.substr(at, 3);
      return InvalidArgument(std::string(field) + ": '" + std::string(bad) + "' in '" +
                             std::string(pattern) +
                             "' is not a file name placeholder; use %j (job id), %x (job name), "
                             "%A and %a (array job and index), %u (user), %N (node), %n (node "
                             "rank), %% (a '%'), with an optional width as in %4a");
    }
    at = pattern.find('%', at + p->length);
  }
  return OkStatus();
}

std::string ExpandOutputPattern(std::string_view pattern, const OutputNames& names) {
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = pattern.find('%'); at != std::string_view::npos;
       at = pattern.find('%', from)) {
    out.append(pattern.substr(from, at - from));
    const std::optional<Placeholder> p = PlaceholderAt(pattern, at);
    if (!p) {
      out += '%';
      from = at + 1;
      continue;
    }
    switch (p->letter) {
      case '%':
        out += '%';
        break;
      case 'A':
        out += Padded(std::to_string(names.array_job != 0 ? names.array_job : names.job), p->width);
        break;
      case 'a':
        out += names.array_index ? Padded(std::to_string(*names.array_index), p->width)
                                 : std::string(kNoArrayIndex);
        break;
      case 'j':
      case 'J':  // a batch script is its job's only step here
        out += Padded(std::to_string(names.job), p->width);
        break;
      case 'N':
        out += names.node;
        break;
      case 'n':
      case 't':  // one task per node: the task id is the node rank
        out += Padded(std::to_string(names.node_rank), p->width);
        break;
      case 's':
        out += "batch";
        break;
      case 'u':
        out += names.user;
        break;
      case 'x':
        out += names.name;
        break;
      default:
        break;
    }
    from = at + p->length;
  }
  out.append(pattern.substr(from));
  return out;
}

}  // namespace gf
