#include "cli/top_frame.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>

#include "cli/views.h"
#include "core/duration.h"
#include "core/printable_text.h"

namespace gf {
namespace {

using nlohmann::json;

constexpr int kMinBarWidth = 7;  // "[#####]"
constexpr int kMaxBarWidth = 22;
constexpr int kJobRowsKept = 3;  // job rows kept on a short screen before GPUs are cut
constexpr double kMibPerGib = 1024.0;

// ---- Reading the JSON defensively ----

// ASCII only, so that a byte is a column: control characters escaped as everywhere else
// (EscapeControl: "\x1b"), then each UTF-8 sequence one '?' (its continuation bytes are
// dropped, so a name keeps its length on screen).
std::string Printable(std::string_view text) {
  const std::string s = EscapeControl(text);
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80 && byte < 0xC0) {
      continue;
    }
    out += (byte < 0x20 || byte >= 0x7F) ? '?' : c;
  }
  return out;
}

const json& Member(const json& obj, const char* key) {
  static const json null_json;
  if (!obj.is_object()) {
    return null_json;
  }
  const auto it = obj.find(key);
  return it == obj.end() ? null_json : *it;
}

const json& ListOf(const json& doc, const char* key) {
  static const json empty_list = json::array();
  const json& list = Member(doc, key);
  return list.is_array() ? list : empty_list;
}

std::optional<double> Number(const json& obj, const char* key) {
  const json& v = Member(obj, key);
  return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}

// A string or whole number as text; "-" for anything else (missing, null, empty).
std::string Text(const json& obj, const char* key) {
  const json& v = Member(obj, key);
  if (v.is_string() && !v.get<std::string>().empty()) {
    return Printable(v.get<std::string>());
  }
  if (v.is_number_integer()) {
    return std::to_string(v.get<std::int64_t>());
  }
  return "-";
}

std::string Whole(std::optional<double> v, std::string_view unit) {
  return v ? std::to_string(std::llround(*v)) + std::string(unit) : "-";
}

std::string Gib(double mib) {
  return std::to_string(std::llround(mib / kMibPerGib));
}

// ---- A table that fits its width ----

struct Column {
  std::string_view heading;
  bool right = false;  // numbers are right-aligned
  int drop_rank = 0;   // on a narrow screen the highest rank goes first; 0 always stays
  int max_width = 12;  // longer cells are cut
  bool bar = false;    // cells are percentages drawn as [###---] in the width left over
};

using Row = std::vector<std::string>;

std::string Bar(const std::string& pct_text, int width) {
  const int inner = width - 2;
  int filled = 0;
  if (pct_text != "-" && !pct_text.empty()) {
    const int pct = std::clamp(std::stoi(pct_text), 0, 100);
    filled = (pct * inner + 50) / 100;
  }
  return "[" + std::string(static_cast<std::size_t>(filled), '#') +
         std::string(static_cast<std::size_t>(inner - filled), '-') + "]";
}

std::string Fit(std::string cell, int width, bool right) {
  const auto w = static_cast<std::size_t>(width);
  if (cell.size() > w) {
    cell.resize(w);
  }
  const std::string pad(w - cell.size(), ' ');
  return right ? pad + cell : cell + pad;
}

// Column widths from the content (capped); columns dropped by rank until the line fits; what
// is left over widens the bar. A width of 0 means the column is not shown.
std::vector<int> PlanWidths(const std::vector<Column>& columns,
                            const std::vector<Row>& rows,
                            int width) {
  std::vector<int> widths;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    int w = static_cast<int>(columns[c].heading.size());
    for (const Row& row : rows) {
      w = std::max(w, static_cast<int>(row[c].size()));
    }
    widths.push_back(columns[c].bar ? kMinBarWidth : std::min(w, columns[c].max_width));
  }
  const auto used = [&] {
    int total = -1;  // n columns, n-1 gaps
    for (const int w : widths) {
      total += w > 0 ? w + 1 : 0;
    }
    return total;
  };
  while (used() > width) {
    std::optional<std::size_t> drop;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (widths[c] > 0 && columns[c].drop_rank > 0 &&
          (!drop || columns[c].drop_rank >= columns[*drop].drop_rank)) {
        drop = c;
      }
    }
    if (!drop) {
      break;  // what must stay is wider than the screen: the lines are cut
    }
    widths[*drop] = 0;
  }
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (columns[c].bar && widths[c] > 0) {
      widths[c] = std::min(kMaxBarWidth, kMinBarWidth + std::max(0, width - used()));
    }
  }
  return widths;
}

std::string JoinCells(const std::vector<Column>& columns,
                      const std::vector<int>& widths,
                      const Row& cells,
                      bool heading,
                      int width) {
  std::string line;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (widths[c] == 0) {
      continue;
    }
    if (!line.empty()) {
      line += ' ';
    }
    if (columns[c].bar && !heading) {
      line += Bar(cells[c], widths[c]);
    } else {
      line += Fit(cells[c], widths[c], columns[c].right);
    }
  }
  while (!line.empty() && line.back() == ' ') {
    line.pop_back();
  }
  return line.substr(0, static_cast<std::size_t>(width));
}

struct Table {
  std::vector<Column> columns;
  std::vector<Row> rows;
  std::vector<TopStyle> styles;  // one per row
  std::string_view noun;         // "GPUs", "jobs": for "... 3 more GPUs"
};

// The heading and as many rows as `budget` lines allow; rows that do not fit are counted on
// the last line instead.
void AppendTable(const Table& table, int width, int budget, std::vector<TopLine>& out) {
  if (budget <= 0) {
    return;
  }
  const std::vector<int> widths = PlanWidths(table.columns, table.rows, width);
  Row headings;
  for (const Column& column : table.columns) {
    headings.emplace_back(column.heading);
  }
  out.push_back({JoinCells(table.columns, widths, headings, true, width), TopStyle::kHeading});
  const int rows = static_cast<int>(table.rows.size());
  const int shown = rows <= budget - 1 ? rows : std::max(0, budget - 2);
  for (int r = 0; r < shown; ++r) {
    const auto i = static_cast<std::size_t>(r);
    out.push_back({JoinCells(table.columns, widths, table.rows[i], false, width), table.styles[i]});
  }
  if (shown < rows && budget >= 2) {
    const std::string more =
        "... " + std::to_string(rows - shown) + " more " + std::string(table.noun);
    out.push_back({more.substr(0, static_cast<std::size_t>(width)), TopStyle::kNormal});
  }
}

// ---- The GPU and job tables ----

const json& SampleOf(const json& gpu) {
  return Member(gpu, "sample");
}

bool IsHealthy(const std::string& health) {
  return health == "ok" || health == "-";
}

// The GPU's user: its jobs' owners, else the owner of a process nobody allocated, marked '*'.
std::string GpuUser(const json& gpu) {
  std::string user = Printable(GpuUserText(gpu));
  if (user != "-") {
    return user;
  }
  for (const json& p : ListOf(SampleOf(gpu), "processes")) {
    if (const std::string owner = Text(p, "user"); owner != "-") {
      return owner + "*";
    }
  }
  return "-";
}

std::string GpuMemory(const json& gpu) {
  const json& sample = SampleOf(gpu);
  const auto used = Number(sample, "memory_used_mib");
  auto total = Number(sample, "memory_total_mib");
  if (!total || *total <= 0) {
    total = Number(gpu, "memory_mib");
  }
  if (!total) {
    return "-";
  }
  return (used ? Gib(*used) : std::string("-")) + "/" + Gib(*total) + "G";
}

Table GpuTable(const json& gpus) {
  Table t{{{"NODE", false, 3, 12},
           {"GPU", true, 0, 3},
           {"MODEL", false, 5, 14},
           {"UTIL", true, 0, 4},
           {"", false, 6, kMaxBarWidth, true},
           {"MEM", true, 1, 11},
           {"TEMP", true, 4, 4},
           {"POWER", true, 4, 6},
           {"HEALTH", false, 0, 9},
           {"JOB", true, 1, 13},  // "3 jobs (0.75)" on a shared GPU
           {"USER", false, 2, 12}},
          {},
          {},
          "GPUs"};
  for (const json& gpu : ListOf(gpus, "gpus")) {
    const json& sample = SampleOf(gpu);
    const auto util = Number(sample, "util_gpu_pct");
    const auto power_mw = Number(sample, "power_mw");
    std::string health = Text(gpu, "health");
    const bool healthy = IsHealthy(health);
    if (!healthy) {
      std::transform(health.begin(), health.end(), health.begin(), [](unsigned char c) {
        return static_cast<char>(std::toupper(c));
      });
    }
    t.rows.push_back({Text(gpu, "node"),
                      Text(gpu, "index"),
                      Text(gpu, "model"),
                      Whole(util, "%"),
                      util ? std::to_string(std::llround(*util)) : "-",
                      GpuMemory(gpu),
                      Whole(Number(sample, "temperature_c"), "C"),
                      power_mw ? Whole(*power_mw / 1000.0, "W") : "-",
                      health,
                      Printable(GpuJobText(gpu)),
                      GpuUser(gpu)});
    t.styles.push_back(healthy ? TopStyle::kNormal : TopStyle::kAlert);
  }
  return t;
}

// The ids of the jobs holding a GPU: its holders, else its job (a server older than sharing).
std::vector<json> HolderIds(const json& gpu) {
  std::vector<json> ids;
  for (const json& holder : ListOf(gpu, "holders")) {
    ids.push_back(Member(holder, "job"));
  }
  if (ids.empty() && !Member(gpu, "job").is_null()) {
    ids.push_back(Member(gpu, "job"));
  }
  return ids;
}

// Mean utilisation of the GPUs that `job_id` holds (a shared one: the GPU's), from the live
// GPU list.
std::optional<double> JobUtil(const json& gpus, const json& job_id) {
  double sum = 0;
  int n = 0;
  for (const json& gpu : ListOf(gpus, "gpus")) {
    const std::vector<json> ids = HolderIds(gpu);
    if (!job_id.is_null() && std::find(ids.begin(), ids.end(), job_id) != ids.end()) {
      if (const auto util = Number(SampleOf(gpu), "util_gpu_pct")) {
        sum += *util;
        ++n;
      }
    }
  }
  return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
}

bool IsRunning(const std::string& state) {
  return state == "RUNNING" || state == "STARTING";
}

std::string Elapsed(const json& job, std::int64_t now_ms) {
  const auto start = Number(job, "start_time_ms");
  if (!start || !IsRunning(Text(job, "state"))) {
    return "-";
  }
  const auto secs = std::max<std::int64_t>(0, (now_ms - std::llround(*start)) / 1000);
  return FormatDuration(std::chrono::seconds(secs));
}

Table JobTable(const json& jobs, const json& gpus, std::int64_t now_ms) {
  Table t{{{"JOB", true, 0, 7},
           {"USER", false, 1, 12},
           {"STATE", false, 0, 9},
           {"GPUS", true, 2, 4},
           {"ELAPSED", true, 2, 9},
           {"UTIL", true, 3, 4},
           {"NAME/REASON", false, 4, 40}},
          {},
          {},
          "jobs"};
  std::vector<const json*> order;
  for (const json& job : ListOf(jobs, "jobs")) {
    order.push_back(&job);
  }
  // Running first, then the rest; oldest id first within each.
  std::stable_sort(order.begin(), order.end(), [](const json* a, const json* b) {
    const bool ra = IsRunning(Text(*a, "state"));
    const bool rb = IsRunning(Text(*b, "state"));
    if (ra != rb) {
      return ra;
    }
    return Number(*a, "id").value_or(0) < Number(*b, "id").value_or(0);
  });
  for (const json* job : order) {
    const std::string state = Text(*job, "state");
    const std::string reason = Text(*job, "reason");
    t.rows.push_back({Text(*job, "id"),
                      Text(*job, "user"),
                      state,
                      Text(*job, "gpus"),
                      Elapsed(*job, now_ms),
                      Whole(JobUtil(gpus, Member(*job, "id")), "%"),
                      IsRunning(state) || reason == "-" ? Text(*job, "name") : reason});
    t.styles.push_back(TopStyle::kNormal);
  }
  return t;
}

// ---- Title and totals ----

std::string TitleLine(const std::string& status, int width) {
  const std::string left = "gpufleet top";
  const std::string right = Printable(status) + (status.empty() ? "" : "  ") + "q: quit";
  const int gap = width - static_cast<int>(left.size() + right.size());
  std::string line = gap >= 1 ? left + std::string(static_cast<std::size_t>(gap), ' ') + right
                              : left + " " + right;
  return line.substr(0, static_cast<std::size_t>(width));
}

std::string TotalsLine(const TopInput& input, int width) {
  const json& gpus = ListOf(input.gpus, "gpus");
  int busy = 0;
  int util_n = 0;
  double util_sum = 0;
  double used_mib = 0;
  double total_mib = 0;
  std::optional<double> power_mw;
  std::set<std::string> running;  // job ids on GPUs (all users) and the caller's running jobs
  for (const json& gpu : gpus) {
    const json& sample = SampleOf(gpu);
    const std::vector<json> holders = HolderIds(gpu);
    busy += holders.empty() ? 0 : 1;
    for (const json& id : holders) {
      running.insert(id.is_number_integer() ? std::to_string(id.get<std::int64_t>()) : "-");
    }
    if (const auto u = Number(sample, "util_gpu_pct")) {
      util_sum += *u;
      ++util_n;
    }
    used_mib += Number(sample, "memory_used_mib").value_or(0);
    total_mib += Number(sample, "memory_total_mib").value_or(Number(gpu, "memory_mib").value_or(0));
    if (const auto p = Number(sample, "power_mw")) {
      power_mw = power_mw.value_or(0) + *p;
    }
  }
  int pending = 0;
  for (const json& job : ListOf(input.jobs, "jobs")) {
    const std::string state = Text(job, "state");
    if (IsRunning(state)) {
      running.insert(Text(job, "id"));
    }
    pending += state == "PENDING" ? 1 : 0;
  }
  std::string line =
      "GPUs " + std::to_string(busy) + "/" + std::to_string(gpus.size()) + " busy  util " +
      Whole(util_n > 0 ? std::optional<double>(util_sum / util_n) : std::nullopt, "%") + "  mem " +
      Gib(used_mib) + "/" + Gib(total_mib) + "G  power " +
      (power_mw ? Whole(*power_mw / 1000.0, "W") : "-") + "  jobs " +
      std::to_string(running.size()) + " running " + std::to_string(pending) + " pending";
  return line.substr(0, static_cast<std::size_t>(width));
}

}  // namespace

std::vector<TopLine> RenderTopFrame(const TopInput& input, int width, int height) {
  std::vector<TopLine> out;
  if (width < 1 || height < 1) {
    return out;
  }
  out.push_back({TitleLine(input.status, width), TopStyle::kTitle});
  if (height >= 2) {
    out.push_back({TotalsLine(input, width), TopStyle::kNormal});
  }
  const Table gpus = GpuTable(input.gpus);
  const Table jobs = JobTable(input.jobs, input.gpus, input.now_ms);
  const int avail = height - static_cast<int>(out.size());
  const int gpu_lines = 1 + static_cast<int>(gpus.rows.size());
  const int job_lines = 2 + static_cast<int>(jobs.rows.size());  // a blank line, the heading
  int gpu_budget = gpu_lines;
  if (gpu_lines + job_lines > avail) {
    // Short screen: keep a few job rows, give the GPUs the rest (at least a heading and a row).
    const int job_keep = std::min(job_lines, 3 + kJobRowsKept);  // and a "... more" line
    gpu_budget = std::max(std::min(gpu_lines, avail - job_keep), std::min(avail, 2));
  }
  AppendTable(gpus, width, gpu_budget, out);
  const int job_budget = height - static_cast<int>(out.size()) - 1;
  if (job_budget >= 1) {
    out.push_back({"", TopStyle::kNormal});
    AppendTable(jobs, width, job_budget, out);
  }
  return out;
}

}  // namespace gf
