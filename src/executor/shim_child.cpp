#include "executor/shim_child.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "executor/cgroup.h"
#include "executor/exec_util.h"
#include "executor/job_files.h"
#include "executor/slurm_env.h"
#include "model/output_pattern.h"

extern char** environ;  // NOLINT: POSIX global, swapped before execvp so PATH lookup uses the job's

namespace gf::exec {
namespace {

constexpr const char* kBasePath = "/usr/local/bin:/usr/bin:/bin";

struct PasswdInfo {
  std::string name;
  std::string home = "/";
  std::string shell = "/bin/sh";
  bool found = false;
};

PasswdInfo LookupUser(uid_t uid) {
  PasswdInfo info;
  const auto size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<std::size_t>(size) : 16384);
  passwd pw{};
  passwd* result = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr) {
    info.found = true;
    info.name = pw.pw_name;
    if (pw.pw_dir != nullptr && *pw.pw_dir != '\0') {
      info.home = pw.pw_dir;
    }
    if (pw.pw_shell != nullptr && *pw.pw_shell != '\0') {
      info.shell = pw.pw_shell;
    }
  }
  return info;
}

// The owner's supplementary groups as initgroups would set them, computed before fork.
std::vector<gid_t> GroupsOf(const std::string& user, gid_t gid) {
  int n = 32;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  while (::getgrouplist(user.c_str(), gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<std::size_t>(n) + 1);
    n = static_cast<int>(groups.size());
  }
  groups.resize(static_cast<std::size_t>(n));
  return groups;
}

std::string JoinGpus(const std::vector<GpuUuid>& gpus) {
  std::string out;
  for (const GpuUuid& g : gpus) {
    if (!out.empty()) {
      out += ',';
    }
    out += g.value();
  }
  return out;
}

// The job's output files: its GPUFLEET_OUTPUT and GPUFLEET_ERROR patterns expanded for this
// launch; "" where it has none. A multi-node job's %j is its id (rank 0's), as SLURM_JOB_ID.
std::pair<std::string, std::string> OutputFiles(const LaunchSpec& spec) {
  const std::string out = EnvValue(spec.env, kOutputVariable);
  const std::string err = EnvValue(spec.env, kErrorVariable);
  if (out.empty() && err.empty()) {
    return {};
  }
  OutputNames names{.job = spec.job.value(),
                    .array_job = 0,
                    .array_index = std::nullopt,
                    .name = spec.name,
                    .user = spec.owner.user,
                    .node = spec.node,
                    .node_rank = 0};
  const std::string gang = EnvValue(spec.env, "GPUFLEET_GANG_ID");
  const std::string rank = EnvValue(spec.env, "GPUFLEET_NODE_RANK");
  if (!gang.empty()) {
    names.job = std::strtoll(gang.c_str(), nullptr, 10);
    names.node_rank = static_cast<int>(std::strtol(rank.c_str(), nullptr, 10));
  }
  if (spec.array) {
    names.array_job = spec.array->array_job.value();
    names.array_index = spec.array->index;
  }
  return {out.empty() ? "" : ExpandOutputPattern(out, names),
          err.empty() ? "" : ExpandOutputPattern(err, names)};
}

// Async-signal-safe: one write of a fixed-size record, then _exit.
[[noreturn]] void Fail(const ChildPlan& plan, ChildStage stage, int err) {
  ChildFailure f{stage, err};
  ssize_t ignored = ::write(plan.report_fd, &f, sizeof f);
  (void)ignored;
  ::_exit(ExitCodeFor(f));
}

// Async-signal-safe: opens `path` as descriptor `target`, or fails the start.
void OpenAs(const ChildPlan& plan, const std::string& path, int target, ChildStage stage) {
  const int fd =
      ::open(path.c_str(), plan.output_flags, 0644);  // NOLINT(cppcoreguidelines-pro-type-vararg)
  if (fd < 0 || ::dup2(fd, target) < 0) {
    Fail(plan, stage, errno);
  }
  ::close(fd);
}

void SwitchUser(const ChildPlan& plan) {
  if (::setgroups(plan.groups.size(), plan.groups.data()) != 0) {
    Fail(plan, ChildStage::kGroups, errno);
  }
  if (::setgid(plan.gid) != 0) {
    Fail(plan, ChildStage::kSetgid, errno);
  }
  if (::setuid(plan.uid) != 0) {
    Fail(plan, ChildStage::kSetuid, errno);
  }
  if (::getuid() != plan.uid || ::geteuid() != plan.uid || ::getegid() != plan.gid) {
    Fail(plan, ChildStage::kSetuid, EPERM);
  }
  // Defence in depth: if root could be regained, the drop did not take; never run the job so.
  if (plan.verify_no_root && ::setuid(0) != -1) {
    Fail(plan, ChildStage::kRegainedRoot, 0);
  }
}

}  // namespace

void ChildPlan::Finalize() {
  argv.clear();
  for (std::string& a : argv_storage) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  envp.clear();
  for (std::string& e : env_storage) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
}

Result<ChildPlan> PlanChild(const LaunchSpec& spec, const std::string& job_tag) {
  ChildPlan plan;
  uid_t self = ::geteuid();
  if (self != 0 && spec.owner.uid != self) {
    return PermissionDenied("refused: the supervisor runs as uid " + std::to_string(self) +
                            " and can run jobs only as that user, not as uid " +
                            std::to_string(spec.owner.uid));
  }
  PasswdInfo pw = LookupUser(spec.owner.uid);
  std::string user = pw.found ? pw.name : spec.owner.user;
  plan.switch_user = self == 0;
  plan.uid = spec.owner.uid;
  plan.gid = spec.owner.gid;
  plan.verify_no_root = spec.owner.uid != 0;
  plan.groups = pw.found ? GroupsOf(pw.name, spec.owner.gid) : std::vector<gid_t>{spec.owner.gid};

  std::map<std::string, std::string> env = {{"PATH", kBasePath},
                                            {"HOME", pw.home},
                                            {"USER", user},
                                            {"LOGNAME", user},
                                            {"SHELL", pw.shell}};
  for (const auto& [name, value] : spec.env) {
    env[name] = value;
  }
  std::string gpus = JoinGpus(spec.gpus);
  env["GPUFLEET_JOB_ID"] = std::to_string(spec.job.value());
  env[kJobTagVariable] = job_tag;
  if (spec.array) {
    env["GPUFLEET_ARRAY_JOB_ID"] = std::to_string(spec.array->array_job.value());
    env["GPUFLEET_ARRAY_TASK_ID"] = std::to_string(spec.array->index);
  }
  // An empty CUDA_VISIBLE_DEVICES hides every GPU from CUDA; "void" does so for the NVIDIA
  // container runtime, where an empty value would mean "all".
  AddSlurmVariables(spec, env);
  env["CUDA_VISIBLE_DEVICES"] = gpus;
  env["NVIDIA_VISIBLE_DEVICES"] = gpus.empty() ? "void" : gpus;
  for (const auto& [name, value] : env) {
    plan.env_storage.push_back(name);
    plan.env_storage.back().append("=").append(value);
  }

  plan.argv_storage = spec.argv;
  plan.workdir = spec.workdir;
  std::tie(plan.stdout_file, plan.stderr_file) = OutputFiles(spec);
  // Several nodes of one job may share the file (a pattern without %N or %n): only rank 0
  // starts it afresh, and every rank appends, so that none cuts another's lines.
  plan.output_flags = O_WRONLY | O_CREAT | O_APPEND | (env["SLURM_PROCID"] == "0" ? O_TRUNC : 0);
  plan.shim_pid = ::getpid();
  return plan;
}

void RunChild(const ChildPlan& plan) {
  // The shim blocks the signals it handles (for its signalfd) and the agent may have ignored
  // some; both survive exec, so the job gets a clean slate.
  ResetSignalsForExec();
  // Own session and process group: the job's group can be signalled as a whole, and the job
  // never shares the shim's.
  if (::setsid() < 0) {
    Fail(plan, ChildStage::kSetsid, errno);
  }
  if (plan.cgroup_procs_fd >= 0) {
    ssize_t ignored = ::write(plan.cgroup_procs_fd, "0", 1);  // failure: process-group fallback
    (void)ignored;
  }
  for (const int fd : plan.limit_procs_fds) {
    if (fd >= 0) {
      // Before exec, so that all the job's memory is charged under its limit. A failure was
      // foreseen by the shim's writes of the limits; the job then runs as if unlimited.
      ssize_t ignored = ::write(fd, "0", 1);
      (void)ignored;
    }
  }
  if (::dup2(plan.stdin_fd, 0) < 0 || ::dup2(plan.stdout_fd, 1) < 0 ||
      ::dup2(plan.stderr_fd, 2) < 0) {
    Fail(plan, ChildStage::kRedirect, errno);
  }
  if (plan.controlling_terminal && ::ioctl(0, TIOCSCTTY, 0) != 0) {
    Fail(plan, ChildStage::kRedirect, errno);
  }
  // Only 0-2 and the report pipe stay open; the report pipe closes itself on exec.
  ::close_range(3, static_cast<unsigned>(plan.report_fd - 1), 0);
  ::close_range(static_cast<unsigned>(plan.report_fd + 1), ~0U, 0);
  if (plan.switch_user) {
    SwitchUser(plan);
  }
  // Set after the uid change, which clears it. If the shim died before this, end here.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != plan.shim_pid) {
    Fail(plan, ChildStage::kParentGone, ESRCH);
  }
  if (::chdir(plan.workdir.c_str()) != 0) {
    Fail(plan, ChildStage::kChdir, errno);
  }
  if (!plan.stdout_file.empty()) {
    OpenAs(plan, plan.stdout_file, 1, ChildStage::kOutputFile);
  }
  if (!plan.stderr_file.empty() && plan.stderr_file != plan.stdout_file) {
    OpenAs(plan, plan.stderr_file, 2, ChildStage::kErrorFile);
  } else if (!plan.stdout_file.empty() && ::dup2(1, 2) < 0) {
    Fail(plan, ChildStage::kOutputFile, errno);
  }
  environ = const_cast<char**>(plan.envp.data());
  ::execvp(plan.argv[0], plan.argv.data());
  Fail(plan, ChildStage::kExec, errno);
}

int ExitCodeFor(const ChildFailure& failure) {
  if (failure.stage == ChildStage::kExec && (failure.err == ENOENT || failure.err == ENOTDIR)) {
    return 127;
  }
  return 126;
}

std::string DescribeFailure(const ChildFailure& f, const LaunchSpec& spec) {
  std::string why = ErrnoText(f.err);
  std::string what;
  switch (f.stage) {
    case ChildStage::kSetsid:
      what = "cannot create a session: " + why;
      break;
    case ChildStage::kRedirect:
      what = "cannot redirect output to the log files: " + why;
      break;
    case ChildStage::kGroups:
      what = "cannot set the groups of " + spec.owner.user + ": " + why;
      break;
    case ChildStage::kSetgid:
      what = "cannot switch to gid " + std::to_string(spec.owner.gid) + ": " + why;
      break;
    case ChildStage::kSetuid:
      what = "cannot switch to uid " + std::to_string(spec.owner.uid) + ": " + why;
      break;
    case ChildStage::kRegainedRoot:
      what = "refused: root privileges could be regained after switching user";
      break;
    case ChildStage::kParentGone:
      what = "the supervisor exited during start";
      break;
    case ChildStage::kChdir:
      what = "cannot change to working directory " + spec.workdir + ": " + why;
      break;
    case ChildStage::kExec:
      what = (spec.argv.empty() ? "" : spec.argv[0]) + ": " + why;
      break;
    case ChildStage::kOutputFile:
      what = "cannot open the output file " + OutputFiles(spec).first + " (--output) in " +
             spec.workdir + ": " + why;
      break;
    case ChildStage::kErrorFile:
      what = "cannot open the error file " + OutputFiles(spec).second + " (--error) in " +
             spec.workdir + ": " + why;
      break;
  }
  return "failed to start: " + what;
}

}  // namespace gf::exec
