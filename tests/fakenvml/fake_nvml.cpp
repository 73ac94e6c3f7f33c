// fakenvml: a stand-in libnvidia-ml.so.1, written from gpufleet's own sources, so the real
// dlopen-and-sample code of NvmlGpuBackend runs in CI without a GPU.
//
// It exports, with C linkage and NVML's real signatures (checked against nvml_abi.h below), the
// entry points gpufleet uses. What the "driver" reports comes from a JSON scenario file named by
// GF_FAKENVML_SCENARIO (format: README.md next to this file). The file is re-read whenever its
// inode, size or mtime changes, so a test can change the scenario between two samples (write a
// temporary file and rename it over the old one). Thread-safety: every entry point takes one
// mutex, like a driver serialising access.
//
// Built twice: `fakenvml` exports every entry point gpufleet knows; `fakenvml_legacy`
// (GF_FAKENVML_LEGACY) exports only the ones gpufleet requires plus the pre-R535 name of the
// throttle-reasons query, standing in for a driver too old for the optional counters.
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "gpu/nvml/nvml_abi.h"

namespace nvml = gf::nvml;

// NVML's ABI types (unsigned long long) and exported names (nvmlInit_v2) are not ours to rename.
// NOLINTBEGIN(google-runtime-int, readability-identifier-naming)

// No MIG: DeviceOpaque::mig_gi of a GPU's own handle.
constexpr unsigned int kNotMig = 0xFFFFFFFFU;

// The handle type's definition lives here: a handle is a pointer to the device's slot. A MIG
// device handle names its GPU and its GPU instance (the fake gives each GPU instance at most one
// compute instance, so that pair names the MIG device).
struct gf::nvml::DeviceOpaque {
  unsigned int index;
  unsigned int mig_gi = kNotMig;
};

// MIG GPU and compute instance handles: the GPU and the GPU instance id, likewise.
struct gf::nvml::GpuInstanceOpaque {
  unsigned int index;
  unsigned int gi;
};
struct gf::nvml::ComputeInstanceOpaque {
  unsigned int index;
  unsigned int gi;
};

// An event set: the GPUs registered on it (by UUID, so a scenario rewrite keeps them) and the
// XID events it has delivered, so each (UUID, seq) is delivered once whatever the file says later.
struct gf::nvml::EventSetOpaque {
  std::set<std::string> watched;
  std::set<std::pair<std::string, long long>> delivered;
};

namespace {

constexpr unsigned int kMaxDevices = 64;
constexpr unsigned long long kBytesPerMib = 1024ULL * 1024ULL;
// Per-process utilisation periods the "driver" keeps per GPU, like NVML's sample buffer.
constexpr std::size_t kUtilHistory = 64;
// GPU instance ids run below this (A100 and H100 use 0..14).
constexpr unsigned int kMaxGpuInstances = 16;

struct FakeProcess {
  unsigned int pid = 0;
  unsigned long long used_bytes = nvml::kValueNotAvailable;
  std::optional<unsigned int> sm_util;  // absent: no utilisation sample for this process
  unsigned int mem_util = 0;
  unsigned int gpu_instance_id = kNotMig;  // on a MIG device: its instances
  unsigned int compute_instance_id = kNotMig;
};

// A GPU instance profile the card offers (nvmlDeviceGetGpuInstanceProfileInfoV).
struct FakeMigProfile {
  unsigned int id = 0;
  std::string name;  // "3g.40gb"
  unsigned int slices = 0;
  unsigned int instances = 0;  // at most this many at once
  unsigned long long memory_mib = 0;
};

// One GPU instance and its compute instance (none after nvmlComputeInstanceDestroy).
struct FakeMigInstance {
  unsigned int gi = 0;
  std::optional<unsigned int> ci;
  unsigned int profile_id = 0;
  std::string uuid;  // of its MIG device
  unsigned long long memory_used_bytes = 0;
};

struct FakeMig {
  bool enabled = false;
  bool pending = false;
  std::vector<FakeMigProfile> profiles;
  std::vector<FakeMigInstance> instances;  // as the scenario has them (State::mig_layouts wins)
};

struct FakeXid {
  unsigned long long xid = 0;
  long long seq = 0;
};

struct FakeDevice {
  std::string name;
  std::string uuid;
  unsigned long long memory_total_bytes = 0;
  unsigned long long memory_used_bytes = 0;
  unsigned int util_gpu = 0;
  unsigned int util_memory = 0;
  unsigned int temperature_c = 0;
  unsigned int memory_temperature_c = 0;
  unsigned int power_mw = 0;
  unsigned int power_limit_mw = 0;  // enforced, until a set (State::power_limits) replaces it
  // Power management: the board's default limit and the range a set may ask for.
  unsigned int power_limit_default_mw = 0;
  unsigned int power_limit_min_mw = 0;
  unsigned int power_limit_max_mw = 0;
  unsigned long long energy_mj = 0;
  unsigned int sm_clock_mhz = 0;
  unsigned int mem_clock_mhz = 0;
  unsigned int pcie_tx_kbps = 0;
  unsigned int pcie_rx_kbps = 0;
  unsigned int pcie_replay_count = 0;
  // [memory error type][counter type], indexed by NVML's enum values.
  std::array<std::array<unsigned long long, 2>, 2> ecc{};
  std::array<unsigned int, 4> remapped_rows{};  // correctable, uncorrectable, pending, failure
  unsigned long long throttle_reasons = 0;
  unsigned int fan_speed_pct = 0;
  int pstate = 0;
  std::set<std::string> unsupported;
  std::set<std::string> no_permission;
  bool lost = false;
  bool identity_lost = false;
  std::vector<FakeProcess> processes;
  std::vector<FakeXid> xid_events;
  // Topology: bus id (default from the index), PCIe switch group and NUMA node (absent:
  // nvmlDeviceGetNumaNodeId answers NOT_SUPPORTED), and the far ends of its NVLinks, in link
  // order (bus ids of GPUs or of an NVSwitch), filled from the scenario's "nvlink" groups.
  std::string pci_bus_id;
  std::optional<int> pcie_switch;
  std::optional<unsigned int> numa;
  std::vector<std::string> nvlinks;
  std::optional<FakeMig> mig;  // absent: a card without MIG (NOT_SUPPORTED)
};

struct Scenario {
  std::string driver_version = "550.54.15";
  std::optional<int> init_error;
  std::vector<FakeDevice> devices;
};

// Identity of the file's content as far as stat can tell.
struct FileStamp {
  ino_t inode = 0;
  off_t size = -1;
  long long mtime_ns = -1;
  bool operator==(const FileStamp&) const = default;
};

struct State {
  std::mutex mu;
  int init_count = 0;
  std::string path;
  FileStamp stamp;
  std::optional<Scenario> scenario;       // nullopt when the file is missing or broken
  std::string problem;                    // why scenario is nullopt
  std::array<char, 1024> problem_text{};  // what nvmlErrorString(kErrorUnknown) returns
  std::array<nvml::DeviceOpaque, kMaxDevices> handles{};
  std::vector<std::unique_ptr<nvml::EventSetOpaque>> event_sets;
  // Per UUID, the per-process utilisation periods recorded so far (oldest first); kept across
  // scenario re-reads, as a driver's buffer outlives a change of load.
  std::map<std::string, std::vector<nvml::ProcessUtilizationSample>> util_history;
  unsigned long long last_util_stamp_us = 0;
  // Per UUID, the limit the last nvmlDeviceSetPowerManagementLimit set: it outlives scenario
  // re-reads, as a driver keeps a limit until it unloads.
  std::map<std::string, unsigned int> power_limits;
  // MIG: handles per GPU and GPU instance id, and per UUID the instances once a create or
  // destroy changed them: they outlive scenario re-reads, as a driver keeps its instances.
  std::array<std::array<nvml::DeviceOpaque, kMaxGpuInstances>, kMaxDevices> mig_handles{};
  std::array<std::array<nvml::GpuInstanceOpaque, kMaxGpuInstances>, kMaxDevices> gi_handles{};
  std::array<std::array<nvml::ComputeInstanceOpaque, kMaxGpuInstances>, kMaxDevices> ci_handles{};
  std::map<std::string, std::vector<FakeMigInstance>> mig_layouts;
};

State& GetState() {
  static State state;
  return state;
}

// The names "unsupported" and "no_permission" accept: one per NVML query (or field).
const std::set<std::string>& KnownCounters() {
  static const std::set<std::string> counters = {"memory",
                                                 "utilization",
                                                 "temperature",
                                                 "memory_temperature",
                                                 "power",
                                                 "power_limit",
                                                 "power_limit_set",
                                                 "energy",
                                                 "clocks",
                                                 "pcie_throughput",
                                                 "pcie_replay",
                                                 "ecc",
                                                 "remapped_rows",
                                                 "throttle_reasons",
                                                 "fan",
                                                 "pstate",
                                                 "processes",
                                                 "process_utilization",
                                                 "xid_events",
                                                 "topology",
                                                 "nvlink",
                                                 "numa",
                                                 "mig",
                                                 "mig_change"};
  return counters;
}

std::string KnownCounterList() {
  std::string list;
  for (const std::string& name : KnownCounters()) {
    list += (list.empty() ? "" : ", ") + name;
  }
  return list;
}

std::set<std::string> ParseCounterSet(const nlohmann::json& j, const char* key, std::size_t i) {
  std::set<std::string> out;
  for (const auto& counter : j.value(key, nlohmann::json::array())) {
    std::string name = counter.get<std::string>();
    if (KnownCounters().count(name) == 0) {
      throw std::runtime_error("devices[" + std::to_string(i) + "]." + key + ": unknown counter '" +
                               name + "' (known: " + KnownCounterList() + ")");
    }
    out.insert(name);
  }
  return out;
}

FakeProcess ParseProcess(const nlohmann::json& p) {
  FakeProcess process;
  process.pid = p.at("pid").get<unsigned int>();
  if (p.contains("used_memory_mib")) {
    process.used_bytes = p.at("used_memory_mib").get<unsigned long long>() * kBytesPerMib;
  }
  if (p.contains("sm_util")) {
    process.sm_util = p.at("sm_util").get<unsigned int>();
  }
  process.mem_util = p.value("mem_util", 0U);
  process.gpu_instance_id = p.value("gpu_instance_id", kNotMig);
  process.compute_instance_id = p.value("compute_instance_id", kNotMig);
  return process;
}

// The GPU instance profiles of the two cards tests model (slices, most instances, MiB), by
// NVML profile id: 0 1_SLICE, 7 1_SLICE_REV1 (+me), 9 1_SLICE_REV2, 1 2_SLICE, 2 3_SLICE,
// 3 4_SLICE, 4 7_SLICE.
std::vector<FakeMigProfile> BuiltInMigProfiles(const std::string& card) {
  if (card == "A100-40GB") {
    return {{0, "1g.5gb", 1, 7, 4864},
            {7, "1g.5gb+me", 1, 1, 4864},
            {9, "1g.10gb", 1, 4, 9856},
            {1, "2g.10gb", 2, 3, 9856},
            {2, "3g.20gb", 3, 2, 19968},
            {3, "4g.20gb", 4, 1, 19968},
            {4, "7g.40gb", 7, 1, 40192}};
  }
  if (card == "H100-80GB") {
    return {{0, "1g.10gb", 1, 7, 9856},
            {7, "1g.10gb+me", 1, 1, 9856},
            {9, "1g.20gb", 1, 4, 19968},
            {1, "2g.20gb", 2, 3, 19968},
            {2, "3g.40gb", 3, 2, 40192},
            {3, "4g.40gb", 4, 1, 40192},
            {4, "7g.80gb", 7, 1, 80384}};
  }
  throw std::runtime_error("mig.profiles: unknown card '" + card +
                           "' (known: A100-40GB, H100-80GB; or give a list)");
}

// "MIG-" and a UUID made from the GPU's and the GPU instance id: stable across re-creation.
std::string MigUuid(const std::string& gpu_uuid, unsigned int gi) {
  std::array<char, 16> tail{};
  std::snprintf(tail.data(), tail.size(), "%012x", 0xF00U + gi);
  const std::string body = gpu_uuid.rfind("GPU-", 0) == 0 ? gpu_uuid.substr(4) : gpu_uuid;
  return "MIG-" + body.substr(0, std::min<std::size_t>(body.size(), 24)) + tail.data();
}

FakeMig ParseMig(const nlohmann::json& j, const std::string& gpu_uuid, std::size_t i) {
  const std::string where = "devices[" + std::to_string(i) + "].mig";
  FakeMig mig;
  mig.enabled = j.value("enabled", false);
  mig.pending = j.value("pending", mig.enabled);
  const nlohmann::json& profiles = j.value("profiles", nlohmann::json("H100-80GB"));
  if (profiles.is_string()) {
    mig.profiles = BuiltInMigProfiles(profiles.get<std::string>());
  } else {
    for (const auto& p : profiles) {
      mig.profiles.push_back(FakeMigProfile{p.at("id").get<unsigned int>(),
                                            p.at("name").get<std::string>(),
                                            p.at("slices").get<unsigned int>(),
                                            p.value("instances", 1U),
                                            p.at("memory_mib").get<unsigned long long>()});
    }
  }
  std::set<unsigned int> ids;
  for (const auto& x : j.value("instances", nlohmann::json::array())) {
    FakeMigInstance inst;
    const std::string name = x.at("profile").get<std::string>();
    auto p = std::find_if(
        mig.profiles.begin(), mig.profiles.end(), [&](const auto& fp) { return fp.name == name; });
    if (p == mig.profiles.end()) {
      throw std::runtime_error(where + ".instances: profile '" + name + "' is not offered");
    }
    inst.profile_id = p->id;
    inst.gi = x.at("gpu_instance_id").get<unsigned int>();
    if (inst.gi >= kMaxGpuInstances || !ids.insert(inst.gi).second) {
      throw std::runtime_error(where + ".instances: gpu_instance_id " + std::to_string(inst.gi) +
                               " is repeated or over 15");
    }
    if (!x.contains("compute_instance_id")) {
      inst.ci = 0;
    } else if (!x.at("compute_instance_id").is_null()) {
      inst.ci = x.at("compute_instance_id").get<unsigned int>();
    }
    inst.uuid = x.value("uuid", MigUuid(gpu_uuid, inst.gi));
    inst.memory_used_bytes = x.value("memory_used_mib", 0ULL) * kBytesPerMib;
    mig.instances.push_back(std::move(inst));
  }
  return mig;
}

void ParseHealth(const nlohmann::json& j, FakeDevice& d) {
  const nlohmann::json& ecc = j.value("ecc", nlohmann::json::object());
  d.ecc[nvml::kMemoryErrorCorrected][nvml::kVolatileEcc] = ecc.value("volatile_corrected", 0ULL);
  d.ecc[nvml::kMemoryErrorUncorrected][nvml::kVolatileEcc] =
      ecc.value("volatile_uncorrected", 0ULL);
  d.ecc[nvml::kMemoryErrorCorrected][nvml::kAggregateEcc] = ecc.value("aggregate_corrected", 0ULL);
  d.ecc[nvml::kMemoryErrorUncorrected][nvml::kAggregateEcc] =
      ecc.value("aggregate_uncorrected", 0ULL);
  const nlohmann::json& remap = j.value("remapped_rows", nlohmann::json::object());
  d.remapped_rows = {remap.value("correctable", 0U),
                     remap.value("uncorrectable", 0U),
                     remap.value("pending", false) ? 1U : 0U,
                     remap.value("failure", false) ? 1U : 0U};
  d.pcie_replay_count = j.value("pcie_replay_count", 0U);
  d.throttle_reasons = j.value("throttle_reasons", 0ULL);
  for (const auto& x : j.value("xid_events", nlohmann::json::array())) {
    d.xid_events.push_back(
        FakeXid{x.at("xid").get<unsigned long long>(), x.at("seq").get<long long>()});
  }
}

// The enforced limit defaults to the default limit and back; the range defaults to the default
// alone (a card whose limit cannot move).
void ParsePowerLimits(const nlohmann::json& j, FakeDevice& d) {
  d.power_limit_mw = j.value("power_limit_mw", 0U);
  d.power_limit_default_mw = j.value("power_limit_default_mw", d.power_limit_mw);
  if (!j.contains("power_limit_mw")) {
    d.power_limit_mw = d.power_limit_default_mw;
  }
  d.power_limit_min_mw = j.value("power_limit_min_mw", d.power_limit_default_mw);
  d.power_limit_max_mw = j.value("power_limit_max_mw", d.power_limit_default_mw);
}

FakeDevice ParseDevice(const nlohmann::json& j, std::size_t i) {
  FakeDevice d;
  d.name = j.at("name").get<std::string>();
  d.uuid = j.at("uuid").get<std::string>();
  d.memory_total_bytes = j.at("memory_total_mib").get<unsigned long long>() * kBytesPerMib;
  d.memory_used_bytes = j.value("memory_used_mib", 0ULL) * kBytesPerMib;
  d.util_gpu = j.value("util_gpu", 0U);
  d.util_memory = j.value("util_memory", 0U);
  d.temperature_c = j.value("temperature_c", 0U);
  d.memory_temperature_c = j.value("memory_temperature_c", 0U);
  d.power_mw = j.value("power_mw", 0U);
  ParsePowerLimits(j, d);
  d.energy_mj = j.value("energy_mj", 0ULL);
  d.sm_clock_mhz = j.value("sm_clock_mhz", 0U);
  d.mem_clock_mhz = j.value("mem_clock_mhz", 0U);
  d.pcie_tx_kbps = j.value("pcie_tx_kbps", 0U);
  d.pcie_rx_kbps = j.value("pcie_rx_kbps", 0U);
  d.fan_speed_pct = j.value("fan_speed_pct", 0U);
  d.pstate = j.value("pstate", 0);
  d.lost = j.value("lost", false);
  d.identity_lost = j.value("identity_lost", false);
  d.lost = d.lost || d.identity_lost;
  std::array<char, nvml::kPciBusIdSize> bus_id{};
  // A domain no real machine uses, so that a sysfs lookup of it finds nothing.
  std::snprintf(
      bus_id.data(), bus_id.size(), "0000FA7E:%02X:00.0", static_cast<unsigned>(0x10 + i));
  d.pci_bus_id = j.value("pci_bus_id", std::string(bus_id.data()));
  if (j.contains("pcie_switch")) {
    d.pcie_switch = j.at("pcie_switch").get<int>();
  }
  if (j.contains("numa")) {
    d.numa = j.at("numa").get<unsigned int>();
  }
  d.unsupported = ParseCounterSet(j, "unsupported", i);
  d.no_permission = ParseCounterSet(j, "no_permission", i);
  ParseHealth(j, d);
  for (const auto& p : j.value("processes", nlohmann::json::array())) {
    d.processes.push_back(ParseProcess(p));
  }
  if (j.contains("mig")) {
    d.mig = ParseMig(j.at("mig"), d.uuid, i);
  }
  return d;
}

// "nvlink": [{"gpus": [0, 1, 2, 3]}, {"gpus": [4, 5], "nvswitch": "00000000:C0:00.0"}]: in a
// direct group each GPU's link k goes to the k-th other member; in an NVSwitch group each
// member has two links, both to the switch's bus id.
void ParseNvlinks(const nlohmann::json& j, Scenario& s) {
  for (const auto& group : j.value("nvlink", nlohmann::json::array())) {
    const auto members = group.at("gpus").get<std::vector<std::size_t>>();
    for (const std::size_t m : members) {
      if (m >= s.devices.size()) {
        throw std::runtime_error("nvlink: no device " + std::to_string(m));
      }
    }
    for (const std::size_t m : members) {
      std::vector<std::string>& links = s.devices[m].nvlinks;
      if (group.contains("nvswitch")) {
        links.insert(links.end(), 2, group.at("nvswitch").get<std::string>());
        continue;
      }
      for (const std::size_t other : members) {
        if (other != m) {
          links.push_back(s.devices[other].pci_bus_id);
        }
      }
    }
  }
}

// Throws (nlohmann or runtime_error) on a broken file; the caller turns that into a message.
Scenario ParseScenario(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  Scenario s;
  s.driver_version = j.value("driver_version", s.driver_version);
  if (j.contains("init_error") && !j.at("init_error").is_null()) {
    s.init_error = j.at("init_error").get<int>();
  }
  const nlohmann::json& devices = j.value("devices", nlohmann::json::array());
  if (devices.size() > kMaxDevices) {
    throw std::runtime_error("more than 64 devices");
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    s.devices.push_back(ParseDevice(devices[i], i));
  }
  ParseNvlinks(j, s);
  return s;
}

void SetProblem(State& st, const std::string& problem) {
  st.scenario.reset();
  st.problem = "fakenvml: " + problem;
  std::snprintf(st.problem_text.data(), st.problem_text.size(), "%s", st.problem.c_str());
}

// REQUIRES: st.mu held. Re-reads the scenario if the file changed since the last read.
void Refresh(State& st) {
  // Tests set the variable before loading the library, not while it runs.
  const char* env = std::getenv("GF_FAKENVML_SCENARIO");  // NOLINT(concurrency-mt-unsafe)
  if (env == nullptr || *env == '\0') {
    st.stamp = FileStamp{};
    SetProblem(st,
               "GF_FAKENVML_SCENARIO is not set; point it at a scenario JSON file "
               "(see tests/fakenvml/README.md)");
    return;
  }
  struct stat info {};
  if (stat(env, &info) != 0) {
    st.stamp = FileStamp{};
    SetProblem(st,
               std::string("cannot read scenario ") + env + ": " +
                   std::strerror(errno));  // NOLINT(concurrency-mt-unsafe): under st.mu
    return;
  }
  FileStamp stamp{
      info.st_ino,
      info.st_size,
      static_cast<long long>(info.st_mtim.tv_sec) * 1'000'000'000LL + info.st_mtim.tv_nsec};
  if (st.path == env && stamp == st.stamp) {
    return;
  }
  st.path = env;
  st.stamp = stamp;
  std::ifstream in(env);
  std::stringstream text;
  text << in.rdbuf();
  try {
    st.scenario = ParseScenario(text.str());
    st.problem.clear();
  } catch (const std::exception& e) {
    SetProblem(st, std::string("broken scenario ") + env + ": " + e.what());
  }
}

// REQUIRES: st.mu held. The device behind a handle after a refresh, or an NVML error code.
nvml::Return Lookup(State& st, nvml::Device device, const FakeDevice** out) {
  if (st.init_count == 0) {
    return nvml::kErrorUninitialized;
  }
  Refresh(st);
  if (!st.scenario) {
    return nvml::kErrorUnknown;
  }
  if (device == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  if (device->index >= st.scenario->devices.size()) {
    return nvml::kErrorGpuIsLost;
  }
  if (device->mig_gi != kNotMig) {
    return nvml::kErrorNotSupported;  // a MIG device answers only the MIG-aware queries
  }
  *out = &st.scenario->devices[device->index];
  return nvml::kSuccess;
}

// What a device answers to the query named `counter` before any value is read: the scenario's
// "lost", "unsupported" and "no_permission" switches. Null `counter`: an identity query (index,
// UUID, name), which NVML keeps answering for a lost GPU unless "identity_lost" is set.
nvml::Return CounterReturn(const FakeDevice& d, const char* counter) {
  if (counter == nullptr) {
    return d.identity_lost ? nvml::kErrorGpuIsLost : nvml::kSuccess;
  }
  if (d.lost) {
    return nvml::kErrorGpuIsLost;
  }
  if (d.unsupported.count(counter) != 0) {
    return nvml::kErrorNotSupported;
  }
  if (d.no_permission.count(counter) != 0) {
    return nvml::kErrorNoPermission;
  }
  return nvml::kSuccess;
}

// The body of a per-device entry point: takes st.mu, looks the device up, applies
// CounterReturn for `counter`, and returns the first error or `fill(device)`, called under the
// lock.
template <typename Fill>
nvml::Return WithDevice(nvml::Device device, const char* counter, Fill fill) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  const FakeDevice* d = nullptr;
  nvml::Return rc = Lookup(st, device, &d);
  if (rc == nvml::kSuccess) {
    rc = CounterReturn(*d, counter);
  }
  return rc != nvml::kSuccess ? rc : fill(*d);
}

// The body of an entry point that is not about one device: takes st.mu, checks init, re-reads
// the scenario and returns `fill(st)`, called under the lock, or the error.
template <typename Fill>
nvml::Return WithScenario(Fill fill) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.init_count == 0) {
    return nvml::kErrorUninitialized;
  }
  Refresh(st);
  if (!st.scenario) {
    return nvml::kErrorUnknown;
  }
  return fill(st);
}

// REQUIRES: st.mu held, d.mig set. The GPU's MIG instances now: those a create or destroy left,
// else the scenario's.
const std::vector<FakeMigInstance>& MigInstances(const State& st, const FakeDevice& d) {
  const auto it = st.mig_layouts.find(d.uuid);
  return it != st.mig_layouts.end() ? it->second : d.mig->instances;
}

// REQUIRES: st.mu held, d.mig set. The same, to change: from now on they outlive re-reads.
[[maybe_unused]] std::vector<FakeMigInstance>& MutableMigInstances(State& st, const FakeDevice& d) {
  return st.mig_layouts.try_emplace(d.uuid, d.mig->instances).first->second;
}

const FakeMigProfile* FindMigProfile(const FakeMig& mig, unsigned int id) {
  for (const FakeMigProfile& p : mig.profiles) {
    if (p.id == id) {
      return &p;
    }
  }
  return nullptr;
}

// The body of an entry point on a MIG device handle: fill(GPU, its instance), under st.mu.
// INVALID_ARGUMENT for a handle that is not a MIG device's or whose instance is gone.
template <typename Fill>
nvml::Return WithMigDevice(nvml::Device device, Fill fill) {
  if (device == nullptr || device->mig_gi == kNotMig) {
    return nvml::kErrorInvalidArgument;
  }
  nvml::DeviceOpaque parent{device->index};
  return WithDevice(&parent, "mig", [&](const FakeDevice& d) {
    if (!d.mig || !d.mig->enabled) {
      return nvml::kErrorInvalidArgument;
    }
    for (const FakeMigInstance& inst : MigInstances(GetState(), d)) {
      if (inst.gi == device->mig_gi && inst.ci) {
        return fill(d, inst);
      }
    }
    return nvml::kErrorInvalidArgument;
  });
}

// The body of an entry point on a GPU instance (or compute instance) handle: fill(state, GPU,
// instance), under st.mu; `counter` as WithDevice. INVALID_ARGUMENT when the instance is gone.
template <typename Fill>
[[maybe_unused]] nvml::Return WithGpuInstance(unsigned int index,
                                              unsigned int gi,
                                              const char* counter,
                                              Fill fill) {
  nvml::DeviceOpaque parent{index};
  return WithDevice(&parent, counter, [&](const FakeDevice& d) {
    if (!d.mig || !d.mig->enabled) {
      return nvml::kErrorInvalidArgument;
    }
    State& st = GetState();
    for (const FakeMigInstance& inst : MigInstances(st, d)) {
      if (inst.gi == gi) {
        return fill(st, d, inst);
      }
    }
    return nvml::kErrorInvalidArgument;
  });
}

// The compute instance profile (NVML_COMPUTE_INSTANCE_PROFILE_*) spanning `slices` slices; the
// fake offers only those of 1, 2, 3, 4 and 7 slices (ids 0..4).
[[maybe_unused]] unsigned int ComputeProfileSlices(unsigned int profile) {
  constexpr std::array<unsigned int, 5> kSlices = {1, 2, 3, 4, 7};
  return profile < kSlices.size() ? kSlices[profile] : 0;
}

// REQUIRES: st.mu held. The live event set behind a handle, or null. (Unused, like the next
// helper, in the legacy build, which exports no event or utilisation queries.)
[[maybe_unused]] nvml::EventSetOpaque* FindEventSet(State& st, nvml::EventSet set) {
  for (const auto& live : st.event_sets) {
    if (live.get() == set) {
      return live.get();
    }
  }
  return nullptr;
}

// REQUIRES: st.mu held. Records one utilisation period for every process of `d` that has
// "sm_util", stamped now (strictly after the previous period, as a driver's clock would be).
[[maybe_unused]] void RecordUtilizationPeriod(State& st, const FakeDevice& d) {
  auto now_us =
      static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  st.last_util_stamp_us = std::max(now_us, st.last_util_stamp_us + 1);
  std::vector<nvml::ProcessUtilizationSample>& history = st.util_history[d.uuid];
  for (const FakeProcess& p : d.processes) {
    if (p.sm_util) {
      history.push_back(nvml::ProcessUtilizationSample{
          p.pid, st.last_util_stamp_us, *p.sm_util, p.mem_util, 0, 0});
    }
  }
  if (history.size() > kUtilHistory) {
    history.erase(history.begin(),
                  history.begin() + static_cast<std::ptrdiff_t>(history.size() - kUtilHistory));
  }
}

// A counter that is one field of the device: copies `field` to `*out` (null: invalid argument).
template <typename T>
nvml::Return ReadCounter(nvml::Device device, const char* counter, T FakeDevice::*field, T* out) {
  return WithDevice(device, counter, [&](const FakeDevice& d) {
    if (out == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *out = d.*field;
    return nvml::kSuccess;
  });
}

// The limit in force: the last one set, else the scenario's.
[[maybe_unused]] nvml::Return ReadEnforcedLimit(nvml::Device device, unsigned int* limit_mw) {
  return WithDevice(device, "power_limit", [&](const FakeDevice& d) {
    if (limit_mw == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    const auto& set = GetState().power_limits;  // st.mu is held by WithDevice
    const auto it = set.find(d.uuid);
    *limit_mw = it == set.end() ? d.power_limit_mw : it->second;
    return nvml::kSuccess;
  });
}

// REQUIRES: st.mu held (so lines of two sets never interleave). Appends "<uuid> <mW>" to the
// file $GF_FAKENVML_POWER_LOG names, if any: a test reads every limit set, in order.
[[maybe_unused]] void AppendPowerLog(const std::string& uuid, unsigned int limit_mw) {
  // Tests set the variable before loading the library, not while it runs.
  const char* path = std::getenv("GF_FAKENVML_POWER_LOG");  // NOLINT(concurrency-mt-unsafe)
  if (path == nullptr || *path == '\0') {
    return;
  }
  std::ofstream out(path, std::ios::app);
  out << uuid << ' ' << limit_mw << '\n';
}

nvml::Return CopyString(const std::string& value, char* buffer, unsigned int length) {
  if (buffer == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  if (value.size() + 1 > length) {
    return nvml::kErrorInsufficientSize;
  }
  std::memcpy(buffer, value.c_str(), value.size() + 1);
  return nvml::kSuccess;
}

const char* StandardErrorString(nvml::Return rc) {
  switch (rc) {
    case nvml::kSuccess:
      return "Success";
    case nvml::kErrorUninitialized:
      return "Uninitialized";
    case nvml::kErrorInvalidArgument:
      return "Invalid Argument";
    case nvml::kErrorNotSupported:
      return "Not Supported";
    case nvml::kErrorNoPermission:
      return "Insufficient Permissions";
    case nvml::kErrorAlreadyInitialized:
      return "Already Initialized";
    case nvml::kErrorNotFound:
      return "Not Found";
    case nvml::kErrorInsufficientSize:
      return "Insufficient Size";
    case nvml::kErrorInsufficientPower:
      return "Insufficient External Power";
    case nvml::kErrorDriverNotLoaded:
      return "Driver Not Loaded";
    case nvml::kErrorTimeout:
      return "Timeout";
    case nvml::kErrorIrqIssue:
      return "Interrupt Request Issue";
    case nvml::kErrorLibraryNotFound:
      return "NVML Shared Library Not Found";
    case nvml::kErrorFunctionNotFound:
      return "Function Not Found";
    case nvml::kErrorCorruptedInforom:
      return "Corrupted infoROM";
    case nvml::kErrorGpuIsLost:
      return "GPU is lost";
    case nvml::kErrorResetRequired:
      return "GPU requires reset";
    case nvml::kErrorOperatingSystem:
      return "GPU access blocked by the operating system";
    case nvml::kErrorLibRmVersionMismatch:
      return "Driver/library version mismatch";
    case nvml::kErrorInUse:
      return "In use by another client";
    case nvml::kErrorMemory:
      return "Insufficient Memory";
    case nvml::kErrorNoData:
      return "No data";
    default:
      return "Unknown Error";
  }
}

}  // namespace

#define GF_FAKENVML_EXPORT extern "C" __attribute__((visibility("default")))

GF_FAKENVML_EXPORT nvml::Return nvmlInit_v2() {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  Refresh(st);
  if (!st.scenario) {
    return nvml::kErrorUnknown;
  }
  if (st.scenario->init_error) {
    return *st.scenario->init_error;
  }
  if (st.init_count == 0) {
    for (unsigned int i = 0; i < kMaxDevices; ++i) {
      st.handles[i].index = i;
      for (unsigned int gi = 0; gi < kMaxGpuInstances; ++gi) {
        st.mig_handles[i][gi] = nvml::DeviceOpaque{i, gi};
        st.gi_handles[i][gi] = nvml::GpuInstanceOpaque{i, gi};
        st.ci_handles[i][gi] = nvml::ComputeInstanceOpaque{i, gi};
      }
    }
  }
  ++st.init_count;
  return nvml::kSuccess;
}

GF_FAKENVML_EXPORT nvml::Return nvmlShutdown() {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.init_count == 0) {
    return nvml::kErrorUninitialized;
  }
  --st.init_count;
  return nvml::kSuccess;
}

GF_FAKENVML_EXPORT const char* nvmlErrorString(nvml::Return rc) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  // The scenario's own problem is the clearest text for the catch-all code.
  if (rc == nvml::kErrorUnknown && !st.problem.empty()) {
    return st.problem_text.data();
  }
  return StandardErrorString(rc);
}

GF_FAKENVML_EXPORT nvml::Return nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return WithScenario(
      [&](State& st) { return CopyString(st.scenario->driver_version, version, length); });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetCount_v2(unsigned int* count) {
  return WithScenario([&](State& st) {
    if (count == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *count = static_cast<unsigned int>(st.scenario->devices.size());
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                              nvml::Device* device) {
  return WithScenario([&](State& st) {
    if (device == nullptr || index >= st.scenario->devices.size()) {
      return nvml::kErrorInvalidArgument;
    }
    *device = &st.handles[index];
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetIndex(nvml::Device device, unsigned int* index) {
  return WithDevice(device, nullptr, [&](const FakeDevice&) {
    if (index == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *index = device->index;
    return nvml::kSuccess;
  });
}

// Identity (UUID, name) stays readable on a lost GPU, as NVML caches it at attach time.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetUUID(nvml::Device device,
                                                  char* uuid,
                                                  unsigned int length) {
  if (device != nullptr && device->mig_gi != kNotMig) {
    return WithMigDevice(device, [&](const FakeDevice&, const FakeMigInstance& inst) {
      return CopyString(inst.uuid, uuid, length);
    });
  }
  return WithDevice(
      device, nullptr, [&](const FakeDevice& d) { return CopyString(d.uuid, uuid, length); });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetName(nvml::Device device,
                                                  char* name,
                                                  unsigned int length) {
  return WithDevice(
      device, nullptr, [&](const FakeDevice& d) { return CopyString(d.name, name, length); });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetMemoryInfo(nvml::Device device, nvml::Memory* memory) {
  if (device != nullptr && device->mig_gi != kNotMig) {  // the instance's share of the memory
    return WithMigDevice(device, [&](const FakeDevice& d, const FakeMigInstance& inst) {
      const FakeMigProfile* p = FindMigProfile(*d.mig, inst.profile_id);
      if (memory == nullptr || p == nullptr) {
        return nvml::kErrorInvalidArgument;
      }
      memory->total = p->memory_mib * kBytesPerMib;
      memory->used = std::min(inst.memory_used_bytes, memory->total);
      memory->free = memory->total - memory->used;
      return nvml::kSuccess;
    });
  }
  return WithDevice(device, "memory", [&](const FakeDevice& d) {
    if (memory == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    memory->total = d.memory_total_bytes;
    memory->used = d.memory_used_bytes;
    memory->free =
        d.memory_total_bytes > d.memory_used_bytes ? d.memory_total_bytes - d.memory_used_bytes : 0;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetUtilizationRates(nvml::Device device,
                                                              nvml::Utilization* utilization) {
  return WithDevice(device, "utilization", [&](const FakeDevice& d) {
    if (utilization == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    utilization->gpu = d.util_gpu;
    utilization->memory = d.util_memory;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetTemperature(nvml::Device device,
                                                         int sensor,
                                                         unsigned int* temperature) {
  return WithDevice(device, "temperature", [&](const FakeDevice& d) {
    if (temperature == nullptr || sensor != nvml::kTemperatureGpu) {
      return nvml::kErrorInvalidArgument;
    }
    *temperature = d.temperature_c;
    return nvml::kSuccess;
  });
}

// A limit set through nvmlDeviceSetPowerManagementLimit caps the draw, as the card's power
// management would.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetPowerUsage(nvml::Device device,
                                                        unsigned int* power_mw) {
  return WithDevice(device, "power", [&](const FakeDevice& d) {
    if (power_mw == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    const auto& set = GetState().power_limits;  // st.mu is held by WithDevice
    const auto it = set.find(d.uuid);
    *power_mw = it == set.end() ? d.power_mw : std::min(d.power_mw, it->second);
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetTotalEnergyConsumption(nvml::Device device,
                                                                    unsigned long long* energy_mj) {
  return ReadCounter(device, "energy", &FakeDevice::energy_mj, energy_mj);
}

// NVML's contract: with *count too small (0 and a null buffer to ask for the size), return
// INSUFFICIENT_SIZE and write the needed count; otherwise fill and write the count used.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetComputeRunningProcesses_v3(nvml::Device device,
                                                                        unsigned int* count,
                                                                        nvml::ProcessInfo* infos) {
  return WithDevice(device, "processes", [&](const FakeDevice& d) {
    if (count == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    auto needed = static_cast<unsigned int>(d.processes.size());
    if (*count < needed) {
      *count = needed;
      return nvml::kErrorInsufficientSize;
    }
    if (needed > 0 && infos == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    for (unsigned int i = 0; i < needed; ++i) {
      infos[i] = nvml::ProcessInfo{d.processes[i].pid,
                                   d.processes[i].used_bytes,
                                   d.processes[i].gpu_instance_id,
                                   d.processes[i].compute_instance_id};
    }
    *count = needed;
    return nvml::kSuccess;
  });
}

// Exported by old drivers too: the pre-R535 name of the clocks event reasons query.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetCurrentClocksThrottleReasons(
    nvml::Device device, unsigned long long* reasons) {
  return ReadCounter(device, "throttle_reasons", &FakeDevice::throttle_reasons, reasons);
}

#ifndef GF_FAKENVML_LEGACY

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetCurrentClocksEventReasons(
    nvml::Device device, unsigned long long* reasons) {
  return ReadCounter(device, "throttle_reasons", &FakeDevice::throttle_reasons, reasons);
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetEnforcedPowerLimit(nvml::Device device,
                                                                unsigned int* limit_mw) {
  return ReadEnforcedLimit(device, limit_mw);
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetPowerManagementLimit(nvml::Device device,
                                                                  unsigned int* limit_mw) {
  return ReadEnforcedLimit(device, limit_mw);
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetPowerManagementDefaultLimit(nvml::Device device,
                                                                         unsigned int* limit_mw) {
  return ReadCounter(device, "power_limit", &FakeDevice::power_limit_default_mw, limit_mw);
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetPowerManagementLimitConstraints(nvml::Device device,
                                                                             unsigned int* min_mw,
                                                                             unsigned int* max_mw) {
  return WithDevice(device, "power_limit", [&](const FakeDevice& d) {
    if (min_mw == nullptr || max_mw == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *min_mw = d.power_limit_min_mw;
    *max_mw = d.power_limit_max_mw;
    return nvml::kSuccess;
  });
}

// Like NVML: INVALID_ARGUMENT outside the constraints; "no_permission": ["power_limit_set"]
// stands for a caller who is not root. Each set is appended to $GF_FAKENVML_POWER_LOG.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceSetPowerManagementLimit(nvml::Device device,
                                                                  unsigned int limit_mw) {
  return WithDevice(device, "power_limit_set", [&](const FakeDevice& d) {
    if (limit_mw < d.power_limit_min_mw || limit_mw > d.power_limit_max_mw) {
      return nvml::kErrorInvalidArgument;
    }
    GetState().power_limits[d.uuid] = limit_mw;  // st.mu is held by WithDevice
    AppendPowerLog(d.uuid, limit_mw);
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetPcieReplayCounter(nvml::Device device,
                                                               unsigned int* count) {
  return ReadCounter(device, "pcie_replay", &FakeDevice::pcie_replay_count, count);
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetFanSpeed(nvml::Device device, unsigned int* pct) {
  return ReadCounter(device, "fan", &FakeDevice::fan_speed_pct, pct);
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetPerformanceState(nvml::Device device, int* pstate) {
  return ReadCounter(device, "pstate", &FakeDevice::pstate, pstate);
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetClockInfo(nvml::Device device,
                                                       int type,
                                                       unsigned int* mhz) {
  return WithDevice(device, "clocks", [&](const FakeDevice& d) {
    if (mhz == nullptr || (type != nvml::kClockSm && type != nvml::kClockMem)) {
      return nvml::kErrorInvalidArgument;
    }
    *mhz = type == nvml::kClockSm ? d.sm_clock_mhz : d.mem_clock_mhz;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetPcieThroughput(nvml::Device device,
                                                            int counter,
                                                            unsigned int* kbps) {
  return WithDevice(device, "pcie_throughput", [&](const FakeDevice& d) {
    if (kbps == nullptr ||
        (counter != nvml::kPcieUtilTxBytes && counter != nvml::kPcieUtilRxBytes)) {
      return nvml::kErrorInvalidArgument;
    }
    *kbps = counter == nvml::kPcieUtilTxBytes ? d.pcie_tx_kbps : d.pcie_rx_kbps;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetTotalEccErrors(nvml::Device device,
                                                            int error_type,
                                                            int counter_type,
                                                            unsigned long long* count) {
  return WithDevice(device, "ecc", [&](const FakeDevice& d) {
    if (count == nullptr || error_type < 0 || error_type > 1 || counter_type < 0 ||
        counter_type > 1) {
      return nvml::kErrorInvalidArgument;
    }
    *count = d.ecc[static_cast<std::size_t>(error_type)][static_cast<std::size_t>(counter_type)];
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetRemappedRows(nvml::Device device,
                                                          unsigned int* correctable,
                                                          unsigned int* uncorrectable,
                                                          unsigned int* pending,
                                                          unsigned int* failure) {
  return WithDevice(device, "remapped_rows", [&](const FakeDevice& d) {
    if (correctable == nullptr || uncorrectable == nullptr || pending == nullptr ||
        failure == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *correctable = d.remapped_rows[0];
    *uncorrectable = d.remapped_rows[1];
    *pending = d.remapped_rows[2];
    *failure = d.remapped_rows[3];
    return nvml::kSuccess;
  });
}

// Each field has its own return code; only NVML_FI_DEV_MEMORY_TEMP is known here, others answer
// NOT_SUPPORTED. A lost GPU fails the whole call.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetFieldValues(nvml::Device device,
                                                         int count,
                                                         nvml::FieldValue* values) {
  return WithDevice(device, nullptr, [&](const FakeDevice& d) {
    if (count < 0 || (count > 0 && values == nullptr)) {
      return nvml::kErrorInvalidArgument;
    }
    if (d.lost) {
      return nvml::kErrorGpuIsLost;
    }
    for (int i = 0; i < count; ++i) {
      nvml::FieldValue& field = values[i];
      field.nvml_return = field.field_id == nvml::kFieldMemoryTemperature
                              ? CounterReturn(d, "memory_temperature")
                              : nvml::kErrorNotSupported;
      field.value_type = nvml::kValueTypeUnsignedInt;
      field.value.ui_val = d.memory_temperature_c;
    }
    return nvml::kSuccess;
  });
}

// Each size query (null buffer) stands for one driver sample period: it records one sample per
// process with "sm_util". Then, like NVML, only samples newer than `last_seen_us` are returned;
// NOT_FOUND when there are none.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetProcessUtilization(
    nvml::Device device,
    nvml::ProcessUtilizationSample* samples,
    unsigned int* count,
    unsigned long long last_seen_us) {
  return WithDevice(device, "process_utilization", [&](const FakeDevice& d) {
    if (count == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    State& st = GetState();  // st.mu is held by WithDevice
    if (samples == nullptr) {
      RecordUtilizationPeriod(st, d);
    }
    std::vector<nvml::ProcessUtilizationSample> newer;
    for (const auto& sample : st.util_history[d.uuid]) {
      if (sample.time_stamp_us > last_seen_us) {
        newer.push_back(sample);
      }
    }
    if (newer.empty()) {
      return nvml::kErrorNotFound;
    }
    if (samples == nullptr || *count < newer.size()) {
      *count = static_cast<unsigned int>(newer.size());
      return nvml::kErrorInsufficientSize;
    }
    std::copy(newer.begin(), newer.end(), samples);
    *count = static_cast<unsigned int>(newer.size());
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlEventSetCreate(nvml::EventSet* set) {
  return WithScenario([&](State& st) {
    if (set == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    st.event_sets.push_back(std::make_unique<nvml::EventSetOpaque>());
    *set = st.event_sets.back().get();
    return nvml::kSuccess;
  });
}

// Only XID events are offered; asking for any other type is NOT_SUPPORTED, as on a card
// without it.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceRegisterEvents(nvml::Device device,
                                                         unsigned long long types,
                                                         nvml::EventSet set) {
  return WithDevice(device, "xid_events", [&](const FakeDevice& d) {
    nvml::EventSetOpaque* live = FindEventSet(GetState(), set);
    if (live == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    if ((types & ~nvml::kEventTypeXidCriticalError) != 0) {
      return nvml::kErrorNotSupported;
    }
    live->watched.insert(d.uuid);
    return nvml::kSuccess;
  });
}

// Delivers the scenario's next undelivered XID of a watched GPU, in device then file order.
// Never sleeps: with nothing to deliver it returns TIMEOUT at once, whatever `timeout_ms` says.
GF_FAKENVML_EXPORT nvml::Return nvmlEventSetWait_v2(nvml::EventSet set,
                                                    nvml::EventData* data,
                                                    unsigned int /*timeout_ms*/) {
  return WithScenario([&](State& st) {
    nvml::EventSetOpaque* live = FindEventSet(st, set);
    if (live == nullptr || data == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    const std::vector<FakeDevice>& devices = st.scenario->devices;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (live->watched.count(devices[i].uuid) == 0) {
        continue;
      }
      for (const FakeXid& xid : devices[i].xid_events) {
        if (live->delivered.insert({devices[i].uuid, xid.seq}).second) {
          *data = nvml::EventData{
              &st.handles[i], nvml::kEventTypeXidCriticalError, xid.xid, 0xFFFFFFFFU, 0xFFFFFFFFU};
          return nvml::kSuccess;
        }
      }
    }
    return nvml::kErrorTimeout;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlEventSetFree(nvml::EventSet set) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = std::find_if(st.event_sets.begin(), st.event_sets.end(), [&](const auto& live) {
    return live.get() == set;
  });
  if (it == st.event_sets.end()) {
    return nvml::kErrorInvalidArgument;
  }
  st.event_sets.erase(it);
  return nvml::kSuccess;
}

// Topology (nvml_topology.h reads it). Common ancestor: same "pcie_switch" → SINGLE, same
// "numa" → NODE, else SYSTEM. Links past the device's last one: INVALID_ARGUMENT (as a driver
// answers past NVML_NVLINK_MAX_LINKS of the card); no link at all: NOT_SUPPORTED.
void FillPci(const std::string& bus_id, nvml::PciInfo* pci) {
  *pci = nvml::PciInfo{};
  std::snprintf(pci->bus_id, sizeof(pci->bus_id), "%s", bus_id.c_str());
  std::snprintf(pci->bus_id_legacy,
                sizeof(pci->bus_id_legacy),
                "%s",
                bus_id.size() > 4 ? bus_id.c_str() + 4 : bus_id.c_str());
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetPciInfo_v3(nvml::Device device, nvml::PciInfo* pci) {
  return WithDevice(device, nullptr, [&](const FakeDevice& d) {
    if (pci == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    FillPci(d.pci_bus_id, pci);
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetTopologyCommonAncestor(nvml::Device device1,
                                                                    nvml::Device device2,
                                                                    int* level) {
  State& st = GetState();
  std::lock_guard<std::mutex> lock(st.mu);
  const FakeDevice* a = nullptr;
  const FakeDevice* b = nullptr;
  nvml::Return rc = Lookup(st, device1, &a);
  rc = rc == nvml::kSuccess ? Lookup(st, device2, &b) : rc;
  rc = rc == nvml::kSuccess ? CounterReturn(*a, "topology") : rc;
  rc = rc == nvml::kSuccess ? CounterReturn(*b, "topology") : rc;
  if (rc != nvml::kSuccess) {
    return rc;
  }
  if (level == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  if (a->pcie_switch && a->pcie_switch == b->pcie_switch) {
    *level = nvml::kTopologySingle;
  } else if (a->numa && a->numa == b->numa) {
    *level = nvml::kTopologyNode;
  } else {
    *level = nvml::kTopologySystem;
  }
  return nvml::kSuccess;
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetNvLinkState(nvml::Device device,
                                                         unsigned int link,
                                                         int* active) {
  return WithDevice(device, "nvlink", [&](const FakeDevice& d) {
    if (d.nvlinks.empty()) {
      return nvml::kErrorNotSupported;
    }
    if (active == nullptr || link >= d.nvlinks.size()) {
      return nvml::kErrorInvalidArgument;
    }
    *active = nvml::kFeatureEnabled;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetNvLinkRemotePciInfo_v2(nvml::Device device,
                                                                    unsigned int link,
                                                                    nvml::PciInfo* pci) {
  return WithDevice(device, "nvlink", [&](const FakeDevice& d) {
    if (pci == nullptr || link >= d.nvlinks.size()) {
      return nvml::kErrorInvalidArgument;
    }
    FillPci(d.nvlinks[link], pci);
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetNumaNodeId(nvml::Device device, unsigned int* node) {
  return WithDevice(device, "numa", [&](const FakeDevice& d) {
    if (!d.numa) {
      return nvml::kErrorNotSupported;
    }
    if (node == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *node = *d.numa;
    return nvml::kSuccess;
  });
}

// MIG. A GPU without "mig" in the scenario answers NOT_SUPPORTED; with MIG mode off, only the
// mode (and the MIG device count, 0) answer.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetMigMode(nvml::Device device,
                                                     unsigned int* current,
                                                     unsigned int* pending) {
  return WithDevice(device, "mig", [&](const FakeDevice& d) {
    if (!d.mig) {
      return nvml::kErrorNotSupported;
    }
    if (current == nullptr || pending == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *current = d.mig->enabled ? nvml::kMigEnable : nvml::kMigDisable;
    *pending = d.mig->pending ? nvml::kMigEnable : nvml::kMigDisable;
    return nvml::kSuccess;
  });
}

// As many MIG devices as the card has slices (one per slice at most).
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetMaxMigDeviceCount(nvml::Device device,
                                                               unsigned int* count) {
  return WithDevice(device, "mig", [&](const FakeDevice& d) {
    if (!d.mig) {
      return nvml::kErrorNotSupported;
    }
    if (count == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *count = 0;
    for (const FakeMigProfile& p : d.mig->profiles) {
      *count = d.mig->enabled ? std::max(*count, p.slices) : 0;
    }
    return nvml::kSuccess;
  });
}

// Index i: the i-th GPU instance with a compute instance, by GPU instance id.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetMigDeviceHandleByIndex(nvml::Device device,
                                                                    unsigned int index,
                                                                    nvml::Device* mig) {
  return WithDevice(device, "mig", [&](const FakeDevice& d) {
    if (!d.mig || !d.mig->enabled) {
      return nvml::kErrorNotSupported;
    }
    if (mig == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    std::vector<unsigned int> gis;
    for (const FakeMigInstance& inst : MigInstances(GetState(), d)) {
      if (inst.ci) {
        gis.push_back(inst.gi);
      }
    }
    std::sort(gis.begin(), gis.end());
    if (index >= gis.size()) {
      return nvml::kErrorNotFound;
    }
    *mig = &GetState().mig_handles[device->index][gis[index]];
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetGpuInstanceId(nvml::Device device, unsigned int* id) {
  return WithMigDevice(device, [&](const FakeDevice&, const FakeMigInstance& inst) {
    if (id == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *id = inst.gi;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetComputeInstanceId(nvml::Device device,
                                                               unsigned int* id) {
  return WithMigDevice(device, [&](const FakeDevice&, const FakeMigInstance& inst) {
    if (id == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *id = *inst.ci;
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetGpuInstanceProfileInfoV(
    nvml::Device device, unsigned int profile, nvml::GpuInstanceProfileInfoV2* info) {
  return WithDevice(device, "mig", [&](const FakeDevice& d) {
    if (!d.mig || !d.mig->enabled) {
      return nvml::kErrorNotSupported;
    }
    if (info == nullptr || profile >= nvml::kGpuInstanceProfileCount) {
      return nvml::kErrorInvalidArgument;
    }
    if (info->version != nvml::kGpuInstanceProfileInfoV2Version) {
      return nvml::kErrorArgumentVersionMismatch;
    }
    const FakeMigProfile* p = FindMigProfile(*d.mig, profile);
    if (p == nullptr) {
      return nvml::kErrorNotSupported;
    }
    *info = nvml::GpuInstanceProfileInfoV2{};
    info->version = nvml::kGpuInstanceProfileInfoV2Version;
    info->id = p->id;
    info->slice_count = p->slices;
    info->instance_count = p->instances;
    info->multiprocessor_count = p->slices * 16;
    info->memory_size_mb = p->memory_mib;
    std::snprintf(info->name, sizeof(info->name), "MIG %s", p->name.c_str());
    return nvml::kSuccess;
  });
}

// Like NVML, no size query: the buffer holds the profile's instance count.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceGetGpuInstances(nvml::Device device,
                                                          unsigned int profile,
                                                          nvml::GpuInstance* instances,
                                                          unsigned int* count) {
  return WithDevice(device, "mig", [&](const FakeDevice& d) {
    if (!d.mig || !d.mig->enabled || FindMigProfile(*d.mig, profile) == nullptr) {
      return nvml::kErrorNotSupported;
    }
    if (instances == nullptr || count == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    State& st = GetState();
    *count = 0;
    for (const FakeMigInstance& inst : MigInstances(st, d)) {
      if (inst.profile_id == profile) {
        instances[(*count)++] = &st.gi_handles[device->index][inst.gi];
      }
    }
    return nvml::kSuccess;
  });
}

GF_FAKENVML_EXPORT nvml::Return nvmlGpuInstanceGetInfo(nvml::GpuInstance gi,
                                                       nvml::GpuInstanceInfo* info) {
  if (gi == nullptr || info == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  return WithGpuInstance(
      gi->index, gi->gi, "mig", [&](State& st, const FakeDevice& d, const FakeMigInstance& inst) {
        const FakeMigProfile* p = FindMigProfile(*d.mig, inst.profile_id);
        *info = nvml::GpuInstanceInfo{
            &st.handles[gi->index], inst.gi, inst.profile_id, {0, p != nullptr ? p->slices : 0}};
        return nvml::kSuccess;
      });
}

// Capacity as the fake models it: the profile's instance count and the card's compute slices
// (the hardware's memory-slice placement is not modelled). No compute instance yet.
GF_FAKENVML_EXPORT nvml::Return nvmlDeviceCreateGpuInstance(nvml::Device device,
                                                            unsigned int profile,
                                                            nvml::GpuInstance* gi) {
  return WithDevice(device, "mig_change", [&](const FakeDevice& d) {
    if (!d.mig || !d.mig->enabled) {
      return nvml::kErrorNotSupported;
    }
    const FakeMigProfile* p = FindMigProfile(*d.mig, profile);
    if (p == nullptr) {
      return nvml::kErrorNotSupported;
    }
    if (gi == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    State& st = GetState();
    std::vector<FakeMigInstance>& instances = MutableMigInstances(st, d);
    unsigned int max_slices = 0;
    for (const FakeMigProfile& offered : d.mig->profiles) {
      max_slices = std::max(max_slices, offered.slices);
    }
    unsigned int slices = p->slices;
    unsigned int same = 0;
    std::set<unsigned int> used;
    for (const FakeMigInstance& inst : instances) {
      const FakeMigProfile* ip = FindMigProfile(*d.mig, inst.profile_id);
      slices += ip != nullptr ? ip->slices : 0;
      same += inst.profile_id == profile ? 1 : 0;
      used.insert(inst.gi);
    }
    if (slices > max_slices || same >= p->instances) {
      return nvml::kErrorInsufficientResources;
    }
    unsigned int id = 1;
    while (used.count(id) != 0) {
      ++id;
    }
    if (id >= kMaxGpuInstances) {
      return nvml::kErrorInsufficientResources;
    }
    instances.push_back(FakeMigInstance{id, std::nullopt, profile, MigUuid(d.uuid, id), 0});
    *gi = &st.gi_handles[device->index][id];
    return nvml::kSuccess;
  });
}

// IN_USE while it has a compute instance or a process of the scenario runs on it.
GF_FAKENVML_EXPORT nvml::Return nvmlGpuInstanceDestroy(nvml::GpuInstance gi) {
  if (gi == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  return WithGpuInstance(
      gi->index,
      gi->gi,
      "mig_change",
      [&](State& st, const FakeDevice& d, const FakeMigInstance& inst) {
        if (inst.ci || std::any_of(d.processes.begin(), d.processes.end(), [&](const auto& p) {
              return p.gpu_instance_id == inst.gi;
            })) {
          return nvml::kErrorInUse;
        }
        const unsigned int id = inst.gi;  // `inst` goes with the erase
        std::erase_if(MutableMigInstances(st, d), [&](const auto& i) { return i.gi == id; });
        return nvml::kSuccess;
      });
}

GF_FAKENVML_EXPORT nvml::Return nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvml::GpuInstance gi,
    unsigned int profile,
    unsigned int engine_profile,
    nvml::ComputeInstanceProfileInfo* info) {
  if (gi == nullptr || info == nullptr || profile >= nvml::kComputeInstanceProfileCount) {
    return nvml::kErrorInvalidArgument;
  }
  return WithGpuInstance(
      gi->index, gi->gi, "mig", [&](State&, const FakeDevice& d, const FakeMigInstance& inst) {
        const FakeMigProfile* p = FindMigProfile(*d.mig, inst.profile_id);
        const unsigned int slices = ComputeProfileSlices(profile);
        if (engine_profile != nvml::kComputeInstanceEngineProfileShared || p == nullptr ||
            slices == 0 || slices > p->slices) {
          return nvml::kErrorNotSupported;
        }
        *info = nvml::ComputeInstanceProfileInfo{};
        info->id = profile;
        info->slice_count = slices;
        info->instance_count = p->slices / slices;
        info->multiprocessor_count = slices * 16;
        return nvml::kSuccess;
      });
}

// The fake holds one compute instance per GPU instance, spanning it: another profile is
// NOT_SUPPORTED, a second one INSUFFICIENT_RESOURCES.
GF_FAKENVML_EXPORT nvml::Return nvmlGpuInstanceCreateComputeInstance(nvml::GpuInstance gi,
                                                                     unsigned int profile,
                                                                     nvml::ComputeInstance* ci) {
  if (gi == nullptr || ci == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  return WithGpuInstance(gi->index,
                         gi->gi,
                         "mig_change",
                         [&](State& st, const FakeDevice& d, const FakeMigInstance& inst) {
                           const FakeMigProfile* p = FindMigProfile(*d.mig, inst.profile_id);
                           if (p == nullptr || ComputeProfileSlices(profile) != p->slices) {
                             return nvml::kErrorNotSupported;
                           }
                           if (inst.ci) {
                             return nvml::kErrorInsufficientResources;
                           }
                           for (FakeMigInstance& mine : MutableMigInstances(st, d)) {
                             if (mine.gi == gi->gi) {
                               mine.ci = 0;
                             }
                           }
                           *ci = &st.ci_handles[gi->index][gi->gi];
                           return nvml::kSuccess;
                         });
}

GF_FAKENVML_EXPORT nvml::Return nvmlGpuInstanceGetComputeInstances(nvml::GpuInstance gi,
                                                                   unsigned int profile,
                                                                   nvml::ComputeInstance* cis,
                                                                   unsigned int* count) {
  if (gi == nullptr || cis == nullptr || count == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  return WithGpuInstance(
      gi->index, gi->gi, "mig", [&](State& st, const FakeDevice& d, const FakeMigInstance& inst) {
        const FakeMigProfile* p = FindMigProfile(*d.mig, inst.profile_id);
        *count = 0;
        if (inst.ci && p != nullptr && ComputeProfileSlices(profile) == p->slices) {
          cis[(*count)++] = &st.ci_handles[gi->index][gi->gi];
        }
        return nvml::kSuccess;
      });
}

// IN_USE while a process of the scenario runs on it.
GF_FAKENVML_EXPORT nvml::Return nvmlComputeInstanceDestroy(nvml::ComputeInstance ci) {
  if (ci == nullptr) {
    return nvml::kErrorInvalidArgument;
  }
  return WithGpuInstance(
      ci->index,
      ci->gi,
      "mig_change",
      [&](State& st, const FakeDevice& d, const FakeMigInstance& inst) {
        if (!inst.ci) {
          return nvml::kErrorInvalidArgument;
        }
        if (std::any_of(d.processes.begin(), d.processes.end(), [&](const auto& p) {
              return p.gpu_instance_id == inst.gi && p.compute_instance_id == *inst.ci;
            })) {
          return nvml::kErrorInUse;
        }
        for (FakeMigInstance& mine : MutableMigInstances(st, d)) {
          if (mine.gi == ci->gi) {
            mine.ci.reset();
          }
        }
        return nvml::kSuccess;
      });
}

#endif  // GF_FAKENVML_LEGACY

// The exported functions must have exactly the types gpufleet resolves them as.
static_assert(std::is_same_v<decltype(&nvmlInit_v2), nvml::InitFn>);
static_assert(std::is_same_v<decltype(&nvmlShutdown), nvml::ShutdownFn>);
static_assert(std::is_same_v<decltype(&nvmlErrorString), nvml::ErrorStringFn>);
static_assert(
    std::is_same_v<decltype(&nvmlSystemGetDriverVersion), nvml::SystemGetDriverVersionFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetCount_v2), nvml::DeviceGetCountFn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetHandleByIndex_v2), nvml::DeviceGetHandleByIndexFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetIndex), nvml::DeviceGetIndexFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetUUID), nvml::DeviceGetStringFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetName), nvml::DeviceGetStringFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMemoryInfo), nvml::DeviceGetMemoryInfoFn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetUtilizationRates), nvml::DeviceGetUtilizationRatesFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTemperature), nvml::DeviceGetTemperatureFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPowerUsage), nvml::DeviceGetPowerUsageFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTotalEnergyConsumption),
                             nvml::DeviceGetTotalEnergyConsumptionFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetComputeRunningProcesses_v3),
                             nvml::DeviceGetComputeRunningProcessesFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetCurrentClocksThrottleReasons),
                             nvml::DeviceGetULongLongFn>);
#ifndef GF_FAKENVML_LEGACY
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetCurrentClocksEventReasons), nvml::DeviceGetULongLongFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetEnforcedPowerLimit), nvml::DeviceGetUIntFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPcieReplayCounter), nvml::DeviceGetUIntFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetFanSpeed), nvml::DeviceGetUIntFn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetPerformanceState), nvml::DeviceGetPerformanceStateFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetClockInfo), nvml::DeviceGetEnumUIntFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPcieThroughput), nvml::DeviceGetEnumUIntFn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetTotalEccErrors), nvml::DeviceGetTotalEccErrorsFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetRemappedRows), nvml::DeviceGetRemappedRowsFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetFieldValues), nvml::DeviceGetFieldValuesFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetProcessUtilization),
                             nvml::DeviceGetProcessUtilizationFn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetCreate), nvml::EventSetCreateFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceRegisterEvents), nvml::DeviceRegisterEventsFn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetWait_v2), nvml::EventSetWaitFn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetFree), nvml::EventSetFreeFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPciInfo_v3), nvml::DeviceGetPciInfoFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTopologyCommonAncestor),
                             nvml::DeviceGetTopologyCommonAncestorFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetNvLinkState), nvml::DeviceGetNvLinkStateFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetNvLinkRemotePciInfo_v2),
                             nvml::DeviceGetNvLinkRemotePciInfoFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetNumaNodeId), nvml::DeviceGetUIntFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPowerManagementLimit), nvml::DeviceGetUIntFn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceGetPowerManagementDefaultLimit), nvml::DeviceGetUIntFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPowerManagementLimitConstraints),
                             nvml::DeviceGetPowerLimitConstraintsFn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceSetPowerManagementLimit), nvml::DeviceSetPowerLimitFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMigMode), nvml::DeviceGetMigModeFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMaxMigDeviceCount), nvml::DeviceGetUIntFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMigDeviceHandleByIndex),
                             nvml::DeviceGetMigDeviceHandleByIndexFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuInstanceId), nvml::DeviceGetUIntFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetComputeInstanceId), nvml::DeviceGetUIntFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuInstanceProfileInfoV),
                             nvml::DeviceGetGpuInstanceProfileInfoVFn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuInstances), nvml::DeviceGetGpuInstancesFn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceGetInfo), nvml::GpuInstanceGetInfoFn>);
static_assert(
    std::is_same_v<decltype(&nvmlDeviceCreateGpuInstance), nvml::DeviceCreateGpuInstanceFn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceDestroy), nvml::GpuInstanceDestroyFn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceGetComputeInstanceProfileInfo),
                             nvml::GpuInstanceGetComputeInstanceProfileInfoFn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceCreateComputeInstance),
                             nvml::GpuInstanceCreateComputeInstanceFn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceGetComputeInstances),
                             nvml::GpuInstanceGetComputeInstancesFn>);
static_assert(
    std::is_same_v<decltype(&nvmlComputeInstanceDestroy), nvml::ComputeInstanceDestroyFn>);
#endif

// NOLINTEND(google-runtime-int, readability-identifier-naming)
