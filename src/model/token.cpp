#include "model/token.h"

#include <array>
#include <string>
#include <utility>

namespace gf {
namespace {

// One table per enum: its names in order, so ToString and Parse cannot disagree.
constexpr std::array<std::pair<TokenKind, std::string_view>, 2> kKinds{{
    {TokenKind::kUser, "user"},
    {TokenKind::kNode, "node"},
}};

template <typename E, std::size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) {
      return name;
    }
  }
  return "unknown";
}

template <typename E, std::size_t N>
Result<E> Parse(const std::array<std::pair<E, std::string_view>, N>& table,
                std::string_view text,
                std::string_view what) {
  std::string names;
  for (const auto& [e, name] : table) {
    if (name == text) {
      return e;
    }
    names += names.empty() ? "" : ", ";
    names += name;
  }
  return InvalidArgument("unknown " + std::string(what) + " '" + std::string(text) + "'; use " +
                         names);
}

}  // namespace

std::string_view ToString(TokenKind k) {
  return NameOf(kKinds, k);
}
Result<TokenKind> ParseTokenKind(std::string_view s) {
  return Parse(kKinds, s, "token kind");
}

}  // namespace gf
