// What the long-running subcommands (`up`, `server`, `agent`) share: where state lives, the
// lock that keeps two daemons off one data dir, flag parsing, and the stop signals.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/gpu_self_test.h"
#include "agent/local_agent.h"
#include "agent/mps_daemons.h"
#include "agent/power_saver.h"
#include "api/api_server.h"
#include "config/config.h"
#include "core/result.h"
#include "executor/cgroup.h"
#include "notify/notifier.h"

namespace gf {

// root: /var/lib/gpufleet; others: ~/.local/share/gpufleet.
std::filesystem::path DefaultDataDir();
std::string Hostname();  // "localhost" when unknown
// The running binary (for `gpufleet shim`).
std::filesystem::path SelfExe();

// Creates `dir` (0700) and takes its lock: one daemon per data dir, or every job would start
// twice. Returns the lock's fd (held until exit). `command` names the daemon in the error.
Result<int> LockDataDir(const std::filesystem::path& dir, std::string_view command);

// A duration flag within [min, max]; the error names the flag and the accepted range.
Result<std::chrono::seconds> ParseFlagDuration(std::string_view flag,
                                               const std::string& text,
                                               std::chrono::seconds min,
                                               std::chrono::seconds max);

// The power policy of --idle-power-limit WATTS (0: off) and --idle-power-after DURATION (1s to
// 24h); nullopt when off. `limit_flag` and `after_flag` name them in errors (or the [up] keys
// that set them).
Result<std::optional<PowerSaverOptions>> PowerPolicyFromFlags(std::string_view limit_flag,
                                                              int limit_w,
                                                              std::string_view after_flag,
                                                              const std::string& after);

// The MPS control daemons of mps GPUs (agent/mps_daemons.h) from --mps-control: "auto" is
// nvidia-cuda-mps-control from PATH on NVIDIA GPUs (a --gpus nvml spec) and none on simulated
// ones; "none" is none; anything else names the program. Daemon directories: <data_dir>/mps.
MpsOptions MpsFromFlags(const std::string& control,
                        const std::string& gpus,
                        const std::filesystem::path& data_dir);

// The self-test of failed GPUs (agent/gpu_self_test.h) from --gpu-self-test COMMAND ("" = off)
// and --gpu-self-test-interval DURATION (1m to 7d), named in errors by the given flags or keys.
Result<GpuSelfTestOptions> SelfTestFromFlags(std::string_view command_flag,
                                             const std::string& command,
                                             std::string_view interval_flag,
                                             const std::string& interval);

// The notifier's settings from the [notify] table (defaults for what it leaves out), checked
// (ValidateNotifierOptions: the error names the key).
Result<NotifierOptions> NotifierOptionsFromConfig(const NotifyConfig& notify);

// `options` with the settings file's [api] limits on top (what the file leaves out keeps the
// value in `options`). The server checks them again at Start.
ApiServerOptions WithApiConfig(ApiServerOptions options, const ApiConfig& api);

// Blocks SIGINT and SIGTERM in this thread (call before any thread starts, so that only
// WaitForStopSignal sees them) and ignores SIGPIPE (a peer that hangs up must not kill us).
sigset_t BlockStopSignals();
// Waits for SIGINT or SIGTERM; returns the signal.
int WaitForStopSignal(const sigset_t& signals);
// Waits at most `timeout` for SIGINT or SIGTERM; returns the signal, or 0 when none came.
int WaitForStopSignal(const sigset_t& signals, std::chrono::milliseconds timeout);

// Raises the soft limit on open files to the hard limit and returns it: every agent holds two
// connections to the server (its command stream and its reports), so a thousand nodes need
// more than the usual soft limit of 1024.
std::uint64_t RaiseOpenFileLimit();

// The settings file to read: --config's value, else /etc/gpufleet/gpufleet.toml when it
// exists, else "" (none: the stock policy and the flags).
std::string SettingsFile(const std::string& flag);

// `--label KEY=VALUE` flags added to `labels` (a flag wins over what is there for its key).
// Errors: kInvalidArgument naming --label and the form.
Status AddLabelFlags(const std::vector<std::string>& flags,
                     std::map<std::string, std::string>& labels);

// The node's capacity for jobs' --cpus and --mem from --node-cpus, --node-mem, --reserve-cpus
// and --reserve-mem (text as given; "" = not given: detected, default reserve). Errors:
// kInvalidArgument naming the flag.
Result<HostCapacityOptions> HostCapacityFromFlags(const std::string& node_cpus,
                                                  const std::string& node_mem,
                                                  const std::string& reserve_cpus,
                                                  const std::string& reserve_mem);

// The banner's "containment:" line (executor/cgroup.h); a mode weaker than cgroup-v2 is also
// logged as a warning, so that it reaches the journal and not only a terminal.
std::string ContainmentBannerLine(const exec::Containment& containment);

// Makes every log line go through EscapeControl (core/printable_text.h): lines quote job
// names, causes, agents' and webhooks' answers, and a daemon's log is read on a terminal
// (journalctl, tail -f), where a control character of a user's would act. One place for every
// line, present and future, rather than a call at each that quotes outside text.
void EscapeControlInLogs();

// Prints "gpufleet COMMAND: MESSAGE" to stderr; returns the exit code 1.
int Die(std::string_view command, const Error& e);

}  // namespace gf
