#include "cli/logs_command.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>
#include <thread>
#include <utility>
#include <vector>

#include "api/api_client.h"
#include "cli/job_ref.h"
#include "cli/views.h"
#include "model/output_pattern.h"

namespace gf {
namespace {

constexpr std::chrono::milliseconds kFollowPoll{500};

// One of the job's output files as `logs` reads it.
struct LogCursor {
  std::string stream;        // "stdout" or "stderr", as the API names it
  std::int64_t offset = 0;   // where the next read starts, in bytes
  std::int64_t printed = 0;  // bytes printed, over every run read
};

std::string StreamName(const std::string& stream) {
  return stream == "stdout" ? "standard output" : "standard error";
}

std::optional<std::int64_t> HeaderNumber(const HttpResponse& response, std::string_view name) {
  const std::optional<std::string> text = response.Header(name);
  std::int64_t n = 0;
  if (!text || std::from_chars(text->data(), text->data() + text->size(), n).ec != std::errc()) {
    return std::nullopt;
  }
  return n;
}

// Prints what `cursor`'s file holds past its offset. Returns false, having printed nothing,
// when the file is shorter than the offset: the next run of a requeued job wrote a new one
// (the executor keeps the earlier one aside), to be read from its start.
Result<bool> Drain(ApiClient& client, const std::string& base, LogCursor& cursor) {
  while (true) {
    GF_ASSIGN_OR_RETURN(const LogChunk chunk,
                        FetchLogChunk(client, base, cursor.stream, cursor.offset, std::nullopt));
    if (chunk.size < cursor.offset) {
      return false;
    }
    std::cout << chunk.data << std::flush;
    cursor.printed += static_cast<std::int64_t>(chunk.data.size());
    cursor.offset = chunk.next_offset;
    if (chunk.size <= cursor.offset) {
      return true;
    }
  }
}

// `logs -f` of a requeued job: its next run's files are read from their start.
void FollowNextRun(const std::string& id_text, std::vector<LogCursor>& cursors) {
  if (std::any_of(
          cursors.begin(), cursors.end(), [](const LogCursor& c) { return c.offset > 0; })) {
    std::cerr << "gpufleet logs: job " << id_text << " was requeued; following its next run\n";
  }
  for (LogCursor& c : cursors) {
    c.offset = 0;
  }
}

// A job that names its own output files (--output, --error, an #SBATCH script's slurm-%j.out)
// writes nothing to gpufleet's log: says which files, as patterns in its working directory.
// Returns false, having printed nothing, for a job without them.
bool NoteOwnOutputFiles(ApiClient& client, const std::string& base, const std::string& id_text) {
  Result<nlohmann::json> job = client.CallJson("GET", base, std::nullopt);
  if (!job.ok() || !job->contains("env") || !(*job)["env"].is_object()) {
    return false;
  }
  const nlohmann::json& env = (*job)["env"];
  std::string files;
  for (const auto& [variable, flag] :
       {std::pair{kOutputVariable, "--output"}, std::pair{kErrorVariable, "--error"}}) {
    const auto it = env.find(std::string(variable));
    if (it != env.end() && it->is_string()) {
      files += (files.empty() ? "" : ", ") + it->get<std::string>() + " (" + flag + ")";
    }
  }
  if (files.empty()) {
    return false;
  }
  std::cerr << "gpufleet logs: job " << id_text << " writes its output to its own files: " << files
            << ", in " << JsonText(*job, "workdir") << '\n';
  return true;
}

// An empty answer is never the whole story: when nothing was printed, says on standard error
// where the job's output is (a failed Python job's traceback is on standard error alone).
void NoteEmptyOutput(ApiClient& client,
                     const std::string& base,
                     const std::string& id_text,
                     const std::vector<LogCursor>& cursors) {
  if (std::any_of(
          cursors.begin(), cursors.end(), [](const LogCursor& c) { return c.printed > 0; })) {
    return;
  }
  if (NoteOwnOutputFiles(client, base, id_text)) {
    return;
  }
  if (cursors.size() > 1) {
    std::cerr << "gpufleet logs: job " << id_text
              << " has written nothing to standard output or standard error\n";
    return;
  }
  const std::string& asked = cursors.front().stream;
  const std::string other = asked == "stdout" ? "stderr" : "stdout";
  Result<LogChunk> probe = FetchLogChunk(client, base, other, 0, 0);
  const std::int64_t other_size = probe.ok() ? probe->size : 0;
  std::cerr << "gpufleet logs: job " << id_text << " has written nothing to " << StreamName(asked);
  if (other_size > 0) {
    std::cerr << "; its " << StreamName(other) << " holds " << other_size
              << " bytes: gpufleet logs --" << other << ' ' << id_text
              << " (or both: gpufleet logs " << id_text << ")\n";
  } else {
    std::cerr << " or " << StreamName(other) << '\n';
  }
}

}  // namespace

Result<LogChunk> FetchLogChunk(ApiClient& client,
                               const std::string& base,
                               const std::string& stream,
                               std::int64_t offset,
                               std::optional<std::int64_t> limit) {
  std::string target = base + "/logs?stream=" + stream + "&offset=" + std::to_string(offset);
  if (limit) {
    target += "&limit=" + std::to_string(*limit);
  }
  GF_ASSIGN_OR_RETURN(HttpResponse response, client.Call("GET", target, std::nullopt));
  if (response.status >= 300) {
    return ErrorFromResponse(response);
  }
  LogChunk chunk;
  const auto read = static_cast<std::int64_t>(response.body.size());
  chunk.next_offset = HeaderNumber(response, "X-Gpufleet-Next-Offset").value_or(offset + read);
  // A server always says the size; without it, what was read is taken as all there is.
  chunk.size = HeaderNumber(response, "X-Gpufleet-Log-Size").value_or(chunk.next_offset);
  chunk.data = std::move(response.body);
  return chunk;
}

int RunLogs(const ClientContext& ctx, const std::string& id_text, LogStreams which, bool follow) {
  auto opened = OpenClient(ctx);
  if (!opened.ok()) {
    return Fail(opened.error());
  }
  ApiClient& client = **opened;
  Result<std::int64_t> id = ResolveJobId(client, id_text);
  if (!id.ok()) {
    return Fail(id.error());
  }
  const std::string base = "/api/v1/jobs/" + std::to_string(*id);
  std::vector<LogCursor> cursors;
  if (which != LogStreams::kStderr) {
    cursors.push_back({.stream = "stdout"});
  }
  if (which != LogStreams::kStdout) {
    cursors.push_back({.stream = "stderr"});
  }
  while (true) {
    // Ask for the state first: output written before the job ended is then all on disk.
    std::string state;
    if (follow) {
      Result<nlohmann::json> job = client.CallJson("GET", base, std::nullopt);
      if (!job.ok()) {
        return Fail(job.error());
      }
      state = JsonText(*job, "state");
      if (state == "PENDING") {  // not started yet, or requeued
        FollowNextRun(id_text, cursors);
        std::this_thread::sleep_for(kFollowPoll);
        continue;
      }
    }
    bool next_run = false;
    for (LogCursor& cursor : cursors) {
      Result<bool> same_run = Drain(client, base, cursor);
      if (!same_run.ok()) {
        return Fail(same_run.error());
      }
      next_run = next_run || !*same_run;
    }
    if (next_run) {
      FollowNextRun(id_text, cursors);
      continue;
    }
    if (!follow || IsEndState(state)) {
      break;
    }
    std::this_thread::sleep_for(kFollowPoll);
  }
  NoteEmptyOutput(client, base, id_text, cursors);
  return 0;
}

}  // namespace gf
