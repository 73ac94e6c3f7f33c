#include "gpu/gpu_model_name.h"

#include <array>
#include <cctype>
#include <optional>
#include <vector>

namespace gf {
namespace {

// Marketed memory sizes of data-centre and workstation cards, in GB.
constexpr std::array<std::int64_t, 17> kCommonSizesGb = {
    8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 141, 144, 180, 192};

bool IsDigit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

std::vector<std::string_view> Split(std::string_view s, std::string_view separators) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find_first_of(separators, start);
    if (end == std::string_view::npos) {
      end = s.size();
    }
    if (end > start) {
      out.push_back(s.substr(start, end - start));
    }
    start = end + 1;
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool IsVendorWord(std::string_view token) {
  for (std::string_view w : {"NVIDIA", "Tesla", "GeForce", "Quadro"}) {
    if (EqualsIgnoreCase(token, w)) {
      return true;
    }
  }
  return false;
}

// "80GB" -> 80; anything else -> nullopt.
std::optional<std::int64_t> ParseSizeToken(std::string_view token) {
  if (token.size() < 3 || token.size() > 6) {
    return std::nullopt;
  }
  std::string_view suffix = token.substr(token.size() - 2);
  if (!EqualsIgnoreCase(suffix, "GB")) {
    return std::nullopt;
  }
  std::int64_t gb = 0;
  for (char c : token.substr(0, token.size() - 2)) {
    if (!IsDigit(c)) {
      return std::nullopt;
    }
    gb = gb * 10 + (c - '0');
  }
  if (gb <= 0) {
    return std::nullopt;
  }
  return gb;
}

bool HasDigit(std::string_view s) {
  for (char c : s) {
    if (IsDigit(c)) {
      return true;
    }
  }
  return false;
}

std::int64_t SizeFromMemory(std::int64_t memory_total_mib) {
  // Round to the nearest GiB (half up), in integers.
  std::int64_t gib = (memory_total_mib + 512) / 1024;
  for (std::int64_t size : kCommonSizesGb) {
    if (size >= gib) {
      return size;
    }
  }
  return gib;  // larger than any card we know: report what the driver says
}

}  // namespace

std::string NormalizeGpuModel(std::string_view nvml_name, std::int64_t memory_total_mib) {
  std::vector<std::string_view> words;
  for (std::string_view w : Split(nvml_name, " \t")) {
    if (!IsVendorWord(w)) {
      words.push_back(w);
    }
  }

  std::optional<std::int64_t> size_gb;
  for (std::string_view w : words) {
    for (std::string_view part : Split(w, "-")) {
      if (!size_gb) {
        size_gb = ParseSizeToken(part);
      }
    }
  }

  std::string family;
  if (!words.empty()) {
    std::vector<std::string_view> first = Split(words[0], "-");
    if (!first.empty() && !ParseSizeToken(first[0])) {
      family = std::string(first[0]);
    }
    if (!family.empty() && !HasDigit(family) && words.size() > 1) {
      std::vector<std::string_view> second = Split(words[1], "-");
      if (!second.empty() && !ParseSizeToken(second[0])) {
        family += second[0];
      }
    }
  }
  if (family.empty()) {
    family = "unknown";
  }

  if (!size_gb && memory_total_mib > 0) {
    size_gb = SizeFromMemory(memory_total_mib);
  }
  if (!size_gb) {
    return family;
  }
  return family + "-" + std::to_string(*size_gb) + "GB";
}

}  // namespace gf
