#include "executor/job_files.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "json/json_text.h"

namespace gf::exec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Error ErrnoError(const std::string& what, const fs::path& path, int err) {
  return IoError(what + " " + path.string() + ": " + ErrnoText(err));
}

Status WriteAll(int fd, std::string_view content, const fs::path& path) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return ErrnoError("cannot write", path, errno);
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return OkStatus();
}

// Makes a rename in `dir` durable. Best effort: some file systems refuse fsync on folders.
void SyncDirectory(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// JSON accessors throw on a wrong type; every parse goes through this to turn that into an Error.
// Only root writes these files (the job folder is 0755 root), so they are not hostile input, but
// they are read with the one parser of outside JSON (json/json_text.h) all the same: a damaged
// file gets the same bounds as a request, and there is no second way to parse.
template <typename T, typename F>
Result<T> ParseJson(std::string_view text, const char* what, F&& build) {
  GF_ASSIGN_OR_RETURN(const json j, ParseJsonText(text, std::string("malformed ") + what));
  try {
    return build(j);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("malformed ") + what + ": " + e.what());
  }
}

}  // namespace

Status WriteFileAtomic(const fs::path& path,
                       std::string_view content,
                       mode_t mode,
                       Durability durability) {
  // The pid in the temporary's name keeps two writers (a shim and an Executor) from sharing it.
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) {
    return ErrnoError("cannot create", tmp, errno);
  }
  const bool sync = durability == Durability::kSynced;
  Status written = WriteAll(fd, content, tmp);
  if (written.ok() && sync && ::fsync(fd) != 0) {
    written = ErrnoError("cannot fsync", tmp, errno);
  }
  ::close(fd);
  if (written.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    written = ErrnoError("cannot rename onto", path, errno);
  }
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  if (sync) {
    SyncDirectory(path.parent_path());
  }
  return OkStatus();
}

Result<std::string> ReadWholeFile(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return NotFound(path.string() + " does not exist");
    }
    return ErrnoError("cannot open", path, errno);
  }
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return ErrnoError("cannot read", path, err);
    }
    if (n == 0) {
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

Status WritePidRecord(const fs::path& path, const PidRecord& record, Durability durability) {
  return WriteFileAtomic(
      path,
      std::to_string(record.pid) + " " + std::to_string(record.start_time) + "\n",
      0644,
      durability);
}

Result<PidRecord> ReadPidRecord(const fs::path& path) {
  GF_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  PidRecord record;
  const char* p = text.data();
  const char* end = p + text.size();
  auto [after_pid, pid_ec] = std::from_chars(p, end, record.pid);
  std::from_chars_result start{after_pid, std::errc::invalid_argument};
  if (pid_ec == std::errc() && after_pid != end && *after_pid == ' ') {
    start = std::from_chars(after_pid + 1, end, record.start_time);
  }
  if (pid_ec != std::errc() || start.ec != std::errc() || record.pid <= 0) {
    return InvalidArgument("malformed pid file " + path.string() + ": '" + text + "'");
  }
  return record;
}

Status WriteExitRecord(const fs::path& path, const ExitRecord& record) {
  json j = {{"exit_code", record.exit_code},
            {"signal", record.signal ? json(*record.signal) : json(nullptr)},
            {"end_ms", record.end_ms},
            {"cause", record.cause}};
  if (record.usage) {
    j["cpu_ms"] = record.usage->cpu_ms;
    j["peak_memory_kib"] = record.usage->peak_memory_kib;
  }
  return WriteFileAtomic(path, j.dump() + "\n", 0644);
}

Result<ExitRecord> ReadExitRecord(const fs::path& path) {
  GF_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  return ParseJson<ExitRecord>(text, "exit.json", [](const json& j) {
    ExitRecord r;
    r.exit_code = j.at("exit_code").get<int>();
    if (!j.at("signal").is_null()) {
      r.signal = j.at("signal").get<int>();
    }
    r.end_ms = j.at("end_ms").get<std::int64_t>();
    r.cause = j.at("cause").get<std::string>();
    // Absent when the shim measured nothing, and in files of shims older than the measure.
    if (j.contains("cpu_ms")) {
      r.usage = HostUsage{.cpu_ms = j.at("cpu_ms").get<std::int64_t>(),
                          .peak_memory_kib = j.at("peak_memory_kib").get<std::int64_t>()};
    }
    return r;
  });
}

Status WriteKillRequest(const fs::path& path, const KillRequest& request) {
  json j = {{"grace_s", request.grace.count()},
            {"cause", request.cause},
            {"signal", request.first_signal}};
  return WriteFileAtomic(path, j.dump() + "\n", 0600);
}

Result<KillRequest> ReadKillRequest(const fs::path& path) {
  GF_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  return ParseJson<KillRequest>(text, "kill.json", [](const json& j) {
    KillRequest r;
    r.grace = std::chrono::seconds(j.at("grace_s").get<std::int64_t>());
    r.cause = j.at("cause").get<std::string>();
    // Absent in files written before checkpoint signals existed: those always meant SIGTERM.
    r.first_signal = j.value("signal", SIGTERM);
    return r;
  });
}

std::string SpecToJson(const ShimSpec& shim_spec) {
  const LaunchSpec& spec = shim_spec.launch;
  json gpus = json::array();
  for (const GpuUuid& g : spec.gpus) {
    gpus.push_back(g.value());
  }
  json env = json::array();
  for (const auto& [k, v] : spec.env) {
    env.push_back({k, v});
  }
  json j = {
      {"job", spec.job.value()},
      {"owner", {{"uid", spec.owner.uid}, {"gid", spec.owner.gid}, {"user", spec.owner.user}}},
      {"argv", spec.argv},
      {"workdir", spec.workdir},
      {"env", env},
      {"name", spec.name},
      {"node", spec.node},
      {"gpus", gpus},
      {"cgroup_root", shim_spec.cgroup_root},
      {"terminal_timeout_s", shim_spec.terminal_timeout.count()}};
  if (spec.array) {
    j["array"] = {{"job", spec.array->array_job.value()}, {"index", spec.array->index}};
  }
  if (spec.cpus > 0 || spec.memory_mib > 0) {  // host limits (issue #24); absent = none
    j["cpus"] = spec.cpus;
    j["memory_mib"] = spec.memory_mib;
  }
  return j.dump(2) + "\n";
}

Result<ShimSpec> SpecFromJson(std::string_view text) {
  return ParseJson<ShimSpec>(text, "spec.json", [](const json& j) {
    ShimSpec shim_spec;
    LaunchSpec& s = shim_spec.launch;
    s.job = JobId(j.at("job").get<std::int64_t>());
    const json& owner = j.at("owner");
    s.owner.uid = owner.at("uid").get<std::uint32_t>();
    s.owner.gid = owner.at("gid").get<std::uint32_t>();
    s.owner.user = owner.at("user").get<std::string>();
    s.argv = j.at("argv").get<std::vector<std::string>>();
    s.workdir = j.at("workdir").get<std::string>();
    for (const json& kv : j.at("env")) {
      s.env.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
    }
    for (const json& g : j.at("gpus")) {
      s.gpus.emplace_back(g.get<std::string>());
    }
    shim_spec.cgroup_root = j.value("cgroup_root", std::string());
    // Absent in files written before interactive jobs: those have no terminal anyway.
    shim_spec.terminal_timeout = std::chrono::seconds(j.value("terminal_timeout_s", 30));
    s.name = j.value("name", std::string());  // absent in files written before issue #23
    s.node = j.value("node", std::string());
    s.cpus = j.value("cpus", 0);  // absent in files written before issue #24: no limits
    s.memory_mib = j.value("memory_mib", std::int64_t{0});
    if (j.contains("array")) {  // absent for a job that is not an array task
      s.array = ArrayTask{.array_job = JobId(j.at("array").at("job").get<std::int64_t>()),
                          .index = j.at("array").at("index").get<int>(),
                          .max_running = std::nullopt};
    }
    return shim_spec;
  });
}

Result<int> OpenLogFile(const fs::path& path, const Owner& owner) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) {
    return ErrnoError("cannot open log", path, errno);
  }
  if (::geteuid() == 0 && ::fchown(fd, owner.uid, owner.gid) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("cannot chown log", path, err);
  }
  return fd;
}

}  // namespace gf::exec
