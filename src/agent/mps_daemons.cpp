#include "agent/mps_daemons.h"

#include <algorithm>
#include <system_error>

#include <spdlog/spdlog.h>

#include "core/tool_run.h"

namespace gf {
namespace {

constexpr const char* kThreadPercentage = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";

// What takes a client to the daemon of the GPU whose directory is `dir`.
EnvList ClientEnvironment(const std::filesystem::path& dir) {
  return {{"CUDA_MPS_PIPE_DIRECTORY", (dir / "pipe").string()},
          {"CUDA_MPS_LOG_DIRECTORY", (dir / "log").string()}};
}

// The control program's environment: the one GPU its daemon serves, and the client's.
EnvList DaemonEnvironment(const GpuUuid& uuid, const std::filesystem::path& dir) {
  EnvList env{{"CUDA_VISIBLE_DEVICES", uuid.value()}};
  for (auto& kv : ClientEnvironment(dir)) {
    env.push_back(std::move(kv));
  }
  return env;
}

// "'/usr/bin/nvidia-cuda-mps-control'": the program as one word of a shell command.
std::string Quoted(const std::string& word) {
  std::string out = "'";
  for (const char c : word) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

}  // namespace

MpsDaemons::MpsDaemons(MpsOptions options) : options_(std::move(options)) {}

bool MpsDaemons::Wanted(const EnvList& env) {
  return std::any_of(
      env.begin(), env.end(), [](const auto& kv) { return kv.first == kThreadPercentage; });
}

bool MpsDaemons::Answers(const GpuUuid& uuid) const {
  return RunTool(ToolRun{.command = Quoted(options_.control),
                         .env = DaemonEnvironment(uuid, DirOf(uuid)),
                         .input = "get_server_list\n",
                         .timeout = options_.timeout})
      .passed;
}

Result<EnvList> MpsDaemons::Join(const GpuUuid& uuid) {
  if (options_.control.empty()) {
    return EnvList{};
  }
  const std::filesystem::path dir = DirOf(uuid);
  if (running_[uuid] || Answers(uuid)) {  // started by this agent, or by an earlier one
    running_[uuid] = true;
    return ClientEnvironment(dir);
  }
  std::error_code ec;
  std::filesystem::create_directories(dir / "pipe", ec);
  if (!ec) {
    std::filesystem::create_directories(dir / "log", ec);
  }
  if (ec) {
    return FailedPrecondition("mps: cannot create " + dir.string() + ": " + ec.message());
  }
  // Clients of every user reach the daemon's pipes.
  using std::filesystem::perms;
  std::filesystem::permissions(dir,
                               perms::owner_all | perms::group_read | perms::group_exec |
                                   perms::others_read | perms::others_exec,
                               ec);
  const ToolOutcome started = RunTool(ToolRun{.command = Quoted(options_.control) + " -d",
                                              .env = DaemonEnvironment(uuid, dir),
                                              .input = "",
                                              .timeout = options_.timeout});
  if (!started.passed) {
    return FailedPrecondition(
        "mps: could not start the MPS control daemon for GPU " + uuid.value() + " (" +
        options_.control + " -d: " + started.detail +
        (started.output.empty() ? "" : ": " + started.output) +
        "); install the CUDA MPS tools on this node (--mps-control names the program), or set "
        "the GPU to shared: gpufleet gpu mode NODE GPU shared");
  }
  spdlog::info("agent: MPS control daemon started for GPU {} ({})", uuid.value(), dir.string());
  running_[uuid] = true;
  return ClientEnvironment(dir);
}

void MpsDaemons::Leave(const GpuUuid& uuid) {
  if (options_.control.empty()) {
    return;
  }
  // Unknown to this agent: an earlier one may have left a daemon. Asked once per GPU.
  const auto [it, first] = running_.try_emplace(uuid, false);
  if (!it->second && !(first && Answers(uuid))) {
    return;
  }
  it->second = false;
  const ToolOutcome stopped = RunTool(ToolRun{.command = Quoted(options_.control),
                                              .env = DaemonEnvironment(uuid, DirOf(uuid)),
                                              .input = "quit\n",
                                              .timeout = options_.timeout});
  if (stopped.passed) {
    spdlog::info("agent: MPS control daemon of GPU {} told to quit: the GPU left mps mode",
                 uuid.value());
  } else {
    spdlog::warn("agent: MPS control daemon of GPU {} did not quit ({}): {}",
                 uuid.value(),
                 stopped.detail,
                 stopped.output);
  }
}

}  // namespace gf
