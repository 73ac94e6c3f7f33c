// Config: the administrator's settings file (DESIGN.md §4: one TOML file,
// /etc/gpufleet/gpufleet.toml or --config, every key also a flag).
//
// The file holds the scheduling policy ([scheduler], [class.NAME], [team.NAME], [other_teams])
// and the settings of `gpufleet up` ([up]); docs/config.md lists every key. Parsing is strict:
// an unknown key, a wrong type, a bad duration or a rule the policy rejects (ValidatePolicy)
// is an error naming the file, the line, the table and the key, and how to fix it. A key that
// the file leaves out keeps its stock value (policy.h), so an empty file is the stock policy.
//
// Plain values and pure functions (LoadConfig reads one file): safe from any thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "model/energy.h"
#include "model/node.h"
#include "model/webhook_allow.h"
#include "scheduler/policy.h"

namespace gf {

// Read by `gpufleet up` when it exists and no --config is given.
inline constexpr std::string_view kDefaultConfigPath = "/etc/gpufleet/gpufleet.toml";

// The most [up] idle_power_limit (and --idle-power-limit) accepts, in watts: above any GPU's.
inline constexpr int kMaxIdlePowerLimitW = 10'000;

// One [up] key's value and where the file set it ("gpufleet.toml:12: [up] port"), so that
// a check made later (by `gpufleet up`) can name the key instead of a flag.
template <typename T>
struct ConfigValue {
  T value{};
  std::string where{};
};

// [up]: the `gpufleet up` flags, same meaning and units; unset = the flag's default. Flags
// given on the command line win over these.
struct UpConfig {
  std::optional<ConfigValue<std::string>> gpus;                       // --gpus
  std::optional<ConfigValue<std::string>> data_dir;                   // --data-dir
  std::optional<ConfigValue<std::string>> db;                         // --db: store/open_store.h
  std::optional<ConfigValue<std::string>> listen_socket;              // --listen-socket
  std::optional<ConfigValue<std::string>> host;                       // --host
  std::optional<ConfigValue<int>> port;                               // --port
  std::optional<ConfigValue<std::chrono::seconds>> kill_grace;        // --kill-grace
  std::optional<ConfigValue<std::string>> node_name;                  // --node-name
  std::optional<ConfigValue<std::chrono::seconds>> sample_interval;   // --sample-interval
  std::optional<ConfigValue<std::chrono::seconds>> no_process_after;  // --no-process-after
  // The power policy (docs/automation.md): idle GPUs capped to this many watts after this long.
  std::optional<ConfigValue<int>> idle_power_limit;                         // --idle-power-limit
  std::optional<ConfigValue<std::chrono::seconds>> idle_power_after;        // --idle-power-after
  std::optional<ConfigValue<std::string>> gpu_self_test;                    // --gpu-self-test
  std::optional<ConfigValue<std::chrono::seconds>> gpu_self_test_interval;  // ...-interval
  std::optional<ConfigValue<std::string>> mps_control;                      // --mps-control
  // The node's capacity for jobs' --cpus / --mem (issue #24): text as the flags take it.
  std::optional<ConfigValue<std::string>> node_cpus;     // --node-cpus
  std::optional<ConfigValue<std::string>> node_mem;      // --node-mem
  std::optional<ConfigValue<std::string>> reserve_cpus;  // --reserve-cpus
  std::optional<ConfigValue<std::string>> reserve_mem;   // --reserve-mem
  // labels = { rack = "a" }: the node's labels, for jobs' --constraint (each --label flag of
  // `gpufleet up` adds to or overrides one of them).
  std::optional<ConfigValue<std::map<std::string, std::string>>> labels;
  std::optional<ConfigValue<std::string>> tls_cert;  // --tls-cert: PEM certificate chain
  std::optional<ConfigValue<std::string>> tls_key;   // --tls-key: its PEM private key
};

// The most [notify] webhook_attempts accepts: with the delay doubling, 20 attempts already
// span days.
inline constexpr int kMaxWebhookAttempts = 20;

// [notify]: how the server delivers notifications (notify/notifier.h); unset = its default.
struct NotifyConfig {
  std::optional<std::string> email_from{};  // From: of e-mails ("gpufleet")
  std::optional<std::string> sendmail{};    // the sendmail program ("/usr/sbin/sendmail")
  std::optional<int> webhook_attempts{};    // 1..kMaxWebhookAttempts, first try included (5)
  std::optional<std::chrono::seconds> webhook_timeout{};      // per attempt ("10s")
  std::optional<std::chrono::seconds> webhook_retry_delay{};  // before the 2nd try, doubling ("1s")
  std::optional<std::string> ca_file{};  // PEM CAs for https webhooks ("": the system's)
  // The loopback, link-local and unspecified addresses webhooks may reach (none): addresses,
  // CIDR blocks, host names, "*.domain" (model/webhook_allow.h).
  WebhookAllowList webhook_allow{};
};

// [api]: the API server's limits (api/api_server.h, docs/config.md); unset = the server's
// default. Read by `gpufleet up` and `gpufleet server`.
struct ApiConfig {
  std::optional<int> max_connections{};  // both listeners; 0 = 3/4 of the open-file limit
  std::optional<int> connections_per_client{};
  std::optional<int> max_watches{};  // watches and agent command streams
  std::optional<int> watches_per_client{};
  std::optional<double> rate_limit{};  // requests a second per client; 0 = no rate limit
  std::optional<int> rate_burst{};
};

struct Config {
  std::string source;   // the file name errors and logs use
  PolicyConfig policy;  // valid (ValidatePolicy passed)
  // [team.NAME] members: the team a user's job belongs to when it names none, and the only one
  // the user may name (controller/submit_team.h) (user → team).
  std::map<std::string, std::string> team_of_user;
  UpConfig up;
  ApiConfig api;
  NotifyConfig notify;
  // [energy] price_per_kwh, currency, co2_g_per_kwh: energy cost and CO2 in quota, show and
  // reports (model/energy.h). Unset: energy is shown in kWh only.
  EnergyPrice energy;
  // [sharing] memory_breach, memory_breach_grace: what happens to a fractional job over its
  // GPU memory (issue #7).
  SharingConfig sharing;
};

// Parses `text` (TOML) as a config; `source_name` names it in errors ("gpufleet.toml:7: ...").
// Errors: kInvalidArgument naming the source, line, table and key, and the fix.
Result<Config> ParseConfig(std::string_view text, const std::string& source_name);

// Reads and parses the file at `path`. Errors: kNotFound when it does not exist, kIo when it
// cannot be read, kInvalidArgument when it is a directory, else as ParseConfig.
// Every reader of settings text here (the settings, client and cluster files) first passes it
// through CheckTomlShape (toml_guard.h): at most 1 MiB, nested at most 32 levels.
Result<Config> LoadConfig(const std::string& path);

// The client's own settings file (not the server's): which servers the CLI talks to and with
// what credentials. ~/.config/gpufleet/client.toml, or $GPUFLEET_CLIENT_CONFIG:
//   [client]
//   servers = ["https://gpu-a:7460", "https://gpu-b:7460"]   # tried in order
//   token_file = "~/.config/gpufleet/token"                  # readable by you alone
//   ca_file = "/etc/gpufleet/ca.pem"
//   [slurm.partition]            # #SBATCH --partition NAME → gpufleet class (issue #23)
//   gpu = "normal"
//   [slurm.qos]                  # #SBATCH --qos NAME → class; wins over the partition's
//   urgent = "high"
//   [slurm.gpu_type]             # #SBATCH --gres=gpu:TYPE:N → GPU model
//   a100 = "A100-SXM4-80GB"
// Relative file names are relative to the settings file's folder; "~/" is the home folder.
// Flags and the environment win over it (src/cli/client_settings.h).
struct SlurmMapping {
  std::map<std::string, std::string> partition;  // Slurm partition → priority class
  std::map<std::string, std::string> qos;        // Slurm QOS → priority class
  std::map<std::string, std::string> gpu_type;   // Slurm GPU type (gres) → GPU model
};

struct ClientConfig {
  std::string source;                // the file read
  std::vector<std::string> servers;  // empty: not set
  std::string token_file;            // "": not set
  std::string ca_file;               // "": not set
  SlurmMapping slurm{};              // empty maps: not set
};

// Strict like ParseConfig: an unknown key or table, a wrong type, or an empty server list is
// kInvalidArgument naming the source, line and key.
Result<ClientConfig> ParseClientConfig(std::string_view text, const std::string& source_name);

// Reads and parses the file at `path`, resolving its relative file names against the file's
// folder and "~/" against `home`. Errors: kNotFound, kIo, else as ParseClientConfig.
Result<ClientConfig> LoadClientConfig(const std::string& path, const std::string& home);

// The simulator's cluster file (`gpufleet sim --cluster cluster.toml`, docs/sim.md): one
// [[node]] table per node, or per `count` alike nodes. Read here, with the settings file's
// rules and messages (toml11 stays in this module); gf_sim builds the nodes from it.
struct ClusterFileNode {
  std::string name;  // with count > 1, the prefix of name-0, name-1, ...
  int count = 1;
  int gpus = 0;
  std::string model;
  std::vector<std::vector<int>> nvlink{};  // NVLink groups of GPU indexes, all-to-all within one
  std::map<std::string, std::string> labels{};
  std::string where{};  // "cluster.toml:3: [[node]] 1", for the errors gf_sim finds
};
// Strict: an unknown key, a wrong type, a missing name, gpus or model is kInvalidArgument
// naming the source, line and key.
Result<std::vector<ClusterFileNode>> ParseClusterFile(std::string_view text,
                                                      const std::string& source_name);
// Errors: kNotFound, kIo, else as ParseClusterFile.
Result<std::vector<ClusterFileNode>> LoadClusterFile(const std::string& path);

}  // namespace gf
