#include "executor/process_tree.h"

#include <charconv>
#include <cstring>
#include <string>
#include <unordered_map>

#include <dirent.h>
#include <unistd.h>

namespace gf::exec {
namespace {

// Parses the next space-separated integer of `rest`, advancing it.
template <typename T>
bool NextField(std::string_view& rest, T& out) {
  while (!rest.empty() && rest.front() == ' ') {
    rest.remove_prefix(1);
  }
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), out);
  if (ec != std::errc()) {
    return false;
  }
  rest.remove_prefix(static_cast<std::size_t>(ptr - rest.data()));
  return true;
}

bool SkipField(std::string_view& rest) {
  while (!rest.empty() && rest.front() == ' ') {
    rest.remove_prefix(1);
  }
  std::size_t end = rest.find(' ');
  if (end == std::string_view::npos) {
    return false;
  }
  rest.remove_prefix(end);
  return true;
}

}  // namespace

Result<ProcStat> ParseProcStat(std::string_view line) {
  ProcStat st;
  std::size_t open = line.find('(');
  std::size_t close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
      close + 2 >= line.size()) {
    return InvalidArgument("malformed /proc stat line");
  }
  std::string_view head = line.substr(0, open);
  if (!NextField(head, st.pid)) {
    return InvalidArgument("malformed pid in /proc stat line");
  }
  std::string_view rest = line.substr(close + 2);  // field 3 onwards
  st.state = rest.front();
  rest.remove_prefix(1);
  if (!NextField(rest, st.ppid) || !NextField(rest, st.pgrp) || !NextField(rest, st.session)) {
    return InvalidArgument("malformed ppid/pgrp/session in /proc stat line");
  }
  // Fields 7..21 are not needed; field 22 is the start time.
  for (int field = 7; field <= 21; ++field) {
    if (!SkipField(rest)) {
      return InvalidArgument("short /proc stat line");
    }
  }
  if (!NextField(rest, st.start_time)) {
    return InvalidArgument("malformed start time");
  }
  return st;
}

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  Result<std::string> text = ReadWholeFile("/proc/" + std::to_string(pid) + "/stat");
  if (!text.ok()) {
    return std::nullopt;
  }
  Result<ProcStat> st = ParseProcStat(*text);
  if (!st.ok()) {
    return std::nullopt;
  }
  return *st;
}

PidRecord SelfRecord() {
  std::optional<PidRecord> r = RecordOf(::getpid());
  return r.value_or(PidRecord{::getpid(), 0});
}

std::optional<PidRecord> RecordOf(pid_t pid) {
  std::optional<ProcStat> st = ReadProcStat(pid);
  if (!st) {
    return std::nullopt;
  }
  return PidRecord{st->pid, st->start_time};
}

bool IsAlive(const PidRecord& record) {
  if (record.pid <= 0) {
    return false;
  }
  std::optional<ProcStat> st = ReadProcStat(static_cast<pid_t>(record.pid));
  return st && st->state != 'Z' && st->state != 'X' && st->start_time == record.start_time;
}

namespace {

std::vector<ProcStat> AllProcesses() {
  std::vector<ProcStat> all;
  if (DIR* dir = ::opendir("/proc")) {
    // readdir is safe here: glibc locks per stream, and the stream is ours alone.
    while (dirent* e = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe)
      pid_t pid = 0;
      const char* name = e->d_name;
      auto [ptr, ec] = std::from_chars(name, name + std::strlen(name), pid);
      if (ec != std::errc() || *ptr != '\0') {
        continue;
      }
      if (std::optional<ProcStat> st = ReadProcStat(pid)) {
        all.push_back(*st);
      }
    }
    ::closedir(dir);
  }
  return all;
}

}  // namespace

std::vector<ProcStat> ProcessesInGroupOrSession(pid_t id) {
  std::vector<ProcStat> out;
  for (const ProcStat& p : AllProcesses()) {
    if (p.pgrp == id || p.session == id) {
      out.push_back(p);
    }
  }
  return out;
}

namespace {

// True when the NUL-separated `environ` holds `entry` as one whole string.
bool HoldsEntry(std::string_view environ, std::string_view entry) {
  std::size_t at = 0;
  while (at < environ.size()) {
    std::size_t end = environ.find('\0', at);
    if (end == std::string_view::npos) {
      end = environ.size();
    }
    if (environ.substr(at, end - at) == entry) {
      return true;
    }
    at = end + 1;
  }
  return false;
}

}  // namespace

std::vector<ProcStat> ProcessesWithEnvironment(std::string_view entry) {
  std::vector<ProcStat> out;
  for (const ProcStat& p : AllProcesses()) {
    if (p.state == 'Z' || p.state == 'X') {
      continue;
    }
    Result<std::string> environ = ReadWholeFile("/proc/" + std::to_string(p.pid) + "/environ");
    if (environ.ok() && HoldsEntry(*environ, entry)) {
      out.push_back(p);
    }
  }
  return out;
}

std::vector<ProcStat> Descendants(pid_t root) {
  std::unordered_map<pid_t, std::vector<ProcStat>> children;
  for (const ProcStat& p : AllProcesses()) {
    children[p.ppid].push_back(p);
  }
  std::vector<ProcStat> out;
  std::vector<pid_t> frontier{root};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    auto it = children.find(parent);
    if (it == children.end()) {
      continue;
    }
    for (const ProcStat& child : it->second) {
      out.push_back(child);
      frontier.push_back(child.pid);
    }
  }
  return out;
}

std::string SignalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  if (abbrev == nullptr) {
    return "signal " + std::to_string(sig);
  }
  return std::string("SIG") + abbrev;
}

}  // namespace gf::exec
