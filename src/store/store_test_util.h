// Helpers for the store tests: a temporary folder, sample values, and canonical text forms of
// Job, Node, Event and GpuMinute that compare every field (Job has no operator==) and print
// readably when a test fails. Test-only; not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "model/event.h"
#include "model/gpu_minute.h"
#include "model/job.h"
#include "model/node.h"
#include "model/token.h"

namespace gf::testing {

// A fresh folder under the test's temporary directory, removed with everything in it when the
// object is destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Every field, in declaration order; strings quoted with their bytes escaped.
std::string DebugString(const Job& job);
std::string DebugString(const Node& node);
std::string DebugString(const Event& event);
std::string DebugString(const GpuMinute& minute);
std::string DebugString(const ApiToken& token);

// A plain pending job with its optional fields empty.
Job MinimalJob(std::int64_t id, std::uint32_t uid = 1000);
// A job with every optional field set, unicode text and awkward argv/env.
Job FullJob(std::int64_t id);
Node SampleNode(const std::string& name, int gpus);
Event SampleEvent(std::optional<JobId> job, const std::string& kind);
// GPU `uuid` on `node`, `minutes` minutes after a fixed minute, held by job 7 of "zoë"; every
// numeric field set to a value that tells rows apart (fractions included).
GpuMinute SampleGpuMinute(const std::string& node, const std::string& uuid, int minutes);
// A user token `id` (non-empty) with every field set, expiring, not revoked; its secret_hash
// is valid and differs between ids of different first letters or lengths.
ApiToken SampleToken(const std::string& id);

}  // namespace gf::testing
