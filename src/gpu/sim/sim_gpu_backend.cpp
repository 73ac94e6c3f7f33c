#include "gpu/sim/sim_gpu_backend.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>

#include <unistd.h>

namespace gf {
namespace {

constexpr std::string_view kSimPrefix = "sim:";
constexpr std::string_view kSimForm =
    "expected sim:[COUNTx]MODEL-NNGB[,...] with COUNT 1..64, e.g. sim:8xH100-80GB or "
    "sim:2xA100-40GB,4xL4-24GB";
constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
// Die temperature and HBM sensor bounds a SetTemperature may ask for.
constexpr int kMinTemperatureC = -40;
constexpr int kMaxTemperatureC = 150;

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

// NVML's clocks-event reason "GPU idle" and the performance states a card sits in.
constexpr std::uint64_t kThrottleGpuIdle = 0x1;
constexpr int kPstateBusy = 0;  // P0
constexpr int kPstateIdle = 8;  // P8

// kInvalidArgument naming the GPU, the setting, the value and the accepted range.
Status CheckRange(
    int index, std::string_view what, std::int64_t value, std::int64_t lo, std::int64_t hi) {
  if (value >= lo && value <= hi) {
    return OkStatus();
  }
  return InvalidArgument("sim GPU " + std::to_string(index) + ": " + std::string(what) + " " +
                         std::to_string(value) + " is out of range; use " + std::to_string(lo) +
                         ".." + std::to_string(hi));
}

Status CheckNotNegative(int index, std::string_view what, std::optional<std::int64_t> value) {
  return value ? CheckRange(index, what, *value, 0, INT64_MAX) : OkStatus();
}

// Framebuffer in use: the driver's reserve plus what the processes hold, at most the card.
std::int64_t UsedMemoryMib(std::int64_t total_mib, const std::vector<GpuProcessSample>& processes) {
  std::int64_t used = SimDriverReserveMib(total_mib);
  for (const GpuProcessSample& p : processes) {
    used += p.used_memory_mib.value_or(0);
  }
  return std::min(used, total_mib);
}

EccCounters ZeroEcc() {
  return EccCounters{0, 0, 0, 0};
}

constexpr std::string_view kMigSuffix = ":mig";
// The MIG-capable families: 7 compute slices over 8 memory slices.
constexpr std::array<std::string_view, 4> kMigFamilies = {"A100", "H100", "H200", "B200"};
struct SimMigShape {
  int slices;
  int memory_eighths;
  int max_count;
};
constexpr std::array<SimMigShape, 6> kMigShapes = {
    {{1, 1, 7}, {1, 2, 4}, {2, 2, 3}, {3, 4, 2}, {4, 4, 1}, {7, 8, 1}}};

// Each MIG device's memory: what the processes on it hold.
std::vector<MigSample> MigSamples(const Gpu& gpu, const std::vector<GpuProcessSample>& processes) {
  std::vector<MigSample> out;
  for (const MigInstance& m : gpu.mig_instances) {
    MigSample s{.instance = m, .memory_used_mib = 0, .memory_total_mib = m.memory_mib};
    for (const GpuProcessSample& p : processes) {
      if (p.mig_uuid == m.uuid) {
        *s.memory_used_mib += p.used_memory_mib.value_or(0);
      }
    }
    *s.memory_used_mib = std::min(*s.memory_used_mib, m.memory_mib);
    out.push_back(std::move(s));
  }
  return out;
}

// A layout's MIG devices (PlanMigLayout's checks), ids from 1 in creation order.
Result<std::vector<MigInstance>> MakeMigInstances(const Gpu& gpu,
                                                  const std::vector<std::string>& names) {
  const std::vector<MigProfile> offered = SimMigProfiles(gpu.model, gpu.memory_mib);
  GF_ASSIGN_OR_RETURN(const std::vector<std::size_t> plan,
                      PlanMigLayout(offered, "GPU " + std::to_string(gpu.index), names));
  std::vector<MigInstance> out;
  for (const std::size_t i : plan) {
    const int id = static_cast<int>(out.size()) + 1;
    out.push_back(MigInstance{.profile = offered[i].name,
                              .uuid = GpuUuid(SimMigUuid(gpu.uuid, id)),
                              .gpu_instance_id = id,
                              .compute_instance_id = 0,
                              .slices = offered[i].slices,
                              .memory_mib = offered[i].memory_mib});
  }
  return out;
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
    if (item.ends_with(kMigSuffix)) {
      group.mig = true;
      item.remove_suffix(kMigSuffix.size());
    }
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
    if (group.mig && SimMigProfiles(group.model, group.memory_mib).empty()) {
      return BadSpec(spec, "model " + quoted + " has no MIG (A100, H100, H200 and B200 have)");
    }
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
  std::uint64_t hi = Fnv1a64(key, kFnvOffsetBasis);
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

std::vector<MigProfile> SimMigProfiles(std::string_view model, std::int64_t memory_mib) {
  if (std::none_of(kMigFamilies.begin(), kMigFamilies.end(), [&](std::string_view family) {
        return model.starts_with(family);
      })) {
    return {};
  }
  std::vector<MigProfile> out;
  for (const SimMigShape& shape : kMigShapes) {
    const std::int64_t mib = memory_mib * shape.memory_eighths / 8;
    const auto gb = std::llround(static_cast<double>(mib) / 1024.0);
    out.push_back(
        MigProfile{.name = std::to_string(shape.slices) + "g." + std::to_string(gb) + "gb",
                   .slices = shape.slices,
                   .max_count = shape.max_count,
                   .memory_mib = mib});
  }
  return out;
}

std::vector<std::string> SimDefaultMigLayout(std::string_view model, std::int64_t memory_mib) {
  const std::vector<MigProfile> profiles = SimMigProfiles(model, memory_mib);
  if (profiles.empty()) {
    return {};
  }
  // kMigShapes order: [0] the small 1g, [2] 2g, [3] 3g.
  return {profiles[3].name, profiles[2].name, profiles[0].name, profiles[0].name};
}

std::string SimMigUuid(const GpuUuid& gpu, int gpu_instance_id) {
  // The GPU UUID's hash form, re-hashed with the instance id: "MIG-" and the same layout.
  const std::string uuid = SimGpuUuid(gpu.value(), gpu_instance_id, "mig");
  return "MIG-" + uuid.substr(4);
}

Result<std::unique_ptr<SimGpuBackend>> SimGpuBackend::Create(std::string_view spec,
                                                             const Clock& clock) {
  return Create(spec, clock, SimGpuOptions{});
}

void SetSimTopology(Gpu& gpu, int first, int count) {
  const int i = gpu.index - first;  // position in its spec item
  const int quad = i / kSimNvlinkGroup;
  gpu.nvlink_peers.clear();
  for (int peer = quad * kSimNvlinkGroup; peer < std::min(count, (quad + 1) * kSimNvlinkGroup);
       ++peer) {
    if (peer != i) {
      gpu.nvlink_peers.push_back(first + peer);
    }
  }
  gpu.pcie_switch = first + i / 2 * 2;
  gpu.numa_node = count >= 2 * kSimNvlinkGroup ? i * 2 / count : 0;
}

Result<std::unique_ptr<SimGpuBackend>> SimGpuBackend::Create(std::string_view spec,
                                                             const Clock& clock,
                                                             std::string_view hostname) {
  SimGpuOptions options;
  options.hostname = std::string(hostname);
  options.proc_root.clear();
  return Create(spec, clock, options);
}

Result<std::unique_ptr<SimGpuBackend>> SimGpuBackend::Create(std::string_view spec,
                                                             const Clock& clock,
                                                             const SimGpuOptions& options) {
  GF_ASSIGN_OR_RETURN(std::vector<SimGpuGroup> groups, ParseSimGpuSpec(spec));
  std::string hostname = options.hostname.empty() ? Hostname() : options.hostname;
  Time now = clock.Now();
  std::vector<SimGpu> gpus;
  for (const SimGpuGroup& group : groups) {
    const int first = static_cast<int>(gpus.size());
    for (int i = 0; i < group.count; ++i) {
      SimGpu sim;
      sim.gpu.index = static_cast<int>(gpus.size());
      SetSimTopology(sim.gpu, first, group.count);
      sim.gpu.uuid = GpuUuid(SimGpuUuid(hostname, sim.gpu.index, group.model));
      sim.gpu.model = group.model;
      sim.gpu.memory_mib = group.memory_mib;
      sim.profile = &SimGpuProfileFor(group.model);
      sim.seed = Fnv1a64(sim.gpu.uuid.value(), kFnvOffsetBasis);
      sim.last_step = now;
      sim.temperature_c = SimTargetTemperatureC(*sim.profile, sim.profile->idle_mw);
      sim.power_limit_mw = sim.profile->tdp_mw;
      if (group.mig) {
        sim.gpu.mig_enabled = true;
        for (const MigProfile& p : SimMigProfiles(group.model, group.memory_mib)) {
          sim.gpu.mig_profiles.push_back(p.name);
        }
        GF_ASSIGN_OR_RETURN(
            sim.gpu.mig_instances,
            MakeMigInstances(sim.gpu, SimDefaultMigLayout(group.model, group.memory_mib)));
      }
      gpus.push_back(std::move(sim));
    }
  }
  std::unique_ptr<SimGpuBackend> backend(
      new SimGpuBackend(std::string(spec), std::move(gpus), clock, options));
  {
    // The starting load: idle, unless processes already use a GPU (`up` restarted under jobs).
    std::lock_guard<std::mutex> lock(backend->mu_);
    for (SimGpu& gpu : backend->gpus_) {
      gpu.load = backend->ComputeLoad(gpu, now);
    }
  }
  return backend;
}

SimGpuBackend::SimGpuBackend(std::string spec,
                             std::vector<SimGpu> gpus,
                             const Clock& clock,
                             const SimGpuOptions& options)
    : spec_(std::move(spec)),
      clock_(clock),
      proc_root_(options.proc_root),
      proc_scan_interval_(options.proc_scan_interval),
      gpus_(std::move(gpus)) {
  if (!options.slurm_node.empty()) {
    slurm_ = SimSlurmNode{.node = options.slurm_node, .uuid_of_index = {}};
    for (const SimGpu& sim : gpus_) {
      slurm_->uuid_of_index.push_back(sim.gpu.uuid.value());
    }
  }
}

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

Result<SimGpuBackend::SimGpu*> SimGpuBackend::Find(int index) {
  if (index < 0 || static_cast<std::size_t>(index) >= gpus_.size()) {
    return NotFound("GPU " + std::to_string(index) + ": no such GPU (" + spec_ + " has " +
                    std::to_string(gpus_.size()) + ")");
  }
  return &gpus_[static_cast<std::size_t>(index)];
}

const SimGpuProcessTable& SimGpuBackend::Processes(Time now) {
  bool fresh =
      processes_time_ && now >= *processes_time_ && now - *processes_time_ < proc_scan_interval_;
  if (!proc_root_.empty() && !fresh) {
    memory_limits_.clear();
    processes_ = ScanSimGpuProcesses(proc_root_, &memory_limits_, slurm_ ? &*slurm_ : nullptr);
    processes_time_ = now;
  }
  return processes_;
}

SimGpuBackend::Load SimGpuBackend::ComputeLoad(const SimGpu& gpu, Time now) {
  const Overrides& o = gpu.overrides;
  std::span<const std::uint32_t> pids;
  if (!o.processes) {
    const SimGpuProcessTable& table = Processes(now);
    auto it = table.find(gpu.gpu.uuid.value());
    if (it != table.end()) {
      pids = it->second;
    }
  }
  // On a GPU in MIG mode, the processes that name one of its MIG devices run there.
  std::vector<std::pair<const MigInstance*, std::span<const std::uint32_t>>> on_mig;
  if (!o.processes) {
    const SimGpuProcessTable& table = Processes(now);
    for (const MigInstance& m : gpu.gpu.mig_instances) {
      if (auto it = table.find(m.uuid.value()); it != table.end()) {
        on_mig.emplace_back(&m, it->second);
      }
    }
  }
  bool busy = o.processes ? !o.processes->empty() : !pids.empty() || !on_mig.empty();
  Load load;
  load.util_pct = o.util_pct.value_or(busy ? SimBusyUtilPct(gpu.seed, now) : 0);
  load.mem_util_pct = SimMemoryUtilPct(load.util_pct);
  load.processes =
      o.processes
          ? *o.processes
          : SimProcesses(
                pids, gpu.gpu.memory_mib, load.util_pct, load.mem_util_pct, &memory_limits_);
  for (const auto& [mig, mig_pids] : on_mig) {
    for (GpuProcessSample& p : SimProcesses(
             mig_pids, mig->memory_mib, load.util_pct, load.mem_util_pct, &memory_limits_)) {
      p.mig_uuid = mig->uuid;
      load.processes.push_back(std::move(p));
    }
  }
  load.mig = MigSamples(gpu.gpu, load.processes);
  load.memory_used_mib =
      o.memory_used_mib.value_or(UsedMemoryMib(gpu.gpu.memory_mib, load.processes));
  // A power cap holds the draw down, as the card's power management would (by clocking down).
  load.power_mw = std::min(SimPowerMw(*gpu.profile, load.util_pct), gpu.power_limit_mw);
  return load;
}

void SimGpuBackend::Step(SimGpu& gpu, Time now) {
  Millis elapsed = now - gpu.last_step;
  // A clock set backwards bills nothing: the counter, like NVML's, never decreases.
  if (elapsed.count() > 0) {
    gpu.energy_uj += gpu.load.power_mw * elapsed.count();
    double target_c = SimTargetTemperatureC(*gpu.profile, gpu.load.power_mw);
    gpu.temperature_c = SimLagTemperatureC(gpu.temperature_c, target_c, elapsed);
  }
  gpu.last_step = now;
  gpu.load = ComputeLoad(gpu, now);
}

GpuSample SimGpuBackend::Render(SimGpu& gpu, Time now) {
  GpuSample s;
  s.uuid = gpu.gpu.uuid;
  s.time = now;
  if (gpu.lost) {
    s.lost = true;  // pending XIDs wait for the card to come back
    return s;
  }
  const SimGpuProfile& p = *gpu.profile;
  const Load& load = gpu.load;
  const Overrides& o = gpu.overrides;
  bool busy = load.util_pct > 0;
  s.memory_total_mib = gpu.gpu.memory_mib;
  s.memory_used_mib = load.memory_used_mib;
  s.memory_free_mib = gpu.gpu.memory_mib - load.memory_used_mib;
  s.util_gpu_pct = load.util_pct;
  s.util_memory_pct = load.mem_util_pct;
  int die_c = o.temperature_c.value_or(static_cast<int>(std::lround(gpu.temperature_c)));
  s.temperature_c = die_c;
  if (p.hbm) {
    s.memory_temperature_c = SimMemoryTemperatureC(die_c, load.mem_util_pct);
  }
  if (p.fan) {
    s.fan_speed_pct = SimFanPct(die_c);
  }
  s.power_mw = load.power_mw;
  s.power_limit_mw = gpu.power_limit_mw;
  s.energy_mj = gpu.energy_uj / 1000;
  s.sm_clock_mhz = busy ? p.sm_boost_mhz : p.sm_idle_mhz;
  s.mem_clock_mhz = busy ? p.mem_max_mhz : p.mem_idle_mhz;
  s.pstate = busy ? kPstateBusy : kPstateIdle;
  s.throttle_reasons = o.throttle_reasons.value_or(busy ? 0 : kThrottleGpuIdle);
  s.pcie_rx_kbps = SimPcieRxKbps(load.util_pct);
  s.pcie_tx_kbps = SimPcieTxKbps(load.util_pct);
  s.pcie_replay_count = 0;
  s.ecc = o.ecc.value_or(p.ecc ? ZeroEcc() : EccCounters{});
  s.remapped_rows = o.remapped_rows ? o.remapped_rows
                                    : (p.row_remap ? std::optional(RemappedRows{}) : std::nullopt);
  s.xids = std::exchange(gpu.pending_xids, {});
  s.processes = load.processes;
  s.mig_enabled = gpu.gpu.mig_enabled;
  s.mig = load.mig;
  return s;
}

Result<GpuSample> SimGpuBackend::Sample(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  GF_ASSIGN_OR_RETURN(SimGpu * gpu, Find(index));
  Time now = clock_.Now();
  Step(*gpu, now);
  return Render(*gpu, now);
}

Status SimGpuBackend::Change(int index, const std::function<Status(SimGpu&)>& change) {
  std::lock_guard<std::mutex> lock(mu_);
  GF_ASSIGN_OR_RETURN(SimGpu * gpu, Find(index));
  Time now = clock_.Now();
  Step(*gpu, now);  // energy so far at the old draw
  GF_TRY(change(*gpu));
  gpu->load = ComputeLoad(*gpu, now);
  return OkStatus();
}

Status SimGpuBackend::ApplyMigLayout(int index, const std::vector<std::string>& profiles) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    const std::string name = "GPU " + std::to_string(index);
    if (gpu.lost) {
      return Unavailable(name + ": the GPU is lost");
    }
    if (!gpu.gpu.mig_enabled) {
      return FailedPrecondition(name + ": MIG mode is off; enable MIG mode first: nvidia-smi -i " +
                                std::to_string(index) + " -mig 1 (a simulated GPU starts in " +
                                "MIG mode with --gpus sim:" + gpu.gpu.model + ":mig)");
    }
    GF_ASSIGN_OR_RETURN(std::vector<MigInstance> instances, MakeMigInstances(gpu.gpu, profiles));
    if (!gpu.load.processes.empty()) {
      std::string pids;
      for (const GpuProcessSample& p : gpu.load.processes) {
        pids += (pids.empty() ? "" : ", ") + std::to_string(p.pid);
      }
      return FailedPrecondition(name + ": " + std::to_string(gpu.load.processes.size()) +
                                " process(es) run on the GPU (pid " + pids +
                                "); its MIG layout is changed only when it is idle");
    }
    gpu.gpu.mig_instances = std::move(instances);
    return OkStatus();
  });
}

Status SimGpuBackend::SetUtilization(int index, int util_pct) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    GF_TRY(CheckRange(index, "utilisation (%)", util_pct, 0, 100));
    gpu.overrides.util_pct = util_pct;
    return OkStatus();
  });
}

Status SimGpuBackend::SetMemoryUsed(int index, std::int64_t used_mib) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    GF_TRY(CheckRange(index, "memory used (MiB)", used_mib, 0, gpu.gpu.memory_mib));
    gpu.overrides.memory_used_mib = used_mib;
    return OkStatus();
  });
}

Status SimGpuBackend::SetProcesses(int index, std::vector<GpuProcessSample> processes) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    gpu.overrides.processes = std::move(processes);
    return OkStatus();
  });
}

Status SimGpuBackend::SetTemperature(int index, int temperature_c) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    GF_TRY(CheckRange(index, "temperature (C)", temperature_c, kMinTemperatureC, kMaxTemperatureC));
    gpu.overrides.temperature_c = temperature_c;
    return OkStatus();
  });
}

Status SimGpuBackend::SetThrottleReasons(int index, std::uint64_t reasons) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    gpu.overrides.throttle_reasons = reasons;
    return OkStatus();
  });
}

Status SimGpuBackend::SetEcc(int index, EccCounters ecc) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    GF_TRY(CheckNotNegative(index, "ECC volatile_corrected", ecc.volatile_corrected));
    GF_TRY(CheckNotNegative(index, "ECC volatile_uncorrected", ecc.volatile_uncorrected));
    GF_TRY(CheckNotNegative(index, "ECC aggregate_corrected", ecc.aggregate_corrected));
    GF_TRY(CheckNotNegative(index, "ECC aggregate_uncorrected", ecc.aggregate_uncorrected));
    gpu.overrides.ecc = ecc;
    return OkStatus();
  });
}

Status SimGpuBackend::SetRemappedRows(int index, RemappedRows rows) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    GF_TRY(CheckNotNegative(index, "remapped rows correctable", rows.correctable));
    GF_TRY(CheckNotNegative(index, "remapped rows uncorrectable", rows.uncorrectable));
    gpu.overrides.remapped_rows = rows;
    return OkStatus();
  });
}

Status SimGpuBackend::ClearOverrides(int index) {
  return Change(index, [](SimGpu& gpu) -> Status {
    gpu.overrides = Overrides{};
    return OkStatus();
  });
}

Result<GpuPowerLimits> SimGpuBackend::Limits(int index, const SimGpu& gpu) {
  if (gpu.lost) {
    return Unavailable("sim GPU " + std::to_string(index) + " is lost (simulated)");
  }
  const std::int64_t tdp = gpu.profile->tdp_mw;
  return GpuPowerLimits{.current_mw = gpu.power_limit_mw,
                        .default_mw = tdp,
                        .min_mw = tdp / kSimMinPowerLimitDivisor,
                        .max_mw = tdp};
}

Result<GpuPowerLimits> SimGpuBackend::PowerLimits(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  GF_ASSIGN_OR_RETURN(SimGpu * gpu, Find(index));
  return Limits(index, *gpu);
}

Status SimGpuBackend::SetPowerLimit(int index, std::int64_t limit_mw) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    GF_ASSIGN_OR_RETURN(const GpuPowerLimits limits, Limits(index, gpu));
    GF_TRY(CheckRange(index, "power limit (mW)", limit_mw, limits.min_mw, limits.max_mw));
    gpu.power_limit_mw = limit_mw;
    return OkStatus();
  });
}

Status SimGpuBackend::InjectXid(int index, int xid) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    GF_TRY(CheckRange(index, "XID", xid, 1, INT_MAX));
    gpu.pending_xids.push_back(XidEvent{xid, gpu.last_step});
    return OkStatus();
  });
}

Status SimGpuBackend::SetLost(int index, bool lost) {
  return Change(index, [&](SimGpu& gpu) -> Status {
    gpu.lost = lost;
    gpu.gpu.health = lost ? GpuHealth::kFailed : GpuHealth::kOk;
    gpu.gpu.health_cause = lost ? "GPU is lost (simulated)" : "";
    return OkStatus();
  });
}

}  // namespace gf
