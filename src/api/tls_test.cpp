// TLS on the API's TCP listener, bearer tokens, and the client's list of endpoints: a real
// ApiServer and ApiClient, with a throwaway CA made by the openssl command in a temp dir.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_client.h"
#include "api/api_server.h"
#include "api/credential_file.h"
#include "api/fake_cluster_service.h"

namespace gf {
namespace {

using nlohmann::json;
using testing::FakeClusterService;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void Run(const std::string& command) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the test's one thread runs commands
  ASSERT_EQ(std::system((command + " >/dev/null 2>&1").c_str()), 0) << command;
}

// A CA, a second unrelated CA, and certificates signed by the first: one naming localhost and
// 127.0.0.1 (the server's), one naming only another host.
class ThrowawayPki {
 public:
  ThrowawayPki() {
    char tmpl[] = "/tmp/gf-tls-XXXXXX";
    GF_CHECK(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
  }
  ~ThrowawayPki() { std::filesystem::remove_all(dir_); }
  ThrowawayPki(const ThrowawayPki&) = delete;
  ThrowawayPki& operator=(const ThrowawayPki&) = delete;

  void Make() {
    MakeCa("ca");
    MakeCa("other-ca");
    MakeCert("server", "ca", "DNS:localhost,IP:127.0.0.1");
    MakeCert("elsewhere", "ca", "DNS:elsewhere.example");
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  static constexpr const char* kKey = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  void MakeCa(const std::string& name) {
    Run("openssl req -x509 " + std::string(kKey) + " -days 2 -subj /CN=gf-test-" + name +
        " -keyout " + Path(name + ".key") + " -out " + Path(name + ".pem"));
  }
  void MakeCert(const std::string& name, const std::string& ca, const std::string& names) {
    std::ofstream(Path(name + ".ext")) << "subjectAltName=" << names << "\n";
    Run("openssl req " + std::string(kKey) + " -subj /CN=" + name + " -keyout " +
        Path(name + ".key") + " -out " + Path(name + ".csr"));
    Run("openssl x509 -req -days 2 -in " + Path(name + ".csr") + " -CA " + Path(ca + ".pem") +
        " -CAkey " + Path(ca + ".key") + " -CAcreateserial -extfile " + Path(name + ".ext") +
        " -out " + Path(name + ".pem"));
  }
  std::string dir_;
};

// A TCP port on 127.0.0.1 that refuses connections (bound once, then closed).
int ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  GF_CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    PkiSlot() = std::make_unique<ThrowawayPki>();
    PkiSlot()->Make();
  }
  static void TearDownTestSuite() { PkiSlot().reset(); }
  // The suite's certificates, made once for all its tests.
  static std::unique_ptr<ThrowawayPki>& PkiSlot() {
    static std::unique_ptr<ThrowawayPki> pki;
    return pki;
  }
  static ThrowawayPki& Pki() { return *PkiSlot(); }

  ApiServerOptions TlsOptions() const {
    ApiServerOptions options;
    options.tls_cert_file = Pki().Path("server.pem");
    options.tls_key_file = Pki().Path("server.key");
    return options;
  }
  // Starts a server on 127.0.0.1, any port, no Unix socket; returns its index.
  ApiServer& Start(ClusterService& service, ApiServerOptions options) {
    servers_.push_back(std::make_unique<ApiServer>(service, std::move(options)));
    const Status s = servers_.back()->Start();
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    return *servers_.back();
  }
  static std::string Https(const ApiServer& server, const std::string& host = "127.0.0.1") {
    return "https://" + host + ":" + std::to_string(server.tcp_port());
  }
  static std::string Http(const ApiServer& server) {
    return "http://127.0.0.1:" + std::to_string(server.tcp_port());
  }
  static ApiClientOptions WithCa(const std::string& ca = "ca.pem") {
    ApiClientOptions options;
    options.timeout = std::chrono::seconds(10);
    options.ca_file = Pki().Path(ca);
    return options;
  }
  static Status StartError(ApiServerOptions options) {
    FakeClusterService fake;
    ApiServer server(fake, std::move(options));
    return server.Start();
  }

  FakeClusterService fake_;
  std::vector<std::unique_ptr<ApiServer>> servers_;
};

TEST_F(TlsTest, RoundTripByAddressAndByName) {
  ApiServer& server = Start(fake_, TlsOptions());
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    ApiClient client(Https(server, host), WithCa());
    auto health = client.CallJson("GET", "/api/v1/health");
    ASSERT_TRUE(health.ok()) << host << ": " << health.error().ToString();
    EXPECT_EQ((*health)["status"], "ok");
    auto again = client.CallJson("GET", "/api/v1/nodes");  // the kept-alive TLS connection
    ASSERT_TRUE(again.ok()) << again.error().ToString();
  }
}

TEST_F(TlsTest, AnotherCaIsRefusedWithTheReason) {
  ApiServer& server = Start(fake_, TlsOptions());
  ApiClient client(Https(server), WithCa("other-ca.pem"));
  auto r = client.CallJson("GET", "/api/v1/health");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(Contains(r.error().message, "is not trusted")) << r.error().message;
  EXPECT_TRUE(Contains(r.error().message, "--ca-file")) << r.error().message;
  EXPECT_EQ(fake_.Calls(), 0);
}

TEST_F(TlsTest, ACertificateForAnotherNameIsRefused) {
  ApiServerOptions options = TlsOptions();
  options.tls_cert_file = Pki().Path("elsewhere.pem");
  options.tls_key_file = Pki().Path("elsewhere.key");
  ApiServer& server = Start(fake_, options);
  ApiClient client(Https(server, "localhost"), WithCa());
  auto r = client.CallJson("GET", "/api/v1/health");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.error().message, "hostname mismatch")) << r.error().message;
}

TEST_F(TlsTest, PlainHttpToTheTlsPortIsToldToUseHttps) {
  ApiServer& server = Start(fake_, TlsOptions());
  ApiClient client(Http(server));
  auto r = client.CallJson("GET", "/api/v1/health");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(r.error().message, "speaks TLS only: use https://")) << r.error().message;
}

TEST_F(TlsTest, HttpsToAPlainPortFailsTheHandshake) {
  ApiServer& server = Start(fake_, ApiServerOptions{});
  ApiClient client(Https(server), WithCa());
  auto r = client.CallJson("GET", "/api/v1/health");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.error().message, "TLS handshake with gpufleet at " + Https(server)))
      << r.error().message;
}

// TLS 1.2 is the floor, whatever the system's OpenSSL settings would allow: a client made to
// offer TLS 1.1 only (at security level 0, so that its own side allows it) is refused by the
// server with a protocol_version alert; TLS 1.2 and 1.3 pass.
TEST_F(TlsTest, OlderThanTls12IsRefused) {
  ApiServer& server = Start(fake_, TlsOptions());
  const std::string out = Pki().Path("s_client.out");
  // What s_client says of the handshake (its exit status also counts how the connection
  // ended afterwards, which is not the point here).
  const auto handshake = [&](const std::string& version) {
    const std::string command =
        "openssl s_client -connect 127.0.0.1:" + std::to_string(server.tcp_port()) + " -CAfile " +
        Pki().Path("ca.pem") + " -cipher DEFAULT:@SECLEVEL=0 " + version + " </dev/null >" + out +
        " 2>&1";
    static_cast<void>(std::system(command.c_str()));  // NOLINT(concurrency-mt-unsafe)
    std::ifstream in(out);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string text = handshake("-tls1_2");
  EXPECT_TRUE(Contains(text, "New, TLSv1.2, Cipher is")) << text;
  text = handshake("-tls1_3");
  EXPECT_TRUE(Contains(text, "New, TLSv1.3, Cipher is")) << text;
  text = handshake("-tls1_1");
  EXPECT_TRUE(Contains(text, "New, (NONE), Cipher is (NONE)")) << text;
  EXPECT_TRUE(Contains(text, "alert protocol version")) << text;
}

// The stream's pending read (which notices a client leaving) and its writes share the TLS
// stream: a change after the first event must still arrive.
TEST_F(TlsTest, WatchStreamsOverTls) {
  ApiServerOptions options = TlsOptions();
  options.watch_interval = std::chrono::milliseconds(20);
  ApiServer& server = Start(fake_, options);
  ApiClient client(Https(server), WithCa());
  std::vector<std::string> names;
  const Status s =
      client.Watch("/api/v1/nodes?watch=1", [&](std::string_view event, std::string_view data) {
        EXPECT_EQ(event, "nodes");
        const json doc = json::parse(data);
        names.push_back(doc["nodes"].empty() ? "" : doc["nodes"][0]["name"].get<std::string>());
        if (names.size() == 1) {
          std::lock_guard<std::mutex> lock(fake_.mu);
          Node node;
          node.name = NodeId("gpu-7");
          fake_.nodes.push_back(node);
        }
        return names.size() < 2;
      });
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(names, (std::vector<std::string>{"", "gpu-7"}));
}

TEST_F(TlsTest, StartNamesTheBadFile) {
  ApiServerOptions missing = TlsOptions();
  missing.tls_cert_file = Pki().Path("nope.pem");
  Status s = StartError(missing);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(s.error().message, "TLS certificate file " + missing.tls_cert_file));

  ApiServerOptions not_pem = TlsOptions();
  not_pem.tls_cert_file = Pki().Path("server.ext");
  s = StartError(not_pem);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message, not_pem.tls_cert_file + ": not a PEM certificate"))
      << s.error().message;

  ApiServerOptions mismatch = TlsOptions();
  mismatch.tls_key_file = Pki().Path("other-ca.key");
  s = StartError(mismatch);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(
      Contains(s.error().message, "does not match the certificate in " + mismatch.tls_cert_file))
      << s.error().message;

  ApiServerOptions half = TlsOptions();
  half.tls_key_file.clear();
  s = StartError(half);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message, "both a certificate and a key")) << s.error().message;
}

TEST_F(TlsTest, AWorldReadableKeyIsRefused) {
  const std::string key = Pki().Path("open.key");
  std::filesystem::copy_file(Pki().Path("server.key"), key);
  ::chmod(key.c_str(), 0644);
  ApiServerOptions options = TlsOptions();
  options.tls_key_file = key;
  const Status s = StartError(options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kPermissionDenied);
  EXPECT_TRUE(Contains(s.error().message, "chmod o-r " + key)) << s.error().message;
}

// ---- bearer tokens ----

Result<Caller> TestAuthenticator(std::string_view token) {
  if (token != "s3cret") {
    return InvalidArgument("unknown or revoked token");
  }
  Caller caller;
  caller.authenticated = true;
  caller.uid = 4321;
  caller.gid = 4321;
  caller.user = "bob";
  caller.role = Role::kOperator;
  return caller;
}

TEST_F(TlsTest, ABearerTokenBecomesTheCaller) {
  ApiServerOptions options = TlsOptions();
  options.authenticate = TestAuthenticator;
  ApiServer& server = Start(fake_, options);
  ApiClientOptions client_options = WithCa();
  client_options.token = "s3cret";
  ApiClient client(Https(server), client_options);
  auto jobs = client.CallJson("GET", "/api/v1/jobs");
  ASSERT_TRUE(jobs.ok()) << jobs.error().ToString();
  const auto caller = fake_.LastCaller();
  ASSERT_TRUE(caller.has_value());
  EXPECT_TRUE(caller->authenticated);
  EXPECT_EQ(caller->user, "bob");
  EXPECT_EQ(caller->uid, 4321u);
  EXPECT_EQ(caller->role, Role::kOperator);
}

TEST_F(TlsTest, ARefusedTokenIs401WithTheReason) {
  ApiServerOptions options;  // plain TCP: tokens do not need TLS on loopback
  options.authenticate = TestAuthenticator;
  ApiServer& server = Start(fake_, options);
  ApiClientOptions client_options;
  client_options.token = "wrong";
  ApiClient client(Http(server), client_options);
  auto raw = client.Call("GET", "/api/v1/nodes");
  ASSERT_TRUE(raw.ok()) << raw.error().ToString();
  EXPECT_EQ(raw->status, 401);
  EXPECT_EQ(raw->Header("WWW-Authenticate"), "Bearer");
  const json body = json::parse(raw->body);
  EXPECT_EQ(body["error"]["code"], "unauthenticated");
  EXPECT_EQ(body["error"]["message"], "unknown or revoked token");
  EXPECT_EQ(fake_.Calls(), 0);  // refused before any route ran

  auto basic = client.Call("GET", "/api/v1/nodes", std::nullopt, {{"Authorization", "Basic x"}});
  ASSERT_TRUE(basic.ok());
  EXPECT_EQ(basic->status, 401);
  EXPECT_TRUE(Contains(basic->body, "scheme 'Basic' is not supported")) << basic->body;
}

TEST_F(TlsTest, NoTokenStaysUnauthenticated) {
  ApiServerOptions options;
  options.authenticate = TestAuthenticator;
  ApiServer& server = Start(fake_, options);
  ApiClient client(Http(server));
  auto nodes = client.CallJson("GET", "/api/v1/nodes");
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  ASSERT_TRUE(fake_.LastCaller().has_value());
  EXPECT_FALSE(fake_.LastCaller()->authenticated);
}

TEST_F(TlsTest, TheTokenNeverGoesOverTheUnixSocket) {
  char tmpl[] = "/tmp/gf-tls-sock-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string socket = std::string(tmpl) + "/gpufleet.sock";
  int authenticated = 0;
  ApiServerOptions options;
  options.tcp_port = -1;
  options.unix_socket_path = socket;
  options.authenticate = [&authenticated](std::string_view token) {
    ++authenticated;
    return TestAuthenticator(token);
  };
  Start(fake_, options);
  ApiClientOptions client_options;
  client_options.token = "s3cret";
  ApiClient client(socket, client_options);
  auto nodes = client.CallJson("GET", "/api/v1/nodes");
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  EXPECT_EQ(authenticated, 0);
  EXPECT_EQ(fake_.LastCaller()->uid, ::getuid());  // the kernel's word, not the token's
  servers_.clear();
  std::filesystem::remove_all(tmpl);
}

// ---- several endpoints ----

TEST_F(TlsTest, AClosedPortIsSkippedAndTheAnsweringOneRemembered) {
  ApiServer& server = Start(fake_, TlsOptions());
  const std::string dead = "https://127.0.0.1:" + std::to_string(ClosedPort());
  ApiClient client(dead + "," + Https(server), WithCa());
  auto nodes = client.CallJson("GET", "/api/v1/nodes");
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  auto submitted =
      client.CallJson("POST", "/api/v1/jobs", json{{"command", {"true"}}, {"gpus", 0}});
  EXPECT_FALSE(submitted.ok());  // TCP without a token: 401, from the live server
  EXPECT_EQ(fake_.Calls(), 1);
}

TEST_F(TlsTest, AStandbysUnavailableAnswerGoesToTheNext) {
  FakeClusterService standby;
  standby.fail_with = Unavailable("this server is a standby; the leader is elsewhere");
  ApiServer& first = Start(standby, TlsOptions());
  ApiServer& second = Start(fake_, TlsOptions());
  ApiClient client(Https(first) + ", " + Https(second), WithCa());
  for (int i = 0; i < 3; ++i) {
    auto nodes = client.CallJson("GET", "/api/v1/nodes");
    ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  }
  EXPECT_EQ(standby.Calls(), 1);  // asked once, then the leader was remembered
  EXPECT_EQ(fake_.Calls(), 3);

  std::vector<std::string> events;
  ApiClient watcher(Https(first) + "," + Https(second), WithCa());
  const Status s =
      watcher.Watch("/api/v1/nodes?watch=1", [&](std::string_view e, std::string_view) {
        events.emplace_back(e);
        return false;
      });
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(events, std::vector<std::string>{"nodes"});
}

TEST_F(TlsTest, WhenNoneAnswersTheErrorNamesEveryEndpoint) {
  const std::string a = "http://127.0.0.1:" + std::to_string(ClosedPort());
  const std::string b = "https://127.0.0.1:" + std::to_string(ClosedPort());
  ApiClient client(a + "," + b, WithCa());
  auto r = client.CallJson("GET", "/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(Contains(r.error().message, "tried 2 endpoints")) << r.error().message;
  EXPECT_TRUE(Contains(r.error().message, "cannot reach gpufleet at " + a)) << r.error().message;
  EXPECT_TRUE(Contains(r.error().message, "cannot reach gpufleet at " + b)) << r.error().message;
  const Status w = client.Watch("/api/v1/nodes?watch=1", [](auto, auto) { return false; });
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(Contains(w.error().message, "tried 2 endpoints")) << w.error().message;
}

TEST_F(TlsTest, AMissingCaFileIsNamed) {
  ApiClient client("https://127.0.0.1:1", WithCa("no-such-ca.pem"));
  auto r = client.CallJson("GET", "/api/v1/health");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(r.error().message, "CA file " + Pki().Path("no-such-ca.pem")))
      << r.error().message;
}

// ---- token files ----

TEST(TokenFileTest, ReadsTheTokenAndRefusesWhatOthersCanRead) {
  char tmpl[] = "/tmp/gf-token-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/token";
  std::ofstream(path) << "  gft_abc.def \n";
  ::chmod(path.c_str(), 0600);
  auto token = ReadTokenFile(path);
  ASSERT_TRUE(token.ok()) << token.error().ToString();
  EXPECT_EQ(*token, "gft_abc.def");

  ::chmod(path.c_str(), 0640);
  token = ReadTokenFile(path);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().code, ErrorCode::kPermissionDenied);
  EXPECT_TRUE(Contains(token.error().message, "mode 0640")) << token.error().message;
  EXPECT_TRUE(Contains(token.error().message, "chmod 600 " + path)) << token.error().message;

  std::ofstream(path, std::ios::trunc) << "\n";
  ::chmod(path.c_str(), 0600);
  token = ReadTokenFile(path);
  ASSERT_FALSE(token.ok());
  EXPECT_TRUE(Contains(token.error().message, "is empty")) << token.error().message;

  token = ReadTokenFile(std::string(tmpl) + "/none");
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error().code, ErrorCode::kNotFound);
  std::filesystem::remove_all(tmpl);
}

// A service-account token the kubelet projects into a pod is 0644 by default: read as it is,
// named as the caller names it; still one word, still not empty.
TEST(TokenFileTest, AFileAnyoneMayReadIsTakenWhenTheCallerSaysSo) {
  char tmpl[] = "/tmp/gf-token-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/token";
  std::ofstream(path) << "eyJhbGciOi.payload.sig\n";
  ::chmod(path.c_str(), 0644);
  auto token = ReadTokenFile(path, "Kubernetes token file", SecretReaders::kAnyone);
  ASSERT_TRUE(token.ok()) << token.error().ToString();
  EXPECT_EQ(*token, "eyJhbGciOi.payload.sig");
  EXPECT_EQ(ReadTokenFile(path).error().code, ErrorCode::kPermissionDenied);  // the default

  std::ofstream(path, std::ios::trunc) << "two words\n";
  token = ReadTokenFile(path, "Kubernetes token file", SecretReaders::kAnyone);
  ASSERT_FALSE(token.ok());
  EXPECT_TRUE(Contains(token.error().message, "Kubernetes token file " + path + " holds more"))
      << token.error().message;
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace gf
