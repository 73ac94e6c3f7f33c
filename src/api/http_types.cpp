#include "api/http_types.h"

#include <algorithm>
#include <cctype>

namespace gf {

std::string_view ApiVersion() {
  return GF_VERSION;
}

std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() &&
        std::equal(key.begin(), key.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return value;
    }
  }
  return std::nullopt;
}

}  // namespace gf
