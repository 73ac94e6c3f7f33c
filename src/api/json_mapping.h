// JSON mapping of the domain model for the HTTP API (/api/v1), with nlohmann::json.
//
// Output functions never fail. Input functions (JobSpecFromJson) are strict: an unknown field,
// a wrong type or a missing required field is a kInvalidArgument naming the field, because the
// body comes from outside and a silently ignored typo ("gpu": 2) would run the wrong job.
// Times go out twice: RFC 3339 UTC text for people and unix milliseconds for programs.
// Stateless free functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/duration.h"  // FormatRfc3339, which this mapping uses for every time
#include "core/result.h"
#include "model/event.h"
#include "model/explanation.h"
#include "model/gpu_sample.h"
#include "model/job.h"
#include "model/job_run.h"
#include "model/node.h"
#include "service/service.h"

namespace gf {

// The JSON vocabulary of error codes: "invalid_argument", "not_found", ...
std::string_view ErrorCodeName(ErrorCode code);
// Inverse of ErrorCodeName; nullopt for names outside the closed set (e.g. the transport's
// "unauthenticated" or "method_not_allowed"), which the client maps by HTTP status instead.
std::optional<ErrorCode> ParseErrorCodeName(std::string_view name);

// Every field always goes out; a value nobody knows is null, never a made-up 0 (an idle GPU and
// a GPU whose driver cannot tell must not look alike). docs/openapi.json describes each object.
nlohmann::json JobToJson(const Job& job);  // "usage": JobUsageToJson, null until measured
// A job as lists show it (GET /jobs, /history, the cancel and signal answers): JobToJson without
// "env". A job's environment is the caller's own settings (paths, sometimes secrets) and the
// bulk of its row; a listing has no use for it, and GET /jobs/{id} still shows it.
nlohmann::json JobRowToJson(const Job& job);
nlohmann::json JobUsageToJson(const JobUsage& usage);  // energy in mJ, J and kWh
// {energy_mj, energy_kwh, cost, currency, co2_kg}; cost/currency and co2_kg are null without
// an [energy] price or intensity.
nlohmann::json EnergyChargeToJson(const EnergyCharge& charge);
// {expected_s, high_s, basis, explanation} (Job::prediction; the explanation's too).
nlohmann::json JobPredictionToJson(const JobPrediction& p);
nlohmann::json NodeToJson(const Node& node);
nlohmann::json GpuToJson(const Gpu& gpu);
// A lost sample (the GPU fell off the bus) has null memory figures: its zeros are not readings.
// "throttle_reasons" goes out twice: NVML's bitmask and "throttle_reason_names".
nlohmann::json GpuSampleToJson(const GpuSample& sample);
nlohmann::json GpuStatusToJson(const GpuStatus& status);
nlohmann::json EventToJson(const Event& event);
// One run of a job (GET /jobs/{id}/runs): its number, node, GPUs (index, uuid or null), when it
// was placed, started (null: never ran) and ended (null: runs still), and the state it ended in.
nlohmann::json JobRunToJson(const JobRun& run);
// GET /api/v1/jobs/{id}/explain: every field of model/explanation.h, times as RFC 3339 text and
// "_ms" unix milliseconds; absent parts (priority and quota of a running job) are null.
nlohmann::json ExplanationToJson(const Explanation& explanation);
// GET /api/v1/quota: {"period_start", "period_start_ms", "period_end", "period_end_ms",
// "quotas_on", "teams": [...], "users": [...]}; a team with no budget or no max has them null.
nlohmann::json QuotaToJson(const QuotaReport& report);

// Parses a submission body:
//   {"command": ["python", "train.py"],            required, non-empty array of strings
//    "name": "train", "workdir": "/home/u/x", "team": "vision",           strings
//    "env": {"K": "V"},                             object of strings (applied in key order)
//    "gpus": 2,                                     whole number >= 0 (default 1)
//    "gpu_type": "H100-80GB" | null,
//    "priority": "high" | "normal" | "low",
//    "time_limit": "2h" | 7200,                     gf::ParseDuration text or seconds > 0
//    "after": [{"job": 12, "kind": "ok"}],           kind "any" (default) or "ok"
//    "array": {"indices": [0, 1], "max_running": 4}} SubmissionFromJson only
// or several jobs at once: {"jobs": [SPEC, SPEC, ...]}, each SPEC as above without "array",
// and no other field beside "jobs".
// Errors: kInvalidArgument naming the field, e.g. `gpus: must be a whole number ≥ 0, got "two"`;
// in a multi-job body, with the spec's index in front: `jobs[3]: gpus: ...`.
// Semantic checks (absolute workdir, GPU types that exist, dependencies that exist, array
// and batch sizes) are the service's (ValidateSpec, ClusterService::Submit/SubmitArray/
// SubmitBatch).
struct Submission {
  JobSpec spec;
  std::optional<ArrayRequest> array;  // set: submit a job array (ClusterService::SubmitArray)
  std::vector<JobSpec> batch;         // non-empty: {"jobs": [...]} (ClusterService::SubmitBatch)
};
Result<Submission> SubmissionFromJson(const nlohmann::json& body);
// The same for a body that must describe one job: an "array" field is an error.
Result<JobSpec> JobSpecFromJson(const nlohmann::json& body);

// POST /api/v1/jobs/{id}/update: {"gpus": 2, "time_limit": "2h" | 7200, "priority": "high",
// "team": "cv", "name": "x"}, each optional, each read as a submission's field is (the same
// checks and messages). Errors: kInvalidArgument naming the field; any other field is refused
// with the list.
Result<JobUpdate> JobUpdateFromJson(const nlohmann::json& body);

// POST /api/v1/jobs/cancel: {"user": "alice", "state": "PENDING", "name": "x", "team": "cv"},
// each optional (the service refuses none at all). Errors: kInvalidArgument naming the field.
Result<JobSelector> JobSelectorFromJson(const nlohmann::json& body);

// POST /api/v1/jobs/{id}/signal and /api/v1/jobs/signal: the body's "signal", a name ("USR1",
// "SIGUSR1") or a number (model/job.h ParseJobSignal), and the rest of the body as the cancel
// filter it selects by (none for one job). Errors: kInvalidArgument naming `signal` (missing,
// or not a signal a job may be sent) or the filter's field.
struct SignalRequest {
  int signal = 0;
  JobSelector selector{};
};
Result<SignalRequest> SignalRequestFromJson(const nlohmann::json& body);

// OkStatus, or kInvalidArgument naming `field` when `text` holds a NUL byte (every string a body
// carries into a C string: argv, environment, paths, e-mail addresses).
Status NoNulByte(std::string_view field, std::string_view text);

// {"error": {"code": "invalid_argument", "message": "..."}}
nlohmann::json ErrorToJson(const Error& error);
nlohmann::json ErrorToJson(std::string_view code_name, std::string_view message);

// The error carried by a body shaped like ErrorToJson's output. `code` is nullopt when the
// body names a code outside ErrorCode; nullopt overall when the body is not error-shaped.
struct ErrorBody {
  std::optional<ErrorCode> code;
  std::string code_name;
  std::string message;
};
std::optional<ErrorBody> ErrorFromJson(const nlohmann::json& body);

}  // namespace gf
