// Session<Socket>'s requests: the TLS sniff and handshake, reading a request, who its caller
// is (SO_PEERCRED or a bearer token), the limits it counts against, the answer on a worker and
// writing it back. Apart from the listeners (api_server.cpp) and from the streams a
// connection can become (api_streams.cpp).
#include "api/api_session.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <pwd.h>

namespace gf {
namespace {

constexpr std::uint32_t kMaxHeaderBytes = 16 * 1024;

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

}  // namespace

// The answer to something a limit refused (client_limits.h): `what` ("too many open
// watches"), the limit, `fix`, and a Retry-After header.
HttpResponse RefusalResponse(std::string_view what, const Refusal& refusal, std::string_view fix) {
  HttpResponse response = ErrorResponse(
      MakeError(refusal.code,
                std::string(what) + ": " + refusal.reason + std::string(fix) + "; retry in " +
                    std::to_string(refusal.retry_after.count()) + " s"));
  response.headers.emplace_back("Retry-After", std::to_string(refusal.retry_after.count()));
  return response;
}

template <typename Socket>
void Session<Socket>::Begin() {
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
template <typename Socket>
void Session<Socket>::Refuse(const Refusal& refusal) {
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

// TLS port: the first bytes say whether the client speaks TLS. If so they are handed to the
// handshake; if not (plain HTTP), the client gets a plain-text 400 naming https://, instead
// of a reset it could not explain.
template <typename Socket>
void Session<Socket>::SniffTls() {
  ArmTimer(server_.options().read_timeout);  // the handshake, too, must arrive in time
  Lowest().async_read_some(buffer_.prepare(512),
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

template <typename Socket>
void Session<Socket>::Handshake() {
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

template <typename Socket>
void Session<Socket>::RefusePlainHttp() {
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

template <typename Socket>
void Session<Socket>::ArmTimer(std::chrono::milliseconds timeout) {
  timer_.expires_after(timeout);
  timer_.async_wait([weak = this->weak_from_this()](beast::error_code ec) {
    if (auto self = weak.lock(); self && !ec) {
      self->Close();  // the read or write below completes with operation_aborted
    }
  });
}

template <typename Socket>
void Session<Socket>::ReadRequest() {
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

template <typename Socket>
void Session<Socket>::OnRead(beast::error_code ec) {
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

template <typename Socket>
void Session<Socket>::Dispatch(HttpRequest request) {
  HandleOnWorker(std::move(request), Turn::kRequest, [](Session& self, Answer answer) {
    self.Write(std::move(answer.response));
  });
}

template <typename Socket>
typename Session<Socket>::Answer Session<Socket>::HandleNow(const HttpRequest& request,
                                                            Turn turn) {  // on a worker
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
    if (answer.response.status == 200 && request.method == "GET" && request.target == "/metrics") {
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
template <typename Socket>
Result<Caller> Session<Socket>::RequestCaller(const HttpRequest& request) {  // on a worker
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
template <typename Socket>
ClientKey Session<Socket>::KeyFor(const Caller& caller) const {
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
template <typename Socket>
Result<Caller> Session<Socket>::TokenCaller(const HttpRequest& request) {  // on a worker
  const auto& authenticate = server_.options().authenticate;
  GF_ASSIGN_OR_RETURN(std::optional<std::string> token, BearerToken(request));
  if (!token.has_value() || !authenticate) {  // no token, or a server without tokens
    return caller_;
  }
  return authenticate(*token);
}

template <typename Socket>
void Session<Socket>::Write(HttpResponse response) {
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

template <typename Socket>
void Session<Socket>::OnWrite(beast::error_code ec) {
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

template <typename Socket>
void Session<Socket>::Close() {
  beast::error_code ec;
  timer_.cancel();
  Lowest().close(ec);
}

template <typename Socket>
void StartSession(ApiServerState& server,
                  Socket socket,
                  Caller caller,
                  std::string peer,
                  ClientLimits::Admission admission) {
  auto session = std::make_shared<Session<Socket>>(
      server, std::move(socket), std::move(caller), std::move(peer), std::move(admission.lease));
  if (admission.refused) {
    session->Refuse(*admission.refused);
  } else {
    session->Begin();
  }
}

// The three kinds of connection. (Their streams' members: api_streams.cpp.)
template class Session<LocalProtocol::socket>;
template class Session<Tcp::socket>;
template class Session<TlsStream>;
template void StartSession(
    ApiServerState&, LocalProtocol::socket, Caller, std::string, ClientLimits::Admission);
template void StartSession(
    ApiServerState&, Tcp::socket, Caller, std::string, ClientLimits::Admission);
template void StartSession(
    ApiServerState&, TlsStream, Caller, std::string, ClientLimits::Admission);

}  // namespace gf
