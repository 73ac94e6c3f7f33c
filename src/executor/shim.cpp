// ShimMain: the supervisor of one job (see executor.h for the folder layout and job_files.h for
// each file's writer).
//
// One thread. Signals are blocked and read from a signalfd in the main loop, so no work happens
// in a signal handler. The shim is a child subreaper: every orphaned descendant of the job is
// re-parented to it, so waitpid(-1) reaps the whole tree and ECHILD means nothing of the job is
// left. Its life:
//   start:  write shim.pid, read spec.json, fork the job (shim_child.cpp), write job.pid;
//   run:    reap; on SIGTERM read kill.json and start a kill (SIGTERM to the tree, SIGKILL after
//           the grace); on the signal request (SignalRequestSignal, job_files.h) deliver its
//           value to the tree and go on (`gpufleet cancel --signal`); when the main process
//           exits, SIGTERM what is left of the tree and SIGKILL it after kLeftoverGrace, as
//           Slurm does when a batch script ends; for a job with a terminal (`gpufleet run`),
//           relay it (terminal_relay.h) and hang up (SIGHUP, then SIGKILL) when its client has
//           fallen silent;
//   end:    once no descendant is left, measure what the job used (its cgroup, else the
//           kernel's count of the reaped processes), remove the cgroup and write exit.json.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "executor/cgroup.h"
#include "executor/executor.h"
#include "executor/host_limits.h"
#include "executor/job_files.h"
#include "executor/process_tree.h"
#include "executor/shim_child.h"
#include "executor/terminal_relay.h"
#include "model/terminal.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
using exec::ChildFailure;
using exec::ChildPlan;
using SteadyTime = std::chrono::steady_clock::time_point;

constexpr std::chrono::seconds kLeftoverGrace{2};
// After SIGKILL, how often to walk the tree again for processes forked during the kill.
constexpr std::chrono::milliseconds kKillRepeat{50};
// Grace when the shim gets SIGTERM without a kill.json (e.g. the host shutting down).
constexpr std::chrono::seconds kDefaultGrace{10};
// Between the SIGHUP of a lost terminal session and the SIGKILL.
constexpr std::chrono::seconds kHangupGrace{5};

SteadyTime SteadyNow() {
  return std::chrono::steady_clock::now();
}

std::int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void LogLine(const std::string& line) {
  std::fprintf(stderr, "gpufleet shim: %s\n", line.c_str());
}

class Shim {
 public:
  Shim(fs::path dir, exec::ShimSpec spec, int signal_fd)
      : dir_(std::move(dir)),
        spec_(std::move(spec.launch)),
        cgroup_root_(std::move(spec.cgroup_root)),
        terminal_timeout_(spec.terminal_timeout),
        signal_fd_(signal_fd) {}

  int Run() {
    StartJob();
    Supervise();
    // Read before the folders go: the kernel's count of OOM kills at the job's memory limit, and
    // what the job used.
    oom_killed_ = !memory_dir_.empty() && exec::OomKilled(memory_dir_);
    usage_ = MeasureUsage();
    if (v1_limits_) {
      Status removed = v1_limits_->Remove();
      if (!removed.ok()) {
        LogLine(removed.error().ToString());
      }
    }
    if (cgroup_) {
      Status removed = cgroup_->Remove();
      if (!removed.ok()) {
        LogLine(removed.error().ToString());
      }
    }
    Status written = exec::WriteExitRecord(dir_ / exec::kExitFile, MakeExitRecord());
    if (!written.ok()) {
      LogLine("cannot record the exit: " + written.error().ToString());
      return 1;
    }
    return 0;
  }

 private:
  void StartJob();
  void ApplyLimits();
  Status ForkJob(ChildPlan& plan);
  void Supervise();
  bool ReapChildren();
  void OnMainExited(bool others_left);
  void OnKillRequest();
  void BeginKill(const exec::KillRequest& request);
  Status OpenTerminal();
  void OnSignalRequest(const signalfd_siginfo& info);
  int SignalTree(int sig);
  HostUsage MeasureUsage() const;
  int PollTimeoutMs() const;
  exec::ExitRecord MakeExitRecord() const;

  fs::path dir_;
  LaunchSpec spec_;
  fs::path cgroup_root_;  // empty: no cgroup
  std::chrono::seconds terminal_timeout_;
  int signal_fd_;
  std::unique_ptr<exec::TerminalRelay> terminal_;  // null: the job has no terminal
  std::optional<exec::JobCgroup> cgroup_;
  // Host limits (issue #24): the job's v1 folders when cgroup v1 holds them, the memory folder
  // whose OOM kills are read at the end ("" = no memory limit), and the one line on them (the
  // shim's own log; the job's log too when they are not enforced).
  std::optional<exec::V1LimitGroups> v1_limits_;
  std::filesystem::path memory_dir_;
  std::string limits_note_;
  bool limits_enforced_ = false;
  bool oom_killed_ = false;
  std::optional<HostUsage> usage_;  // measured once no process of the job is left
  pid_t main_pid_ = -1;
  std::optional<int> main_status_;  // waitpid status of the main process
  std::optional<exec::ExitRecord> start_failure_;
  // A kill requested through kill.json (or a bare SIGTERM).
  std::optional<exec::KillRequest> kill_;
  bool main_exited_before_sigkill_ = false;
  int leftovers_ = 0;                     // live processes left when the main process exited
  std::optional<SteadyTime> sigkill_at_;  // when the SIGTERM phase ends
  bool sigkill_sent_ = false;
};

void Shim::StartJob() {
  Result<ChildPlan> plan = exec::PlanChild(spec_, exec::JobTag(spec_.job, dir_));
  if (!plan.ok()) {
    start_failure_ =
        exec::ExitRecord{126, std::nullopt, 0, "failed to start: " + plan.error().message};
    return;
  }
  if (!cgroup_root_.empty() && exec::JobCgroup::Available(cgroup_root_)) {
    Result<exec::JobCgroup> cg = exec::JobCgroup::Create(spec_.job, dir_, cgroup_root_);
    if (cg.ok()) {
      cgroup_ = *cg;
    } else {
      LogLine("no cgroup, using the process group: " + cg.error().ToString());
    }
  }
  ApplyLimits();
  if (Status opened = OpenTerminal(); !opened.ok()) {
    start_failure_ =
        exec::ExitRecord{126,
                         std::nullopt,
                         0,
                         "failed to start: no terminal for the job: " + opened.error().message};
    return;
  }
  Status forked = ForkJob(*plan);
  if (!forked.ok()) {
    start_failure_ =
        exec::ExitRecord{126, std::nullopt, 0, "failed to start: " + forked.error().message};
  }
}

// The job's CPU quota and memory limit: in its cgroup v2 when the cpu and memory controllers
// are there, else in cgroup v1 folders (a hybrid host), else not at all, which its log says.
void Shim::ApplyLimits() {
  const exec::HostLimits limits{.cpus = spec_.cpus, .memory_mib = spec_.memory_mib};
  if (!limits.Any()) {
    return;
  }
  const std::string what = exec::DescribeLimits(limits);
  std::string v2_why = "no cgroup v2 for the job";
  if (cgroup_) {
    Status v2 = exec::ApplyV2Limits(cgroup_->Dir(), limits);
    if (v2.ok()) {
      limits_enforced_ = true;
      memory_dir_ = limits.memory_mib > 0 ? cgroup_->Dir() : std::filesystem::path();
      limits_note_ = "gpufleet: limits " + what + " (cgroup v2)";
      LogLine(limits_note_);
      return;
    }
    v2_why = v2.error().message;
  }
  if (!cgroup_root_.empty()) {
    Result<exec::V1LimitGroups> v1 = exec::V1LimitGroups::Create(
        exec::V1RootFor(cgroup_root_), exec::JobTag(spec_.job, dir_), limits);
    if (v1.ok()) {
      v1_limits_ = *v1;
      limits_enforced_ = true;
      memory_dir_ = v1->MemoryDir();
      limits_note_ = "gpufleet: limits " + what + " (cgroup v1)";
      LogLine(limits_note_);
      return;
    }
    v2_why += "; " + v1.error().message;
  } else {
    v2_why = "cgroups turned off";
  }
  limits_note_ = "gpufleet: limits " + what + " not enforced (" + v2_why + ")";
  LogLine(limits_note_);
}

// A job started by `gpufleet run` has GPUFLEET_PTY=ROWSxCOLS in its environment: its terminal.
Status Shim::OpenTerminal() {
  const std::optional<std::string_view> text = TerminalSizeText(spec_.env);
  if (!text) {
    return OkStatus();
  }
  GF_ASSIGN_OR_RETURN(const TerminalSize size, ParseTerminalSize(*text, kTerminalVariable));
  GF_ASSIGN_OR_RETURN(terminal_,
                      exec::TerminalRelay::Open(dir_, spec_.owner, size, terminal_timeout_));
  return OkStatus();
}

// Forks the job and waits for its exec (the report pipe closes) or its setup failure.
Status Shim::ForkJob(ChildPlan& plan) {
  Owner owner = spec_.owner;
  GF_ASSIGN_OR_RETURN(plan.stdout_fd, exec::OpenLogFile(dir_ / exec::kStdoutFile, owner));
  GF_ASSIGN_OR_RETURN(plan.stderr_fd, exec::OpenLogFile(dir_ / exec::kStderrFile, owner));
  if (terminal_) {
    // The job's three fds are its terminal; what it prints reaches stdout.log through the
    // relay, and stderr.log stays empty.
    terminal_->SetLog(plan.stdout_fd);
    ::close(plan.stderr_fd);
    plan.stdin_fd = ::fcntl(terminal_->SlaveFd(), F_DUPFD_CLOEXEC, 0);
    plan.stdout_fd = ::fcntl(terminal_->SlaveFd(), F_DUPFD_CLOEXEC, 0);
    plan.stderr_fd = ::fcntl(terminal_->SlaveFd(), F_DUPFD_CLOEXEC, 0);
    plan.controlling_terminal = true;
  } else {
    plan.stdin_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  if (cgroup_) {
    Result<int> procs = cgroup_->OpenProcs();
    if (procs.ok()) {
      plan.cgroup_procs_fd = *procs;
    }
  }
  if (v1_limits_) {
    Result<std::vector<int>> fds = v1_limits_->OpenProcs();
    if (fds.ok()) {
      for (std::size_t i = 0; i < fds->size() && i < 2; ++i) {
        plan.limit_procs_fds[i] = (*fds)[i];
      }
    } else {
      limits_enforced_ = false;
      limits_note_ = "gpufleet: limits not enforced (" + fds.error().message + ")";
    }
  }
  if (!limits_enforced_ && !limits_note_.empty()) {
    // The job's stderr log gets one line on limits it asked and does not get, first (held
    // limits say nothing: the log is the job's, and `logs` of a job with its own output files
    // shows it only when there is something to say).
    const std::string line = limits_note_ + "\n";
    ssize_t ignored = ::write(plan.stderr_fd, line.data(), line.size());
    (void)ignored;
  }
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    int err = errno;
    return IoError("pipe: " + ErrnoText(err));
  }
  plan.report_fd = report[1];
  plan.Finalize();
  pid_t pid = ::fork();
  if (pid == 0) {
    exec::RunChild(plan);
  }
  int fork_errno = errno;
  for (int fd : {plan.stdin_fd,
                 plan.stdout_fd,
                 plan.stderr_fd,
                 plan.cgroup_procs_fd,
                 plan.limit_procs_fds[0],
                 plan.limit_procs_fds[1],
                 report[1]}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  if (terminal_) {
    terminal_->CloseSlave();  // the job holds it now: its last close is the master's EOF
  }
  if (pid < 0) {
    ::close(report[0]);
    return IoError(std::string("fork: ") + ErrnoText(fork_errno));
  }
  main_pid_ = pid;
  ChildFailure failure;
  ssize_t n;
  do {
    n = ::read(report[0], &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    start_failure_ = exec::ExitRecord{
        exec::ExitCodeFor(failure), std::nullopt, 0, exec::DescribeFailure(failure, spec_)};
    return OkStatus();
  }
  std::optional<exec::PidRecord> record = exec::RecordOf(pid);
  // Not fsynced: see WritePidRecord.
  Status written = exec::WritePidRecord(dir_ / exec::kJobPidFile,
                                        record.value_or(exec::PidRecord{pid, 0}),
                                        exec::Durability::kAtomicOnly);
  if (!written.ok()) {
    LogLine(written.error().ToString());
  }
  return OkStatus();
}

void Shim::Supervise() {
  std::vector<pollfd> fds;
  while (ReapChildren()) {
    if (sigkill_at_ && SteadyNow() >= *sigkill_at_) {
      sigkill_sent_ = true;
      SignalTree(SIGKILL);
    }
    if (terminal_ && !kill_ && !main_status_ && terminal_->SessionLost(SteadyNow())) {
      BeginKill({kHangupGrace,
                 "the terminal session ended (no word from `gpufleet run` for " +
                     std::to_string(terminal_timeout_.count()) + "s)",
                 SIGHUP});
    }
    fds.assign(1, pollfd{signal_fd_, POLLIN, 0});
    if (terminal_) {
      terminal_->AddPollFds(fds);
    }
    int ready = ::poll(fds.data(), fds.size(), PollTimeoutMs());
    if (ready <= 0) {
      continue;
    }
    if (terminal_) {
      terminal_->OnPoll(fds.data() + 1, fds.size() - 1);
    }
    if (fds[0].revents == 0) {
      continue;
    }
    signalfd_siginfo info{};
    while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) {
        OnKillRequest();
      } else if (static_cast<int>(info.ssi_signo) == exec::SignalRequestSignal()) {
        OnSignalRequest(info);
      }
      // SIGCHLD: reaped at the top of the loop. SIGHUP: ignored (the shim has no terminal).
    }
  }
  if (terminal_) {
    terminal_->Drain();
  }
}

// Reaps every exited child. Returns false once the shim has no children left: as a subreaper
// that means no process of the job is left anywhere.
bool Shim::ReapChildren() {
  bool main_exited = false;
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno != EINTR)) {
      // ECHILD right after the main process was reaped means it left nothing behind: its
      // orphans are re-parented to this subreaper before it can be reaped. Then there is no
      // tree to signal, and no /proc walk to pay for (the common case: a job that just ends).
      if (main_exited) {
        OnMainExited(/*others_left=*/pid == 0);
      }
      return pid == 0;
    }
    if (pid == main_pid_) {
      main_status_ = status;
      main_exited = true;
    }
  }
}

void Shim::OnMainExited(bool others_left) {
  if (kill_) {
    if (!sigkill_sent_) {
      main_exited_before_sigkill_ = true;
    }
    return;  // the kill in progress ends the rest
  }
  if (start_failure_ || !others_left) {
    return;
  }
  leftovers_ = SignalTree(SIGTERM);
  // Armed even when the scan found nothing alive: a /proc scan is not atomic and may miss a
  // process that forked during it. With nothing left, ECHILD ends the loop first anyway.
  sigkill_at_ = SteadyNow() + kLeftoverGrace;
}

void Shim::OnKillRequest() {
  Result<exec::KillRequest> request = exec::ReadKillRequest(dir_ / exec::kKillFile);
  BeginKill(request.ok() ? *request
                         : exec::KillRequest{kDefaultGrace, "supervisor received SIGTERM"});
}

void Shim::BeginKill(const exec::KillRequest& req) {
  SteadyTime deadline = SteadyNow() + req.grace;
  if (kill_) {
    // A second request can only shorten the grace.
    if (deadline < *sigkill_at_) {
      sigkill_at_ = deadline;
      kill_->grace = req.grace;
    }
    return;
  }
  kill_ = req;
  if (main_status_) {
    main_exited_before_sigkill_ = true;
  }
  if (!sigkill_at_ || deadline < *sigkill_at_) {
    sigkill_at_ = deadline;
  }
  SignalTree(req.first_signal);  // SIGTERM, or the job's checkpoint signal on preemption
}

// `gpufleet cancel --signal`: the Executor queued the signal request with the signal to deliver
// as its value (job_files.h). It goes to every process of the job, as a checkpoint signal does,
// and the job goes on: nothing here ends it. Unlike SignalTree, each process gets it exactly
// once: a kill may hit a process through its cgroup, its group and the walk alike, but a job
// that counts its USR1s, or toggles on them, must see one per request. The walk finds them all:
// as the subreaper, the shim is an ancestor of every process of the job. No SIGCONT follows
// either (it would undo a STOP). Only a sigqueue carries a value: a bare kill of the request
// signal (someone else's) is ignored.
void Shim::OnSignalRequest(const signalfd_siginfo& info) {
  const int sig = info.ssi_int;
  if (info.ssi_code != SI_QUEUE || sig <= 0 || sig > SIGRTMAX || sig == SIGKILL) {
    LogLine("ignored a signal request without a valid signal (" + std::to_string(sig) + ")");
    return;
  }
  if (start_failure_ || main_pid_ <= 0) {
    return;
  }
  int live = 0;
  for (const exec::ProcStat& p : exec::Descendants(::getpid())) {
    if (p.state != 'Z' && ::kill(p.pid, sig) == 0) {
      ++live;
    }
  }
  LogLine("delivered " + exec::SignalName(sig) + " to " + std::to_string(live) +
          " process(es) of the job (gpufleet cancel --signal)");
}

// Sends `sig` to the job's cgroup, its process group and every descendant of the shim.
// Returns how many live (non-zombie) descendants were found.
int Shim::SignalTree(int sig) {
  // Walked before any signal goes out, so that the count is of what was alive: signalled
  // first (through the cgroup, say), a process may already be a zombie when the walk reaches it.
  const std::vector<exec::ProcStat> descendants = exec::Descendants(::getpid());
  if (cgroup_) {
    cgroup_->Signal(sig);
  }
  // The group id is safe to use only until the main process is reaped: after that, once the
  // group is empty, the number may name an unrelated process's group.
  bool group_safe = main_pid_ > 0 && !main_status_;
  if (group_safe) {
    ::killpg(main_pid_, sig);
  }
  int live = 0;
  for (const exec::ProcStat& p : descendants) {
    if (p.state == 'Z') {
      continue;
    }
    ++live;
    ::kill(p.pid, sig);
    if (sig != SIGKILL) {
      ::kill(p.pid, SIGCONT);  // a stopped process acts on a signal only once resumed
    }
  }
  if (sig != SIGKILL && group_safe) {
    ::killpg(main_pid_, SIGCONT);
  }
  return live;
}

// What the job used, once none of its processes is left: its cgroup's counts where it has one
// (v2, else the v1 folders of its limits), else the kernel's count of the processes this
// subreaper reaped, which is every process of the tree (RUSAGE_CHILDREN: their user + system
// time, and the largest resident set among them: not a sum, so a job of many processes shows
// its largest one).
HostUsage Shim::MeasureUsage() const {
  rusage children{};
  ::getrusage(RUSAGE_CHILDREN, &children);
  const auto ms = [](const timeval& t) {
    return std::int64_t{t.tv_sec} * 1000 + std::int64_t{t.tv_usec} / 1000;
  };
  HostUsage usage{.cpu_ms = ms(children.ru_utime) + ms(children.ru_stime),
                  .peak_memory_kib = children.ru_maxrss};  // KiB on Linux
  const std::filesystem::path v2 = cgroup_ ? cgroup_->Dir() : std::filesystem::path();
  const std::filesystem::path v1_cpu = v1_limits_ ? v1_limits_->CpuDir() : std::filesystem::path();
  const std::filesystem::path v1_memory =
      v1_limits_ ? v1_limits_->MemoryDir() : std::filesystem::path();
  for (const std::filesystem::path& dir : {v2, v1_cpu}) {
    if (const std::optional<std::int64_t> usec = exec::CgroupCpuUsec(dir)) {
      usage.cpu_ms = *usec / 1000;
      break;
    }
  }
  for (const std::filesystem::path& dir : {v2, v1_memory}) {
    if (const std::optional<std::int64_t> bytes = exec::CgroupMemoryPeakBytes(dir)) {
      usage.peak_memory_kib = *bytes / 1024;
      break;
    }
  }
  return usage;
}

int Shim::PollTimeoutMs() const {
  if (sigkill_sent_) {
    return static_cast<int>(kKillRepeat.count());
  }
  std::optional<std::int64_t> left;
  if (sigkill_at_) {
    left =
        std::chrono::duration_cast<std::chrono::milliseconds>(*sigkill_at_ - SteadyNow()).count();
  }
  if (terminal_ && !kill_ && !main_status_) {
    const std::int64_t session = terminal_->MsUntilSessionLost(SteadyNow());
    left = left ? std::min(*left, session) : session;
  }
  if (!left) {
    return -1;
  }
  // Capped so a long grace cannot overflow poll's int; the loop simply wakes up and re-arms.
  return static_cast<int>(std::clamp<std::int64_t>(*left + 1, 0, 60'000));
}

exec::ExitRecord Shim::MakeExitRecord() const {
  exec::ExitRecord r;
  r.end_ms = WallNowMs();
  if (start_failure_) {
    r = *start_failure_;
    r.end_ms = WallNowMs();
    return r;
  }
  r.usage = usage_;
  int status = main_status_.value_or(0);
  std::string how;
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + *r.signal;
    how = "killed by " + exec::SignalName(*r.signal);
  } else {
    r.exit_code = WEXITSTATUS(status);
    how = "exited with " + std::to_string(r.exit_code);
  }
  if (kill_) {
    r.cause =
        kill_->cause +
        (main_exited_before_sigkill_
             ? ": " + exec::SignalName(kill_->first_signal) + ", exited within grace (" + how + ")"
             : ": killed with SIGKILL after " + std::to_string(kill_->grace.count()) + "s grace");
  } else {
    r.cause = how;
  }
  if (oom_killed_) {
    // Slurm's OUT_OF_MEMORY: the kernel killed a process of the job at its memory limit.
    r.cause = std::string(exec::kOutOfMemoryCause) + ": the kernel's OOM killer stopped it at " +
              "its memory limit of " + FormatMib(spec_.memory_mib) + " (--mem); " + r.cause;
  } else if (!limits_enforced_ && !limits_note_.empty()) {
    r.cause += "; CPU and memory limits were not enforced (no writable cgroup)";
  }
  if (leftovers_ > 0) {
    r.cause += "; " + std::to_string(leftovers_) + " leftover process" +
               (leftovers_ == 1 ? "" : "es") + " terminated";
  }
  return r;
}

// Blocks the signals the shim handles and returns a signalfd for them, before anything else,
// so a kill racing the start is queued rather than fatal.
int SetUpSignals() {
  sigset_t mask;
  ::sigemptyset(&mask);
  for (int sig : {SIGTERM, SIGINT, SIGCHLD, SIGHUP, exec::SignalRequestSignal()}) {
    ::sigaddset(&mask, sig);
  }
  ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  return ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

}  // namespace

int ShimMain(const fs::path& job_dir) {
  int signal_fd = SetUpSignals();
  if (signal_fd < 0) {
    LogLine("signalfd: " + ErrnoText(errno));
    return 1;
  }
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    LogLine("cannot become a subreaper: " + ErrnoText(errno));
    return 1;
  }
  Status recorded = exec::WritePidRecord(job_dir / exec::kShimPidFile, exec::SelfRecord());
  if (!recorded.ok()) {
    LogLine(recorded.error().ToString());
    return 1;
  }
  // The Executor gives up on a launch whose shim has not recorded itself in time by writing
  // exit.json, then kills any shim recorded by then (Executor::FailStart): checked after
  // shim.pid, so one of the two always sees the other and the job cannot start unwatched.
  if (::access((job_dir / exec::kExitFile).c_str(), F_OK) == 0) {
    LogLine("the agent gave up on this launch (exit.json exists): the job is not started");
    return 1;
  }
  Result<std::string> text = exec::ReadWholeFile(job_dir / exec::kSpecFile);
  Result<exec::ShimSpec> spec =
      text.ok() ? exec::SpecFromJson(*text) : Result<exec::ShimSpec>(text.error());
  if (!spec.ok()) {
    Status written = exec::WriteExitRecord(
        job_dir / exec::kExitFile,
        {126,
         std::nullopt,
         WallNowMs(),
         "failed to start: cannot read the job spec: " + spec.error().message});
    return written.ok() ? 1 : 2;
  }
  int rc = Shim(job_dir, *std::move(spec), signal_fd).Run();
  ::close(signal_fd);
  return rc;
}

}  // namespace gf
