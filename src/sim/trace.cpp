#include "sim/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "sim/csv.h"

namespace gf::sim {
namespace {

// Column positions in each format's CsvColumn list.
constexpr std::size_t kId = 0;
constexpr std::size_t kSubmit = 1;
constexpr std::size_t kDuration = 2;
constexpr std::size_t kGpus = 3;
constexpr std::size_t kUser = 4;
constexpr std::size_t kTeam = 5;
constexpr std::size_t kAfter = 6;
constexpr std::size_t kClass = 7;
constexpr std::size_t kModelName = 4;  // the Tiresias format's

std::vector<CsvColumn> ColumnsOf(TraceFormat format) {
  if (format == TraceFormat::kNormalized) {
    return {{"job_id"},
            {"submit_time_s"},
            {"duration_s"},
            {"num_gpus"},
            {"user", false},
            {"queue_or_team", false},
            {"after", false},
            {"class", false}};
  }
  return {{"job_id"}, {"submit_time"}, {"duration"}, {"num_gpu"}, {"model_name", false}};
}

Result<TraceFormat> GuessFormat(std::string_view text, const std::string& source) {
  const std::string_view header = text.substr(0, text.find('\n'));
  if (header.find("submit_time_s") != std::string_view::npos) {
    return TraceFormat::kNormalized;
  }
  if (header.find("num_gpu") != std::string_view::npos) {
    return TraceFormat::kTiresias;
  }
  return InvalidArgument(source +
                         ":1: cannot tell the trace format from the header; give --format "
                         "normalized (job_id,submit_time_s,duration_s,num_gpus,user,"
                         "queue_or_team,status) or --format tiresias (job_id,num_gpu,"
                         "submit_time,iterations,model_name,duration,interval)");
}

Millis ToMillis(double seconds) {
  return Millis(std::llround(seconds * 1000.0));
}

// Above this a GPU count is a typo, not a job (the largest node anyone builds has 16 or so;
// 100,000 leaves room for multi-node requests, which the engine runs as gangs).
constexpr double kMaxGpus = 100'000;

Result<TraceJob> ParseRow(const CsvTable& table, bool has_user_team) {
  TraceJob job;
  job.id = std::string(table.Field(kId));
  if (job.id.empty()) {
    return table.FieldError(kId, "empty job id; every row needs one");
  }
  GF_ASSIGN_OR_RETURN(const double submit, table.NonNegative(kSubmit, "a submit time in seconds"));
  double duration = 0;  // a blank one reaches here only when the caller keeps it (ParseTrace)
  if (!has_user_team || !table.Field(kDuration).empty()) {
    GF_ASSIGN_OR_RETURN(duration, table.NonNegative(kDuration, "a duration in seconds"));
  }
  GF_ASSIGN_OR_RETURN(const double gpus, table.NonNegative(kGpus, "a GPU count"));
  if (gpus > kMaxGpus) {
    return table.FieldError(kGpus, std::to_string(gpus) + " GPUs is more than any cluster has");
  }
  job.submit = ToMillis(submit);
  job.duration = ToMillis(duration);
  const std::int64_t milli = std::llround(gpus * 1000);
  if (gpus > 0 && gpus < 1 && milli < 1000) {
    // A share of one GPU (issue #7), to the milli-GPU, at least 1: 0.46 is 460 (0.9996 and
    // up round to a whole GPU).
    job.gpus = 1;
    job.gpu_milli = std::max(1, static_cast<int>(milli));
  } else {
    job.gpus = static_cast<int>(std::ceil(gpus));  // above 1 a share is no longer of one GPU
  }
  if (has_user_team) {
    job.user = std::string(table.Field(kUser));
    job.team = std::string(table.Field(kTeam));
    job.priority = std::string(table.Field(kClass));
  } else {
    job.name = std::string(table.Field(kModelName));
  }
  return job;
}

// Where an earlier row was: its line and its submit time.
struct Earlier {
  int line = 0;
  Millis submit{0};
};

// The `after` field of `job`: `ID[:ok]` items separated by `;`, each naming a job of an earlier
// row submitted no later (the controller refuses a dependency on a job that does not exist yet).
Result<std::vector<TraceDependency>> ParseAfter(
    const CsvTable& table,
    const TraceJob& job,
    const std::unordered_map<std::string, Earlier>& earlier) {
  std::vector<TraceDependency> after;
  std::string_view rest = table.Field(kAfter);
  while (!rest.empty()) {
    const std::size_t semicolon = rest.find(';');
    std::string_view item = rest.substr(0, semicolon);
    rest = semicolon == std::string_view::npos ? std::string_view{} : rest.substr(semicolon + 1);
    const std::size_t colon = item.find(':');
    const std::string_view kind =
        colon == std::string_view::npos ? std::string_view("any") : item.substr(colon + 1);
    TraceDependency dependency{.job = std::string(item.substr(0, colon)),
                               .kind = kind == "ok" ? DependencyKind::kOk : DependencyKind::kAny};
    if (dependency.job.empty() || (kind != "ok" && kind != "any")) {
      return table.FieldError(
          kAfter,
          "'" + std::string(item) +
              "' is not ID or ID:ok; list the ids of earlier jobs separated "
              "by ';', with :ok to wait for a job to complete (e.g. j12:ok;j13)");
    }
    const auto it = earlier.find(dependency.job);
    if (it == earlier.end() || it->second.submit > job.submit) {
      return table.FieldError(kAfter,
                              "job '" + dependency.job +
                                  "' is not on an earlier row submitted no later than '" + job.id +
                                  "'; a job can wait only for one submitted before it");
    }
    after.push_back(std::move(dependency));
  }
  return after;
}

}  // namespace

std::string_view ToString(TraceFormat format) {
  return format == TraceFormat::kNormalized ? "normalized" : "tiresias";
}

Result<TraceFormat> ParseTraceFormat(std::string_view name) {
  if (name == "normalized") {
    return TraceFormat::kNormalized;
  }
  if (name == "tiresias") {
    return TraceFormat::kTiresias;
  }
  return InvalidArgument("format: '" + std::string(name) +
                         "' is not a trace format; use normalized or tiresias");
}

Result<Trace> ParseTrace(std::string_view text,
                         const std::string& source,
                         std::optional<TraceFormat> format,
                         bool keep_unknown_duration) {
  if (!format) {
    GF_ASSIGN_OR_RETURN(format, GuessFormat(text, source));
  }
  GF_ASSIGN_OR_RETURN(CsvTable table, CsvTable::Open(text, source, ColumnsOf(*format)));
  Trace trace;
  std::unordered_map<std::string, Earlier> earlier;  // by id
  while (true) {
    GF_ASSIGN_OR_RETURN(const std::optional<int> line, table.Next());
    if (!line) {
      break;
    }
    if (*format == TraceFormat::kNormalized && table.Field(kDuration).empty()) {
      trace.unknown_duration += 1;  // never ran in the source: nothing to replay
      if (!keep_unknown_duration) {
        continue;
      }
    }
    GF_ASSIGN_OR_RETURN(TraceJob job, ParseRow(table, *format == TraceFormat::kNormalized));
    if (*format == TraceFormat::kNormalized) {
      GF_ASSIGN_OR_RETURN(job.after, ParseAfter(table, job, earlier));
    }
    const auto [it, inserted] =
        earlier.emplace(job.id, Earlier{.line = *line, .submit = job.submit});
    if (!inserted) {
      return table.FieldError(kId,
                              "job id '" + job.id + "' repeats line " +
                                  std::to_string(it->second.line) + "; ids must be unique");
    }
    trace.jobs.push_back(std::move(job));
  }
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.submit < b.submit;
  });
  return trace;
}

Result<Trace> ReadTrace(const std::string& path,
                        std::optional<TraceFormat> format,
                        bool keep_unknown_duration) {
  GF_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path, "trace"));
  return ParseTrace(text, path, format, keep_unknown_duration);
}

Result<Trace> ReadTraceAs(const std::string& path,
                          std::string_view format_name,
                          bool keep_unknown_duration) {
  std::optional<TraceFormat> format;
  if (!format_name.empty()) {
    GF_ASSIGN_OR_RETURN(format, ParseTraceFormat(format_name));
  }
  return ReadTrace(path, format, keep_unknown_duration);
}

}  // namespace gf::sim
