#include "model/node.h"

#include <algorithm>
#include <cctype>

namespace gf {
namespace {

constexpr std::size_t kMaxLabelPart = 63;

bool LabelPartOk(const std::string& part) {
  return !part.empty() && part.size() <= kMaxLabelPart &&
         std::all_of(part.begin(), part.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' ||
                  c == '.' || c == '/';
         });
}

}  // namespace

Status ValidateLabel(const std::string& key, const std::string& value, std::string_view field) {
  if (!LabelPartOk(key) || !LabelPartOk(value)) {
    return InvalidArgument(std::string(field) + ": '" + key + "=" + value +
                           "' is not a label; use KEY=VALUE, each 1 to 63 letters, digits, "
                           "'-', '_', '.' or '/' (e.g. rack=a)");
  }
  return OkStatus();
}

Result<std::pair<std::string, std::string>> ParseLabel(std::string_view text,
                                                       std::string_view field) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgument(std::string(field) + ": '" + std::string(text) +
                           "' is not KEY=VALUE; e.g. rack=a");
  }
  std::pair<std::string, std::string> label{std::string(text.substr(0, eq)),
                                            std::string(text.substr(eq + 1))};
  GF_TRY(ValidateLabel(label.first, label.second, field));
  return label;
}

std::string_view ToString(GpuHealth h) {
  switch (h) {
    case GpuHealth::kOk:
      return "ok";
    case GpuHealth::kDegraded:
      return "degraded";
    case GpuHealth::kFailed:
      return "failed";
  }
  return "ok";
}

std::string LeftoverHoldCause(JobId job, const std::vector<std::int64_t>& pids) {
  std::string list;
  for (const std::int64_t pid : pids) {
    list += (list.empty() ? "" : ", ") + std::to_string(pid);
  }
  return "held by processes of job " + std::to_string(job.value()) +
         " that could not be stopped (pid " + list + "); no new work until they end";
}

int Severity(GpuHealth h) {
  switch (h) {
    case GpuHealth::kOk:
      return 0;
    case GpuHealth::kDegraded:
      return 1;
    case GpuHealth::kFailed:
      break;
  }
  return 2;
}

Result<GpuHealth> ParseGpuHealth(std::string_view s) {
  if (s == "ok") {
    return GpuHealth::kOk;
  }
  if (s == "degraded") {
    return GpuHealth::kDegraded;
  }
  if (s == "failed") {
    return GpuHealth::kFailed;
  }
  return InvalidArgument("unknown GPU health '" + std::string(s) + "'; use ok, degraded or failed");
}

std::string_view ToString(SharingMode m) {
  switch (m) {
    case SharingMode::kExclusive:
      return "exclusive";
    case SharingMode::kShared:
      return "shared";
    case SharingMode::kMps:
      return "mps";
    case SharingMode::kMig:
      return "mig";
  }
  return "exclusive";
}

Status ValidateMigProfile(std::string_view profile, std::string_view field) {
  const auto bad = [&] {
    return InvalidArgument(std::string(field) + ": '" + std::string(profile) +
                           "' is not a MIG profile; use NVIDIA's name, e.g. 3g.40gb or 1g.10gb "
                           "(nvidia-smi mig -lgip lists a card's)");
  };
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < profile.size() && profile[i] >= '0' && profile[i] <= '9') {
      ++i;
    }
    return i - from;
  };
  const std::size_t slice_digits = digits();
  if (slice_digits == 0 || slice_digits > 2 || profile[0] == '0' || profile.substr(i, 2) != "g.") {
    return bad();
  }
  i += 2;
  if (digits() == 0 || profile.substr(i, 2) != "gb") {
    return bad();
  }
  i += 2;
  if (i < profile.size()) {
    const std::string_view suffix = profile.substr(i);
    if (suffix.size() < 2 || suffix.size() > 8 || suffix[0] != '+' ||
        !std::all_of(
            suffix.begin() + 1, suffix.end(), [](char c) { return c >= 'a' && c <= 'z'; })) {
      return bad();
    }
  }
  return OkStatus();
}

int MigProfileSlices(std::string_view profile) {
  int slices = 0;
  for (const char c : profile) {
    if (c < '0' || c > '9') {
      break;
    }
    slices = slices * 10 + (c - '0');
  }
  return slices;
}

Result<std::vector<std::string>> ParseMigLayout(std::string_view text, std::string_view field) {
  std::vector<std::string> profiles;
  if (text.empty() || text == "none") {
    return profiles;
  }
  constexpr std::size_t kMaxDevices = 16;  // 7 on today's cards
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    GF_TRY(ValidateMigProfile(item, field));
    profiles.emplace_back(item);
    start = comma + 1;
  }
  if (profiles.size() > kMaxDevices) {
    return InvalidArgument(std::string(field) + ": " + std::to_string(profiles.size()) +
                           " MIG devices; at most " + std::to_string(kMaxDevices) +
                           " are accepted (today's GPUs hold up to 7)");
  }
  return profiles;
}

Result<std::vector<std::size_t>> PlanMigLayout(const std::vector<MigProfile>& offered,
                                               std::string_view gpu,
                                               const std::vector<std::string>& wanted) {
  const auto join = [](const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names) {
      out += (out.empty() ? "" : ", ") + name;
    }
    return out;
  };
  std::vector<std::string> names;
  int max_slices = 0;
  for (const MigProfile& p : offered) {
    names.push_back(p.name);
    max_slices = std::max(max_slices, p.slices);
  }
  std::vector<std::size_t> plan;
  std::vector<int> count(offered.size(), 0);
  int slices = 0;
  for (const std::string& name : wanted) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      return InvalidArgument(std::string(gpu) + ": MIG profile '" + name +
                             "' is not offered by this GPU (it offers " +
                             (names.empty() ? std::string("none") : join(names)) + ")");
    }
    const auto i = static_cast<std::size_t>(it - names.begin());
    if (offered[i].max_count > 0 && ++count[i] > offered[i].max_count) {
      return InvalidArgument(std::string(gpu) + ": the GPU holds at most " +
                             std::to_string(offered[i].max_count) + " instances of MIG profile " +
                             name);
    }
    slices += offered[i].slices;
    plan.push_back(i);
  }
  if (slices > max_slices) {
    return InvalidArgument(std::string(gpu) + ": the MIG layout " + join(wanted) + " needs " +
                           std::to_string(slices) + " compute slices; the GPU has " +
                           std::to_string(max_slices));
  }
  std::stable_sort(plan.begin(), plan.end(), [&](std::size_t a, std::size_t b) {
    return offered[a].slices > offered[b].slices;
  });
  return plan;
}

Result<SharingMode> ParseSharingMode(std::string_view s, std::string_view field) {
  for (const SharingMode m :
       {SharingMode::kExclusive, SharingMode::kShared, SharingMode::kMps, SharingMode::kMig}) {
    if (s == ToString(m)) {
      return m;
    }
  }
  return InvalidArgument(std::string(field) + ": '" + std::string(s) +
                         "' is not a sharing mode; use exclusive, shared, mps or mig");
}

std::string_view ToString(MemoryBreach b) {
  return b == MemoryBreach::kWarn ? "warn" : "kill";
}

Result<MemoryBreach> ParseMemoryBreach(std::string_view s, std::string_view field) {
  if (s == "kill") {
    return MemoryBreach::kKill;
  }
  if (s == "warn") {
    return MemoryBreach::kWarn;
  }
  return InvalidArgument(std::string(field) + ": '" + std::string(s) +
                         "' is not a breach policy; use \"kill\" (the job's largest process on "
                         "the GPU) or \"warn\"");
}

std::string_view ToString(NodeState s) {
  switch (s) {
    case NodeState::kUp:
      return "up";
    case NodeState::kDraining:
      return "draining";
    case NodeState::kDrained:
      return "drained";
    case NodeState::kDown:
      return "down";
  }
  return "up";
}

Result<NodeState> ParseNodeState(std::string_view s) {
  if (s == "up") {
    return NodeState::kUp;
  }
  if (s == "draining") {
    return NodeState::kDraining;
  }
  if (s == "drained") {
    return NodeState::kDrained;
  }
  if (s == "down") {
    return NodeState::kDown;
  }
  return InvalidArgument("unknown node state '" + std::string(s) +
                         "'; use up, draining, drained or down");
}

}  // namespace gf
