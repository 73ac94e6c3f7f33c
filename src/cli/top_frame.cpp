#include "cli/top_frame.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <set>

#include "cli/views.h"
#include "core/duration.h"
#include "core/printable_text.h"

namespace gf {
namespace {

using nlohmann::json;

constexpr int kMinBarWidth = 7;  // "[#####]"
constexpr int kMaxBarWidth = 22;
constexpr int kMinSparkWidth = 8;
constexpr int kMaxSparkWidth = 60;  // the last minute at one sample a second
constexpr int kJobRowsKept = 3;     // job rows kept on a short screen before GPUs are cut
constexpr int kProcessRowsKept = 2;
constexpr int kFlexMaxWidth = 1000;  // a name/reason or command takes what the screen has
constexpr double kMibPerGib = 1024.0;
constexpr double kTenGib = 10 * kMibPerGib;
constexpr double kPercent = 100.0;
// nvitop's load thresholds: light below the first, heavy from the second.
constexpr double kUtilLight = 10;
constexpr double kUtilHeavy = 75;
constexpr double kMemoryLight = 10;
constexpr double kMemoryHeavy = 80;
// Sparkline levels, low to high: '_' is a sample at 0 % (a blank is no sample).
constexpr std::string_view kSparkLevels = "_.:-=+*#%@";

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

// A GiB figure readable at every size: "0.4", "1.5", "40" (one decimal below 10 GiB, so that
// 409 MiB is not a 0).
std::string GibFigure(double mib) {
  if (mib >= kTenGib) {
    return Gib(mib);
  }
  return FixedDecimals(mib / kMibPerGib, 1);
}

// A memory amount with its unit: "409M", "1.5G", "40G".
std::string Size(std::optional<double> mib) {
  if (!mib) {
    return "-";
  }
  return *mib < kMibPerGib ? std::to_string(std::llround(*mib)) + "M" : GibFigure(*mib) + "G";
}

std::optional<TopColor> LoadColor(std::optional<double> pct, double light, double heavy) {
  if (!pct) {
    return std::nullopt;
  }
  return *pct < light ? TopColor::kGreen : *pct < heavy ? TopColor::kYellow : TopColor::kRed;
}

// ---- A table that fits its width ----

enum class ColumnKind {
  kText,
  kBar,    // a percentage drawn as [###---] in the width left over
  kSpark,  // a sparkline, its newest sample at the right; hidden when every cell is empty
  kFlex,   // text that takes all the width left at the end (name/reason, command)
};

struct Column {
  std::string heading;
  bool right = false;  // numbers are right-aligned
  int drop_rank = 0;   // on a narrow screen the highest rank goes first; 0 always stays
  int max_width = 12;  // longer cells are cut
  ColumnKind kind = ColumnKind::kText;
};

struct Cell {
  std::string text;  // a kBar cell: the percentage as a whole number, or "-"
  std::optional<TopColor> color{};
};

using Row = std::vector<Cell>;

bool Hidden(const Column& column, const std::vector<Row>& rows, std::size_t c) {
  return column.kind == ColumnKind::kSpark &&
         std::all_of(rows.begin(), rows.end(), [c](const Row& r) { return r[c].text.empty(); });
}

int ContentWidth(const Column& column, const std::vector<Row>& rows, std::size_t c) {
  int w = static_cast<int>(column.heading.size());
  for (const Row& row : rows) {
    w = std::max(w, static_cast<int>(row[c].text.size()));
  }
  return w;
}

// Column widths from the content (capped); columns dropped by rank until the line fits; what
// is left over widens the bar, then the sparkline, then the flexible column. A width of 0 means
// the column is not shown.
std::vector<int> PlanWidths(const std::vector<Column>& columns,
                            const std::vector<Row>& rows,
                            int width) {
  std::vector<int> widths;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const Column& col = columns[c];
    if (Hidden(col, rows, c)) {
      widths.push_back(0);
      continue;
    }
    switch (col.kind) {
      case ColumnKind::kBar:
        widths.push_back(kMinBarWidth);
        break;
      case ColumnKind::kSpark:
        widths.push_back(kMinSparkWidth);
        break;
      case ColumnKind::kFlex:
        widths.push_back(static_cast<int>(col.heading.size()));
        break;
      case ColumnKind::kText:
        widths.push_back(std::min(ContentWidth(col, rows, c), col.max_width));
        break;
    }
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
  const auto widen = [&](ColumnKind kind, int up_to) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (columns[c].kind == kind && widths[c] > 0) {
        const int want =
            kind == ColumnKind::kBar ? up_to : std::min(up_to, ContentWidth(columns[c], rows, c));
        widths[c] = std::max(widths[c], std::min(want, widths[c] + std::max(0, width - used())));
      }
    }
  };
  widen(ColumnKind::kBar, kMaxBarWidth);
  widen(ColumnKind::kSpark, kMaxSparkWidth);
  widen(ColumnKind::kFlex, kFlexMaxWidth);
  return widths;
}

// A line being built: its text and the paints over it.
class LineBuilder {
 public:
  void Add(std::string_view text, std::optional<TopColor> color = std::nullopt) {
    if (color && !text.empty()) {
      line_.paints.push_back(TopPaint{
          .begin = line_.text.size(), .end = line_.text.size() + text.size(), .color = *color});
    }
    line_.text += text;
  }
  // Trailing blanks dropped and the text cut to `width`, the paints with it.
  TopLine Finish(int width, TopStyle style) && {
    std::string& text = line_.text;
    while (!text.empty() && text.back() == ' ') {
      text.pop_back();
    }
    text.resize(std::min(text.size(), static_cast<std::size_t>(width)));
    std::erase_if(line_.paints, [&text](const TopPaint& p) { return p.begin >= text.size(); });
    for (TopPaint& p : line_.paints) {
      p.end = std::min(p.end, text.size());
    }
    line_.style = style;
    return std::move(line_);
  }

 private:
  TopLine line_;
};

std::string Pad(std::string cell, int width, bool right) {
  const auto w = static_cast<std::size_t>(width);
  if (cell.size() > w) {
    cell.resize(w);
  }
  const std::string pad(w - cell.size(), ' ');
  return right ? pad + cell : cell + pad;
}

void AddBar(LineBuilder& line, const Cell& cell, int width) {
  const int inner = width - 2;
  int filled = 0;
  if (cell.text != "-" && !cell.text.empty()) {
    const int pct = std::clamp(std::stoi(cell.text), 0, 100);
    filled = (pct * inner + 50) / 100;
  }
  line.Add("[");
  line.Add(std::string(static_cast<std::size_t>(filled), '#'), cell.color);
  line.Add(std::string(static_cast<std::size_t>(inner - filled), '-') + "]");
}

void AddCells(const std::vector<Column>& columns,
              const std::vector<int>& widths,
              const Row& cells,
              bool heading,
              LineBuilder& line) {
  bool first = true;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (widths[c] == 0) {
      continue;
    }
    if (!first) {
      line.Add(" ");
    }
    first = false;
    const Cell& cell = cells[c];
    if (heading) {
      line.Add(Pad(cell.text, widths[c], columns[c].right));
    } else if (columns[c].kind == ColumnKind::kBar) {
      AddBar(line, cell, widths[c]);
    } else if (columns[c].kind == ColumnKind::kSpark) {
      // The newest samples: the end of the series, right-aligned.
      const auto w = static_cast<std::size_t>(widths[c]);
      const std::string tail =
          cell.text.size() > w ? cell.text.substr(cell.text.size() - w) : cell.text;
      line.Add(std::string(w - tail.size(), ' '));
      line.Add(tail, cell.color);
    } else {
      line.Add(Pad(cell.text, widths[c], columns[c].right), cell.color);
    }
  }
}

struct Table {
  std::vector<Column> columns;
  std::vector<Row> rows;
  std::vector<TopStyle> styles;               // one per row
  std::string_view noun;                      // "GPUs", "jobs": for "... 3 more GPUs"
  std::optional<std::size_t> keep_in_view{};  // a row that must be shown (the selected job)
};

// The heading and as many rows as `budget` lines allow, from the first row or, when the row to
// keep in view would be cut, from where it is the last one shown; rows that do not fit are
// counted on the last line instead.
void AppendTable(const Table& table, int width, int budget, std::vector<TopLine>& out) {
  if (budget <= 0) {
    return;
  }
  const std::vector<int> widths = PlanWidths(table.columns, table.rows, width);
  Row headings;
  for (const Column& column : table.columns) {
    headings.push_back(Cell{column.heading});
  }
  LineBuilder head;
  AddCells(table.columns, widths, headings, true, head);
  out.push_back(std::move(head).Finish(width, TopStyle::kHeading));
  const int rows = static_cast<int>(table.rows.size());
  const int shown = rows <= budget - 1 ? rows : std::max(0, budget - 2);
  int first = 0;
  if (table.keep_in_view && static_cast<int>(*table.keep_in_view) >= shown) {
    first = static_cast<int>(*table.keep_in_view) - shown + 1;
  }
  for (int r = first; r < first + shown; ++r) {
    const auto i = static_cast<std::size_t>(r);
    LineBuilder line;
    AddCells(table.columns, widths, table.rows[i], false, line);
    out.push_back(std::move(line).Finish(width, table.styles[i]));
  }
  if (shown < rows && budget >= 2) {
    const std::string more =
        "... " + std::to_string(rows - shown) + " more " + std::string(table.noun);
    out.push_back({more.substr(0, static_cast<std::size_t>(width)), TopStyle::kNormal});
  }
}

// ---- The GPU table ----

const json& SampleOf(const json& gpu) {
  return Member(gpu, "sample");
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

Cell GpuMemory(const json& gpu) {
  const json& sample = SampleOf(gpu);
  const auto used = Number(sample, "memory_used_mib");
  auto total = Number(sample, "memory_total_mib");
  if (!total || *total <= 0) {
    total = Number(gpu, "memory_mib");
  }
  if (!total) {
    return {"-"};
  }
  const std::string used_text = !used                ? "-"
                                : *used < kMibPerGib ? std::to_string(std::llround(*used)) + "M"
                                                     : GibFigure(*used);
  const auto pct =
      used && *total > 0 ? std::optional<double>(*used / *total * kPercent) : std::nullopt;
  return {used_text + "/" + Gib(*total) + "G", LoadColor(pct, kMemoryLight, kMemoryHeavy)};
}

bool Healthy(const json& gpu) {
  const std::string health = Text(gpu, "health");
  return (health == "ok" || health == "-") && Member(SampleOf(gpu), "lost") != json(true);
}

// Health when it is not ok (upper case: it needs a person), else what the GPU's conditions
// say, else "ok".
Cell GpuStatusCell(const json& gpu) {
  if (!Healthy(gpu)) {
    std::string word = Member(SampleOf(gpu), "lost") == json(true) ? "lost" : Text(gpu, "health");
    std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) {
      return static_cast<char>(std::toupper(c));
    });
    return {word, TopColor::kRed};
  }
  Cell cell;
  for (const json& c : ListOf(gpu, "conditions")) {
    const std::string name = c.is_string() ? c.get<std::string>() : "";
    const auto [words, color] =
        name == "allocated_no_process"    ? std::pair{"idle: no process", TopColor::kYellow}
        : name == "unallocated_process"   ? std::pair{"unmanaged process", TopColor::kMagenta}
        : name == "gpu_memory_over_limit" ? std::pair{"over mem limit", TopColor::kRed}
                                          : std::pair{"", TopColor::kGrey};
    if (*words == '\0') {
      continue;
    }
    cell.text += (cell.text.empty() ? "" : ", ") + std::string(words);
    cell.color = cell.color.value_or(color);
  }
  if (cell.text.empty()) {
    return Text(gpu, "health") == "ok" ? Cell{"ok", TopColor::kGreen} : Cell{"-"};
  }
  return cell;
}

std::string Sparkline(const TopHistory& history, const json& gpu) {
  const auto it = history.find(Text(gpu, "uuid"));
  if (it == history.end()) {
    return "";
  }
  std::string out;
  const std::size_t skip = it->second.size() > static_cast<std::size_t>(kMaxSparkWidth)
                               ? it->second.size() - kMaxSparkWidth
                               : 0;
  for (std::size_t i = skip; i < it->second.size(); ++i) {
    const int pct = std::clamp(it->second[i], 0, 100);
    const auto levels = static_cast<int>(kSparkLevels.size()) - 1;
    out += kSparkLevels[static_cast<std::size_t>((pct * levels + 50) / 100)];
  }
  return out;
}

Table GpuTable(const json& gpus, const TopHistory& history) {
  Table t{{{"NODE", false, 3, 12},
           {"GPU", true, 0, 3},
           {"MODEL", false, 5, 14},
           {"UTIL", true, 0, 4},
           {"", false, 6, kMaxBarWidth, ColumnKind::kBar},
           {"HISTORY", false, 7, kMaxSparkWidth, ColumnKind::kSpark},
           {"MEM", true, 1, 11},
           {"TEMP", true, 4, 4},
           {"POWER", true, 4, 6},
           {"STATUS", false, 0, 17},
           {"JOB", true, 1, 13},  // "3 jobs (0.75)" on a shared GPU
           {"USER", false, 2, 12}},
          {},
          {},
          "GPUs"};
  for (const json& gpu : ListOf(gpus, "gpus")) {
    const json& sample = SampleOf(gpu);
    const auto util = Number(sample, "util_gpu_pct");
    const auto temp = Number(sample, "temperature_c");
    const auto power_mw = Number(sample, "power_mw");
    const auto util_color = LoadColor(util, kUtilLight, kUtilHeavy);
    t.rows.push_back(
        {{Text(gpu, "node")},
         {Text(gpu, "index")},
         {Text(gpu, "model")},
         {Whole(util, "%"), util_color},
         {util ? std::to_string(std::llround(*util)) : "-", util_color},
         {Sparkline(history, gpu), TopColor::kCyan},
         GpuMemory(gpu),
         {Whole(temp, "C"), temp && *temp >= 80 ? std::optional(TopColor::kRed) : std::nullopt},
         {power_mw ? Whole(*power_mw / 1000.0, "W") : "-"},
         GpuStatusCell(gpu),
         {Printable(GpuJobText(gpu))},
         {GpuUser(gpu)}});
    t.styles.push_back(Healthy(gpu) ? TopStyle::kNormal : TopStyle::kAlert);
  }
  return t;
}

// ---- The job table ----

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

std::optional<TopColor> StateColor(const std::string& state) {
  if (IsRunning(state)) {
    return TopColor::kGreen;
  }
  if (state == "PENDING") {
    return TopColor::kYellow;
  }
  if (state == "FAILED" || state == "TIMEOUT" || state == "OUT_OF_MEMORY" || state == "NODE_FAIL") {
    return TopColor::kRed;
  }
  return TopColor::kGrey;
}

std::vector<const json*> JobsInOrder(const json& jobs) {
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
  return order;
}

Table JobTable(const TopInput& input) {
  Table t{{{"JOB", true, 0, 9},
           {"USER", false, 1, 12},
           {"STATE", false, 0, 9},
           {"GPUS", true, 2, 4},
           {"ELAPSED", true, 2, 9},
           {"UTIL", true, 3, 4},
           {"NAME/REASON", false, 0, kFlexMaxWidth, ColumnKind::kFlex}},
          {},
          {},
          "jobs"};
  for (const json* job : JobsInOrder(input.jobs)) {
    const std::string state = Text(*job, "state");
    const std::string reason = Text(*job, "reason");
    const std::string task = Printable(ArrayTaskLabel(*job));
    const auto util = JobUtil(input.gpus, Member(*job, "id"));
    const bool selected = input.controls.selected_job &&
                          Number(*job, "id") == static_cast<double>(*input.controls.selected_job);
    if (selected) {
      t.keep_in_view = t.rows.size();
    }
    t.rows.push_back({{task.empty() ? Text(*job, "id") : task},
                      {Text(*job, "user")},
                      {state, StateColor(state)},
                      {Printable(JobGpusText(*job))},
                      {Elapsed(*job, input.now_ms)},
                      {Whole(util, "%"),
                       IsRunning(state) ? LoadColor(util, kUtilLight, kUtilHeavy) : std::nullopt},
                      {IsRunning(state) || reason == "-" ? Text(*job, "name") : reason}});
    t.styles.push_back(selected ? TopStyle::kSelected : TopStyle::kNormal);
  }
  return t;
}

// ---- The process table ----

struct ProcessRow {
  const json* gpu;
  const json* process;
};

double SortValue(const ProcessRow& row, TopSort sort) {
  const char* key = sort == TopSort::kGpuMemory    ? "used_memory_mib"
                    : sort == TopSort::kCpu        ? "cpu_pct"
                    : sort == TopSort::kHostMemory ? "host_memory_mib"
                                                   : "pid";
  // Unknown figures sort last.
  return Number(*row.process, key).value_or(-1);
}

std::string ProcessUser(const json& p) {
  if (std::string user = Text(p, "user"); user != "-") {
    return user;
  }
  return Member(p, "uid").is_number_integer() ? "uid" + Text(p, "uid") : "-";
}

Table ProcessTable(const TopInput& input) {
  const TopSort sort = input.controls.sort;
  const auto heading = [sort](const char* text, TopSort column) {
    return std::string(text) + (sort == column ? "*" : "");
  };
  Table t{{{"NODE", false, 3, 12},
           {"GPU", true, 0, 3},
           {heading("PID", TopSort::kPid), true, 0, 8},
           {"USER", false, 1, 12},
           {"JOB", true, 0, 9},
           {heading("GPU-MEM", TopSort::kGpuMemory), true, 0, 8},
           {heading("CPU", TopSort::kCpu), true, 2, 6},
           {heading("HOST-MEM", TopSort::kHostMemory), true, 2, 9},
           {"COMMAND", false, 0, kFlexMaxWidth, ColumnKind::kFlex}},
          {},
          {},
          "processes"};
  std::vector<ProcessRow> rows;
  for (const json& gpu : ListOf(input.gpus, "gpus")) {
    for (const json& p : ListOf(SampleOf(gpu), "processes")) {
      rows.push_back({&gpu, &p});
    }
  }
  // Largest first, but pids in ascending order; ties by pid.
  std::stable_sort(rows.begin(), rows.end(), [sort](const ProcessRow& a, const ProcessRow& b) {
    const double va = SortValue(a, sort);
    const double vb = SortValue(b, sort);
    if (va != vb) {
      return sort == TopSort::kPid ? va < vb : va > vb;
    }
    return SortValue(a, TopSort::kPid) < SortValue(b, TopSort::kPid);
  });
  for (const ProcessRow& row : rows) {
    const json& p = *row.process;
    const bool unmanaged = Member(p, "unmanaged") == json(true);
    const auto cpu = Number(p, "cpu_pct");
    std::string command = Text(p, "command");
    t.rows.push_back({{Text(*row.gpu, "node")},
                      {Text(*row.gpu, "index")},
                      {Text(p, "pid")},
                      {ProcessUser(p)},
                      {unmanaged ? "unmanaged" : Text(p, "job"),
                       unmanaged ? std::optional(TopColor::kMagenta) : std::nullopt},
                      {Size(Number(p, "used_memory_mib"))},
                      {Whole(cpu, "%"),
                       cpu && *cpu >= kUtilHeavy ? std::optional(TopColor::kRed) : std::nullopt},
                      {Size(Number(p, "host_memory_mib"))},
                      {command}});
    t.styles.push_back(TopStyle::kNormal);
  }
  return t;
}

// ---- Title, totals and the last line ----

TopLine TitleLine(const TopInput& input, int width) {
  const std::string left = "gpufleet top";
  int running = 0;
  int pending = 0;
  for (const json& job : ListOf(input.jobs, "jobs")) {
    const std::string state = Text(job, "state");
    running += IsRunning(state) ? 1 : 0;
    pending += state == "PENDING" ? 1 : 0;
  }
  const std::string jobs = input.jobs.is_null()
                               ? ""
                               : "  jobs: " + std::to_string(running) + " running, " +
                                     std::to_string(pending) + " pending";
  const std::string right = Printable(input.status);
  std::string line = left;
  if (static_cast<int>(left.size() + jobs.size() + 1 + right.size()) <= width) {
    line += jobs;
  }
  const int gap = width - static_cast<int>(line.size() + right.size());
  line += gap >= 1 ? std::string(static_cast<std::size_t>(gap), ' ') + right : " " + right;
  LineBuilder out;
  out.Add(line);
  return std::move(out).Finish(width, TopStyle::kTitle);
}

TopLine TotalsLine(const TopInput& input, int width) {
  const json& gpus = ListOf(input.gpus, "gpus");
  int allocated = 0;
  int busy = 0;
  int failed = 0;
  int util_n = 0;
  double util_sum = 0;
  double used_mib = 0;
  double total_mib = 0;
  std::optional<double> power_mw;
  for (const json& gpu : gpus) {
    const json& sample = SampleOf(gpu);
    allocated += HolderIds(gpu).empty() ? 0 : 1;
    failed += Healthy(gpu) ? 0 : 1;
    if (const auto u = Number(sample, "util_gpu_pct")) {
      util_sum += *u;
      ++util_n;
      busy += *u >= 1 ? 1 : 0;
    }
    used_mib += Number(sample, "memory_used_mib").value_or(0);
    total_mib += Number(sample, "memory_total_mib").value_or(Number(gpu, "memory_mib").value_or(0));
    if (const auto p = Number(sample, "power_mw")) {
      power_mw = power_mw.value_or(0) + *p;
    }
  }
  const auto util = util_n > 0 ? std::optional<double>(util_sum / util_n) : std::nullopt;
  LineBuilder line;
  line.Add("GPUs " + std::to_string(allocated) + "/" + std::to_string(gpus.size()) +
           " allocated, " + std::to_string(busy) + " busy");
  if (failed > 0) {
    line.Add(", ");
    line.Add(std::to_string(failed) + " failed", TopColor::kRed);
  }
  line.Add("  util ");
  line.Add(Whole(util, "%"), LoadColor(util, kUtilLight, kUtilHeavy));
  line.Add("  mem " + GibFigure(used_mib) + "/" + Gib(total_mib) + "G  power " +
           (power_mw ? Whole(*power_mw / 1000.0, "W") : "-"));
  return std::move(line).Finish(width, TopStyle::kNormal);
}

TopLine LastLine(const TopControls& controls, int width) {
  LineBuilder line;
  if (controls.confirm_cancel) {
    line.Add("Cancel job " + std::to_string(*controls.confirm_cancel) +
             "? y: yes, any other key: no");
    return std::move(line).Finish(width, TopStyle::kPrompt);
  }
  if (!controls.message.empty()) {
    line.Add(Printable(controls.message));
    return std::move(line).Finish(width, TopStyle::kPrompt);
  }
  line.Add("j/k: select job  c: cancel it  s: sort processes (" +
           std::string(ToString(controls.sort)) + ")  q: quit");
  return std::move(line).Finish(width, TopStyle::kNormal);
}

// Lines for each section, in order: what each gets of `avail`. Each first gets its minimum
// (in order, while lines last), then the rest goes to them in order up to what they want.
std::vector<int> Budgets(const std::vector<int>& want, const std::vector<int>& minimum, int avail) {
  std::vector<int> got(want.size(), 0);
  for (std::size_t i = 0; i < want.size(); ++i) {
    got[i] = std::min({want[i], minimum[i], avail});
    avail -= got[i];
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    const int more = std::min(want[i] - got[i], avail);
    got[i] += more;
    avail -= more;
  }
  return got;
}

}  // namespace

std::string_view ToString(TopSort sort) {
  switch (sort) {
    case TopSort::kGpuMemory:
      return "GPU memory";
    case TopSort::kCpu:
      return "CPU";
    case TopSort::kHostMemory:
      return "host memory";
    case TopSort::kPid:
      break;
  }
  return "pid";
}

std::vector<std::int64_t> TopJobOrder(const json& jobs) {
  std::vector<std::int64_t> ids;
  for (const json* job : JobsInOrder(jobs)) {
    if (const json& id = Member(*job, "id"); id.is_number_integer()) {
      ids.push_back(id.get<std::int64_t>());
    }
  }
  return ids;
}

std::vector<TopLine> RenderTopFrame(const TopInput& input, int width, int height) {
  std::vector<TopLine> out;
  if (width < 1 || height < 1) {
    return out;
  }
  out.push_back(TitleLine(input, width));
  if (height >= 2) {
    out.push_back(TotalsLine(input, width));
  }
  const bool last_line = input.live && height >= 4;
  const Table gpus = GpuTable(input.gpus, input.history);
  const Table jobs = JobTable(input);
  const Table processes = ProcessTable(input);
  const int avail = height - static_cast<int>(out.size()) - (last_line ? 1 : 0);
  // GPUs: heading and rows; jobs and processes: a blank line, the heading, rows.
  const std::vector<int> want = {
      1 + static_cast<int>(gpus.rows.size()),
      2 + static_cast<int>(jobs.rows.size()),
      processes.rows.empty() ? 0 : 2 + static_cast<int>(processes.rows.size())};
  // A short screen keeps a few job and process rows (and a "... more" line for each).
  const std::vector<int> minimum = {2, 3 + kJobRowsKept, 3 + kProcessRowsKept};
  const std::vector<int> budget = Budgets(want, minimum, avail);
  AppendTable(gpus, width, budget[0], out);
  for (const auto& [table, lines] :
       {std::pair{&jobs, budget[1]}, std::pair{&processes, budget[2]}}) {
    if (lines >= 2) {
      out.push_back({"", TopStyle::kNormal});
      AppendTable(*table, width, lines - 1, out);
    }
  }
  if (last_line) {
    while (static_cast<int>(out.size()) < height - 1) {
      out.push_back({"", TopStyle::kNormal});
    }
    out.push_back(LastLine(input.controls, width));
  }
  return out;
}

}  // namespace gf
