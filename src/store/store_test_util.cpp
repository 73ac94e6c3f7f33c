#include "store/store_test_util.h"

#include <cstdio>
#include <sstream>
#include <system_error>

#include <gtest/gtest.h>
#include <stdlib.h>

namespace gf::testing {
namespace {

// `s` quoted, with non-printable bytes as \xNN so that two different byte strings never print
// alike.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

template <typename T, typename Fn>
std::string Opt(const std::optional<T>& v, Fn&& show) {
  return v.has_value() ? show(*v) : std::string("none");
}

std::string Ms(Time t) {
  return std::to_string(ToUnixMillis(t));
}

// Every bit of the value: two doubles that differ print differently.
std::string Exact(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

}  // namespace

TempDir::TempDir() {
  std::string pattern = (std::filesystem::path(::testing::TempDir()) / "gf_store_XXXXXX").string();
  char* made = ::mkdtemp(pattern.data());
  if (made == nullptr) {
    ADD_FAILURE() << "mkdtemp " << pattern << " failed";
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string DebugString(const Job& job) {
  std::ostringstream o;
  const JobSpec& s = job.spec;
  o << "Job{id=" << job.id.value() << " uid=" << job.owner.uid << " gid=" << job.owner.gid
    << " user=" << Quote(job.owner.user) << " name=" << Quote(s.name) << " argv=[";
  for (const auto& a : s.argv) {
    o << Quote(a) << ",";
  }
  o << "] workdir=" << Quote(s.workdir) << " env=[";
  for (const auto& [k, v] : s.env) {
    o << Quote(k) << "=" << Quote(v) << ",";
  }
  o << "] gpus=" << s.request.gpus << " gpu_milli=" << s.request.gpu_milli
    << " gpu_memory_mib=" << s.request.gpu_memory_mib << " mig=" << Quote(s.request.mig_profile)
    << " cpus=" << s.request.cpus << " memory_mib=" << s.request.memory_mib
    << " gpu_type=" << Opt(s.request.gpu_type, Quote) << " priority=" << ToString(s.priority)
    << " team=" << Quote(s.team)
    << " time_limit=" << Opt(s.time_limit, [](auto d) { return std::to_string(d.count()); })
    << " checkpoint_signal=" << s.checkpoint_signal << " preemptible=" << job.preemptible
    << " node_labels={";
  for (const auto& [k, v] : s.request.node_labels) {
    o << Quote(k) << ":" << Quote(v) << ",";
  }
  o << "} after=[";
  for (const Dependency& d : s.after) {
    o << d.job.value() << ":" << ToString(d.kind) << ",";
  }
  o << "] array="
    << Opt(s.array,
           [](const ArrayTask& a) {
             return std::to_string(a.array_job.value()) + "[" + std::to_string(a.index) + "]%" +
                    (a.max_running ? std::to_string(*a.max_running) : "none");
           })
    << " budget_approved=" << job.budget_approved << " held_by=" << Quote(job.held_by)
    << " requeue=" << s.requeue << " interactive=" << s.interactive << " idle_reap=" << s.idle_reap
    << " last_checkpoint=" << Opt(job.last_checkpoint, Ms) << " state=" << ToString(job.state)
    << " allocation="
    << Opt(job.allocation,
           [](const Allocation& a) {
             std::string r = Quote(a.node.value()) + ":[";
             for (const auto& g : a.gpus) {
               r += Quote(g.value()) + ",";
             }
             return r + "] milli=" + std::to_string(a.gpu_milli) +
                    " memory_mib=" + std::to_string(a.gpu_memory_mib) +
                    " mig=" + Quote(a.mig.value()) + " cpus=" + std::to_string(a.cpus) +
                    " host_memory_mib=" + std::to_string(a.memory_mib);
           })
    << " submit=" << Ms(job.submit_time) << " start=" << Opt(job.start_time, Ms)
    << " end=" << Opt(job.end_time, Ms)
    << " exit_code=" << Opt(job.exit_code, [](int c) { return std::to_string(c); })
    << " reason=" << Quote(job.reason)
    << " pid=" << Opt(job.pid, [](std::int64_t p) { return std::to_string(p); }) << " usage="
    << Opt(job.usage,
           [](const JobUsage& u) {
             return "{" + std::to_string(u.samples) + " " + Exact(u.mean_util_pct) + " " +
                    std::to_string(u.peak_util_pct) + " " + std::to_string(u.peak_memory_mib) +
                    " " + std::to_string(u.energy_mj) + "}";
           })
    << " host_usage="
    << Opt(job.host_usage,
           [](const HostUsage& u) {
             return "{" + std::to_string(u.cpu_ms) + " " + std::to_string(u.peak_memory_kib) + "}";
           })
    << "}";
  return o.str();
}

std::string DebugString(const Node& node) {
  std::ostringstream o;
  o << "Node{name=" << Quote(node.name.value()) << " gpus=[";
  for (const Gpu& g : node.gpus) {
    o << "{" << g.index << " " << Quote(g.uuid.value()) << " " << Quote(g.model) << " "
      << g.memory_mib << " " << ToString(g.health) << " " << Quote(g.health_cause) << " "
      << ToString(g.sharing) << "->"
      << (g.sharing_next.has_value() ? ToString(*g.sharing_next) : "none") << "},";
  }
  o << "] cpus=" << node.cpus << " memory_mib=" << node.memory_mib << " labels={";
  for (const auto& [k, v] : node.labels) {
    o << Quote(k) << ":" << Quote(v) << ",";
  }
  o << "} state=" << ToString(node.state) << " state_reason=" << Quote(node.state_reason)
    << " backend=" << Quote(node.gpu_backend) << " last_seen=" << Ms(node.last_seen) << "}";
  return o.str();
}

std::string DebugString(const Event& e) {
  std::ostringstream o;
  o << "Event{seq=" << e.seq << " time=" << Ms(e.time)
    << " job=" << Opt(e.job, [](JobId j) { return std::to_string(j.value()); })
    << " kind=" << Quote(e.kind) << " actor=" << Quote(e.actor) << " message=" << Quote(e.message)
    << "}";
  return o.str();
}

std::string DebugString(const GpuMinute& m) {
  std::ostringstream o;
  o << "GpuMinute{node=" << Quote(m.node.value()) << " uuid=" << Quote(m.uuid.value())
    << " minute=" << Ms(m.minute)
    << " job=" << Opt(m.job, [](JobId j) { return std::to_string(j.value()); })
    << " user=" << Quote(m.user) << " team=" << Quote(m.team) << " samples=" << m.samples
    << " allocated_ms=" << m.allocated_ms << " util_mean=" << Exact(m.util_mean_pct)
    << " util_max=" << m.util_max_pct << " memory_max=" << m.memory_used_max_mib
    << " power_mean=" << Exact(m.power_mean_w) << " energy=" << m.energy_mj
    << " health=" << ToString(m.health) << "}";
  return o.str();
}

std::string DebugString(const ApiToken& t) {
  std::ostringstream o;
  o << "ApiToken{id=" << Quote(t.id) << " secret_hash=" << Quote(t.secret_hash)
    << " kind=" << ToString(t.kind) << " subject=" << Quote(t.subject) << " uid=" << t.uid
    << " gid=" << t.gid << " role=" << ToString(t.role) << " description=" << Quote(t.description)
    << " created=" << Ms(t.created) << " expires=" << Opt(t.expires, Ms)
    << " revoked=" << Opt(t.revoked, Ms) << "}";
  return o.str();
}

ApiToken SampleToken(const std::string& id) {
  // 64 lowercase hex digits that differ per id, as a SHA-256 would.
  std::string hash;
  for (std::size_t i = 0; hash.size() < 64; ++i) {
    hash += "0123456789abcdef"[(id.size() * 7 + i * 5 + static_cast<unsigned char>(id[0])) % 16];
  }
  return ApiToken{.id = id,
                  .secret_hash = hash,
                  .kind = TokenKind::kUser,
                  .subject = "zoë",
                  .uid = 4242,
                  .gid = 100,
                  .role = Role::kOperator,
                  .description = "laptop of zoë, 'quoted' \"too\"",
                  .created = FromUnixMillis(1'700'000'300'000),
                  .expires = FromUnixMillis(1'800'000'000'000),
                  .revoked = std::nullopt};
}

Job MinimalJob(std::int64_t id, std::uint32_t uid) {
  Job job;
  job.id = JobId(id);
  job.owner = Owner{uid, uid, "user" + std::to_string(uid)};
  job.spec.name = "job" + std::to_string(id);
  job.spec.argv = {"true"};
  job.spec.workdir = "/tmp";
  job.submit_time = FromUnixMillis(1'700'000'000'000 + id % 1'000'000);
  return job;
}

Job FullJob(std::int64_t id) {
  Job job = MinimalJob(id, 4242);
  job.owner = Owner{4242, 100, "zoë"};
  job.spec.name = "训练-ζ 🚀 run";
  job.spec.argv = {"python3",
                   "train.py",
                   "--msg",
                   "it's a \"quoted\" arg with spaces",
                   "back\\slash",
                   "new\nline\ttab",
                   "",
                   "ünï"};
  job.spec.workdir = "/home/zoë/my project";
  job.spec.env = {{"A", "1"}, {"EQ", "x=y=z"}, {"EMPTY", ""}, {"A", "dup keeps order"}};
  job.spec.request = JobRequest{4, "H100-80GB"};
  job.spec.priority = PriorityClass::kHigh;
  job.spec.team = "vision";
  job.spec.time_limit = std::chrono::seconds(3 * 24 * 3600);
  job.state = JobState::kCompleted;
  job.allocation = Allocation{
      NodeId("gpu-node-07"),
      {GpuUuid("GPU-aaaa-1"), GpuUuid("GPU-bbbb-2"), GpuUuid("GPU-cccc-3"), GpuUuid("GPU-dddd-4")}};
  job.start_time = job.submit_time + Millis(1500);
  job.end_time = job.submit_time + Millis(3'600'000);
  job.exit_code = 137;
  job.reason = "killed by signal 9 (out of memory)";
  job.pid = 4'000'000'123;
  job.spec.checkpoint_signal = 10;  // SIGUSR1: not the default, so a dropped column shows
  job.preemptible = true;
  job.spec.request.node_labels = {{"rack", "r12"}, {"zone", "eu-wést"}, {"empty", ""}};
  job.spec.after = {Dependency{.job = JobId(3), .kind = DependencyKind::kOk},
                    Dependency{.job = JobId(5), .kind = DependencyKind::kAny}};
  job.spec.array = ArrayTask{.array_job = JobId(id - 1), .index = 99, .max_running = 4};
  job.budget_approved = true;
  job.last_checkpoint = job.start_time.value() + Millis(1'234'567);
  job.spec.requeue = false;     // not the default (schema v7)
  job.spec.interactive = true;  // nor these (schema v8)
  job.spec.idle_reap = false;
  job.spec.gang = GangMember{.gang_job = JobId(id - 2), .rank = 2, .size = 3};  // schema v9
  job.spec.request.nodes = 3;
  // Every field distinct and the mean not a short decimal, so a swapped or rounded column shows.
  job.usage = JobUsage{.samples = 14'400,
                       .mean_util_pct = 87.123456789012345,
                       .peak_util_pct = 100,
                       .peak_memory_mib = 80'123,
                       .energy_mj = 9'876'543'210};
  job.host_usage = HostUsage{.cpu_ms = 7'452'001, .peak_memory_kib = 3'221'225};  // schema v14
  return job;
}

Node SampleNode(const std::string& name, int gpus) {
  Node node;
  node.name = NodeId(name);
  for (int i = 0; i < gpus; ++i) {
    Gpu g;
    g.index = i;
    g.uuid = GpuUuid("GPU-" + name + "-" + std::to_string(i));
    g.model = "H100-80GB";
    g.memory_mib = 81'559;
    node.gpus.push_back(g);
  }
  node.cpus = 96;
  node.memory_mib = 1'048'576;
  node.labels = {{"rack", "r12"}, {"zone", "eu-west"}};
  node.gpu_backend = "sim:" + std::to_string(gpus) + "xH100-80GB";
  node.last_seen = FromUnixMillis(1'700'000'100'000);
  return node;
}

Event SampleEvent(std::optional<JobId> job, const std::string& kind) {
  Event e;
  e.time = FromUnixMillis(1'700'000'200'000);
  e.job = job;
  e.kind = kind;
  e.actor = "scheduler";
  e.message = kind + " happened";
  return e;
}

GpuMinute SampleGpuMinute(const std::string& node, const std::string& uuid, int minutes) {
  GpuMinute m;
  m.node = NodeId(node);
  m.uuid = GpuUuid(uuid);
  m.minute = FromUnixMillis(1'700'000'040'000) + std::chrono::minutes(minutes);
  m.job = JobId(7);
  m.user = "zoë";
  m.team = "vision";
  m.samples = 60;
  m.allocated_ms = 45'000;  // the job started a quarter into the minute
  m.util_mean_pct = 42.5 + minutes / 3.0;
  m.util_max_pct = 97;
  m.memory_used_max_mib = 40'960 + minutes;
  m.power_mean_w = 312.25 + minutes / 7.0;
  m.energy_mj = 18'735'000 + minutes;
  m.health = GpuHealth::kDegraded;
  return m;
}

}  // namespace gf::testing
