// Hexadecimal text of bytes, one implementation for every user: the store codec ({"hex": ...}
// for strings that are not UTF-8), PostgreSQL BYTEA, URL percent-escapes, token secrets.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gf {

// Two lowercase hex digits per byte.
std::string HexEncode(std::string_view bytes);
// The value of one hex digit (either case), or -1 if `c` is not one.
int HexDigitValue(char c);
// The bytes of `hex` (either case); nullopt for an odd length or a non-hex character.
std::optional<std::string> HexDecode(std::string_view hex);

// A URL query value: RFC 3986 unreserved characters stay, every other byte becomes %XX.
std::string PercentEncode(std::string_view text);
// application/x-www-form-urlencoded decoding ('+' is a space); a malformed escape is kept
// literally.
std::string PercentDecode(std::string_view text);

}  // namespace gf
