// What a MIG device is of its GPU (issue #7): its share in milli-GPUs, the compute slices of
// the device over those of the whole GPU. One rule for gpufleet's own MIG jobs (the
// scheduler's MigPool) and for a Kubernetes pod that holds a MIG device (KubeDesk), so that a
// GPU's holders add up the same either way. Pure.
#pragma once

#include "model/node.h"

namespace gf {

// The compute slices of the whole GPU: its largest MIG profile's ("7g.80gb": 7), or 7 (A100,
// H100, H200) when the GPU names no profile.
int GpuMigSlices(const Gpu& gpu);

// `instance`'s share of `gpu` in milli-GPUs: 3 of 7 slices is 428; at least 1.
int MigInstanceMilli(const Gpu& gpu, const MigInstance& instance);

}  // namespace gf
