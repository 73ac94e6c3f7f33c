#include "core/printable_text.h"

#include <array>

namespace gf {
namespace {

bool IsContinuation(unsigned char byte) {
  return (byte & 0xC0U) == 0x80U;
}

enum class Controls { kInvalid, kValid };

// The bidirectional formatting characters (Unicode's Bidi_Control): U+061C, U+200E, U+200F,
// U+202A..U+202E and U+2066..U+2069. Not controls by category, but a terminal or viewer obeys
// them: an override makes "evil\u202Egpj.sh" read as "evilhs.jpg" and reorders columns of a
// table ("Trojan Source"), so EscapeControl treats them as controls.
bool IsBidiControl(std::string_view text, std::size_t i, std::size_t length) {
  const auto at = [&](std::size_t k) {
    return static_cast<unsigned char>(text[i + k]);
  };
  if (length == 2) {
    return at(0) == 0xD8U && at(1) == 0x9CU;
  }
  if (length != 3 || at(0) != 0xE2U) {
    return false;
  }
  const unsigned char second = at(1);
  const unsigned char third = at(2);
  return (second == 0x80U &&
          (third == 0x8EU || third == 0x8FU || (third >= 0xAAU && third <= 0xAEU))) ||
         (second == 0x81U && third >= 0xA6U && third <= 0xA9U);
}

// The length of the UTF-8 character at text[i] (1 to 4), or 0 when the byte at i does not
// start a valid sequence (a stray continuation byte, an overlong form, a surrogate, a value
// beyond U+10FFFF, a sequence cut short) or, with Controls::kInvalid, starts a C0 control, DEL
// or a C1 control or a bidirectional formatting character (what EscapeControl must escape).
std::size_t CharLength(std::string_view text, std::size_t i, Controls controls) {
  const bool printable_only = controls == Controls::kInvalid;
  const auto lead = static_cast<unsigned char>(text[i]);
  if (lead < 0x80U) {
    return printable_only && (lead < 0x20U || lead == 0x7FU) ? 0 : 1;
  }
  // The range of the second byte and the length, by lead byte (RFC 3629, table 3-7 of the
  // Unicode standard); the later bytes are plain continuation bytes.
  unsigned char low = 0x80U;
  unsigned char high = 0xBFU;
  std::size_t length = 0;
  if (lead >= 0xC2U && lead <= 0xDFU) {
    length = 2;
    if (lead == 0xC2U && printable_only) {
      low = 0xA0U;  // U+0080..U+009F are the C1 controls
    }
  } else if (lead >= 0xE0U && lead <= 0xEFU) {
    length = 3;
    low = lead == 0xE0U ? 0xA0U : 0x80U;   // not overlong
    high = lead == 0xEDU ? 0x9FU : 0xBFU;  // not a surrogate
  } else if (lead >= 0xF0U && lead <= 0xF4U) {
    length = 4;
    low = lead == 0xF0U ? 0x90U : 0x80U;   // not overlong
    high = lead == 0xF4U ? 0x8FU : 0xBFU;  // not beyond U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) {
    return 0;
  }
  const auto second = static_cast<unsigned char>(text[i + 1]);
  if (second < low || second > high) {
    return 0;
  }
  for (std::size_t k = 2; k < length; ++k) {
    if (!IsContinuation(static_cast<unsigned char>(text[i + k]))) {
      return 0;
    }
  }
  if (printable_only && IsBidiControl(text, i, length)) {
    return 0;
  }
  return length;
}

std::size_t PrintableLength(std::string_view text, std::size_t i) {
  return CharLength(text, i, Controls::kInvalid);
}

}  // namespace

std::string EscapeControl(std::string_view text) {
  constexpr std::array<char, 16> kHex = {
      '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t length = PrintableLength(text, i);
    if (length > 0) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    const auto byte = static_cast<unsigned char>(text[i]);
    out += "\\x";
    out += kHex[byte >> 4U];
    out += kHex[byte & 0x0FU];
    ++i;
  }
  return out;
}

std::optional<std::size_t> FindControl(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t length = PrintableLength(text, i);
    if (length == 0) {
      return i;
    }
    i += length;
  }
  return std::nullopt;
}

std::optional<std::size_t> FindInvalidUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t length = CharLength(text, i, Controls::kValid);
    if (length == 0) {
      return i;
    }
    i += length;
  }
  return std::nullopt;
}

std::string TruncateUtf8(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return std::string(text);
  }
  std::size_t cut = max_bytes;
  while (cut > 0 && IsContinuation(static_cast<unsigned char>(text[cut]))) {
    --cut;
  }
  return std::string(text.substr(0, cut));
}

}  // namespace gf
