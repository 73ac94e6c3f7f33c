// Fuzz target: ParseScriptDirectives, the reader of a submitted script's #GPUFLEET and #SBATCH
// lines; BuildSubmitBody on the `--option=value` tokens of its #GPUFLEET lines (what `gpufleet
// submit script.sh` does with them, minus CLI11); and ReadSbatchLines on its #SBATCH lines, whose
// options then go through BuildSubmitBody too. Oracles: every #GPUFLEET token is non-empty and
// has no whitespace; an #SBATCH refusal is kInvalidArgument naming the script line; a warning is
// one line.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/sbatch_script.h"
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

// BuildSubmitBody on `options`: a body, or kInvalidArgument.
void CheckBody(gf::SubmitOptions options) {
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
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  const gf::ScriptDirectives directives = gf::ParseScriptDirectives(in);
  gf::SubmitOptions options;
  for (const std::string& token : directives.gpufleet) {
    GF_CHECK(!token.empty());
    for (char c : token) {
      GF_CHECK(std::isspace(static_cast<unsigned char>(c)) == 0);
    }
    ApplyToken(token, options);
  }
  CheckBody(options);
  gf::SlurmMapping mapping;
  mapping.partition = {{"gpu", "normal"}};
  mapping.qos = {{"urgent", "high"}};
  gf::Result<gf::SbatchOptions> sbatch = gf::ReadSbatchLines(directives.sbatch, "fuzz.sh", mapping);
  if (!sbatch.ok()) {
    GF_CHECK(sbatch.error().code == gf::ErrorCode::kInvalidArgument);
    GF_CHECK(sbatch.error().message.rfind("fuzz.sh line ", 0) == 0);
    return 0;
  }
  GF_CHECK(gf::NotHonouredWarning("fuzz.sh", sbatch->not_honoured).find('\n') == std::string::npos);
  CheckBody(sbatch->options);
  return 0;
}
