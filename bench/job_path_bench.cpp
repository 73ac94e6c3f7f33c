// gf_job_path_bench: measures gpufleet's job path end to end, against a real `gpufleet up` on
// simulated GPUs, and prints a table beside the Slurm figures measured on the same kind of
// machine (/work/shared/anchors/slurm-local.md). How to build and run it: bench/README.md.
//
// Each group of measurements gets its own fresh `gpufleet up` (one node, sim:32xH100-80GB,
// its own temp dir), so that one measurement's queue does not slow the next:
//   A. submit throughput, 1 client: N one-GPU `true` jobs that cannot start (a blocker job
//      holds all 32 GPUs), submitted one after another; each answer comes after its fsync.
//   B. the same from 4 client threads (group commit shares fsyncs), then the queue topped up
//      to P pending jobs and `GET /api/v1/jobs?limit=P` and `gpufleet queue` timed.
//   C. submit → running latency on the idle cluster (K jobs, one at a time), then the
//      makespan of M one-GPU `sleep 0.1` jobs submitted by 4 client threads.
// Waits poll with deadlines; Ctrl-C stops the bench and still cleans up.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "api/api_client.h"

#include "bench_support.h"
#include "gpufleet_instance.h"

namespace gf::bench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr int kNodeGpus = 32;
constexpr const char* kSimGpus = "sim:32xH100-80GB";
constexpr int kClients = 4;

struct Options {
  std::string gpufleet = GF_GPUFLEET_PATH;
  int jobs = 1000;         // makespan jobs
  int submit_jobs = 1000;  // jobs per submit-throughput measurement
  int pending = 2000;      // pending jobs for the listing
  int latency_jobs = 20;
  int list_reps = 10;
};

struct Row {
  std::string measure, gpufleet, slurm_default, slurm_tuned, note;
};

std::string Fmt(const char* format, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

void Progress(const std::string& line) {
  std::cerr << "gf_job_path_bench: " << line << std::endl;
}

Result<std::unique_ptr<GpufleetInstance>> StartInstance(const Options& options) {
  InstanceOptions io;
  io.gpufleet = options.gpufleet;
  io.gpus = kSimGpus;
  io.expected_gpus = kNodeGpus;
  return GpufleetInstance::Start(io);
}

// Submits a job that holds every GPU until the instance's release file exists; waits until
// it runs, so that every job submitted after it stays pending.
Status StartBlocker(GpufleetInstance& gf) {
  ApiClient client(gf.socket());
  GF_ASSIGN_OR_RETURN(const json job, SubmitJob(client, gf.BlockerCommand(), kNodeGpus));
  GF_ASSIGN_OR_RETURN(const json running,
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

// Submits `n` one-GPU `true` jobs from `clients` threads; each must come back PENDING.
// Returns the elapsed seconds; `latencies_ms` gets each call's time.
Result<double> SubmitPending(GpufleetInstance& gf,
                             int clients,
                             int n,
                             std::vector<double>* latencies_ms) {
  std::vector<double> lat(static_cast<std::size_t>(n));
  GF_ASSIGN_OR_RETURN(const double elapsed,
                      RunOnClients(gf.socket(), clients, n, [&](ApiClient& c, int i) -> Status {
                        const auto t0 = SteadyClock::now();
                        GF_ASSIGN_OR_RETURN(const json job, SubmitJob(c, {"true"}, 1));
                        lat[static_cast<std::size_t>(i)] = SecondsSince(t0) * 1000;
                        if (job.value("state", std::string()) != "PENDING") {
                          return Internal(
                              "a submitted job did not stay pending (the blocker should hold every "
                              "GPU): " +
                              job.dump());
                        }
                        return OkStatus();
                      }));
  if (latencies_ms != nullptr) {
    *latencies_ms = std::move(lat);
  }
  return elapsed;
}

Status MeasureSubmit(const Options& options,
                     int clients,
                     GpufleetInstance& gf,
                     std::vector<Row>* rows,
                     std::vector<std::string>* details) {
  Progress("submit throughput, " + std::to_string(clients) + " client(s), " +
           std::to_string(options.submit_jobs) + " jobs");
  GF_TRY(StartBlocker(gf));
  std::vector<double> lat;
  GF_ASSIGN_OR_RETURN(const double elapsed, SubmitPending(gf, clients, options.submit_jobs, &lat));
  const double rate = options.submit_jobs / elapsed;
  const bool one = clients == 1;
  const std::string n = std::to_string(options.submit_jobs);
  const std::string note =
      one ? n +
                " × `true`, 1 GPU, kept pending by a job holding all GPUs (Slurm: `sbatch "
                "--hold`); queue grows 0→" +
                n + "; each answered after its fsync"
          : "the same from 4 threads, each its own connection; concurrent submissions share "
            "an fsync (group commit)";
  rows->push_back({"submit throughput, " + std::to_string(clients) + (one ? " client" : " clients"),
                   Fmt("%.0f jobs/s", rate),
                   one ? "152 jobs/s" : "249 jobs/s",
                   one ? "144 jobs/s" : "251 jobs/s",
                   note});
  // The first and last tenth of the calls: how the cost of a submit grows with the queue.
  const auto tenth = static_cast<std::ptrdiff_t>(std::max<std::size_t>(1, lat.size() / 10));
  const Stats s = Summarize(lat);
  const Stats first = Summarize({lat.begin(), lat.begin() + tenth});
  const Stats last = Summarize({lat.end() - tenth, lat.end()});
  details->push_back("submit, " + std::to_string(clients) + " client(s): per-call latency " +
                     Fmt("median %.2f ms, p99 %.2f ms, max %.2f ms; ", s.median, s.p99, s.max) +
                     Fmt("median of the first tenth %.2f ms, of the last tenth %.2f ms",
                         first.median,
                         last.median));
  return OkStatus();
}

Status MeasureListing(const Options& options,
                      GpufleetInstance& gf,
                      std::vector<Row>* rows,
                      std::vector<std::string>* details) {
  ApiClient client(gf.socket());
  GF_ASSIGN_OR_RETURN(const json active, ListJobs(client, 100000));
  const auto pending = static_cast<int>(std::count_if(active.begin(), active.end(), [](auto& j) {
    return j.value("state", std::string()) == "PENDING";
  }));
  if (pending < options.pending) {
    Progress("topping the queue up to " + std::to_string(options.pending) + " pending jobs");
    GF_TRY(SubmitPending(gf, kClients, options.pending - pending, nullptr));
  }
  Progress("listing " + std::to_string(options.pending) + " pending jobs");
  const std::string target = "/api/v1/jobs?limit=" + std::to_string(options.pending);
  std::vector<double> api_ms;
  std::size_t bytes = 0;
  for (int r = 0; r < options.list_reps; ++r) {
    const auto t0 = SteadyClock::now();
    GF_ASSIGN_OR_RETURN(const HttpResponse resp, client.Call("GET", target));
    const json body = json::parse(resp.body);  // a client has to parse it too
    api_ms.push_back(SecondsSince(t0) * 1000);
    if (resp.status != 200 || static_cast<int>(body["jobs"].size()) != options.pending) {
      return Internal("the listing did not return " + std::to_string(options.pending) +
                      " jobs (HTTP " + std::to_string(resp.status) + ")");
    }
    bytes = resp.body.size();
  }
  std::vector<double> cli_ms;
  for (int r = 0; r < options.list_reps; ++r) {
    const auto t0 = SteadyClock::now();
    GF_ASSIGN_OR_RETURN(
        const int rc, RunCommand({options.gpufleet, "queue"}, {"GPUFLEET_SOCKET=" + gf.socket()}));
    cli_ms.push_back(SecondsSince(t0) * 1000);
    if (rc != 0) {
      return Internal("gpufleet queue exited " + std::to_string(rc));
    }
  }
  const Stats a = Summarize(api_ms);
  const Stats c = Summarize(cli_ms);
  const std::string n = std::to_string(options.pending);
  rows->push_back({"`GET /api/v1/jobs?limit=" + n + "`, " + n + " pending",
                   Fmt("%.1f ms", a.median),
                   "39 ms (`squeue`)",
                   "35 ms (`squeue`)",
                   Fmt("median of %.0f; request + JSON parse in the client, %.1f MB",
                       static_cast<double>(a.count),
                       static_cast<double>(bytes) / 1e6)});
  rows->push_back({"`gpufleet queue` (CLI), " + n + " pending",
                   Fmt("%.1f ms", c.median),
                   "39 ms",
                   "35 ms",
                   Fmt("median of %.0f; process start to exit, output to /dev/null; the CLI "
                       "lists at most 1,000 jobs",
                       static_cast<double>(c.count))});
  details->push_back(
      Fmt("listing: API min %.1f ms, max %.1f ms; CLI min %.1f ms, ", a.min, a.max, c.min) +
      Fmt("max %.1f ms", c.max));
  return OkStatus();
}

std::string Range(const Stats& s) {
  return Fmt("%.3f s (%.3f–%.3f)", s.median, s.min, s.max);
}

Status MeasureLatency(const Options& options,
                      GpufleetInstance& gf,
                      std::vector<Row>* rows,
                      std::vector<std::string>* details) {
  Progress("submit → running latency, " + std::to_string(options.latency_jobs) + " jobs");
  ApiClient client(gf.socket());
  std::vector<double> server_s, job_s, client_s;
  for (int i = 0; i < options.latency_jobs; ++i) {
    // The job writes the wall clock at the moment it runs: the same point Slurm's figure
    // ("job script running") is taken at.
    const auto stamp = gf.dir() / ("started." + std::to_string(i));
    const std::int64_t sent_ns = UnixNanosNow();
    const auto t0 = SteadyClock::now();
    GF_ASSIGN_OR_RETURN(const json job,
                        SubmitJob(client, {"sh", "-c", "date +%s%N > \"$0\"", stamp.string()}, 1));
    const auto id = job["id"].get<std::int64_t>();
    GF_TRY(WaitForJob(
        client, id, [](const std::string& s) { return HasStarted(s); }, Deadline(30s), 5ms));
    client_s.push_back(SecondsSince(t0));
    GF_ASSIGN_OR_RETURN(const json done,
                        WaitForJob(
                            client,
                            id,
                            [](const std::string& s) { return IsTerminalState(s); },
                            Deadline(30s),
                            20ms));
    if (done["state"] != "COMPLETED") {
      return Internal("latency job did not complete: " + done.dump());
    }
    server_s.push_back(static_cast<double>(done["start_time_ms"].get<std::int64_t>() -
                                           done["submit_time_ms"].get<std::int64_t>()) /
                       1000);
    std::int64_t ran_ns = 0;
    if (!(std::ifstream(stamp) >> ran_ns)) {
      return Internal("latency job wrote no timestamp to " + stamp.string());
    }
    job_s.push_back(static_cast<double>(ran_ns - sent_ns) / 1e9);
  }
  const std::string k = std::to_string(options.latency_jobs);
  rows->push_back({"submit → job process running, idle cluster",
                   Range(Summarize(job_s)),
                   "0.87 s (0.14–2.99)",
                   "0.51 s (0.13–2.45)",
                   "median (min–max) of " + k +
                       "; from the client sending POST to the job's own `date` (Slurm: to the "
                       "job script running)"});
  rows->push_back({"submit → RUNNING recorded (server times)",
                   Range(Summarize(server_s)),
                   "—",
                   "—",
                   "`start_time_ms − submit_time_ms`; the agent takes start_time as it begins the "
                   "launch, before the supervisor process exists"});
  rows->push_back({"submit → client sees RUNNING",
                   Range(Summarize(client_s)),
                   "—",
                   "—",
                   "client polls `GET /api/v1/jobs/{id}` every 5 ms"});
  (void)details;
  return OkStatus();
}

struct JobTimes {
  std::int64_t submit_ms = 0, start_ms = 0, end_ms = 0;
  std::string gpu;
};

// Where the makespan went: per-job GPU hold time, queue wait, and the idle gap on a GPU between
// one job's end and the next one's start.
void ExplainMakespan(const std::vector<JobTimes>& jobs,
                     double makespan_s,
                     std::vector<std::string>* details) {
  std::vector<double> hold, wait;
  std::map<std::string, std::vector<const JobTimes*>> by_gpu;
  double busy_s = 0;
  for (const auto& j : jobs) {
    hold.push_back(static_cast<double>(j.end_ms - j.start_ms) / 1000);
    wait.push_back(static_cast<double>(j.start_ms - j.submit_ms) / 1000);
    busy_s += hold.back();
    by_gpu[j.gpu].push_back(&j);
  }
  std::vector<double> gaps;
  for (auto& [gpu, list] : by_gpu) {
    std::sort(list.begin(), list.end(), [](const JobTimes* a, const JobTimes* b) {
      return a->start_ms < b->start_ms;
    });
    for (std::size_t i = 1; i < list.size(); ++i) {
      gaps.push_back(static_cast<double>(list[i]->start_ms - list[i - 1]->end_ms) / 1000);
    }
  }
  const Stats h = Summarize(hold), w = Summarize(wait), g = Summarize(gaps);
  details->push_back(
      Fmt("makespan: GPU held per job (RUNNING → exit recorded) median %.3f s, "
          "min %.3f, max %.3f",
          h.median,
          h.min,
          h.max));
  details->push_back(
      Fmt("makespan: GPU idle between consecutive jobs median %.3f s, max %.3f; "
          "GPUs used %.0f",
          g.median,
          g.max,
          static_cast<double>(by_gpu.size())));
  details->push_back(
      Fmt("makespan: queue wait median %.2f s, max %.2f; GPU busy %.0f%% of "
          "32 × makespan",
          w.median,
          w.max,
          100 * busy_s / (kNodeGpus * makespan_s)));
}

Status MeasureMakespan(const Options& options,
                       GpufleetInstance& gf,
                       std::vector<Row>* rows,
                       std::vector<std::string>* details) {
  const int n = options.jobs;
  Progress("makespan of " + std::to_string(n) + " × sleep 0.1");
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  const auto t0 = SteadyClock::now();
  GF_ASSIGN_OR_RETURN(const double submit_s,
                      RunOnClients(gf.socket(), kClients, n, [&](ApiClient& c, int i) -> Status {
                        GF_ASSIGN_OR_RETURN(const json job, SubmitJob(c, {"sleep", "0.1"}, 1));
                        ids[static_cast<std::size_t>(i)] = job["id"].get<std::int64_t>();
                        return OkStatus();
                      }));
  ApiClient client(gf.socket());
  const Deadline deadline(60s + n * 500ms);
  auto last_report = SteadyClock::now();
  while (true) {
    GF_ASSIGN_OR_RETURN(const json active, ListJobs(client, 1));
    if (active.empty()) {
      break;
    }
    if (deadline.Expired()) {
      return Unavailable("makespan jobs still active at the deadline");
    }
    if (SecondsSince(last_report) > 10) {
      GF_ASSIGN_OR_RETURN(const json all_active, ListJobs(client, 100000));
      Progress(Fmt("  %.0f jobs active after %.0f s",
                   static_cast<double>(all_active.size()),
                   SecondsSince(t0)));
      last_report = SteadyClock::now();
    }
    GF_TRY(SleepFor(100ms));
  }
  const double client_s = SecondsSince(t0);
  GF_ASSIGN_OR_RETURN(const json finished, ListJobs(client, n + 1000, true));
  std::map<std::int64_t, const json*> by_id;
  for (const auto& j : finished) {
    by_id[j["id"].get<std::int64_t>()] = &j;
  }
  std::vector<JobTimes> times;
  std::int64_t first_submit = INT64_MAX, last_end = 0;
  for (const std::int64_t id : ids) {
    const auto it = by_id.find(id);
    if (it == by_id.end() || (*it->second)["state"] != "COMPLETED") {
      return Internal("makespan job " + std::to_string(id) + " did not complete: " +
                      (it == by_id.end() ? std::string("not listed") : it->second->dump()));
    }
    const json& j = *it->second;
    JobTimes t{j["submit_time_ms"].get<std::int64_t>(),
               j["start_time_ms"].get<std::int64_t>(),
               j["end_time_ms"].get<std::int64_t>(),
               j["gpu_uuids"].dump()};
    first_submit = std::min(first_submit, t.submit_ms);
    last_end = std::max(last_end, t.end_ms);
    times.push_back(std::move(t));
  }
  const double makespan = static_cast<double>(last_end - first_submit) / 1000;
  rows->push_back({Fmt("makespan, %.0f one-GPU `sleep 0.1` jobs", n),
                   Fmt("%.1f s", makespan),
                   "36.1 s",
                   "18.9 s",
                   Fmt("one node of 32 GPUs (`gpufleet up` is single-node; Slurm: 4 × 8); ideal "
                       "%.1f s; submitted by 4 clients in %.1f s; client saw the end at %.1f s",
                       n * 0.1 / kNodeGpus,
                       submit_s,
                       client_s)});
  ExplainMakespan(times, makespan, details);
  return OkStatus();
}

void PrintTable(const Options& options,
                const std::vector<Row>& rows,
                const std::vector<std::string>& details) {
  std::cout << "\n| measure | gpufleet | Slurm default | Slurm tuned | note |\n"
            << "|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    std::cout << "| " << r.measure << " | " << r.gpufleet << " | " << r.slurm_default << " | "
              << r.slurm_tuned << " | " << r.note << " |\n";
  }
  std::cout << "\nSlurm: 22.05.8 on this kind of machine (2 shared cores), figures for 1,000 jobs "
               "and 2,000 pending (/work/shared/anchors/slurm-local.md).\n";
  if (options.jobs != 1000 || options.pending != 2000 || options.submit_jobs != 1000) {
    std::cout << "Note: this run used other sizes than the Slurm figures (jobs " << options.jobs
              << ", submits " << options.submit_jobs << ", pending " << options.pending << ").\n";
  }
  std::cout << "\n";
  for (const auto& d : details) {
    std::cout << "- " << d << "\n";
  }
}

Status RunAll(const Options& options, std::vector<Row>* rows, std::vector<std::string>* details) {
  {
    GF_ASSIGN_OR_RETURN(auto gf, StartInstance(options));
    GF_TRY(MeasureSubmit(options, 1, *gf, rows, details));
    Progress("cleaning up (cancelling the queue)");
    GF_TRY(gf->Stop());
  }
  {
    GF_ASSIGN_OR_RETURN(auto gf, StartInstance(options));
    GF_TRY(MeasureSubmit(options, kClients, *gf, rows, details));
    GF_TRY(MeasureListing(options, *gf, rows, details));
    Progress("cleaning up (cancelling the queue)");
    GF_TRY(gf->Stop());
  }
  {
    GF_ASSIGN_OR_RETURN(auto gf, StartInstance(options));
    GF_TRY(MeasureLatency(options, *gf, rows, details));
    GF_TRY(MeasureMakespan(options, *gf, rows, details));
    GF_TRY(gf->Stop());
  }
  return OkStatus();
}

int Main(int argc, char** argv) {
  Options options;
  bool quick = false;
  CLI::App app{"gf_job_path_bench: gpufleet's job path end to end, beside Slurm's figures"};
  app.add_option("--gpufleet", options.gpufleet, "the gpufleet binary")->capture_default_str();
  auto* jobs =
      app.add_option("--jobs", options.jobs, "makespan jobs")->check(CLI::Range(1, 100000));
  auto* submits =
      app.add_option("--submit-jobs", options.submit_jobs, "jobs per submit-throughput measurement")
          ->check(CLI::Range(kClients, 100000));
  auto* pending = app.add_option("--pending", options.pending, "pending jobs for the listing")
                      ->check(CLI::Range(1, 100000));
  auto* latency = app.add_option("--latency-jobs", options.latency_jobs, "latency samples")
                      ->check(CLI::Range(1, 10000));
  app.add_flag("--quick", quick, "small sizes (100 jobs, 200 pending) for a ~30 s smoke run");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    if (jobs->count() == 0)
      options.jobs = 100;
    if (submits->count() == 0)
      options.submit_jobs = 100;
    if (pending->count() == 0)
      options.pending = 200;
    if (latency->count() == 0)
      options.latency_jobs = 5;
    options.list_reps = 5;
  }
  if (access(options.gpufleet.c_str(), X_OK) != 0) {
    std::cerr << "gf_job_path_bench: " << options.gpufleet
              << " is not an executable; build the gpufleet target or pass --gpufleet PATH\n";
    return 2;
  }
  InstallInterruptHandler();
  std::vector<Row> rows;
  std::vector<std::string> details;
  if (Status s = RunAll(options, &rows, &details); !s.ok()) {
    std::cerr << "gf_job_path_bench: " << s.error().ToString() << "\n";
    return 1;
  }
  PrintTable(options, rows, details);
  return 0;
}

}  // namespace
}  // namespace gf::bench

int main(int argc, char** argv) {
  return gf::bench::RunMain("gf_job_path_bench", [&] { return gf::bench::Main(argc, argv); });
}
