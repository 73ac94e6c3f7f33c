// NvmlGpuBackend's power limits: read through nvmlDeviceGetPowerManagementLimit, ...DefaultLimit
// and ...LimitConstraints, set through nvmlDeviceSetPowerManagementLimit (root only). All four
// are optional symbols: a driver without them makes the power policy say "unsupported" while
// sampling goes on. Errors keep NVML's meaning (nvml_gpu_backend.h, PowerLimits).
#include <string>

#include "gpu/nvml/nvml_gpu_backend.h"

namespace gf {
namespace {

std::string Context(int index) {
  return "GPU " + std::to_string(index);
}

// "GPU 0: power limit 50000 mW is outside the GPU's range 100000..700000 mW".
Error OutOfRange(int index, std::int64_t limit_mw, const GpuPowerLimits& limits) {
  return InvalidArgument(Context(index) + ": power limit " + std::to_string(limit_mw) +
                         " mW is outside the GPU's range " + std::to_string(limits.min_mw) + ".." +
                         std::to_string(limits.max_mw) + " mW");
}

}  // namespace

Error NvmlGpuBackend::PowerCallError(nvml::Return rc,
                                     std::string_view context,
                                     std::string_view call) const {
  Error e = CallError(rc, context, call);
  if (rc == nvml::kErrorNotSupported) {
    // Not a passing fault: this card (or its mode, e.g. a GeForce) will never do it.
    e.code = ErrorCode::kFailedPrecondition;
    e.message += " (this GPU offers no power management)";
  } else if (rc == nvml::kErrorNoPermission) {
    e.message += " (changing a GPU's power limit needs root)";
  }
  return e;
}

Result<GpuPowerLimits> NvmlGpuBackend::PowerLimits(int index) {
  if (api_.device_get_power_limit == nullptr || api_.device_get_power_default_limit == nullptr ||
      api_.device_get_power_limit_constraints == nullptr) {
    return FailedPrecondition(Context(index) + ": " + library_ +
                              " lacks nvmlDeviceGetPowerManagement* (a driver too old for power "
                              "limits)");
  }
  GF_ASSIGN_OR_RETURN(nvml::Device device, Handle(index));
  unsigned int current = 0;
  unsigned int default_limit = 0;
  unsigned int min = 0;
  unsigned int max = 0;
  nvml::Return rc = api_.device_get_power_limit(device, &current);
  std::string_view call = "nvmlDeviceGetPowerManagementLimit";
  if (rc == nvml::kSuccess) {
    rc = api_.device_get_power_default_limit(device, &default_limit);
    call = "nvmlDeviceGetPowerManagementDefaultLimit";
  }
  if (rc == nvml::kSuccess) {
    rc = api_.device_get_power_limit_constraints(device, &min, &max);
    call = "nvmlDeviceGetPowerManagementLimitConstraints";
  }
  if (rc != nvml::kSuccess) {
    return PowerCallError(rc, Context(index), call);
  }
  return GpuPowerLimits{
      .current_mw = current, .default_mw = default_limit, .min_mw = min, .max_mw = max};
}

Status NvmlGpuBackend::SetPowerLimit(int index, std::int64_t limit_mw) {
  if (api_.device_set_power_limit == nullptr) {
    return FailedPrecondition(Context(index) + ": " + library_ +
                              " lacks nvmlDeviceSetPowerManagementLimit (a driver too old for "
                              "power limits)");
  }
  // The range first, so that the error names it (NVML's own answer is a bare INVALID_ARGUMENT).
  GF_ASSIGN_OR_RETURN(const GpuPowerLimits limits, PowerLimits(index));
  if (limit_mw < limits.min_mw || limit_mw > limits.max_mw) {
    return OutOfRange(index, limit_mw, limits);
  }
  GF_ASSIGN_OR_RETURN(nvml::Device device, Handle(index));
  const nvml::Return rc = api_.device_set_power_limit(device, static_cast<unsigned int>(limit_mw));
  if (rc == nvml::kErrorInvalidArgument) {
    return OutOfRange(index, limit_mw, limits);  // the constraints changed under us
  }
  if (rc != nvml::kSuccess) {
    return PowerCallError(rc, Context(index), "nvmlDeviceSetPowerManagementLimit");
  }
  return OkStatus();
}

}  // namespace gf
