// The screen of `gpufleet top`: the GPU and job lists, as the API's JSON, laid out for a
// terminal of width x height characters: a title, the cluster totals, one row per GPU (node,
// index, model, utilisation with a bar, memory, temperature, power, health, job, user), then
// the caller's visible jobs (id, user, state, GPUs, elapsed, utilisation, name or reason).
//
// Pure: no terminal and no clock (`now_ms` is an input), so tests assert whole frames and
// `top --once` prints exactly what the live view shows. The JSON is read defensively: a field
// that is missing or of another type is shown as "-". Only ASCII comes out: other bytes from
// the JSON (names, users) become '?', so that no text from a job reaches the terminal as an
// escape sequence. When the screen is narrow, the least useful columns go first (bar, model,
// power, temperature, node); when it is short, rows are cut and counted ("... 3 more GPUs").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gf {

enum class TopStyle {
  kNormal,
  kTitle,    // the first line
  kHeading,  // column headings
  kAlert,    // a GPU whose health is not ok
};

struct TopLine {
  std::string text;  // at most the frame's width, ASCII only
  TopStyle style = TopStyle::kNormal;
  bool operator==(const TopLine&) const = default;
};

// NOLINTNEXTLINE(bugprone-exception-escape): json members; a throw here is bad_alloc
struct TopInput {
  nlohmann::json gpus;      // GET /api/v1/gpus's answer ({"gpus": [...]}); null while unknown
  nlohmann::json jobs;      // GET /api/v1/jobs's answer ({"jobs": [...]}); null while unknown
  std::string status;       // right side of the title: "live", an error, "reconnecting"...
  std::int64_t now_ms = 0;  // Unix milliseconds, for elapsed times
};

// At most `height` lines, each at most `width` characters. Widths or heights below 1 give
// an empty frame.
std::vector<TopLine> RenderTopFrame(const TopInput& input, int width, int height);

}  // namespace gf
