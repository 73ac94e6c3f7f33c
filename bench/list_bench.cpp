// gf_list_bench: the queue listing (issue #26 item 2: `GET /api/v1/jobs` of 2,000 pending in
// under 10 ms, and a page of a 100,000-job queue in under 100 ms), against a real `gpufleet up`
// on simulated GPUs whose SQLite store the bench fills with pending jobs first.
//
// Two instances, each `gpufleet up --gpus sim:4xH100-80GB`: one whose store holds `--pending`
// (2,000) pending one-GPU jobs, one with `--queue` (100,000). Four of them start on the four
// GPUs (`sleep 3600`, cancelled at the end); the others wait, each with its reason, estimate and
// place in the scheduling order. On each it times, over the Unix socket as the CLI does:
//   - the first listing after the start (nothing rendered yet), once;
//   - the listing again, `--repeat` (20) times: median and max of the request alone (until the
//     whole body is read) and of the request and the client's JSON parse (what a client pays);
//   - on the large queue also the first page of 1,000 and a page in the middle (`cursor`; a
//     server without pages answers it 400, shown as such);
//   - `gpufleet queue` (the CLI process, start to exit, its table of the whole queue) `--cli-runs`
//     (5) times on the 2,000.
// `--gpufleet PATH` picks the binary: run it once per build for a before/after on one machine.
//
// Usage: gf_list_bench [--pending 2000] [--queue 100000] [--repeat 20] [--cli-runs 5]
// [--gpufleet PATH]. How to build and the figures measured: bench/README.md.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "api/api_client.h"
#include "store/sqlite/sqlite_store.h"

#include "bench_support.h"
#include "gpufleet_instance.h"

namespace gf::bench {
namespace {

using nlohmann::json;

// `jobs` pending one-GPU jobs of the current user, as `gpufleet submit` stores them: a name, a
// command, a working directory, an environment of a few variables, a team and a time limit.
// 5,000 a commit.
Status SeedPending(const std::filesystem::path& data_dir, int jobs) {
  std::cerr << "writing " << jobs << " pending jobs into the store\n";
  GF_ASSIGN_OR_RETURN(auto store, OpenSqliteStore(data_dir / "state.db"));
  const std::string user = CurrentUser();
  const std::int64_t now_ms = UnixMillisNow();
  constexpr int kPerCommit = 5'000;
  for (int first = 1; first <= jobs; first += kPerCommit) {
    StoreBatch batch;
    for (int id = first; id < std::min(first + kPerCommit, jobs + 1); ++id) {
      Job job;
      job.id = JobId(id);
      job.owner = Owner{getuid(), getgid(), user};
      job.spec.name = "train-" + std::to_string(id % 100);
      job.spec.argv = {"sleep", "3600"};
      job.spec.workdir = "/tmp";
      job.spec.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
                      {"HOME", "/home/" + user},
                      {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                      {"WANDB_PROJECT", "bench-" + std::to_string(id % 7)}};
      job.spec.request.gpus = 1;
      job.spec.team = id % 2 == 0 ? "vision" : "nlp";
      job.spec.time_limit = std::chrono::hours(4);
      job.submit_time = FromUnixMillis(now_ms - std::int64_t{jobs - id} * 10);
      job.state = JobState::kPending;
      job.reason = "waiting for the scheduler";
      batch.jobs.push_back(std::move(job));
    }
    GF_TRY(store->Commit(batch));
  }
  return OkStatus();
}

// One GET of `target`: the request until the body is read, and the client's parse of it.
struct Listing {
  double request_ms = 0;
  double parse_ms = 0;
  std::size_t jobs = 0;
  std::size_t bytes = 0;
};

Result<Listing> List(ApiClient& client, const std::string& target) {
  const auto start = SteadyClock::now();
  GF_ASSIGN_OR_RETURN(const HttpResponse r, client.Call("GET", target, std::nullopt));
  Listing out{.request_ms = SecondsSince(start) * 1000, .bytes = r.body.size()};
  if (r.status != 200) {
    return MakeError(ErrorCode::kInvalidArgument,
                     target + ": HTTP " + std::to_string(r.status) + " " + r.body);
  }
  const auto parse = SteadyClock::now();
  const json body = json::parse(r.body);
  out.parse_ms = SecondsSince(parse) * 1000;
  out.jobs = body.at("jobs").size();
  return out;
}

// Adds the rows of listing `target` on `client`: the first GET when `cold`, then `repeat` more.
Status TimeListing(ApiClient& client,
                   const std::string& what,
                   const std::string& target,
                   std::size_t want,
                   int repeat,
                   bool cold,
                   std::vector<Row>& rows) {
  if (cold) {
    GF_ASSIGN_OR_RETURN(const Listing first, List(client, target));
    char figure[64];
    std::snprintf(figure, sizeof figure, "%.1f ms", first.request_ms);
    rows.push_back({what + ", first GET after the start", figure, "request only"});
  }
  std::vector<double> request_ms;
  std::vector<double> total_ms;
  Listing last;
  for (int i = 0; i < repeat; ++i) {
    GF_ASSIGN_OR_RETURN(last, List(client, target));
    request_ms.push_back(last.request_ms);
    total_ms.push_back(last.request_ms + last.parse_ms);
  }
  if (last.jobs != want) {
    return Internal(target + ": " + std::to_string(last.jobs) + " jobs, want " +
                    std::to_string(want));
  }
  rows.push_back({what,
                  Ms(Summarize(request_ms)),
                  std::to_string(repeat) + " GETs, request only; " +
                      std::to_string(last.bytes / 1024) + " KiB"});
  rows.push_back({what + " + client JSON parse", Ms(Summarize(total_ms)), ""});
  return OkStatus();
}

// Starts `gpufleet up` over a store of `pending` pending jobs and waits until its first passes
// have started four of them (the listing is then as steady as a waiting queue is).
// `via_api`: an empty store instead, a four-GPU `sleep 3600` job first, then the pending jobs
// submitted as arrays of up to 10,000 tasks (a build whose store schema is older than this
// bench's cannot open a store the bench wrote).
Result<std::unique_ptr<GpufleetInstance>> StartWithQueue(const std::string& gpufleet,
                                                         int pending,
                                                         bool via_api) {
  InstanceOptions io;
  io.gpufleet = gpufleet;
  io.gpus = "sim:4xH100-80GB";
  io.expected_gpus = 4;
  io.ready_timeout = std::chrono::seconds(300);
  if (!via_api) {
    io.seed = [pending](const std::filesystem::path& data) {
      return SeedPending(data, pending);
    };
  }
  GF_ASSIGN_OR_RETURN(auto instance, GpufleetInstance::Start(io));
  ApiClient client(instance->socket());
  if (via_api) {
    std::cerr << "submitting 1 blocker and " << pending << " pending jobs\n";
    GF_TRY(client.CallJson("POST",
                           "/api/v1/jobs",
                           json{{"command", {"sleep", "3600"}}, {"gpus", 4}, {"workdir", "/tmp"}}));
    const json env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
                      {"HOME", "/root"},
                      {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                      {"WANDB_PROJECT", "bench"}};
    for (int first = 0; first < pending; first += 10'000) {
      json indices = json::array();
      for (int i = first; i < std::min(pending, first + 10'000); ++i) {
        indices.push_back(i);
      }
      GF_TRY(client.CallJson("POST",
                             "/api/v1/jobs",
                             json{{"command", {"sleep", "3600"}},
                                  {"gpus", 1},
                                  {"workdir", "/tmp"},
                                  {"name", "train"},
                                  {"time_limit", 14400},
                                  {"env", env},
                                  {"array", {{"indices", std::move(indices)}}}}));
    }
  }
  const Deadline deadline(std::chrono::seconds(120));
  // Asked of the GPUs, not of the listing: the listing's first GET is a figure of its own.
  while (true) {
    GF_ASSIGN_OR_RETURN(const json gpus, client.CallJson("GET", "/api/v1/gpus", std::nullopt));
    int held = 0;
    for (const json& gpu : gpus.value("gpus", json::array())) {
      held += gpu.value("holders", json::array()).empty() ? 0 : 1;
    }
    if (held >= 4) {
      break;
    }
    if (deadline.Expired()) {
      return MakeError(ErrorCode::kUnavailable, "four jobs did not start in 120 s");
    }
    GF_TRY(SleepFor(std::chrono::milliseconds(200)));
  }
  return instance;
}

// Cancels every pending job with one request (POST /api/v1/jobs/cancel, `gpufleet cancel -t
// PD`), then stops the instance: GpufleetInstance::Stop cancels job by job, one turn each, which
// takes minutes for 100,000. Returns false (having said why) on a failure.
bool CancelQueueAndStop(GpufleetInstance& gf) {
  ApiClient client(gf.socket());
  Result<json> cancelled =
      client.CallJson("POST", "/api/v1/jobs/cancel", json{{"state", "PENDING"}});
  if (!cancelled.ok()) {
    std::cerr << cancelled.error().ToString() << '\n';
    return false;
  }
  return gf.Stop().ok();
}

int Main(int argc, char** argv) {
  InstallInterruptHandler();
  int pending = 2'000;
  int queue = 100'000;
  int repeat = 20;
  int cli_runs = 5;
  bool via_api = false;
  std::string gpufleet = GF_GPUFLEET_PATH;
  CLI::App app("the queue listing, GET /api/v1/jobs, at 2,000 and 100,000 jobs");
  app.add_option("--pending", pending, "pending jobs of the small queue")->capture_default_str();
  app.add_option("--queue", queue, "jobs of the large queue (0: skip it)")->capture_default_str();
  app.add_option("--repeat", repeat, "GETs of each listing")->capture_default_str();
  app.add_option("--cli-runs", cli_runs, "`gpufleet queue` runs")->capture_default_str();
  app.add_option("--gpufleet", gpufleet, "the gpufleet binary")->capture_default_str();
  app.add_flag("--via-api", via_api, "submit the queue through the API instead of the store");
  CLI11_PARSE(app, argc, argv);

  std::vector<Row> rows;
  const std::string small = std::to_string(pending);
  {
    auto started = StartWithQueue(gpufleet, pending, via_api);
    if (!started.ok()) {
      std::cerr << started.error().ToString() << '\n';
      return 1;
    }
    GpufleetInstance& gf = **started;
    ApiClient client(gf.socket());
    if (Status s = TimeListing(client,
                               "`GET /api/v1/jobs?limit=" + small + "`, " + small + " jobs",
                               "/api/v1/jobs?limit=" + small,
                               static_cast<std::size_t>(pending),
                               repeat,
                               true,
                               rows);
        !s.ok()) {
      std::cerr << s.error().ToString() << '\n';
      return 1;
    }
    std::vector<double> cli_ms;
    for (int i = 0; i < cli_runs; ++i) {
      const auto start = SteadyClock::now();
      Result<int> rc = RunCommand({gpufleet, "--socket", gf.socket(), "queue"}, {});
      if (!rc.ok() || *rc != 0) {
        std::cerr << "gpufleet queue failed\n";
        return 1;
      }
      cli_ms.push_back(SecondsSince(start) * 1000);
    }
    rows.push_back({"`gpufleet queue`, " + small + " jobs (process start to exit)",
                    Ms(Summarize(cli_ms)),
                    std::to_string(cli_runs) + " runs"});
    PrintRows("listing (" + gpufleet + ")", rows);  // now: the large queue takes minutes more
    rows.clear();
    if (!CancelQueueAndStop(gf)) {
      return 1;
    }
  }
  if (queue > 0) {
    auto started = StartWithQueue(gpufleet, queue, via_api);
    if (!started.ok()) {
      std::cerr << started.error().ToString() << '\n';
      return 1;
    }
    GpufleetInstance& gf = **started;
    ApiClient client(gf.socket());
    const std::string large = std::to_string(queue);
    if (Status s = TimeListing(client,
                               "`GET /api/v1/jobs?limit=1000`, " + large + " jobs",
                               "/api/v1/jobs?limit=1000",
                               1000,
                               repeat,
                               true,
                               rows);
        !s.ok()) {
      std::cerr << s.error().ToString() << '\n';
      return 1;
    }
    const std::string middle = "/api/v1/jobs?limit=1000&cursor=" + std::to_string(queue / 2);
    if (Status s = TimeListing(client,
                               "a page in the middle (`&cursor=" + std::to_string(queue / 2) +
                                   "`), " + large + " jobs",
                               middle,
                               1000,
                               repeat,
                               true,
                               rows);
        !s.ok()) {
      rows.push_back({"a page in the middle (`cursor`)", "not served", s.error().message});
    }
    PrintRows("listing (" + gpufleet + ")", rows);
    if (!CancelQueueAndStop(gf)) {
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace gf::bench

int main(int argc, char** argv) {
  return gf::bench::RunMain("gf_list_bench", [&] { return gf::bench::Main(argc, argv); });
}
