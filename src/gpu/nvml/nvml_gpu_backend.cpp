#include "gpu/nvml/nvml_gpu_backend.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "gpu/gpu_model_name.h"

namespace gf {
namespace {

constexpr std::int64_t kBytesPerMib = std::int64_t{1024} * 1024;
// Processes can start between the size query and the fill: retry a few times, with slack.
constexpr int kProcessQueryAttempts = 5;
constexpr unsigned int kProcessSlack = 8;

ErrorCode CodeFor(nvml::Return rc) {
  switch (rc) {
    case nvml::kErrorInvalidArgument:
    case nvml::kErrorNotFound:
      return ErrorCode::kNotFound;
    case nvml::kErrorNoPermission:
      return ErrorCode::kPermissionDenied;
    case nvml::kErrorUnknown:
    case nvml::kErrorInsufficientSize:
      return ErrorCode::kInternal;
    default:
      // Lost GPUs, resets, a driver gone or timing out: the dependency is not there right now.
      return ErrorCode::kUnavailable;
  }
}

// Counters that some cards or some permission setups do not offer are absent, not errors.
bool IsAbsentCounter(nvml::Return rc) {
  return rc == nvml::kErrorNotSupported || rc == nvml::kErrorNoPermission;
}

// NVML's unsigned counters fit int64 (and percentages int); the casts say so once.
std::optional<std::int64_t> AsInt64(
    std::optional<unsigned long long> v) {  // NOLINT(google-runtime-int)
  return v ? std::optional<std::int64_t>(static_cast<std::int64_t>(*v)) : std::nullopt;
}
std::optional<std::int64_t> AsInt64(std::optional<unsigned int> v) {
  return v ? std::optional<std::int64_t>(static_cast<std::int64_t>(*v)) : std::nullopt;
}
std::optional<int> AsInt(std::optional<unsigned int> v) {
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

// A field value as an int, whatever type NVML chose to report it in; nullopt for a type this
// code does not know (a newer NVML may add some).
std::optional<int> FieldAsInt(const nvml::FieldValue& field) {
  switch (field.value_type) {
    case nvml::kValueTypeDouble:
      return static_cast<int>(std::lround(field.value.d_val));
    case nvml::kValueTypeUnsignedInt:
      return static_cast<int>(field.value.ui_val);
    case nvml::kValueTypeUnsignedLong:
      return static_cast<int>(field.value.ul_val);
    case nvml::kValueTypeUnsignedLongLong:
      return static_cast<int>(field.value.ull_val);
    case nvml::kValueTypeSignedLongLong:
      return static_cast<int>(field.value.sll_val);
    case nvml::kValueTypeSignedInt:
      return field.value.si_val;
    default:
      return std::nullopt;
  }
}

// NVML's lists are read by asking for the size, then filling; entries can appear in between.
constexpr int kListQueryAttempts = 5;
constexpr unsigned int kListSlack = 8;  // entries can appear between the size query and the fill

}  // namespace

// Reads counters of one GPU. Remembers the first call that failed for a reason other than "this
// card or driver does not offer it"; after that every read is skipped, so Sample can decide
// between a lost GPU and a broken driver from one place.
class NvmlGpuBackend::CounterReader {
 public:
  enum class Need { kOptional, kRequired };

  // Records the outcome of `call`. True on success; false when absent (NOT_SUPPORTED,
  // NO_PERMISSION: a failure only when `need` is kRequired) or failed.
  bool Check(std::string_view call, nvml::Return rc, Need need = Need::kOptional) {
    if (rc == nvml::kSuccess) {
      return true;
    }
    if (need == Need::kOptional && IsAbsentCounter(rc)) {
      return false;
    }
    Fail(call, rc, "");
    return false;
  }

  void Fail(std::string_view call, nvml::Return rc, std::string note) {
    if (!Failed()) {
      failure_ = rc;
      failed_call_ = call;
      note_ = std::move(note);
    }
  }

  // fn(device, args..., &out): the value, or nullopt when fn is missing (older driver), the
  // counter is absent, the call failed, or an earlier call failed.
  template <typename Out, typename Fn, typename... Args>
  std::optional<Out> Read(std::string_view call, Fn fn, nvml::Device device, Args... args) {
    if (fn == nullptr || Failed()) {
      return std::nullopt;
    }
    Out out{};
    if (!Check(call, fn(device, args..., &out))) {
      return std::nullopt;
    }
    return out;
  }

  // Reads an NVML "ask for the size, then fill" list (processes, per-process utilisation);
  // query(buffer or null, &count) is one call. Returns the items; an empty list for NOT_FOUND
  // (NVML's "no sample newer than your time stamp"); nullopt when the list is absent or the
  // call failed (then recorded here).
  template <typename T, typename Query>
  std::optional<std::vector<T>> ReadList(std::string_view call, Query query) {
    unsigned int count = 0;
    std::vector<T> items;
    for (int attempt = 0; attempt < kListQueryAttempts && !Failed(); ++attempt) {
      unsigned int capacity = count;
      items.assign(capacity, T{});
      nvml::Return rc = query(items.empty() ? nullptr : items.data(), &capacity);
      if (rc == nvml::kErrorNotFound) {
        return std::vector<T>{};
      }
      if (rc == nvml::kSuccess && (!items.empty() || capacity == 0)) {
        items.resize(std::min<std::size_t>(capacity, items.size()));
        return items;
      }
      // The size query's answer: NVML versions differ on SUCCESS or INSUFFICIENT_SIZE for it.
      if (rc == nvml::kSuccess || rc == nvml::kErrorInsufficientSize) {
        count = capacity + kListSlack;
        continue;
      }
      if (!Check(call, rc)) {
        return std::nullopt;
      }
    }
    Fail(call, nvml::kErrorInsufficientSize, "the list kept growing while it was read; try again");
    return std::nullopt;
  }

  bool Failed() const { return failure_ != nvml::kSuccess; }
  nvml::Return Failure() const { return failure_; }
  std::string_view FailedCall() const { return failed_call_; }
  const std::string& Note() const { return note_; }

 private:
  nvml::Return failure_ = nvml::kSuccess;
  std::string_view failed_call_;  // a string literal
  std::string note_;
};

std::string NvmlGpuBackend::Describe() const {
  std::string name = library_ == kNvmlDefaultLibrary ? "nvml" : "nvml:" + library_;
  return name + " (driver " + driver_version_ + ")";
}

std::string NvmlGpuBackend::ErrorText(nvml::Return rc) const {
  const char* text = api_.error_string(rc);
  return text != nullptr ? std::string(text) : "NVML error " + std::to_string(rc);
}

Error NvmlGpuBackend::CallError(nvml::Return rc,
                                std::string_view context,
                                std::string_view call) const {
  std::string message =
      std::string(context) + ": " + std::string(call) + " failed: " + ErrorText(rc);
  if (rc == nvml::kErrorGpuIsLost) {
    message += " (the GPU has fallen off the bus; it needs a reset or a reboot)";
  }
  return MakeError(CodeFor(rc), std::move(message));
}

Error NvmlGpuBackend::ReaderError(const CounterReader& reader, std::string_view context) const {
  if (!reader.Note().empty()) {
    return Unavailable(std::string(context) + ": " + std::string(reader.FailedCall()) + ": " +
                       reader.Note());
  }
  return CallError(reader.Failure(), context, reader.FailedCall());
}

Result<nvml::Device> NvmlGpuBackend::Handle(int index) const {
  std::string context = "GPU " + std::to_string(index);
  if (index < 0) {
    return NotFound(context + ": no such GPU (indexes start at 0)");
  }
  nvml::Device device = nullptr;
  nvml::Return rc = api_.device_get_handle_by_index(static_cast<unsigned int>(index), &device);
  if (rc == nvml::kErrorInvalidArgument) {
    unsigned int count = 0;
    static_cast<void>(api_.device_get_count(&count));
    return NotFound(context + ": no such GPU (NVML sees " + std::to_string(count) + ")");
  }
  if (rc != nvml::kSuccess) {
    return CallError(rc, context, "nvmlDeviceGetHandleByIndex_v2");
  }
  return device;
}

std::optional<std::string> NvmlGpuBackend::DeviceString(nvml::DeviceGetStringFn fn,
                                                        std::string_view call,
                                                        nvml::Device device,
                                                        CounterReader& reader) const {
  char buffer[nvml::kDeviceUuidBufferSize > nvml::kDeviceNameBufferSize
                  ? nvml::kDeviceUuidBufferSize
                  : nvml::kDeviceNameBufferSize] = {};
  if (!reader.Check(call, fn(device, buffer, sizeof(buffer)), CounterReader::Need::kRequired)) {
    return std::nullopt;
  }
  return nvml::StringIn(buffer, sizeof(buffer));
}

Result<std::string> NvmlGpuBackend::DeviceString(nvml::DeviceGetStringFn fn,
                                                 std::string_view call,
                                                 nvml::Device device,
                                                 std::string_view context) const {
  CounterReader reader;
  std::optional<std::string> value = DeviceString(fn, call, device, reader);
  if (!value) {
    return ReaderError(reader, context);
  }
  return *std::move(value);
}

std::vector<GpuProcessSample> NvmlGpuBackend::Processes(nvml::Device device,
                                                        const std::vector<MigSample>& mig,
                                                        CounterReader& reader) const {
  auto infos = reader.ReadList<nvml::ProcessInfo>(
      "nvmlDeviceGetComputeRunningProcesses_v3",
      [&](nvml::ProcessInfo* buffer, unsigned int* count) {
        return api_.device_get_compute_running_processes(device, count, buffer);
      });
  std::vector<GpuProcessSample> out;
  for (const nvml::ProcessInfo& info : infos.value_or(std::vector<nvml::ProcessInfo>{})) {
    GpuProcessSample process;
    process.pid = info.pid;
    if (info.used_gpu_memory != nvml::kValueNotAvailable) {
      process.used_memory_mib = static_cast<std::int64_t>(info.used_gpu_memory / kBytesPerMib);
    }
    // NVML names the process's instances (0xFFFFFFFF outside MIG): attribute it to its device.
    for (const MigSample& m : mig) {
      if (static_cast<unsigned int>(m.instance.gpu_instance_id) == info.gpu_instance_id &&
          static_cast<unsigned int>(m.instance.compute_instance_id) == info.compute_instance_id) {
        process.mig_uuid = m.instance.uuid;
      }
    }
    out.push_back(std::move(process));
  }
  return out;
}

void NvmlGpuBackend::AddProcessUtilization(nvml::Device device,
                                           const std::string& uuid,
                                           CounterReader& reader,
                                           std::vector<GpuProcessSample>& processes) {
  if (api_.device_get_process_utilization == nullptr || processes.empty()) {
    return;  // nothing to annotate; the time stamp stays, so no period is skipped
  }
  unsigned long long& seen_us = process_util_seen_us_[uuid];  // NOLINT(google-runtime-int)
  auto samples = reader.ReadList<nvml::ProcessUtilizationSample>(
      "nvmlDeviceGetProcessUtilization",
      [&](nvml::ProcessUtilizationSample* buffer, unsigned int* count) {
        return api_.device_get_process_utilization(device, buffer, count, seen_us);
      });
  if (!samples) {
    return;
  }
  // The driver keeps a buffer of periods: keep each process's newest one only.
  std::map<unsigned int, nvml::ProcessUtilizationSample> newest;
  for (const nvml::ProcessUtilizationSample& s : *samples) {
    auto [it, inserted] = newest.try_emplace(s.pid, s);
    if (!inserted && s.time_stamp_us > it->second.time_stamp_us) {
      it->second = s;
    }
    seen_us = std::max(seen_us, s.time_stamp_us);
  }
  for (GpuProcessSample& process : processes) {
    if (auto it = newest.find(process.pid); it != newest.end()) {
      process.sm_util_pct = static_cast<int>(it->second.sm_util);
      process.mem_util_pct = static_cast<int>(it->second.mem_util);
    }
  }
}

Result<std::vector<Gpu>> NvmlGpuBackend::Discover() {
  std::lock_guard<std::mutex> lock(mu_);
  unsigned int count = 0;
  nvml::Return rc = api_.device_get_count(&count);
  if (rc != nvml::kSuccess) {
    return CallError(rc, "nvml", "nvmlDeviceGetCount_v2");
  }

  std::vector<Gpu> gpus;
  std::vector<nvml::Device> devices;
  gpus.reserve(count);
  for (unsigned int i = 0; i < count; ++i) {
    std::string context = "GPU " + std::to_string(i);
    GF_ASSIGN_OR_RETURN(nvml::Device device, Handle(static_cast<int>(i)));
    devices.push_back(device);
    Gpu gpu;
    unsigned int nvml_index = i;
    rc = api_.device_get_index(device, &nvml_index);
    if (rc != nvml::kSuccess) {
      return CallError(rc, context, "nvmlDeviceGetIndex");
    }
    gpu.index = static_cast<int>(nvml_index);
    GF_ASSIGN_OR_RETURN(std::string uuid,
                        DeviceString(api_.device_get_uuid, "nvmlDeviceGetUUID", device, context));
    gpu.uuid = GpuUuid(std::move(uuid));
    known_uuids_[gpu.index] = gpu.uuid.value();
    context += " (" + gpu.uuid.value() + ")";
    GF_ASSIGN_OR_RETURN(std::string name,
                        DeviceString(api_.device_get_name, "nvmlDeviceGetName", device, context));

    nvml::Memory memory{};
    rc = api_.device_get_memory_info(device, &memory);
    if (rc == nvml::kSuccess) {
      gpu.memory_mib = static_cast<std::int64_t>(memory.total / kBytesPerMib);
    } else if (rc == nvml::kErrorGpuIsLost || rc == nvml::kErrorResetRequired) {
      // Still named, so list it: the controller must learn that this card is gone.
      gpu.health = GpuHealth::kFailed;
      gpu.health_cause = "NVML: " + ErrorText(rc);
    } else {
      return CallError(rc, context, "nvmlDeviceGetMemoryInfo");
    }
    gpu.model = NormalizeGpuModel(name, gpu.memory_mib);
    if (gpu.health != GpuHealth::kFailed) {
      NvmlMig mig = ReadNvmlMig(api_.mig, device);
      gpu.mig_enabled = mig.enabled;
      gpu.mig_profiles = ProfileNames(mig.profiles);
      for (MigSample& m : mig.devices) {
        gpu.mig_instances.push_back(std::move(m.instance));
      }
    }
    gpus.push_back(std::move(gpu));
  }
  ReadNvmlTopology(api_.topology, devices, gpus);
  return gpus;
}

void NvmlGpuBackend::ReadCounters(nvml::Device device,
                                  CounterReader& reader,
                                  GpuSample& sample) const {
  nvml::Memory memory{};
  if (reader.Check("nvmlDeviceGetMemoryInfo",
                   api_.device_get_memory_info(device, &memory),
                   CounterReader::Need::kRequired)) {
    sample.memory_total_mib = static_cast<std::int64_t>(memory.total / kBytesPerMib);
    sample.memory_used_mib = static_cast<std::int64_t>(memory.used / kBytesPerMib);
    sample.memory_free_mib = static_cast<std::int64_t>(memory.free / kBytesPerMib);
  }
  if (auto u = reader.Read<nvml::Utilization>(
          "nvmlDeviceGetUtilizationRates", api_.device_get_utilization_rates, device)) {
    sample.util_gpu_pct = static_cast<int>(u->gpu);
    sample.util_memory_pct = static_cast<int>(u->memory);
  }
  sample.temperature_c = AsInt(reader.Read<unsigned int>(
      "nvmlDeviceGetTemperature", api_.device_get_temperature, device, nvml::kTemperatureGpu));
  sample.memory_temperature_c = MemoryTemperature(device, reader);
  sample.power_mw = AsInt64(
      reader.Read<unsigned int>("nvmlDeviceGetPowerUsage", api_.device_get_power_usage, device));
  sample.power_limit_mw = AsInt64(reader.Read<unsigned int>(
      "nvmlDeviceGetEnforcedPowerLimit", api_.device_get_enforced_power_limit, device));
  sample.energy_mj = AsInt64(reader.Read<unsigned long long>(  // NOLINT(google-runtime-int)
      "nvmlDeviceGetTotalEnergyConsumption",
      api_.device_get_total_energy_consumption,
      device));
  sample.sm_clock_mhz = AsInt(reader.Read<unsigned int>(
      "nvmlDeviceGetClockInfo", api_.device_get_clock_info, device, nvml::kClockSm));
  sample.mem_clock_mhz = AsInt(reader.Read<unsigned int>(
      "nvmlDeviceGetClockInfo", api_.device_get_clock_info, device, nvml::kClockMem));
  sample.pcie_tx_kbps = AsInt64(reader.Read<unsigned int>("nvmlDeviceGetPcieThroughput",
                                                          api_.device_get_pcie_throughput,
                                                          device,
                                                          nvml::kPcieUtilTxBytes));
  sample.pcie_rx_kbps = AsInt64(reader.Read<unsigned int>("nvmlDeviceGetPcieThroughput",
                                                          api_.device_get_pcie_throughput,
                                                          device,
                                                          nvml::kPcieUtilRxBytes));
  sample.fan_speed_pct =
      AsInt(reader.Read<unsigned int>("nvmlDeviceGetFanSpeed", api_.device_get_fan_speed, device));
  if (auto pstate = reader.Read<int>(
          "nvmlDeviceGetPerformanceState", api_.device_get_performance_state, device);
      pstate && *pstate >= 0 && *pstate < nvml::kPstateUnknown) {
    sample.pstate = *pstate;
  }
  ReadHealthCounters(device, reader, sample);
}

void NvmlGpuBackend::ReadHealthCounters(nvml::Device device,
                                        CounterReader& reader,
                                        GpuSample& sample) const {
  sample.pcie_replay_count = AsInt64(reader.Read<unsigned int>(
      "nvmlDeviceGetPcieReplayCounter", api_.device_get_pcie_replay_counter, device));
  auto ecc = [&](int error_type, int counter_type) {
    return AsInt64(reader.Read<unsigned long long>(  // NOLINT(google-runtime-int)
        "nvmlDeviceGetTotalEccErrors",
        api_.device_get_total_ecc_errors,
        device,
        error_type,
        counter_type));
  };
  sample.ecc.volatile_corrected = ecc(nvml::kMemoryErrorCorrected, nvml::kVolatileEcc);
  sample.ecc.volatile_uncorrected = ecc(nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc);
  sample.ecc.aggregate_corrected = ecc(nvml::kMemoryErrorCorrected, nvml::kAggregateEcc);
  sample.ecc.aggregate_uncorrected = ecc(nvml::kMemoryErrorUncorrected, nvml::kAggregateEcc);
  sample.remapped_rows = ReadRemappedRows(device, reader);
  sample.throttle_reasons = reader.Read<unsigned long long>(  // NOLINT(google-runtime-int)
      api_.clocks_event_reasons_call,
      api_.device_get_clocks_event_reasons,
      device);
}

std::optional<int> NvmlGpuBackend::MemoryTemperature(nvml::Device device,
                                                     CounterReader& reader) const {
  if (api_.device_get_field_values == nullptr || reader.Failed()) {
    return std::nullopt;
  }
  nvml::FieldValue field{};
  field.field_id = nvml::kFieldMemoryTemperature;
  constexpr std::string_view kCall = "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)";
  // The call's own code, then the field's: GDDR boards answer the field with NOT_SUPPORTED.
  if (!reader.Check(kCall, api_.device_get_field_values(device, 1, &field)) ||
      !reader.Check(kCall, field.nvml_return)) {
    return std::nullopt;
  }
  return FieldAsInt(field);
}

std::optional<RemappedRows> NvmlGpuBackend::ReadRemappedRows(nvml::Device device,
                                                             CounterReader& reader) const {
  if (api_.device_get_remapped_rows == nullptr || reader.Failed()) {
    return std::nullopt;
  }
  unsigned int correctable = 0;
  unsigned int uncorrectable = 0;
  unsigned int pending = 0;
  unsigned int failure = 0;
  if (!reader.Check("nvmlDeviceGetRemappedRows",
                    api_.device_get_remapped_rows(
                        device, &correctable, &uncorrectable, &pending, &failure))) {
    return std::nullopt;
  }
  return RemappedRows{static_cast<std::int64_t>(correctable),
                      static_cast<std::int64_t>(uncorrectable),
                      pending != 0,
                      failure != 0};
}

void NvmlGpuBackend::WatchXids() {
  if (api_.event_set_create == nullptr || api_.device_register_events == nullptr ||
      api_.event_set_wait == nullptr || api_.event_set_free == nullptr) {
    return;  // a driver without event sets: XIDs are not reported
  }
  std::lock_guard<std::mutex> lock(mu_);
  unsigned int count = 0;
  if (api_.device_get_count(&count) != nvml::kSuccess ||
      api_.event_set_create(&xid_events_) != nvml::kSuccess) {
    xid_events_ = nullptr;  // a failed create leaves no set to free
    return;
  }
  for (unsigned int i = 0; i < count; ++i) {
    nvml::Device device = nullptr;
    char uuid[nvml::kDeviceUuidBufferSize] = {};
    // A GPU that cannot be registered (NOT_SUPPORTED, lost) just reports no XIDs.
    if (api_.device_get_handle_by_index(i, &device) == nvml::kSuccess &&
        api_.device_get_uuid(device, uuid, sizeof(uuid)) == nvml::kSuccess &&
        api_.device_register_events(device, nvml::kEventTypeXidCriticalError, xid_events_) ==
            nvml::kSuccess) {
      watched_[device] = nvml::StringIn(uuid, sizeof(uuid));
    }
  }
  if (watched_.empty()) {
    static_cast<void>(api_.event_set_free(xid_events_));
    xid_events_ = nullptr;
  }
}

void NvmlGpuBackend::DrainXids() {
  if (xid_events_ == nullptr) {
    return;
  }
  // Bounded, so a storm of events cannot keep one sample from finishing; the rest wait.
  constexpr int kMaxEventsPerDrain = 256;
  constexpr std::size_t kMaxPendingPerGpu = 1024;  // a GPU never sampled must not grow forever
  for (int i = 0; i < kMaxEventsPerDrain; ++i) {
    nvml::EventData event{};
    // Timeout 0: never wait. TIMEOUT means "none left"; any other error, try next sample.
    if (api_.event_set_wait(xid_events_, &event, 0) != nvml::kSuccess) {
      return;
    }
    if ((event.event_type & nvml::kEventTypeXidCriticalError) == 0) {
      continue;
    }
    std::string uuid;
    if (auto it = watched_.find(event.device); it != watched_.end()) {
      uuid = it->second;
    } else if (event.device != nullptr) {
      char buffer[nvml::kDeviceUuidBufferSize] = {};
      if (api_.device_get_uuid(event.device, buffer, sizeof(buffer)) == nvml::kSuccess) {
        uuid = nvml::StringIn(buffer, sizeof(buffer));
      }
    }
    std::vector<XidEvent>& pending = pending_xids_[uuid];  // "": a GPU NVML could not name
    if (pending.size() < kMaxPendingPerGpu) {
      pending.push_back(XidEvent{static_cast<int>(event.event_data), clock_.Now()});
    }
  }
}

std::vector<XidEvent> NvmlGpuBackend::TakeXids(const std::string& uuid) {
  auto it = pending_xids_.find(uuid);
  if (it == pending_xids_.end()) {
    return {};
  }
  std::vector<XidEvent> xids = std::move(it->second);
  pending_xids_.erase(it);
  return xids;
}

Result<GpuSample> NvmlGpuBackend::FailedSample(int index,
                                               GpuSample sample,
                                               const CounterReader& reader,
                                               std::string_view context) {
  if (reader.Failure() == nvml::kErrorGpuIsLost) {
    if (sample.uuid.value().empty()) {
      if (auto it = known_uuids_.find(index); it != known_uuids_.end()) {
        sample.uuid = GpuUuid(it->second);
      }
    }
    if (!sample.uuid.value().empty()) {
      GpuSample lost;
      lost.uuid = std::move(sample.uuid);
      lost.time = sample.time;
      lost.lost = true;
      // The XIDs that came before the loss (79: fell off the bus) say why: keep them.
      lost.xids = TakeXids(lost.uuid.value());
      return lost;
    }
  }
  return ReaderError(reader, context);
}

Result<GpuSample> NvmlGpuBackend::Sample(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string context = "GPU " + std::to_string(index);
  GpuSample sample;
  sample.time = clock_.Now();
  DrainXids();

  CounterReader reader;
  nvml::Device device = nullptr;
  nvml::Return rc =
      index < 0 ? nvml::kErrorInvalidArgument
                : api_.device_get_handle_by_index(static_cast<unsigned int>(index), &device);
  if (rc == nvml::kErrorGpuIsLost) {
    reader.Fail("nvmlDeviceGetHandleByIndex_v2", rc, "");
    return FailedSample(index, std::move(sample), reader, context);
  }
  if (rc != nvml::kSuccess) {
    // Handle words the error (an unknown index, with NVML's count) or, in a race, succeeds.
    GF_ASSIGN_OR_RETURN(device, Handle(index));
  }
  std::optional<std::string> uuid =
      DeviceString(api_.device_get_uuid, "nvmlDeviceGetUUID", device, reader);
  if (!uuid) {
    return FailedSample(index, std::move(sample), reader, context);
  }
  sample.uuid = GpuUuid(*uuid);
  known_uuids_[index] = *uuid;
  context += " (" + *uuid + ")";

  ReadCounters(device, reader, sample);
  if (!reader.Failed()) {
    NvmlMig mig = ReadNvmlMig(api_.mig, device);
    sample.mig_enabled = mig.enabled;
    sample.mig = std::move(mig.devices);
  }
  sample.processes = Processes(device, sample.mig, reader);
  AddProcessUtilization(device, *uuid, reader, sample.processes);
  if (reader.Failed()) {
    return FailedSample(index, std::move(sample), reader, context);
  }
  sample.xids = TakeXids(*uuid);
  return sample;
}

Status NvmlGpuBackend::ApplyMigLayout(int index, const std::vector<std::string>& profiles) {
  std::lock_guard<std::mutex> lock(mu_);
  GF_ASSIGN_OR_RETURN(nvml::Device device, Handle(index));
  return ApplyNvmlMigLayout(api_.mig, device, index, profiles);
}

}  // namespace gf
