// Reading a chunk of a job's log file on this node: the one rule behind `gpufleet logs`,
// whether the server reads it in-process (`gpufleet up`) or a remote agent reads it for the
// server (read_log on the agent link). Thread-safe (no state).
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/result.h"
#include "service/job_log.h"

namespace gf {

// Reads [offset, offset + limit) of `path`. An offset past the end reads as empty at the end
// (next_offset = size). A file that does not exist yet (the job has not written, or has not
// started here) reads as empty with size 0, so `gpufleet logs -f` can poll from the first
// moment. Errors: kInvalidArgument for a negative offset or limit; kIo naming the file when it
// exists but cannot be read.
Result<LogChunk> ReadLogFile(const std::filesystem::path& path,
                             std::int64_t offset,
                             std::int64_t limit);

}  // namespace gf
