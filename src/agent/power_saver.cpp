#include "agent/power_saver.h"

#include <algorithm>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/duration.h"

namespace gf {
namespace {

constexpr double kMilliPerUnit = 1000.0;

// "150 W", "72.5 W": what a person reads in nvidia-smi.
std::string Watts(std::int64_t mw) {
  return fmt::format("{:g} W", static_cast<double>(mw) / kMilliPerUnit);
}

std::string GpuName(int index, const GpuUuid& uuid) {
  return "GPU " + std::to_string(index) + " (" + uuid.value() + ")";
}

// The errors after which a GPU is left alone for good: it would refuse every time (no root, no
// power management, a limit outside its range).
bool IsPowerRefusal(const Error& error) {
  return error.code == ErrorCode::kPermissionDenied ||
         error.code == ErrorCode::kFailedPrecondition || error.code == ErrorCode::kInvalidArgument;
}

}  // namespace

PowerSaver::PowerSaver(PowerSaverOptions options, GpuBackend& backend, const Clock& clock)
    : options_(options), backend_(backend), clock_(clock) {}

void PowerSaver::Start(const std::vector<Gpu>& gpus,
                       const std::map<JobId, std::vector<GpuUuid>>& running) {
  std::lock_guard lock(mu_);
  stopped_ = false;
  jobs_ = running;
  gpus_.clear();
  for (const Gpu& gpu : gpus) {
    Manage(gpu, InUse(gpu.uuid));
  }
  DropRefused();
  spdlog::info(
      "power: GPUs without a job for {} are capped at {} ({} of {} GPUs)",
      FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(options_.idle_after)),
      Watts(options_.idle_limit_mw),
      gpus_.size(),
      gpus.size());
}

void PowerSaver::Manage(const Gpu& gpu, bool in_use) {
  const std::string name = GpuName(gpu.index, gpu.uuid);
  Result<GpuPowerLimits> limits = backend_.PowerLimits(gpu.index);
  if (!limits.ok()) {
    spdlog::warn(
        "power: {}: {}; its power limit is left alone", gpu.uuid.value(), limits.error().message);
    return;
  }
  // The card's least limit is the lowest it can go; a cap at or above the default saves nothing.
  const std::int64_t cap_mw = std::max(options_.idle_limit_mw, limits->min_mw);
  if (cap_mw >= limits->default_mw) {
    spdlog::warn(
        "power: {}: the idle limit {} is not below its default {} (its least is {}); "
        "its power limit is left alone",
        name,
        Watts(options_.idle_limit_mw),
        Watts(limits->default_mw),
        Watts(limits->min_mw));
    return;
  }
  gpus_.push_back(ManagedGpu{.index = gpu.index,
                             .uuid = gpu.uuid,
                             .default_mw = limits->default_mw,
                             .cap_mw = cap_mw,
                             .capped = limits->current_mw != limits->default_mw,
                             .refused = false,
                             .idle_since = clock_.Now()});
  ManagedGpu& managed = gpus_.back();
  if (!managed.capped) {
    return;
  }
  // A limit from an earlier run (a crash kept it from restoring): keep it only if it is the cap
  // of an idle GPU.
  if (limits->current_mw == cap_mw && !in_use) {
    spdlog::info("power: {} is already capped at {}", name, Watts(cap_mw));
    return;
  }
  Restore(managed, "(found at " + Watts(limits->current_mw) + ")");
}

bool PowerSaver::InUse(const GpuUuid& uuid) const {
  return std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& job) {
    return std::find(job.second.begin(), job.second.end(), uuid) != job.second.end();
  });
}

PowerSaver::ManagedGpu* PowerSaver::Find(const GpuUuid& uuid) {
  auto it = std::find_if(
      gpus_.begin(), gpus_.end(), [&](const ManagedGpu& gpu) { return gpu.uuid == uuid; });
  return it == gpus_.end() ? nullptr : &*it;
}

bool PowerSaver::Apply(ManagedGpu& gpu, std::int64_t limit_mw) {
  Status s = backend_.SetPowerLimit(gpu.index, limit_mw);
  if (s.ok()) {
    return true;
  }
  if (IsPowerRefusal(s.error())) {
    spdlog::warn("power: {}: {}; its power limit is left alone from now on",
                 gpu.uuid.value(),
                 s.error().message);
    gpu.refused = true;
  } else {
    spdlog::warn("power: {}: setting its power limit to {} failed: {}",
                 GpuName(gpu.index, gpu.uuid),
                 Watts(limit_mw),
                 s.error().message);
  }
  return false;
}

void PowerSaver::Cap(ManagedGpu& gpu, Millis idle_for) {
  if (!Apply(gpu, gpu.cap_mw)) {
    gpu.idle_since = clock_.Now();  // try again after another idle wait, not every round
    return;
  }
  gpu.capped = true;
  spdlog::info("power: {} had no job for {}: power limit capped at {} (default {})",
               GpuName(gpu.index, gpu.uuid),
               FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(idle_for)),
               Watts(gpu.cap_mw),
               Watts(gpu.default_mw));
}

// A restore that fails leaves the GPU marked capped, so the next launch or the shutdown tries
// again.
void PowerSaver::Restore(ManagedGpu& gpu, std::string_view why) {
  if (!Apply(gpu, gpu.default_mw)) {
    return;
  }
  gpu.capped = false;
  spdlog::info("power: {}: power limit restored to its default {} {}",
               GpuName(gpu.index, gpu.uuid),
               Watts(gpu.default_mw),
               why);
}

void PowerSaver::DropRefused() {
  std::erase_if(gpus_, [](const ManagedGpu& gpu) { return gpu.refused; });
}

void PowerSaver::JobStarting(JobId job, const std::vector<GpuUuid>& gpus) {
  std::lock_guard lock(mu_);
  jobs_[job] = gpus;
  for (const GpuUuid& uuid : gpus) {
    if (ManagedGpu* gpu = Find(uuid); gpu != nullptr && gpu->capped) {
      Restore(*gpu, "before job " + std::to_string(job.value()));
    }
  }
  DropRefused();
}

void PowerSaver::JobEnded(JobId job) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) {
    return;
  }
  const std::vector<GpuUuid> gpus = std::move(it->second);
  jobs_.erase(it);
  const Time now = clock_.Now();
  for (const GpuUuid& uuid : gpus) {
    if (ManagedGpu* gpu = Find(uuid); gpu != nullptr && !InUse(uuid)) {
      gpu->idle_since = now;
    }
  }
}

void PowerSaver::Tick(const std::vector<GpuSample>& samples) {
  std::lock_guard lock(mu_);
  if (stopped_) {
    return;
  }
  const Time now = clock_.Now();
  for (const GpuSample& sample : samples) {
    ManagedGpu* gpu = Find(sample.uuid);
    if (gpu == nullptr || sample.processes.empty()) {
      continue;
    }
    gpu->idle_since = now;
    if (gpu->capped) {
      Restore(*gpu, "(a process uses it)");
    }
  }
  if (!keep_ready_) {
    for (ManagedGpu& gpu : gpus_) {
      if (!gpu.capped && !gpu.refused && !InUse(gpu.uuid) &&
          now - gpu.idle_since >= options_.idle_after) {
        Cap(gpu, options_.idle_after);
      }
    }
    DropRefused();
    return;
  }
  // The forecast's rule: the idle GPUs in use last first; the first `keep_ready_` stay ready.
  std::vector<ManagedGpu*> idle;
  for (ManagedGpu& gpu : gpus_) {
    if (!gpu.refused && !InUse(gpu.uuid)) {
      idle.push_back(&gpu);
    }
  }
  std::stable_sort(idle.begin(), idle.end(), [](const ManagedGpu* a, const ManagedGpu* b) {
    return a->idle_since > b->idle_since;
  });
  const auto ready = static_cast<std::size_t>(std::max(*keep_ready_, 0));
  for (std::size_t i = 0; i < idle.size(); ++i) {
    ManagedGpu& gpu = *idle[i];
    if (i < ready) {
      if (gpu.capped) {
        Restore(gpu, "(ahead of the demand the load forecast expects)");
      }
    } else if (!gpu.capped && now - gpu.idle_since >= options_.settle) {
      Cap(gpu, options_.settle);
    }
  }
  DropRefused();
}

void PowerSaver::KeepReady(std::optional<int> gpus) {
  std::lock_guard lock(mu_);
  if (gpus == keep_ready_) {
    return;
  }
  if (gpus) {
    spdlog::info(
        "power: the load forecast wants {} idle GPU(s) of this node ready; the others "
        "are capped after {} idle",
        *gpus,
        FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(options_.settle)));
  } else {
    spdlog::info(
        "power: no load forecast; idle GPUs are capped after {}",
        FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(options_.idle_after)));
  }
  keep_ready_ = gpus;
}

void PowerSaver::RestoreAll() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  for (ManagedGpu& gpu : gpus_) {
    if (gpu.capped) {
      Restore(gpu, "at shutdown");
    }
  }
  DropRefused();
}

std::vector<GpuUuid> PowerSaver::Capped() const {
  std::lock_guard lock(mu_);
  std::vector<GpuUuid> capped;
  for (const ManagedGpu& gpu : gpus_) {
    if (gpu.capped) {
      capped.push_back(gpu.uuid);
    }
  }
  return capped;
}

}  // namespace gf
