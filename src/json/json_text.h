// JSON text from outside the process, read one way: ParseJsonText. Every JSON text gpufleet did
// not just build itself in memory goes through it: API request bodies (any local user can send
// one to the root daemon), the agent link both ways, the client's reading of server answers,
// and files read back from disk or the store. No other code calls nlohmann::json::parse.
//
// Why not plain json::parse: nlohmann builds values with an iterative parser, but almost
// everything done with a value afterwards recurses once per nesting level — dump(), ==, copy,
// even an error message quoting it. A 150 KB body of 75,000 '[' is well under the 1 MiB body
// limit and overflowed the daemon's stack (issue #20). So the depth limit holds while parsing,
// before any such operation can see the value: the parse runs on nlohmann's SAX interface (an
// explicit stack, no recursion) and stops at the first level beyond the limit. Duplicate keys
// in one object are refused too: json::parse keeps the last, so two readers of the same text
// (a proxy, a log, the daemon) could act on different values.
//
// Why its own module (gf_json) and not core: core depends on nothing but the standard library,
// and this header must expose nlohmann::json; a module that reads outside JSON links gf_json
// and says so in its target_link_libraries.
//
// Pure functions; thread-safe; they never throw (library exceptions become Errors).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace gf {

// 64 levels: the deepest document gpufleet writes (an agent report batch: batch, reports,
// samples, processes...) nests fewer than 10, so 64 leaves ample room for new fields, while
// any recursive operation on an accepted value stays within 64 frames: a few KiB of stack on
// any thread, ASan's larger frames included.
inline constexpr std::size_t kJsonMaxDepth = 64;

struct JsonLimits {
  // Arrays and objects open at once: "[]" is depth 1, "[[1]]" depth 2, a bare scalar depth 0.
  std::size_t max_depth = kJsonMaxDepth;
};

// Parses one complete JSON text (nothing but whitespace after it).
// Errors (kInvalidArgument; the message begins with `what`, e.g. "request body"):
//   "<what>: JSON nested deeper than 64 levels (the limit); flatten it"
//   "<what>: duplicate key \"PATH\" in object env; send each key once" (the object's path, e.g.
//     "nodes[2].gpus[0]", or "the top-level object")
//   "<what>: not valid JSON at line 1, column 9: <nlohmann's reason>" (shortened to 200 bytes)
//   kResourceExhausted when memory runs out.
Result<nlohmann::json> ParseJsonText(std::string_view text,
                                     std::string_view what,
                                     JsonLimits limits = {});

// At most about `max_bytes` of `value` as compact JSON text (what value.dump() begins with),
// followed by "..." when it was cut, for error messages that quote a value. Cut at a UTF-8
// character boundary, so the preview is itself valid UTF-8. Iterative, and its work is bounded
// by `max_bytes`, not by the size or depth of `value`: quoting the first bytes of a 1 MiB
// array costs no more than quoting a number.
std::string JsonPreview(const nlohmann::json& value, std::size_t max_bytes);

// `text` cut to at most `max_bytes` at a UTF-8 character boundary, with "..." appended when it
// was cut, and control characters and bytes that are not UTF-8 written as "\xNN"
// (core/printable_text.h). For quoting outside text in messages.
std::string TextPreview(std::string_view text, std::size_t max_bytes);

}  // namespace gf
