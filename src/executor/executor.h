// Executor: starts, watches and stops jobs on this node, each under its own supervisor
// process (`gpufleet shim`, in the spirit of containerd-shim / conmon).
//
// The shim is started detached (double fork + setsid: not a child of the agent; forked by a
// fork server, see ExecutorOptions), so a job outlives a crash or restart of the agent; a new
// Executor over the same run_dir finds it again (Recover). Everything about one job lives in
// run_dir/<job id>/: spec.json (what to run), shim.pid, job.pid, stdout.log, stderr.log, kill.json
// (a kill request), exit.json (written by the shim when the job ends), reported (the agent
// acknowledged the exit); see job_files.h.
//
// Launching is asynchronous: StartLaunch starts the shim and returns; the shims of many launches
// start side by side. PollStarts then returns each job once its shim has recorded that the job
// runs (job.pid) or could not start (exit.json), and Poll reports a job's exit only after
// PollStarts has returned it: a job is always seen started before it is seen ended. The agent
// learns that there is something to poll from WatchFd (see shim_watch.h: pidfds of the shims,
// inotify on the folders of starting jobs), not from naps.
//
// Exits are reported at least once:
//  - Poll reports each exit once per Executor object;
//  - Acknowledge(job) marks the folder `reported` once the agent has made the exit durable
//    (sent to the controller / persisted). Recover skips acknowledged folders and re-tracks
//    every other one, so an exit the agent saw but did not persist before a crash is reported
//    again after the restart. Consumers must treat a repeated exit as a no-op.
//
// A shim that died without writing exit.json (SIGKILLed, OOM-killed, a crash) is reported with
// exit_code -1 (kSupervisorDiedExitCode: the job's own status is unknown; 128+9 would claim the
// job was SIGKILLed, which may not be true), no signal, and cause "supervisor process died".
// Poll first kills what is left of the job (its process group, its cgroup) and writes that
// exit.json itself, so the outcome is durable like any other.
//
// Privileges: a root agent runs each job as its owner (groups, gid, uid dropped in the job's
// process, verified); a non-root agent runs only jobs of its own uid (Launch returns
// kPermissionDenied, and the shim refuses as well).
//
// Not thread-safe: one owner thread (the agent's) calls every method. The Executor object
// holds no processes, only file descriptors to watch them (epoll, inotify, a pidfd per shim):
// destroying it leaves every job and shim running.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"
#include "executor/cgroup.h"
#include "executor/pid_record.h"
#include "model/job.h"

namespace gf {

namespace exec {
class ShimServerClient;
class ShimWatcher;
}  // namespace exec

// How long a shim may take to start its job before the launch is failed (and the shim
// SIGKILLed). Generous: a loaded node (or a sanitizer build) can take a while to start two
// processes; nothing takes this long normally.
inline constexpr std::chrono::seconds kStartDeadline{10};

struct LaunchSpec {
  JobId job;
  Owner owner;                    // the job runs as owner.uid/gid with owner's groups
  std::vector<std::string> argv;  // argv[0] is looked up in the job's PATH
  std::string workdir;            // absolute; the job starts there
  std::vector<std::pair<std::string, std::string>> env;  // added to the base environment
  std::vector<GpuUuid> gpus;  // CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES, by UUID
  // A task of a job array: GPUFLEET_ARRAY_JOB_ID / GPUFLEET_ARRAY_TASK_ID.
  std::optional<ArrayTask> array;
  // The job's name and the node it runs on: SLURM_JOB_NAME, SLURM_JOB_NODELIST (slurm_env.h)
  // and the %x and %N of its output file patterns (model/output_pattern.h). "" when not known.
  std::string name{};
  std::string node{};
  // Host limits (issue #24, Allocation::cpus/memory_mib): a CPU quota of `cpus` CPUs and a
  // memory limit (swap included) in the job's cgroup; 0 = not limited.
  int cpus = 0;
  std::int64_t memory_mib = 0;
};

// The exit code reported when the shim died and the job's own status is unknown.
inline constexpr int kSupervisorDiedExitCode = -1;

struct JobExit {
  JobId job;
  int exit_code = 0;          // the command's status; 128+N when killed by signal N;
                              // 127 not found, 126 could not start; -1 supervisor died
  std::optional<int> signal;  // the signal that ended it, if any
  Time end_time{};
  std::string cause;  // "exited with 0", "cancelled by alice: killed with SIGKILL
                      // after 10s grace", "failed to start: ...", ...
  // Processes of the job still alive after the executor tried to stop them (only when its shim
  // died: a live shim stops every process of its tree). Their GPUs must take no new work until
  // they are gone (the cause says so too).
  std::vector<exec::PidRecord> leftovers{};
  // What its processes used of the host, as its shim measured it (model/job.h HostUsage);
  // nullopt when the shim did not (the job did not start, the shim died).
  std::optional<HostUsage> host_usage{};
};

struct RecoveredJob {
  JobId job;
  std::int64_t shim_pid = 0;   // 0 when the shim never recorded itself
  bool still_running = false;  // false: it ended while nobody watched; Poll reports its exit
};

// A job whose shim has recorded that it runs (or that it could not start: then Poll reports
// that exit next).
struct StartedJob {
  JobId job;
  std::int64_t shim_pid = 0;
  // When StartLaunch began, before the job's process existed: its start time, which a short
  // job's end can never precede.
  Time launched{};
};

struct ExecutorOptions {
  // Start shims by fork from a shim server (exec/shim_server.h: `shim_exe shim-server`, exec'd
  // once) instead of exec'ing shim_exe for each launch: a launch then costs a fork, not an exec
  // and dynamic loading of the big binary. A launch the server cannot take falls back to exec
  // (the server is restarted for the next one). false: always exec.
  bool fork_server = true;
  // How long an interactive job's terminal (`gpufleet run`, terminal_relay.h) stays up with no
  // word from its client before the shim hangs up on the job. The client speaks every few
  // seconds; tests shorten this.
  std::chrono::seconds terminal_timeout{30};
};

// The options an agent runs with: the defaults, but GPUFLEET_SHIM_FORK_SERVER=0 turns the fork
// server off (an escape hatch, and the "before" side of a comparison).
ExecutorOptions ExecutorOptionsFromEnvironment();

struct LogPaths {
  std::filesystem::path stdout_path;
  std::filesystem::path stderr_path;
};

class Executor {
 public:
  // run_dir: where job folders live (created if absent). shim_exe: the gpufleet binary, started
  // as `shim_exe shim --job-dir DIR`, or once as `shim_exe shim-server --fd N` (the fork server;
  // its own output goes to run_dir/shim-server.log).
  Executor(std::filesystem::path run_dir,
           std::filesystem::path shim_exe,
           const Clock& clock,
           ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Writes the job's folder and starts its shim, without waiting for the job to run: PollStarts
  // returns the job once it does. A shim that dies before starting the job, or that has not
  // started it within kStartDeadline (it is then SIGKILLed), gets an exit.json written for it
  // (exit -1, "failed to start: ..."): PollStarts never returns that job, Poll reports the exit.
  // Errors (nothing was started, no folder is left): kInvalidArgument (empty argv, relative
  // workdir, bad env name, job id <= 0), kPermissionDenied (a non-root agent and another
  // owner), kAlreadyExists (the job is live here), kIo (the shim could not be started). A folder
  // left by an earlier, ended run of the same job id (a requeue) is renamed to "<id>.<end ms>".
  Status StartLaunch(const LaunchSpec& spec);

  // The launched jobs whose start became known since the last call, in the order found. Each
  // job is returned once per launch.
  std::vector<StartedJob> PollStarts();

  // StartLaunch, then waits (on WatchFd) until the shim has the job running or has recorded why
  // it could not start (e.g. exit 127 "failed to start: python: No such file or directory"):
  // returns the shim's pid; Poll reports the exit later. Other jobs' starts seen meanwhile are
  // kept for PollStarts. Errors: StartLaunch's, and kUnavailable when the shim died or hung
  // before starting the job (Poll reports that exit as well). For tests and simple callers.
  Result<std::int64_t> Launch(const LaunchSpec& spec);

  // Readable (POLLIN) when a shim has exited or a starting job's folder changed: then
  // PollStarts and Poll have something to find. -1 when the kernel offers no such fd.
  int WatchFd() const;
  // How long a caller waiting on WatchFd may sleep before polling anyway: `fallback`, or less
  // while a job that cannot be watched is starting, or a start deadline comes sooner.
  std::chrono::milliseconds CheckAgainWithin(std::chrono::milliseconds fallback) const;

  // Asks the shim to end the job: `first_signal` (SIGTERM, or the job's checkpoint signal when
  // it is preempted) to the job's whole process tree, then SIGKILL after `grace`. Returns at
  // once; Poll reports the exit. A job that already ended: OK, no effect.
  // kNotFound if the job is not known here.
  Status Kill(JobId job,
              std::chrono::seconds grace,
              const std::string& cause,
              int first_signal = SIGTERM);

  // Delivers `sig` to every process of the running job (its cgroup, process group and the
  // shim's descendants) without ending it: `gpufleet cancel --signal`, Slurm's `scancel
  // --signal`. The shim is asked with a queued signal that carries `sig` (job_files.h
  // SignalRequestSignal), so requests in a row are each delivered, in order. Returns once it is
  // queued. Errors: kNotFound (not known here), kInvalidArgument (not 1..SIGRTMAX, or SIGKILL),
  // kFailedPrecondition (still starting, or ended), kIo.
  Status Signal(JobId job, int sig);

  // Jobs that ended since the last call (each reported once per Executor, and only after
  // PollStarts has returned it when it was launched here; its folder is kept for logs).
  std::vector<JobExit> Poll();

  // After a restart: every job folder not yet acknowledged, with a shim that is alive or that
  // ended while nobody watched. Those jobs are tracked again (Kill, Poll work on them). A launch
  // caught before its shim recorded itself (no shim.pid yet) counts as running: it is adopted
  // once shim.pid appears, or failed (exit.json, which the shim then obeys) when none has
  // appeared kStartDeadline after spec.json was written.
  std::vector<RecoveredJob> Recover();

  // The jobs tracked here whose exit Poll has not reported yet, with their shim's pid (0 when
  // the shim never recorded itself), in job order. For attributing GPU processes to jobs.
  std::vector<std::pair<JobId, std::int64_t>> LiveShims() const;

  // Marks a reported exit as consumed, durably: Recover will not return the job again.
  // kNotFound if unknown, kFailedPrecondition if its exit has not been reported by Poll yet.
  Status Acknowledge(JobId job);

  // Deletes the job's folder (logs included) and forgets it. kFailedPrecondition while it runs.
  Status Remove(JobId job);

  LogPaths Logs(JobId job) const;
  std::filesystem::path JobDir(JobId job) const;
  // Where job folders live (the constructor's run_dir).
  const std::filesystem::path& RunDir() const { return run_dir_; }

  // Where the cgroup2 hierarchy is mounted; jobs launched afterwards go in
  // <root>/gpufleet/<agent>-job-<id> (cgroup.h) when it is a writable cgroup2 mount (checked by the
  // shim at run time; otherwise process group + descendant walk). Default
  // exec::DefaultCgroupRoot(): /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host; "" turns
  // cgroups off.
  void SetCgroupRoot(std::filesystem::path root);

  // How jobs launched now are contained: DetectContainment (cgroup.h) over the cgroup root.
  exec::Containment DescribeContainment() const;

  // The fork server's pid, 0 while none runs (not started yet, lost, or options.fork_server
  // off). For tests and diagnostics.
  pid_t ShimServerPid() const;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Tracked {
    std::int64_t shim_pid = 0;  // 0: not known yet (a launch caught by Recover mid-start, or
                                // one whose fork server was lost with the request)
    std::uint64_t shim_start_time = 0;
    bool exit_reported = false;
    bool starting = false;       // launched here; PollStarts has not returned it yet
    bool kill_deferred = false;  // Kill came while starting: the shim is signalled once started
    bool dirty = false;          // a notification came (or none can): look at its files
    Time launched{};
    SteadyTime start_deadline{};  // while starting, or while shim_pid is 0
  };

  Status PrepareJobDir(JobId job);
  Result<pid_t> StartShim(const LaunchSpec& spec, const std::filesystem::path& dir);
  std::optional<pid_t> StartShimByFork(const std::filesystem::path& dir);
  void AdoptRecordedShim(JobId job, Tracked& t);
  void TrackStarting(JobId job, pid_t shim_pid, Time launched);
  void Drain();
  std::optional<StartedJob> CheckStart(JobId job, Tracked& t);
  void FailStart(JobId job, Tracked& t, const std::string& why);
  bool AdoptShim(JobId job, Tracked& t);
  void Reattach(JobId job, Tracked& t);
  Status SignalShim(JobId job, const Tracked& t);
  bool NeedsLook(JobId job, const Tracked& t) const;
  std::optional<JobExit> CheckExit(JobId job, Tracked& t);
  JobExit EndWithoutShim(JobId job, std::string cause);
  std::vector<exec::PidRecord> KillTagged(JobId job);
  JobExit OnShimDied(JobId job);
  bool ShimAlive(const Tracked& t) const;

  std::filesystem::path run_dir_;
  std::filesystem::path shim_exe_;
  const Clock& clock_;
  std::filesystem::path cgroup_root_;
  std::chrono::seconds terminal_timeout_;
  std::map<JobId, Tracked> tracked_;
  std::vector<StartedJob> started_;  // found, not yet returned by PollStarts
  std::unique_ptr<exec::ShimWatcher> watcher_;
  std::unique_ptr<exec::ShimServerClient> server_;  // null: options.fork_server off
  bool server_trouble_logged_ = false;
};

// Entry point of `gpufleet shim --job-dir DIR`: runs one job to its end. Returns the process
// exit status of the shim itself (0 when exit.json was written).
int ShimMain(const std::filesystem::path& job_dir);

// Entry point of `gpufleet shim-server --fd N` (see ExecutorOptions::fork_server): starts shims
// for the Executor at the other end of socket `fd` until that end closes.
int ShimServerMain(int fd);

}  // namespace gf
