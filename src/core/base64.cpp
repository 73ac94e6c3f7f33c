#include "core/base64.h"

#include <algorithm>
#include <cstdint>

namespace gf {
namespace {

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t group = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      group = (group << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
    }
    for (std::size_t k = 0; k < 4; ++k) {
      out += k <= n ? kBase64Alphabet[(group >> (18 - 6 * k)) & 0x3FU] : '=';
    }
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text, std::string_view where) {
  if (text.size() % 4 != 0) {
    return InvalidArgument(std::string(where) + ": not base64 (length " +
                           std::to_string(text.size()) + " is not a multiple of 4)");
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t group = 0;
    std::size_t pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const bool last_group = i + 4 == text.size();
      if (c == '=' && last_group && k >= 2 && (k == 3 || text[i + 3] == '=')) {
        ++pad;
        group <<= 6;
        continue;
      }
      const std::size_t v = kBase64Alphabet.find(c);
      if (v == std::string_view::npos || pad > 0) {
        return InvalidArgument(std::string(where) + ": not base64 (bad character at " +
                               std::to_string(i + k) + ")");
      }
      group = (group << 6) | static_cast<std::uint32_t>(v);
    }
    for (std::size_t k = 0; k < 3 - pad; ++k) {
      out += static_cast<char>((group >> (16 - 8 * k)) & 0xFFU);
    }
  }
  return out;
}

}  // namespace gf
