#include "executor/executor.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "executor/cgroup.h"
#include "executor/detach.h"
#include "executor/host_limits.h"
#include "executor/job_files.h"
#include "executor/process_tree.h"
#include "executor/shim_server.h"
#include "executor/shim_watch.h"

namespace gf {
namespace {

namespace fs = std::filesystem;

// How often a starting job is looked at when its folder cannot be watched (no inotify).
constexpr std::chrono::milliseconds kUnwatchedStartNap{5};

std::chrono::steady_clock::time_point SteadyNow() {
  return std::chrono::steady_clock::now();
}

bool Exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

Status ValidateLaunch(const LaunchSpec& spec) {
  if (spec.job.value() <= 0) {
    return InvalidArgument("job id must be positive");
  }
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return InvalidArgument("job " + std::to_string(spec.job.value()) + ": argv is empty");
  }
  if (spec.workdir.empty() || spec.workdir[0] != '/') {
    return InvalidArgument("job " + std::to_string(spec.job.value()) +
                           ": workdir must be an absolute path, got '" + spec.workdir + "'");
  }
  for (const auto& [name, value] : spec.env) {
    if (name.empty() || name.find('=') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      return InvalidArgument("job " + std::to_string(spec.job.value()) +
                             ": bad environment name '" + name + "'");
    }
  }
  uid_t self = ::geteuid();
  if (self != 0 && spec.owner.uid != self) {
    return PermissionDenied("the agent runs as uid " + std::to_string(self) +
                            " and can run jobs only as that user, not as uid " +
                            std::to_string(spec.owner.uid) + " (" + spec.owner.user + ")");
  }
  return OkStatus();
}

std::optional<JobId> ParseJobDirName(const std::string& name) {
  if (name.empty() || name.size() > 18 || !std::all_of(name.begin(), name.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return std::nullopt;
  }
  std::int64_t id = std::stoll(name);
  if (id <= 0) {
    return std::nullopt;
  }
  return JobId(id);
}

// The last bytes of shim.log, for an error message about a shim that did not start.
std::string ShimLogTail(const fs::path& dir) {
  Result<std::string> text = exec::ReadWholeFile(dir / exec::kShimLogFile);
  if (!text.ok() || text->empty()) {
    return "";
  }
  std::string tail = text->size() > 400 ? text->substr(text->size() - 400) : *text;
  while (!tail.empty() && tail.back() == '\n') {
    tail.pop_back();
  }
  return "; shim.log: " + tail;
}

// The job's main process called setsid, so its pid names the job's session and process group.
// With the shim gone, those are what can still be found of the job without a cgroup (a
// descendant that called setsid itself is lost). The ids are used only when the number cannot
// have been handed to another process: the main process is alive with its recorded start time,
// or no process has that pid (the kernel keeps a pid number reserved while a group or session
// of that id has members).
void KillOrphans(const fs::path& dir) {
  Result<exec::PidRecord> main = exec::ReadPidRecord(dir / exec::kJobPidFile);
  if (!main.ok()) {
    return;
  }
  auto id = static_cast<pid_t>(main->pid);
  std::optional<exec::ProcStat> now = exec::ReadProcStat(id);
  if (now && now->start_time != main->start_time) {
    return;  // the number was reused
  }
  for (int round = 0; round < 3; ++round) {  // repeated: members may fork while being killed
    std::vector<exec::ProcStat> members = exec::ProcessesInGroupOrSession(id);
    if (members.empty()) {
      break;
    }
    for (const exec::ProcStat& p : members) {
      ::kill(p.pid, SIGKILL);
    }
  }
}

fs::path AbsolutePath(fs::path p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) {
    return p;  // relative it stays; the shim then resolves it from "/" and fails visibly
  }
  return abs;
}

// Why a launch is failed at its deadline (or once its shim is gone).
std::string WhyNotStarted(std::int64_t shim_pid, bool alive) {
  if (shim_pid == 0) {
    return "the supervisor never recorded itself";
  }
  return alive ? "the supervisor did not start the job within " +
                     std::to_string(kStartDeadline.count()) + "s"
               : "the supervisor exited before starting the job";
}

}  // namespace

Executor::Executor(fs::path run_dir, fs::path shim_exe, const Clock& clock, ExecutorOptions options)
    // Absolute: the shim runs from "/" (so it pins no mount) and gets the folder as an argument.
    : run_dir_(AbsolutePath(std::move(run_dir))),
      shim_exe_(AbsolutePath(std::move(shim_exe))),
      clock_(clock),
      cgroup_root_(exec::DefaultCgroupRoot()),
      terminal_timeout_(options.terminal_timeout),
      watcher_(std::make_unique<exec::ShimWatcher>()) {
  std::error_code ec;
  fs::create_directories(run_dir_, ec);  // a failure shows up as Launch's error
  if (options.fork_server) {
    // Started by the first launch, not here: an Executor that launches nothing costs nothing.
    server_ =
        std::make_unique<exec::ShimServerClient>(shim_exe_, run_dir_ / exec::kShimServerLogFile);
  }
}

Executor::~Executor() = default;

int Executor::WatchFd() const {
  return watcher_->Fd();
}

ExecutorOptions ExecutorOptionsFromEnvironment() {
  const char* fork_server = std::getenv("GPUFLEET_SHIM_FORK_SERVER");  // NOLINT: read at startup
  return ExecutorOptions{.fork_server = fork_server == nullptr || std::string(fork_server) != "0"};
}

pid_t Executor::ShimServerPid() const {
  return server_ ? server_->ServerPid() : 0;
}

void Executor::SetCgroupRoot(fs::path root) {
  cgroup_root_ = std::move(root);
}

exec::Containment Executor::DescribeContainment() const {
  return exec::DetectContainment(cgroup_root_);
}

fs::path Executor::JobDir(JobId job) const {
  return run_dir_ / std::to_string(job.value());
}

LogPaths Executor::Logs(JobId job) const {
  return {JobDir(job) / exec::kStdoutFile, JobDir(job) / exec::kStderrFile};
}

Status Executor::StartLaunch(const LaunchSpec& spec) {
  const Time launched = clock_.Now();
  GF_TRY(ValidateLaunch(spec));
  GF_TRY(PrepareJobDir(spec.job));
  fs::path dir = JobDir(spec.job);
  Result<pid_t> shim = StartShim(spec, dir);
  if (!shim.ok()) {
    // No shim ran: leave no folder that a later Recover would take for a dead job.
    std::error_code ec;
    fs::remove_all(dir, ec);
    return shim.error();
  }
  TrackStarting(spec.job, *shim, launched);
  return OkStatus();
}

// Watches the new shim's exit and its folder, then marks the job to be looked at once: what
// the shim wrote before the watches existed raised no event.
void Executor::TrackStarting(JobId job, pid_t shim_pid, Time launched) {
  Tracked t;
  t.shim_pid = shim_pid;
  t.starting = true;
  t.dirty = true;
  t.launched = launched;
  t.start_deadline = SteadyNow() + kStartDeadline;
  watcher_->Forget(job);
  if (std::optional<exec::PidRecord> live =
          shim_pid > 0 ? exec::RecordOf(shim_pid) : std::nullopt) {
    t.shim_start_time = live->start_time;
    watcher_->WatchShim(job, *live);
  }
  watcher_->WatchFolder(job, JobDir(job));
  tracked_[job] = t;
}

Result<std::int64_t> Executor::Launch(const LaunchSpec& spec) {
  GF_TRY(StartLaunch(spec));
  while (true) {
    for (StartedJob& s : PollStarts()) {
      started_.push_back(s);  // kept for the next PollStarts, ours included (taken below)
    }
    auto mine = std::find_if(
        started_.begin(), started_.end(), [&](const StartedJob& s) { return s.job == spec.job; });
    if (mine != started_.end()) {
      std::int64_t pid = mine->shim_pid;
      started_.erase(mine);
      return pid;
    }
    auto it = tracked_.find(spec.job);
    if (it == tracked_.end() || !it->second.starting) {
      Result<exec::ExitRecord> exit = exec::ReadExitRecord(JobDir(spec.job) / exec::kExitFile);
      return Unavailable("job " + std::to_string(spec.job.value()) + ": " +
                         (exit.ok() ? exit->cause : std::string("failed to start")));
    }
    // Not CheckAgainWithin: other jobs' exits, which this does not poll, must not make it spin.
    const Tracked& t = it->second;
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(t.start_deadline - SteadyNow());
    if (!watcher_->FolderWatched(spec.job) || !watcher_->ShimWatched(spec.job)) {
      wait = std::min(wait, kUnwatchedStartNap);
    }
    pollfd pfd{WatchFd(), POLLIN, 0};
    (void)::poll(&pfd,
                 pfd.fd >= 0 ? 1 : 0,
                 static_cast<int>(std::max(wait, std::chrono::milliseconds(0)).count()));
  }
}

std::vector<StartedJob> Executor::PollStarts() {
  Drain();
  for (auto& [job, t] : tracked_) {
    if (t.starting && NeedsLook(job, t)) {
      if (std::optional<StartedJob> s = CheckStart(job, t)) {
        started_.push_back(*s);
      }
    }
  }
  std::vector<StartedJob> out;
  out.swap(started_);
  return out;
}

void Executor::Drain() {
  for (JobId job : watcher_->Drain()) {
    if (auto it = tracked_.find(job); it != tracked_.end()) {
      it->second.dirty = true;
    }
  }
}

// A job needs looking at when a notification came for it, or when nothing would tell: its shim
// is not watched (gone, unknown, no pidfds), or it is starting unwatched or past its deadline.
bool Executor::NeedsLook(JobId job, const Tracked& t) const {
  if (t.dirty || !watcher_->ShimWatched(job)) {
    return true;
  }
  return t.starting && (!watcher_->FolderWatched(job) || SteadyNow() >= t.start_deadline);
}

std::chrono::milliseconds Executor::CheckAgainWithin(std::chrono::milliseconds fallback) const {
  using std::chrono::milliseconds;
  milliseconds wait = fallback;
  const auto now = SteadyNow();
  for (const auto& [job, t] : tracked_) {
    if (t.exit_reported) {
      continue;
    }
    if (t.dirty) {
      return milliseconds(0);
    }
    if (t.starting || t.shim_pid == 0) {
      if (!watcher_->FolderWatched(job)) {
        wait = std::min(wait, kUnwatchedStartNap);
      }
      auto left = std::chrono::ceil<milliseconds>(t.start_deadline - now);
      wait = std::min(wait, std::max(left, milliseconds(0)));
    }
  }
  return wait;
}

// The shim records job.pid once the job has exec'd, or exit.json when it could not start it.
std::optional<StartedJob> Executor::CheckStart(JobId job, Tracked& t) {
  t.dirty = false;
  const fs::path dir = JobDir(job);
  auto recorded = [&] {
    return Exists(dir / exec::kJobPidFile) || Exists(dir / exec::kExitFile);
  };
  if (t.shim_pid == 0) {
    AdoptRecordedShim(job, t);
  }
  if (!recorded()) {
    // An unknown shim (the fork server was lost with the request) counts as alive until the
    // deadline: it may still record itself.
    const bool alive = t.shim_pid == 0 || ShimAlive(t);
    if (alive && SteadyNow() < t.start_deadline) {
      return std::nullopt;
    }
    if (!recorded()) {  // a shim writes its files before it exits: look once more
      FailStart(job, t, WhyNotStarted(t.shim_pid, alive));
      return std::nullopt;
    }
  }
  t.starting = false;
  watcher_->UnwatchFolder(job);
  if (Result<exec::PidRecord> rec = exec::ReadPidRecord(dir / exec::kShimPidFile);
      rec.ok() && rec->pid == t.shim_pid) {
    t.shim_start_time = rec->start_time;
  }
  if (t.kill_deferred) {
    (void)SignalShim(job, t);  // a shim gone meanwhile is reported by Poll
  }
  return StartedJob{job, t.shim_pid, t.launched};
}

// A launch whose shim's pid is not known yet (the fork server was lost with the request): takes
// it from shim.pid once the shim has recorded itself, and watches it. The folder stays watched
// until the start is known.
void Executor::AdoptRecordedShim(JobId job, Tracked& t) {
  if (Result<exec::PidRecord> rec = exec::ReadPidRecord(JobDir(job) / exec::kShimPidFile);
      rec.ok()) {
    t.shim_pid = rec->pid;
    t.shim_start_time = rec->start_time;
    watcher_->WatchShim(job, *rec);
  }
}

// Ends a launch that did not start: the shim (hung, or never recorded) must not start the job
// later behind the agent's back. Ordered against the shim's own check (ShimMain reads exit.json
// right after writing shim.pid): exit.json first, then a SIGKILL of any shim recorded by then,
// so either the shim sees exit.json and stops, or this sees shim.pid and kills it.
void Executor::FailStart(JobId job, Tracked& t, const std::string& why) {
  const fs::path dir = JobDir(job);
  if (ShimAlive(t)) {
    ::kill(static_cast<pid_t>(t.shim_pid), SIGKILL);
  }
  (void)EndWithoutShim(job, "failed to start: " + why + ShimLogTail(dir));
  if (Result<exec::PidRecord> rec = exec::ReadPidRecord(dir / exec::kShimPidFile);
      rec.ok() && exec::IsAlive(*rec)) {
    ::kill(static_cast<pid_t>(rec->pid), SIGKILL);
  }
  t.starting = false;
  t.dirty = true;  // Poll reports the exit.json just written
  watcher_->Forget(job);
}

// A job recovered before its shim recorded itself: takes the shim's pid once shim.pid exists.
bool Executor::AdoptShim(JobId job, Tracked& t) {
  AdoptRecordedShim(job, t);
  if (t.shim_pid == 0) {
    return false;
  }
  watcher_->UnwatchFolder(job);
  if (t.kill_deferred) {
    (void)SignalShim(job, t);
  }
  return true;
}

Result<pid_t> Executor::StartShim(const LaunchSpec& spec, const fs::path& dir) {
  GF_TRY(exec::WriteFileAtomic(dir / exec::kSpecFile,
                               exec::SpecToJson({spec, cgroup_root_.string(), terminal_timeout_}),
                               0600));
  for (std::string_view name : {exec::kStdoutFile, exec::kStderrFile}) {
    GF_ASSIGN_OR_RETURN(int fd, exec::OpenLogFile(dir / name, spec.owner));
    ::close(fd);
  }
  if (server_) {
    if (std::optional<pid_t> pid = StartShimByFork(dir)) {
      return *pid;
    }
  }
  return exec::SpawnDetached({shim_exe_.string(), "shim", "--job-dir", dir.string()},
                             dir / exec::kShimLogFile);
}

// The shim's pid from the fork server; 0 when the server was lost with the request (a shim may
// run: the launch is tracked like one caught mid-start by Recover, adopted from shim.pid or
// failed at the deadline, never started twice); nullopt when nothing was started (the caller
// execs the shim instead). Trouble is logged as a warning once, then at debug level: a server
// that keeps failing must not flood the agent's log.
std::optional<pid_t> Executor::StartShimByFork(const fs::path& dir) {
  using Outcome = exec::ShimServerClient::Outcome;
  exec::ShimServerClient::Spawn spawn = server_->Start(dir);
  if (spawn.outcome == Outcome::kStarted) {
    return spawn.pid;
  }
  const bool lost = spawn.outcome == Outcome::kLost;
  const std::string what = spawn.why +
                           (lost ? "; the launch's supervisor is looked for in "
                                   "its folder"
                                 : "; this launch execs its supervisor") +
                           ", and the next launch starts a new shim server";
  if (!server_trouble_logged_) {
    spdlog::warn("executor: {}", what);
    server_trouble_logged_ = true;
  } else {
    spdlog::debug("executor: {}", what);
  }
  return lost ? std::optional<pid_t>(0) : std::nullopt;
}

// Creates the job's folder. A live job with this id: kAlreadyExists. The folder of an earlier
// run that ended (a requeued job starting again) is kept under another name, for its logs.
Status Executor::PrepareJobDir(JobId job) {
  fs::path dir = JobDir(job);
  std::error_code ec;
  fs::create_directories(run_dir_, ec);
  if (Exists(dir)) {
    Result<exec::PidRecord> shim = exec::ReadPidRecord(dir / exec::kShimPidFile);
    if (!Exists(dir / exec::kExitFile) && shim.ok() && exec::IsAlive(*shim)) {
      return MakeError(ErrorCode::kAlreadyExists,
                       "job " + std::to_string(job.value()) +
                           " is already running here (shim pid " + std::to_string(shim->pid) + ")");
    }
    fs::path old = dir;
    old += "." + std::to_string(ToUnixMillis(clock_.Now()));
    fs::rename(dir, old, ec);
    if (ec) {
      return IoError("cannot move aside " + dir.string() + ": " + ec.message());
    }
    tracked_.erase(job);
    watcher_->Forget(job);
  }
  if (!fs::create_directory(dir, ec) || ec) {
    return IoError("cannot create " + dir.string() + ": " + (ec ? ec.message() : "exists"));
  }
  fs::permissions(dir,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  return OkStatus();
}

Status Executor::Kill(JobId job,
                      std::chrono::seconds grace,
                      const std::string& cause,
                      int first_signal) {
  auto it = tracked_.find(job);
  if (it == tracked_.end()) {
    return NotFound("job " + std::to_string(job.value()) + " is not running here");
  }
  if (grace.count() < 0) {
    return InvalidArgument("kill grace must not be negative");
  }
  fs::path dir = JobDir(job);
  if (it->second.exit_reported || Exists(dir / exec::kExitFile)) {
    return OkStatus();
  }
  GF_TRY(exec::WriteKillRequest(dir / exec::kKillFile, {grace, cause, first_signal}));
  if (it->second.starting || it->second.shim_pid == 0) {
    // A shim that has not started the job may not have blocked SIGTERM yet, and would die of
    // it instead of reading kill.json: it is signalled once the start is known.
    it->second.kill_deferred = true;
    return OkStatus();
  }
  return SignalShim(job, it->second);
}

Status Executor::Signal(JobId job, int sig) {
  const std::string name = "job " + std::to_string(job.value());
  auto it = tracked_.find(job);
  if (it == tracked_.end()) {
    return NotFound(name + " is not running here");
  }
  const Tracked& t = it->second;
  if (sig <= 0 || sig > SIGRTMAX || sig == SIGKILL) {
    return InvalidArgument("signal " + std::to_string(sig) + " cannot be delivered to " + name);
  }
  if (t.exit_reported || Exists(JobDir(job) / exec::kExitFile)) {
    return FailedPrecondition(name + " has ended");
  }
  // Before its start is known the shim may not have blocked the request signal yet, and would
  // die of it (a real-time signal's default action), as of an early SIGTERM (see Kill).
  if (t.starting || t.shim_pid == 0) {
    return FailedPrecondition(name + " is still starting; signal it once it runs");
  }
  if (!ShimAlive(t)) {
    return FailedPrecondition(name + ": its supervisor is gone (its exit is being reported)");
  }
  sigval value{};
  value.sival_int = sig;
  if (::sigqueue(static_cast<pid_t>(t.shim_pid), exec::SignalRequestSignal(), value) != 0) {
    const int err = errno;
    return IoError("cannot signal the supervisor of " + name + ": " + ErrnoText(err));
  }
  return OkStatus();
}

// SIGTERM to the shim, which then reads kill.json. Only if the pid is still our shim; a dead
// shim is reported by Poll.
Status Executor::SignalShim(JobId job, const Tracked& t) {
  if (!ShimAlive(t)) {
    return OkStatus();
  }
  if (::kill(static_cast<pid_t>(t.shim_pid), SIGTERM) != 0 && errno != ESRCH) {
    int err = errno;
    return IoError("cannot signal the supervisor of job " + std::to_string(job.value()) + ": " +
                   ErrnoText(err));
  }
  return OkStatus();
}

std::vector<JobExit> Executor::Poll() {
  Drain();
  std::vector<JobExit> out;
  for (auto& [job, t] : tracked_) {
    // A starting job's exit waits for PollStarts to return it: started before ended.
    if (t.exit_reported || t.starting || !NeedsLook(job, t)) {
      continue;
    }
    if (std::optional<JobExit> e = CheckExit(job, t)) {
      out.push_back(std::move(*e));
      t.exit_reported = true;
      watcher_->Forget(job);
    }
  }
  return out;
}

std::optional<JobExit> Executor::CheckExit(JobId job, Tracked& t) {
  t.dirty = false;
  fs::path exit_path = JobDir(job) / exec::kExitFile;
  if (!Exists(exit_path)) {
    if (t.shim_pid == 0) {
      AdoptShim(job, t);
    }
    if (t.shim_pid == 0) {
      if (SteadyNow() < t.start_deadline) {
        return std::nullopt;
      }
      FailStart(job, t, "the supervisor never recorded itself");
    } else if (ShimAlive(t)) {
      return std::nullopt;
    } else if (!Exists(exit_path)) {
      // The shim writes exit.json before it exits, so once it is gone the file is there or
      // never will be.
      return OnShimDied(job);
    }
  }
  Result<exec::ExitRecord> r = exec::ReadExitRecord(exit_path);
  if (!r.ok()) {
    return JobExit{job,
                   kSupervisorDiedExitCode,
                   std::nullopt,
                   clock_.Now(),
                   "exit record unreadable: " + r.error().message};
  }
  return JobExit{.job = job,
                 .exit_code = r->exit_code,
                 .signal = r->signal,
                 .end_time = FromUnixMillis(r->end_ms),
                 .cause = r->cause,
                 .host_usage = r->usage};
}

// The shim is gone (or never started the job) without an exit record: ends what is left of the
// job (its process group and session, its cgroup), then records the exit as the shim would have.
JobExit Executor::EndWithoutShim(JobId job, std::string cause) {
  fs::path dir = JobDir(job);
  KillOrphans(dir);
  fs::path cgroup = exec::JobCgroup::PathFor(job, dir, cgroup_root_);
  if (!cgroup_root_.empty() && Exists(cgroup)) {
    exec::JobCgroup(cgroup).Signal(SIGKILL);
    (void)exec::JobCgroup(cgroup).Remove();  // fails while the killed processes linger; harmless
  }
  JobExit e{job, kSupervisorDiedExitCode, std::nullopt, clock_.Now(), std::move(cause)};
  e.leftovers = KillTagged(job);
  if (!cgroup_root_.empty()) {
    // Its cgroup v1 limit folders (host_limits.h), empty once its processes are gone; a folder
    // never made, or still holding a lingering process, is left (harmless: the next run of the
    // job reuses it).
    (void)exec::V1LimitGroups::For(exec::V1RootFor(cgroup_root_), exec::JobTag(job, dir)).Remove();
  }
  if (!e.leftovers.empty()) {
    std::string pids;
    for (const exec::PidRecord& r : e.leftovers) {
      pids += (pids.empty() ? "" : ", ") + std::to_string(r.pid);
    }
    e.cause += "; " + std::to_string(e.leftovers.size()) +
               " of its processes could not be stopped (pid " + pids +
               "): its GPUs take no new work until they end";
  }
  (void)exec::WriteExitRecord(dir / exec::kExitFile,
                              {e.exit_code, std::nullopt, ToUnixMillis(e.end_time), e.cause});
  return e;
}

// What escaped the process group and the session and outlived the shim, found by the job's tag
// in its environment (a cgroup, where there is one, has already ended them): SIGKILLed, and
// looked for again until none is left or kTaggedKillFor has passed (a process in the D state,
// stuck in a driver call, dies only when the call returns). Returns those still alive.
std::vector<exec::PidRecord> Executor::KillTagged(JobId job) {
  constexpr auto kTaggedKillFor = std::chrono::seconds(2);
  constexpr auto kLookAgainAfter = std::chrono::milliseconds(20);
  const std::string entry =
      std::string(exec::kJobTagVariable) + "=" + exec::JobTag(job, JobDir(job));
  const SteadyTime until = SteadyNow() + kTaggedKillFor;
  while (true) {
    std::vector<exec::ProcStat> found = exec::ProcessesWithEnvironment(entry);
    if (found.empty()) {
      return {};
    }
    if (SteadyNow() >= until) {
      std::vector<exec::PidRecord> left;
      left.reserve(found.size());
      for (const exec::ProcStat& p : found) {
        left.push_back({p.pid, p.start_time});
      }
      return left;
    }
    for (const exec::ProcStat& p : found) {
      ::kill(p.pid, SIGKILL);
    }
    std::this_thread::sleep_for(kLookAgainAfter);
  }
}

JobExit Executor::OnShimDied(JobId job) {
  std::string cause = "supervisor process died";
  if (Result<exec::KillRequest> k = exec::ReadKillRequest(JobDir(job) / exec::kKillFile); k.ok()) {
    cause += " (after a kill request: " + k->cause + ")";
  }
  return EndWithoutShim(job, cause);
}

bool Executor::ShimAlive(const Tracked& t) const {
  return t.shim_pid > 0 && exec::IsAlive({t.shim_pid, t.shim_start_time});
}

// A folder found by Recover: its shim from shim.pid, watched; without shim.pid (a launch caught
// mid-start, or a shim that died before recording itself) its folder is watched for shim.pid
// until kStartDeadline after spec.json was written.
void Executor::Reattach(JobId job, Tracked& t) {
  const fs::path dir = JobDir(job);
  t.dirty = true;
  if (Result<exec::PidRecord> rec = exec::ReadPidRecord(dir / exec::kShimPidFile); rec.ok()) {
    t.shim_pid = rec->pid;
    t.shim_start_time = rec->start_time;
    watcher_->WatchShim(job, *rec);
    return;
  }
  std::error_code ec;
  const fs::file_time_type written = fs::last_write_time(dir / exec::kSpecFile, ec);
  t.start_deadline = SteadyNow();  // no spec.json: nothing will ever start
  if (!ec) {
    const auto age = fs::file_time_type::clock::now() - written;
    t.start_deadline +=
        kStartDeadline - std::chrono::duration_cast<std::chrono::steady_clock::duration>(age);
  }
  watcher_->WatchFolder(job, dir);
}

std::vector<RecoveredJob> Executor::Recover() {
  std::vector<RecoveredJob> out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(run_dir_, ec)) {
    std::optional<JobId> job = ParseJobDirName(entry.path().filename().string());
    if (!job || !entry.is_directory(ec) || Exists(entry.path() / exec::kReportedFile)) {
      continue;
    }
    // Already tracked: keep its state.
    auto [it, inserted] = tracked_.emplace(*job, Tracked{});
    Tracked& t = it->second;
    if (inserted) {
      Reattach(*job, t);
    }
    bool launching = t.shim_pid == 0 && SteadyNow() < t.start_deadline;
    bool running = !Exists(entry.path() / exec::kExitFile) && (ShimAlive(t) || launching);
    out.push_back({*job, t.shim_pid, running});
  }
  std::sort(out.begin(), out.end(), [](const RecoveredJob& a, const RecoveredJob& b) {
    return a.job < b.job;
  });
  return out;
}

std::vector<std::pair<JobId, std::int64_t>> Executor::LiveShims() const {
  std::vector<std::pair<JobId, std::int64_t>> out;
  for (const auto& [job, t] : tracked_) {
    if (!t.exit_reported) {
      out.emplace_back(job, t.shim_pid);
    }
  }
  return out;
}

Status Executor::Acknowledge(JobId job) {
  auto it = tracked_.find(job);
  if (it == tracked_.end()) {
    return NotFound("job " + std::to_string(job.value()) + " is not known here");
  }
  if (!it->second.exit_reported) {
    return FailedPrecondition("job " + std::to_string(job.value()) +
                              ": its exit has not been reported yet");
  }
  return exec::WriteFileAtomic(JobDir(job) / exec::kReportedFile, "", 0644);
}

Status Executor::Remove(JobId job) {
  fs::path dir = JobDir(job);
  Result<exec::PidRecord> shim = exec::ReadPidRecord(dir / exec::kShimPidFile);
  if (!Exists(dir / exec::kExitFile) && shim.ok() && exec::IsAlive(*shim)) {
    return FailedPrecondition("job " + std::to_string(job.value()) + " is still running");
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) {
    return IoError("cannot remove " + dir.string() + ": " + ec.message());
  }
  tracked_.erase(job);
  watcher_->Forget(job);
  return OkStatus();
}

}  // namespace gf
