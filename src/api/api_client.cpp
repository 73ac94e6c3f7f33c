// The only file of the client that includes Boost.Beast (it compiles slowly).
#include "api/api_client.h"

#include <cstdint>
#include <variant>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

#include "api/beast_names.h"
#include "api/credential_file.h"
#include "api/json_mapping.h"
#include "api/routes.h"
#include "api/sse.h"
#include "json/json_text.h"

namespace gf {
namespace {

using Deadline = std::chrono::steady_clock::time_point;

// Log chunks are at most 8 MiB; leave room for everything else.
constexpr std::uint64_t kMaxResponseBytes = 64 << 20;

constexpr std::string_view kSocketHint =
    " (is `gpufleet up` running? set GPUFLEET_SOCKET or --socket)";
constexpr std::string_view kServerHint =
    " (is gpufleet running there? check --server or GPUFLEET_SERVER)";

// With several endpoints, one that does not accept the connection within this long is skipped
// for the next (a dead host may drop packets instead of refusing them).
constexpr std::chrono::milliseconds kFailoverConnectTimeout{5'000};

// Did the peer close a kept-alive connection while it was idle? A readable socket with nothing
// to read (EOF) or an error means yes; unexpected data means we are out of step: also replace it.
bool IsStale(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) {
    return false;  // nothing pending: alive
  }
  char c = 0;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) != -1 || errno != EAGAIN;
}

bool IsIdempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE";
}

HttpResponse ToHttpResponse(http::response<http::string_body>&& res) {
  HttpResponse out;
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    out.headers.emplace_back(static_cast<std::string>(field.name_string()),
                             static_cast<std::string>(field.value()));
  }
  out.body = std::move(res.body());
  return out;
}

// One endpoint of the list (api_client.h), parsed once.
struct Target {
  enum class Kind { kUnix, kHttp, kHttps };
  Kind kind = Kind::kUnix;
  std::string text;       // as given: names the endpoint in messages
  std::string unix_path;  // kUnix
  std::string host;       // kHttp/kHttps, without IPv6 brackets
  std::string port;
  bool Tcp() const { return kind != Kind::kUnix; }
  std::string_view Hint() const { return Tcp() ? kServerHint : kSocketHint; }
};

Result<Target> ParseTarget(const std::string& text) {
  Target t;
  t.text = text;
  std::string_view e = text;
  if (e.starts_with("http://") || e.starts_with("https://")) {
    t.kind = e.starts_with("https://") ? Target::Kind::kHttps : Target::Kind::kHttp;
    e.remove_prefix(e.find("//") + 2);
    if (!e.empty() && e.back() == '/') {
      e.remove_suffix(1);
    }
    const std::size_t colon = e.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == e.size() ||
        e.find('/') != std::string_view::npos) {
      return InvalidArgument("endpoint \"" + text +
                             "\": expected http://HOST:PORT, https://HOST:PORT or a socket path");
    }
    std::string_view host = e.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {  // [::1]
      host = host.substr(1, host.size() - 2);
    }
    t.host = std::string(host);
    t.port = std::string(e.substr(colon + 1));
    return t;
  }
  if (e.find("://") != std::string_view::npos) {
    return InvalidArgument("endpoint \"" + text +
                           "\": unknown scheme; use http://HOST:PORT, https://HOST:PORT or a "
                           "socket path");
  }
  if (e.starts_with("unix:")) {
    e.remove_prefix(5);
  }
  t.unix_path = std::string(e);
  if (t.unix_path.empty()) {
    return InvalidArgument("empty API endpoint");
  }
  return t;
}

// "a,b" → {"a", "b"}; blanks around and between commas are dropped.
std::vector<std::string> SplitEndpoints(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') {
      item.remove_prefix(1);
    }
    while (!item.empty() && item.back() == ' ') {
      item.remove_suffix(1);
    }
    if (!item.empty()) {
      out.emplace_back(item);
    }
    list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
  }
  return out;
}

// A standby server (one that does not lead) answers 503 with the code `unavailable`: the
// request was not applied, so the next endpoint may be asked.
bool IsStandbyAnswer(const HttpResponse& response) {
  return response.status == 503 && ErrorFromResponse(response).code == ErrorCode::kUnavailable;
}

// The client side of TLS: TLS 1.2+, the server's chain checked against `ca_file` (or the
// system's CAs). Errors name the file.
Result<std::unique_ptr<ssl::context>> MakeTlsContext(const std::string& ca_file) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ctx->set_verify_mode(ssl::verify_peer);
  beast::error_code ec;
  if (ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) {
      return Internal("cannot load the system's CA certificates: " + ec.message());
    }
    return ctx;
  }
  GF_ASSIGN_OR_RETURN(const std::string pem, ReadCredentialFile(ca_file, "CA file"));
  ctx->add_certificate_authority(net::buffer(pem), ec);
  if (ec) {
    return InvalidArgument(
        "CA file " + ca_file +
        ": not a PEM certificate (-----BEGIN CERTIFICATE-----): " + ec.message());
  }
  return ctx;
}

// The read buffer's room (ApiClient::Impl's constructor says why).
constexpr std::size_t kReadBufferBytes = std::size_t{64} * 1024;

}  // namespace

class ApiClient::Impl {
 public:
  void SetTimeout(std::chrono::milliseconds timeout) { options_.timeout = timeout; }
  Impl(const std::vector<std::string>& endpoints, ApiClientOptions options)
      : options_(std::move(options)) {
    // Beast reads what the buffer has room for, and at least 512 bytes: an empty buffer took a
    // submit's answer (the job, a few KiB) in one recv per 512 bytes. 64 KiB (Beast's most per
    // read) takes a typical answer in one.
    buffer_.reserve(kReadBufferBytes);
    for (const std::string& text : endpoints) {
      Result<Target> target = ParseTarget(text);
      if (!target.ok()) {
        setup_error_ = target.error();
        return;
      }
      targets_.push_back(std::move(*target));
    }
    if (targets_.empty()) {
      setup_error_ = InvalidArgument("empty API endpoint");
      return;
    }
    const bool any_tls = std::any_of(targets_.begin(), targets_.end(), [](const Target& t) {
      return t.kind == Target::Kind::kHttps;
    });
    if (any_tls) {
      auto ctx = MakeTlsContext(options_.ca_file);
      if (!ctx.ok()) {
        setup_error_ = ctx.error();
        return;
      }
      tls_context_ = std::move(*ctx);
    }
  }

  Result<HttpResponse> Call(std::string_view method,
                            std::string_view target,
                            const std::optional<std::string>& body,
                            const HttpHeaders& headers);
  Status Watch(std::string_view target,
               const WatchCallback& on_event,
               const std::stop_token& stop,
               WatchFraming framing);

 private:
  // One try of a request against one endpoint. `maybe_applied`: the request may have reached
  // the server (sent, then the connection was lost), so a POST must not go to another one.
  struct Attempt {
    Result<HttpResponse> result;
    bool maybe_applied = false;
    bool connect_failed = false;
  };
  // One try of a watch against one endpoint. `failover`: it failed before the stream began
  // (cannot connect, lost before the header, a standby's 503), so the next may be tried.
  struct WatchAttempt {
    Status status;
    bool failover = false;
  };

  Attempt CallOne(const Target& t,
                  std::string_view method,
                  std::string_view target,
                  const std::optional<std::string>& body,
                  const HttpHeaders& headers);
  WatchAttempt WatchOne(const Target& t,
                        std::string_view target,
                        const WatchCallback& on_event,
                        const std::stop_token& stop,
                        WatchFraming framing);
  http::request<http::string_body> MakeRequest(const Target& t,
                                               std::string_view method,
                                               std::string_view target,
                                               std::optional<std::string> body,
                                               const HttpHeaders& headers) const;
  Deadline NextDeadline() const { return std::chrono::steady_clock::now() + options_.timeout; }
  Deadline ConnectDeadline(Deadline deadline) const {
    return targets_.size() > 1
               ? std::min(deadline, std::chrono::steady_clock::now() + kFailoverConnectTimeout)
               : deadline;
  }
  // The endpoints in the order to try them: the one that answered last first.
  std::vector<std::size_t> Order() const {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      order.push_back((current_ + i) % targets_.size());
    }
    return order;
  }
  // The error after every endpoint failed: each one and why, then the hint.
  static Error AllFailed(const std::vector<std::string>& failures);
  // A connection failure to `t`, with the hint on where to point the client.
  static Error Unreachable(const Target& t, const Error& e) {
    return Unavailable(e.message + std::string(t.Hint()));
  }

  template <typename AsyncStream>
  WatchAttempt FollowStream(AsyncStream& stream,
                            const Target& t,
                            http::request<http::string_body>& req,
                            const WatchCallback& on_event,
                            const std::stop_token& stop,
                            WatchFraming framing);
  template <typename AsyncStream>
  Status StreamEvents(AsyncStream& stream,
                      const Target& t,
                      http::response_parser<http::string_body>& parser,
                      const WatchCallback& on_event,
                      const std::stop_token& stop,
                      WatchFraming framing);
  Status StreamLost(const Target& t, beast::error_code ec) const;

  // Runs one asynchronous operation to completion or until `deadline`; on timeout the socket is
  // closed (cancelling the operation) and net::error::timed_out returned.
  template <typename Start>
  beast::error_code Run(Start&& start, Deadline deadline) {
    std::optional<beast::error_code> result;
    ioc_.restart();
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    ioc_.run_until(deadline);
    if (!result) {
      CloseSocket();
      ioc_.restart();
      ioc_.run();  // let the cancelled operation finish; it refers to `result`
      Disconnect();
      return net::error::timed_out;
    }
    return *result;
  }

  Status Connect(const Target& t, Deadline deadline);
  Status ConnectTcp(const Target& t, Deadline deadline);
  Status Handshake(const Target& t, Deadline deadline);

  // The open connection: none, a Unix socket, a TCP socket, or TLS over TCP.
  using Connection = std::variant<std::monostate, LocalProtocol::socket, Tcp::socket, TlsStream>;
  // Calls `f` with the open stream (REQUIRES: connected()).
  template <typename F>
  decltype(auto) WithStream(F&& f) {
    if (auto* tls = std::get_if<TlsStream>(&conn_)) {
      return f(*tls);
    }
    if (auto* tcp = std::get_if<Tcp::socket>(&conn_)) {
      return f(*tcp);
    }
    return f(std::get<LocalProtocol::socket>(conn_));
  }
  // The socket below any TLS, for close and poll. REQUIRES: connected().
  template <typename F>
  decltype(auto) WithLowest(F&& f) {
    if (auto* tls = std::get_if<TlsStream>(&conn_)) {
      return f(tls->next_layer());
    }
    if (auto* tcp = std::get_if<Tcp::socket>(&conn_)) {
      return f(*tcp);
    }
    return f(std::get<LocalProtocol::socket>(conn_));
  }
  // Closes the socket but keeps the object, so that a pending operation ends (aborted).
  void CloseSocket() {
    if (connected()) {
      WithLowest([](auto& socket) {
        beast::error_code ec;
        socket.close(ec);
      });
    }
  }
  void Disconnect() {
    CloseSocket();
    conn_ = std::monostate();
    buffer_.clear();
  }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  bool connected() const { return !std::holds_alternative<std::monostate>(conn_); }
  // NOLINTNEXTLINE(readability-identifier-naming): accessor
  int fd() {
    return WithLowest([](auto& socket) { return socket.native_handle(); });
  }

  template <typename AsyncStream>
  Result<HttpResponse> Exchange(AsyncStream& stream,
                                const Target& t,
                                http::request<http::string_body>& req,
                                Deadline deadline,
                                bool* closed_before_answer);

  ApiClientOptions options_;
  std::optional<Error> setup_error_;  // a bad endpoint or CA file: every call returns it
  std::vector<Target> targets_;
  std::size_t current_ = 0;  // the endpoint that answered last; the connection is to it
  std::unique_ptr<ssl::context> tls_context_;  // when an endpoint is https://
  net::io_context ioc_;
  Connection conn_;
  beast::flat_buffer buffer_;
};

Status ApiClient::Impl::Connect(const Target& t, Deadline deadline) {
  beast::error_code ec;
  if (!t.Tcp()) {
    auto& socket = conn_.emplace<LocalProtocol::socket>(ioc_);
    ec = Run(
        [&](auto handler) {
          socket.async_connect(LocalProtocol::endpoint(t.unix_path), std::move(handler));
        },
        deadline);
    if (ec) {
      Disconnect();
      return Unavailable("cannot reach " + options_.peer + " at " + t.text + ": " + ec.message());
    }
    return OkStatus();
  }
  GF_TRY(ConnectTcp(t, deadline));
  if (t.kind == Target::Kind::kHttps) {
    return Handshake(t, deadline);
  }
  return OkStatus();
}

Status ApiClient::Impl::ConnectTcp(const Target& t, Deadline deadline) {
  Tcp::resolver resolver(ioc_);
  Tcp::resolver::results_type endpoints;
  beast::error_code ec = Run(
      [&](auto handler) {
        resolver.async_resolve(
            t.host,
            t.port,
            [&endpoints, handler = std::move(handler)](beast::error_code e, auto results) mutable {
              endpoints = results;
              handler(e);
            });
      },
      deadline);
  std::vector<Tcp::endpoint> allowed;  // what may be connected to, in the resolver's order
  std::optional<Error> refusal;
  for (const auto& entry : endpoints) {
    Status allow = options_.allow_address
                       ? options_.allow_address(entry.endpoint().address().to_string())
                       : OkStatus();
    if (allow.ok()) {
      allowed.push_back(entry.endpoint());
    } else if (!refusal) {
      refusal = allow.error();
    }
  }
  if (!ec && allowed.empty() && refusal) {
    return *refusal;
  }
  if (!ec) {
    auto& socket = conn_.emplace<Tcp::socket>(ioc_);
    ec = Run([&](auto handler) { net::async_connect(socket, allowed, std::move(handler)); },
             ConnectDeadline(deadline));
  }
  if (ec) {
    Disconnect();
    return Unavailable("cannot reach " + options_.peer + " at " + t.text + ": " + ec.message());
  }
  return OkStatus();
}

// TLS over the connected TCP socket: SNI and the name check use the endpoint's host (an IP
// address is checked against the certificate's IP entries, and sent without SNI, RFC 6066).
Status ApiClient::Impl::Handshake(const Target& t, Deadline deadline) {
  Tcp::socket tcp = std::move(std::get<Tcp::socket>(conn_));
  auto& tls = conn_.emplace<TlsStream>(std::move(tcp), *tls_context_);
  SSL* native = tls.native_handle();
  beast::error_code ec;
  net::ip::make_address(t.host, ec);
  if (ec) {  // a name
    // SSL_set_tlsext_host_name, without the macro's C cast.
    SSL_ctrl(native,
             SSL_CTRL_SET_TLSEXT_HOSTNAME,
             TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(t.host.c_str()));
    SSL_set1_host(native, t.host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(native), t.host.c_str());
  }
  ec = Run([&](auto handler) { tls.async_handshake(ssl::stream_base::client, std::move(handler)); },
           deadline);
  if (!ec) {
    return OkStatus();
  }
  const std::int64_t verify = connected() ? SSL_get_verify_result(tls.native_handle()) : X509_V_OK;
  ERR_clear_error();
  Disconnect();
  if (verify != X509_V_OK) {
    return Unavailable(options_.peer + " at " + t.text +
                       " is not trusted: its TLS certificate failed "
                       "verification: " +
                       X509_verify_cert_error_string(verify) +
                       " (give --ca-file the CA that signed the server's certificate; the "
                       "certificate must name " +
                       t.host + ")");
  }
  return Unavailable("TLS handshake with gpufleet at " + t.text + " failed: " + ec.message() +
                     " (does that port speak TLS? a plain one takes http://)");
}

template <typename AsyncStream>
Result<HttpResponse> ApiClient::Impl::Exchange(AsyncStream& stream,
                                               const Target& t,
                                               http::request<http::string_body>& req,
                                               Deadline deadline,
                                               bool* closed_before_answer) {
  const beast::error_code wec =
      Run([&](auto handler) { http::async_write(stream, req, std::move(handler)); }, deadline);
  // A write that fails may still have an answer waiting (413 sent before the body was read),
  // so read unless the connection is gone for sure.
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBytes);
  beast::error_code rec = net::error::timed_out;
  if (wec != net::error::timed_out && connected()) {
    rec = Run([&](auto handler) { http::async_read(stream, buffer_, parser, std::move(handler)); },
              deadline);
  }
  if (rec) {
    *closed_before_answer = rec == http::error::end_of_stream ||
                            rec == ssl::error::stream_truncated ||  // TLS closed without notify
                            wec == net::error::broken_pipe || wec == net::error::connection_reset;
    Disconnect();
    if (rec == net::error::timed_out) {
      return Unavailable(options_.peer + " at " + t.text + " did not answer within " +
                         std::to_string(options_.timeout.count()) + " ms");
    }
    return Unavailable("lost the connection to gpufleet at " + t.text + ": " +
                       (wec ? wec : rec).message());
  }
  const bool keep_alive = parser.get().keep_alive();
  HttpResponse out = ToHttpResponse(parser.release());
  if (!keep_alive) {
    Disconnect();
  }
  return out;
}

http::request<http::string_body> ApiClient::Impl::MakeRequest(const Target& t,
                                                              std::string_view method,
                                                              std::string_view target,
                                                              std::optional<std::string> body,
                                                              const HttpHeaders& headers) const {
  http::request<http::string_body> req;
  req.version(11);
  req.method_string(beast::string_view(method.data(), method.size()));
  req.target(beast::string_view(target.data(), target.size()));
  req.set(http::field::host, t.Tcp() ? t.host + ":" + t.port : std::string("localhost"));
  req.set(http::field::user_agent, "gpufleet-client/" + std::string(ApiVersion()));
  // The token goes over TCP only: on the Unix socket the kernel says who the caller is.
  if (t.Tcp() && !options_.token.empty()) {
    req.set(http::field::authorization, "Bearer " + options_.token);
  }
  for (const auto& [name, value] : headers) {
    req.set(name, value);
  }
  if (body) {
    if (!FindHeader(headers, "Content-Type")) {
      req.set(http::field::content_type, "application/json");
    }
    req.body() = std::move(*body);
  }
  req.keep_alive(true);
  req.prepare_payload();
  return req;
}

Error ApiClient::Impl::AllFailed(const std::vector<std::string>& failures) {
  std::string message =
      "no gpufleet server answered; tried " + std::to_string(failures.size()) + " endpoints:";
  for (const std::string& f : failures) {
    message += "\n  " + f;
  }
  return Unavailable(message + "\n" + std::string(kServerHint.substr(1)));
}

Result<HttpResponse> ApiClient::Impl::Call(std::string_view method,
                                           std::string_view target,
                                           const std::optional<std::string>& body,
                                           const HttpHeaders& headers) {
  if (setup_error_) {
    return *setup_error_;
  }
  std::vector<std::string> failures;
  for (const std::size_t index : Order()) {
    const Target& t = targets_[index];
    if (index != current_) {
      Disconnect();  // the kept connection is to targets_[current_]
    }
    Attempt attempt = CallOne(t, method, target, body, headers);
    if (targets_.size() == 1 && attempt.connect_failed) {
      return Unreachable(t, attempt.result.error());
    }
    if (attempt.result.ok() && (targets_.size() == 1 || !IsStandbyAnswer(*attempt.result))) {
      current_ = index;
      return attempt.result;
    }
    if (attempt.result.ok()) {  // a standby: it applied nothing
      Disconnect();
      failures.push_back(t.text + ": not the leader (" +
                         ErrorFromResponse(*attempt.result).message + ")");
      continue;
    }
    if (targets_.size() == 1 || (attempt.maybe_applied && !IsIdempotent(method))) {
      return attempt.result;  // a POST is never sent twice: the first server may have applied it
    }
    failures.push_back(attempt.result.error().message);
  }
  return AllFailed(failures);
}

ApiClient::Impl::Attempt ApiClient::Impl::CallOne(const Target& t,
                                                  std::string_view method,
                                                  std::string_view target,
                                                  const std::optional<std::string>& body,
                                                  const HttpHeaders& headers) {
  auto req = MakeRequest(t, method, target, body, headers);
  const Deadline deadline = NextDeadline();
  bool reused = connected();
  if (reused && IsStale(fd())) {
    Disconnect();
    reused = false;
  }
  for (int attempt = 0;; ++attempt) {
    if (!connected()) {
      if (Status s = Connect(t, deadline); !s.ok()) {
        return Attempt{.result = s.error(), .maybe_applied = false, .connect_failed = true};
      }
    }
    bool closed_before_answer = false;
    auto result = WithStream(
        [&](auto& stream) { return Exchange(stream, t, req, deadline, &closed_before_answer); });
    // The server may close an idle kept-alive connection just as we reuse it; only then, and
    // only for requests that are safe to repeat, try once more on a fresh connection.
    if (result.ok() || !reused || attempt > 0 || !closed_before_answer || !IsIdempotent(method)) {
      const bool maybe_applied = !result.ok();
      return Attempt{
          .result = std::move(result), .maybe_applied = maybe_applied, .connect_failed = false};
    }
    reused = false;
  }
}

Status ApiClient::Impl::Watch(std::string_view target,
                              const WatchCallback& on_event,
                              const std::stop_token& stop,
                              WatchFraming framing) {
  if (setup_error_) {
    return *setup_error_;
  }
  std::vector<std::string> failures;
  for (const std::size_t index : Order()) {
    Disconnect();  // the stream needs the connection to itself, until it ends
    WatchAttempt attempt = WatchOne(targets_[index], target, on_event, stop, framing);
    Disconnect();
    ioc_.restart();
    ioc_.poll();  // run a close posted by a late stop now, not on a later connection
    if (stop.stop_requested()) {
      return OkStatus();
    }
    if (!attempt.failover || targets_.size() == 1) {
      if (!attempt.failover) {
        current_ = index;
      }
      return attempt.status;
    }
    failures.push_back(attempt.status.error().message);
  }
  return AllFailed(failures);
}

ApiClient::Impl::WatchAttempt ApiClient::Impl::WatchOne(const Target& t,
                                                        std::string_view target,
                                                        const WatchCallback& on_event,
                                                        const std::stop_token& stop,
                                                        WatchFraming framing) {
  // Another thread's stop closes the socket from inside this thread's Run(), which ends the
  // pending connect or read; posting is the one thread-safe way into the io_context.
  const std::stop_callback on_stop(stop, [this] { net::post(ioc_, [this] { CloseSocket(); }); });
  if (stop.stop_requested()) {
    return WatchAttempt{.status = OkStatus(), .failover = false};
  }
  if (Status s = Connect(t, NextDeadline()); !s.ok()) {
    return WatchAttempt{.status = targets_.size() == 1 ? Unreachable(t, s.error()) : s.error(),
                        .failover = true};
  }
  if (!connected() || stop.stop_requested()) {
    return WatchAttempt{.status = OkStatus(), .failover = false};
  }
  auto req = MakeRequest(t, "GET", target, std::nullopt, {});
  return WithStream(
      [&](auto& stream) { return FollowStream(stream, t, req, on_event, stop, framing); });
}

Status ApiClient::Impl::StreamLost(const Target& t, beast::error_code ec) const {
  if (ec == net::error::timed_out) {
    return Unavailable("the watch stream from gpufleet at " + t.text + " was silent for " +
                       std::to_string(options_.timeout.count()) +
                       " ms (not even a keepalive): connection lost");
  }
  return Unavailable("lost the watch stream from gpufleet at " + t.text + ": " + ec.message());
}

// Sends the request and reads the answer's header: an event stream is followed; anything else
// is read whole and becomes the server's error.
template <typename AsyncStream>
ApiClient::Impl::WatchAttempt ApiClient::Impl::FollowStream(AsyncStream& stream,
                                                            const Target& t,
                                                            http::request<http::string_body>& req,
                                                            const WatchCallback& on_event,
                                                            const std::stop_token& stop,
                                                            WatchFraming framing) {
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBytes);
  beast::error_code ec = Run(
      [&](auto handler) { http::async_write(stream, req, std::move(handler)); }, NextDeadline());
  if (!ec) {
    ec = Run(
        [&](auto handler) { http::async_read_header(stream, buffer_, parser, std::move(handler)); },
        NextDeadline());
  }
  if (ec) {
    return WatchAttempt{.status = StreamLost(t, ec), .failover = true};
  }
  const auto content_type = parser.get()[http::field::content_type];
  const std::string_view stream_type =
      framing == WatchFraming::kJsonLines ? "application/json" : "text/event-stream";
  if (parser.get().result_int() == 200 &&
      content_type.starts_with(beast::string_view(stream_type.data(), stream_type.size()))) {
    return WatchAttempt{.status = StreamEvents(stream, t, parser, on_event, stop, framing),
                        .failover = false};
  }
  ec = Run([&](auto handler) { http::async_read(stream, buffer_, parser, std::move(handler)); },
           NextDeadline());
  if (ec) {
    return WatchAttempt{.status = StreamLost(t, ec), .failover = true};
  }
  const HttpResponse response = ToHttpResponse(parser.release());
  if (response.status < 200 || response.status > 299) {
    const bool standby = IsStandbyAnswer(response);
    Error error = ErrorFromResponse(response);
    if (standby && targets_.size() > 1) {
      error.message = t.text + ": not the leader (" + error.message + ")";
    }
    return WatchAttempt{.status = error, .failover = standby};
  }
  return WatchAttempt{
      .status = Internal("the server at " + t.text + " answered a watch with Content-Type \"" +
                         response.Header("Content-Type").value_or("") + "\" instead of " +
                         std::string(stream_type) + " (is the target a watchable list?)"),
      .failover = false};
}

// Feeds the body to an SseParser as it arrives. The body's string is emptied after each read:
// the parser appends to it, so a stream of any length takes the memory of one read.
template <typename AsyncStream>
Status ApiClient::Impl::StreamEvents(AsyncStream& stream,
                                     const Target& t,
                                     http::response_parser<http::string_body>& parser,
                                     const WatchCallback& on_event,
                                     const std::stop_token& stop,
                                     WatchFraming framing) {
  parser.body_limit(boost::none);  // endless by design; SseParser bounds a line instead
  SseParser sse(framing);
  const auto deliver = [&on_event](const SseEvent& e) {
    return on_event(e.event, e.data);
  };
  for (;;) {
    std::string& body = parser.get().body();
    const SseFeedResult fed = sse.Feed(body, deliver);
    body.clear();
    if (fed == SseFeedResult::kStopped || stop.stop_requested()) {
      return OkStatus();
    }
    if (fed == SseFeedResult::kTooLong) {
      return Internal(options_.peer + " at " + t.text + " sent a watch event line over 64 MiB");
    }
    if (parser.is_done()) {
      return OkStatus();  // the server ended the stream (last chunk)
    }
    const beast::error_code ec = Run(
        [&](auto handler) { http::async_read_some(stream, buffer_, parser, std::move(handler)); },
        NextDeadline());
    if (ec && !stop.stop_requested()) {
      return StreamLost(t, ec);
    }
  }
}

ApiClient::ApiClient(std::string endpoint, ApiClientOptions options)
    : endpoint_(std::move(endpoint)),
      impl_(std::make_unique<Impl>(SplitEndpoints(endpoint_), std::move(options))) {}

ApiClient::~ApiClient() = default;

void ApiClient::SetTimeout(std::chrono::milliseconds timeout) {
  impl_->SetTimeout(timeout);
}

Result<HttpResponse> ApiClient::Call(std::string_view method,
                                     std::string_view target,
                                     const std::optional<std::string>& body,
                                     const HttpHeaders& headers) {
  try {
    return impl_->Call(method, target, body, headers);
  } catch (const std::exception& e) {  // library boundary (bad_alloc, Beast)
    return Internal(std::string("API client: ") + e.what());
  }
}

Status ApiClient::Watch(std::string_view target,
                        const WatchCallback& on_event,
                        const std::stop_token& stop,
                        WatchFraming framing) {
  try {
    return impl_->Watch(target, on_event, stop, framing);
  } catch (const std::exception& e) {  // library boundary (bad_alloc, Beast, the callback's)
    return Internal(std::string("API client watch: ") + e.what());
  }
}

Result<nlohmann::json> ApiClient::CallJson(std::string_view method,
                                           std::string_view target,
                                           const std::optional<nlohmann::json>& body) {
  std::optional<std::string> text;
  if (body) {
    text = body->dump();
  }
  GF_ASSIGN_OR_RETURN(const HttpResponse response, Call(method, target, text));
  if (response.status < 200 || response.status > 299) {
    return ErrorFromResponse(response);
  }
  if (response.body.empty()) {
    return nlohmann::json();
  }
  // The server is outside this process (over TCP, any machine): its answer gets the same
  // depth limit as a request body gets on the server.
  Result<nlohmann::json> parsed =
      ParseJsonText(response.body,
                    "the answer of gpufleet at " + endpoint_ + " to " + std::string(method) + " " +
                        std::string(target));
  if (!parsed.ok()) {
    return Internal(parsed.error().message);
  }
  return parsed;
}

Error ErrorFromResponse(const HttpResponse& response) {
  const nlohmann::json body =
      ParseJsonText(response.body, "error answer").value_or(nlohmann::json());
  if (auto error = ErrorFromJson(body)) {
    return Error{error->code.value_or(ErrorCodeForHttpStatus(response.status)), error->message};
  }
  std::string text = response.body.substr(0, 200);
  return Error{ErrorCodeForHttpStatus(response.status),
               "gpufleet answered HTTP " + std::to_string(response.status) +
                   (text.empty() ? std::string() : ": " + text)};
}

}  // namespace gf
