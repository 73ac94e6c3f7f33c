// Fuzz target: ParseDuration, the parser of `--time` text, `#GPUFLEET --time=` directives and
// the API's "time_limit" strings. Oracle: an accepted duration is positive and survives
// FormatDuration → ParseDuration unchanged (what gpufleet prints, it must read back).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"
#include "core/duration.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  gf::Result<std::chrono::seconds> parsed = gf::ParseDuration(text);
  if (!parsed.ok()) {
    GF_CHECK(parsed.error().code == gf::ErrorCode::kInvalidArgument);
    return 0;
  }
  GF_CHECK(parsed->count() > 0);
  const std::string printed = gf::FormatDuration(*parsed);
  gf::Result<std::chrono::seconds> again = gf::ParseDuration(printed);
  GF_CHECK(again.ok());
  GF_CHECK(*again == *parsed);
  return 0;
}
