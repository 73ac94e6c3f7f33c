#include "gpufleet_instance.h"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <system_error>
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
  std::uint64_t start_time = 0;
};

std::optional<PidRecord> ReadPidFile(const fs::path& path) {
  std::istringstream in(ReadFile(path));
  std::int64_t pid = 0;
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

// The argv of the main process: `gpufleet up` (one node) or `gpufleet server`.
std::vector<std::string> MainArgv(const InstanceOptions& options,
                                  const fs::path& dir,
                                  const std::string& socket) {
  const bool up = options.topology == Topology::kUp;
  std::vector<std::string> argv = {options.gpufleet,
                                   up ? "up" : "server",
                                   "--data-dir",
                                   (dir / "data").string(),
                                   "--listen-socket",
                                   socket,
                                   "--kill-grace",
                                   "2",
                                   "--port",
                                   up ? "-1" : "0"};  // the server must listen: any free port
  if (up) {
    argv.insert(argv.end(), {"--gpus", options.gpus, "--node-name", "bench-node"});
  }
  if (!options.db.empty()) {
    argv.insert(argv.end(), {"--db", options.db});
  }
  return argv;
}

}  // namespace

Result<std::unique_ptr<GpufleetInstance>> GpufleetInstance::Start(const InstanceOptions& options) {
  std::string templ = (fs::temp_directory_path() / "gf-bench.XXXXXX").string();
  if (mkdtemp(templ.data()) == nullptr) {
    return IoError("cannot create a temp dir: " + std::generic_category().message(errno));
  }
  std::unique_ptr<GpufleetInstance> instance(new GpufleetInstance(templ));
  chmod(templ.c_str(), 0755);
  instance->socket_ = (instance->dir_ / "gpufleet.sock").string();
  if (options.seed) {
    const fs::path data = instance->dir_ / "data";  // MainArgv's --data-dir
    std::error_code ec;
    fs::create_directories(data, ec);
    if (Status s = options.seed(data); !s.ok()) {
      return s.error();
    }
  }
  if (Status s = instance->StartProcesses(options); !s.ok()) {
    return s.error();  // the destructor stops what started
  }
  if (Status s = instance->WaitReady(options); !s.ok()) {
    return s.error();
  }
  return instance;
}

Status GpufleetInstance::StartProcesses(const InstanceOptions& options) {
  const bool up = options.topology == Topology::kUp;
  GF_ASSIGN_OR_RETURN(
      server_, Spawn(up ? "gpufleet up" : "gpufleet server", MainArgv(options, dir_, socket_)));
  if (up) {
    return OkStatus();
  }
  for (int i = 1; i <= options.agents; ++i) {
    const std::string node = "bench-" + std::to_string(i);
    GF_ASSIGN_OR_RETURN(Child agent,
                        Spawn("gpufleet agent " + node,
                              {options.gpufleet,
                               "agent",
                               "--server",
                               "unix:" + socket_,
                               "--gpus",
                               options.gpus,
                               "--data-dir",
                               (dir_ / ("agent-" + std::to_string(i))).string(),
                               "--node-name",
                               node}));
    agents_.push_back(std::move(agent));
  }
  return OkStatus();
}

Result<GpufleetInstance::Child> GpufleetInstance::Spawn(
    const std::string& name, const std::vector<std::string>& argv) const {
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: execv's signature
  }
  args.push_back(nullptr);
  Child child{.pid = -1, .name = name, .log = dir_ / (name.substr(name.rfind(' ') + 1) + ".log")};
  const std::string log = child.log.string();
  const pid_t pid = fork();
  if (pid < 0) {
    return IoError("fork: " + std::generic_category().message(errno));
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
  child.pid = pid;
  return child;
}

namespace {

// True when `nodes` (GET /api/v1/nodes) lists `want` nodes, each up with `gpus` GPUs.
bool AllNodesUp(const nlohmann::json& nodes, int want, int gpus) {
  const auto& list = nodes["nodes"];
  if (!list.is_array() || static_cast<int>(list.size()) < want) {
    return false;
  }
  return std::all_of(list.begin(), list.end(), [gpus](const nlohmann::json& n) {
    return n.value("state", std::string("up")) == "up" && n["gpus"].is_array() &&
           static_cast<int>(n["gpus"].size()) >= gpus;
  });
}

}  // namespace

Status GpufleetInstance::CheckAlive() {
  auto check = [this](Child& child) -> Status {
    int status = 0;
    if (child.pid > 0 && waitpid(child.pid, &status, WNOHANG) == child.pid) {
      child.pid = -1;
      const std::string how = WIFSIGNALED(status)
                                  ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                  : "exited with status " + std::to_string(WEXITSTATUS(status));
      return Unavailable(child.name + " " + how + " at start; the logs end:\n" + LogTails());
    }
    return OkStatus();
  };
  GF_TRY(check(server_));
  for (Child& agent : agents_) {
    GF_TRY(check(agent));
  }
  return OkStatus();
}

Status GpufleetInstance::WaitReady(const InstanceOptions& options) {
  ApiClient client(socket_, ApiClientOptions{.timeout = std::chrono::milliseconds(2000)});
  const Deadline deadline(options.ready_timeout);
  const int want_nodes = options.topology == Topology::kUp ? 1 : options.agents;
  std::string last = "no answer yet";
  while (!deadline.Expired()) {
    GF_TRY(CheckAlive());
    if (fs::exists(socket_)) {
      auto nodes = client.CallJson("GET", "/api/v1/nodes");
      if (nodes.ok()) {
        if (AllNodesUp(*nodes, want_nodes, options.expected_gpus)) {
          return OkStatus();
        }
        last = "nodes: " + nodes->dump().substr(0, 400);
      } else {
        last = nodes.error().ToString();
      }
    }
    std::this_thread::sleep_for(50ms);
  }
  return Unavailable("gpufleet did not get ready in " +
                     std::to_string(options.ready_timeout.count()) + " s (" + last +
                     "); the logs end:\n" + LogTails());
}

std::vector<std::string> GpufleetInstance::BlockerCommand() const {
  return {"sh", "-c", "while [ ! -e \"$0\" ]; do sleep 0.05; done", release_file().string()};
}

Status GpufleetInstance::CancelAllJobs() {
  ApiClient client(socket_);
  // The whole queue in one command first (a filtered cancel): one request per job costs a turn
  // each, and a turn's cost grows with the queue, so the tens of thousands of jobs the batch
  // measures leave would take minutes one by one. What it misses is cancelled below.
  static_cast<void>(client.CallJson("POST", "/api/v1/jobs/cancel", {{{"state", "PENDING"}}}));
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

Status GpufleetInstance::StopChild(Child& child) {
  if (child.pid <= 0) {
    return OkStatus();
  }
  kill(child.pid, SIGTERM);
  const bool stopped = WaitPidWithDeadline(child.pid, 20s);
  if (!stopped) {
    kill(child.pid, SIGKILL);
    WaitPidWithDeadline(child.pid, 5s);
  }
  child.pid = -1;
  if (!stopped) {
    return Unavailable(child.name + " did not stop within 20 s of SIGTERM; killed it");
  }
  return OkStatus();
}

Status GpufleetInstance::KillLeftoverJobs() {
  // `gpufleet up` keeps its jobs in data/jobs, each agent in agent-N/jobs.
  std::vector<fs::path> job_dirs = {dir_ / "data" / "jobs"};
  for (std::size_t i = 1; i <= agents_.size(); ++i) {
    job_dirs.push_back(dir_ / ("agent-" + std::to_string(i)) / "jobs");
  }
  std::error_code ec;
  // Shims of jobs that just ended may need a moment to exit by themselves.
  std::vector<std::pair<fs::path, PidRecord>> alive;
  const Deadline deadline(10s);
  do {
    alive.clear();
    for (const fs::path& jobs : job_dirs) {
      if (!fs::is_directory(jobs, ec)) {
        continue;
      }
      for (const auto& entry : fs::directory_iterator(jobs, ec)) {
        for (const char* name : {"shim.pid", "job.pid"}) {
          if (auto r = ReadPidFile(entry.path() / name); r && StillRunning(*r)) {
            alive.emplace_back(entry.path() / name, *r);
          }
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
  return Unavailable("job processes still alive after gpufleet stopped; killed:" + names);
}

Status GpufleetInstance::Stop() {
  if (stopped_) {
    return OkStatus();
  }
  stopped_ = true;
  std::vector<Error> errors;
  if (server_.pid > 0) {
    if (Status s = CancelAllJobs(); !s.ok()) {
      errors.push_back(s.error());
    }
  }
  // Blockers also end by themselves once this exists (if gpufleet could not cancel them).
  std::ofstream(release_file()).put('\n');
  for (Child& agent : agents_) {
    if (Status s = StopChild(agent); !s.ok()) {
      errors.push_back(s.error());
    }
  }
  if (Status s = StopChild(server_); !s.ok()) {
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
    std::cerr << "bench: cleanup: " << e.ToString() << "\n";
  }
  return Unavailable(message);
}

GpufleetInstance::~GpufleetInstance() {
  try {
    (void)Stop();  // reports its own errors
  } catch (const std::exception& e) {
    std::cerr << "bench: cleanup: " << e.what() << "\n";
  }
}

std::string GpufleetInstance::LogTails() const {
  std::string out;
  std::vector<const Child*> all{&server_};
  for (const Child& agent : agents_) {
    all.push_back(&agent);
  }
  for (const Child* child : all) {
    const std::string log = ReadFile(child->log);
    std::size_t pos = log.size();
    for (int lines = 0; lines < 20 && pos > 0; ++lines) {
      pos = log.rfind('\n', pos - 1);
      if (pos == std::string::npos) {
        pos = 0;
        break;
      }
    }
    if (pos < log.size()) {
      out += "--- " + child->name + " (" + child->log.string() + ")\n" + log.substr(pos) + "\n";
    }
  }
  return out;
}

}  // namespace gf::bench
