#include "model/mig_share.h"

#include <algorithm>

#include "model/job.h"

namespace gf {
namespace {

constexpr int kDefaultGpuSlices = 7;  // A100, H100, H200: seven compute slices

}  // namespace

int GpuMigSlices(const Gpu& gpu) {
  int most = 0;
  for (const std::string& profile : gpu.mig_profiles) {
    most = std::max(most, MigProfileSlices(profile));
  }
  return most > 0 ? most : kDefaultGpuSlices;
}

int MigInstanceMilli(const Gpu& gpu, const MigInstance& instance) {
  return std::max(1, instance.slices * kWholeGpuMilli / GpuMigSlices(gpu));
}

}  // namespace gf
