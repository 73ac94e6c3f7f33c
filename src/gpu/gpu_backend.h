// GpuBackend: where gpufleet learns which GPUs a node has and what they are doing.
//
// Implementations: NvmlGpuBackend (libnvidia-ml.so.1 loaded with dlopen at run time) and
// SimGpuBackend (simulated cards). One instance belongs to one agent; calls are made from
// one thread at a time (not thread-safe unless an implementation says so), except the power
// limit calls: an implementation that supports them takes them from any thread, alongside
// Sample (the agent restores a limit on its launch thread while its sampler thread samples).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "model/gpu_sample.h"
#include "model/node.h"

namespace gf {

// A GPU's power management limits, in milliwatts.
struct GpuPowerLimits {
  std::int64_t current_mw = 0;  // the limit set now
  std::int64_t default_mw = 0;  // the board's default limit
  std::int64_t min_mw = 0;      // a limit may be set within [min_mw, max_mw]
  std::int64_t max_mw = 0;
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;

  // "nvml (driver 550.54.15)", "sim:4xH100-80GB".
  virtual std::string Describe() const = 0;

  // Every GPU on this node, in index order, with health kOk unless known otherwise.
  virtual Result<std::vector<Gpu>> Discover() = 0;

  // One reading of the GPU with the given NVML index.
  virtual Result<GpuSample> Sample(int index) = 0;

  // The power limits of the GPU with the given index. Errors: kFailedPrecondition when the GPU
  // or driver offers no power management (what this default does), kPermissionDenied,
  // kNotFound for an unknown index, kUnavailable when the GPU does not answer.
  virtual Result<GpuPowerLimits> PowerLimits(int index);

  // Sets the GPU's power limit, in effect at once. Errors: kInvalidArgument (naming the range)
  // for a value outside [min_mw, max_mw]; kPermissionDenied when it needs root;
  // kFailedPrecondition when unsupported (what this default does); kNotFound, kUnavailable as
  // above.
  virtual Status SetPowerLimit(int index, std::int64_t limit_mw);

  // MIG (issue #7): replaces the MIG layout of the GPU with the given index: destroys its
  // compute and GPU instances and creates one GPU instance per entry of `profiles` ("3g.40gb";
  // repeats allowed; empty: no instances), each with one compute instance spanning it. The next
  // Discover and Sample show the new MIG devices. Checked before anything is destroyed:
  // kInvalidArgument naming a profile the GPU does not offer (and those it does), or a layout
  // over the GPU's slices; kFailedPrecondition when MIG mode is off ("enable MIG mode first:
  // nvidia-smi -i N -mig 1"), when any process runs on the GPU (only an idle GPU is reshaped),
  // or when the backend has no MIG (what this default does); kPermissionDenied when it needs
  // root; kNotFound, kUnavailable as above. A failure while creating leaves the instances made
  // so far (the message says which); applying the layout again starts over.
  virtual Status ApplyMigLayout(int index, const std::vector<std::string>& profiles);
};

// Builds a backend from a --gpus spec: "nvml" (real GPUs; kUnavailable with a clear message and
// the hint to try --gpus sim:4xH100-80GB when there is no driver), "sim:8xH100-80GB",
// "sim:2xA100-40GB,4xL4-24GB". Errors name the spec and the accepted forms.
// `sim_identity` seeds the simulated GPUs' UUIDs (default: the hostname). `gpufleet up` passes
// its node name and data dir, so two instances on one host (tests run in parallel) do not share
// UUIDs, while one instance keeps its UUIDs across restarts. `slurm_node`: simulated GPUs stand
// for that Slurm node's (`gpufleet agent --slurm`; SimGpuOptions::slurm_node); real ones ignore it.
Result<std::unique_ptr<GpuBackend>> MakeGpuBackend(std::string_view spec,
                                                   const Clock& clock,
                                                   std::string_view sim_identity = "",
                                                   std::string_view slurm_node = "");

}  // namespace gf
