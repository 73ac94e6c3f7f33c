// The screen of `gpufleet top`: the GPU, job and process lists, as the API's JSON, laid out for
// a terminal of width x height characters:
//   - a title, and the cluster totals (GPUs allocated / busy / failed, utilisation, memory,
//     power, jobs running and pending);
//   - one row per GPU: node, index, model, utilisation as a number, a bar and a sparkline of
//     the last samples, memory, temperature, power, STATUS (health, else the GPU's conditions:
//     "idle: no process", "unmanaged process", "over mem limit", else "ok"), job, user;
//   - the caller's visible jobs (id or array task, user, state, GPUs, elapsed, utilisation,
//     name or reason in all the width that is left), one of them selected;
//   - one row per process on a GPU (node, GPU, pid, user, job or "unmanaged", GPU memory, CPU %,
//     host memory, command), sorted by the key the user picked;
//   - in the live view, a last line with the keys, or the question or answer of the last action.
// Colours (TopPaint) mark load (green light, yellow moderate, red heavy: utilisation below 10 %
// / 75 %, memory below 10 % / 80 %, nvitop's thresholds), job states, conditions and health;
// the text is the same without them, so `top --once` prints exactly what the live view shows.
//
// Pure: no terminal and no clock (`now_ms` is an input), so tests assert whole frames. The JSON
// is read defensively: a field that is missing or of another type is shown as "-". Only ASCII
// comes out: other bytes from the JSON (names, users, commands) become '?', so that no text from
// a job reaches the terminal as an escape sequence. When the screen is narrow, the least useful
// columns go first (sparkline, bar, model, power, temperature, node...); when it is short, rows
// are cut and counted ("... 3 more GPUs"), the selected job always kept in view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gf {

enum class TopStyle {
  kNormal,
  kTitle,     // the first line
  kHeading,   // column headings
  kAlert,     // a GPU whose health is not ok
  kSelected,  // the selected job
  kPrompt,    // the last line while it asks or answers
};

// A foreground colour over part of a line.
enum class TopColor { kGreen, kYellow, kRed, kMagenta, kCyan, kGrey };

struct TopPaint {
  std::size_t begin = 0;  // byte offsets into the line's text, end excluded
  std::size_t end = 0;
  TopColor color = TopColor::kGrey;
  bool operator==(const TopPaint&) const = default;
};

struct TopLine {
  std::string text;  // at most the frame's width, ASCII only
  TopStyle style = TopStyle::kNormal;
  std::vector<TopPaint> paints{};  // in order, not overlapping, within the text
  bool operator==(const TopLine&) const = default;
};

// The order of the process list, changed with the `s` key.
enum class TopSort { kGpuMemory, kCpu, kHostMemory, kPid };
std::string_view ToString(TopSort sort);  // "GPU memory", "CPU", "host memory", "pid"

// What the user chose with the keys (top_keys.h changes it; the frame shows it).
struct TopControls {
  std::optional<std::int64_t> selected_job{};    // highlighted in the job list
  std::optional<std::int64_t> confirm_cancel{};  // asked "cancel job N?", waiting for y
  TopSort sort = TopSort::kGpuMemory;
  std::string message{};  // the outcome of the last action, on the last line until the next key
};

// The utilisation samples of the last minutes, by GPU uuid, oldest first.
using TopHistory = std::map<std::string, std::deque<int>>;

// NOLINTNEXTLINE(bugprone-exception-escape): json members; a throw here is bad_alloc
struct TopInput {
  nlohmann::json gpus;      // GET /api/v1/gpus's answer ({"gpus": [...]}); null while unknown
  nlohmann::json jobs;      // GET /api/v1/jobs's answer ({"jobs": [...]}); null while unknown
  std::string status;       // right side of the title: "live", an error, "reconnecting"...
  std::int64_t now_ms = 0;  // Unix milliseconds, for elapsed times
  TopHistory history{};     // empty for `--once`: no sparkline column then
  TopControls controls{};
  bool live = false;  // the live view: the frame fills the screen and ends with the keys line
};

// At most `height` lines, each at most `width` characters. Widths or heights below 1 give
// an empty frame.
std::vector<TopLine> RenderTopFrame(const TopInput& input, int width, int height);

// The ids of the job list in the order the frame shows it (running first, then by id).
std::vector<std::int64_t> TopJobOrder(const nlohmann::json& jobs);

}  // namespace gf
