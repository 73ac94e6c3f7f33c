// Store codec: the JSON text that every store backend uses for the list-valued fields of a Job
// or Node (argv, env, allocated GPUs, node GPUs, labels). Scalar fields that queries filter on
// are real columns and do not pass through here.
//
// Strings are bytes, not necessarily UTF-8 (argv and env come from a user's shell), yet JSON
// text must be UTF-8. A string that is valid UTF-8 is written as a JSON string; any other is
// written as {"hex": "..."} so that every byte round-trips exactly. Label keys must be UTF-8.
//
// Pure functions; thread-safe. They never throw: nlohmann::json exceptions become Errors.
// Decode errors are kInternal (the stored text is damaged) and name `what` (e.g. "job 12 argv").
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/result.h"
#include "model/job.h"
#include "model/node.h"

namespace gf {

// True if `s` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view s);

Result<std::string> EncodeStrings(const std::vector<std::string>& strings);
Result<std::vector<std::string>> DecodeStrings(std::string_view text, std::string_view what);

Result<std::string> EncodeEnv(const EnvList& env);
Result<EnvList> DecodeEnv(std::string_view text, std::string_view what);

Result<std::string> EncodeGpuUuids(const std::vector<GpuUuid>& uuids);
Result<std::vector<GpuUuid>> DecodeGpuUuids(std::string_view text, std::string_view what);

Result<std::string> EncodeGpus(const std::vector<Gpu>& gpus);
Result<std::vector<Gpu>> DecodeGpus(std::string_view text, std::string_view what);

// Errors: kInvalidArgument if a key is not valid UTF-8.
Result<std::string> EncodeLabels(const std::map<std::string, std::string>& labels);
Result<std::map<std::string, std::string>> DecodeLabels(std::string_view text,
                                                        std::string_view what);

// A job's dependencies (`--after`): [{"job": 12, "kind": "ok"}, ...].
Result<std::string> EncodeDependencies(const std::vector<Dependency>& after);
Result<std::vector<Dependency>> DecodeDependencies(std::string_view text, std::string_view what);

}  // namespace gf
