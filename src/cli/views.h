// Views: the CLI's human-readable renderings of the API's JSON (`gpufleet gpus`, `show`).
//
// Pure functions from the JSON that api/json_mapping.cpp writes to text, so tests can feed them
// hand-made JSON and compare the text. They read defensively (the server may be older or newer
// than the client): a missing, null or mistyped field prints as "-", never throws.
// Stateless; safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/job.h"

namespace gf {

// j[key] as text to print: strings with their control characters escaped (EscapeControl,
// core/printable_text.h: a job name, command or reason is another user's bytes, and `queue` or
// `show` must not let an ESC in them drive root's terminal), numbers and the rest as JSON;
// `none` when the key is missing, null or an empty string.
// Whether a job state the API names (`state`) is one a job ends in (COMPLETED, FAILED,
// CANCELLED, TIMEOUT); false for any other text.
bool IsEndState(std::string_view state);

std::string JsonText(const nlohmann::json& j, std::string_view key, std::string_view none = "-");

// The items of a JSON array joined with `separator`, each as JsonText prints it ("python
// train.py --lr 3e-4" from a command's words).
std::string JsonJoined(const nlohmann::json& items, std::string_view separator);

// j[key] as a number; nullopt when missing, null or not a number.
std::optional<double> JsonNumber(const nlohmann::json& j, std::string_view key);
// `v` with `decimals` digits after the point: FixedDecimals(63.456, 1) == "63.5".
std::string FixedDecimals(double v, int decimals);

// An energy charge ({energy_kwh, cost, currency, co2_kg}, json_mapping.h) as `quota` and `show`
// print it: "1.234" (kWh), "0.37 EUR", "0.470 kg"; "-" for what is null or absent (no price).
std::string EnergyKwh(const nlohmann::json& charge);
std::string EnergyCost(const nlohmann::json& charge);
std::string EnergyCo2(const nlohmann::json& charge);

// `text` cut to at most `max` bytes (at a UTF-8 character boundary), ending in "..." when cut.
// Requires max >= 3.
std::string Truncate(std::string text, std::size_t max);

// Who holds a GPU (a GpuStatus), for the JOB and USER columns of `gpus` and `top`: the job id
// of a whole GPU ("7"); "12 (0.25)" for one job holding a share; "3 jobs (0.75)" for a GPU
// shared by several (their shares added up); "-" when free. From `holders`, else `job` (a
// server older than sharing).
std::string GpuJobText(const nlohmann::json& gpu);
// The users of a GPU's holders, each once, comma-separated; "-" when free. A pod that holds it
// (Kubernetes mode) is named "namespace/pod" instead.
std::string GpuUserText(const nlohmann::json& gpu);

// A GPU's sharing mode in words: "shared", "mps", "exclusive"; "shared→exclusive" while a
// change waits for its jobs to end. "exclusive" for a server older than sharing.
std::string GpuModeText(const nlohmann::json& gpu);

// A pending job's estimated start for the EST. START column of `queue`, at `now_ms`, with what
// it rests on (the API's start_estimate): "in 25m (limits)" (every end it waits for is a time
// limit's: the latest the limits allow), "in 10m-25m (predicted)" (from the median to the high
// estimates of predicted run times; "within 25m (predicted)" when the earliest is now),
// "now (preempting)"; from estimated_start_ms alone ("in 25m") for a server older than ranges;
// "" when the scheduler does not know.
std::string EstimatedStartText(const nlohmann::json& job, std::int64_t now_ms);

// A job's GPUs for a list: its share of one GPU ("0.25") when fractional, else its GPU count.
std::string JobGpusText(const nlohmann::json& job);

// The host CPUs and memory a job (the API's JSON) asked for on each node: its cpus and mem_mib
// (0 = none), for DescribeHostRequest (model/job.h).
JobRequest HostRequest(const nlohmann::json& job);

// The table of `gpufleet gpus` from a GET /api/v1/gpus answer ({"gpus": [GpuStatus...]}):
// NODE GPU MODEL UTIL MEM TEMP POWER HEALTH JOB USER, plus MODE (after HEALTH) when a GPU is
// not exclusive or waits to change mode, and CONDITIONS when a GPU has one.
// A failed or lost GPU is upper case in HEALTH ("FAILED: cause", "LOST: cause", the cause cut
// to fit) and counted in a closing line that points to --json for the full causes.
void PrintGpuTable(const nlohmann::json& answer, std::ostream& out);

// `gpufleet gpus --processes`: one row per process on any GPU of the same answer:
// NODE GPU PID USER JOB MEMORY UTIL CPU HOST-MEM COMMAND, JOB being the job id or "unmanaged",
// COMMAND "-" where the server does not show it (another user's process).
void PrintGpuProcesses(const nlohmann::json& answer, std::ostream& out);

// A job array task's name, "40_3" (array id, index), from a job's array_job and
// array_index; "" for a job that is not an array task.
std::string ArrayTaskLabel(const nlohmann::json& job);

// A job's `after` list in words: "12 (ok), 13"; "" when it has none.
std::string DependencyText(const nlohmann::json& job);

// `gpufleet nodes`: one row per node of GET /api/v1/nodes, with a REASON column (a drain's
// reason, what took a node down) when some node has one.
void PrintNodes(const nlohmann::json& answer, std::ostream& out);

// `gpufleet show JOB`: one labelled line per field of a job (GET /api/v1/jobs/{id}), then its
// GPU usage: mean/peak utilisation, peak memory, energy in J and kWh ("so far" while running).
// `now_ms` (Unix milliseconds) is the time a running job's elapsed and remaining time are
// counted to.
void PrintJob(const nlohmann::json& job, std::int64_t now_ms, std::ostream& out);
// The body of GET /jobs/{id}/events ({"events": [...]}, oldest first), for `gpufleet show`: the
// latest kShownEvents, one a line (time, kind, actor, message), so that the owner reads why the
// job was preempted, warned idle, reaped or requeued even after it started again.
inline constexpr std::size_t kShownEvents = 20;
void PrintJobEvents(const nlohmann::json& body, std::ostream& out);

}  // namespace gf
