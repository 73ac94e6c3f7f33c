// `gpufleet history` (Slurm's sacct) and `gpufleet eff JOB` (Slurm's seff), issue #24.
//
// history: the jobs the caller may see, of any state, newest first, from GET /api/v1/history
// page after page (the server reads each page from its store by a cursor): a table of the
// first --limit jobs, or every job as CSV or JSON, written as each page arrives so that memory
// stays that of one page however long the history. Columns (--format) include what sacct
// lacks: GPU-hours, mean GPU utilisation, peak GPU memory and energy.
//
// eff: one job's efficiency (report/job_efficiency.h) from GET /api/v1/jobs/{id} and the card
// memory of its GPUs from GET /api/v1/nodes: held vs used, and one line of advice.
//
// Plain functions, single-threaded like the process that runs them.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/client_commands.h"
#include "core/clock.h"
#include "core/result.h"

namespace gf {

// A column of `history --format`.
enum class HistoryField {
  kId,
  kName,
  kUser,
  kTeam,
  kState,
  kExit,
  kSubmit,
  kStart,
  kEnd,
  kElapsed,
  kTimeLimit,
  kGpus,
  kGpuHours,
  kUtil,
  kPeakMem,
  kCpuTime,  // CPU time its processes used (sacct's TotalCPU), measured when a run ends
  kMaxRss,   // their peak host memory (sacct's MaxRSS), likewise
  kEnergy,
  kNode,
  kReason,
};

// "id,name,state,gpu_hours": the named columns in that order. Errors: kInvalidArgument naming
// --format, the unknown field and every known one.
Result<std::vector<HistoryField>> ParseHistoryFormat(std::string_view text);

// A time as --since and --until take it, in UTC: "2026-12-01", "2026-12-01T08:30",
// "2026-12-01T08:30:00Z" (a space for the T, seconds and Z optional), "now", or a duration ago
// ("2d", "12h", "90m": ParseDuration's forms). Errors: kInvalidArgument naming `flag` and the
// forms.
Result<Time> ParseHistoryTime(std::string_view text, Time now, std::string_view flag);

// "COMPLETED,FAILED" or Slurm's short names ("CD,F,CA,TO,R,PD"), any case → the API's
// comma-separated long names. Errors: kInvalidArgument naming --state and the names.
Result<std::string> ParseHistoryStates(std::string_view text);

struct HistoryFlags {
  std::string since{};
  std::string until{};
  std::string state{};
  std::string user{};
  std::optional<std::string> team{};
  std::string format{};  // "" = the default columns
  int limit = 0;         // 0: the table's default (kHistoryTableRows), CSV/JSON everything
  bool csv = false;
  bool json = false;
};
inline constexpr int kHistoryTableRows = 100;
// Jobs asked for per request while streaming.
inline constexpr int kHistoryPageSize = 500;

// The GET target of one page: "/api/v1/history?since_ms=...&state=COMPLETED&limit=500"
// (values percent-encoded), after `cursor` when given. Errors: the flags' (named).
Result<std::string> HistoryTarget(const HistoryFlags& flags,
                                  Time now,
                                  std::optional<std::int64_t> cursor,
                                  int limit);

// One cell of `job` (the API's JSON): for the table as `show` prints it (durations "1h2m",
// times RFC 3339 UTC, "63.5%", "1234 MiB", "0.012 kWh", CPU "1h2m3s", host memory "1.2 GiB"),
// or for CSV plain numbers (elapsed in seconds, util in %, memory in MiB, energy in kWh, CPU
// time in seconds, host memory in MiB). "" / "-" when unknown.
std::string HistoryCell(const nlohmann::json& job,
                        HistoryField field,
                        std::int64_t now_ms,
                        bool csv);
// The column's header: "GPU-H" for the table, "gpu_hours" for CSV.
std::string HistoryHeader(HistoryField field, bool csv);

// `gpufleet eff`'s text for `job` and the GPUs of its node (GET /nodes' node object, or null).
void PrintEfficiency(const nlohmann::json& job,
                     const nlohmann::json& node,
                     std::int64_t now_ms,
                     std::ostream& out);

// `gpufleet eff --json`: the same figures as one object (id, state, exit_code, running,
// elapsed_s, time_limit_s, time_limit_pct, gpus, node, gpu_hours_allocated, gpu_hours_used,
// mean_util_pct, peak_memory_mib, card_memory_mib, memory_pct, energy_kwh, cpus, mem_mib,
// cpu_time_s, core_time_s, cpu_pct, peak_host_memory_mib, host_memory_pct, out_of_memory,
// advice; null when unknown).
nlohmann::json EfficiencyJson(const nlohmann::json& job,
                              const nlohmann::json& node,
                              std::int64_t now_ms);

// Registers history and eff on `app`.
void AddHistoryCommands(CLI::App& app, ClientContext& ctx);

}  // namespace gf
