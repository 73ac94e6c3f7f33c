// Fuzz target: POST /api/v1/jobs bodies (sent by any local user) as the server reads them:
// ParseJsonText (json/json_text.h: depth limit, no duplicate keys), then JobSpecFromJson. The
// input is JSON text. Beyond ASan/UBSan, the oracle is what the server does next: a parsed spec
// is echoed back through JobToJson(...).dump() and an error through ErrorToJson(...).dump();
// both must not throw, errors are kInvalidArgument, and a parsed spec must satisfy the
// documented bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/json_mapping.h"
#include "core/check.h"
#include "json/json_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gf::Result<nlohmann::json> body =
      gf::ParseJsonText(std::string_view(reinterpret_cast<const char*>(data), size), "body");
  if (!body.ok()) {
    GF_CHECK(body.error().code == gf::ErrorCode::kInvalidArgument);
    (void)gf::ErrorToJson(body.error()).dump();
    return 0;
  }
  gf::Result<gf::JobSpec> spec = gf::JobSpecFromJson(*body);
  if (!spec.ok()) {
    GF_CHECK(spec.error().code == gf::ErrorCode::kInvalidArgument);
    (void)gf::ErrorToJson(spec.error()).dump();
    return 0;
  }
  GF_CHECK(!spec->argv.empty());
  GF_CHECK(spec->request.gpus >= 0);
  GF_CHECK(!spec->time_limit || spec->time_limit->count() > 0);
  gf::Job job;
  job.spec = *std::move(spec);
  (void)gf::JobToJson(job).dump();
  return 0;
}
