#include "cli/admin_commands.h"

#include <array>
#include <cerrno>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <unistd.h>

#include "api/json_mapping.h"
#include "cli/table.h"
#include "cli/views.h"

namespace gf {
namespace {

using json = nlohmann::json;

struct TokenCreate {
  std::string user;
  std::string node;
  std::string role = "user";
  std::string description;
  std::string expires;
  std::string output;  // write the token here (mode 0600) instead of printing it
  bool json = false;
};

Result<json> Post(const ClientContext& ctx, const std::string& target, const json& body) {
  GF_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> client, OpenClient(ctx));
  return client->CallJson("POST", target, body);
}

// The token goes to a new file only its owner may read: it is a password.
Status WriteTokenFile(const std::string& path, const std::string& token) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    return IoError("--output: cannot create " + path + ": " + ErrnoText(err) +
                   (err == EEXIST ? " (it exists; remove it or choose another path)" : ""));
  }
  const std::string line = token + "\n";
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  return ok ? OkStatus() : IoError("--output: cannot write " + path);
}

int RunTokenCreate(const ClientContext& ctx, const TokenCreate& o, bool node_token) {
  json body{{"kind", node_token ? "node" : "user"}, {"description", o.description}};
  if (node_token) {
    body["node"] = o.node;
  } else {
    body["user"] = o.user;
    body["role"] = o.role;
  }
  if (!o.expires.empty()) {
    body["expires"] = o.expires;
  }
  Result<json> issued = Post(ctx, "/api/v1/tokens", body);
  if (!issued.ok()) {
    return Fail(issued.error());
  }
  const std::string token = issued->value("token", "");
  if (!o.output.empty()) {
    if (Status s = WriteTokenFile(o.output, token); !s.ok()) {
      return Fail(Error{s.error().code,
                        s.error().message + "; token " + JsonText(*issued, "id") +
                            " was created: revoke it (gpufleet token revoke)"});
    }
    issued->erase("token");
  }
  if (o.json) {
    std::cout << issued->dump(2) << '\n';
    return 0;
  }
  std::cout << "Token " << JsonText(*issued, "id") << " created"
            << (node_token ? " (node " + (o.node.empty() ? std::string("any") : o.node) + ")"
                           : " for " + o.user + " (role " + o.role + ")")
            << ".\n";
  if (o.output.empty()) {
    std::cout << token << "\nShown once: keep it in a file only you can read (chmod 600).\n";
  } else {
    std::cout << "Written to " << o.output << " (mode 0600).\n";
  }
  return 0;
}

std::string TimeOrDash(const json& t, const char* key) {
  if (!t.contains(key) || !t[key].is_number()) {
    return "-";
  }
  return FormatRfc3339(FromUnixMillis(t[key].get<std::int64_t>()));
}

int RunTokenList(const ClientContext& ctx, bool as_json) {
  return RunRead(ctx, "/api/v1/tokens", as_json, [](const json& r) {
    Table table({"ID", "KIND", "FOR", "ROLE", "CREATED", "EXPIRES", "REVOKED", "DESCRIPTION"});
    for (const auto& t : r["tokens"]) {
      const bool node = JsonText(t, "kind") == "node";
      table.AddRow({JsonText(t, "id"),
                    JsonText(t, "kind"),
                    node ? JsonText(t, "node", "any node") : JsonText(t, "user"),
                    JsonText(t, "role"),
                    TimeOrDash(t, "created_ms"),
                    TimeOrDash(t, "expires_ms"),
                    TimeOrDash(t, "revoked_ms"),
                    JsonText(t, "description", "")});
    }
    table.Print(std::cout);
  });
}

int RunNodeAction(const ClientContext& ctx,
                  const std::string& node,
                  const std::string& action,
                  const json& body) {
  Result<json> answer = Post(ctx, "/api/v1/nodes/" + node + "/" + action, body);
  if (!answer.ok()) {
    return Fail(answer.error());
  }
  std::cout << "Node " << node << ": " << JsonText(*answer, "state");
  const std::string reason = JsonText(*answer, "state_reason", "");
  std::cout << (reason.empty() ? "" : " (" + reason + ")") << '\n';
  return 0;
}

// `gpufleet gpu resume NODE GPU`: the agent forgets the failure; the next sample decides.
int RunGpuResume(const ClientContext& ctx, const std::pair<std::string, std::string>& target) {
  const auto& [node, gpu] = target;
  Result<json> answer =
      Post(ctx, "/api/v1/nodes/" + node + "/gpus/" + gpu + "/resume", json::object());
  if (!answer.ok()) {
    return Fail(answer.error());
  }
  std::cout << "GPU " << JsonText(*answer, "index", gpu) << " on " << node << " ("
            << JsonText(*answer, "uuid", "") << ") was " << JsonText(*answer, "health")
            << ": its health is judged afresh from its next sample (gpufleet gpus shows it)\n";
  return 0;
}

// `gpufleet gpu mode NODE GPU MODE`: says whether the change took effect or waits.
int RunGpuMode(const ClientContext& ctx, const std::array<std::string, 3>& args) {
  const auto& [node, gpu, mode] = args;
  Result<json> answer =
      Post(ctx, "/api/v1/nodes/" + node + "/gpus/" + gpu + "/mode", json{{"mode", mode}});
  if (!answer.ok()) {
    return Fail(answer.error());
  }
  const std::string next = JsonText(*answer, "sharing_next", "");
  std::cout << "GPU " << JsonText(*answer, "index", gpu) << " on " << node << " ("
            << JsonText(*answer, "uuid", "") << ") "
            << (next.empty() ? "is " + JsonText(*answer, "sharing", mode)
                             : "becomes " + next +
                                   " once its jobs end (it takes no new work "
                                   "until then)")
            << '\n';
  return 0;
}

// `gpufleet gpu mig-layout NODE GPU LAYOUT`: says that the layout waits or is being applied.
int RunMigLayout(const ClientContext& ctx, const std::array<std::string, 3>& args) {
  const auto& [node, gpu, layout] = args;
  Result<json> answer =
      Post(ctx, "/api/v1/nodes/" + node + "/gpus/" + gpu + "/mig-layout", json{{"layout", layout}});
  if (!answer.ok()) {
    return Fail(answer.error());
  }
  std::cout << "GPU " << JsonText(*answer, "index", gpu) << " on " << node << " ("
            << JsonText(*answer, "uuid", "") << ") gets MIG devices " << layout
            << " once no job holds it; its agent then applies them (gpufleet gpus --json shows "
               "mig_layout_next until the GPU reports them)\n";
  return 0;
}

void AddTokenCreateOptions(CLI::App& cmd, TokenCreate& o) {
  cmd.add_option("--description", o.description, "what the token is for");
  cmd.add_option("--expires", o.expires, "lifetime, e.g. 90d (default: does not expire)");
  cmd.add_option("--output", o.output, "write the token to this new file (mode 0600)");
  cmd.add_flag("--json", o.json, "print JSON");
}

}  // namespace

void AddAdminCommands(CLI::App& app, ClientContext& ctx) {
  auto* token = app.add_subcommand("token", "API tokens for using gpufleet over TCP");
  token->require_subcommand(1);
  auto user_token = std::make_shared<TokenCreate>();
  auto* create = token->add_subcommand("create", "create a token acting as a user (admins)");
  create->add_option("--user", user_token->user, "the Unix user it acts as")->required();
  create->add_option("--role", user_token->role, "user, operator or admin")->capture_default_str();
  AddTokenCreateOptions(*create, *user_token);
  create->callback([&ctx, user_token] { ctx.exit_code = RunTokenCreate(ctx, *user_token, false); });
  auto list_json = std::make_shared<bool>(false);
  auto* list = token->add_subcommand("list", "tokens (admins: all; users: their own)");
  list->add_flag("--json", *list_json, "print JSON");
  list->callback([&ctx, list_json] { ctx.exit_code = RunTokenList(ctx, *list_json); });
  auto revoke_id = std::make_shared<std::string>();
  auto* revoke = token->add_subcommand("revoke", "revoke a token at once");
  revoke->add_option("ID", *revoke_id, "the token's id (gpufleet token list)")->required();
  revoke->callback([&ctx, revoke_id] {
    Result<json> r = Post(ctx, "/api/v1/tokens/" + *revoke_id + "/revoke", json::object());
    ctx.exit_code = r.ok() ? 0 : Fail(r.error());
    if (r.ok()) {
      std::cout << "Token " << *revoke_id << " revoked.\n";
    }
  });

  auto* node = app.add_subcommand("node", "administer nodes: join tokens, drain, resume");
  node->require_subcommand(1);
  auto* node_token = node->add_subcommand("token", "node tokens, for gpufleet agent");
  node_token->require_subcommand(1);
  auto node_create = std::make_shared<TokenCreate>();
  auto* ncreate = node_token->add_subcommand("create", "create a node token (admins)");
  ncreate->add_option(
      "--node", node_create->node, "the node it may register (default: any one node)");
  AddTokenCreateOptions(*ncreate, *node_create);
  ncreate->callback(
      [&ctx, node_create] { ctx.exit_code = RunTokenCreate(ctx, *node_create, true); });

  struct Drain {
    std::string node;
    std::string reason;
  };
  auto drain = std::make_shared<Drain>();
  auto* drain_cmd = node->add_subcommand("drain", "no new jobs on NODE; running ones go on");
  drain_cmd->add_option("NODE", drain->node)->required();
  drain_cmd->add_option("--reason", drain->reason, "why (shown by gpufleet nodes)")->required();
  drain_cmd->callback([&ctx, drain] {
    ctx.exit_code = RunNodeAction(ctx, drain->node, "drain", json{{"reason", drain->reason}});
  });
  auto resume_node = std::make_shared<std::string>();
  auto* resume = node->add_subcommand("resume", "NODE takes jobs again");
  resume->add_option("NODE", *resume_node)->required();
  resume->callback([&ctx, resume_node] {
    ctx.exit_code = RunNodeAction(ctx, *resume_node, "resume", json::object());
  });

  auto* gpu = app.add_subcommand("gpu", "administer GPUs: return a failed one to service");
  gpu->require_subcommand(1);
  auto resume_gpu = std::make_shared<std::pair<std::string, std::string>>();
  auto* gpu_resume = gpu->add_subcommand(
      "resume", "GPU on NODE (index or UUID) is judged afresh from its next sample (operators)");
  gpu_resume->add_option("NODE", resume_gpu->first)->required();
  gpu_resume->add_option("GPU", resume_gpu->second, "its index on the node, or its UUID")
      ->required();
  gpu_resume->callback([&ctx, resume_gpu] { ctx.exit_code = RunGpuResume(ctx, *resume_gpu); });
  auto mode = std::make_shared<std::array<std::string, 3>>();
  auto* gpu_mode = gpu->add_subcommand(
      "mode",
      "how GPU on NODE is shared: exclusive (whole jobs), shared or mps (fractional "
      "jobs), mig (follows the card's MIG mode); waits until its jobs end (admins)");
  gpu_mode->add_option("NODE", (*mode)[0])->required();
  gpu_mode->add_option("GPU", (*mode)[1], "its index on the node, or its UUID")->required();
  gpu_mode->add_option("MODE", (*mode)[2], "exclusive, shared or mps")->required();
  gpu_mode->callback([&ctx, mode] { ctx.exit_code = RunGpuMode(ctx, *mode); });
  auto layout = std::make_shared<std::array<std::string, 3>>();
  auto* gpu_layout =
      gpu->add_subcommand("mig-layout",
                          "the MIG devices of GPU on NODE (MIG on), e.g. 3g.40gb,2g.20gb,1g.10gb,"
                          "1g.10gb or none; applied once its jobs end (admins)");
  gpu_layout->add_option("NODE", (*layout)[0])->required();
  gpu_layout->add_option("GPU", (*layout)[1], "its index on the node, or its UUID")->required();
  gpu_layout->add_option("LAYOUT", (*layout)[2], "MIG profiles, comma-separated, or none")
      ->required();
  gpu_layout->callback([&ctx, layout] { ctx.exit_code = RunMigLayout(ctx, *layout); });
}

}  // namespace gf
