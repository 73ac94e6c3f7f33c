// The authorization table (src/controller/authorization.h, docs/cluster.md "Who may do what")
// walked row by row through real requests: a real Controller (SQLite) behind the real
// ApiServer and AgentHub, asked over the Unix socket (root, and a forked child that became
// `nobody`, so SO_PEERCRED names another uid) and over TCP with tokens of each role, a node
// token and no token. For every rule and every kind of caller the requests that exercise it
// must be let through (any answer but 401, 403 or 404; a list shows the item) or refused as the
// table says (401 for anonymous and node callers on routes that need an identity, else 403, or
// 404 and left out of lists). A rule without requests here fails the test.
//
// Needs root (to act as another uid on the socket); skipped otherwise.
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/agent_wire.h"
#include "api/api_server.h"
#include "controller/agent_hub.h"
#include "controller/authorization.h"
#include "controller/controller.h"
#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

constexpr std::uint32_t kNobody = 65534;  // the socket user that is not root
constexpr const char* kPeriod = "2026-11";
const NodeId kNode("n1");  // the node the walk drains and whose GPU it configures

struct Reply {
  int status = 0;
  std::string body;
};

// One kind of caller of the table.
struct Identity {
  std::string name;       // for failure messages
  Principal principal;    // what the table should make of it
  bool socket = false;    // over the Unix socket (else TCP)
  std::uint32_t uid = 0;  // who it is (socket: its uid; token: the uid the token acts as)
  std::string user{};     // its login name ("" for anonymous and node callers)
  std::string token{};    // TCP: its bearer token ("" = none)
  std::string team{};     // its team (ControllerOptions::team_of_user)
  // What it owns or does not, made before the walk so that a refusal is never a missing thing.
  JobId own_job{};
  JobId other_job{};
  std::string own_token_id{};  // a spare token acting as it (revoking it breaks nothing)
  std::string own_sub_read{};
  std::string own_sub_delete{};
  std::string other_sub_delete{};
};

// One request of a rule. `listed`: a list read, let through when the list shows this text.
struct Probe {
  Probe(std::string m, std::string p, std::string b = "", std::string l = "")
      : method(std::move(m)), path(std::move(p)), body(std::move(b)), listed(std::move(l)) {}
  std::string method;
  std::string path;
  std::string body;
  std::string listed;
};

using Key = std::tuple<Resource, Action, Ownership>;
using Probes = std::function<std::vector<Probe>(const Identity&)>;

// Writes `request` to `fd` and reads the answer until the server closes. Only system calls and
// no allocation: the forked child runs it.
void Exchange(int fd, const char* request, std::size_t size, int out_fd) {
  std::size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::write(fd, request + sent, size - sent);
    if (n <= 0) {
      return;
    }
    sent += static_cast<std::size_t>(n);
  }
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
    if (::write(out_fd, buf, static_cast<std::size_t>(n)) != n) {
      return;
    }
  }
}

Reply Parse(const std::string& raw) {
  Reply reply;
  if (raw.size() > 12 && raw.starts_with("HTTP/1.1 ")) {
    reply.status = std::stoi(raw.substr(9, 3));
  }
  const auto end = raw.find("\r\n\r\n");
  reply.body = end == std::string::npos ? "" : raw.substr(end + 4);
  return reply;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

class AuthorizationWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root: the walk asks over the Unix socket as root and as another uid";
    }
    char tmpl[] = "/tmp/gf-authz-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);  // `nobody` reaches the socket in it
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    ControllerOptions options;
    options.tick = Millis(10);
    options.node_timeout = Millis(0);
    options.team_of_user = {{"root", "ops"},
                            {"nobody", "vision"},
                            {"daemon", "ops"},
                            {"bin", "ops"},
                            {"sys", "vision"}};
    // Configured teams, so that naming one at submit is checked (submit_team.h); nobody of
    // the walk is in nlp.
    options.policy.teams = {
        TeamPolicy{.name = "ops"}, TeamPolicy{.name = "vision"}, TeamPolicy{.name = "nlp"}};
    controller_ = std::make_unique<Controller>(std::move(*store), clock_, options);
    ASSERT_TRUE(controller_->Load().ok());
    controller_->Start();
    controller_->AttachAgent(kNode, &agent_);
    controller_->OnAgentHello(
        AgentHello{.node = TestNode(1, "n1", "n1-"), .running = {}, .ended = {}});
    hub_ = std::make_unique<AgentHub>(*controller_, [this](const NodeId& node, NodeAgent* agent) {
      controller_->AttachAgent(node, agent);
    });
    ApiServerOptions api;
    api.unix_socket_path = (dir_ / "api.sock").string();
    api.tcp_port = 0;
    api.agent_link = hub_.get();
    api.authenticate = [this](std::string_view token) {
      return controller_->Authenticate(token);
    };
    server_ = std::make_unique<ApiServer>(*controller_, api);
    const Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started.error().ToString();
    MakeIdentities();
  }

  void TearDown() override {
    server_.reset();
    hub_.reset();
    controller_.reset();
    if (!dir_.empty()) {
      std::filesystem::remove_all(dir_);
    }
  }

  // ---- the callers and what they own -------------------------------------------------------

  std::string Token(const std::string& user, Role role, TokenKind kind = TokenKind::kUser) {
    auto issued = controller_->CreateToken(
        root_, TokenRequest{.kind = kind, .subject = user, .role = role, .description = "walk"});
    EXPECT_TRUE(issued.ok()) << issued.error().ToString();
    return issued.ok() ? issued->text : "";
  }
  std::string TokenId(const std::string& user) {
    auto issued = controller_->CreateToken(
        root_, TokenRequest{.kind = TokenKind::kUser, .subject = user, .role = Role::kUser});
    EXPECT_TRUE(issued.ok()) << issued.error().ToString();
    return issued.ok() ? issued->token.id : "";
  }
  JobId Job(std::uint32_t uid, const std::string& user) {
    JobSpec spec;
    spec.argv = {"sleep", "100"};
    spec.workdir = "/tmp";
    spec.request.gpus = 1;
    auto job = controller_->Submit(TestCaller(uid, user), spec);
    EXPECT_TRUE(job.ok()) << job.error().ToString();
    return job.ok() ? job->id : JobId();
  }
  std::string Sub(std::uint32_t uid, const std::string& user) {
    auto sub = controller_->CreateSubscription(
        TestCaller(uid, user),
        Subscription{.channel = NotifyChannel::kEmail, .target = user + "@example.com"});
    EXPECT_TRUE(sub.ok()) << sub.error().ToString();
    return sub.ok() ? sub->id : "";
  }

  void MakeIdentities() {
    identities_ = {
        {.name = "root on the socket",
         .principal = Principal::kAdmin,
         .socket = true,
         .uid = 0,
         .user = "root",
         .team = "ops"},
        {.name = "nobody on the socket",
         .principal = Principal::kUser,
         .socket = true,
         .uid = kNobody,
         .user = "nobody",
         .team = "vision"},
        {.name = "admin token (daemon)",
         .principal = Principal::kAdmin,
         .uid = 1,
         .user = "daemon",
         .token = Token("daemon", Role::kAdmin),
         .team = "ops"},
        {.name = "operator token (bin)",
         .principal = Principal::kOperator,
         .uid = 2,
         .user = "bin",
         .token = Token("bin", Role::kOperator),
         .team = "ops"},
        {.name = "user token (sys)",
         .principal = Principal::kUser,
         .uid = 3,
         .user = "sys",
         .token = Token("sys", Role::kUser),
         .team = "vision"},
        // Issue #20: root's token of role user was a full admin.
        {.name = "user token of root",
         .principal = Principal::kUser,
         .uid = 0,
         .user = "root",
         .token = Token("root", Role::kUser),
         .team = "ops"},
        {.name = "anonymous TCP", .principal = Principal::kAnonymous, .uid = 0},
        {.name = "node token (n7)",
         .principal = Principal::kNode,
         .uid = 0,
         .token = Token("n7", Role::kUser, TokenKind::kNode)},
    };
    const JobId root_job = Job(0, "root");
    const JobId nobody_job = Job(kNobody, "nobody");
    std::map<std::uint32_t, JobId> job_of = {{0, root_job}, {kNobody, nobody_job}};
    other_token_id_ = TokenId("mail");
    other_sub_read_ = Sub(8, "mail");
    for (Identity& id : identities_) {
      const bool user = !id.user.empty();
      if (user && !job_of.contains(id.uid)) {
        job_of[id.uid] = Job(id.uid, id.user);
      }
      id.own_job = job_of.contains(id.uid) && user ? job_of[id.uid] : root_job;
      id.other_job = id.uid == kNobody ? root_job : nobody_job;
      id.own_token_id = user ? TokenId(id.user) : other_token_id_;
      id.own_sub_read = user ? Sub(id.uid, id.user) : other_sub_read_;
      id.own_sub_delete = user ? Sub(id.uid, id.user) : other_sub_read_;
      id.other_sub_delete = Sub(8, "mail");
    }
  }

  // ---- requests ----------------------------------------------------------------------------

  Reply Ask(const Identity& id, const Probe& probe) {
    std::string request =
        probe.method + " " + probe.path + " HTTP/1.1\r\nHost: gpufleet\r\nConnection: close\r\n";
    if (!id.token.empty()) {
      request += "Authorization: Bearer " + id.token + "\r\n";
    }
    if (!probe.body.empty()) {
      request +=
          "Content-Type: application/json\r\nContent-Length: " + std::to_string(probe.body.size()) +
          "\r\n";
    }
    request += "\r\n" + probe.body;
    if (!id.socket) {
      return OverTcp(request);
    }
    return OnSocket(request, id.uid);
  }

  Reply OverTcp(const std::string& request) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(server_->tcp_port()));
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    const std::string raw = ReadAll(fd);
    ::close(fd);
    return Parse(raw);
  }

  // Over the Unix socket as `uid`: root asks itself; another uid is a forked child that drops
  // to it (setgroups/setgid/setuid), so the kernel's SO_PEERCRED names that uid. The child only
  // makes system calls (the parent has threads), and hands the answer back through a pipe.
  Reply OnSocket(const std::string& request, std::uint32_t uid) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = (dir_ / "api.sock").string();
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int out[2];
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(out[0]);
      if (uid != 0 && (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0)) {
        ::_exit(2);
      }
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::_exit(3);
      }
      Exchange(fd, request.data(), request.size(), out[1]);
      ::_exit(0);
    }
    ::close(out[1]);
    const std::string raw = ReadAll(out[0]);
    ::close(out[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child as uid " << uid;
    return Parse(raw);
  }

  // ---- the requests of each rule -------------------------------------------------------------

  static std::string Id(JobId id) { return std::to_string(id.value()); }

  std::map<Key, Probes> ProbesOfRules() const {
    const std::string subscribe = R"({"channel":"email","target":"walk@example.com","scope":")";
    std::map<Key, Probes> probes;
    probes[{Resource::kCluster, Action::kRead, Ownership::kNone}] = [](const Identity&) {
      return std::vector<Probe>{{"GET", "/api/v1/health"},
                                {"GET", "/api/v1/nodes"},
                                {"GET", "/api/v1/gpus"},
                                {"GET", "/metrics"}};
    };
    probes[{Resource::kJob, Action::kSubmit, Ownership::kNone}] = [](const Identity&) {
      return std::vector<Probe>{
          {"POST", "/api/v1/jobs", R"({"command":["true"],"workdir":"/tmp","gpus":1})"}};
    };
    const auto read = [](JobId job) {
      const std::string base = "/api/v1/jobs/" + Id(job);
      return std::vector<Probe>{{"GET", base},
                                {"GET", base + "/events"},
                                {"GET", base + "/runs"},
                                {"GET", base + "/explain"},
                                {"GET", base + "/logs"},
                                {"GET", "/api/v1/jobs?all=1", "", "\"id\":" + Id(job) + ","}};
    };
    probes[{Resource::kJob, Action::kRead, Ownership::kOwn}] = [read](const Identity& id) {
      return read(id.own_job);
    };
    probes[{Resource::kJob, Action::kRead, Ownership::kOther}] = [read](const Identity& id) {
      return read(id.other_job);
    };
    probes[{Resource::kJob, Action::kList, Ownership::kOwn}] = [](const Identity& id) {
      return std::vector<Probe>{{"GET", "/api/v1/jobs?user=" + id.user}};
    };
    probes[{Resource::kJob, Action::kList, Ownership::kOther}] = [](const Identity&) {
      return std::vector<Probe>{{"GET", "/api/v1/jobs?user=mail"}};
    };
    const auto cancel = [](JobId job) {
      return std::vector<Probe>{{"POST", "/api/v1/jobs/" + Id(job) + "/cancel"},
                                {"POST", "/api/v1/arrays/" + Id(job) + "/cancel"}};
    };
    probes[{Resource::kJob, Action::kCancel, Ownership::kOwn}] = [cancel](const Identity& id) {
      return cancel(id.own_job);
    };
    probes[{Resource::kJob, Action::kCancel, Ownership::kOther}] = [cancel](const Identity& id) {
      return cancel(id.other_job);
    };
    probes[{Resource::kJob, Action::kCheckpoint, Ownership::kOwn}] = [](const Identity& id) {
      return std::vector<Probe>{{"POST", "/api/v1/jobs/" + Id(id.own_job) + "/checkpoint"}};
    };
    probes[{Resource::kJob, Action::kCheckpoint, Ownership::kOther}] = [](const Identity& id) {
      return std::vector<Probe>{{"POST", "/api/v1/jobs/" + Id(id.other_job) + "/checkpoint"}};
    };
    // Hold, release, requeue and update: one request each, on the caller's job or another's. A
    // job the walk already cancelled answers 409 (its state), which is let through.
    const std::vector<std::pair<Action, std::string>> job_controls = {
        {Action::kHold, "/hold"},
        {Action::kRelease, "/release"},
        {Action::kRequeue, "/requeue"},
        {Action::kUpdate, "/update"}};
    for (const auto& [action, suffix] : job_controls) {
      const std::string body = action == Action::kUpdate ? R"({"name":"walk"})" : "";
      probes[{Resource::kJob, action, Ownership::kOwn}] = [suffix, body](const Identity& id) {
        return std::vector<Probe>{{"POST", "/api/v1/jobs/" + Id(id.own_job) + suffix, body}};
      };
      probes[{Resource::kJob, action, Ownership::kOther}] = [suffix, body](const Identity& id) {
        return std::vector<Probe>{{"POST", "/api/v1/jobs/" + Id(id.other_job) + suffix, body}};
      };
    }
    // Typing into a job's terminal: the walk's jobs have none, so who may gets 409 (no
    // terminal), who may not 404.
    probes[{Resource::kJob, Action::kAttach, Ownership::kOwn}] = [](const Identity& id) {
      return std::vector<Probe>{{"POST", "/api/v1/jobs/" + Id(id.own_job) + "/terminal", "{}"}};
    };
    probes[{Resource::kJob, Action::kAttach, Ownership::kOther}] = [](const Identity& id) {
      return std::vector<Probe>{{"POST", "/api/v1/jobs/" + Id(id.other_job) + "/terminal", "{}"}};
    };
    probes[{Resource::kJob, Action::kApprove, Ownership::kNone}] = [](const Identity& id) {
      return std::vector<Probe>{{"POST", "/api/v1/jobs/" + Id(id.own_job) + "/approve"},
                                {"POST", "/api/v1/jobs/" + Id(id.other_job) + "/approve"}};
    };
    probes[{Resource::kTeam, Action::kRead, Ownership::kOwn}] = [](const Identity& id) {
      return std::vector<Probe>{
          {"GET", "/api/v1/report?period=" + std::string(kPeriod) + "&team=" + id.team},
          {"GET", "/api/v1/quota"}};
    };
    probes[{Resource::kTeam, Action::kRead, Ownership::kOther}] = [](const Identity&) {
      return std::vector<Probe>{
          {"GET", "/api/v1/report?period=" + std::string(kPeriod) + "&team=nlp"}};
    };
    const auto charge = [](const std::string& team) {
      return std::vector<Probe>{
          {"POST",
           "/api/v1/jobs",
           R"({"command":["true"],"workdir":"/tmp","gpus":1,"team":")" + team + "\"}"}};
    };
    probes[{Resource::kTeam, Action::kCharge, Ownership::kOwn}] = [charge](const Identity& id) {
      return charge(id.team.empty() ? "ops" : id.team);
    };
    probes[{Resource::kTeam, Action::kCharge, Ownership::kOther}] = [charge](const Identity&) {
      return charge("nlp");
    };
    probes[{Resource::kReport, Action::kRead, Ownership::kNone}] = [](const Identity&) {
      return std::vector<Probe>{{"GET", "/api/v1/report?period=" + std::string(kPeriod)}};
    };
    probes[{Resource::kToken, Action::kCreate, Ownership::kNone}] = [](const Identity&) {
      return std::vector<Probe>{{"POST", "/api/v1/tokens", R"({"user":"mail","role":"admin"})"}};
    };
    probes[{Resource::kToken, Action::kRead, Ownership::kOwn}] = [](const Identity& id) {
      return std::vector<Probe>{{"GET", "/api/v1/tokens", "", id.own_token_id}};
    };
    probes[{Resource::kToken, Action::kRead, Ownership::kOther}] = [this](const Identity&) {
      return std::vector<Probe>{{"GET", "/api/v1/tokens", "", other_token_id_}};
    };
    probes[{Resource::kToken, Action::kRevoke, Ownership::kOwn}] = [](const Identity& id) {
      return std::vector<Probe>{{"POST", "/api/v1/tokens/" + id.own_token_id + "/revoke"}};
    };
    probes[{Resource::kToken, Action::kRevoke, Ownership::kOther}] = [this](const Identity&) {
      return std::vector<Probe>{{"POST", "/api/v1/tokens/" + other_token_id_ + "/revoke"}};
    };
    probes[{Resource::kNode, Action::kDrain, Ownership::kNone}] = [](const Identity&) {
      return std::vector<Probe>{{"POST", "/api/v1/nodes/n1/drain", R"({"reason":"walk"})"},
                                {"POST", "/api/v1/nodes/n1/resume"}};
    };
    probes[{Resource::kGpu, Action::kResume, Ownership::kNone}] = [](const Identity&) {
      return std::vector<Probe>{{"POST", "/api/v1/nodes/n1/gpus/0/resume"}};
    };
    probes[{Resource::kGpu, Action::kConfigure, Ownership::kNone}] = [](const Identity&) {
      return std::vector<Probe>{
          {"POST", "/api/v1/nodes/n1/gpus/0/mode", R"({"mode":"exclusive"})"},
          {"POST", "/api/v1/nodes/n1/gpus/0/mig-layout", R"({"layout":"none"})"}};
    };
    probes[{Resource::kSubscription, Action::kCreate, Ownership::kOwn}] =
        [subscribe](const Identity& id) {
          return std::vector<Probe>{
              {"POST", "/api/v1/subscriptions", subscribe + R"(user"})"},
              {"POST",
               "/api/v1/subscriptions",
               subscribe + R"(team","team":")" + (id.team.empty() ? "ops" : id.team) + "\"}"}};
        };
    probes[{Resource::kSubscription, Action::kCreate, Ownership::kOther}] =
        [subscribe](const Identity&) {
          return std::vector<Probe>{
              {"POST", "/api/v1/subscriptions", subscribe + R"(cluster"})"},
              {"POST", "/api/v1/subscriptions", subscribe + R"(team","team":"nlp"})"}};
        };
    probes[{Resource::kSubscription, Action::kRead, Ownership::kOwn}] = [](const Identity& id) {
      return std::vector<Probe>{{"GET", "/api/v1/subscriptions", "", id.own_sub_read}};
    };
    probes[{Resource::kSubscription, Action::kRead, Ownership::kOther}] = [this](const Identity&) {
      return std::vector<Probe>{{"GET", "/api/v1/subscriptions", "", other_sub_read_}};
    };
    probes[{Resource::kSubscription, Action::kDelete, Ownership::kOwn}] = [](const Identity& id) {
      return std::vector<Probe>{{"DELETE", "/api/v1/subscriptions/" + id.own_sub_delete}};
    };
    probes[{Resource::kSubscription, Action::kDelete, Ownership::kOther}] = [](const Identity& id) {
      return std::vector<Probe>{{"DELETE", "/api/v1/subscriptions/" + id.other_sub_delete}};
    };
    const auto hello = [](const std::string& node) {
      return std::vector<Probe>{
          {"POST",
           "/api/v1/agent/hello",
           AgentHelloToJson(
               AgentHello{.node = TestNode(1, node, node + "-"), .running = {}, .ended = {}})
               .dump()}};
    };
    probes[{Resource::kAgentLink, Action::kUse, Ownership::kOwn}] = [hello](const Identity&) {
      return hello("n7");  // the node token's node; for everyone else, any node is another's
    };
    probes[{Resource::kAgentLink, Action::kUse, Ownership::kOther}] = [hello](const Identity&) {
      return hello("n8");
    };
    return probes;
  }

  std::filesystem::path dir_;
  ManualClock clock_;
  Caller root_ = TestCaller(0, "root");
  FakeAgent agent_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<AgentHub> hub_;
  std::unique_ptr<ApiServer> server_;
  std::vector<Identity> identities_;
  std::string other_token_id_;  // a token of `mail`, whom no caller of the walk is
  std::string other_sub_read_;  // a subscription of `mail`
};

bool Refused(int status) {
  return status == 401 || status == 403 || status == 404;
}

TEST_F(AuthorizationWalkTest, EveryRuleForEveryCallerOverTheSocketAndTcp) {
  const std::map<Key, Probes> probes = ProbesOfRules();
  for (const AuthorizationRule& rule : AuthorizationTable()) {
    const std::string cell = std::string(ToString(rule.resource)) + " " +
                             std::string(ToString(rule.action)) + " " +
                             std::string(ToString(rule.whose));
    const auto of_rule = probes.find({rule.resource, rule.action, rule.whose});
    if (of_rule == probes.end()) {
      ADD_FAILURE() << "no requests walk the rule '" << cell << "': add them to ProbesOfRules";
      continue;
    }
    // Routes that need an identity answer 401 to anonymous and node callers before any rule.
    const bool needs_identity =
        rule.resource != Resource::kCluster && rule.resource != Resource::kAgentLink;
    for (const Identity& id : identities_) {
      const bool allowed = rule.allowed[static_cast<std::size_t>(id.principal)];
      const bool unidentified =
          id.principal == Principal::kAnonymous || id.principal == Principal::kNode;
      for (const Probe& probe : of_rule->second(id)) {
        const Reply reply = Ask(id, probe);
        const std::string where = cell + ", " + id.name + ": " + probe.method + " " + probe.path +
                                  " answered " + std::to_string(reply.status) + " " + reply.body;
        if (allowed) {
          EXPECT_FALSE(Refused(reply.status)) << where;
          if (!probe.listed.empty()) {
            EXPECT_NE(reply.body.find(probe.listed), std::string::npos)
                << where << " (should list " << probe.listed << ")";
          }
        } else if (needs_identity && unidentified) {
          EXPECT_EQ(reply.status, 401) << where;
        } else if (!probe.listed.empty()) {  // a list leaves out what it may not read
          EXPECT_EQ(reply.status, 200) << where;
          EXPECT_EQ(reply.body.find(probe.listed), std::string::npos)
              << where << " (should not list " << probe.listed << ")";
        } else {
          EXPECT_EQ(reply.status, rule.refusal == Refusal::kForbidden ? 403 : 404) << where;
        }
      }
    }
  }
}

// The report of issue #20, step by step: `gpufleet token create --user root --role user`, then
// with that token: another user's jobs, cancelling one, minting an admin token.
TEST_F(AuthorizationWalkTest, RootsUserTokenIsAUser) {
  const Identity* root_user = nullptr;
  const Identity* nobody = nullptr;
  for (const Identity& id : identities_) {
    root_user = id.name == "user token of root" ? &id : root_user;
    nobody = id.name == "nobody on the socket" ? &id : nobody;
  }
  ASSERT_NE(root_user, nullptr);
  ASSERT_NE(nobody, nullptr);
  const std::string theirs = Id(nobody->own_job);
  const Reply list = Ask(*root_user, {"GET", "/api/v1/jobs?all=1"});
  EXPECT_EQ(list.status, 200);
  EXPECT_EQ(list.body.find("\"id\":" + theirs + ","), std::string::npos) << list.body;
  EXPECT_EQ(Ask(*root_user, {"GET", "/api/v1/jobs?user=nobody"}).status, 403);
  EXPECT_EQ(Ask(*root_user, {"POST", "/api/v1/jobs/" + theirs + "/cancel"}).status, 404);
  const Reply mint =
      Ask(*root_user, {"POST", "/api/v1/tokens", R"({"user":"daemon","role":"admin"})"});
  EXPECT_EQ(mint.status, 403) << mint.body;
  EXPECT_NE(mint.body.find("API token of role user"), std::string::npos) << mint.body;
  // Its own jobs it still touches; root on the socket is still an admin.
  EXPECT_EQ(Ask(*root_user, {"GET", "/api/v1/jobs/" + Id(root_user->own_job)}).status, 200);
  const Identity& root = identities_.front();
  EXPECT_EQ(Ask(root, {"POST", "/api/v1/jobs/" + theirs + "/cancel"}).status, 200);
}

}  // namespace
}  // namespace gf
