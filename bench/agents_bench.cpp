// gf_agents_bench: what a fleet of node agents costs `gpufleet server` (issue #6: "controller
// with 1,000 simulated agents reporting every 5 s: controller CPU and RSS").
//
// One process multiplexes N simulated agents (default 1,000) on one Boost.Asio thread, each
// speaking the real agent link (service/agent_link.h, JSON of api/agent_wire.h) to a real
// `gpufleet server` over its Unix socket (the bench runs as root: no node token needed there):
//   1. hello with 8 simulated GPUs (the sim backend's inventory, as `gpufleet agent --gpus
//      sim:8xH100-80GB` sends it) on the agent's own keep-alive connection;
//   2. GET /api/v1/agent/commands on a second connection, held open and read for the whole run;
//   3. every --interval (5 s, the server's default heartbeat) a POST /api/v1/agent/reports with
//      a fresh round of 8 GPU samples from the sim backend; the agents' first reports are
//      spread evenly over one interval, so the load is steady, as in a fleet that joined over
//      time.
// After every agent has joined and one interval has passed, it measures for a fixed window
// (--seconds, 60; --quick 15): the server's CPU (utime + stime of /proc/PID/stat over the
// window, as % of one core), its VmRSS and VmHWM, the round-trip latency of the reports sent
// in the window, and this process's own CPU (it shares the machine). At the end the server must
// list every node up, or the bench fails. How to build and run it: bench/README.md.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include "api/agent_wire.h"
#include "api/api_client.h"
#include "core/clock.h"
#include "gpu/gpu_backend.h"

#include "bench_support.h"
#include "gpufleet_instance.h"

namespace gf::bench {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using Socket = asio::local::stream_protocol::socket;
using namespace std::chrono_literals;

struct Options {
  std::string gpufleet = GF_GPUFLEET_PATH;
  int agents = 1000;
  int seconds = 60;
  int interval_s = 5;
  int gpus = 8;
};

void Progress(const std::string& line) {
  std::cerr << "gf_agents_bench: " << line << std::endl;
}

// What every simulated agent adds to, on the io thread only (no locking needed).
struct Tally {
  bool in_window = false;
  bool stopping = false;  // the bench closes the connections: their errors are its own
  std::vector<double> window_report_ms;  // round trips of reports sent inside the window
  std::vector<double> hello_ms;
  int joined = 0;
  int reports = 0;
  int report_errors = 0;   // non-2xx answers (e.g. "stale session") and transport errors
  int skipped = 0;         // a report due while the previous one was still in flight
  int streams_closed = 0;  // command streams the server ended
  std::string first_error;
  std::int64_t stream_bytes = 0;

  void Fail(const std::string& what) {
    ++report_errors;
    if (first_error.empty()) {
      first_error = what;
    }
  }
};

// One simulated agent: a sim GPU backend, a keep-alive connection for hello and reports, and
// a connection holding the command stream. Lives on the io thread; kept alive by its handlers.
class SimAgent : public std::enable_shared_from_this<SimAgent> {
 public:
  SimAgent(asio::io_context& io,
           const std::string& socket,
           std::string node,
           std::unique_ptr<GpuBackend> backend,
           Tally& tally,
           std::chrono::seconds interval)
      : endpoint_(socket),
        node_(std::move(node)),
        backend_(std::move(backend)),
        tally_(tally),
        interval_(interval),
        rpc_(io),
        stream_(io),
        timer_(io) {}

  // Connects, says hello, opens the command stream, then reports every interval starting
  // `first_report` from now. `done(ok)` is called once the stream is open (or it failed).
  void Join(std::chrono::milliseconds first_report, std::function<void(bool)> done) {
    joined_cb_ = std::move(done);
    first_report_ = first_report;
    boost::system::error_code ec;
    rpc_.connect(endpoint_, ec);
    if (!ec) {
      stream_.connect(endpoint_, ec);
    }
    if (ec) {
      return Joined(false, "connect: " + ec.message());
    }
    auto body = Hello();
    if (!body.ok()) {
      return Joined(false, body.error().ToString());
    }
    hello_start_ = SteadyClock::now();
    Post("/api/v1/agent/hello", std::move(*body), [self = shared_from_this()](bool ok) {
      self->OnHello(ok);
    });
  }

  void Close() {
    boost::system::error_code ec;
    timer_.cancel();
    rpc_.close(ec);
    stream_.close(ec);
  }

 private:
  Result<std::string> Hello() {
    GF_ASSIGN_OR_RETURN(std::vector<Gpu> gpus, backend_->Discover());
    gpus_ = static_cast<int>(gpus.size());
    AgentHello hello;
    hello.node.name = NodeId(node_);
    hello.node.gpus = std::move(gpus);
    hello.node.cpus = 64;
    hello.node.memory_mib = std::int64_t{512} * 1024;
    hello.node.gpu_backend = backend_->Describe();
    hello.run_dir = "/var/lib/gpufleet/agent/jobs";
    return WireDump(AgentHelloToJson(hello));
  }

  Result<std::string> ReportBody() {
    AgentReportBatch batch;
    for (int i = 0; i < gpus_; ++i) {
      GF_ASSIGN_OR_RETURN(GpuSample sample, backend_->Sample(i));
      batch.samples.push_back(std::move(sample));
    }
    batch.done_seq = 0;  // no job is ever sent to these agents: no command to carry out
    return WireDump(AgentReportBatchToJson(batch));
  }

  void Joined(bool ok, const std::string& error = "") {
    if (!ok && tally_.first_error.empty()) {
      tally_.first_error = node_ + ": " + error;
    }
    if (joined_cb_) {
      auto cb = std::move(joined_cb_);
      joined_cb_ = nullptr;
      cb(ok);
    }
  }

  void OnHello(bool ok) {
    if (!ok) {
      return Joined(
          false, "hello: HTTP " + std::to_string(response_.result_int()) + " " + response_.body());
    }
    tally_.hello_ms.push_back(SecondsSince(hello_start_) * 1000);
    auto session = AgentSessionFromJson(nlohmann::json::parse(response_.body(), nullptr, false));
    if (!session.ok()) {
      return Joined(false, "hello's answer: " + session.error().ToString());
    }
    session_ = session->session;
    OpenStream();
  }

  // GET the command stream; then read it until the server ends it (bytes are only counted:
  // these agents get no commands, only keepalives).
  void OpenStream() {
    auto req = std::make_shared<http::request<http::empty_body>>(
        http::verb::get,
        "/api/v1/agent/commands?session=" + std::to_string(session_) + "&after=0",
        11);
    req->set(http::field::host, "localhost");
    http::async_write(stream_, *req, [self = shared_from_this(), req](auto ec, std::size_t) {
      if (ec) {
        return self->Joined(false, "command stream: " + ec.message());
      }
      self->ReadStream(true);
    });
  }

  void ReadStream(bool first) {
    stream_.async_read_some(
        asio::buffer(stream_buf_), [self = shared_from_this(), first](auto ec, std::size_t n) {
          if (ec) {
            if (self->tally_.stopping) {
              return;
            }
            ++self->tally_.streams_closed;
            return self->Joined(false, "command stream ended: " + ec.message());
          }
          self->tally_.stream_bytes += static_cast<std::int64_t>(n);
          if (first) {
            const std::string_view head(self->stream_buf_.data(), n);
            if (!head.starts_with("HTTP/1.1 200")) {
              return self->Joined(
                  false, "command stream refused: " + std::string(head.substr(0, head.find('\r'))));
            }
            ++self->tally_.joined;
            self->Joined(true);
            self->ScheduleReport(self->first_report_);
          }
          self->ReadStream(false);
        });
  }

  void ScheduleReport(std::chrono::milliseconds after) {
    timer_.expires_after(after);
    timer_.async_wait([self = shared_from_this()](auto ec) {
      if (ec) {
        return;  // cancelled: the bench is stopping
      }
      self->ScheduleReport(self->interval_);
      self->SendReport();
    });
  }

  void SendReport() {
    if (in_flight_) {
      ++tally_.skipped;
      return;
    }
    auto body = ReportBody();
    if (!body.ok()) {
      return tally_.Fail(node_ + ": samples: " + body.error().ToString());
    }
    const bool in_window = tally_.in_window;
    const auto start = SteadyClock::now();
    Post("/api/v1/agent/reports?session=" + std::to_string(session_),
         std::move(*body),
         [self = shared_from_this(), start, in_window](bool ok) {
           if (self->tally_.stopping) {
             return;  // cut off by the bench's own Close()
           }
           ++self->tally_.reports;
           if (!ok) {
             return self->tally_.Fail(self->node_ + ": report: HTTP " +
                                      std::to_string(self->response_.result_int()) + " " +
                                      self->response_.body());
           }
           if (in_window && self->tally_.in_window) {
             self->tally_.window_report_ms.push_back(SecondsSince(start) * 1000);
           }
         });
  }

  // POSTs `body` on the keep-alive connection; `done(true)` on a 2xx answer (in response_).
  void Post(const std::string& target, std::string body, const std::function<void(bool)>& done) {
    in_flight_ = true;
    auto req = std::make_shared<http::request<http::string_body>>(http::verb::post, target, 11);
    req->set(http::field::host, "localhost");
    req->set(http::field::content_type, "application/json");
    req->body() = std::move(body);
    req->prepare_payload();
    http::async_write(rpc_, *req, [self = shared_from_this(), req, done](auto ec, std::size_t) {
      if (ec) {
        self->in_flight_ = false;
        self->response_ = {};
        self->response_.body() = "write: " + ec.message();
        return done(false);
      }
      self->response_ = {};
      http::async_read(
          self->rpc_, self->rpc_buf_, self->response_, [self, done](auto read_ec, std::size_t) {
            self->in_flight_ = false;
            if (read_ec) {
              self->response_.body() = "read: " + read_ec.message();
              return done(false);
            }
            done(self->response_.result_int() / 100 == 2);
          });
    });
  }

  asio::local::stream_protocol::endpoint endpoint_;
  std::string node_;
  std::unique_ptr<GpuBackend> backend_;
  Tally& tally_;
  std::chrono::seconds interval_;
  Socket rpc_;
  Socket stream_;
  asio::steady_timer timer_;
  boost::beast::flat_buffer rpc_buf_;
  http::response<http::string_body> response_;
  std::array<char, 4096> stream_buf_{};
  std::int64_t session_ = 0;
  int gpus_ = 0;
  bool in_flight_ = false;
  std::chrono::milliseconds first_report_{0};
  SteadyClock::time_point hello_start_;
  std::function<void(bool)> joined_cb_;
};

// ---- the server's figures, from /proc ----

struct ProcSample {
  double cpu_s = 0;          // utime + stime
  std::int64_t rss_kib = 0;  // VmRSS
  std::int64_t hwm_kib = 0;  // VmHWM
  int threads = 0;
  int fds = 0;
};

Result<ProcSample> ReadProc(pid_t pid) {
  const std::string base = "/proc/" + std::to_string(pid);
  std::ifstream stat_file(base + "/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  if (close == std::string::npos) {
    return Unavailable("cannot read " + base + "/stat: is the server still running?");
  }
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string w; fields >> w;) {
    f.push_back(w);
  }
  ProcSample s;
  const auto ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  s.cpu_s = (std::stod(f.at(11)) + std::stod(f.at(12))) / ticks;  // fields 14, 15
  s.threads = std::stoi(f.at(17));                                // field 20
  std::ifstream status(base + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) {
      s.rss_kib = std::stoll(line.substr(6));
    } else if (line.starts_with("VmHWM:")) {
      s.hwm_kib = std::stoll(line.substr(6));
    }
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(base + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    ++s.fds;
  }
  return s;
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

// Each agent holds two connections, and so does the server for it: both need ~2 fds per agent
// on top of their own. The server inherits this process's limit.
Status RaiseFileLimit(int agents) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  const rlim_t need = static_cast<rlim_t>(agents) * 2 + 256;
  if (lim.rlim_cur >= need) {
    return OkStatus();
  }
  if (lim.rlim_max < need) {
    return Unavailable("RLIMIT_NOFILE: " + std::to_string(agents) + " agents need " +
                       std::to_string(need) + " file descriptors, the hard limit is " +
                       std::to_string(lim.rlim_max) + "; raise it (ulimit -Hn) or pass --agents");
  }
  lim.rlim_cur = need;
  setrlimit(RLIMIT_NOFILE, &lim);
  Progress("raised RLIMIT_NOFILE to " + std::to_string(need) + " (the server inherits it)");
  return OkStatus();
}

// ---- the run ----

struct Fleet {
  SystemClock clock;  // the sim backends keep a reference to it
  asio::io_context io;
  Tally tally;
  std::vector<std::shared_ptr<SimAgent>> agents;
};

// Says hello for every agent, at most `kJoinConcurrency` at a time (a fleet that boots at once
// would do the same, with backoff); their first reports are spread over one interval.
Status JoinAll(const Options& options, const GpufleetInstance& gf, Fleet& fleet) {
  constexpr int kJoinConcurrency = 32;
  for (int i = 0; i < options.agents; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "sim-agent-%04d", i + 1);
    GF_ASSIGN_OR_RETURN(auto backend,
                        MakeGpuBackend("sim:" + std::to_string(options.gpus) + "xH100-80GB",
                                       fleet.clock,
                                       std::string(name) + ":bench"));
    fleet.agents.push_back(std::make_shared<SimAgent>(fleet.io,
                                                      gf.socket(),
                                                      name,
                                                      std::move(backend),
                                                      fleet.tally,
                                                      std::chrono::seconds(options.interval_s)));
  }
  int next = 0, failed = 0, outstanding = 0;
  const auto interval_ms = options.interval_s * 1000;
  std::function<void()> start_next = [&] {
    while (outstanding < kJoinConcurrency && next < options.agents) {
      const int i = next++;
      ++outstanding;
      const std::chrono::milliseconds first(static_cast<std::int64_t>(interval_ms) * i /
                                            options.agents);
      fleet.agents[static_cast<std::size_t>(i)]->Join(first, [&](bool ok) {
        --outstanding;
        failed += ok ? 0 : 1;
        start_next();
      });
    }
  };
  asio::post(fleet.io, start_next);
  const Deadline deadline(std::chrono::seconds(120));
  while ((next < options.agents || outstanding > 0) && failed == 0 && !deadline.Expired()) {
    fleet.io.run_for(100ms);
  }
  if (failed > 0 || fleet.tally.joined < options.agents) {
    return Unavailable(std::to_string(fleet.tally.joined) + " of " +
                       std::to_string(options.agents) +
                       " agents joined; first error: " + fleet.tally.first_error);
  }
  return OkStatus();
}

void RunFor(Fleet& fleet, std::chrono::seconds window) {
  const auto end = SteadyClock::now() + window;
  while (SteadyClock::now() < end && !Interrupted()) {
    fleet.io.run_for(100ms);
  }
}

// Every agent's node must be listed and up: no report was lost for longer than the timeout.
Result<int> NodesUp(const GpufleetInstance& gf) {
  ApiClient client(gf.socket());
  GF_ASSIGN_OR_RETURN(const nlohmann::json nodes, client.CallJson("GET", "/api/v1/nodes"));
  int up = 0;
  for (const auto& n : nodes["nodes"]) {
    up += n.value("state", std::string()) == "up" ? 1 : 0;
  }
  return up;
}

struct Figures {
  ProcSample before, after;
  double window_s = 0;
  double self_cpu_s = 0;
  ProcSample idle;  // the server before any agent joined
  double join_s = 0;
  int nodes_up = 0;
};

double Mib(std::int64_t kib) {
  return static_cast<double>(kib) / 1024;
}

std::string Fmt(const char* format, double a, double b = 0) {
  char buf[200];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

void PrintTable(const Options& options, const Fleet& fleet, const Figures& f) {
  const double cpu_pct = 100 * (f.after.cpu_s - f.before.cpu_s) / f.window_s;
  const Stats lat = Summarize(fleet.tally.window_report_ms);
  const Stats hello = Summarize(fleet.tally.hello_ms);
  const double reports_per_s = static_cast<double>(lat.count) / f.window_s;
  std::cout
      << "\n| measure | value | note |\n|---|---|---|\n"
      << "| agents | " << options.agents << " × " << options.gpus << " sim GPUs | "
      << "one report each every " << options.interval_s << " s with " << options.gpus
      << " GPU samples; each holds its command stream open |\n"
      << "| window | " << Fmt("%.1f s", f.window_s) << " | "
      << Fmt("%.0f reports answered in it (%.0f/s)", static_cast<double>(lat.count), reports_per_s)
      << " |\n"
      << "| server CPU | " << Fmt("%.1f %% of one core", cpu_pct) << " | "
      << Fmt("utime+stime over the window; %.2f ms of CPU per report",
             10 * cpu_pct / std::max(1.0, reports_per_s))
      << " |\n"
      << "| server RSS | "
      << Fmt("%.1f MiB (peak %.1f MiB)", Mib(f.after.rss_kib), Mib(f.after.hwm_kib)) << " | "
      << Fmt("VmRSS / VmHWM at the end; before any agent: %.1f MiB", Mib(f.idle.rss_kib)) << " |\n"
      << "| server threads, fds | " << f.after.threads << ", " << f.after.fds
      << " | fds: two connections per agent |\n"
      << "| report round trip | " << Fmt("p50 %.2f ms, p99 %.2f ms", lat.median, lat.p99) << " | "
      << Fmt("max %.1f ms; POST /api/v1/agent/reports over the Unix socket", lat.max) << " |\n"
      << "| join | " << Fmt("%.1f s for all agents", f.join_s) << " | "
      << Fmt("hello p50 %.1f ms, p99 %.1f ms (32 at a time)", hello.median, hello.p99) << " |\n"
      << "| nodes up at the end | " << f.nodes_up << " of " << options.agents << " | |\n"
      << "| errors | " << fleet.tally.report_errors << " failed, " << fleet.tally.skipped
      << " skipped, " << fleet.tally.streams_closed << " streams ended | "
      << (fleet.tally.first_error.empty() ? "" : "first: " + fleet.tally.first_error) << " |\n"
      << "| this bench's own CPU | " << Fmt("%.1f %% of one core", 100 * f.self_cpu_s / f.window_s)
      << " | the simulated agents share the machine with the server |\n";
  std::cout << "\ncores: " << std::thread::hardware_concurrency() << "\n";
}

Status Run(const Options& options) {
  GF_TRY(RaiseFileLimit(options.agents));
  InstanceOptions io;
  io.gpufleet = options.gpufleet;
  io.topology = Topology::kServer;
  GF_ASSIGN_OR_RETURN(auto gf, GpufleetInstance::Start(io));
  Figures f;
  GF_ASSIGN_OR_RETURN(f.idle, ReadProc(gf->server_pid()));
  Fleet fleet;
  Progress("joining " + std::to_string(options.agents) + " agents");
  const auto join_start = SteadyClock::now();
  GF_TRY(JoinAll(options, *gf, fleet));
  f.join_s = SecondsSince(join_start);
  Progress(Fmt("joined in %.1f s; one interval to settle", f.join_s));
  RunFor(fleet, std::chrono::seconds(options.interval_s));
  Progress("measuring for " + std::to_string(options.seconds) + " s");
  GF_ASSIGN_OR_RETURN(f.before, ReadProc(gf->server_pid()));
  const double self_before = SelfCpuSeconds();
  const auto start = SteadyClock::now();
  fleet.tally.in_window = true;
  RunFor(fleet, std::chrono::seconds(options.seconds));
  fleet.tally.in_window = false;
  f.window_s = SecondsSince(start);
  GF_ASSIGN_OR_RETURN(f.after, ReadProc(gf->server_pid()));
  f.self_cpu_s = SelfCpuSeconds() - self_before;
  GF_ASSIGN_OR_RETURN(f.nodes_up, NodesUp(*gf));
  fleet.tally.stopping = true;
  for (auto& agent : fleet.agents) {
    agent->Close();
  }
  fleet.io.run_for(500ms);
  GF_TRY(gf->Stop());
  if (Interrupted()) {
    return Unavailable("interrupted");
  }
  PrintTable(options, fleet, f);
  if (f.nodes_up < options.agents) {
    return Unavailable(std::to_string(options.agents - f.nodes_up) +
                       " nodes were not up at the end (reports too late for --node-timeout?)");
  }
  return OkStatus();
}

int Main(int argc, char** argv) {
  Options options;
  bool quick = false;
  CLI::App app{"gf_agents_bench: gpufleet server's CPU and RSS with many agents reporting"};
  app.add_option("--gpufleet", options.gpufleet, "the gpufleet binary")->capture_default_str();
  app.add_option("--agents", options.agents, "simulated agents")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  auto* seconds = app.add_option("--seconds", options.seconds, "measurement window")
                      ->check(CLI::Range(1, 3600))
                      ->capture_default_str();
  app.add_option("--interval", options.interval_s, "seconds between an agent's reports")
      ->check(CLI::Range(1, 60))
      ->capture_default_str();
  app.add_option("--gpus", options.gpus, "simulated GPUs per agent")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_flag("--quick", quick, "a 15 s window");
  CLI11_PARSE(app, argc, argv);
  if (quick && seconds->count() == 0) {
    options.seconds = 15;
  }
  if (access(options.gpufleet.c_str(), X_OK) != 0) {
    std::cerr << "gf_agents_bench: " << options.gpufleet
              << " is not an executable; build the gpufleet target or pass --gpufleet PATH\n";
    return 2;
  }
  InstallInterruptHandler();
  if (Status s = Run(options); !s.ok()) {
    std::cerr << "gf_agents_bench: " << s.error().ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace gf::bench

int main(int argc, char** argv) {
  return gf::bench::RunMain("gf_agents_bench", [&] { return gf::bench::Main(argc, argv); });
}
