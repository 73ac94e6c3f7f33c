// The daemon's tables of the config file: [up] (addresses, files, labels), [api] (its
// limits), [notify], [sharing] and [energy]. Apart from the scheduling policy's tables
// (config_policy.cpp): these configure `gpufleet up` itself, each value with where it was set.
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config_parser.h"
#include "model/node.h"

namespace gf {

Status ConfigParser::ParseUp(const TomlValue& v) {
  GF_ASSIGN_OR_RETURN(const Section s, TableSection(v, "[up]", ""));
  GF_TRY(CheckKeys(s,
                   {"data_dir",
                    "db",
                    "gpu_self_test",
                    "gpu_self_test_interval",
                    "gpus",
                    "host",
                    "idle_power_after",
                    "idle_power_limit",
                    "kill_grace",
                    "labels",
                    "listen_socket",
                    "mps_control",
                    "no_process_after",
                    "node_cpus",
                    "node_mem",
                    "node_name",
                    "port",
                    "reserve_cpus",
                    "reserve_mem",
                    "sample_interval",
                    "tls_cert",
                    "tls_key"}));
  UpConfig& up = config_.up;
  GF_TRY(UpString(s, "tls_cert", up.tls_cert));
  GF_TRY(UpString(s, "tls_key", up.tls_key));
  GF_TRY(UpString(s, "gpus", up.gpus));
  GF_TRY(UpString(s, "data_dir", up.data_dir));
  GF_TRY(UpString(s, "db", up.db));
  GF_TRY(UpString(s, "listen_socket", up.listen_socket));
  GF_TRY(UpString(s, "host", up.host));
  GF_TRY(UpString(s, "node_name", up.node_name));
  GF_ASSIGN_OR_RETURN(const auto port, IntIn(s, "port", -1, 65535));
  Wrap(s, "port", port, up.port);
  GF_ASSIGN_OR_RETURN(const auto grace, Duration(s, "kill_grace", /*zero_ok=*/true));
  Wrap(s, "kill_grace", grace, up.kill_grace);
  GF_ASSIGN_OR_RETURN(const auto interval, Duration(s, "sample_interval"));
  Wrap(s, "sample_interval", interval, up.sample_interval);
  GF_ASSIGN_OR_RETURN(const auto no_process, Duration(s, "no_process_after"));
  Wrap(s, "no_process_after", no_process, up.no_process_after);
  GF_ASSIGN_OR_RETURN(const auto power_limit, IntIn(s, "idle_power_limit", 1, kMaxIdlePowerLimitW));
  Wrap(s, "idle_power_limit", power_limit, up.idle_power_limit);
  GF_ASSIGN_OR_RETURN(const auto power_after, Duration(s, "idle_power_after"));
  Wrap(s, "idle_power_after", power_after, up.idle_power_after);
  GF_TRY(UpString(s, "gpu_self_test", up.gpu_self_test));
  GF_TRY(UpString(s, "mps_control", up.mps_control));
  GF_TRY(UpString(s, "node_cpus", up.node_cpus));
  GF_TRY(UpString(s, "node_mem", up.node_mem));
  GF_TRY(UpString(s, "reserve_cpus", up.reserve_cpus));
  GF_TRY(UpString(s, "reserve_mem", up.reserve_mem));
  GF_ASSIGN_OR_RETURN(const auto self_test_every, Duration(s, "gpu_self_test_interval"));
  Wrap(s, "gpu_self_test_interval", self_test_every, up.gpu_self_test_interval);
  return ParseUpLabels(s);
}

// [api]: the API server's limits (docs/config.md). The upper bounds only catch typos that
// would be no limit at all; the server checks nothing more.
Status ConfigParser::ParseApi(const TomlValue& v) {
  GF_ASSIGN_OR_RETURN(const Section s, TableSection(v, "[api]", ""));
  GF_TRY(CheckKeys(s,
                   {"connections_per_client",
                    "max_connections",
                    "max_watches",
                    "rate_burst",
                    "rate_limit",
                    "watches_per_client"}));
  constexpr int kMost = 10'000'000;
  ApiConfig& api = config_.api;
  GF_ASSIGN_OR_RETURN(api.max_connections, IntIn(s, "max_connections", 0, kMost));
  GF_ASSIGN_OR_RETURN(api.connections_per_client, IntIn(s, "connections_per_client", 1, kMost));
  GF_ASSIGN_OR_RETURN(api.max_watches, IntIn(s, "max_watches", 1, kMost));
  GF_ASSIGN_OR_RETURN(api.watches_per_client, IntIn(s, "watches_per_client", 1, kMost));
  GF_ASSIGN_OR_RETURN(api.rate_limit, NonNegative(s, "rate_limit"));
  GF_ASSIGN_OR_RETURN(api.rate_burst, IntIn(s, "rate_burst", 1, kMost));
  return OkStatus();
}

// [notify]: how notifications are delivered (docs/config.md). Checked further (the CA file
// exists) by the daemon when it creates its notifier.
Status ConfigParser::ParseNotify(const TomlValue& v) {
  GF_ASSIGN_OR_RETURN(const Section s, TableSection(v, "[notify]", ""));
  GF_TRY(CheckKeys(s,
                   {"ca_file",
                    "email_from",
                    "sendmail",
                    "webhook_allow",
                    "webhook_attempts",
                    "webhook_retry_delay",
                    "webhook_timeout"}));
  NotifyConfig& notify = config_.notify;
  GF_ASSIGN_OR_RETURN(notify.email_from, String(s, "email_from"));
  GF_ASSIGN_OR_RETURN(notify.sendmail, NonEmptyString(s, "sendmail"));
  GF_ASSIGN_OR_RETURN(notify.ca_file, NonEmptyString(s, "ca_file"));
  GF_ASSIGN_OR_RETURN(notify.webhook_attempts,
                      IntIn(s, "webhook_attempts", 1, kMaxWebhookAttempts));
  GF_ASSIGN_OR_RETURN(notify.webhook_timeout, Duration(s, "webhook_timeout"));
  GF_ASSIGN_OR_RETURN(notify.webhook_retry_delay, Duration(s, "webhook_retry_delay"));
  GF_ASSIGN_OR_RETURN(const auto allow, StringList(s, "webhook_allow"));
  if (allow) {
    Result<WebhookAllowList> parsed = WebhookAllowList::Parse(*allow);
    if (!parsed.ok()) {
      return KeyError(s, "webhook_allow", parsed.error().message);
    }
    notify.webhook_allow = std::move(*parsed);
  }
  return OkStatus();
}

Status ConfigParser::ParseSharing(const TomlValue& v) {
  GF_ASSIGN_OR_RETURN(const Section s, TableSection(v, "[sharing]", ""));
  GF_TRY(CheckKeys(s, {"memory_breach", "memory_breach_grace", "placement"}));
  GF_ASSIGN_OR_RETURN(const std::optional<std::string> placement, String(s, "placement"));
  if (placement) {
    Result<SharePlacement> parsed = ParseSharePlacement(*placement);
    if (!parsed.ok()) {
      return KeyError(s, "placement", parsed.error().message);
    }
    config_.policy.share_placement = *parsed;
  }
  GF_ASSIGN_OR_RETURN(const std::optional<std::string> breach, String(s, "memory_breach"));
  if (breach) {
    Result<MemoryBreach> parsed = ParseMemoryBreach(*breach, "memory_breach");
    if (!parsed.ok()) {
      return KeyError(s,
                      "memory_breach",
                      "'" + *breach +
                          "' is not a policy; use \"kill\" "
                          "(the job's largest process on the GPU) or \"warn\"");
    }
    config_.sharing.memory_breach = *parsed;
  }
  GF_ASSIGN_OR_RETURN(const auto grace, Duration(s, "memory_breach_grace"));
  if (grace) {
    config_.sharing.memory_breach_grace = *grace;
  }
  return OkStatus();
}

Status ConfigParser::ParseEnergy(const TomlValue& v) {
  GF_ASSIGN_OR_RETURN(const Section s, TableSection(v, "[energy]", ""));
  GF_TRY(CheckKeys(s, {"co2_g_per_kwh", "currency", "price_per_kwh"}));
  EnergyPrice& energy = config_.energy;
  GF_ASSIGN_OR_RETURN(energy.price_per_kwh, NonNegative(s, "price_per_kwh"));
  GF_ASSIGN_OR_RETURN(energy.co2_g_per_kwh, NonNegative(s, "co2_g_per_kwh"));
  GF_ASSIGN_OR_RETURN(const std::optional<std::string> currency, String(s, "currency"));
  if (currency) {
    if (currency->empty() || currency->size() > 8) {
      return KeyError(s,
                      "currency",
                      "'" + *currency +
                          "' is not a currency; use a short code "
                          "such as \"EUR\" or \"USD\"");
    }
    energy.currency = *currency;
  }
  return OkStatus();
}

// A number >= 0 (a price, an intensity), or nothing.
Result<std::optional<double>> ConfigParser::NonNegative(const Section& s,
                                                        const std::string& key) const {
  GF_ASSIGN_OR_RETURN(const std::optional<double> value, Number(s, key));
  if (value && !(*value >= 0 && std::isfinite(*value))) {
    return KeyError(s, key, std::to_string(*value) + " is not a valid figure; use a number >= 0");
  }
  return value;
}

// labels = { rack = "a", zone = "x" } (or an [up.labels] table): strings, valid labels.
Status ConfigParser::ParseUpLabels(const Section& up) {
  const auto it = up.Table().find("labels");
  if (it == up.Table().end()) {
    return OkStatus();
  }
  GF_ASSIGN_OR_RETURN(const Section s, TableSection(it->second, "[up] labels", ""));
  std::map<std::string, std::string> labels;
  for (const auto& [key, value] : s.Table()) {
    GF_ASSIGN_OR_RETURN(const auto text, String(s, key));
    if (Status valid = ValidateLabel(key, *text, "label"); !valid.ok()) {
      return KeyError(s, key, valid.error().message);
    }
    labels[key] = *text;
  }
  config_.up.labels = ConfigValue<std::map<std::string, std::string>>{labels, KeyAt(up, "labels")};
  return OkStatus();
}

// Every [up] string names a path, a program, a host or a spec: none may be "".
Status ConfigParser::UpString(const Section& s,
                              const std::string& key,
                              std::optional<ConfigValue<std::string>>& out) const {
  GF_ASSIGN_OR_RETURN(const auto value, NonEmptyString(s, key));
  Wrap(s, key, value, out);
  return OkStatus();
}

}  // namespace gf
