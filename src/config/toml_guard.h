// CheckTomlShape: the check every settings text passes before toml11 reads it (the server's
// settings file, the client's client.toml, `gpufleet sim`'s policy and cluster files).
//
// toml11 parses nested arrays, inline tables and dotted keys by recursion, and destroys a
// nested toml::value by recursion too, so a file of 100,000 `[` (or a key a.a.a.… that long)
// overflows the stack: a segfault, not an error. This pre-scan walks the text once, without
// recursion and without building anything, and refuses a text deeper than kMaxSettingsDepth or
// larger than kMaxSettingsBytes, naming the file, the line, the limit and the fix.
//
// It follows TOML's lexical rules only as far as nesting needs: the four kinds of strings
// (whose brackets and dots are text), comments, brackets and braces, table headers and dotted
// keys. It errs on the side of counting: where the text is not valid TOML it may count a level
// toml11 would never build, and toml11 then refuses the text anyway. A text it passes may
// still be invalid TOML; it is only guaranteed not to be too deep for toml11.
//
// A pure function: safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gf {

// The most bytes a settings text may have: real files have a few KiB.
inline constexpr std::size_t kMaxSettingsBytes = std::size_t{1} << 20;  // 1 MiB

// The most levels of nesting: each table header segment, each dotted key segment, each array
// and each inline table is one level ([a.b] x = [ { y.z = 1 } ] is 6). Real files need 5.
inline constexpr int kMaxSettingsDepth = 32;

// OkStatus when `text` is within both limits. Errors: kInvalidArgument naming `source_name`
// (and the line where the depth passes the limit), the limit and the fix.
Status CheckTomlShape(std::string_view text, const std::string& source_name);

}  // namespace gf
