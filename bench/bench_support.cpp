#include "bench_support.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>

#include <fcntl.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gf::bench {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void OnInterrupt(int) {
  g_interrupted = 1;
}

}  // namespace

void InstallInterruptHandler() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool Interrupted() {
  return g_interrupted != 0;
}

std::string Ms(const Stats& s) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f ms (max %.1f)", s.median, s.max);
  return text;
}

void PrintRows(const std::string& title, const std::vector<Row>& rows) {
  std::size_t what = std::max<std::size_t>(title.size(), 4);
  std::size_t figure = 6;  // "figure"
  for (const Row& r : rows) {
    what = std::max(what, r.what.size());
    figure = std::max(figure, r.figure.size());
  }
  const auto line = [&](const std::string& a, const std::string& b, const std::string& c) {
    std::printf("| %-*s | %-*s | %s |\n",
                static_cast<int>(what),
                a.c_str(),
                static_cast<int>(figure),
                b.c_str(),
                c.c_str());
  };
  line(title, "figure", "note");
  std::printf(
      "|%s|%s|---|\n", std::string(what + 2, '-').c_str(), std::string(figure + 2, '-').c_str());
  for (const Row& r : rows) {
    line(r.what, r.figure, r.note);
  }
}

std::string CurrentUser() {
  const passwd* pw = getpwuid(getuid());  // NOLINT(concurrency-mt-unsafe): before any thread
  return pw != nullptr ? pw->pw_name : "uid" + std::to_string(getuid());
}

Status SleepFor(std::chrono::milliseconds d) {
  if (Interrupted()) {
    return Unavailable("interrupted");
  }
  std::this_thread::sleep_for(d);
  return OkStatus();
}

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

std::int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::int64_t UnixNanosNow() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Stats Summarize(std::vector<double> values) {
  Stats s;
  if (values.empty()) {
    return s;
  }
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  s.count = n;
  s.min = values.front();
  s.max = values.back();
  s.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  // Nearest rank: the smallest value with at least 99% of the sample at or below it.
  const std::size_t rank = (99 * n + 99) / 100;
  s.p99 = values[std::clamp<std::size_t>(rank, 1, n) - 1];
  return s;
}

bool IsTerminalState(const std::string& state) {
  return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || state == "TIMEOUT" ||
         state == "PREEMPTED" || state == "NODE_FAIL";
}

bool HasStarted(const std::string& state) {
  return state == "RUNNING" || IsTerminalState(state);
}

Result<nlohmann::json> SubmitJob(ApiClient& client,
                                 const std::vector<std::string>& argv,
                                 int gpus) {
  const nlohmann::json body = {{"command", argv}, {"gpus", gpus}, {"workdir", "/tmp"}};
  GF_ASSIGN_OR_RETURN(nlohmann::json job, client.CallJson("POST", "/api/v1/jobs", body));
  if (!job.is_object() || !job.contains("id") || !job["id"].is_number_integer()) {
    return Internal("submit answered without a job id: " + job.dump());
  }
  return job;
}

Result<nlohmann::json> GetJob(ApiClient& client, std::int64_t id) {
  return client.CallJson("GET", "/api/v1/jobs/" + std::to_string(id));
}

Result<nlohmann::json> ListJobs(ApiClient& client, int limit, bool include_finished) {
  std::string target = "/api/v1/jobs?limit=" + std::to_string(limit);
  if (include_finished) {
    target += "&all=1";
  }
  GF_ASSIGN_OR_RETURN(nlohmann::json body, client.CallJson("GET", target));
  if (!body.is_object() || !body.contains("jobs") || !body["jobs"].is_array()) {
    return Internal("job list without a \"jobs\" array");
  }
  return std::move(body["jobs"]);
}

Result<double> RunOnClients(const std::string& socket,
                            int clients,
                            int total,
                            const std::function<Status(ApiClient&, int)>& call) {
  std::mutex mu;
  std::optional<Error> first_error;  // GUARDED_BY(mu)
  std::atomic<bool> failed{false};
  std::latch ready(clients);
  std::latch go(1);
  auto fail = [&](const Error& e) {
    std::lock_guard lock(mu);
    if (!first_error) {
      first_error = e;
    }
    failed = true;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      ApiClient client(socket);
      auto health = client.CallJson("GET", "/api/v1/health");
      if (!health.ok()) {
        fail(health.error());
      }
      ready.count_down();
      go.wait();
      for (int i = t; i < total && !failed && !Interrupted(); i += clients) {
        if (Status s = call(client, i); !s.ok()) {
          fail(s.error());
        }
      }
    });
  }
  ready.wait();
  const auto start = SteadyClock::now();
  go.count_down();
  for (auto& th : threads) {
    th.join();
  }
  const double elapsed = SecondsSince(start);
  if (first_error) {
    return *first_error;
  }
  if (Interrupted()) {
    return Unavailable("interrupted");
  }
  return elapsed;
}

Result<int> RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  // Build every argument before fork: the child of a threaded process may only call
  // async-signal-safe functions.
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: execve's signature
  }
  args.push_back(nullptr);
  std::vector<std::string> env_strings(env);
  for (char** e = environ; *e != nullptr; ++e) {
    env_strings.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& e : env_strings) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) {
    return IoError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    const int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return IoError(std::string("waitpid: ") + std::strerror(errno));
    }
  }
  if (!WIFEXITED(status)) {
    return IoError(argv[0] + " ended by signal " + std::to_string(WTERMSIG(status)));
  }
  return WEXITSTATUS(status);
}

int RunMain(const char* name, const std::function<int()>& bench) {
  try {
    return bench();
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gf::bench
