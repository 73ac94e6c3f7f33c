// The only file of the server that includes Boost.Beast (it compiles slowly).
#include "api/api_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pwd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/agent_wire.h"
#include "api/beast_names.h"
#include "api/client_limits.h"
#include "api/credential_file.h"
#include "api/routes.h"
#include "api/sse.h"

namespace gf {
namespace {

constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;
constexpr std::size_t kMaxDrainBytes = 64 << 20;
constexpr std::chrono::milliseconds kMaxLinger{5000};
// A failed accept pauses its listener this long, doubling up to kMaxAcceptPause.
constexpr std::chrono::milliseconds kFirstAcceptPause{100};
constexpr std::chrono::milliseconds kMaxAcceptPause{1000};
// Connections refused with an answer at once; beyond this many (each lingers to let the client
// read its answer) a refused connection is closed without one.
constexpr int kMaxRefusing = 64;

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

// The first byte of a TLS connection: a handshake record (RFC 8446, 5.1). Anything else on the
// TLS port is a client speaking plain HTTP, which gets a plain answer saying so.
constexpr unsigned char kTlsHandshakeRecord = 0x16;

// The 401 for a bearer token the server refuses; `WWW-Authenticate` says which scheme it wants.
HttpResponse Unauthenticated(std::string_view message) {
  HttpResponse response = ErrorResponse(401, "unauthenticated", message);
  response.headers.emplace_back("WWW-Authenticate", "Bearer");
  return response;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

// The token of an "Authorization: Bearer TOKEN" header; nullopt when there is no such header.
// Errors (the 401's message): another scheme, or no token after "Bearer".
Result<std::optional<std::string>> BearerToken(const HttpRequest& request) {
  const std::optional<std::string> header = FindHeader(request.headers, "Authorization");
  if (!header) {
    return std::optional<std::string>();
  }
  std::string_view value = *header;
  const std::size_t space = value.find(' ');
  const std::string_view scheme = value.substr(0, space);
  if (!EqualsIgnoreCase(scheme, "Bearer")) {
    return InvalidArgument("the Authorization scheme '" + std::string(scheme) +
                           "' is not supported; send \"Authorization: Bearer TOKEN\"");
  }
  value.remove_prefix(space == std::string_view::npos ? value.size() : space);
  while (!value.empty() && value.front() == ' ') {
    value.remove_prefix(1);
  }
  if (value.empty()) {
    return InvalidArgument("\"Authorization: Bearer\" without a token");
  }
  return std::optional<std::string>(std::string(value));
}

// A complete HTTP/1.1 response as bytes, for the one answer written below the TLS layer.
std::string SerializeResponse(const HttpResponse& response) {
  http::response<http::string_body> res{static_cast<http::status>(response.status), 11};
  for (const auto& [name, value] : response.headers) {
    res.set(name, value);
  }
  res.set(http::field::server, "gpufleet/" + std::string(ApiVersion()));
  res.body() = response.body;
  res.keep_alive(false);
  res.prepare_payload();
  std::ostringstream out;
  out << res;
  return out.str();
}

// OpenSSL's words for the last failure, for messages: its error queue when it holds one, else
// what `ec` says.
std::string OpenSslReason(const beast::error_code& ec) {
  std::string reason = ec.message();
  const unsigned long code = ERR_peek_last_error();
  if (code != 0) {
    std::array<char, 256> text{};
    ERR_error_string_n(code, text.data(), text.size());
    reason = text.data();
  }
  ERR_clear_error();
  return reason;
}

// The answer to something a limit refused (client_limits.h): `what` ("too many open
// watches"), the limit, `fix`, and a Retry-After header.
HttpResponse RefusalResponse(std::string_view what,
                             const Refusal& refusal,
                             std::string_view fix = {}) {
  HttpResponse response = ErrorResponse(
      MakeError(refusal.code,
                std::string(what) + ": " + refusal.reason + std::string(fix) + "; retry in " +
                    std::to_string(refusal.retry_after.count()) + " s"));
  response.headers.emplace_back("Retry-After", std::to_string(refusal.retry_after.count()));
  return response;
}

// [api] max_connections 0: three quarters of the open-file limit, so that connections run out
// (and are refused with an answer) before the descriptors the rest of the server needs do.
int ResolveMaxConnections(int configured) {
  if (configured > 0) {
    return configured;
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return 1 << 20;
  }
  const rlim_t share = limit.rlim_cur / 4 * 3;
  return static_cast<int>(std::clamp<rlim_t>(share, 16, 1 << 20));
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
      : router_(service, options.telemetry, options.agent_link),
        options_(std::move(options)),
        owner_uid_(::geteuid()) {}

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

  // The budget of a Unix-socket caller: its uid. Root and the server's own user have no
  // per-client limit: the socket is how they run the server, whoever else is on it.
  ClientKey SocketKey(std::uint32_t uid) const {
    return ClientKey{
        Listener::kSocket, "uid:" + std::to_string(uid), uid == 0 || uid == owner_uid_};
  }

  ApiServerCounts Counts() const {
    ApiServerCounts counts = limits_ ? limits_->Counts() : ApiServerCounts{};
    counts.accept_errors = accept_errors_.load();
    return counts;
  }

  // Refused connections answered now (kMaxRefusing at most); false: close without an answer.
  bool StartRefusing() {
    if (refusing_.fetch_add(1) >= kMaxRefusing) {
      refusing_.fetch_sub(1);
      return false;
    }
    return true;
  }
  void DoneRefusing() { refusing_.fetch_sub(1); }

  // Accessors, named after their fields.
  // NOLINTBEGIN(readability-identifier-naming)
  const Router& router() const { return router_; }
  const ApiServerOptions& options() const { return options_; }
  ClientLimits& limits() { return *limits_; }  // set by Start
  net::io_context& ioc() { return ioc_; }
  net::thread_pool& workers() { return *workers_; }
  // NOLINTEND(readability-identifier-naming)

 private:
  Status StartUnix(const std::string& path);
  Status StartTcp();
  Status LoadTls();
  Status CheckLimits() const;

  // One listener's accept loop, touched only on its acceptor's strand.
  struct AcceptLoop {
    const char* name;                          // "the Unix socket", "the TCP port"
    std::optional<net::steady_timer> pause{};  // on the acceptor's strand, once it exists
    std::chrono::milliseconds delay{0};        // the pause after the next failure; 0: none yet
    std::int64_t failures = 0;                 // failed accepts in the current burst
    std::int64_t refused = 0;                  // connections refused since the last one admitted
  };
  template <typename Socket, typename Acceptor, typename OnSocket>
  void Accept(Acceptor& acceptor, AcceptLoop& loop, OnSocket on_socket);
  void PauseAccepting(AcceptLoop& loop, const beast::error_code& ec, std::function<void()> again);
  template <typename SessionType, typename Socket>
  void Admit(
      AcceptLoop& loop, Socket socket, Caller caller, const ClientKey& key, std::string peer);
  void AcceptUnix();
  void AcceptTcp();
  void RunIo();

  Router router_;
  ApiServerOptions options_;
  const std::uint32_t owner_uid_;  // the server's effective uid
  SystemClock clock_;              // the rate limit's
  // Before ioc_: leases held by connections still queued in ioc_ are given back when it dies.
  std::optional<ClientLimits> limits_;  // set by Start
  net::io_context ioc_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::unique_ptr<net::thread_pool> workers_;
  std::optional<LocalProtocol::acceptor> unix_acceptor_;
  std::optional<Tcp::acceptor> tcp_acceptor_;
  std::optional<ssl::context> tls_;  // set when the TCP listener speaks TLS
  std::vector<std::thread> io_threads_;
  std::atomic<int> tcp_port_{-1};
  AcceptLoop unix_accept_{"the Unix socket"};
  AcceptLoop tcp_accept_{"the TCP port"};
  std::atomic<std::int64_t> accept_errors_{0};
  std::atomic<int> refusing_{0};       // refused connections still being answered
  std::optional<ino_t> socket_inode_;  // the socket file we created, removed on Stop if ours
  bool started_ = false;               // owner thread only
  bool stopped_ = false;               // owner thread only

  std::mutex mu_;
  bool stopping_ = false;                                                  // GUARDED_BY(mu_)
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions_;  // GUARDED_BY(mu_)
};

namespace {

// The state of a connection that became an agent's command stream (StartCommandStream).
struct CommandStreamState {
  ClientLimits::Lease slot;  // its place under max_watches
  std::shared_ptr<CommandStream> stream;
  bool writing = false;
  std::string out;      // the next bytes to write
  std::string sending;  // the bytes being written
};

// The state of a connection that became a watch stream (see api_server.h).
struct WatchState {
  WatchState(std::string event_name, HttpRequest list_request)
      : event(std::move(event_name)), request(std::move(list_request)) {}
  ClientLimits::Lease slot;  // its place under max_watches, taken with the first read
  std::string event;         // "jobs", "gpus", "nodes"
  HttpRequest request;       // re-handled on every tick: the plain GET of the list
  bool streaming = false;    // the 200 header has gone out
  std::string last_data;     // the list as last sent
  std::chrono::steady_clock::time_point last_write{};
  std::string out;  // the bytes being written
};

// One HTTP connection over `Socket`: a Unix socket, a TCP socket, or TLS over TCP (TlsStream).
// Every member is touched only on the socket's strand, except `caller_`, which the worker
// handling the connection's single in-flight request resolves and reads (the post to the pool
// and back orders those accesses; a watch, too, has one re-read in flight at a time).
template <typename Socket>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Socket>> {
  static constexpr bool kTls = std::is_same_v<Socket, TlsStream>;
  // TCP callers name themselves with a bearer token; Unix ones are who the kernel says.
  static constexpr bool kTokens = !std::is_same_v<Socket, LocalProtocol::socket>;

 public:
  // `peer`: the remote address on TCP, the budget of a request without a valid token ("" on
  // the socket). `connection`: its place under max_connections (none for a refused one).
  Session(ApiServerState& server,
          Socket socket,
          Caller caller,
          std::string peer,
          ClientLimits::Lease connection)
      : server_(server),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        caller_(std::move(caller)),
        peer_(std::move(peer)),
        connection_(std::move(connection)) {}
  ~Session() override {
    if (refusing_) {
      server_.DoneRefusing();
    }
    server_.Unregister(this);
  }

  void Begin() {
    if (!server_.Register(this, this->shared_from_this())) {
      Close();
      return;
    }
    if constexpr (kTls) {
      SniffTls();
    } else {
      ReadRequest();
    }
  }

  // A connection a limit refused: answered with the refusal before anything is read, then
  // closed. On a TLS port (an answer would need the handshake first) and when kMaxRefusing
  // answers are under way already, closed at once.
  void Refuse(const Refusal& refusal) {
    if constexpr (kTls) {
      Close();
    } else {
      if (!server_.StartRefusing()) {
        Close();
        return;
      }
      refusing_ = true;
      if (!server_.Register(this, this->shared_from_this())) {
        Close();
        return;
      }
      close_after_ = true;
      Write(RefusalResponse("too many connections", refusal));
    }
  }

  void PostClose() override {
    net::post(socket_.get_executor(), [self = this->shared_from_this()] { self->Close(); });
  }

 private:
  // The socket below any TLS: what is opened, shut down and closed.
  auto& Lowest() {
    if constexpr (kTls) {
      return socket_.next_layer();
    } else {
      return socket_;
    }
  }

  // TLS port: the first bytes say whether the client speaks TLS. If so they are handed to the
  // handshake; if not (plain HTTP), the client gets a plain-text 400 naming https://, instead
  // of a reset it could not explain.
  void SniffTls() {
    ArmTimer(server_.options().read_timeout);  // the handshake, too, must arrive in time
    Lowest().async_read_some(
        buffer_.prepare(512),
        [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
          self->buffer_.commit(n);
          if (ec) {
            self->Close();
          } else if (static_cast<unsigned char>(*static_cast<const char*>(
                         self->buffer_.data().data())) != kTlsHandshakeRecord) {
            self->RefusePlainHttp();
          } else {
            self->Handshake();
          }
        });
  }

  void Handshake() {
    if constexpr (kTls) {
      socket_.async_handshake(
          ssl::stream_base::server,
          buffer_.data(),
          [self = this->shared_from_this()](beast::error_code ec, std::size_t used) {
            self->timer_.cancel();
            if (ec) {  // an old TLS version, garbage, a client that gave up: nothing to answer
              self->Close();
              return;
            }
            self->buffer_.consume(used);
            self->ReadRequest();
          });
    }
  }

  void RefusePlainHttp() {
    timer_.cancel();
    raw_out_ = SerializeResponse(
        ErrorResponse(400,
                      "invalid_argument",
                      "this gpufleet port speaks TLS only: use https:// instead of http:// (with "
                      "--ca-file naming the CA that signed the server's certificate)"));
    ArmTimer(server_.options().read_timeout);
    net::async_write(Lowest(),
                     net::buffer(raw_out_),
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                       self->timer_.cancel();
                       if (ec) {
                         self->Close();
                       } else {
                         self->Linger(self->Lowest());  // plain bytes: drain below TLS
                       }
                     });
  }

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
    http::async_read(
        socket_,
        buffer_,
        *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    timer_.cancel();
    if (ec == http::error::body_limit) {
      close_after_ = true;
      Write(ErrorResponse(
          413, "resource_exhausted", "request body exceeds the limit of 1 MiB (1048576 bytes)"));
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
    if (server_.router().IsCommandStream(request)) {
      StartCommandStream(std::move(request));
      return;
    }
    Dispatch(std::move(request));
  }

  // What a request is to the limits: the client's own (rate limited), the first read of a
  // watch (rate limited, and it takes a watch slot), or a watch's later re-read (the server's
  // doing: free).
  enum class Turn { kRequest, kWatchOpen, kWatchTick };

  // What a worker made of a request: the answer, and the slot a watch took with its first read.
  struct Answer {
    HttpResponse response;
    ClientLimits::Lease slot{};
  };

  void Dispatch(HttpRequest request) {
    HandleOnWorker(std::move(request), Turn::kRequest, [](Session& self, Answer answer) {
      self.Write(std::move(answer.response));
    });
  }

  template <typename Then>
  void HandleOnWorker(HttpRequest request, Turn turn, Then then) {
    OnWorker([request = std::move(request),
              turn](Session& self) { return self.HandleNow(request, turn); },
             std::move(then));
  }

  // Runs `work(session)` on a worker (ClusterService calls block) and comes back to the strand
  // with `then(session, result)`. The work guard keeps the io threads alive until then.
  template <typename Work, typename Then>
  void OnWorker(Work work, Then then) {
    net::post(server_.workers(),
              [self = this->shared_from_this(),
               work = std::move(work),
               then = std::move(then),
               guard = net::make_work_guard(server_.ioc())]() mutable {
                auto result = work(*self);
                net::post(self->socket_.get_executor(),
                          [self, then = std::move(then), result = std::move(result)]() mutable {
                            then(*self, std::move(result));
                          });
              });
  }

  Answer HandleNow(const HttpRequest& request, Turn turn) {  // on a worker
    try {
      Result<Caller> caller = RequestCaller(request);
      // A refused token counts against its address: guessing tokens is rate limited too.
      const ClientKey key = KeyFor(caller.ok() ? *caller : Caller{});
      if (turn != Turn::kWatchTick) {
        if (std::optional<Refusal> refusal = server_.limits().TakeRequest(key)) {
          return {RefusalResponse("too many requests", *refusal)};
        }
      }
      if (!caller.ok()) {
        return {Unauthenticated(caller.error().message)};
      }
      Answer answer;
      if (turn == Turn::kWatchOpen) {
        ClientLimits::Admission admission =
            server_.limits().Admit(ClientLimits::Resource::kStream, key);
        if (admission.refused) {
          return {RefusalResponse("too many open watches",
                                  *admission.refused,
                                  "; close one, or poll the plain GET instead")};
        }
        answer.slot = std::move(admission.lease);
      }
      answer.response = server_.router().Handle(*caller, request);
      if (answer.response.status == 200 && request.method == "GET" &&
          request.target == "/metrics") {
        // The transport's own families: the router does not know the server it runs in.
        answer.response.body += RenderApiServerMetrics(server_.Counts());
      }
      return answer;
    } catch (...) {  // thread boundary: Router::Handle already catches; this is belt and braces
      Answer answer;
      answer.response.status = 500;
      answer.response.body = "{\"error\":{\"code\":\"internal\",\"message\":\"internal error\"}}\n";
      return answer;
    }
  }

  // The caller of one request. TCP: its bearer token, if any, names the caller for this
  // request alone (a watch re-reads with its request, so a token revoked mid-stream ends the
  // stream with a 401 event); the token is never logged, only the authenticator's message goes
  // back. Unix socket: the peer, its user name resolved here (getpwuid_r may block on NSS:
  // not on an I/O thread).
  Result<Caller> RequestCaller(const HttpRequest& request) {  // on a worker
    if constexpr (kTokens) {
      return TokenCaller(request);
    } else {
      if (caller_.authenticated && caller_.user.empty()) {
        caller_.user = UserName(caller_.uid);
      }
      return caller_;
    }
  }

  // The budget `caller` draws from (client_limits.h): its uid on the socket; on TCP its user
  // or node, or the remote address when the request carries no valid token.
  ClientKey KeyFor(const Caller& caller) const {
    if constexpr (!kTokens) {
      return server_.SocketKey(caller.uid);
    } else if (caller.node) {
      return ClientKey{Listener::kTcp, "node:" + caller.node->value(), /*exempt=*/true};
    } else if (caller.authenticated) {
      return ClientKey{Listener::kTcp, "user:" + caller.user, /*exempt=*/false};
    } else {
      return ClientKey{Listener::kTcp, "addr:" + peer_, /*exempt=*/false};
    }
  }

  // The caller of one TCP request: its bearer token's, or the connection's (unauthenticated)
  // without one. An error is a 401's message.
  Result<Caller> TokenCaller(const HttpRequest& request) {  // on a worker
    const auto& authenticate = server_.options().authenticate;
    GF_ASSIGN_OR_RETURN(std::optional<std::string> token, BearerToken(request));
    if (!token.has_value() || !authenticate) {  // no token, or a server without tokens
      return caller_;
    }
    return authenticate(*token);
  }

  // ---- Agent command streams (routes.h IsCommandStream). Pushed, not polled: the stream's
  // waker posts Pump to the strand when the controller queues a command, so a launch reaches
  // its agent within a write's time. One write at a time; a keepalive when idle. ----

  // A command stream being opened: the stream, or the answer that refuses it.
  struct CommandStreamOpening {
    Result<std::shared_ptr<CommandStream>> stream = std::shared_ptr<CommandStream>();
    ClientLimits::Lease slot{};
    std::optional<HttpResponse> refused{};
  };

  void StartCommandStream(HttpRequest request) {
    OnWorker(
        [request = std::move(request)](Session& self) { return self.OpenCommandStream(request); },
        [](Session& self, CommandStreamOpening opening) {
          self.OnCommandStreamOpen(std::move(opening));
        });
  }

  CommandStreamOpening OpenCommandStream(const HttpRequest& request) {  // on a worker
    CommandStreamOpening opening;
    Caller caller = caller_;
    if constexpr (kTokens) {
      Result<Caller> from_token = TokenCaller(request);
      if (!from_token.ok()) {
        opening.stream = PermissionDenied(from_token.error().message);
        return opening;
      }
      caller = std::move(*from_token);
    }
    // A node agent has no per-client limit (KeyFor), but its stream counts under max_watches.
    ClientLimits::Admission admission =
        server_.limits().Admit(ClientLimits::Resource::kStream, KeyFor(caller));
    if (admission.refused) {
      opening.refused = RefusalResponse("too many open streams", *admission.refused);
      return opening;
    }
    opening.slot = std::move(admission.lease);
    opening.stream = server_.router().OpenCommandStream(caller, request);
    return opening;
  }

  void OnCommandStreamOpen(CommandStreamOpening opening) {
    if (opening.refused) {
      Write(std::move(*opening.refused));
      return;
    }
    if (!opening.stream.ok()) {
      Write(ErrorResponse(opening.stream.error()));
      return;
    }
    if (!Lowest().is_open()) {
      return;
    }
    commands_.emplace();
    commands_->slot = std::move(opening.slot);
    commands_->stream = std::move(*opening.stream);
    std::weak_ptr<Session> weak = this->shared_from_this();
    commands_->stream->SetWaker([weak] {
      if (auto self = weak.lock()) {
        net::post(self->socket_.get_executor(), [self] { self->PumpCommands(false); });
      }
    });
    commands_->out = WatchStreamHeader();
    Drain(
        socket_);  // the agent sends nothing more on this connection: a read notices when it leaves
    PumpCommands(false);
  }

  void PumpCommands(bool keepalive) {
    if (!commands_ || !commands_->stream || !Lowest().is_open()) {
      return;
    }
    if (commands_->writing) {
      return;  // the write's completion pumps again
    }
    bool last = false;
    for (const AgentCommand& command : commands_->stream->Take()) {
      AppendChunk(commands_->out, FormatSseEvent("command", WireDump(AgentCommandToJson(command))));
    }
    if (commands_->stream->Closed()) {
      commands_->out += kLastChunk;  // a newer session, or the server stops
      last = true;
    } else if (commands_->out.empty() && keepalive) {
      AppendChunk(commands_->out, FormatSseComment("keepalive"));
    }
    if (commands_->out.empty()) {
      ArmCommandKeepalive();
      return;
    }
    commands_->writing = true;
    commands_->sending = std::move(commands_->out);
    commands_->out.clear();
    ArmTimer(server_.options().read_timeout);  // an agent that stops reading is dropped
    net::async_write(socket_,
                     net::buffer(commands_->sending),
                     [self = this->shared_from_this(), last](beast::error_code ec, std::size_t) {
                       self->timer_.cancel();
                       self->commands_->writing = false;
                       if (ec || last) {
                         self->Close();
                       } else {
                         self->PumpCommands(false);
                       }
                     });
  }

  void ArmCommandKeepalive() {
    timer_.expires_after(server_.options().watch_keepalive);
    timer_.async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (!ec) {
        self->PumpCommands(true);
      }
    });
  }

  // ---- Watch streams (api_server.h). One step at a time on the strand: re-read on a worker,
  // write if changed (or a keepalive is due), wait watch_interval on the timer, again. ----

  void StartWatch(std::string event, HttpRequest request) {
    watch_.emplace(std::move(event), std::move(request));
    WatchTick();
  }

  // The first read takes the watch's slot (on the worker, where the caller is known).
  void WatchTick() {
    HandleOnWorker(watch_->request,
                   watch_->streaming ? Turn::kWatchTick : Turn::kWatchOpen,
                   [](Session& self, Answer answer) { self.OnWatchRead(std::move(answer)); });
  }

  void OnWatchRead(Answer answer) {
    HttpResponse& response = answer.response;
    if (!Lowest().is_open()) {
      return;  // the client left, or Stop(), while the worker read
    }
    if (!watch_->streaming && response.status != 200) {
      watch_.reset();  // the plain GET's answer (401, 400, 429, 503...); the connection goes on
      Write(std::move(response));
      return;
    }
    std::string out;
    if (!watch_->streaming) {
      watch_->streaming = true;
      watch_->slot = std::move(answer.slot);
      out = WatchStreamHeader();
      Drain(socket_);  // the client sends nothing more: a pending read notices when it leaves
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
    net::async_write(socket_,
                     net::buffer(watch_->out),
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
      if (!ec && self->Lowest().is_open()) {
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
    http::async_write(
        socket_, *response_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
          self->OnWrite(ec);
        });
  }

  void OnWrite(beast::error_code ec) {
    timer_.cancel();
    if (ec) {
      Close();
    } else if (close_after_) {
      Linger(socket_);
    } else if (!keep_alive_) {
      Lowest().shutdown(net::socket_base::shutdown_send, ec);
      Close();
    } else {
      ReadRequest();
    }
  }

  // After an early answer (413, 400) the client may still be sending; closing now could reset
  // the connection and destroy our answer before the client reads it. So: half-close, read and
  // discard (from `stream`: the TLS layer, or the socket below it when the client spoke plain
  // HTTP to the TLS port) for a bounded time and size, then close.
  template <typename Stream>
  void Linger(Stream& stream) {
    beast::error_code ec;
    Lowest().shutdown(net::socket_base::shutdown_send, ec);
    ArmTimer(std::min(server_.options().read_timeout, kMaxLinger));
    Drain(stream);
  }

  template <typename Stream>
  void Drain(Stream& stream) {
    stream.async_read_some(
        net::buffer(drain_buf_),
        [self = this->shared_from_this(), &stream](beast::error_code ec, std::size_t n) {
          self->drained_ += n;
          if (ec || self->drained_ > kMaxDrainBytes) {
            self->Close();
          } else {
            self->Drain(stream);
          }
        });
  }

  void Close() {
    beast::error_code ec;
    timer_.cancel();
    Lowest().close(ec);
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
  std::string raw_out_;                         // the plain-HTTP refusal on a TLS port
  std::string peer_;                            // TCP: the remote address; "" on the socket
  ClientLimits::Lease connection_;              // its place under max_connections
  bool refusing_ = false;                       // answering a refusal (counted by StartRefusing)
  std::optional<WatchState> watch_;             // set while the connection is a watch
  std::optional<CommandStreamState> commands_;  // set while it is an agent's command stream
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

// TLS 1.2 or later, with the configured certificate chain and key, both checked here so that a
// bad file stops Start() with its name rather than failing every handshake later.
Status ApiServerState::LoadTls() {
  const std::string& cert = options_.tls_cert_file;
  const std::string& key = options_.tls_key_file;
  if (cert.empty() != key.empty()) {
    return InvalidArgument(std::string("TLS needs both a certificate and a key: ") +
                           (cert.empty() ? "the key" : "the certificate") + " is set, " +
                           (cert.empty() ? "the certificate" : "the key") +
                           " is not (gpufleet up --tls-cert FILE --tls-key FILE)");
  }
  GF_ASSIGN_OR_RETURN(const std::string cert_pem, ReadCredentialFile(cert, "TLS certificate file"));
  GF_ASSIGN_OR_RETURN(const std::string key_pem,
                      ReadSecretFile(key, "TLS key file", SecretReaders::kOwnerAndGroup));
  ssl::context ctx(ssl::context::tls_server);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  // No session tickets: clients do not resume, and a ticket arriving after the handshake would
  // sit unread on an idle kept-alive connection, which the client would take for a stale one.
  SSL_CTX_set_num_tickets(ctx.native_handle(), 0);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::single_dh_use);
  beast::error_code ec;
  ctx.use_certificate_chain(net::buffer(cert_pem), ec);
  if (ec) {
    return InvalidArgument(
        "TLS certificate file " + cert +
        ": not a PEM certificate (-----BEGIN CERTIFICATE-----): " + OpenSslReason(ec));
  }
  const std::string mismatch = "TLS key file " + key + " does not match the certificate in " +
                               cert + "; give the key the certificate was made for";
  ctx.use_private_key(net::buffer(key_pem), ssl::context::pem, ec);
  if (ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) ==
                X509_R_KEY_VALUES_MISMATCH) {  // OpenSSL compares it with the certificate
    ERR_clear_error();
    return InvalidArgument(mismatch);
  }
  if (ec) {
    return InvalidArgument("TLS key file " + key + ": not a PEM private key: " + OpenSslReason(ec));
  }
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    ERR_clear_error();
    return InvalidArgument(mismatch);
  }
  tls_.emplace(std::move(ctx));
  return OkStatus();
}

// The accept loop of one listener. A failed accept (EMFILE, ENFILE: no descriptor left) leaves
// the connection queued, so accepting again at once fails again at once: a busy loop that
// starves everything else. So the listener pauses (PauseAccepting) and tries again later.
template <typename Socket, typename Acceptor, typename OnSocket>
void ApiServerState::Accept(Acceptor& acceptor, AcceptLoop& loop, OnSocket on_socket) {
  acceptor.async_accept(
      net::make_strand(ioc_),
      [this, &acceptor, &loop, on_socket](beast::error_code ec, Socket socket) mutable {
        if (!acceptor.is_open()) {
          return;  // Stop()
        }
        if (ec) {
          PauseAccepting(loop, ec, [this, &acceptor, &loop, on_socket] {
            Accept<Socket>(acceptor, loop, on_socket);
          });
          return;
        }
        if (loop.failures > 0) {
          std::fprintf(stderr,
                       "gpufleet api: accepting on %s again (after %lld failed accepts)\n",
                       loop.name,
                       static_cast<long long>(loop.failures));
          loop.failures = 0;
        }
        loop.delay = std::chrono::milliseconds(0);
        on_socket(std::move(socket));
        Accept<Socket>(acceptor, loop, on_socket);
      });
}

// Waits kFirstAcceptPause, doubling up to kMaxAcceptPause while accepts keep failing, then
// calls `again`; says so once per burst of failures, not once per failure.
void ApiServerState::PauseAccepting(AcceptLoop& loop,
                                    const beast::error_code& ec,
                                    std::function<void()> again) {
  ++accept_errors_;
  if (loop.failures++ == 0) {
    const ApiServerCounts counts = Counts();
    std::fprintf(stderr,
                 "gpufleet api: cannot accept a connection on %s: %s (%d open here, %d on the "
                 "other listener); pausing accepts there, %lld ms doubling to %lld ms, until "
                 "one succeeds\n",
                 loop.name,
                 ec.message().c_str(),
                 &loop == &tcp_accept_ ? counts.tcp_connections : counts.socket_connections,
                 &loop == &tcp_accept_ ? counts.socket_connections : counts.tcp_connections,
                 static_cast<long long>(kFirstAcceptPause.count()),
                 static_cast<long long>(kMaxAcceptPause.count()));
  }
  loop.delay =
      loop.delay.count() == 0 ? kFirstAcceptPause : std::min(loop.delay * 2, kMaxAcceptPause);
  loop.pause->expires_after(loop.delay);
  loop.pause->async_wait([again = std::move(again)](beast::error_code wait_ec) {
    if (!wait_ec) {
      again();  // (Stop() cancels the pause: operation_aborted)
    }
  });
}

// Admits a new connection under the limits, or answers the refusal (Session::Refuse); logs
// the first refusal of a burst and the end of the burst, not every one.
template <typename SessionType, typename Socket>
void ApiServerState::Admit(
    AcceptLoop& loop, Socket socket, Caller caller, const ClientKey& key, std::string peer) {
  ClientLimits::Admission admission = limits_->Admit(ClientLimits::Resource::kConnection, key);
  auto session = std::make_shared<SessionType>(
      *this, std::move(socket), std::move(caller), std::move(peer), std::move(admission.lease));
  if (admission.refused) {
    if (loop.refused++ == 0) {
      std::fprintf(stderr,
                   "gpufleet api: refusing connections on %s: %s\n",
                   loop.name,
                   admission.refused->reason.c_str());
    }
    session->Refuse(*admission.refused);
    return;
  }
  if (loop.refused > 0) {
    std::fprintf(stderr,
                 "gpufleet api: admitting connections on %s again (%lld refused)\n",
                 loop.name,
                 static_cast<long long>(loop.refused));
    loop.refused = 0;
  }
  session->Begin();
}

void ApiServerState::AcceptUnix() {
  Accept<LocalProtocol::socket>(*unix_acceptor_, unix_accept_, [this](LocalProtocol::socket s) {
    if (std::optional<Caller> caller = PeerCaller(s.native_handle())) {
      const ClientKey key = SocketKey(caller->uid);
      Admit<Session<LocalProtocol::socket>>(
          unix_accept_, std::move(s), std::move(*caller), key, "");
    }
  });
}

void ApiServerState::AcceptTcp() {
  Accept<Tcp::socket>(*tcp_acceptor_, tcp_accept_, [this](Tcp::socket s) {
    beast::error_code ec;
    const Tcp::endpoint remote = s.remote_endpoint(ec);
    if (ec) {
      return;  // already gone
    }
    std::string peer = remote.address().to_string();
    const ClientKey key{Listener::kTcp, "addr:" + peer, /*exempt=*/false};
    // Unauthenticated unless a request carries a bearer token (Session::RequestCaller).
    if (tls_) {
      Admit<Session<TlsStream>>(
          tcp_accept_, TlsStream(std::move(s), *tls_), Caller{}, key, std::move(peer));
    } else {
      Admit<Session<Tcp::socket>>(tcp_accept_, std::move(s), Caller{}, key, std::move(peer));
    }
  });
}

// Each limit names its setting; the same ranges as the settings file's [api] keys.
Status ApiServerState::CheckLimits() const {
  const auto at_least = [](const char* name, double value, int least) -> Status {
    if (!(value >= least && std::isfinite(value))) {  // NaN too
      std::array<char, 32> text{};
      std::snprintf(text.data(), text.size(), "%g", value);
      return InvalidArgument(std::string("[api] ") + name + ": must be a number >= " +
                             std::to_string(least) + ", got " + text.data());
    }
    return OkStatus();
  };
  GF_TRY(at_least("max_connections", options_.max_connections, 0));
  GF_TRY(at_least("connections_per_client", options_.connections_per_client, 1));
  GF_TRY(at_least("max_watches", options_.max_watches, 1));
  GF_TRY(at_least("watches_per_client", options_.watches_per_client, 1));
  GF_TRY(at_least("rate_limit", options_.rate_limit, 0));
  return at_least("rate_burst", options_.rate_burst, 1);
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
  Status status = CheckLimits();
  if (status.ok() && options_.tcp_port >= 0 &&
      (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty())) {
    status = LoadTls();  // before binding anything: a bad file stops Start() cleanly
  }
  if (status.ok() && options_.unix_socket_path) {
    status = StartUnix(*options_.unix_socket_path);
  }
  if (status.ok() && options_.tcp_port >= 0) {
    status = StartTcp();
  }
  if (!status.ok()) {
    unix_acceptor_.reset();
    tcp_acceptor_.reset();
    tls_.reset();
    if (socket_inode_) {
      ::unlink(options_.unix_socket_path->c_str());
      socket_inode_.reset();
    }
    tcp_port_ = -1;
    return status;
  }
  started_ = true;
  limits_.emplace(
      ClientLimitsOptions{.max_connections = ResolveMaxConnections(options_.max_connections),
                          .connections_per_client = options_.connections_per_client,
                          .max_streams = options_.max_watches,
                          .streams_per_client = options_.watches_per_client,
                          .requests_per_second = options_.rate_limit,
                          .request_burst = options_.rate_burst,
                          .socket_reserve = unix_acceptor_.has_value()},
      clock_);
  workers_ = std::make_unique<net::thread_pool>(
      static_cast<std::size_t>(std::max(1, options_.worker_threads)));
  work_.emplace(ioc_.get_executor());
  if (unix_acceptor_) {
    unix_accept_.pause.emplace(unix_acceptor_->get_executor());
    AcceptUnix();
  }
  if (tcp_acceptor_) {
    tcp_accept_.pause.emplace(tcp_acceptor_->get_executor());
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
      unix_accept_.pause->cancel();
    });
  }
  if (tcp_acceptor_) {
    net::post(tcp_acceptor_->get_executor(), [this] {
      beast::error_code ec;
      tcp_acceptor_->close(ec);
      tcp_accept_.pause->cancel();
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

ApiServer::~ApiServer() {
  Stop();
}

Status ApiServer::Start() {
  return impl_->Start();
}

int ApiServer::tcp_port() const {
  return impl_->tcp_port();
}

ApiServerCounts ApiServer::counts() const {
  return impl_->Counts();
}

void ApiServer::Stop() {
  impl_->Stop();
}

}  // namespace gf
