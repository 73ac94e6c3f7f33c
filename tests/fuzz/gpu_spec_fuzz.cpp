// Fuzz target: the `--gpus` spec of `gpufleet up`: ParseSimGpuSpec, SimGpuBackend::Create and
// MakeGpuBackend. Specs naming NVML are skipped: they dlopen a fuzzer-chosen path. Oracle: an
// accepted spec respects the documented bounds and yields a backend whose every GPU samples.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/check.h"
#include "core/clock.h"
#include "gpu/gpu_backend.h"
#include "gpu/sim/sim_gpu_backend.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), size);
  gf::Result<std::vector<gf::SimGpuGroup>> groups = gf::ParseSimGpuSpec(spec);
  if (groups.ok()) {
    int total = 0;
    GF_CHECK(!groups->empty());
    for (const gf::SimGpuGroup& g : *groups) {
      GF_CHECK(g.count >= 1 && g.count <= gf::kMaxSimGpus);
      GF_CHECK(g.memory_mib >= 1024 && !g.model.empty());
      total += g.count;
    }
    GF_CHECK(total <= gf::kMaxSimGpus);

    gf::ManualClock clock;
    auto backend = gf::SimGpuBackend::Create(spec, clock, "fuzz-host");
    GF_CHECK(backend.ok());
    auto gpus = (*backend)->Discover();
    GF_CHECK(gpus.ok() && static_cast<int>(gpus->size()) == total);
    for (const gf::Gpu& gpu : *gpus) {
      GF_CHECK((*backend)->Sample(gpu.index).ok());
    }
  } else {
    GF_CHECK(groups.error().code == gf::ErrorCode::kInvalidArgument);
  }

  if (std::string_view(spec).substr(0, 4) != "nvml") {
    gf::ManualClock clock;
    auto backend = gf::MakeGpuBackend(spec, clock);
    GF_CHECK(backend.ok() == groups.ok());
  }
  return 0;
}
