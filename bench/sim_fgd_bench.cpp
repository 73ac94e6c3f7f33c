// gf_sim_fgd_bench: GPU fragmentation as demand grows (issue #7's benchmark, after the FGD
// paper, Weng et al., ATC'23), through the code of `gpufleet sim` itself (RunSim): the Alibaba
// openb trace (alibaba_gpu_v2023_openb: 8,152 tasks, 3,078 of them a share of one GPU) on its
// 1,213 GPU nodes (6,212 GPUs), every GPU shared, tasks arriving in trace order and never
// leaving (--no-departures), the trace resampled with seed 1 once it runs out, up to 130 % of
// the cluster's GPUs; gpufleet's placement of shares (the fullest shared GPU that fits) beside
// plain first-fit, in one table. It is the command
//
//   gpufleet sim --trace TRACES/alibaba_gpu_v2023_openb/normalized.csv
//     --cluster TRACES/alibaba_gpu_v2023_openb/openb_node_list_gpu_node.csv
//     --gpu-sharing shared --no-departures --inflate-to 1.3 --seed 1
//     --compare docs/sim-policies/fullest.toml docs/sim-policies/first-fit.toml
//
// docs/sim.md "GPU sharing and fragmentation" says what each figure means. The traces are read
// from ../shared/traces (or the directory given as the first argument); when the trace is
// absent the bench says so and exits 0.
#include <cstdio>
#include <filesystem>
#include <string>

#include <sys/resource.h>

#include "sim/sim_command.h"

int main(int argc, char** argv) {
  const std::filesystem::path traces = argc > 1 ? argv[1] : GF_TRACES_DIR;
  const std::filesystem::path dir = traces / "alibaba_gpu_v2023_openb";
  if (!std::filesystem::is_regular_file(dir / "normalized.csv")) {
    std::printf(
        "gf_sim_fgd_bench: skipped: no alibaba_gpu_v2023_openb trace under %s (give the "
        "traces directory as the first argument)\n",
        traces.c_str());
    return 0;
  }
  const std::filesystem::path policies = GF_SIM_POLICIES_DIR;
  gf::sim::SimCommandOptions o;
  o.trace = (dir / "normalized.csv").string();
  o.cluster = (dir / "openb_node_list_gpu_node.csv").string();
  o.gpu_sharing = "shared";
  o.no_departures = true;
  o.inflate_to = 1.3;
  o.seed = 1;
  o.compare = {(policies / "fullest.toml").string(), (policies / "first-fit.toml").string()};
  const gf::Status status = gf::sim::RunSim(o);
  if (!status.ok()) {
    std::fprintf(stderr, "gf_sim_fgd_bench: %s\n", status.error().message.c_str());
    return 1;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("\npeak RSS: %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024);
  return 0;
}
