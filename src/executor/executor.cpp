#include "executor/executor.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include "executor/cgroup.h"
#include "executor/detach.h"
#include "executor/job_files.h"
#include "executor/process_tree.h"

namespace gf {
namespace {

namespace fs = std::filesystem;

// How long Launch waits for the shim to have the job running. Generous: a loaded node (or a
// sanitizer build) can take a while to start two processes; nothing waits this long normally.
constexpr std::chrono::seconds kStartDeadline{10};

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

bool ProcessGone(pid_t pid) {
  std::optional<exec::ProcStat> st = exec::ReadProcStat(pid);
  return !st || st->state == 'Z' || st->state == 'X';
}

}  // namespace

Executor::Executor(fs::path run_dir, fs::path shim_exe, const Clock& clock)
    // Absolute: the shim runs from "/" (so it pins no mount) and gets the folder as an argument.
    : run_dir_(AbsolutePath(std::move(run_dir))),
      shim_exe_(AbsolutePath(std::move(shim_exe))),
      clock_(clock),
      cgroup_root_(exec::kCgroupRoot) {
  std::error_code ec;
  fs::create_directories(run_dir_, ec);  // a failure shows up as Launch's error
}

void Executor::SetCgroupRoot(fs::path root) {
  cgroup_root_ = std::move(root);
}

fs::path Executor::JobDir(JobId job) const {
  return run_dir_ / std::to_string(job.value());
}

LogPaths Executor::Logs(JobId job) const {
  return {JobDir(job) / exec::kStdoutFile, JobDir(job) / exec::kStderrFile};
}

Result<std::int64_t> Executor::Launch(const LaunchSpec& spec) {
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
  return WaitForStart(spec.job, *shim);
}

Result<pid_t> Executor::StartShim(const LaunchSpec& spec, const fs::path& dir) {
  GF_TRY(exec::WriteFileAtomic(
      dir / exec::kSpecFile, exec::SpecToJson({spec, cgroup_root_.string()}), 0600));
  for (std::string_view name : {exec::kStdoutFile, exec::kStderrFile}) {
    GF_ASSIGN_OR_RETURN(int fd, exec::OpenLogFile(dir / name, spec.owner));
    ::close(fd);
  }
  return exec::SpawnDetached({shim_exe_.string(), "shim", "--job-dir", dir.string()},
                             dir / exec::kShimLogFile);
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

// Polls (no fixed sleep) until the shim records job.pid or exit.json.
Result<std::int64_t> Executor::WaitForStart(JobId job, pid_t shim_pid) {
  fs::path dir = JobDir(job);
  auto deadline = std::chrono::steady_clock::now() + kStartDeadline;
  auto nap = std::chrono::milliseconds(1);
  while (true) {
    bool started = Exists(dir / exec::kJobPidFile) || Exists(dir / exec::kExitFile);
    if (started) {
      Result<exec::PidRecord> rec = exec::ReadPidRecord(dir / exec::kShimPidFile);
      std::optional<exec::PidRecord> live = exec::RecordOf(shim_pid);
      std::uint64_t start = rec.ok() ? rec->start_time : (live ? live->start_time : 0);
      Tracked t{shim_pid, start, false};
      tracked_[job] = t;
      return static_cast<std::int64_t>(shim_pid);
    }
    bool gone = ProcessGone(shim_pid);
    if (gone && !Exists(dir / exec::kJobPidFile) && !Exists(dir / exec::kExitFile)) {
      return Unavailable("job " + std::to_string(job.value()) +
                         ": the supervisor exited before starting the job" + ShimLogTail(dir));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      break;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::milliseconds(20));
  }
  // A shim that hangs must not start the job later behind the agent's back.
  ::kill(shim_pid, SIGKILL);
  exec::ExitRecord rec{kSupervisorDiedExitCode,
                       std::nullopt,
                       ToUnixMillis(clock_.Now()),
                       "failed to start: the supervisor did not start the job in time"};
  (void)exec::WriteExitRecord(dir / exec::kExitFile, rec);
  (void)exec::WriteFileAtomic(dir / exec::kReportedFile, "");
  return Unavailable("job " + std::to_string(job.value()) +
                     ": the supervisor did not start the job within " +
                     std::to_string(kStartDeadline.count()) + "s" + ShimLogTail(dir));
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
  // Only signal the pid if it is still our shim; a dead shim is reported by Poll.
  if (!ShimAlive(it->second)) {
    return OkStatus();
  }
  if (::kill(static_cast<pid_t>(it->second.shim_pid), SIGTERM) != 0 && errno != ESRCH) {
    int err = errno;
    return IoError("cannot signal the supervisor of job " + std::to_string(job.value()) + ": " +
                   ErrnoText(err));
  }
  return OkStatus();
}

std::vector<JobExit> Executor::Poll() {
  std::vector<JobExit> out;
  for (auto& [job, t] : tracked_) {
    if (t.exit_reported) {
      continue;
    }
    if (std::optional<JobExit> e = CheckExit(job, t)) {
      out.push_back(std::move(*e));
      t.exit_reported = true;
    }
  }
  return out;
}

std::optional<JobExit> Executor::CheckExit(JobId job, const Tracked& t) {
  fs::path exit_path = JobDir(job) / exec::kExitFile;
  if (!Exists(exit_path)) {
    if (ShimAlive(t)) {
      return std::nullopt;
    }
    // The shim writes exit.json before it exits, so once it is gone the file is there or never
    // will be.
    if (!Exists(exit_path)) {
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
  return JobExit{job, r->exit_code, r->signal, FromUnixMillis(r->end_ms), r->cause};
}

// The shim is gone without an exit record: end what is left of the job, then record the exit
// as the shim would have.
JobExit Executor::OnShimDied(JobId job) {
  fs::path dir = JobDir(job);
  KillOrphans(dir);
  fs::path cgroup = exec::JobCgroup::PathFor(job, cgroup_root_);
  if (!cgroup_root_.empty() && Exists(cgroup)) {
    exec::JobCgroup(cgroup).Signal(SIGKILL);
    (void)exec::JobCgroup(cgroup).Remove();  // fails while the killed processes linger; harmless
  }
  std::string cause = "supervisor process died";
  if (Result<exec::KillRequest> k = exec::ReadKillRequest(dir / exec::kKillFile); k.ok()) {
    cause += " (after a kill request: " + k->cause + ")";
  }
  JobExit e{job, kSupervisorDiedExitCode, std::nullopt, clock_.Now(), cause};
  (void)exec::WriteExitRecord(dir / exec::kExitFile,
                              {e.exit_code, std::nullopt, ToUnixMillis(e.end_time), e.cause});
  return e;
}

bool Executor::ShimAlive(const Tracked& t) const {
  return t.shim_pid > 0 && exec::IsAlive({t.shim_pid, t.shim_start_time});
}

std::vector<RecoveredJob> Executor::Recover() {
  std::vector<RecoveredJob> out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(run_dir_, ec)) {
    std::optional<JobId> job = ParseJobDirName(entry.path().filename().string());
    if (!job || !entry.is_directory(ec) || Exists(entry.path() / exec::kReportedFile)) {
      continue;
    }
    Tracked t;
    if (Result<exec::PidRecord> rec = exec::ReadPidRecord(entry.path() / exec::kShimPidFile);
        rec.ok()) {
      t.shim_pid = rec->pid;
      t.shim_start_time = rec->start_time;
    }
    auto [it, inserted] = tracked_.emplace(*job, t);
    (void)inserted;  // already tracked: keep its exit_reported state
    bool running = !Exists(entry.path() / exec::kExitFile) && ShimAlive(it->second);
    out.push_back({*job, it->second.shim_pid, running});
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
  return OkStatus();
}

}  // namespace gf
