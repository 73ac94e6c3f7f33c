// Fuzz target: the settings parsers (src/config/config.h) on the same text: ParseConfig (the
// server's settings file, `gpufleet sim --policy`), ParseClientConfig (client.toml) and
// ParseClusterFile (`gpufleet sim --cluster`). Each runs CheckTomlShape (toml_guard.h) and then
// toml11. Oracle beyond ASan + UBSan: no crash (toml11 recurses: a deep text must be refused
// before it), errors are kInvalidArgument, an accepted policy passes ValidatePolicy, and an
// accepted client file has no empty server.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/check.h"
#include "scheduler/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  gf::Result<gf::Config> config = gf::ParseConfig(text, "fuzz.toml");
  if (config.ok()) {
    GF_CHECK(gf::ValidatePolicy(config->policy).ok());
  } else {
    GF_CHECK(config.error().code == gf::ErrorCode::kInvalidArgument);
  }

  gf::Result<gf::ClientConfig> client = gf::ParseClientConfig(text, "client.toml");
  if (client.ok()) {
    for (const std::string& server : client->servers) {
      GF_CHECK(!server.empty());
    }
  } else {
    GF_CHECK(client.error().code == gf::ErrorCode::kInvalidArgument);
  }

  gf::Result<std::vector<gf::ClusterFileNode>> cluster = gf::ParseClusterFile(text, "c.toml");
  if (cluster.ok()) {
    GF_CHECK(!cluster->empty());
  } else {
    GF_CHECK(cluster.error().code == gf::ErrorCode::kInvalidArgument);
  }
  return 0;
}
