// Fuzz target: JobSpecFromJson, the strict parser of POST /api/v1/jobs bodies (sent by any
// local user). The input is JSON text; text that nlohmann::json rejects is skipped (that parser
// is not ours). Beyond ASan/UBSan, the oracle is what the server does next: a parsed spec is
// echoed back through JobToJson(...).dump() and an error through ErrorToJson(...).dump(); both
// must not throw, and a parsed spec must satisfy the documented bounds.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "api/json_mapping.h"
#include "core/check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr, false);
  if (body.is_discarded()) {
    return 0;
  }
  gf::Result<gf::JobSpec> spec = gf::JobSpecFromJson(body);
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
