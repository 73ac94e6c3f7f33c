#include "gpu/nvml/nvml_mig.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "gpu/gpu_backend.h"

namespace gf {
namespace {

constexpr std::int64_t kBytesPerMib = std::int64_t{1024} * 1024;
constexpr std::string_view kNamePrefix = "MIG ";

std::string Context(int index) {
  return "GPU " + std::to_string(index);
}

// "GPU 0: nvmlDeviceCreateGpuInstance failed: Insufficient Permissions", coded for a caller
// that may retry (kUnavailable), fix the request (kInvalidArgument) or fix the GPU's state.
Error MigCallError(const NvmlMigApi& api,
                   nvml::Return rc,
                   int index,
                   std::string_view call,
                   std::string_view note = "") {
  const char* text = api.error_string(rc);
  std::string message = Context(index) + ": " + std::string(call) +
                        " failed: " + (text != nullptr ? text : "unknown error") + " (code " +
                        std::to_string(rc) + ")" + std::string(note);
  switch (rc) {
    case nvml::kErrorNoPermission:
      return PermissionDenied(message + " (changing MIG instances needs root)");
    case nvml::kErrorInUse:
      return FailedPrecondition(message + " (a process or another client uses the GPU)");
    case nvml::kErrorNotSupported:
      return FailedPrecondition(message);
    case nvml::kErrorInsufficientResources:
      return InvalidArgument(message + " (the layout does not fit the GPU)");
    case nvml::kErrorInvalidArgument:
    case nvml::kErrorUnknown:
      return Internal(message);
    default:
      return Unavailable(message);
  }
}

std::vector<NvmlMigProfile> ReadProfiles(const NvmlMigApi& api, nvml::Device device) {
  std::vector<NvmlMigProfile> profiles;
  for (unsigned int id = 0; id < nvml::kGpuInstanceProfileCount; ++id) {
    nvml::GpuInstanceProfileInfoV2 info{};
    info.version = nvml::kGpuInstanceProfileInfoV2Version;
    // NOT_SUPPORTED (not offered) and INVALID_ARGUMENT (an id this driver does not know): skip.
    if (api.gpu_instance_profile_info(device, id, &info) != nvml::kSuccess) {
      continue;
    }
    std::string name = nvml::StringIn(info.name, sizeof(info.name));
    if (name.starts_with(kNamePrefix)) {
      name.erase(0, kNamePrefix.size());
    }
    if (name.empty()) {
      continue;  // nothing to place a job by
    }
    profiles.push_back(
        NvmlMigProfile{.id = info.id,
                       .name = std::move(name),
                       .slices = static_cast<int>(info.slice_count),
                       .instance_count = static_cast<int>(info.instance_count),
                       .memory_mib = static_cast<std::int64_t>(info.memory_size_mb)});
  }
  std::stable_sort(profiles.begin(), profiles.end(), [](const auto& a, const auto& b) {
    return std::pair(a.slices, a.memory_mib) < std::pair(b.slices, b.memory_mib);
  });
  return profiles;
}

// The GPU instances of one profile (the buffer holds its instance_count, as NVML requires).
std::vector<nvml::GpuInstance> GpuInstancesOf(const NvmlMigApi& api,
                                              nvml::Device device,
                                              const NvmlMigProfile& profile,
                                              nvml::Return* rc) {
  std::vector<nvml::GpuInstance> out(static_cast<std::size_t>(std::max(profile.instance_count, 1)));
  unsigned int count = 0;
  *rc = api.gpu_instances(device, profile.id, out.data(), &count);
  out.resize(*rc == nvml::kSuccess ? std::min<std::size_t>(count, out.size()) : 0);
  return out;
}

// gpu_instance_id -> the profile of that GPU instance.
std::map<unsigned int, const NvmlMigProfile*> ProfileByGpuInstance(
    const NvmlMigApi& api, nvml::Device device, const std::vector<NvmlMigProfile>& profiles) {
  std::map<unsigned int, const NvmlMigProfile*> out;
  for (const NvmlMigProfile& profile : profiles) {
    nvml::Return rc = nvml::kSuccess;
    for (nvml::GpuInstance gi : GpuInstancesOf(api, device, profile, &rc)) {
      nvml::GpuInstanceInfo info{};
      if (api.gpu_instance_info(gi, &info) == nvml::kSuccess) {
        out[info.id] = &profile;
      }
    }
  }
  return out;
}

std::vector<MigSample> ReadDevices(const NvmlMigApi& api,
                                   nvml::Device device,
                                   const std::vector<NvmlMigProfile>& profiles) {
  unsigned int max = 0;
  if (api.max_mig_device_count(device, &max) != nvml::kSuccess) {
    return {};
  }
  const auto by_gi = ProfileByGpuInstance(api, device, profiles);
  std::vector<MigSample> out;
  for (unsigned int i = 0; i < max; ++i) {
    nvml::Device mig = nullptr;
    unsigned int gi = 0;
    unsigned int ci = 0;
    char uuid[nvml::kDeviceUuidBufferSize] = {};
    // NOT_FOUND: no MIG device at this index (they need not be dense).
    if (api.mig_device_handle_by_index(device, i, &mig) != nvml::kSuccess ||
        api.gpu_instance_id(mig, &gi) != nvml::kSuccess ||
        api.compute_instance_id(mig, &ci) != nvml::kSuccess ||
        api.uuid(mig, uuid, sizeof(uuid)) != nvml::kSuccess) {
      continue;
    }
    MigSample sample;
    sample.instance.uuid = GpuUuid(nvml::StringIn(uuid, sizeof(uuid)));
    sample.instance.gpu_instance_id = static_cast<int>(gi);
    sample.instance.compute_instance_id = static_cast<int>(ci);
    if (auto it = by_gi.find(gi); it != by_gi.end()) {
      sample.instance.profile = it->second->name;
      sample.instance.slices = it->second->slices;
      sample.instance.memory_mib = it->second->memory_mib;
    }
    nvml::Memory memory{};
    if (api.memory_info(mig, &memory) == nvml::kSuccess) {
      sample.memory_used_mib = static_cast<std::int64_t>(memory.used / kBytesPerMib);
      sample.memory_total_mib = static_cast<std::int64_t>(memory.total / kBytesPerMib);
      if (sample.instance.memory_mib == 0) {
        sample.instance.memory_mib = *sample.memory_total_mib;
      }
    }
    out.push_back(std::move(sample));
  }
  std::sort(out.begin(), out.end(), [](const MigSample& a, const MigSample& b) {
    return a.instance.gpu_instance_id < b.instance.gpu_instance_id;
  });
  return out;
}

// The pids of the processes on the GPU (every MIG device's too); nullopt if unreadable.
std::optional<std::vector<unsigned int>> RunningPids(const NvmlMigApi& api, nvml::Device device) {
  constexpr int kAttempts = 5;
  constexpr unsigned int kSlack = 8;
  unsigned int count = 0;
  std::vector<nvml::ProcessInfo> infos;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    unsigned int capacity = count;
    infos.assign(capacity, nvml::ProcessInfo{});
    nvml::Return rc =
        api.running_processes(device, &capacity, infos.empty() ? nullptr : infos.data());
    if (rc == nvml::kSuccess && (capacity == 0 || !infos.empty())) {
      std::vector<unsigned int> pids;
      for (std::size_t i = 0; i < std::min<std::size_t>(capacity, infos.size()); ++i) {
        pids.push_back(infos[i].pid);
      }
      return pids;
    }
    if (rc != nvml::kSuccess && rc != nvml::kErrorInsufficientSize) {
      return std::nullopt;
    }
    count = capacity + kSlack;
  }
  return std::nullopt;
}

// Destroys every compute instance of the GPU instance, then the GPU instance.
Status DestroyGpuInstance(const NvmlMigApi& api, nvml::GpuInstance gi, int index) {
  for (unsigned int cp = 0; cp < nvml::kComputeInstanceProfileCount; ++cp) {
    nvml::ComputeInstanceProfileInfo info{};
    if (api.compute_instance_profile_info(
            gi, cp, nvml::kComputeInstanceEngineProfileShared, &info) != nvml::kSuccess) {
      continue;  // a profile this GPU instance does not offer
    }
    std::vector<nvml::ComputeInstance> cis(std::max(info.instance_count, 1U));
    unsigned int count = 0;
    nvml::Return rc = api.compute_instances(gi, cp, cis.data(), &count);
    if (rc != nvml::kSuccess) {
      return MigCallError(api, rc, index, "nvmlGpuInstanceGetComputeInstances");
    }
    for (unsigned int i = 0; i < std::min<std::size_t>(count, cis.size()); ++i) {
      rc = api.destroy_compute_instance(cis[i]);
      if (rc != nvml::kSuccess) {
        return MigCallError(api, rc, index, "nvmlComputeInstanceDestroy");
      }
    }
  }
  nvml::Return rc = api.destroy_gpu_instance(gi);
  if (rc != nvml::kSuccess) {
    return MigCallError(api, rc, index, "nvmlGpuInstanceDestroy");
  }
  return OkStatus();
}

// Creates a GPU instance of the profile and one compute instance spanning it: the compute
// profile with as many slices as the GPU instance.
Status CreateInstance(const NvmlMigApi& api,
                      nvml::Device device,
                      const NvmlMigProfile& profile,
                      int index,
                      const std::string& made) {
  const std::string note =
      made.empty() ? std::string(" (no MIG instance was made)") : " (made so far: " + made + ")";
  nvml::GpuInstance gi = nullptr;
  nvml::Return rc = api.create_gpu_instance(device, profile.id, &gi);
  if (rc != nvml::kSuccess) {
    return MigCallError(api, rc, index, "nvmlDeviceCreateGpuInstance(" + profile.name + ")", note);
  }
  for (unsigned int cp = 0; cp < nvml::kComputeInstanceProfileCount; ++cp) {
    nvml::ComputeInstanceProfileInfo info{};
    if (api.compute_instance_profile_info(
            gi, cp, nvml::kComputeInstanceEngineProfileShared, &info) != nvml::kSuccess ||
        static_cast<int>(info.slice_count) != profile.slices) {
      continue;
    }
    nvml::ComputeInstance ci = nullptr;
    rc = api.create_compute_instance(gi, cp, &ci);
    if (rc != nvml::kSuccess) {
      return MigCallError(
          api, rc, index, "nvmlGpuInstanceCreateComputeInstance(" + profile.name + ")", note);
    }
    return OkStatus();
  }
  return Internal(Context(index) + ": the GPU instance of MIG profile " + profile.name +
                  " offers no compute instance profile of " + std::to_string(profile.slices) +
                  " slices" + note);
}

}  // namespace

bool NvmlMigApi::CanRead() const {
  return mig_mode != nullptr && max_mig_device_count != nullptr &&
         mig_device_handle_by_index != nullptr && gpu_instance_id != nullptr &&
         compute_instance_id != nullptr && gpu_instance_profile_info != nullptr &&
         gpu_instances != nullptr && gpu_instance_info != nullptr;
}

bool NvmlMigApi::CanChange() const {
  return CanRead() && create_gpu_instance != nullptr && destroy_gpu_instance != nullptr &&
         compute_instance_profile_info != nullptr && create_compute_instance != nullptr &&
         compute_instances != nullptr && destroy_compute_instance != nullptr;
}

std::vector<std::string> ProfileNames(const std::vector<NvmlMigProfile>& profiles) {
  std::vector<std::string> names;
  names.reserve(profiles.size());
  for (const NvmlMigProfile& p : profiles) {
    names.push_back(p.name);
  }
  return names;
}

NvmlMig ReadNvmlMig(const NvmlMigApi& api, nvml::Device device) {
  NvmlMig mig;
  unsigned int current = nvml::kMigDisable;
  unsigned int pending = nvml::kMigDisable;
  if (!api.CanRead() || api.mig_mode(device, &current, &pending) != nvml::kSuccess) {
    return mig;  // no MIG here (NOT_SUPPORTED), or a driver without it
  }
  mig.supported = true;
  mig.enabled = current == nvml::kMigEnable;
  mig.pending = pending == nvml::kMigEnable;
  if (!mig.enabled) {
    return mig;
  }
  mig.profiles = ReadProfiles(api, device);
  mig.devices = ReadDevices(api, device, mig.profiles);
  return mig;
}

Status ApplyNvmlMigLayout(const NvmlMigApi& api,
                          nvml::Device device,
                          int index,
                          const std::vector<std::string>& profiles) {
  if (!api.CanChange()) {
    return FailedPrecondition(Context(index) +
                              ": the NVIDIA driver lacks the MIG entry points (R470 or later "
                              "is needed to change MIG layouts)");
  }
  const NvmlMig mig = ReadNvmlMig(api, device);
  if (!mig.supported) {
    return FailedPrecondition(Context(index) + ": this GPU has no MIG mode");
  }
  if (!mig.enabled) {
    return FailedPrecondition(
        Context(index) + ": MIG mode is off" +
        (mig.pending
             ? " (switched on, but pending until the GPU is reset: nvidia-smi -i " +
                   std::to_string(index) + " -r)"
             : "; enable MIG mode first: nvidia-smi -i " + std::to_string(index) + " -mig 1"));
  }
  std::vector<MigProfile> offered;
  for (const NvmlMigProfile& p : mig.profiles) {
    offered.push_back(MigProfile{.name = p.name,
                                 .slices = p.slices,
                                 .max_count = p.instance_count,
                                 .memory_mib = p.memory_mib});
  }
  GF_ASSIGN_OR_RETURN(const std::vector<std::size_t> plan,
                      PlanMigLayout(offered, Context(index), profiles));
  const auto pids = RunningPids(api, device);
  if (!pids) {
    return Unavailable(Context(index) +
                       ": cannot tell whether processes run on the GPU "
                       "(nvmlDeviceGetComputeRunningProcesses_v3 failed); its MIG layout is "
                       "changed only when it is idle");
  }
  if (!pids->empty()) {
    std::string list;
    for (unsigned int pid : *pids) {
      list += (list.empty() ? "" : ", ") + std::to_string(pid);
    }
    return FailedPrecondition(Context(index) + ": " + std::to_string(pids->size()) +
                              " process(es) run on the GPU (pid " + list +
                              "); its MIG layout is changed only when it is idle");
  }
  for (const NvmlMigProfile& profile : mig.profiles) {
    nvml::Return rc = nvml::kSuccess;
    for (nvml::GpuInstance gi : GpuInstancesOf(api, device, profile, &rc)) {
      GF_TRY(DestroyGpuInstance(api, gi, index));
    }
    if (rc != nvml::kSuccess && rc != nvml::kErrorNotFound) {
      return MigCallError(api, rc, index, "nvmlDeviceGetGpuInstances(" + profile.name + ")");
    }
  }
  std::string made;
  for (const std::size_t i : plan) {
    const NvmlMigProfile& profile = mig.profiles[i];
    GF_TRY(CreateInstance(api, device, profile, index, made));
    made += (made.empty() ? "" : ", ") + profile.name;
  }
  return OkStatus();
}

}  // namespace gf
