#include "model/kube_pod.h"

#include <cstdint>

namespace gf {
namespace {

// 12 hex digits: 48 bits of a random (v4) UID, the version digit excluded.
constexpr std::size_t kIdHexDigits = 12;
constexpr int kHexBase = 16;
constexpr int kDecimalDigits = 10;

std::optional<int> HexDigit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + kDecimalDigits;
  }
  return std::nullopt;
}

}  // namespace

std::optional<JobId> KubeJobIdOfPod(std::string_view pod_uid) {
  std::int64_t id = 0;
  std::size_t digits = 0;
  for (const char c : pod_uid) {
    if (digits == kIdHexDigits) {
      break;
    }
    if (c == '-') {
      continue;
    }
    const std::optional<int> digit = HexDigit(c);
    if (!digit) {
      return std::nullopt;
    }
    id = id * kHexBase + *digit;
    ++digits;
  }
  if (digits < kIdHexDigits || id == 0) {
    return std::nullopt;  // 0 is no job id
  }
  return JobId(id);
}

namespace {

constexpr std::string_view kPodUidEnv = "POD_UID";
constexpr std::string_view kPodNamespaceEnv = "POD_NAMESPACE";
constexpr std::string_view kPodNameEnv = "POD_NAME";
constexpr std::string_view kPodContainerGpusEnv = "POD_CONTAINER_GPUS";

// The non-empty pieces of `text` between `sep`s.
std::vector<std::string_view> SplitSkipEmpty(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const std::size_t end = text.find(sep);
    if (end != 0) {
      out.push_back(text.substr(0, end));
    }
    if (end == std::string_view::npos) {
      break;
    }
    text.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> KubePodJobEnv(const KubePod& pod) {
  std::string containers;
  for (const KubePodContainer& c : pod.containers) {
    containers += (containers.empty() ? "" : " ") + c.name + "=";
    for (std::size_t i = 0; i < c.gpus.size(); ++i) {
      containers += (i == 0 ? "" : ",") + c.gpus[i].value();
    }
  }
  return {{std::string(kPodUidEnv), pod.uid},
          {std::string(kPodNamespaceEnv), pod.pod_namespace},
          {std::string(kPodNameEnv), pod.name},
          {std::string(kPodContainerGpusEnv), containers}};
}

std::optional<KubePod> KubePodOfJobEnv(std::span<const std::pair<std::string, std::string>> env) {
  KubePod pod;
  for (const auto& [key, value] : env) {
    if (key == kPodUidEnv) {
      pod.uid = value;
    } else if (key == kPodNamespaceEnv) {
      pod.pod_namespace = value;
    } else if (key == kPodNameEnv) {
      pod.name = value;
    } else if (key == kPodContainerGpusEnv) {
      for (const std::string_view entry : SplitSkipEmpty(value, ' ')) {
        const std::size_t eq = entry.find('=');
        KubePodContainer container{.name = std::string(entry.substr(0, eq))};
        if (eq != std::string_view::npos) {
          for (const std::string_view gpu : SplitSkipEmpty(entry.substr(eq + 1), ',')) {
            container.gpus.emplace_back(std::string(gpu));
          }
        }
        pod.containers.push_back(std::move(container));
      }
    }
  }
  if (pod.uid.empty()) {
    return std::nullopt;
  }
  return pod;
}

std::string KubeContainerOfGpu(const KubePod& pod, const GpuUuid& gpu) {
  for (const KubePodContainer& c : pod.containers) {
    for (const GpuUuid& g : c.gpus) {
      if (g == gpu) {
        return c.name;
      }
    }
  }
  return "";
}

}  // namespace gf
