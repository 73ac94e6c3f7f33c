// Base64 (RFC 4648, with padding), one implementation for every user: bytes that travel in JSON,
// whose strings must be UTF-8 (a job's log chunk on the agent link, what a user types into a
// job's terminal). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gf {

std::string Base64Encode(std::string_view bytes);
// Errors: kInvalidArgument naming `where`, for a length that is not a multiple of 4, a
// character outside the alphabet, or padding anywhere but at the end.
Result<std::string> Base64Decode(std::string_view text, std::string_view where);

}  // namespace gf
