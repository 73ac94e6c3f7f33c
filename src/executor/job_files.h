// The files of one job folder (run_dir/<job id>/) and how they are read and written.
//
// The folder is the contract between the Executor (in the agent) and the shim (its own
// process): each file has one writer, and every file that is read while it may be changing
// is replaced atomically (write a temporary, fsync, rename, fsync the folder), so a reader
// sees either nothing or the whole record, even across a crash.
//
//   spec.json   Executor   what to run (LaunchSpec)
//   shim.pid    shim       "PID STARTTIME": the shim, with its start time so pid reuse is caught
//   job.pid     shim       the job's main process, once it has exec'd
//   kill.json   Executor   a kill request {grace_s, cause}; the shim reads it on SIGTERM
//   exit.json   shim       {exit_code, signal, end_ms, cause, cpu_ms, peak_memory_kib}; the
//                          Executor writes it instead (without the usage) when the shim died
//                          without doing so
//   reported    Executor   marker: the agent acknowledged the exit; Recover skips the folder
//   stdout.log, stderr.log the job's output, owned by the job's owner
//   tty.sock    shim       a job with a terminal: where keys come in (terminal_relay.h)
//   shim.log    shim       the shim's own stdout/stderr, for diagnosing the shim itself
//
// Free functions over paths; no shared state, safe from any thread.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "core/result.h"
#include "executor/executor.h"
#include "executor/pid_record.h"
#include "model/job.h"

namespace gf::exec {

inline constexpr std::string_view kSpecFile = "spec.json";
inline constexpr std::string_view kShimPidFile = "shim.pid";
inline constexpr std::string_view kJobPidFile = "job.pid";
inline constexpr std::string_view kKillFile = "kill.json";
inline constexpr std::string_view kExitFile = "exit.json";
inline constexpr std::string_view kReportedFile = "reported";
inline constexpr std::string_view kStdoutFile = "stdout.log";
inline constexpr std::string_view kStderrFile = "stderr.log";
inline constexpr std::string_view kShimLogFile = "shim.log";

// Whether a write must survive a crash of the host, or only be seen whole by readers.
enum class Durability { kSynced, kAtomicOnly };

// Replaces `path` with `content` atomically (a reader sees the old or the new file, whole) and,
// kSynced, durably (see above). Errors: kIo.
Status WriteFileAtomic(const std::filesystem::path& path,
                       std::string_view content,
                       mode_t mode = 0600,
                       Durability durability = Durability::kSynced);

// The whole file. Errors: kNotFound when absent, kIo otherwise.
Result<std::string> ReadWholeFile(const std::filesystem::path& path);

// job.pid is written kAtomicOnly: it matters only while the job may be alive, and no process
// outlives a crash of the host (its two fsyncs are on every launch's path). shim.pid stays
// kSynced: after a host crash it is what tells a job that was running (supervisor died) from a
// launch that never got that far.
Status WritePidRecord(const std::filesystem::path& path,
                      const PidRecord& record,
                      Durability durability = Durability::kSynced);
Result<PidRecord> ReadPidRecord(const std::filesystem::path& path);

struct ExitRecord {
  int exit_code = 0;
  std::optional<int> signal;
  std::int64_t end_ms = 0;
  std::string cause;
  // What the job's processes used of the host (model/job.h HostUsage), as the shim measured it;
  // nullopt when it could not (the job never started, the shim died, an older shim's file).
  std::optional<HostUsage> usage{};
};
Status WriteExitRecord(const std::filesystem::path& path, const ExitRecord& record);
Result<ExitRecord> ReadExitRecord(const std::filesystem::path& path);

struct KillRequest {
  std::chrono::seconds grace{0};
  std::string cause;
  int first_signal = SIGTERM;  // sent to the tree first; SIGKILL follows after `grace`
};
Status WriteKillRequest(const std::filesystem::path& path, const KillRequest& request);
Result<KillRequest> ReadKillRequest(const std::filesystem::path& path);

// `gpufleet cancel --signal` (Executor::Signal): the signal the Executor queues to a shim, with
// the signal to deliver to the job as its value (sigqueue's sival_int). A real-time signal, so
// that requests queue instead of merging (two in a row are both delivered) and no file is
// needed: nothing is left behind for a restarted shim to replay. SIGRTMIN is a run-time value in
// glibc (NPTL keeps the first two), the same in the agent and the shim (one binary).
inline int SignalRequestSignal() {
  return SIGRTMIN;
}

// spec.json: the LaunchSpec plus what the shim needs to know of the Executor's settings.
struct ShimSpec {
  LaunchSpec launch;
  std::string cgroup_root;  // the cgroup2 mount to put the job under; "" = no cgroup
  // ExecutorOptions::terminal_timeout: for a job with a terminal (GPUFLEET_PTY).
  std::chrono::seconds terminal_timeout{30};
};
std::string SpecToJson(const ShimSpec& spec);
// Errors: kInvalidArgument naming what is missing or malformed.
Result<ShimSpec> SpecFromJson(std::string_view json);

// Opens (creating if absent, mode 0640) a log file for appending, owned by `owner` when this
// process is root. O_NOFOLLOW: a planted symlink cannot redirect root's writes. Returns an fd
// with FD_CLOEXEC set; the caller closes it. Errors: kIo.
Result<int> OpenLogFile(const std::filesystem::path& path, const Owner& owner);

}  // namespace gf::exec
