// Text from users (job names, commands, workdirs, reasons, team and user names) made safe to
// show: on a terminal (`queue`, `show`), in the daemon's log, in an e-mail header. One rule
// for every output, so that a byte the terminal would obey (ESC starting a colour, a cursor
// move or an OSC title, BEL, a CR that rewrites the line, NUL, the 8-bit CSI 0x9B) never
// reaches it from someone else's string.
//
// The rule: valid UTF-8 that is not a control character stays as it is (a user "jürgen", a
// job "训练" read normally); each byte of a C0 control (U+0000..U+001F), DEL (U+007F), a C1
// control (U+0080..U+009F, two bytes in UTF-8), a bidirectional formatting character (U+061C,
// U+200E, U+200F, U+202A..U+202E, U+2066..U+2069: an override reorders what a terminal shows)
// or a byte that is not part of valid UTF-8 becomes the four characters "\xNN" (lowercase hex). A
// backslash is kept as it is: the escape need not be reversible, only harmless; and so escaping is
// idempotent (escaped text escapes to itself), so a string may pass through more than one escaping
// sink.
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gf {

// `text` with every control character and invalid UTF-8 byte written as "\xNN" (see above).
std::string EscapeControl(std::string_view text);

// The byte offset of the first byte EscapeControl would escape; nullopt when the text is
// printable as it is. For input checks that refuse such text and say where.
std::optional<std::size_t> FindControl(std::string_view text);

// The byte offset of the first byte that does not start a valid UTF-8 sequence (controls are
// valid here); nullopt when all of `text` is valid UTF-8. For inputs that must be UTF-8 (TOML).
std::optional<std::size_t> FindInvalidUtf8(std::string_view text);

// At most `max_bytes` bytes of `text`, cut at a UTF-8 character boundary (never half a
// character, which would print as garbage).
std::string TruncateUtf8(std::string_view text, std::size_t max_bytes);

}  // namespace gf
