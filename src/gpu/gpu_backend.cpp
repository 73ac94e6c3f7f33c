#include "gpu/gpu_backend.h"

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

Status GpuBackend::ApplyMigLayout(int index, const std::vector<std::string>& /*profiles*/) {
  return FailedPrecondition("GPU " + std::to_string(index) + ": " + Describe() +
                            " cannot change MIG layouts");
}

Result<std::unique_ptr<GpuBackend>> MakeGpuBackend(std::string_view spec,
                                                   const Clock& clock,
                                                   std::string_view sim_identity,
                                                   std::string_view slurm_node) {
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
    options.slurm_node = std::string(slurm_node);
    GF_ASSIGN_OR_RETURN(auto backend, SimGpuBackend::Create(spec, clock, options));
    return std::unique_ptr<GpuBackend>(std::move(backend));
  }
  return InvalidArgument("bad --gpus spec '" + std::string(spec) +
                         "': expected 'nvml' (the NVIDIA driver), 'nvml:/path/to/libnvidia-ml.so.1'"
                         " or 'sim:[COUNTx]MODEL-NNGB[,...]' (simulated GPUs, e.g. "
                         "sim:8xH100-80GB)");
}

}  // namespace gf
