#include "cli/submit_request.h"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include "core/duration.h"
#include "model/job.h"

namespace gf {
namespace {

constexpr std::string_view kDirective = "#GPUFLEET";

// Variables the job must get from gpufleet, never from the submitter's shell.
bool Reserved(const std::string& name) {
  return name.rfind("GPUFLEET_", 0) == 0 || name == "CUDA_VISIBLE_DEVICES" ||
         name == "NVIDIA_VISIBLE_DEVICES";
}

bool ValidName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
    return false;
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_')) {
      return false;
    }
  }
  return true;
}

Result<int> ParseGpus(const std::string& text) {
  int n = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size() || n < 0) {
    return InvalidArgument("--gpus: '" + text +
                           "' is not a GPU count; use a whole number of GPUs, 0 or more "
                           "(e.g. --gpus 2)");
  }
  return n;
}

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string Absolute(const std::string& path, const std::string& cwd) {
  return !path.empty() && path[0] == '/' ? path : cwd + "/" + path;
}

}  // namespace

std::vector<std::string> ParseDirectives(std::istream& in) {
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line.rfind("#!", 0) == 0) {
      continue;
    }
    if (line.rfind(kDirective, 0) == 0) {
      std::istringstream words(line.substr(kDirective.size()));
      std::string word;
      while (words >> word) {
        tokens.push_back(word);
      }
      continue;
    }
    if (line[0] != '#') {
      break;  // directives end at the first command, as with #SBATCH
    }
  }
  return tokens;
}

Result<std::vector<std::string>> ReadDirectives(const std::string& script_path) {
  std::ifstream in(script_path);
  if (!in) {
    return InvalidArgument("script: cannot read '" + script_path + "'");
  }
  return ParseDirectives(in);
}

Result<nlohmann::json> BuildSubmitBody(const SubmitOptions& options,
                                       const std::string& cwd,
                                       const std::map<std::string, std::string>& environ_vars) {
  if (options.command.empty()) {
    return InvalidArgument(
        "command: nothing to run; give a command after '--' (gpufleet submit --gpus 1 -- "
        "python train.py) or a script file");
  }
  nlohmann::json body;
  std::vector<std::string> argv = options.command;
  struct stat st {};
  // A script file given by path: run it by its own interpreter line, or with /bin/sh.
  if (argv[0].find('/') != std::string::npos && stat(argv[0].c_str(), &st) == 0 &&
      S_ISREG(st.st_mode)) {
    argv[0] = Absolute(argv[0], cwd);
    if (!IsExecutable(argv[0])) {
      argv.insert(argv.begin(), "/bin/sh");
    }
  }
  body["command"] = argv;
  if (options.gpus) {
    GF_ASSIGN_OR_RETURN(int gpus, ParseGpus(*options.gpus));
    body["gpus"] = gpus;
  }
  if (options.gpu_type) {
    body["gpu_type"] = *options.gpu_type;
  }
  if (options.priority) {
    auto p = ParsePriorityClass(*options.priority);
    if (!p.ok()) {
      return InvalidArgument("--" + p.error().message);
    }
    body["priority"] = *options.priority;
  }
  if (options.time) {
    auto t = ParseDuration(*options.time);
    if (!t.ok()) {
      return InvalidArgument("--time: " + t.error().message);
    }
    body["time_limit"] = t->count();
  }
  if (options.checkpoint_signal) {
    auto signal = ParseCheckpointSignal(*options.checkpoint_signal);
    if (!signal.ok()) {
      return InvalidArgument("--checkpoint-signal: " + signal.error().message);
    }
    body["checkpoint_signal"] = CheckpointSignalName(*signal);
  }
  if (options.team) {
    body["team"] = *options.team;
  }
  if (options.name) {
    body["name"] = *options.name;
  }
  body["workdir"] = Absolute(options.workdir.value_or(cwd), cwd);
  nlohmann::json env = nlohmann::json::object();
  if (options.export_env == "ALL") {
    for (const auto& [k, v] : environ_vars) {
      if (ValidName(k) && !Reserved(k)) {
        env[k] = v;
      }
    }
  } else if (options.export_env != "NONE") {
    return InvalidArgument("--export: '" + options.export_env + "' is not ALL or NONE");
  }
  for (const auto& kv : options.env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || !ValidName(kv.substr(0, eq))) {
      return InvalidArgument("--env: '" + kv +
                             "' is not KEY=VALUE with a name of letters, digits and '_'");
    }
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  body["env"] = env;
  return body;
}

}  // namespace gf
