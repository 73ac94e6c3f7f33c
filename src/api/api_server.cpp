// The only file of the server that includes Boost.Beast (it compiles slowly).
#include "api/api_server.h"

#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/beast_names.h"
#include "api/routes.h"
#include "api/sse.h"

namespace gf {
namespace {

constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;
constexpr std::size_t kMaxDrainBytes = 64 << 20;
constexpr std::chrono::milliseconds kMaxLinger{5000};

std::string UserName(std::uint32_t uid) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr) {
    return found->pw_name;
  }
  return "uid" + std::to_string(uid);
}

HttpRequest ToHttpRequest(http::request<http::string_body>&& req) {
  HttpRequest out;
  out.method = static_cast<std::string>(req.method_string());
  out.target = static_cast<std::string>(req.target());
  for (const auto& field : req) {
    out.headers.emplace_back(static_cast<std::string>(field.name_string()),
                             static_cast<std::string>(field.value()));
  }
  out.body = std::move(req.body());
  return out;
}

bool IsHttpParseError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

// HTTP/1.1 chunked framing (RFC 9112, 7.1): the size in hex, CRLF, the bytes, CRLF. A watch
// stream is chunked so that the server can end it cleanly (kLastChunk) and a client can tell
// that from a lost connection.
void AppendChunk(std::string& out, std::string_view data) {
  std::array<char, 16> size{};
  const auto [end, ec] = std::to_chars(size.data(), size.data() + size.size(), data.size(), 16);
  out.append(size.data(), end);
  out += "\r\n";
  out += data;
  out += "\r\n";
}
constexpr std::string_view kLastChunk = "0\r\n\r\n";

// The status line and headers of a watch stream; its body is chunks of server-sent events.
std::string WatchStreamHeader() {
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  res.set(http::field::server, "gpufleet/" + std::string(ApiVersion()));
  res.chunked(true);
  res.keep_alive(false);  // the stream ends with the connection
  std::ostringstream out;
  out << res.base();
  return out.str();
}

// A JSON response body as one `data:` line: JsonResponse ends it with a newline.
std::string WithoutTrailingNewline(std::string body) {
  while (!body.empty() && body.back() == '\n') {
    body.pop_back();
  }
  return body;
}

}  // namespace

// A connection, as the server's registry sees it: something Stop() can close.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void PostClose() = 0;
};

// All of the server but its public face. Not named ApiServer::Impl directly because sessions
// (in an anonymous namespace) need to name it and Impl is private.
class ApiServerState {
 public:
  ApiServerState(ClusterService& service, ApiServerOptions options)
      : router_(service, options.telemetry), options_(std::move(options)) {}

  Status Start();
  void Stop();
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  int tcp_port() const { return tcp_port_.load(); }

  // Registry of live sessions, so that Stop() can close idle keep-alive connections.
  bool Register(SessionBase* s, std::weak_ptr<SessionBase> w) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      return false;
    }
    sessions_[s] = std::move(w);
    return true;
  }
  void Unregister(SessionBase* s) {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(s);
  }

  // Counts open watches against options().max_watches; false when the limit is reached.
  bool AcquireWatch() {
    int open = watches_.load();
    while (open < options_.max_watches) {
      if (watches_.compare_exchange_weak(open, open + 1)) {
        return true;
      }
    }
    return false;
  }
  void ReleaseWatch() { watches_.fetch_sub(1); }

  // Accessors, named after their fields.
  // NOLINTBEGIN(readability-identifier-naming)
  const Router& router() const { return router_; }
  const ApiServerOptions& options() const { return options_; }
  net::io_context& ioc() { return ioc_; }
  net::thread_pool& workers() { return *workers_; }
  // NOLINTEND(readability-identifier-naming)

 private:
  Status StartUnix(const std::string& path);
  Status StartTcp();
  void AcceptUnix();
  void AcceptTcp();
  void RunIo();

  Router router_;
  ApiServerOptions options_;
  net::io_context ioc_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::unique_ptr<net::thread_pool> workers_;
  std::optional<LocalProtocol::acceptor> unix_acceptor_;
  std::optional<Tcp::acceptor> tcp_acceptor_;
  std::vector<std::thread> io_threads_;
  std::atomic<int> tcp_port_{-1};
  std::atomic<int> watches_{0};  // open watch streams, bounded by options_.max_watches
  std::optional<ino_t> socket_inode_;  // the socket file we created, removed on Stop if ours
  bool started_ = false;  // owner thread only
  bool stopped_ = false;  // owner thread only

  std::mutex mu_;
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions_;  // GUARDED_BY(mu_)
};

namespace {

// One open watch, counted against the server's limit until destroyed.
class WatchSlot {
 public:
  explicit WatchSlot(ApiServerState& server) : server_(server) {}
  ~WatchSlot() { server_.ReleaseWatch(); }
  WatchSlot(const WatchSlot&) = delete;
  WatchSlot& operator=(const WatchSlot&) = delete;

 private:
  ApiServerState& server_;
};

// The state of a connection that became a watch stream (see api_server.h).
struct WatchState {
  WatchState(ApiServerState& server, std::string event_name, HttpRequest list_request)
      : slot(server), event(std::move(event_name)), request(std::move(list_request)) {}
  WatchSlot slot;
  std::string event;    // "jobs", "gpus", "nodes"
  HttpRequest request;  // re-handled on every tick: the plain GET of the list
  bool streaming = false;  // the 200 header has gone out
  std::string last_data;   // the list as last sent
  std::chrono::steady_clock::time_point last_write{};
  std::string out;  // the bytes being written
};

// One HTTP connection. Every member is touched only on the socket's strand, except `caller_`,
// which the worker handling the connection's single in-flight request resolves and reads (the
// post to the pool and back orders those accesses; a watch, too, has one re-read in flight at
// a time).
template <typename Socket>
class Session final : public SessionBase,
                      public std::enable_shared_from_this<Session<Socket>> {
 public:
  Session(ApiServerState& server, Socket socket, Caller caller)
      : server_(server),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        caller_(std::move(caller)) {}
  ~Session() override { server_.Unregister(this); }

  void Begin() {
    if (!server_.Register(this, this->shared_from_this())) {
      Close();
      return;
    }
    ReadRequest();
  }

  void PostClose() override {
    net::post(socket_.get_executor(), [self = this->shared_from_this()] { self->Close(); });
  }

 private:
  void ArmTimer(std::chrono::milliseconds timeout) {
    timer_.expires_after(timeout);
    timer_.async_wait([weak = this->weak_from_this()](beast::error_code ec) {
      if (auto self = weak.lock(); self && !ec) {
        self->Close();  // the read or write below completes with operation_aborted
      }
    });
  }

  void ReadRequest() {
    parser_.emplace();
    parser_->body_limit(kMaxRequestBodyBytes);
    parser_->header_limit(kMaxHeaderBytes);
    ArmTimer(server_.options().read_timeout);
    http::async_read(socket_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                       self->OnRead(ec);
                     });
  }

  void OnRead(beast::error_code ec) {
    timer_.cancel();
    if (ec == http::error::body_limit) {
      close_after_ = true;
      Write(ErrorResponse(413, "resource_exhausted",
                          "request body exceeds the limit of 1 MiB (1048576 bytes)"));
      return;
    }
    if (ec == http::error::header_limit) {
      close_after_ = true;
      Write(ErrorResponse(431, "invalid_argument", "request headers exceed 16 KiB"));
      return;
    }
    if (ec && IsHttpParseError(ec) && ec != http::error::end_of_stream &&
        ec != http::error::partial_message) {
      close_after_ = true;
      Write(ErrorResponse(400, "invalid_argument", "malformed HTTP request: " + ec.message()));
      return;
    }
    if (ec) {  // peer closed, timed out, reset, or Stop(): nothing to answer
      Close();
      return;
    }
    keep_alive_ = parser_->get().keep_alive();
    HttpRequest request = ToHttpRequest(parser_->release());
    if (const auto event = server_.router().WatchEvent(request)) {
      StartWatch(std::string(*event), std::move(request));
      return;
    }
    Dispatch(std::move(request));
  }

  void Dispatch(HttpRequest request) {
    HandleOnWorker(std::move(request),
                   [](Session& self, HttpResponse response) { self.Write(std::move(response)); });
  }

  // Hands the request to a worker (ClusterService calls block) and comes back to the strand
  // with `then(session, response)`. The work guard keeps the io threads alive until then.
  template <typename Then>
  void HandleOnWorker(HttpRequest request, Then then) {
    net::post(server_.workers(), [self = this->shared_from_this(), request = std::move(request),
                                  then = std::move(then),
                                  work = net::make_work_guard(server_.ioc())]() mutable {
      HttpResponse response = self->HandleNow(request);
      net::post(self->socket_.get_executor(),
                [self, then = std::move(then), response = std::move(response)]() mutable {
                  then(*self, std::move(response));
                });
    });
  }

  HttpResponse HandleNow(const HttpRequest& request) {  // on a worker
    try {
      if (caller_.authenticated && caller_.user.empty()) {
        caller_.user = UserName(caller_.uid);  // may block on NSS: not on I/O
      }
      return server_.router().Handle(caller_, request);
    } catch (...) {  // thread boundary: Router::Handle already catches; this is belt and braces
      HttpResponse response;
      response.status = 500;
      response.body = "{\"error\":{\"code\":\"internal\",\"message\":\"internal error\"}}\n";
      return response;
    }
  }

  // ---- Watch streams (api_server.h). One step at a time on the strand: re-read on a worker,
  // write if changed (or a keepalive is due), wait watch_interval on the timer, again. ----

  void StartWatch(std::string event, HttpRequest request) {
    if (!server_.AcquireWatch()) {
      Write(ErrorResponse(429, "resource_exhausted",
                          "too many open watches (the limit is " +
                              std::to_string(server_.options().max_watches) +
                              "); close one, or poll the plain GET instead"));
      return;
    }
    watch_.emplace(server_, std::move(event), std::move(request));
    WatchTick();
  }

  void WatchTick() {
    HandleOnWorker(watch_->request, [](Session& self, HttpResponse response) {
      self.OnWatchRead(std::move(response));
    });
  }

  void OnWatchRead(HttpResponse response) {
    if (!socket_.is_open()) {
      return;  // the client left, or Stop(), while the worker read
    }
    if (!watch_->streaming && response.status != 200) {
      watch_.reset();  // the plain GET's answer (401, 400, 503...); the connection goes on
      Write(std::move(response));
      return;
    }
    std::string out;
    if (!watch_->streaming) {
      watch_->streaming = true;
      out = WatchStreamHeader();
      Drain();  // the client sends nothing more: a pending read notices when it leaves
    }
    if (response.status != 200) {  // e.g. the controller became unavailable: say so and end
      AppendChunk(out, FormatSseEvent("error", WithoutTrailingNewline(std::move(response.body))));
      out += kLastChunk;
      WatchWrite(std::move(out), true);
      return;
    }
    std::string data = WithoutTrailingNewline(std::move(response.body));
    if (out.empty() && data == watch_->last_data) {  // unchanged: at most a keepalive
      if (std::chrono::steady_clock::now() - watch_->last_write <
          server_.options().watch_keepalive) {
        ScheduleWatchTick();
        return;
      }
      AppendChunk(out, FormatSseComment("keepalive"));
    } else {
      AppendChunk(out, FormatSseEvent(watch_->event, data));
      watch_->last_data = std::move(data);
    }
    WatchWrite(std::move(out), false);
  }

  void WatchWrite(std::string bytes, bool last) {
    watch_->out = std::move(bytes);
    watch_->last_write = std::chrono::steady_clock::now();
    ArmTimer(server_.options().read_timeout);  // a client that stops reading is dropped
    net::async_write(socket_, net::buffer(watch_->out),
                     [self = this->shared_from_this(), last](beast::error_code ec, std::size_t) {
                       self->timer_.cancel();
                       if (ec || last) {
                         self->Close();
                       } else {
                         self->ScheduleWatchTick();
                       }
                     });
  }

  void ScheduleWatchTick() {
    timer_.expires_after(server_.options().watch_interval);
    timer_.async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (!ec && self->socket_.is_open()) {
        self->WatchTick();
      }
    });
  }

  void Write(HttpResponse response) {
    response_.emplace(static_cast<http::status>(response.status), 11);
    for (auto& [name, value] : response.headers) {
      response_->set(name, value);
    }
    response_->set(http::field::server, "gpufleet/" + std::string(ApiVersion()));
    response_->body() = std::move(response.body);
    response_->keep_alive(keep_alive_ && !close_after_);
    response_->prepare_payload();
    ArmTimer(server_.options().read_timeout);
    http::async_write(socket_, *response_,
                      [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                        self->OnWrite(ec);
                      });
  }

  void OnWrite(beast::error_code ec) {
    timer_.cancel();
    if (ec) {
      Close();
    } else if (close_after_) {
      Linger();
    } else if (!keep_alive_) {
      socket_.shutdown(net::socket_base::shutdown_send, ec);
      Close();
    } else {
      ReadRequest();
    }
  }

  // After an early answer (413, 400) the client may still be sending; closing now could reset
  // the connection and destroy our answer before the client reads it. So: half-close, read and
  // discard for a bounded time and size, then close.
  void Linger() {
    beast::error_code ec;
    socket_.shutdown(net::socket_base::shutdown_send, ec);
    ArmTimer(std::min(server_.options().read_timeout, kMaxLinger));
    Drain();
  }

  void Drain() {
    socket_.async_read_some(
        net::buffer(drain_buf_),
        [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
          self->drained_ += n;
          if (ec || self->drained_ > kMaxDrainBytes) {
            self->Close();
          } else {
            self->Drain();
          }
        });
  }

  void Close() {
    beast::error_code ec;
    timer_.cancel();
    socket_.close(ec);
  }

  ApiServerState& server_;
  Socket socket_;
  net::steady_timer timer_;
  Caller caller_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  bool keep_alive_ = true;
  bool close_after_ = false;
  std::size_t drained_ = 0;
  std::array<char, 16384> drain_buf_{};
  std::optional<WatchState> watch_;  // set while the connection is a watch
};

// The kernel's word on who is at the other end of a Unix socket.
std::optional<Caller> PeerCaller(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return std::nullopt;
  }
  Caller caller;
  caller.authenticated = true;
  caller.uid = cred.uid;
  caller.gid = cred.gid;
  return caller;  // user name is resolved on a worker thread (getpwuid_r may block)
}

Status PrepareSocketPath(const std::string& path) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return InvalidArgument("unix socket path is too long (" + std::to_string(path.size()) +
                           " bytes, the limit is " +
                           std::to_string(sizeof(sockaddr_un::sun_path) - 1) + "): " + path);
  }
  std::error_code fec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, fec);
    if (fec) {
      return IoError("cannot create " + parent.string() + " for the API socket: " + fec.message());
    }
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return OkStatus();  // nothing there
  }
  if (!S_ISSOCK(st.st_mode)) {
    return MakeError(ErrorCode::kAlreadyExists,
                     path + " exists and is not a socket; remove it or choose another --socket");
  }
  net::io_context probe_ioc;
  LocalProtocol::socket probe(probe_ioc);
  beast::error_code ec;
  probe.connect(LocalProtocol::endpoint(path), ec);
  if (!ec) {
    return MakeError(ErrorCode::kAlreadyExists, "another gpufleet is listening on " + path);
  }
  if (::unlink(path.c_str()) != 0) {  // stale: left by a server that died
    const int err = errno;
    return IoError("cannot remove stale socket " + path + ": " + ErrnoText(err));
  }
  return OkStatus();
}

}  // namespace

Status ApiServerState::StartUnix(const std::string& path) {
  GF_TRY(PrepareSocketPath(path));
  beast::error_code ec;
  unix_acceptor_.emplace(net::make_strand(ioc_));  // strand: Stop() closes it from outside
  unix_acceptor_->open(LocalProtocol(), ec);
  if (!ec) {
    unix_acceptor_->bind(LocalProtocol::endpoint(path), ec);
  }
  if (!ec) {
    unix_acceptor_->listen(net::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return IoError("cannot listen on " + path + ": " + ec.message());
  }
  // 0666: anyone local may connect; SO_PEERCRED, not the file mode, says who they are.
  if (::chmod(path.c_str(), 0666) != 0) {
    const int err = errno;
    return IoError("cannot chmod 0666 " + path + ": " + ErrnoText(err));
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    socket_inode_ = st.st_ino;
  }
  return OkStatus();
}

Status ApiServerState::StartTcp() {
  beast::error_code ec;
  const auto address = net::ip::make_address(options_.tcp_host, ec);
  if (ec) {
    return InvalidArgument("tcp host: must be an IP address, got \"" + options_.tcp_host + "\"");
  }
  const Tcp::endpoint endpoint(address, static_cast<std::uint16_t>(options_.tcp_port));
  tcp_acceptor_.emplace(net::make_strand(ioc_));
  tcp_acceptor_->open(endpoint.protocol(), ec);
  if (!ec) {
    tcp_acceptor_->set_option(net::socket_base::reuse_address(true), ec);
  }
  if (!ec) {
    tcp_acceptor_->bind(endpoint, ec);
  }
  if (!ec) {
    tcp_acceptor_->listen(net::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    return IoError("cannot listen on " + options_.tcp_host + ":" +
                   std::to_string(options_.tcp_port) + ": " + ec.message());
  }
  tcp_port_ = tcp_acceptor_->local_endpoint().port();
  return OkStatus();
}

void ApiServerState::AcceptUnix() {
  unix_acceptor_->async_accept(
      net::make_strand(ioc_), [this](beast::error_code ec, LocalProtocol::socket socket) {
        if (!unix_acceptor_->is_open()) {
          return;  // Stop()
        }
        if (!ec) {
          if (auto caller = PeerCaller(socket.native_handle())) {
            std::make_shared<Session<LocalProtocol::socket>>(*this, std::move(socket), *caller)
                ->Begin();
          }
        }
        AcceptUnix();
      });
}

void ApiServerState::AcceptTcp() {
  tcp_acceptor_->async_accept(net::make_strand(ioc_), [this](beast::error_code ec,
                                                             Tcp::socket socket) {
    if (!tcp_acceptor_->is_open()) {
      return;
    }
    if (!ec) {
      // No identity on plain TCP until tokens land: job routes answer 401.
      std::make_shared<Session<Tcp::socket>>(*this, std::move(socket), Caller{})->Begin();
    }
    AcceptTcp();
  });
}

void ApiServerState::RunIo() {
  // Thread boundary: a handler that throws must not end the thread (or the process).
  for (;;) {
    try {
      ioc_.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpufleet api: I/O thread caught: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "gpufleet api: I/O thread caught an unknown exception\n");
    }
  }
}

Status ApiServerState::Start() {
  if (started_ || stopped_) {
    return FailedPrecondition("API server already started (it cannot be restarted)");
  }
  if (options_.tcp_port > 65535) {
    return InvalidArgument("tcp port: must be 0..65535 (or negative for none), got " +
                           std::to_string(options_.tcp_port));
  }
  Status status = OkStatus();
  if (options_.unix_socket_path) {
    status = StartUnix(*options_.unix_socket_path);
  }
  if (status.ok() && options_.tcp_port >= 0) {
    status = StartTcp();
  }
  if (!status.ok()) {
    unix_acceptor_.reset();
    tcp_acceptor_.reset();
    if (socket_inode_) {
      ::unlink(options_.unix_socket_path->c_str());
      socket_inode_.reset();
    }
    tcp_port_ = -1;
    return status;
  }
  started_ = true;
  workers_ = std::make_unique<net::thread_pool>(
      static_cast<std::size_t>(std::max(1, options_.worker_threads)));
  work_.emplace(ioc_.get_executor());
  if (unix_acceptor_) {
    AcceptUnix();
  }
  if (tcp_acceptor_) {
    AcceptTcp();
  }
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    io_threads_.emplace_back([this] { RunIo(); });
  }
  return OkStatus();
}

void ApiServerState::Stop() {
  if (!started_) {
    return;
  }
  started_ = false;
  stopped_ = true;
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& [raw, weak] : sessions_) {
      if (auto session = weak.lock()) {
        live.push_back(std::move(session));
      }
    }
  }
  if (unix_acceptor_) {
    net::post(unix_acceptor_->get_executor(), [this] {
      beast::error_code ec;
      unix_acceptor_->close(ec);
    });
  }
  if (tcp_acceptor_) {
    net::post(tcp_acceptor_->get_executor(), [this] {
      beast::error_code ec;
      tcp_acceptor_->close(ec);
    });
  }
  for (auto& session : live) {
    session->PostClose();
  }
  live.clear();
  // The io threads return once every connection has finished (in-flight handlers hold work).
  work_.reset();
  for (auto& thread : io_threads_) {
    thread.join();
  }
  io_threads_.clear();
  workers_->join();
  struct stat st {};
  if (socket_inode_ && ::stat(options_.unix_socket_path->c_str(), &st) == 0 &&
      st.st_ino == *socket_inode_) {
    ::unlink(options_.unix_socket_path->c_str());  // only if no successor replaced it
  }
  socket_inode_.reset();
}

class ApiServer::Impl final : public ApiServerState {
 public:
  using ApiServerState::ApiServerState;
};

ApiServer::ApiServer(ClusterService& service, ApiServerOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}

ApiServer::~ApiServer() { Stop(); }

Status ApiServer::Start() { return impl_->Start(); }

int ApiServer::tcp_port() const { return impl_->tcp_port(); }

void ApiServer::Stop() { impl_->Stop(); }

}  // namespace gf
