// gf_history_bench: `gpufleet history` over a long history (issue #24's bar: with 100,000
// finished jobs, the first page in under 100 ms and `--csv` streamed in constant memory),
// against a real `gpufleet up` on simulated GPUs whose SQLite store the bench fills first.
//
// Measures, and prints as a table:
//   - the first page (GET /api/v1/history?limit=100), N times: median and max;
//   - the first page of one state (FAILED, one job in ten), and a page deep in the history
//     (a cursor at the middle), as the same;
//   - `gpufleet history` (the CLI: its table of the newest 100), wall time of the process;
//   - `gpufleet history --csv` of 10 % of the jobs and of all of them: wall time, rows, and the
//     client's peak RSS (from wait4): constant memory means the two RSS figures match.
//
// Usage: gf_history_bench [--jobs 100000] [--repeat 20] [--gpufleet PATH]. How to build and
// the figures measured: bench/README.md.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api_client.h"
#include "store/sqlite/sqlite_store.h"

#include "bench_support.h"
#include "gpufleet_instance.h"

namespace gf::bench {
namespace {

using nlohmann::json;

constexpr std::int64_t kHistoryStartMs = 1'767'225'600'000;  // 2026-01-01T00:00:00Z

// `jobs` finished jobs of the current user (so that they are the caller's to read), one every
// five minutes from 2026-01-01, each run 4 minutes on 1-4 GPUs of node history-N, every tenth
// FAILED; with their GPU usage, as the controller stores a job that ended. 5,000 a commit.
Status SeedJobs(const std::filesystem::path& data_dir, int jobs) {
  std::cerr << "writing " << jobs << " finished jobs into the store\n";
  GF_ASSIGN_OR_RETURN(auto store, OpenSqliteStore(data_dir / "state.db"));
  const std::string user = CurrentUser();
  constexpr int kPerCommit = 5'000;
  for (int first = 1; first <= jobs; first += kPerCommit) {
    StoreBatch batch;
    for (int id = first; id < std::min(first + kPerCommit, jobs + 1); ++id) {
      Job job;
      job.id = JobId(id);
      job.owner = Owner{getuid(), getgid(), user};
      job.spec.name = "train-" + std::to_string(id % 100);
      job.spec.argv = {"python3", "train.py", "--seed", std::to_string(id)};
      job.spec.workdir = "/home/" + user + "/project";
      job.spec.env = {{"PATH", "/usr/bin:/bin"}};
      job.spec.request.gpus = 1 + id % 4;
      job.spec.team = id % 2 == 0 ? "vision" : "nlp";
      job.spec.time_limit = std::chrono::hours(1);
      job.submit_time = FromUnixMillis(kHistoryStartMs + std::int64_t{id} * 300'000);
      job.start_time = job.submit_time + std::chrono::seconds(20);
      job.end_time = *job.start_time + std::chrono::minutes(4);
      job.state = id % 10 == 0 ? JobState::kFailed : JobState::kCompleted;
      job.exit_code = id % 10 == 0 ? 1 : 0;
      job.reason = id % 10 == 0 ? "exited with code 1" : "exited with code 0";
      job.allocation = Allocation{.node = NodeId("history-" + std::to_string(id % 16)),
                                  .gpus = {},
                                  .gpu_milli = kWholeGpuMilli,
                                  .gpu_memory_mib = 0,
                                  .mig = GpuUuid()};
      for (int g = 0; g < job.spec.request.gpus; ++g) {
        job.allocation->gpus.emplace_back("GPU-history-" + std::to_string(g));
      }
      job.usage = JobUsage{.samples = 240,
                           .mean_util_pct = static_cast<double>(id % 97),
                           .peak_util_pct = 100,
                           .peak_memory_mib = std::int64_t{1'024} * (1 + id % 70),
                           .energy_mj = 84'000'000};
      batch.jobs.push_back(std::move(job));
    }
    GF_TRY(store->Commit(batch));
  }
  return OkStatus();
}

// Milliseconds of `repeat` GETs of `target`, each answering a page of `want` jobs.
Result<std::vector<double>> TimePage(ApiClient& client,
                                     const std::string& target,
                                     int repeat,
                                     std::size_t want) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = SteadyClock::now();
    GF_ASSIGN_OR_RETURN(const json page, client.CallJson("GET", target, std::nullopt));
    ms.push_back(SecondsSince(start) * 1000);
    if (page["jobs"].size() != want) {
      return Internal(target + ": " + std::to_string(page["jobs"].size()) + " jobs, want " +
                      std::to_string(want));
    }
  }
  return ms;
}

struct ChildRun {
  double seconds = 0;
  std::int64_t max_rss_kib = 0;
  std::int64_t lines = 0;
};

// Runs `argv` with its standard output in `out_file`; its wall time, peak RSS and output lines.
Result<ChildRun> RunCli(const std::vector<std::string>& argv,
                        const std::string& socket,
                        const std::filesystem::path& out_file) {
  const auto start = SteadyClock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    return IoError("fork failed");
  }
  if (pid == 0) {
    FILE* out = std::fopen(out_file.c_str(), "w");
    if (out == nullptr || dup2(fileno(out), STDOUT_FILENO) < 0) {
      _exit(127);
    }
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the forked child has one thread
    setenv("GPUFLEET_SOCKET", socket.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) {
      args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: execv's signature
    }
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Internal(argv[0] + " " + argv[1] + " failed (status " + std::to_string(status) + ")");
  }
  ChildRun run{.seconds = SecondsSince(start), .max_rss_kib = usage.ru_maxrss, .lines = 0};
  std::ifstream in(out_file);
  std::string line;
  while (std::getline(in, line)) {
    ++run.lines;
  }
  return run;
}

int Main(int argc, char** argv) {
  InstallInterruptHandler();
  int jobs = 100'000;
  int repeat = 20;
  std::string gpufleet = GF_GPUFLEET_PATH;
  CLI::App app("gpufleet history over a long history");
  app.add_option("--jobs", jobs, "finished jobs in the store")->capture_default_str();
  app.add_option("--repeat", repeat, "GETs of each page")->capture_default_str();
  app.add_option("--gpufleet", gpufleet, "the gpufleet binary")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  InstanceOptions io;
  io.gpufleet = gpufleet;
  io.gpus = "sim:4xH100-80GB";
  io.expected_gpus = 4;
  io.ready_timeout = std::chrono::seconds(300);
  io.seed = [jobs](const std::filesystem::path& data) {
    return SeedJobs(data, jobs);
  };
  auto started = GpufleetInstance::Start(io);
  if (!started.ok()) {
    std::cerr << started.error().ToString() << '\n';
    return 1;
  }
  GpufleetInstance& gf = **started;
  ApiClient client(gf.socket());
  std::vector<Row> rows;
  auto page = [&](const std::string& what, const std::string& target, std::size_t want) {
    auto ms = TimePage(client, target, repeat, want);
    if (!ms.ok()) {
      std::cerr << ms.error().ToString() << '\n';
      return false;
    }
    rows.push_back({what, Ms(Summarize(*ms)), std::to_string(repeat) + " GETs"});
    return true;
  };
  const std::string n = std::to_string(jobs);
  if (!page("first page, 100 of " + n + " jobs", "/api/v1/history?limit=100", 100) ||
      !page("first page of FAILED (1 in 10)", "/api/v1/history?limit=100&state=FAILED", 100) ||
      !page("a page in the middle (cursor " + std::to_string(jobs / 2) + ")",
            "/api/v1/history?limit=100&cursor=" + std::to_string(jobs / 2),
            100)) {
    return 1;
  }
  // A window near the history's end: the jobs of its last day (288), and of its last hour (12,
  // fewer than a page: the store reads to the end of the history to be sure there is no more).
  const std::int64_t last_end_ms = kHistoryStartMs + std::int64_t{jobs} * 300'000 + 260'000;
  const std::size_t day = static_cast<std::size_t>(std::min(jobs, 288));
  const std::size_t hour = static_cast<std::size_t>(std::min(jobs, 12));
  if (!page("--since its last day (100 of 288)",
            "/api/v1/history?limit=100&since_ms=" + std::to_string(last_end_ms - 86'400'000 + 1),
            std::min<std::size_t>(day, 100)) ||
      !page("--since its last hour (12: less than a page)",
            "/api/v1/history?limit=100&since_ms=" + std::to_string(last_end_ms - 3'600'000 + 1),
            hour)) {
    return 1;
  }
  const std::filesystem::path out = gf.dir() / "history.out";
  auto cli = [&](const std::string& what, const std::vector<std::string>& args) {
    std::vector<std::string> command = {gpufleet, "history"};
    command.insert(command.end(), args.begin(), args.end());
    auto run = RunCli(command, gf.socket(), out);
    if (!run.ok()) {
      std::cerr << run.error().ToString() << '\n';
      return false;
    }
    char figure[64];
    std::snprintf(figure, sizeof figure, "%.2f s", run->seconds);
    rows.push_back({what,
                    figure,
                    std::to_string(run->lines) + " lines, client peak RSS " +
                        std::to_string(run->max_rss_kib / 1024) + " MiB"});
    return true;
  };
  if (!cli("`gpufleet history` (table of the newest 100)", {}) ||
      !cli("`gpufleet history --csv --limit " + std::to_string(jobs / 10) + "`",
           {"--csv", "--limit", std::to_string(jobs / 10)}) ||
      !cli("`gpufleet history --csv` (every job)", {"--csv"})) {
    return 1;
  }
  PrintRows("history", rows);
  return gf.Stop().ok() ? 0 : 1;
}

}  // namespace
}  // namespace gf::bench

int main(int argc, char** argv) {
  return gf::bench::RunMain("gf_history_bench", [&] { return gf::bench::Main(argc, argv); });
}
