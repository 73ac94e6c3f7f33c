// Fuzz target: ParseDirectives, the reader of a submitted script's #GPUFLEET lines, and then
// BuildSubmitBody on the `--option=value` tokens it finds (what `gpufleet submit script.sh`
// does with them, minus CLI11). Oracle: every token is non-empty and has no whitespace.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/submit_request.h"
#include "core/check.h"

namespace {

// "--gpus=2" → options.gpus = "2", for the options a directive line may set.
void ApplyToken(const std::string& token, gf::SubmitOptions& o) {
  const std::size_t eq = token.find('=');
  if (token.rfind("--", 0) != 0 || eq == std::string::npos) {
    return;
  }
  const std::string key = token.substr(2, eq - 2);
  std::string value = token.substr(eq + 1);
  if (key == "gpus") {
    o.gpus = value;
  } else if (key == "gpu-type") {
    o.gpu_type = value;
  } else if (key == "priority") {
    o.priority = value;
  } else if (key == "team") {
    o.team = value;
  } else if (key == "time") {
    o.time = value;
  } else if (key == "name") {
    o.name = value;
  } else if (key == "workdir") {
    o.workdir = value;
  } else if (key == "env") {
    o.env.push_back(value);
  } else if (key == "export") {
    o.export_env = value;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  const std::vector<std::string> tokens = gf::ParseDirectives(in);
  gf::SubmitOptions options;
  for (const std::string& token : tokens) {
    GF_CHECK(!token.empty());
    for (char c : token) {
      GF_CHECK(std::isspace(static_cast<unsigned char>(c)) == 0);
    }
    ApplyToken(token, options);
  }
  options.command = {"true"};  // no '/': BuildSubmitBody looks at no file
  const std::map<std::string, std::string> environ_vars = {{"HOME", "/home/fuzz"},
                                                           {"PATH", "/usr/bin:/bin"}};
  gf::Result<nlohmann::json> body = gf::BuildSubmitBody(options, "/home/fuzz", environ_vars);
  if (body.ok()) {
    // The client sends body->dump(); a byte that is not UTF-8 makes nlohmann throw, which the
    // CLI's main turns into an error message. That is handled, so it is not a finding here.
    try {
      (void)body->dump();
    } catch (const nlohmann::json::type_error&) {
    }
  } else {
    GF_CHECK(body.error().code == gf::ErrorCode::kInvalidArgument);
  }
  return 0;
}
