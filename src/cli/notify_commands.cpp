#include "cli/notify_commands.h"

#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/table.h"
#include "cli/views.h"
#include "model/notification.h"

namespace gf {
namespace {

using json = nlohmann::json;

// The error of a check, with the flag that gave the value in front.
Status ForFlag(std::string_view flag, Status status) {
  if (status.ok()) {
    return status;
  }
  return InvalidArgument(std::string(flag) + ": " + status.error().message);
}

std::string EventsText(const json& sub) {
  if (!sub.contains("events") || sub["events"].empty()) {
    return "all";
  }
  std::string text;
  for (const auto& event : sub["events"]) {
    text += (text.empty() ? "" : ",") + event.get<std::string>();
  }
  return text;
}

std::string ScopeText(const json& sub) {
  const std::string scope = JsonText(sub, "scope");
  if (scope == "team") {
    return "team " + JsonText(sub, "team");
  }
  if (scope == "job") {
    return "job " + JsonText(sub, "job");
  }
  return scope == "cluster" ? "all" : "own jobs";
}

int RunAdd(const ClientContext& ctx, const NotifyAddFlags& flags) {
  Result<json> body = SubscriptionBody(flags);
  if (!body.ok()) {
    return Fail(body.error());
  }
  Result<std::unique_ptr<ApiClient>> client = OpenClient(ctx);
  if (!client.ok()) {
    return Fail(client.error());
  }
  Result<json> sub = (*client)->CallJson("POST", "/api/v1/subscriptions", *body);
  if (!sub.ok()) {
    return Fail(sub.error());
  }
  std::cout << "Subscription " << JsonText(*sub, "id") << ": " << JsonText(*sub, "channel") << " "
            << JsonText(*sub, "target") << " hears of " << EventsText(*sub) << " for "
            << ScopeText(*sub) << ".\n";
  return 0;
}

int RunList(const ClientContext& ctx, bool as_json) {
  return RunRead(ctx, "/api/v1/subscriptions", as_json, [](const json& r) {
    Table table({"ID", "OWNER", "FOR", "CHANNEL", "TARGET", "EVENTS", "CREATED"});
    for (const auto& sub : r["subscriptions"]) {
      table.AddRow({JsonText(sub, "id"),
                    JsonText(sub, "owner"),
                    ScopeText(sub),
                    JsonText(sub, "channel"),
                    JsonText(sub, "target"),
                    EventsText(sub),
                    JsonText(sub, "created")});
    }
    table.Print(std::cout);
  });
}

int RunRemove(const ClientContext& ctx, const std::string& id) {
  Result<std::unique_ptr<ApiClient>> client = OpenClient(ctx);
  if (!client.ok()) {
    return Fail(client.error());
  }
  Result<json> removed = (*client)->CallJson("DELETE", "/api/v1/subscriptions/" + id);
  if (!removed.ok()) {
    return Fail(removed.error());
  }
  std::cout << "Subscription " << id << " removed.\n";
  return 0;
}

}  // namespace

Result<json> SubscriptionBody(const NotifyAddFlags& flags) {
  if (flags.webhook.empty() == flags.email.empty()) {
    return InvalidArgument("notify add: give one of --webhook URL or --email ADDRESS");
  }
  if (flags.all && !flags.team.empty()) {
    return InvalidArgument(
        "notify add: --team and --all exclude each other; --all already "
        "covers every team");
  }
  if (flags.job != 0 && (flags.all || !flags.team.empty())) {
    return InvalidArgument("notify add: --job names one job; leave out --team and --all");
  }
  if (flags.job < 0) {
    return InvalidArgument("notify add: --job: a job id is a positive number");
  }
  const bool webhook = !flags.webhook.empty();
  const NotifyChannel channel = webhook ? NotifyChannel::kWebhook : NotifyChannel::kEmail;
  const std::string& target = webhook ? flags.webhook : flags.email;
  GF_TRY(ForFlag(webhook ? "--webhook" : "--email", CheckSubscriptionTarget(channel, target)));
  Result<std::vector<NotifyKind>> kinds = ParseNotifyKinds(flags.events);
  if (!kinds.ok()) {
    return InvalidArgument("--events: " + kinds.error().message);
  }
  json events = json::array();
  for (const NotifyKind kind : *kinds) {
    events.push_back(ToString(kind));
  }
  json body{{"channel", ToString(channel)}, {"target", target}, {"events", std::move(events)}};
  body["scope"] = flags.all        ? "cluster"
                  : flags.job != 0 ? "job"
                                   : (flags.team.empty() ? "user" : "team");
  if (!flags.team.empty()) {
    body["team"] = flags.team;
  }
  if (flags.job != 0) {
    body["job"] = flags.job;
  }
  return body;
}

void AddNotifyCommands(CLI::App& app, ClientContext& ctx) {
  auto* notify = app.add_subcommand(
      "notify",
      "notifications by webhook or e-mail: job end and failure, preemption, idle "
      "warning, budget at 80 % and 100 %, GPU failure");
  notify->require_subcommand(1);
  auto add_flags = std::make_shared<NotifyAddFlags>();
  auto* add = notify->add_subcommand("add", "subscribe: your jobs, a team's, or everything");
  add->add_option("--webhook", add_flags->webhook, "POST a JSON body to this http(s) URL");
  add->add_option("--email", add_flags->email, "mail this address (the server's sendmail)");
  add->add_option("--team", add_flags->team, "the team's jobs and budget (its members and admins)");
  add->add_flag("--all", add_flags->all, "everything, GPU failures included (admins)");
  add->add_option("--job",
                  add_flags->job,
                  "one job of yours (or every task of an array), until it ends "
                  "(what #SBATCH --mail-type does)");
  add->add_option("--events",
                  add_flags->events,
                  "only these, comma-separated: job_end, job_failed, preempted, idle_warning, "
                  "quota_80, quota_100, gpu_failed, memory_breach (default: all)");
  add->callback([&ctx, add_flags] { ctx.exit_code = RunAdd(ctx, *add_flags); });
  auto list_json = std::make_shared<bool>(false);
  auto* list = notify->add_subcommand("list", "subscriptions (admins: all; users: their own)");
  list->add_flag("--json", *list_json, "print JSON");
  list->callback([&ctx, list_json] { ctx.exit_code = RunList(ctx, *list_json); });
  auto remove_id = std::make_shared<std::string>();
  auto* remove = notify->add_subcommand("remove", "unsubscribe");
  remove->add_option("ID", *remove_id, "the subscription's id (gpufleet notify list)")->required();
  remove->callback([&ctx, remove_id] { ctx.exit_code = RunRemove(ctx, *remove_id); });
}

}  // namespace gf
