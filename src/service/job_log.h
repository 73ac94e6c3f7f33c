// A read of a job's output (`gpufleet logs`): which stream, from where, how much, and the
// chunk that comes back. The controller's ClusterService::ReadJobLog answers it through the
// NodeAgent of the job's node (node_agent.h): the in-process agent reads its file, a remote
// one is asked over the agent link (agent_link.h, read_log). Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/ids.h"

namespace gf {

enum class LogStream { kStdout, kStderr };

inline std::string_view ToString(LogStream stream) {
  return stream == LogStream::kStdout ? "stdout" : "stderr";
}

struct LogRequest {
  JobId job{};
  LogStream stream = LogStream::kStdout;
  std::int64_t offset = 0;  // bytes from the start of the file; >= 0
  std::int64_t limit = 0;   // at most this many bytes; >= 0 (the reader may return fewer)
};

// [offset, offset + data.size()) of the file as it was at the read. A job whose file does not
// exist yet (launched, not yet written to) reads as empty with size 0.
struct LogChunk {
  std::string data{};            // raw bytes: a job's output need not be UTF-8
  std::int64_t size = 0;         // the whole file's size at the read
  std::int64_t next_offset = 0;  // where the next read continues: min(offset, size) + data size
};

}  // namespace gf
