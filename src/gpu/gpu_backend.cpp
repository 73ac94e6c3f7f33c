#include "gpu/gpu_backend.h"

#include <algorithm>
#include <string>
#include <utility>

#include "gpu/nvml/nvml_gpu_backend.h"
#include "gpu/sim/sim_gpu_backend.h"

namespace gf {

namespace {

Error NoPowerManagement(const GpuBackend& backend, int index) {
  return FailedPrecondition("GPU " + std::to_string(index) + ": " + backend.Describe() +
                            " has no power management");
}

}  // namespace

Result<GpuPowerLimits> GpuBackend::PowerLimits(int index) {
  return NoPowerManagement(*this, index);
}

Status GpuBackend::SetPowerLimit(int index, std::int64_t /*limit_mw*/) {
  return NoPowerManagement(*this, index);
}

Result<std::vector<std::size_t>> PlanMigLayout(const std::vector<MigProfile>& offered,
                                               int index,
                                               const std::vector<std::string>& wanted) {
  const std::string gpu = "GPU " + std::to_string(index);
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
      return InvalidArgument(gpu + ": MIG profile '" + name + "' is not offered by this GPU (it " +
                             "offers " + (names.empty() ? std::string("none") : join(names)) +
                             ")");
    }
    const auto i = static_cast<std::size_t>(it - names.begin());
    if (++count[i] > offered[i].max_count) {
      return InvalidArgument(gpu + ": the GPU holds at most " +
                             std::to_string(offered[i].max_count) + " instances of MIG profile " +
                             name);
    }
    slices += offered[i].slices;
    plan.push_back(i);
  }
  if (slices > max_slices) {
    return InvalidArgument(gpu + ": the MIG layout " + join(wanted) + " needs " +
                           std::to_string(slices) + " compute slices; the GPU has " +
                           std::to_string(max_slices));
  }
  std::stable_sort(plan.begin(), plan.end(), [&](std::size_t a, std::size_t b) {
    return offered[a].slices > offered[b].slices;
  });
  return plan;
}

Status GpuBackend::ApplyMigLayout(int index, const std::vector<std::string>& /*profiles*/) {
  return FailedPrecondition("GPU " + std::to_string(index) + ": " + Describe() +
                            " cannot change MIG layouts");
}

Result<std::unique_ptr<GpuBackend>> MakeGpuBackend(std::string_view spec,
                                                   const Clock& clock,
                                                   std::string_view sim_identity) {
  constexpr std::string_view kNvmlPathPrefix = "nvml:";
  if (spec == "nvml") {
    GF_ASSIGN_OR_RETURN(auto backend,
                        NvmlGpuBackend::Open(std::string(kNvmlDefaultLibrary), clock));
    return std::unique_ptr<GpuBackend>(std::move(backend));
  }
  if (spec.substr(0, kNvmlPathPrefix.size()) == kNvmlPathPrefix &&
      spec.size() > kNvmlPathPrefix.size()) {
    GF_ASSIGN_OR_RETURN(
        auto backend,
        NvmlGpuBackend::Open(std::string(spec.substr(kNvmlPathPrefix.size())), clock));
    return std::unique_ptr<GpuBackend>(std::move(backend));
  }
  if (spec.substr(0, 4) == "sim:") {
    SimGpuOptions options;
    options.hostname = std::string(sim_identity);  // empty: this machine's hostname
    GF_ASSIGN_OR_RETURN(auto backend, SimGpuBackend::Create(spec, clock, options));
    return std::unique_ptr<GpuBackend>(std::move(backend));
  }
  return InvalidArgument("bad --gpus spec '" + std::string(spec) +
                         "': expected 'nvml' (the NVIDIA driver), 'nvml:/path/to/libnvidia-ml.so.1'"
                         " or 'sim:[COUNTx]MODEL-NNGB[,...]' (simulated GPUs, e.g. "
                         "sim:8xH100-80GB)");
}

}  // namespace gf
