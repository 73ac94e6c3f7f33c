// Example inputs for RenderPrometheus, shared by its tests, the promtool check and the
// benchmark (bench/metrics_bench.cpp): a cluster where every GpuSample field is set.
// Test and bench support only; not linked into gpufleet. Pure functions.
#pragma once

#include "monitor/telemetry.h"
#include "service/service.h"

namespace gf {

// `gpus` GPUs, 8 per node ("node-0", "node-1", ...), every sample field set (ECC, remapped
// rows, throttle reasons, XIDs, processes), values varying with the GPU's position. Every
// other GPU (odd positions) is allocated, two GPUs per job; jobs are listed in `jobs`.
// The last `lost_gpus` GPUs are lost (failed, "fell off the bus"), the others ok.
TelemetrySnapshot ExampleTelemetry(int gpus, int lost_gpus = 0);

// Stats with every state, the three priority classes, a wait histogram and two teams, one of
// them the default team ("").
ClusterStats ExampleClusterStats();

}  // namespace gf
