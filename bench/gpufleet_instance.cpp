#include "gpufleet_instance.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api_client.h"

#include "bench_support.h"

namespace gf::bench {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A pid file written by the shim: "PID START_TIME\n" (START_TIME: field 22 of /proc/PID/stat).
struct PidRecord {
  pid_t pid = 0;
  unsigned long long start_time = 0;
};

std::optional<PidRecord> ReadPidFile(const fs::path& path) {
  std::istringstream in(ReadFile(path));
  long long pid = 0;
  PidRecord r;
  if (!(in >> pid >> r.start_time) || pid <= 0) {
    return std::nullopt;
  }
  r.pid = static_cast<pid_t>(pid);
  return r;
}

// True if the process the record names is alive and is still that process (not a recycled
// pid), and is not a zombie.
bool StillRunning(const PidRecord& r) {
  const std::string stat = ReadFile("/proc/" + std::to_string(r.pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) {
    return false;
  }
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  std::vector<std::string> f;  // f[0] is field 3 (state)
  while (fields >> field) {
    f.push_back(field);
  }
  if (f.size() < 20 || f[0] == "Z") {
    return false;
  }
  return std::stoull(f[19]) == r.start_time;  // field 22
}

bool WaitPidWithDeadline(pid_t pid, std::chrono::milliseconds budget) {
  const auto end = SteadyClock::now() + budget;
  while (SteadyClock::now() < end) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
      return true;
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// Cancels `ids` from a few client threads. A job that ended meanwhile cannot be cancelled: fine.
Status CancelJobs(const std::string& socket, const std::vector<std::int64_t>& ids) {
  if (ids.empty()) {
    return OkStatus();
  }
  auto cancel = [&](ApiClient& c, int i) -> Status {
    const std::string target =
        "/api/v1/jobs/" + std::to_string(ids[static_cast<std::size_t>(i)]) + "/cancel";
    const auto r = c.CallJson("POST", target);
    if (!r.ok() && r.error().code != ErrorCode::kFailedPrecondition &&
        r.error().code != ErrorCode::kNotFound) {
      return r.error();
    }
    return OkStatus();
  };
  GF_TRY(RunOnClients(socket, 4, static_cast<int>(ids.size()), cancel));
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<GpufleetInstance>> GpufleetInstance::Start(const InstanceOptions& options) {
  std::string templ = (fs::temp_directory_path() / "gf-bench.XXXXXX").string();
  if (mkdtemp(templ.data()) == nullptr) {
    return IoError("cannot create a temp dir: " + std::string(std::strerror(errno)));
  }
  std::unique_ptr<GpufleetInstance> instance(new GpufleetInstance(templ));
  chmod(templ.c_str(), 0755);
  instance->socket_ = (instance->dir_ / "gpufleet.sock").string();

  const std::vector<std::string> argv = {options.gpufleet,
                                         "up",
                                         "--gpus",
                                         options.gpus,
                                         "--data-dir",
                                         (instance->dir_ / "data").string(),
                                         "--listen-socket",
                                         instance->socket_,
                                         "--port",
                                         "-1",
                                         "--kill-grace",
                                         "2",
                                         "--node-name",
                                         "bench-node"};
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: execv's signature
  }
  args.push_back(nullptr);
  const std::string log = (instance->dir_ / "up.log").string();

  const pid_t pid = fork();
  if (pid < 0) {
    return IoError("fork: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);  // the terminal's Ctrl-C goes to the bench, which stops us in order
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  instance->pid_ = pid;
  if (Status s = instance->WaitReady(options); !s.ok()) {
    return s.error();  // the destructor stops what started
  }
  return instance;
}

Status GpufleetInstance::WaitReady(const InstanceOptions& options) {
  ApiClient client(socket_, ApiClientOptions{std::chrono::milliseconds(2000)});
  const Deadline deadline(options.ready_timeout);
  std::string last = "no answer yet";
  while (!deadline.Expired()) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Unavailable("gpufleet up exited at start; its log ends:\n" + LogTail());
    }
    if (fs::exists(socket_)) {
      auto nodes = client.CallJson("GET", "/api/v1/nodes");
      if (nodes.ok()) {
        const auto& list = (*nodes)["nodes"];
        if (list.is_array() && !list.empty() && list[0]["gpus"].is_array() &&
            static_cast<int>(list[0]["gpus"].size()) >= options.expected_gpus) {
          return OkStatus();
        }
        last = "nodes: " + nodes->dump();
      } else {
        last = nodes.error().ToString();
      }
    }
    std::this_thread::sleep_for(50ms);
  }
  return Unavailable("gpufleet up did not get ready in " +
                     std::to_string(options.ready_timeout.count()) + " s (" + last +
                     "); its log ends:\n" + LogTail());
}

std::vector<std::string> GpufleetInstance::BlockerCommand() const {
  return {"sh", "-c", "while [ ! -e \"$0\" ]; do sleep 0.05; done", release_file().string()};
}

Status GpufleetInstance::CancelAllJobs() {
  ApiClient client(socket_);
  std::set<std::int64_t> cancelled;
  const Deadline deadline(120s);
  while (!deadline.Expired()) {
    GF_ASSIGN_OR_RETURN(const nlohmann::json jobs, ListJobs(client, 100000));
    if (jobs.empty()) {
      return OkStatus();
    }
    // Pending first, as a pass of its own: cancelling a running job first would let queued
    // ones start.
    for (const bool pending_pass : {true, false}) {
      std::vector<std::int64_t> todo;
      for (const auto& job : jobs) {
        const std::int64_t id = job["id"].get<std::int64_t>();
        const bool pending = job.value("state", std::string()) == "PENDING";
        if (pending == pending_pass && !cancelled.contains(id)) {
          todo.push_back(id);
        }
      }
      GF_TRY(CancelJobs(socket_, todo));
      cancelled.insert(todo.begin(), todo.end());
    }
    std::this_thread::sleep_for(100ms);
  }
  return Unavailable("jobs still active 120 s after cancelling them");
}

Status GpufleetInstance::StopDaemon() {
  if (pid_ <= 0) {
    return OkStatus();
  }
  kill(pid_, SIGTERM);
  if (!WaitPidWithDeadline(pid_, 20s)) {
    kill(pid_, SIGKILL);
    WaitPidWithDeadline(pid_, 5s);
    pid_ = -1;
    return Unavailable("gpufleet up did not stop within 20 s of SIGTERM; killed it");
  }
  pid_ = -1;
  return OkStatus();
}

Status GpufleetInstance::KillLeftoverJobs() {
  const fs::path jobs = dir_ / "data" / "jobs";
  std::error_code ec;
  if (!fs::is_directory(jobs, ec)) {
    return OkStatus();
  }
  // Shims of jobs that just ended may need a moment to exit by themselves.
  std::vector<std::pair<fs::path, PidRecord>> alive;
  const Deadline deadline(10s);
  do {
    alive.clear();
    for (const auto& entry : fs::directory_iterator(jobs, ec)) {
      for (const char* name : {"shim.pid", "job.pid"}) {
        if (auto r = ReadPidFile(entry.path() / name); r && StillRunning(*r)) {
          alive.emplace_back(entry.path() / name, *r);
        }
      }
    }
    if (alive.empty()) {
      return OkStatus();
    }
    std::this_thread::sleep_for(100ms);
  } while (!deadline.Expired());
  std::string names;
  for (const auto& [path, r] : alive) {
    // The job runs in its own session: its pid is its process group.
    if (path.filename() == "job.pid") {
      kill(-r.pid, SIGKILL);
    }
    kill(r.pid, SIGKILL);
    names += " " + path.string() + " (pid " + std::to_string(r.pid) + ")";
  }
  return Unavailable("job processes still alive after gpufleet up stopped; killed:" + names);
}

Status GpufleetInstance::Stop() {
  if (stopped_) {
    return OkStatus();
  }
  stopped_ = true;
  std::vector<Error> errors;
  if (pid_ > 0) {
    if (Status s = CancelAllJobs(); !s.ok()) {
      errors.push_back(s.error());
    }
  }
  // Blockers also end by themselves once this exists (if gpufleet could not cancel them).
  std::ofstream(release_file()).put('\n');
  if (Status s = StopDaemon(); !s.ok()) {
    errors.push_back(s.error());
  }
  if (Status s = KillLeftoverJobs(); !s.ok()) {
    errors.push_back(s.error());
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (ec) {
    errors.push_back(IoError("cannot remove " + dir_.string() + ": " + ec.message()));
  }
  if (errors.empty()) {
    return OkStatus();
  }
  std::string message = "cleanup:";
  for (const auto& e : errors) {
    message += "\n  " + e.ToString();
    std::cerr << "gf_job_path_bench: cleanup: " << e.ToString() << "\n";
  }
  return Unavailable(message);
}

GpufleetInstance::~GpufleetInstance() {
  (void)Stop();
}

std::string GpufleetInstance::LogTail() const {
  const std::string log = ReadFile(dir_ / "up.log");
  std::size_t pos = log.size();
  for (int lines = 0; lines < 20 && pos > 0; ++lines) {
    pos = log.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
  }
  return log.substr(pos);
}

}  // namespace gf::bench
