#include "gpu/sim/sim_gpu_backend.h"

#include <array>
#include <cctype>
#include <climits>
#include <optional>
#include <utility>

#include <unistd.h>

namespace gf {
namespace {

constexpr std::string_view kSimPrefix = "sim:";
constexpr std::string_view kSimForm =
    "expected sim:[COUNTx]MODEL-NNGB[,...] with COUNT 1..64, e.g. sim:8xH100-80GB or "
    "sim:2xA100-40GB,4xL4-24GB";
constexpr int kIdleTemperatureC = 30;
constexpr int kFullLoadExtraC = 45;  // a card at 100 % runs at about 75 C

Error BadSpec(std::string_view spec, std::string_view why) {
  return InvalidArgument("bad --gpus spec '" + std::string(spec) + "': " + std::string(why) + "; " +
                         std::string(kSimForm));
}

bool IsModelChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
}

bool AllDigits(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) {
      return false;
    }
  }
  return true;
}

// Digits only, at most 6 of them, so the value fits comfortably in an int.
std::optional<int> SmallNumber(std::string_view s) {
  if (!AllDigits(s) || s.size() > 6) {
    return std::nullopt;
  }
  int n = 0;
  for (char c : s) {
    n = n * 10 + (c - '0');
  }
  return n;
}

// Idle and full-load draw by family; a rough table, enough for plausible demos and energy math.
struct PowerProfile {
  std::string_view family_prefix;
  std::int64_t idle_mw;
  std::int64_t max_mw;
};
constexpr std::array<PowerProfile, 7> kPowerProfiles = {{
    {"H200", 75'000, 700'000},
    {"H100", 70'000, 700'000},
    {"B200", 140'000, 1'000'000},
    {"A100", 55'000, 400'000},
    {"L40", 35'000, 350'000},
    {"L4", 16'000, 72'000},
    {"A10", 25'000, 150'000},
}};
constexpr PowerProfile kDefaultPower = {"", 50'000, 300'000};

PowerProfile ProfileFor(std::string_view model) {
  for (const PowerProfile& p : kPowerProfiles) {
    if (model.substr(0, p.family_prefix.size()) == p.family_prefix) {
      return p;
    }
  }
  return kDefaultPower;
}

std::uint64_t Fnv1a64(std::string_view data, std::uint64_t seed) {
  std::uint64_t hash = seed;
  for (char c : data) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string Hostname() {
  char buffer[HOST_NAME_MAX + 1] = {};
  if (gethostname(buffer, sizeof(buffer) - 1) != 0) {
    return "localhost";
  }
  return std::string(buffer);
}

}  // namespace

Result<std::vector<SimGpuGroup>> ParseSimGpuSpec(std::string_view spec) {
  if (spec.substr(0, kSimPrefix.size()) != kSimPrefix) {
    return BadSpec(spec, "it must start with sim:");
  }
  std::string_view rest = spec.substr(kSimPrefix.size());
  if (rest.empty()) {
    return BadSpec(spec, "no GPUs listed");
  }

  std::vector<SimGpuGroup> groups;
  int total = 0;
  while (true) {
    std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    std::string quoted = "'" + std::string(item) + "'";
    if (item.empty()) {
      return BadSpec(spec, "empty item");
    }

    SimGpuGroup group;
    std::size_t x = item.find('x');
    if (x != std::string_view::npos && AllDigits(item.substr(0, x))) {
      std::optional<int> count = SmallNumber(item.substr(0, x));
      if (!count || *count < 1 || *count > kMaxSimGpus) {
        return BadSpec(spec, "count in " + quoted + " must be 1..64");
      }
      group.count = *count;
      item = item.substr(x + 1);
    }
    for (char c : item) {
      if (!IsModelChar(c)) {
        return BadSpec(
            spec, "model " + quoted + " has a character other than letters, digits, '.', '_', '-'");
      }
    }
    std::size_t dash = item.rfind('-');
    bool sized = dash != std::string_view::npos && dash > 0 && item.size() > dash + 3 &&
                 item.substr(item.size() - 2) == "GB";
    std::optional<int> gb =
        sized ? SmallNumber(item.substr(dash + 1, item.size() - dash - 3)) : std::nullopt;
    if (!gb || *gb < 1) {
      return BadSpec(spec, "model " + quoted + " must end in its memory size, like -80GB");
    }
    group.model = std::string(item);
    group.memory_mib = static_cast<std::int64_t>(*gb) * 1024;
    total += group.count;
    if (total > kMaxSimGpus) {
      return BadSpec(spec, "more than 64 GPUs in total");
    }
    groups.push_back(std::move(group));

    if (comma == std::string_view::npos) {
      break;
    }
    rest = rest.substr(comma + 1);
  }
  return groups;
}

std::string SimGpuUuid(std::string_view hostname, int index, std::string_view model) {
  std::string key = "gpufleet-sim|" + std::string(hostname) + "|" + std::to_string(index) + "|" +
                    std::string(model);
  // Two FNV-1a passes with different offset bases give 128 bits.
  std::uint64_t hi = Fnv1a64(key, 0xcbf29ce484222325ULL);
  std::uint64_t lo = Fnv1a64(key, 0x84222325cbf29ce4ULL);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (std::uint64_t word : {hi, lo}) {
    for (int shift = 60; shift >= 0; shift -= 4) {
      hex += kHex[(word >> shift) & 0xF];
    }
  }
  return "GPU-" + hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

Result<std::unique_ptr<SimGpuBackend>> SimGpuBackend::Create(std::string_view spec,
                                                             const Clock& clock) {
  return Create(spec, clock, Hostname());
}

Result<std::unique_ptr<SimGpuBackend>> SimGpuBackend::Create(std::string_view spec,
                                                             const Clock& clock,
                                                             std::string_view hostname) {
  GF_ASSIGN_OR_RETURN(std::vector<SimGpuGroup> groups, ParseSimGpuSpec(spec));
  Time now = clock.Now();
  std::vector<SimGpu> gpus;
  for (const SimGpuGroup& group : groups) {
    PowerProfile power = ProfileFor(group.model);
    for (int i = 0; i < group.count; ++i) {
      SimGpu sim;
      sim.gpu.index = static_cast<int>(gpus.size());
      sim.gpu.uuid = GpuUuid(SimGpuUuid(hostname, sim.gpu.index, group.model));
      sim.gpu.model = group.model;
      sim.gpu.memory_mib = group.memory_mib;
      sim.idle_power_mw = power.idle_mw;
      sim.max_power_mw = power.max_mw;
      sim.last_accrual = now;
      gpus.push_back(std::move(sim));
    }
  }
  return std::unique_ptr<SimGpuBackend>(
      new SimGpuBackend(std::string(spec), std::move(gpus), clock));
}

SimGpuBackend::SimGpuBackend(std::string spec, std::vector<SimGpu> gpus, const Clock& clock)
    : spec_(std::move(spec)), clock_(clock), gpus_(std::move(gpus)) {}

std::string SimGpuBackend::Describe() const {
  return spec_;
}

Result<std::vector<Gpu>> SimGpuBackend::Discover() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Gpu> out;
  out.reserve(gpus_.size());
  for (const SimGpu& sim : gpus_) {
    out.push_back(sim.gpu);
  }
  return out;
}

std::int64_t SimGpuBackend::PowerMw(const SimGpu& gpu) {
  return gpu.idle_power_mw + (gpu.max_power_mw - gpu.idle_power_mw) * gpu.util_pct / 100;
}

void SimGpuBackend::Accrue(SimGpu& gpu, Time now) {
  std::int64_t elapsed_ms = (now - gpu.last_accrual).count();
  // A clock set backwards adds nothing: the counter, like NVML's, never decreases.
  if (elapsed_ms > 0) {
    gpu.energy_uj += PowerMw(gpu) * elapsed_ms;
  }
  gpu.last_accrual = now;
}

Result<SimGpuBackend::SimGpu*> SimGpuBackend::Find(int index) {
  if (index < 0 || static_cast<std::size_t>(index) >= gpus_.size()) {
    return NotFound("GPU " + std::to_string(index) + ": no such GPU (" + spec_ + " has " +
                    std::to_string(gpus_.size()) + ")");
  }
  return &gpus_[static_cast<std::size_t>(index)];
}

Result<GpuSample> SimGpuBackend::Sample(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  GF_ASSIGN_OR_RETURN(SimGpu * gpu, Find(index));
  Time now = clock_.Now();
  Accrue(*gpu, now);
  if (gpu->lost) {
    return Unavailable("GPU " + std::to_string(index) + " (" + gpu->gpu.uuid.value() +
                       "): GPU is lost (simulated)");
  }
  GpuSample sample;
  sample.uuid = gpu->gpu.uuid;
  sample.time = now;
  sample.memory_total_mib = gpu->gpu.memory_mib;
  sample.memory_used_mib = gpu->memory_used_mib;
  sample.util_gpu_pct = gpu->util_pct;
  sample.util_memory_pct = gpu->util_pct / 2;
  sample.temperature_c = kIdleTemperatureC + kFullLoadExtraC * gpu->util_pct / 100;
  sample.power_mw = PowerMw(*gpu);
  sample.energy_mj = gpu->energy_uj / 1000;
  sample.processes = gpu->processes;
  return sample;
}

Status SimGpuBackend::SetUtilization(int index, int util_pct) {
  std::lock_guard<std::mutex> lock(mu_);
  GF_ASSIGN_OR_RETURN(SimGpu * gpu, Find(index));
  if (util_pct < 0 || util_pct > 100) {
    return InvalidArgument("utilisation " + std::to_string(util_pct) + " % is not in 0..100");
  }
  Accrue(*gpu, clock_.Now());  // energy so far at the old power
  gpu->util_pct = util_pct;
  return OkStatus();
}

Status SimGpuBackend::SetMemoryUsed(int index, std::int64_t used_mib) {
  std::lock_guard<std::mutex> lock(mu_);
  GF_ASSIGN_OR_RETURN(SimGpu * gpu, Find(index));
  if (used_mib < 0 || used_mib > gpu->gpu.memory_mib) {
    return InvalidArgument("memory used " + std::to_string(used_mib) + " MiB is not in 0.." +
                           std::to_string(gpu->gpu.memory_mib));
  }
  gpu->memory_used_mib = used_mib;
  return OkStatus();
}

Status SimGpuBackend::SetProcesses(int index, std::vector<GpuProcessSample> processes) {
  std::lock_guard<std::mutex> lock(mu_);
  GF_ASSIGN_OR_RETURN(SimGpu * gpu, Find(index));
  gpu->processes = std::move(processes);
  return OkStatus();
}

Status SimGpuBackend::SetLost(int index, bool lost) {
  std::lock_guard<std::mutex> lock(mu_);
  GF_ASSIGN_OR_RETURN(SimGpu * gpu, Find(index));
  gpu->lost = lost;
  gpu->gpu.health = lost ? GpuHealth::kFailed : GpuHealth::kOk;
  gpu->gpu.health_cause = lost ? "GPU is lost (simulated)" : "";
  return OkStatus();
}

}  // namespace gf
