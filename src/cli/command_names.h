// What gpufleet says about a command word it does not know (`gpufleet foo`, `gpufleet hold 21`):
// that it is none of its commands, the closest one, and where the list is. Plain functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gf {

// Levenshtein distance: the fewest one-character insertions, deletions and substitutions that
// turn `a` into `b`.
std::size_t EditDistance(std::string_view a, std::string_view b);

// "'foo' is not a gpufleet command; the closest is 'top' (gpufleet --help lists every
// command)". `known`: the commands a user may run; the closest is the first of the nearest,
// so give them sorted. Without any, the message leaves the suggestion out.
std::string UnknownCommandMessage(std::string_view word, const std::vector<std::string>& known);

}  // namespace gf
