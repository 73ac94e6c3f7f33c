// gf_job_path_bench: measures gpufleet's job path end to end, against a real `gpufleet up` on
// simulated GPUs, and prints a table beside the Slurm figures measured on the same kind of
// machine (/work/shared/anchors/slurm-local.md). How to build and run it: bench/README.md.
//
// Two shapes of the same 32 GPUs: `gpufleet up` (one node, sim:32xH100-80GB, the agent in the
// controller's process), or with --cluster `gpufleet server` and 4 `gpufleet agent` processes
// of sim:8xH100-80GB each (Slurm's 4 × 8), so that launches and reports cross the agent link.
// --db postgresql puts the store in a private PostgreSQL the bench starts (a fresh schema per
// group). Each group of measurements gets its own fresh instance (its own temp dir), so that
// one measurement's queue does not slow the next:
//   A. submit throughput, for each client count (1, 4, 16): N one-GPU `true` jobs that cannot
//      start (blocker jobs hold every GPU), submitted from that many client threads; each
//      answer comes after its commit (concurrent submissions share one: group commit). The
//      4-client group also tops the queue up to P pending jobs and times
//      `GET /api/v1/jobs?limit=P` and `gpufleet queue`, and the same GET again while another
//      client asks for this month's report back to back (issue #21: a report must not hold
//      the listing up).
//      The same 4-client group then times batch requests: an array of N tasks (`gpufleet submit
//      --array`) and a multi-job POST of N specs, each one request and one commit.
//      `--only submit`: the submit throughputs and the batch requests alone.
//   B. submit → running latency on the idle cluster (K jobs, one at a time), then the
//      makespan of M one-GPU `sleep 0.1` jobs submitted by 4 client threads.
// Waits poll with deadlines; Ctrl-C stops the bench and still cleans up.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "api/api_client.h"
#include "store/sqlite/sqlite_store.h"

#include "bench_support.h"
#include "gpufleet_instance.h"
#include "private_postgres.h"

namespace gf::bench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr int kTotalGpus = 32;  // both shapes, and Slurm's 4 × 8
constexpr int kClusterNodes = 4;
constexpr int kClients = 4;  // the makespan's submitters, and the listing's top-up
// Issue #6's targets.
// Issue #26 item 3's: acknowledged submissions/s with 4 clients on SQLite and on PostgreSQL,
// and jobs/s of one batch request (an array, a multi-job POST).
constexpr double kTargetSubmitRateSqlite = 10'000;
constexpr double kTargetSubmitRatePostgres = 5'000;
constexpr double kTargetBatchRate = 50'000;
constexpr double kTargetStartP50 = 0.050;  // s, submit → job running, idle cluster
constexpr double kTargetMakespanFactor = 1.5;

struct Options {
  std::string gpufleet = GF_GPUFLEET_PATH;
  bool cluster = false;       // server + 4 agents instead of `gpufleet up`
  std::string db = "sqlite";  // or "postgresql"
  std::vector<int> clients{1, 4, 16};
  int jobs = 1000;         // makespan jobs
  int submit_jobs = 1000;  // jobs per submit-throughput measurement
  int pending = 2000;      // pending jobs for the listing
  int latency_jobs = 20;
  int list_reps = 10;
  // GPUs of last month's per-minute history written into the store before the listing's
  // instance starts, so that the report the listing runs beside reads a large month (12 GPUs:
  // 518,400 rows, ~50 MB of SQLite); 0: none (the report reads the run's own few minutes).
  int history_gpus = 12;
  bool makespan_only = false;  // --only makespan: skip submissions, listing and latency
  bool submit_only = false;    // --only submit: the submit throughputs and the batch requests
  int batch_jobs = 10'000;     // jobs per batch request (an array's most)
  int batch_reps = 3;          // batch requests of each kind, each on the same queue

  int Nodes() const { return cluster ? kClusterNodes : 1; }
  int GpusPerNode() const { return kTotalGpus / Nodes(); }
};

// One line of the table. `vs_slurm`: how many times better gpufleet is than Slurm default /
// tuned, from this run's figure and the anchor figures.
struct Row {
  std::string measure, gpufleet, target, slurm_default, slurm_tuned, vs_slurm, note;
};

// Slurm's figures for one measure (slurm-local.md); 0 where Slurm has none.
struct Anchor {
  double slurm_default = 0;
  double slurm_tuned = 0;
};

// "8.1× / 7.6×": gpufleet's `value` against both Slurm figures; rates are better higher,
// times lower.
std::string VsSlurm(double value, Anchor slurm, bool higher_is_better) {
  if (slurm.slurm_default <= 0 || value <= 0) {
    return "—";
  }
  auto ratio = [&](double s) {
    return higher_is_better ? value / s : s / value;
  };
  char buf[64];
  std::snprintf(
      buf, sizeof buf, "%.1f× / %.1f×", ratio(slurm.slurm_default), ratio(slurm.slurm_tuned));
  return buf;
}

// "≥ 2,500 jobs/s: met" — a target beside whether this run met it.
std::string Target(const std::string& goal, bool met) {
  return goal + (met ? ": met" : ": **missed**");
}

std::string Fmt(const char* format, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

void Progress(const std::string& line) {
  std::cerr << "gf_job_path_bench: " << line << std::endl;
}

// What every instance of this run shares: the options, and the store's URL base.
struct Run {
  const Options& options;
  std::string postgres_url;  // the private server's, when --db postgresql
  int instances = 0;         // started so far: each PostgreSQL one gets a fresh schema
};

// Last month in UTC: its name as GET /api/v1/report?period= takes it ("2026-11"), its first
// minute and its length in days.
struct Month {
  std::string name;
  Time start;
  int days = 0;
};
Month LastMonth() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::tm first{};
  first.tm_year = utc.tm_mon == 0 ? utc.tm_year - 1 : utc.tm_year;
  first.tm_mon = utc.tm_mon == 0 ? 11 : utc.tm_mon - 1;
  first.tm_mday = 1;
  std::tm next = first;
  next.tm_mon += 1;
  const std::time_t start = timegm(&first);
  const std::time_t end = timegm(&next);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m", &first);
  return Month{.name = buf,
               .start = FromUnixMillis(static_cast<std::int64_t>(start) * 1000),
               .days = static_cast<int>((end - start) / 86'400)};
}

// Writes `gpus` GPUs' per-minute records of last month into the SQLite store of `data_dir`
// (its state.db, which gpufleet then opens): busy by four users of two teams in turn, so that
// the report has teams, users, GPUs and days to sum. One commit per day.
Status SeedReportHistory(const std::filesystem::path& data_dir, int gpus) {
  const Month month = LastMonth();
  Progress("writing " + std::to_string(gpus) + " GPUs of per-minute history for " + month.name);
  GF_ASSIGN_OR_RETURN(auto store, OpenSqliteStore(data_dir / "state.db"));
  for (int d = 0; d < month.days; ++d) {
    StoreBatch batch;
    batch.gpu_minutes.reserve(static_cast<std::size_t>(gpus) * 1440);
    for (int m = 0; m < 1440; ++m) {
      for (int g = 0; g < gpus; ++g) {
        const int user = (g + d) % 4;
        batch.gpu_minutes.push_back(
            GpuMinute{.node = NodeId("history-" + std::to_string(g / 8)),
                      .uuid = GpuUuid("GPU-history-" + std::to_string(g)),
                      .minute = month.start + std::chrono::hours(24 * d) + std::chrono::minutes(m),
                      .job = JobId(1'000'000 + d * 100 + g),
                      .user = "user" + std::to_string(user),
                      .team = user < 2 ? "vision" : "nlp",
                      .samples = 60,
                      .util_mean_pct = static_cast<double>((m * 7 + g * 13) % 100),
                      .util_max_pct = 100,
                      .memory_used_max_mib = 40'000,
                      .power_mean_w = 350,
                      .energy_mj = 21'000'000,
                      .health = GpuHealth::kOk});
      }
    }
    GF_TRY(store->Commit(batch));
  }
  return OkStatus();
}

Result<std::unique_ptr<GpufleetInstance>> StartInstance(Run& run, bool with_history = false) {
  const Options& options = run.options;
  InstanceOptions io;
  io.gpufleet = options.gpufleet;
  io.topology = options.cluster ? Topology::kServer : Topology::kUp;
  io.agents = options.cluster ? kClusterNodes : 0;
  io.gpus = "sim:" + std::to_string(options.GpusPerNode()) + "xH100-80GB";
  io.expected_gpus = options.GpusPerNode();
  if (!run.postgres_url.empty()) {
    io.db = run.postgres_url + "?schema=gf_bench_" + std::to_string(++run.instances);
  } else if (with_history && options.history_gpus > 0) {
    const int gpus = options.history_gpus;
    io.seed = [gpus](const std::filesystem::path& data) {
      return SeedReportHistory(data, gpus);
    };
  }
  return GpufleetInstance::Start(io);
}

// Submits one job per node that holds all its GPUs until the instance's release file exists;
// waits until they run, so that every job submitted after them stays pending.
Status StartBlockers(const Options& options, GpufleetInstance& gf) {
  ApiClient client(gf.socket());
  std::vector<std::int64_t> ids;
  for (int n = 0; n < options.Nodes(); ++n) {
    GF_ASSIGN_OR_RETURN(const json job,
                        SubmitJob(client, gf.BlockerCommand(), options.GpusPerNode()));
    ids.push_back(job["id"].get<std::int64_t>());
  }
  for (const std::int64_t id : ids) {
    GF_ASSIGN_OR_RETURN(
        const json running,
        WaitForJob(
            client, id, [](const std::string& s) { return HasStarted(s); }, Deadline(30s), 20ms));
    if (running["state"] != "RUNNING") {
      return Internal("a blocker job ended early: " + running.dump());
    }
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
                              "a submitted job did not stay pending (the blockers should hold "
                              "every GPU): " +
                              job.dump());
                        }
                        return OkStatus();
                      }));
  if (latencies_ms != nullptr) {
    *latencies_ms = std::move(lat);
  }
  return elapsed;
}

// The scheduler's passes so far, by kind ("full", "incremental"): count and seconds, from the
// server's /metrics (gpufleet_scheduler_passes_total, gpufleet_scheduler_pass_seconds_total).
// Also the controller's commit counters (gpufleet_store_commit*_total), where the server has
// them.
struct PassCounters {
  std::map<std::string, double> count;
  std::map<std::string, double> seconds;
  std::map<std::string, double> commits;  // by family name, without the gpufleet_store_ prefix
};

Result<PassCounters> ReadPassCounters(const std::string& socket) {
  ApiClient client(socket);
  GF_ASSIGN_OR_RETURN(const HttpResponse metrics, client.Call("GET", "/metrics"));
  if (metrics.status != 200) {
    return Internal("GET /metrics answered " + std::to_string(metrics.status));
  }
  PassCounters out;
  std::istringstream lines(metrics.body);
  std::string line;
  while (std::getline(lines, line)) {
    constexpr std::string_view kStore = "gpufleet_store_";
    if (line.rfind("gpufleet_store_commit", 0) == 0) {
      const std::size_t space = line.find(' ');
      out.commits[line.substr(kStore.size(), space - kStore.size())] =
          std::stod(line.substr(space + 1));
      continue;
    }
    for (auto [family, into] :
         {std::pair{"gpufleet_scheduler_passes_total{kind=\"", &out.count},
          std::pair{"gpufleet_scheduler_pass_seconds_total{kind=\"", &out.seconds}}) {
      const std::string prefix = family;
      if (line.rfind(prefix, 0) != 0) {
        continue;
      }
      const std::size_t quote = line.find('"', prefix.size());
      const std::size_t space = line.rfind(' ');
      if (quote != std::string::npos && space != std::string::npos && space > quote) {
        (*into)[line.substr(prefix.size(), quote - prefix.size())] =
            std::stod(line.substr(space + 1));
      }
    }
  }
  return out;
}

// "412 incremental (mean 0.21 ms), 3 full (mean 4.10 ms)": the passes between two readings.
std::string DescribePasses(const PassCounters& before, const PassCounters& after) {
  std::string out;
  for (const std::string kind : {"incremental", "full"}) {
    const double n = after.count.at(kind) - before.count.at(kind);
    const double s = after.seconds.at(kind) - before.seconds.at(kind);
    out += (out.empty() ? "" : ", ") + Fmt("%.0f ", n) + kind +
           (n > 0 ? Fmt(" (mean %.2f ms)", s / n * 1000) : std::string());
  }
  return out;
}

// "1,000 requests in 312 commits (3.2 per commit), mean commit 0.41 ms": group commit between
// two readings; empty when the server has no commit counters.
std::string DescribeCommits(const PassCounters& before, const PassCounters& after) {
  auto delta = [&](const std::string& name) {
    const auto a = after.commits.find(name);
    const auto b = before.commits.find(name);
    return a == after.commits.end() || b == before.commits.end() ? -1.0 : a->second - b->second;
  };
  const double commits = delta("commits_total");
  const double requests = delta("committed_requests_total");
  const double seconds = delta("commit_seconds_total");
  if (commits <= 0 || requests < 0 || seconds < 0) {
    return "";
  }
  return Fmt("%.0f requests in %.0f commits", requests, commits) +
         Fmt(" (%.1f per commit), mean commit %.2f ms",
             requests / commits,
             seconds / commits * 1000);
}

// Slurm's `sbatch --hold` rates (slurm-local.md); none was measured with 16 clients.
Anchor SlurmSubmitAnchor(int clients) {
  if (clients == 1) {
    return {.slurm_default = 152, .slurm_tuned = 144};
  }
  if (clients == 4) {
    return {.slurm_default = 249, .slurm_tuned = 251};
  }
  return {};
}

std::string SubmitTarget(const Options& options, int clients, double rate) {
  if (clients != 4) {
    return "—";
  }
  if (options.db != "sqlite") {
    return Target("≥ 5,000 jobs/s", rate >= kTargetSubmitRatePostgres);
  }
  return Target("≥ 10,000 jobs/s", rate >= kTargetSubmitRateSqlite);
}

Status MeasureSubmit(const Options& options,
                     int clients,
                     GpufleetInstance& gf,
                     std::vector<Row>* rows,
                     std::vector<std::string>* details) {
  Progress("submit throughput, " + std::to_string(clients) + " client(s), " +
           std::to_string(options.submit_jobs) + " jobs");
  GF_TRY(StartBlockers(options, gf));
  std::vector<double> lat;
  GF_ASSIGN_OR_RETURN(const PassCounters passes_before, ReadPassCounters(gf.socket()));
  GF_ASSIGN_OR_RETURN(const double elapsed, SubmitPending(gf, clients, options.submit_jobs, &lat));
  GF_ASSIGN_OR_RETURN(const PassCounters passes_after, ReadPassCounters(gf.socket()));
  const double rate = options.submit_jobs / elapsed;
  const bool one = clients == 1;
  const std::string n = std::to_string(options.submit_jobs);
  const std::string note =
      one ? n +
                " × `true`, 1 GPU, kept pending by jobs holding all GPUs (Slurm: `sbatch "
                "--hold`); queue grows 0→" +
                n + "; each answered after its commit"
          : "the same from " + std::to_string(clients) +
                " threads, each its own connection; concurrent submissions share a commit "
                "(group commit)";
  const Anchor slurm = SlurmSubmitAnchor(clients);
  rows->push_back(
      {.measure = "submit throughput, " + std::to_string(clients) + (one ? " client" : " clients") +
                  " (" + options.db + ")",
       .gpufleet = Fmt("%.0f jobs/s", rate),
       .target = SubmitTarget(options, clients, rate),
       .slurm_default = slurm.slurm_default > 0 ? Fmt("%.0f jobs/s", slurm.slurm_default) : "—",
       .slurm_tuned = slurm.slurm_tuned > 0 ? Fmt("%.0f jobs/s", slurm.slurm_tuned) : "—",
       .vs_slurm = VsSlurm(rate, slurm, true),
       .note = note});
  const std::string commits = DescribeCommits(passes_before, passes_after);
  // The first and last tenth of the calls: how the cost of a submit grows with the queue.
  const auto tenth = static_cast<std::ptrdiff_t>(std::max<std::size_t>(1, lat.size() / 10));
  const Stats s = Summarize(lat);
  const Stats first = Summarize({lat.begin(), lat.begin() + tenth});
  const Stats last = Summarize({lat.end() - tenth, lat.end()});
  details->push_back(
      "submit, " + std::to_string(clients) + " client(s): per-call latency " +
      Fmt("median %.2f ms, p99 %.2f ms, max %.2f ms; ", s.median, s.p99, s.max) +
      Fmt("median of the first tenth %.2f ms, of the last tenth %.2f ms",
          first.median,
          last.median) +
      "; scheduling passes meanwhile: " + DescribePasses(passes_before, passes_after) +
      (commits.empty() ? "" : "; " + commits));
  return OkStatus();
}

// One request submitting `n` one-GPU `true` jobs: an array of indices 0..n-1 (what `gpufleet
// submit --array` sends) or a multi-job POST {"jobs": [...]}. The body is built before the
// clock starts; the time runs from sending it to the answer (after the jobs' commit).
Result<double> SubmitBatchOnce(ApiClient& client, bool array, int n) {
  const json spec = {{"command", {"true"}}, {"gpus", 1}, {"workdir", "/tmp"}};
  json body;
  if (array) {
    std::vector<int> indices(static_cast<std::size_t>(n));
    std::iota(indices.begin(), indices.end(), 0);
    body = spec;
    body["array"] = {{"indices", std::move(indices)}};
  } else {
    body = {{"jobs", json::array()}};
    for (int i = 0; i < n; ++i) {
      body["jobs"].push_back(spec);
    }
  }
  const std::string text = body.dump();
  const auto t0 = SteadyClock::now();
  GF_ASSIGN_OR_RETURN(const HttpResponse resp, client.Call("POST", "/api/v1/jobs", text));
  const double elapsed = SecondsSince(t0);
  if (resp.status != 201) {
    return ErrorFromResponse(resp);
  }
  return elapsed;
}

// Batch submissions (issue #26 item 3): `batch_reps` arrays, then as many multi-job POSTs, of
// `batch_jobs` jobs each, on the instance the submit throughput just measured (its blockers
// keep every job pending). A server without the multi-job POST gets a row saying so.
Status MeasureBatch(const Options& options,
                    GpufleetInstance& gf,
                    std::vector<Row>* rows,
                    std::vector<std::string>* details) {
  ApiClient client(gf.socket());
  for (const bool array : {true, false}) {
    const std::string kind = array ? "an array (`submit --array`)" : "a multi-job POST";
    Progress("batch submit: " + std::to_string(options.batch_reps) + " × " + kind + " of " +
             std::to_string(options.batch_jobs) + " jobs");
    std::vector<double> rates;
    std::optional<Error> refused;
    for (int r = 0; r < options.batch_reps && !refused; ++r) {
      Result<double> elapsed = SubmitBatchOnce(client, array, options.batch_jobs);
      if (!elapsed.ok()) {
        refused = elapsed.error();
        break;
      }
      rates.push_back(options.batch_jobs / *elapsed);
    }
    const std::string measure = "batch submit, " + kind + " of " +
                                std::to_string(options.batch_jobs) + " jobs (" + options.db + ")";
    if (refused) {
      rows->push_back({.measure = measure,
                       .gpufleet = "— (refused: " + refused->message + ")",
                       .target = "≥ 50,000 jobs/s",
                       .slurm_default = "—",
                       .slurm_tuned = "—",
                       .vs_slurm = "—",
                       .note = "this server has no such request"});
      continue;
    }
    const Stats s = Summarize(rates);
    rows->push_back({.measure = measure,
                     .gpufleet = Fmt("%.0f jobs/s", s.median),
                     .target = Target("≥ 50,000 jobs/s", s.median >= kTargetBatchRate),
                     .slurm_default = "—",
                     .slurm_tuned = "—",
                     .vs_slurm = "—",
                     .note = "median of " + std::to_string(rates.size()) +
                             (rates.size() == 1 ? " request" : " requests") +
                             ", each one command and one commit, answered after it"});
    details->push_back("batch submit, " + kind + ": jobs/s per request " +
                       Fmt("min %.0f, median %.0f, max %.0f", s.min, s.median, s.max));
  }
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
  const Anchor squeue{.slurm_default = 0.039, .slurm_tuned = 0.035};
  rows->push_back({.measure = "`GET /api/v1/jobs?limit=" + n + "`, " + n + " pending",
                   .gpufleet = Fmt("%.1f ms", a.median),
                   .target = "—",
                   .slurm_default = "39 ms (`squeue`)",
                   .slurm_tuned = "35 ms (`squeue`)",
                   .vs_slurm = VsSlurm(a.median / 1000, squeue, false),
                   .note = Fmt("median of %.0f; request + JSON parse in the client, %.1f MB",
                               static_cast<double>(a.count),
                               static_cast<double>(bytes) / 1e6)});
  rows->push_back({.measure = "`gpufleet queue` (CLI), " + n + " pending",
                   .gpufleet = Fmt("%.1f ms", c.median),
                   .target = "—",
                   .slurm_default = "39 ms",
                   .slurm_tuned = "35 ms",
                   .vs_slurm = VsSlurm(c.median / 1000, squeue, false),
                   .note = Fmt("median of %.0f; process start to exit, output to /dev/null; the "
                               "CLI lists at most 1,000 jobs",
                               static_cast<double>(c.count))});
  details->push_back(
      Fmt("listing: API min %.1f ms, max %.1f ms; CLI min %.1f ms, ", a.min, a.max, c.min) +
      Fmt("max %.1f ms", c.max));
  return OkStatus();
}

// The listing again, while a second client computes last month's report back to back (the
// seeded history: Options::history_gpus).
Status MeasureListingDuringReports(const Options& options,
                                   GpufleetInstance& gf,
                                   std::vector<Row>* rows,
                                   std::vector<std::string>* details) {
  const std::string n = std::to_string(options.pending);
  Progress("listing " + n + " pending jobs while monthly reports are computed");
  std::atomic<bool> stop{false};
  std::vector<double> report_ms;  // the reporter thread's until it is joined
  Status report_status = OkStatus();
  std::thread reporter([&] {
    ApiClient client(gf.socket());
    const std::string target = "/api/v1/report?period=" + LastMonth().name;
    while (!stop.load()) {
      const auto t0 = SteadyClock::now();
      Result<HttpResponse> resp = client.Call("GET", target);
      if (!resp.ok() || resp->status != 200) {
        report_status =
            Internal("the report failed: " + (resp.ok() ? resp->body : resp.error().ToString()));
        return;
      }
      report_ms.push_back(SecondsSince(t0) * 1000);
    }
  });
  ApiClient client(gf.socket());
  const std::string target = "/api/v1/jobs?limit=" + n;
  std::vector<double> api_ms;
  Status status = OkStatus();
  for (int r = 0; r < options.list_reps && status.ok(); ++r) {
    const auto t0 = SteadyClock::now();
    Result<HttpResponse> resp = client.Call("GET", target);
    if (!resp.ok() || resp->status != 200 ||
        static_cast<int>(json::parse(resp->body)["jobs"].size()) != options.pending) {
      status = Internal("the listing during reports did not return " + n + " jobs");
      break;
    }
    api_ms.push_back(SecondsSince(t0) * 1000);
  }
  stop = true;
  reporter.join();
  GF_TRY(status);
  GF_TRY(report_status);
  const Stats a = Summarize(api_ms);
  const Stats r = Summarize(report_ms);
  rows->push_back(
      {.measure = "`GET /api/v1/jobs?limit=" + n + "`, " + n + " pending, monthly reports running",
       .gpufleet = Fmt("%.1f ms", a.median),
       .target = "—",
       .slurm_default = "—",
       .slurm_tuned = "—",
       .vs_slurm = "—",
       .note = Fmt("median of %.0f, while another client computed %.0f reports of last "
                   "month back to back (median %.0f ms each; ",
                   static_cast<double>(a.count),
                   static_cast<double>(r.count),
                   r.median) +
               std::to_string(options.history_gpus) + " GPUs of per-minute history)"});
  details->push_back(Fmt("listing during reports: min %.1f ms, max %.1f ms; ", a.min, a.max) +
                     Fmt("report min %.0f ms, max %.0f ms", r.min, r.max));
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
  const Stats ran = Summarize(job_s);
  rows->push_back(
      {.measure = "submit → job process running, idle cluster",
       .gpufleet = Range(ran),
       .target = Target("p50 < 50 ms", ran.median < kTargetStartP50),
       .slurm_default = "0.87 s (0.14–2.99)",
       .slurm_tuned = "0.51 s (0.13–2.45)",
       .vs_slurm = VsSlurm(ran.median, {.slurm_default = 0.87, .slurm_tuned = 0.51}, false),
       .note = "median (min–max) of " + k +
               "; from the client sending POST to the job's own `date` (Slurm: to the job "
               "script running)"});
  rows->push_back({.measure = "submit → RUNNING recorded (server times)",
                   .gpufleet = Range(Summarize(server_s)),
                   .target = "—",
                   .slurm_default = "—",
                   .slurm_tuned = "—",
                   .vs_slurm = "—",
                   .note = "`start_time_ms − submit_time_ms`; the agent takes start_time as it "
                           "begins the launch, before the supervisor process exists"});
  rows->push_back({.measure = "submit → client sees RUNNING",
                   .gpufleet = Range(Summarize(client_s)),
                   .target = "—",
                   .slurm_default = "—",
                   .slurm_tuned = "—",
                   .vs_slurm = "—",
                   .note = "client polls `GET /api/v1/jobs/{id}` every 5 ms"});
  (void)details;
  return OkStatus();
}

struct JobTimes {
  std::int64_t submit_ms = 0, start_ms = 0, end_ms = 0;
  std::string gpu;
  std::string node;
};

// The spacing between consecutive launches on one node, while the queue was still deep (the
// start of each node's first 80 % of jobs): an agent launches one job at a time, so this is
// how long one launch holds its agent.
Stats LaunchSpacing(const std::vector<JobTimes>& jobs) {
  std::map<std::string, std::vector<std::int64_t>> starts;
  for (const auto& j : jobs) {
    starts[j.node].push_back(j.start_ms);
  }
  std::vector<double> spacing;
  for (auto& [node, list] : starts) {
    std::sort(list.begin(), list.end());
    const std::size_t deep = list.size() * 8 / 10;
    for (std::size_t i = 1; i < deep; ++i) {
      spacing.push_back(static_cast<double>(list[i] - list[i - 1]));
    }
  }
  return Summarize(spacing);
}

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
  const Stats launch = LaunchSpacing(jobs);
  details->push_back(
      Fmt("makespan: consecutive launches on one node (deep queue) median %.0f ms "
          "apart, p99 %.0f ms: at most %.0f launches/s per node",
          launch.median,
          launch.p99,
          launch.median > 0 ? 1000 / launch.median : 0));
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
          100 * busy_s / (kTotalGpus * makespan_s)));
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
               j["gpu_uuids"].dump(),
               j.value("node", std::string())};
    first_submit = std::min(first_submit, t.submit_ms);
    last_end = std::max(last_end, t.end_ms);
    times.push_back(std::move(t));
  }
  const double makespan = static_cast<double>(last_end - first_submit) / 1000;
  const double ideal = n * 0.1 / kTotalGpus;
  const std::string shape = options.cluster ? "4 agents × 8 GPUs, as Slurm's 4 × 8"
                                            : "one node of 32 GPUs (`gpufleet up`; Slurm: 4 × 8)";
  rows->push_back(
      {.measure = Fmt("makespan, %.0f one-GPU `sleep 0.1` jobs", n),
       .gpufleet = Fmt("%.1f s (%.1f× ideal)", makespan, makespan / ideal),
       .target = Target(Fmt("≤ %.1f s (1.5× ideal)", kTargetMakespanFactor * ideal),
                        makespan <= kTargetMakespanFactor * ideal),
       .slurm_default = "36.1 s",
       .slurm_tuned = "18.9 s",
       .vs_slurm = VsSlurm(makespan, {.slurm_default = 36.1, .slurm_tuned = 18.9}, false),
       .note = shape + Fmt("; ideal %.1f s; submitted by 4 clients in %.1f s; client saw the end "
                           "at %.1f s",
                           ideal,
                           submit_s,
                           client_s)});
  ExplainMakespan(times, makespan, details);
  return OkStatus();
}

void PrintTable(const Options& options,
                const std::vector<Row>& rows,
                const std::vector<std::string>& details) {
  std::cout << "\ngpufleet: "
            << (options.cluster ? "`gpufleet server` + 4 `gpufleet agent` (sim:8xH100-80GB each)"
                                : "`gpufleet up` (sim:32xH100-80GB)")
            << ", store " << options.db << "\n"
            << "\n| measure | gpufleet | target (issues #6, #26) | Slurm default | Slurm tuned | "
               "gpufleet vs Slurm default / tuned | note |\n"
            << "|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    std::cout << "| " << r.measure << " | " << r.gpufleet << " | " << r.target << " | "
              << r.slurm_default << " | " << r.slurm_tuned << " | " << r.vs_slurm << " | " << r.note
              << " |\n";
  }
  std::cout << "\nSlurm: 22.05.8 on this kind of machine (2 shared cores), figures for 1,000 jobs "
               "and 2,000 pending (/work/shared/anchors/slurm-local.md); the ratios set this run's "
               "figure against them (× > 1: gpufleet better). bench/vs-slurm/run.sh measures "
               "both in one run.\n";
  if (options.jobs != 1000 || options.pending != 2000 || options.submit_jobs != 1000) {
    std::cout << "Note: this run used other sizes than the Slurm figures (jobs " << options.jobs
              << ", submits " << options.submit_jobs << ", pending " << options.pending << ").\n";
  }
  std::cout << "\n";
  for (const auto& d : details) {
    std::cout << "- " << d << "\n";
  }
}

Status RunAll(Run& run, std::vector<Row>* rows, std::vector<std::string>* details) {
  const Options& options = run.options;
  if (options.makespan_only) {
    GF_ASSIGN_OR_RETURN(auto gf, StartInstance(run));
    GF_TRY(MeasureMakespan(options, *gf, rows, details));
    return gf->Stop();
  }
  if (options.submit_only) {
    for (const int clients : options.clients) {
      GF_ASSIGN_OR_RETURN(auto gf, StartInstance(run));
      GF_TRY(MeasureSubmit(options, clients, *gf, rows, details));
      Progress("cleaning up (cancelling the queue)");
      GF_TRY(gf->Stop());
    }
    GF_ASSIGN_OR_RETURN(auto gf, StartInstance(run));
    GF_TRY(StartBlockers(options, *gf));
    GF_TRY(MeasureBatch(options, *gf, rows, details));
    Progress("cleaning up (cancelling the queue)");
    return gf->Stop();
  }
  for (const int clients : options.clients) {
    // The instance of the listing's measures has last month's history (SQLite only).
    GF_ASSIGN_OR_RETURN(auto gf, StartInstance(run, clients == kClients));
    GF_TRY(MeasureSubmit(options, clients, *gf, rows, details));
    if (clients == kClients) {
      GF_TRY(MeasureBatch(options, *gf, rows, details));
      GF_TRY(MeasureListing(options, *gf, rows, details));
      GF_TRY(MeasureListingDuringReports(options, *gf, rows, details));
    }
    Progress("cleaning up (cancelling the queue)");
    GF_TRY(gf->Stop());
  }
  GF_ASSIGN_OR_RETURN(auto gf, StartInstance(run));
  GF_TRY(MeasureLatency(options, *gf, rows, details));
  GF_TRY(MeasureMakespan(options, *gf, rows, details));
  return gf->Stop();
}

// Starts the private PostgreSQL when the run needs one (null otherwise).
Result<std::unique_ptr<PrivatePostgres>> StartPostgres(const Options& options, Run& run) {
  if (options.db != "postgresql") {
    return std::unique_ptr<PrivatePostgres>();
  }
  Progress("starting a private PostgreSQL (" + std::string(GF_PG_FIXTURE) + ")");
  GF_ASSIGN_OR_RETURN(auto pg, PrivatePostgres::Start(GF_PG_FIXTURE));
  run.postgres_url = pg->url();
  return pg;
}

int Main(int argc, char** argv) {
  Options options;
  bool quick = false;
  CLI::App app{"gf_job_path_bench: gpufleet's job path end to end, beside Slurm's figures"};
  app.add_option("--gpufleet", options.gpufleet, "the gpufleet binary")->capture_default_str();
  app.add_flag(
      "--cluster",
      options.cluster,
      "`gpufleet server` + 4 `gpufleet agent` of 8 GPUs (default: one `gpufleet up` of 32)");
  app.add_option("--db",
                 options.db,
                 "the store: sqlite (in the data dir) or postgresql (a private "
                 "server the bench starts and stops)")
      ->check(CLI::IsMember({"sqlite", "postgresql"}))
      ->capture_default_str();
  app.add_option("--clients", options.clients, "client counts of the submit measurements")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  auto* jobs =
      app.add_option("--jobs", options.jobs, "makespan jobs")->check(CLI::Range(1, 100000));
  auto* submits =
      app.add_option("--submit-jobs", options.submit_jobs, "jobs per submit-throughput measurement")
          ->check(CLI::Range(kClients, 100000));
  auto* pending = app.add_option("--pending", options.pending, "pending jobs for the listing")
                      ->check(CLI::Range(1, 100000));
  auto* latency = app.add_option("--latency-jobs", options.latency_jobs, "latency samples")
                      ->check(CLI::Range(1, 10000));
  auto* history = app.add_option("--history-gpus",
                                 options.history_gpus,
                                 "GPUs of last month's per-minute history the report beside the "
                                 "listing reads (SQLite; 0: none)")
                      ->check(CLI::Range(0, 1000))
                      ->capture_default_str();
  auto* batch = app.add_option("--batch-jobs",
                               options.batch_jobs,
                               "jobs per batch request (an array, a multi-job POST)")
                    ->check(CLI::Range(1, 10000))
                    ->capture_default_str();
  app.add_option("--batch-reps", options.batch_reps, "batch requests of each kind")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  std::string only;
  app.add_option("--only",
                 only,
                 "run one group alone: makespan, or submit (the submit throughputs and the batch "
                 "requests)")
      ->check(CLI::IsMember({"makespan", "submit"}));
  app.add_flag("--quick", quick, "small sizes (100 jobs, 200 pending) for a ~30 s smoke run");
  CLI11_PARSE(app, argc, argv);
  options.makespan_only = only == "makespan";
  options.submit_only = only == "submit";
  if (quick) {
    // Small sizes, unless given.
    auto small = [](CLI::Option* flag, int& value, int quick_value) {
      if (flag->count() == 0) {
        value = quick_value;
      }
    };
    small(jobs, options.jobs, 100);
    small(submits, options.submit_jobs, 100);
    small(pending, options.pending, 200);
    small(latency, options.latency_jobs, 5);
    small(batch, options.batch_jobs, 1000);
    small(history, options.history_gpus, 1);
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
  Run run{.options = options, .postgres_url = "", .instances = 0};
  auto pg = StartPostgres(options, run);
  if (!pg.ok()) {
    std::cerr << "gf_job_path_bench: " << pg.error().ToString() << "\n";
    return 1;
  }
  if (Status s = RunAll(run, &rows, &details); !s.ok()) {
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
