// Process inspection through /proc: one process's stat line, liveness that survives pid reuse,
// and the descendants of a process (followed through parent links, so descendants that left
// the job's process group or session with setsid are still found).
//
// Free functions; no state; safe from any thread. Linux only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "core/result.h"
#include "executor/job_files.h"

namespace gf::exec {

struct ProcStat {
  pid_t pid = 0;
  char state = '?';  // R, S, D, Z (zombie), T, X ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  std::uint64_t start_time = 0;  // clock ticks since boot (field 22)
};

// Parses one /proc/PID/stat line. The command name (field 2) may hold spaces and ')', so
// parsing starts after the last ')'. Errors: kInvalidArgument.
Result<ProcStat> ParseProcStat(std::string_view line);

// nullopt when the process does not exist (or vanished while being read).
std::optional<ProcStat> ReadProcStat(pid_t pid);

// The record of the calling process, for its pid file.
PidRecord SelfRecord();
// The record of `pid`; nullopt when it does not exist.
std::optional<PidRecord> RecordOf(pid_t pid);

// True when the process exists, is not a zombie, and started at record.start_time (so the pid
// was not reused by an unrelated process).
bool IsAlive(const PidRecord& record);

// Every process whose chain of parents leads to `root` (root excluded), zombies included, as
// seen in one scan of /proc. Processes may appear or vanish right after the scan: callers that
// must leave none behind repeat it.
std::vector<ProcStat> Descendants(pid_t root);

// Every process whose process group or session is `id`, from one scan of /proc. Used to find
// what is left of a job whose shim died: the job's main process called setsid, so its id names
// the job's session and group (and, while any member lives, the kernel does not hand the
// number out again).
std::vector<ProcStat> ProcessesInGroupOrSession(pid_t id);

// Every process whose environment (/proc/PID/environ: the strings it was exec'd with) holds
// `entry` ("NAME=value") exactly, from one scan of /proc; zombies have none and are never
// returned. It finds what is left of a job that left the job's process group and session and
// outlived its shim where no cgroup holds the job: every job process inherits GPUFLEET_JOB_TAG
// (cgroup.h JobTag). A best effort: a process may exec with another environment; a cgroup is the
// fence that holds. Processes whose environment this process may not read (another user's, for
// a caller that is not root) are not returned.
std::vector<ProcStat> ProcessesWithEnvironment(std::string_view entry);

// "SIGTERM" for 15; "signal 77" for numbers without a name.
std::string SignalName(int sig);

}  // namespace gf::exec
