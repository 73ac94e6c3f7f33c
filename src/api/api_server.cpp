// The API server's listeners: binding the Unix socket and the TCP port (with TLS), the accept
// loops and the connection limits they admit under, Start/Stop, and ApiServer's public face.
// A connection, once admitted, is a Session (api_session.cpp, api_streams.cpp).
#include "api/api_server.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/api_server_state.h"
#include "api/credential_file.h"

namespace gf {
namespace {

// A failed accept pauses its listener this long, doubling up to kMaxAcceptPause.
constexpr std::chrono::milliseconds kFirstAcceptPause{100};
constexpr std::chrono::milliseconds kMaxAcceptPause{1000};

// OpenSSL's words for the last failure, for messages: its error queue when it holds one, else
// what `ec` says.
std::string OpenSslReason(const beast::error_code& ec) {
  std::string reason = ec.message();
  const unsigned long code = ERR_peek_last_error();  // NOLINT(google-runtime-int): OpenSSL's type
  if (code != 0) {
    std::array<char, 256> text{};
    ERR_error_string_n(code, text.data(), text.size());
    reason = text.data();
  }
  ERR_clear_error();
  return reason;
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
  // NOLINTNEXTLINE(google-runtime-int): OpenSSL's error codes are unsigned long
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
template <typename Socket>
void ApiServerState::Admit(
    AcceptLoop& loop, Socket socket, Caller caller, const ClientKey& key, std::string peer) {
  ClientLimits::Admission admission = limits_->Admit(ClientLimits::Resource::kConnection, key);
  if (admission.refused) {
    if (loop.refused++ == 0) {
      std::fprintf(stderr,
                   "gpufleet api: refusing connections on %s: %s\n",
                   loop.name,
                   admission.refused->reason.c_str());
    }
  } else if (loop.refused > 0) {
    std::fprintf(stderr,
                 "gpufleet api: admitting connections on %s again (%lld refused)\n",
                 loop.name,
                 static_cast<long long>(loop.refused));
    loop.refused = 0;
  }
  StartSession(*this, std::move(socket), std::move(caller), std::move(peer), std::move(admission));
}

void ApiServerState::AcceptUnix() {
  Accept<LocalProtocol::socket>(*unix_acceptor_, unix_accept_, [this](LocalProtocol::socket s) {
    if (std::optional<Caller> caller = PeerCaller(s.native_handle())) {
      const ClientKey key = SocketKey(caller->uid);
      Admit(unix_accept_, std::move(s), std::move(*caller), key, "");
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
      Admit(tcp_accept_, TlsStream(std::move(s), *tls_), Caller{}, key, std::move(peer));
    } else {
      Admit(tcp_accept_, std::move(s), Caller{}, key, std::move(peer));
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
