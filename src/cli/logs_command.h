// `gpufleet logs JOB`: a job's output, read over the API chunk by chunk (and followed with -f).
//
// A job's standard output and standard error are kept in two files (the executor's stdout.log
// and stderr.log). By default `logs` prints both, as a Slurm user expects of one output file:
// standard output, then standard error; while following (-f), each one's new lines as they
// come. --stdout / --stderr (-e) print one. When what was asked for is empty, a note on
// standard error says where the job's output is. Single-threaded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "api/api_client.h"
#include "cli/client_commands.h"
#include "service/job_log.h"

namespace gf {

enum class LogStreams { kBoth, kStdout, kStderr };

// Prints job `id_text`'s output to standard output; notes go to standard error. Returns the
// exit code (0, or Fail's for a refused or unreachable request).
int RunLogs(const ClientContext& ctx, const std::string& id_text, LogStreams which, bool follow);

// One read of a job's output (GET `base`/logs, `base` = "/api/v1/jobs/ID"; `stream` "stdout" or
// "stderr"): the bytes from `offset`, at most `limit` (else the server's chunk), with the
// file's size and where the next read continues. A size below `offset` means the file was
// started again (a requeued job's next run). Errors: the server's, or the connection's.
Result<LogChunk> FetchLogChunk(ApiClient& client,
                               const std::string& base,
                               const std::string& stream,
                               std::int64_t offset,
                               std::optional<std::int64_t> limit);

}  // namespace gf
