// gf_cli_bench: what one `gpufleet` client process costs (issue #26 item 1): users' scripts
// submit with the CLI, one process per job, so a process's start-up is a submission's price.
//
// Starts a private `gpufleet up --gpus sim:4xH100-80GB` (its own data dir and socket in
// /tmp/gf-bench.XXXXXX), fills its 4 GPUs with a blocker job so that every job submitted after
// it stays pending, then for each client binary (--client, repeatable: two builds side by side
// against the same server, in the same minutes) times:
//   - `gpufleet --version`, N times one after another (no server: the process alone);
//   - `gpufleet --socket S submit --gpus 1 -- true`, N processes one after another (1 client),
//     then N spread over 4 threads that each start one process after another (4 clients):
//     jobs/s = N / wall time, and each process's time from fork to exit (median, p99).
// Every process must exit 0. Prints a markdown table. Waits have deadlines; Ctrl-C cleans up.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "api/api_client.h"

#include "bench_support.h"
#include "gpufleet_instance.h"

namespace gf::bench {
namespace {

using namespace std::chrono_literals;

constexpr int kGpus = 4;

struct Options {
  std::string gpufleet = GF_GPUFLEET_PATH;  // runs `gpufleet up`
  std::vector<std::string> clients;         // the binaries timed; default: --gpufleet
  int jobs = 1000;
  int version_runs = 200;
  std::vector<int> client_counts{1, 4};
};

struct Timing {
  double wall_s = 0;
  Stats per_process_ms;
};

// Runs `argv` `n` times, from `threads` threads that each start one process after another;
// every run must exit 0.
Result<Timing> TimeProcesses(const std::vector<std::string>& argv, int threads, int n) {
  std::vector<double> ms(static_cast<std::size_t>(n));
  std::mutex mu;
  Status first_error = OkStatus();  // GUARDED_BY(mu)
  std::atomic<bool> failed{false};
  const SteadyClock::time_point start = SteadyClock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = t; i < n && !failed && !Interrupted(); i += threads) {
        const SteadyClock::time_point begin = SteadyClock::now();
        Result<int> rc = RunCommand(argv, {});
        ms[static_cast<std::size_t>(i)] = SecondsSince(begin) * 1000;
        if (!rc.ok() || *rc != 0) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.ok()) {
            first_error =
                rc.ok() ? Internal(argv[0] + " exited " + std::to_string(*rc)) : Status(rc.error());
          }
          failed = true;
        }
      }
    });
  }
  for (std::thread& w : workers) {
    w.join();
  }
  Timing timing{.wall_s = SecondsSince(start), .per_process_ms = Summarize(ms)};
  GF_TRY(first_error);
  if (Interrupted()) {
    return Unavailable("interrupted");
  }
  return timing;
}

Status StartBlocker(GpufleetInstance& gf) {
  ApiClient client(gf.socket());
  GF_ASSIGN_OR_RETURN(const nlohmann::json job, SubmitJob(client, gf.BlockerCommand(), kGpus));
  GF_ASSIGN_OR_RETURN(const nlohmann::json running,
                      WaitForJob(
                          client,
                          job["id"].get<std::int64_t>(),
                          [](const std::string& s) { return HasStarted(s); },
                          Deadline(30s),
                          20ms));
  if (running["state"] != "RUNNING") {
    return Internal("the blocker job ended early: " + running.dump());
  }
  return OkStatus();
}

void PrintRow(
    const std::string& client, const std::string& measure, int n, const Timing& t, bool rate) {
  char line[512];
  std::snprintf(line,
                sizeof line,
                "| %s | %s | %d | %s | %.2f | %.2f |\n",
                client.c_str(),
                measure.c_str(),
                n,
                rate ? std::to_string(static_cast<int>(n / t.wall_s + 0.5)).c_str() : "",
                t.per_process_ms.median,
                t.per_process_ms.p99);
  std::cout << line << std::flush;
}

int Main(int argc, char** argv) {
  Options options;
  CLI::App app("gf_cli_bench: the cost of one gpufleet client process (submit, --version)");
  app.add_option("--gpufleet", options.gpufleet, "gpufleet binary that runs `gpufleet up`")
      ->capture_default_str();
  app.add_option("--client",
                 options.clients,
                 "gpufleet binary to time (repeatable: builds side by side; default --gpufleet)");
  app.add_option("--jobs", options.jobs, "submissions per client count")->capture_default_str();
  app.add_option("--version-runs", options.version_runs, "`gpufleet --version` runs (0: none)")
      ->capture_default_str();
  app.add_option("--client-counts", options.client_counts, "parallel submitters")
      ->delimiter(',')
      ->capture_default_str();
  bool quick = false;
  app.add_flag("--quick", quick, "200 jobs, 50 --version runs");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    options.jobs = std::min(options.jobs, 200);
    options.version_runs = std::min(options.version_runs, 50);
  }
  if (options.clients.empty()) {
    options.clients.push_back(options.gpufleet);
  }
  for (const std::string& binary : options.clients) {
    if (access(binary.c_str(), X_OK) != 0) {
      std::cerr << "gf_cli_bench: " << binary
                << " is not an executable; build the gpufleet target or pass --gpufleet PATH\n";
      return 2;
    }
  }
  InstallInterruptHandler();
  InstanceOptions io;
  io.gpufleet = options.gpufleet;
  io.gpus = "sim:" + std::to_string(kGpus) + "xH100-80GB";
  io.expected_gpus = kGpus;
  Result<std::unique_ptr<GpufleetInstance>> started = GpufleetInstance::Start(io);
  if (!started.ok()) {
    std::cerr << "gf_cli_bench: " << started.error().ToString() << "\n";
    return 1;
  }
  GpufleetInstance& gf = **started;
  if (Status s = StartBlocker(gf); !s.ok()) {
    std::cerr << "gf_cli_bench: " << s.error().ToString() << "\n";
    return 1;
  }
  std::cout << "| client | measure | processes | jobs/s | ms per process, median | p99 |\n"
            << "|---|---|---|---|---|---|\n";
  for (const std::string& binary : options.clients) {
    if (options.version_runs > 0) {
      Result<Timing> t = TimeProcesses({binary, "--version"}, 1, options.version_runs);
      if (!t.ok()) {
        std::cerr << "gf_cli_bench: --version: " << t.error().ToString() << "\n";
        return 1;
      }
      PrintRow(binary, "`gpufleet --version`", options.version_runs, *t, false);
    }
    const std::vector<std::string> submit = {
        binary, "--socket", gf.socket(), "submit", "--gpus", "1", "--", "true"};
    for (const int clients : options.client_counts) {
      Result<Timing> t = TimeProcesses(submit, clients, options.jobs);
      if (!t.ok()) {
        std::cerr << "gf_cli_bench: submit: " << t.error().ToString() << "\n";
        return 1;
      }
      PrintRow(
          binary,
          "`gpufleet submit`, " + std::to_string(clients) + (clients == 1 ? " client" : " clients"),
          options.jobs,
          *t,
          true);
    }
  }
  return gf.Stop().ok() ? 0 : 1;
}

}  // namespace
}  // namespace gf::bench

int main(int argc, char** argv) {
  return gf::bench::RunMain("gf_cli_bench", [&] { return gf::bench::Main(argc, argv); });
}
