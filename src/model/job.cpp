#include "model/job.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "core/printable_text.h"
#include "model/node.h"
#include "model/team.h"

namespace gf {
namespace {

struct StateName {
  JobState state;
  std::string_view name;
};
constexpr std::array<StateName, 9> kStateNames = {{
    {JobState::kPending, "PENDING"},
    {JobState::kStarting, "STARTING"},
    {JobState::kRunning, "RUNNING"},
    {JobState::kCompleted, "COMPLETED"},
    {JobState::kFailed, "FAILED"},
    {JobState::kCancelled, "CANCELLED"},
    {JobState::kTimeout, "TIMEOUT"},
    {JobState::kPreempted, "PREEMPTED"},
    {JobState::kNodeFail, "NODE_FAIL"},
}};

bool ValidEnvName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

// The longest job name, in bytes: names go into table columns, notification subjects and
// event messages.
constexpr std::size_t kMaxJobName = 128;

// "HUP, INT, QUIT, USR1, USR2, ALRM, TERM": for error messages.
// "sigusr1" → "USR1": the name as the tables hold it (upper case, without SIG); a number stays.
std::string SignalKey(std::string_view text) {
  std::string upper;
  for (char c : text) {
    upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return upper.starts_with("SIG") ? upper.substr(3) : upper;
}

template <std::size_t N>
std::string NameIn(const std::array<NamedSignal, N>& table, int number) {
  for (const NamedSignal& s : table) {
    if (s.number == number) {
      return std::string(s.name);
    }
  }
  return std::to_string(number);
}

std::string SignalChoices() {
  std::string out;
  for (const NamedSignal& s : kCheckpointSignals) {
    out += (out.empty() ? "" : ", ") + std::string(s.name);
  }
  return out;
}

}  // namespace

std::string_view ToString(JobState s) {
  for (const auto& n : kStateNames) {
    if (n.state == s) {
      return n.name;
    }
  }
  return "UNKNOWN";
}

Result<JobState> ParseJobState(std::string_view s) {
  std::string upper(s);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) {
    return static_cast<char>(std::toupper(c));
  });
  for (const auto& n : kStateNames) {
    if (n.name == upper) {
      return n.state;
    }
  }
  return InvalidArgument("unknown job state '" + std::string(s) +
                         "'; use PENDING, STARTING, RUNNING, COMPLETED, FAILED, CANCELLED, "
                         "TIMEOUT, PREEMPTED or NODE_FAIL");
}

bool IsTerminal(JobState s) {
  return s == JobState::kCompleted || s == JobState::kFailed || s == JobState::kCancelled ||
         s == JobState::kTimeout;
}

bool CanTransition(JobState from, JobState to) {
  using S = JobState;
  switch (from) {
    case S::kPending:
      return to == S::kStarting || to == S::kCancelled;
    case S::kStarting:
      // PREEMPTED: a victim told to stop may exit before its start was reported.
      return to == S::kRunning || to == S::kFailed || to == S::kCancelled || to == S::kCompleted ||
             to == S::kTimeout || to == S::kNodeFail || to == S::kPreempted;
    case S::kRunning:
      return to == S::kCompleted || to == S::kFailed || to == S::kCancelled || to == S::kTimeout ||
             to == S::kPreempted || to == S::kNodeFail;
    case S::kPreempted:
      return to == S::kPending || to == S::kCancelled;
    case S::kNodeFail:
      // FAILED: a job that must not run twice (JobSpec::requeue false) ends with its node.
      return to == S::kPending || to == S::kCancelled || to == S::kFailed;
    case S::kCompleted:
    case S::kFailed:
    case S::kCancelled:
    case S::kTimeout:
      return false;
  }
  return false;
}

const std::string& ToString(const PriorityClass& p) {
  return p.name;
}

Result<PriorityClass> ParsePriorityClass(std::string_view s) {
  const bool valid =
      !s.empty() && s.size() <= kMaxPriorityClassName &&
      std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      });
  if (!valid) {
    return InvalidArgument("priority: '" + std::string(s) + "' is not a class name; use 1 to " +
                           std::to_string(kMaxPriorityClassName) +
                           " lower-case letters, digits, '-' or '_' (e.g. high, normal, low)");
  }
  return PriorityClass{.name = std::string(s)};
}

std::string_view ToString(DependencyKind k) {
  return k == DependencyKind::kOk ? "ok" : "any";
}

Result<int> ParseGpuShare(std::string_view text, std::string_view field) {
  const auto bad = [&] {
    return InvalidArgument(std::string(field) + ": '" + std::string(text) +
                           "' is not a share of one GPU; use a number from 0.001 to 1, e.g. 0.25");
  };
  const std::size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  const auto digits = [](std::string_view d) {
    return std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if ((whole.empty() && frac.empty()) || whole.size() > 1 || frac.size() > 3 || !digits(whole) ||
      !digits(frac) || (dot != std::string_view::npos && frac.empty())) {
    return bad();
  }
  int milli = whole.empty() ? 0 : (whole[0] - '0') * kWholeGpuMilli;
  int scale = kWholeGpuMilli / 10;
  for (const char c : frac) {
    milli += (c - '0') * scale;
    scale /= 10;
  }
  if (milli <= 0 || milli > kWholeGpuMilli) {
    return bad();
  }
  return milli;
}

Result<std::int64_t> ParseMemoryMib(std::string_view text, std::string_view field) {
  std::size_t end = 0;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') {
    ++end;
  }
  std::string unit(text.substr(end));
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) {
    return static_cast<char>(std::toupper(c));
  });
  std::int64_t scale = 0;
  if (unit.empty() || unit == "M" || unit == "MI" || unit == "MIB" || unit == "MB") {
    scale = 1;
  } else if (unit == "G" || unit == "GI" || unit == "GIB" || unit == "GB") {
    scale = 1024;
  } else if (unit == "T" || unit == "TI" || unit == "TIB" || unit == "TB") {
    scale = std::int64_t{1024} * 1024;
  }
  constexpr std::size_t kMaxDigits = 9;  // far beyond any GPU, far within int64 after scaling
  if (end == 0 || end > kMaxDigits || scale == 0) {
    return InvalidArgument(std::string(field) + ": '" + std::string(text) +
                           "' is not a memory size; use a whole number with M, G or T (binary "
                           "units, MiB when none), e.g. 20G or 512M");
  }
  const std::int64_t mib = std::stoll(std::string(text.substr(0, end))) * scale;
  if (mib <= 0) {
    return InvalidArgument(std::string(field) + ": must be more than zero, e.g. 20G");
  }
  return mib;
}

Result<int> ParseCpuCount(std::string_view text, std::string_view field) {
  const auto bad = [&]() {
    return InvalidArgument(std::string(field) + ": '" + std::string(text) +
                           "' is not a CPU count; use a whole number of CPUs from 1 to " +
                           std::to_string(kMaxJobCpus) + ", e.g. 8");
  };
  constexpr std::size_t kMaxDigits = 6;
  if (text.empty() || text.size() > kMaxDigits ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad();
  }
  const int cpus = std::stoi(std::string(text));
  if (cpus < 1 || cpus > kMaxJobCpus) {
    return bad();
  }
  return cpus;
}

Status ValidateHostRequest(const JobRequest& r) {
  if (r.cpus < 0 || r.cpus > kMaxJobCpus) {
    return InvalidArgument("cpus: " + std::to_string(r.cpus) +
                           " is not a CPU count; use a whole number from 0 (none reserved) to " +
                           std::to_string(kMaxJobCpus));
  }
  if (r.memory_mib < 0 || r.memory_mib > kMaxJobMemoryMib) {
    return InvalidArgument("mem: " + std::to_string(r.memory_mib) +
                           " MiB is not a host memory size; use e.g. 64G or 512M (at most 1P)");
  }
  return OkStatus();
}

std::string FormatMib(std::int64_t mib) {
  constexpr std::int64_t kMibPerGib = 1024;
  if (mib < kMibPerGib || mib % (kMibPerGib / 2) != 0) {
    return std::to_string(mib) + " MiB";
  }
  const std::int64_t whole = mib / kMibPerGib;
  return std::to_string(whole) + (mib % kMibPerGib != 0 ? ".5" : "") + " GiB";
}

std::string DescribeHostRequest(const JobRequest& r) {
  std::string text;
  if (r.cpus > 0) {
    text = std::to_string(r.cpus) + (r.cpus == 1 ? " CPU" : " CPUs");
  }
  if (r.memory_mib > 0) {
    text += (text.empty() ? "" : ", ") + FormatMib(r.memory_mib) + " memory";
  }
  return text;
}

Status ValidateFraction(const JobRequest& r) {
  // The largest GPU memory there is (and then some): a larger ask is a typo, e.g. a count of
  // bytes given where MiB were meant.
  constexpr std::int64_t kMaxGpuMemoryMib = std::int64_t{1} << 22;  // 4 TiB
  if (r.gpu_milli < 0 || r.gpu_milli > kWholeGpuMilli) {
    return InvalidArgument("gpu-share: " + std::to_string(r.gpu_milli) +
                           " milli-GPU is not a share of one GPU; use 0.001 to 1 (e.g. 0.25)");
  }
  if (r.gpu_memory_mib < 0 || r.gpu_memory_mib > kMaxGpuMemoryMib) {
    return InvalidArgument("gpu-mem: " + std::to_string(r.gpu_memory_mib) +
                           " MiB is not a GPU memory size; use e.g. 20G or 512M");
  }
  if (IsMig(r)) {
    GF_TRY(ValidateMigProfile(r.mig_profile, "mig"));
    if (IsFractional(r)) {
      return InvalidArgument(
          "mig: a MIG device is a fixed part of a GPU; drop --gpu-share and "
          "--gpu-mem, or drop --mig to share a GPU in shared mode");
    }
    if (r.gpus != 1 || r.nodes != 1) {
      return InvalidArgument(
          "gpus: a MIG job (--mig) runs on one MIG device; drop --gpus and "
          "--nodes");
    }
    return OkStatus();
  }
  if (!IsFractional(r)) {
    return OkStatus();
  }
  if (r.gpus != 1 || r.nodes != 1) {
    return InvalidArgument(
        "gpus: a fractional job (--gpu-share, --gpu-mem) runs on part of one "
        "GPU; drop --gpus and --nodes, or ask for whole GPUs without a share");
  }
  return OkStatus();
}

std::string EnvValue(const EnvList& env, std::string_view name) {
  std::string value;
  for (const auto& [k, v] : env) {
    if (k == name) {
      value = v;
    }
  }
  return value;
}

void SetEnvValue(EnvList& env, std::string_view name, std::string value) {
  const auto last = std::find_if(
      env.rbegin(), env.rend(), [name](const auto& entry) { return entry.first == name; });
  if (last != env.rend()) {
    last->second = std::move(value);
  } else {
    env.emplace_back(std::string(name), std::move(value));
  }
}

Status ValidateSpec(const JobSpec& spec) {
  constexpr int kMaxGpusPerJob = 1024;
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return InvalidArgument(
        "command: no command given; put it after '--' (gpufleet submit -- CMD ARGS) or pass a "
        "script file");
  }
  if (spec.request.gpus < 0 || spec.request.gpus > kMaxGpusPerJob) {
    return InvalidArgument("gpus: " + std::to_string(spec.request.gpus) +
                           " is not a GPU count; use a whole number from 0 to " +
                           std::to_string(kMaxGpusPerJob));
  }
  if (spec.request.nodes < 1 || spec.request.nodes > kMaxGpusPerJob) {
    return InvalidArgument("nodes: " + std::to_string(spec.request.nodes) +
                           " is not a node count; use a whole number from 1 to " +
                           std::to_string(kMaxGpusPerJob));
  }
  GF_TRY(ValidateFraction(spec.request));
  GF_TRY(ValidateHostRequest(spec.request));
  if (spec.workdir.empty() || spec.workdir[0] != '/') {
    return InvalidArgument("workdir: '" + spec.workdir +
                           "' is not an absolute path; give a path starting with '/'");
  }
  if (spec.name.size() > kMaxJobName) {
    return InvalidArgument("name: " + std::to_string(spec.name.size()) +
                           " bytes is too long; "
                           "give a job name of at most " +
                           std::to_string(kMaxJobName) + " bytes (--name)");
  }
  // A name is shown to root in `queue` and `show` and goes into e-mail subjects: a control
  // character (ESC, BEL, CR, NUL...) would act on their terminal or add a mail header.
  if (const std::optional<std::size_t> bad = FindControl(spec.name)) {
    return InvalidArgument("name: byte " + std::to_string(*bad) + " (" +
                           EscapeControl(spec.name.substr(*bad, 1)) +
                           ") is a control character or not UTF-8; give a job name of "
                           "printable text (--name)");
  }
  if (!spec.team.empty()) {
    GF_TRY(ValidateTeamName(spec.team));
  }
  GF_TRY(ParsePriorityClass(spec.priority.name));  // a spec built in code skips the parser
  for (const auto& [k, v] : spec.env) {
    if (!ValidEnvName(k)) {
      return InvalidArgument("env: '" + k +
                             "' is not a variable name; use letters, digits and '_' (KEY=VALUE)");
    }
  }
  if (spec.time_limit && spec.time_limit->count() <= 0) {
    return InvalidArgument("time: must be longer than zero, e.g. 30m or 2h");
  }
  for (const auto& [key, value] : spec.request.node_labels) {
    GF_TRY(ValidateLabel(key, value, "constraint"));
  }
  if (CheckpointSignalName(spec.checkpoint_signal) == std::to_string(spec.checkpoint_signal)) {
    return InvalidArgument("checkpoint_signal: " + std::to_string(spec.checkpoint_signal) +
                           " is not allowed; use one of " + SignalChoices());
  }
  return OkStatus();
}

std::string DefaultJobName(std::string_view command) {
  const std::size_t slash = command.rfind('/');
  const std::string_view base =
      slash == std::string_view::npos ? command : command.substr(slash + 1);
  return TruncateUtf8(EscapeControl(base), kMaxJobName);
}

Result<int> ParseCheckpointSignal(std::string_view text) {
  const std::string name = SignalKey(text);
  for (const NamedSignal& s : kCheckpointSignals) {
    if (name == s.name || name == std::to_string(s.number)) {
      return s.number;
    }
  }
  return InvalidArgument("checkpoint signal '" + std::string(text) +
                         "' is not allowed; use one of " + SignalChoices() +
                         " (KILL and STOP cannot be caught)");
}

std::string CheckpointSignalName(int number) {
  return NameIn(kCheckpointSignals, number);
}

Result<int> ParseJobSignal(std::string_view text, std::string_view field) {
  const std::string name = SignalKey(text);
  const std::string examples =
      "; use a name such as USR1, USR2, HUP, INT, TERM, CONT, STOP (SIG optional), or a number "
      "from 1 to " +
      std::to_string(kMaxJobSignal);
  for (const NamedSignal& s : kJobSignals) {
    if (name == s.name) {
      return s.number;
    }
  }
  int number = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), number);
  const bool numeric = !name.empty() && ec == std::errc() && end == name.data() + name.size();
  if (!numeric && name != "KILL") {
    return InvalidArgument(std::string(field) + ": '" + std::string(text) + "' is not a signal" +
                           examples);
  }
  if (!numeric || number == kSigKill) {
    return InvalidArgument(std::string(field) +
                           ": KILL would end the job; gpufleet cancel JOB ends it (SIGTERM, "
                           "then SIGKILL after the grace)");
  }
  if (number < 1 || number > kMaxJobSignal) {
    return InvalidArgument(std::string(field) + ": " + std::string(text) +
                           " is not a signal number" + examples);
  }
  return number;
}

std::string JobSignalName(int number) {
  return NameIn(kJobSignals, number);
}

HostUsage CombineHostUsage(const HostUsage& total, const HostUsage& more) {
  return HostUsage{.cpu_ms = total.cpu_ms + more.cpu_ms,
                   .peak_memory_kib = std::max(total.peak_memory_kib, more.peak_memory_kib)};
}

JobUsage CombineUsage(const JobUsage& total, const JobUsage& more) {
  JobUsage out;
  out.samples = total.samples + more.samples;
  out.mean_util_pct = out.samples == 0 ? 0
                                       : (total.mean_util_pct * static_cast<double>(total.samples) +
                                          more.mean_util_pct * static_cast<double>(more.samples)) /
                                             static_cast<double>(out.samples);
  out.peak_util_pct = std::max(total.peak_util_pct, more.peak_util_pct);
  out.peak_memory_mib = std::max(total.peak_memory_mib, more.peak_memory_mib);
  out.energy_mj = total.energy_mj + more.energy_mj;
  return out;
}

}  // namespace gf
