// Small helpers shared by the bench commands: wall-clock deadlines that also end on Ctrl-C,
// summary statistics, and the few job API calls the benches make (through gf::ApiClient).
//
// Everything here is stateless apart from the process-wide "interrupted" flag, which a
// SIGINT/SIGTERM handler sets (InstallInterruptHandler) so that every bounded loop stops and
// the bench still cleans up what it started. Thread-safety: the functions are safe to call from
// any thread; an ApiClient passed in must be used by one thread only (its own contract).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_client.h"
#include "core/result.h"

namespace gf::bench {

using SteadyClock = std::chrono::steady_clock;

// Makes SIGINT and SIGTERM set the interrupted flag instead of ending the process, and ignores
// SIGPIPE. Call once, before any thread starts.
void InstallInterruptHandler();
bool Interrupted();

// A point in time after which a wait gives up. Expired() is also true once interrupted.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds budget) : end_(SteadyClock::now() + budget) {}
  bool Expired() const { return Interrupted() || SteadyClock::now() >= end_; }

 private:
  SteadyClock::time_point end_;
};

double SecondsSince(SteadyClock::time_point start);

// The body of a bench command's main(): runs `bench`, and turns an escaping exception into
// "NAME: what" on stderr and exit status 1.
int RunMain(const char* name, const std::function<int()>& bench);
std::int64_t UnixMillisNow();
std::int64_t UnixNanosNow();

// Summary of a sample; every field is 0 for an empty sample.
struct Stats {
  double median = 0;
  double min = 0;
  double max = 0;
  double p99 = 0;
  std::size_t count = 0;
};
Stats Summarize(std::vector<double> values);
// "12.3 ms (max 45.6)": a sample of milliseconds as the bench tables show it.
std::string Ms(const Stats& s);

// One line of a bench's three-column table (what was measured, the figure, a note), printed as
// Markdown by PrintRows under the heading `title`, columns as wide as their widest cell.
struct Row {
  std::string what;
  std::string figure;
  std::string note;
};
void PrintRows(const std::string& title, const std::vector<Row>& rows);

// True for the states a job leaves only by ending (or never leaves).
bool IsTerminalState(const std::string& state);
// True once a job has started: RUNNING or any terminal state.
bool HasStarted(const std::string& state);

// POST /api/v1/jobs with {"command": argv, "gpus": gpus, "workdir": "/tmp"}.
// Returns the job JSON the server answered (201). Errors: the server's, or kUnavailable.
Result<nlohmann::json> SubmitJob(ApiClient& client, const std::vector<std::string>& argv, int gpus);

// GET /api/v1/jobs/{id}.
Result<nlohmann::json> GetJob(ApiClient& client, std::int64_t id);

// GET /api/v1/jobs?limit=N[&all=1]: the "jobs" array (active jobs, newest first; with
// include_finished also finished ones from the store).
Result<nlohmann::json> ListJobs(ApiClient& client, int limit, bool include_finished = false);

// Polls GET /api/v1/jobs/{id} every `poll` until `done(state)` holds; returns the job JSON.
// Errors: kUnavailable "timed out" when `deadline` passes first, or the API's error.
template <typename Done>
Result<nlohmann::json> WaitForJob(ApiClient& client,
                                  std::int64_t id,
                                  Done done,
                                  const Deadline& deadline,
                                  std::chrono::milliseconds poll);

// Makes `total` calls `call(client, i)`, i = 0..total-1, spread over `clients` threads (thread
// t takes i = t, t+clients, ...), each thread with its own ApiClient on `socket`, connected
// (GET /api/v1/health) before the clock starts. Stops at the first error or on Ctrl-C.
// Returns the seconds from the moment every thread was ready until the last call returned;
// errors: the first call's error.
Result<double> RunOnClients(const std::string& socket,
                            int clients,
                            int total,
                            const std::function<Status(ApiClient&, int)>& call);

// Runs `argv` (argv[0] a path) with stdout and stderr to /dev/null and the extra environment
// `env` ("K=V"), waits for it; returns its exit status (or an error if it could not start or
// was killed by a signal).
Result<int> RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// The current user's name ("uid N" when it has none), for jobs a bench writes into a store as
// theirs. Call before any thread starts (getpwuid's buffer is shared).
std::string CurrentUser();

// ---- implementation of the template ----

Status SleepFor(std::chrono::milliseconds d);  // kUnavailable "interrupted" on Ctrl-C

template <typename Done>
Result<nlohmann::json> WaitForJob(ApiClient& client,
                                  std::int64_t id,
                                  Done done,
                                  const Deadline& deadline,
                                  std::chrono::milliseconds poll) {
  while (true) {
    GF_ASSIGN_OR_RETURN(nlohmann::json job, GetJob(client, id));
    if (done(job.value("state", std::string()))) {
      return job;
    }
    if (deadline.Expired()) {
      return MakeError(ErrorCode::kUnavailable,
                       "timed out waiting for job " + std::to_string(id) + " (state " +
                           job.value("state", std::string("?")) + ")");
    }
    GF_TRY(SleepFor(poll));
  }
}

}  // namespace gf::bench
