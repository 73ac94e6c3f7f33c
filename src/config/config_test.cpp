#include "config/config.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace gf {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

Config Parse(const std::string& text) {
  Result<Config> config = ParseConfig(text, "test.toml");
  EXPECT_TRUE(config.ok()) << config.error().message;
  return config.ok() ? std::move(config).value() : Config{};
}

std::string ErrorOf(const std::string& text) {
  Result<Config> config = ParseConfig(text, "test.toml");
  EXPECT_FALSE(config.ok()) << "accepted:\n" << text;
  if (config.ok()) {
    return "";
  }
  EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument);
  return config.error().message;
}

const PriorityClassPolicy& Class(const Config& c, const std::string& name) {
  for (const PriorityClassPolicy& cls : c.policy.classes) {
    if (cls.name == name) {
      return cls;
    }
  }
  ADD_FAILURE() << "no class " << name;
  return c.policy.classes.front();
}

TEST(ConfigTest, EmptyFileIsTheStockPolicy) {
  const Config c = Parse("# nothing\n");
  const PolicyConfig stock;
  EXPECT_EQ(c.source, "test.toml");
  ASSERT_EQ(c.policy.classes.size(), stock.classes.size());
  EXPECT_EQ(Class(c, "high").preempts, stock.classes[0].preempts);
  EXPECT_TRUE(c.policy.teams.empty());
  EXPECT_EQ(c.policy.fair_share.half_life, stock.fair_share.half_life);
  EXPECT_EQ(c.policy.preemption.min_run_time, stock.preemption.min_run_time);
  EXPECT_EQ(c.policy.backfill.depth, stock.backfill.depth);
  EXPECT_FALSE(c.up.gpus.has_value());
}

// Issue #24: per-GPU host defaults (Slurm's DefCpuPerGPU / DefMemPerGPU) and the node's capacity.
TEST(ConfigTest, HostDefaultsAndNodeCapacity) {
  const Config c = Parse(R"toml(
[scheduler]
default_cpus_per_gpu = 8
default_mem_per_gpu = "64G"
[up]
node_cpus = "32"
node_mem = "256G"
reserve_cpus = "2"
reserve_mem = "8G"
)toml");
  EXPECT_EQ(c.policy.host_defaults.cpus_per_gpu, 8);
  EXPECT_EQ(c.policy.host_defaults.memory_mib_per_gpu, 65'536);
  ASSERT_TRUE(c.up.node_cpus.has_value());
  EXPECT_EQ(c.up.node_cpus->value, "32");
  EXPECT_EQ(c.up.reserve_mem->value, "8G");
  EXPECT_EQ(Parse("").policy.host_defaults, HostDefaults{});
  EXPECT_THAT(ErrorOf("[scheduler]\ndefault_mem_per_gpu = \"lots\"\n"),
              HasSubstr("default_mem_per_gpu: 'lots' is not a memory size"));
  EXPECT_THAT(ErrorOf("[scheduler]\ndefault_cpus_per_gpu = -1\n"),
              HasSubstr("default_cpus_per_gpu"));
  // Filled in where a job asks none, per GPU it asks.
  JobRequest r;
  r.gpus = 2;
  r.memory_mib = 1024;
  const JobRequest filled = WithHostDefaults(r, c.policy.host_defaults);
  EXPECT_EQ(filled.cpus, 16);
  EXPECT_EQ(filled.memory_mib, 1024);  // asked: kept
  EXPECT_EQ(WithHostDefaults(r, HostDefaults{}).cpus, 0);
}

TEST(ConfigTest, SchedulerKeys) {
  const Config c = Parse(R"(
[scheduler]
fair_share_half_life = "3d"
preemption = false
min_run_time = "0s"
max_preemptors_per_pass = 7
backfill = false
backfill_depth = 12
[scheduler.user_weights]
alice = 2.5
bob = 3
[scheduler.model_weights]
"H100-80GB" = 2
)");
  const PolicyConfig& p = c.policy;
  EXPECT_EQ(p.fair_share.half_life, hours(72));
  EXPECT_FALSE(p.preemption.enabled);
  EXPECT_EQ(p.preemption.min_run_time, seconds(0));
  EXPECT_EQ(p.preemption.max_preemptors_per_pass, 7);
  EXPECT_FALSE(p.backfill.enabled);
  EXPECT_EQ(p.backfill.depth, 12);
  EXPECT_EQ(p.fair_share.user_weights.at("alice"), 2.5);
  EXPECT_EQ(p.fair_share.user_weights.at("bob"), 3.0);
  EXPECT_EQ(p.fair_share.model_weights.at("H100-80GB"), 2.0);
}

TEST(ConfigTest, OrderAndLasThresholds) {
  EXPECT_EQ(Parse("").policy.ordering.order, QueueOrder::kPriority);
  const Config c = Parse("[scheduler]\norder = \"las\"\nlas_thresholds = [100, 2500.5]\n");
  EXPECT_EQ(c.policy.ordering.order, QueueOrder::kLas);
  EXPECT_EQ(c.policy.ordering.las_thresholds, (std::vector<double>{100, 2500.5}));
  EXPECT_EQ(Parse("[scheduler]\norder = \"srtf\"\n").policy.ordering.order, QueueOrder::kSrtf);
  EXPECT_EQ(ErrorOf("[scheduler]\norder = \"lifo\"\n"),
            "test.toml:2: [scheduler] order: 'lifo' is not an order; use priority, fifo, sjf, "
            "srtf or las");
  EXPECT_EQ(ErrorOf("[scheduler]\nlas_thresholds = [\"1h\"]\n"),
            "test.toml:2: [scheduler] las_thresholds: expected a list of numbers, e.g. "
            "[3250, 7200]");
  EXPECT_EQ(ErrorOf("[scheduler]\nlas_thresholds = [7200, 3250]\n"),
            "test.toml:2: [scheduler] las_thresholds: must be above 0 and increasing, e.g. "
            "[3250, 7200] (GPU-seconds)");
}

TEST(ConfigTest, FairShareBand) {
  EXPECT_EQ(Parse("").policy.prediction.fair_share_band, 2);
  EXPECT_EQ(Parse("[scheduler]\nfair_share_band = 1\n").policy.prediction.fair_share_band, 1);
  EXPECT_EQ(Parse("[scheduler]\nfair_share_band = 4.5\n").policy.prediction.fair_share_band, 4.5);
  EXPECT_EQ(ErrorOf("[scheduler]\nfair_share_band = 0.5\n"),
            "test.toml:2: [scheduler] fair_share_band: must be 1 or more (1: exact shares; 2: a "
            "band per doubling)");
}

TEST(ConfigTest, ClassKeysChangeOnlyTheNamedClassAndKeys) {
  const Config c = Parse(R"(
[class.low]
rank = 5
preempts = []
allowed_users = ["alice", "bob"]
max_gpus_per_user = 4
default_time_limit = "2h"
max_time_limit = "1d"
)");
  const PriorityClassPolicy& low = Class(c, "low");
  EXPECT_EQ(low.rank, 5);
  EXPECT_TRUE(low.preempts.empty());
  EXPECT_THAT(low.allowed_users, ElementsAre("alice", "bob"));
  EXPECT_EQ(low.max_gpus_per_user, 4);
  EXPECT_EQ(low.default_time_limit, hours(2));
  EXPECT_EQ(low.max_time_limit, hours(24));
  // Untouched: the other classes, and what [class.low] does not name.
  EXPECT_THAT(Class(c, "high").preempts, ElementsAre("normal", "low"));
  EXPECT_EQ(c.policy.classes.size(), 3U);
  const Config preempts = Parse("[class.normal]\npreempts = []\n");
  EXPECT_TRUE(Class(preempts, "normal").preempts.empty());
  EXPECT_EQ(Class(preempts, "normal").rank, 1);  // the stock rank
  EXPECT_EQ(preempts.policy.default_class, "normal");
}

TEST(ConfigTest, AClassOfItsOwnMeansTheFileDefinesEveryClass) {
  const Config c = Parse(R"(
[scheduler]
default_class = "standard"

[class.urgent]
rank = 0
preempts = ["batch"]

[class.high]
rank = 1
preempts = ["standard", "batch"]

[class.standard]
rank = 2

[class.batch]
rank = 3
max_time_limit = "1d"
)");
  ASSERT_EQ(c.policy.classes.size(), 4U);  // no stock normal or low
  EXPECT_THAT(Class(c, "urgent").preempts, ElementsAre("batch"));
  EXPECT_THAT(Class(c, "high").preempts, ElementsAre("standard", "batch"));  // not stock
  EXPECT_EQ(Class(c, "batch").max_time_limit, hours(24));
  EXPECT_EQ(c.policy.default_class, "standard");
  EXPECT_TRUE(ValidatePolicy(c.policy).ok());
}

TEST(ConfigTest, OwnClassesNeedARankAndADefaultClassThatExists) {
  EXPECT_EQ(ErrorOf("[class.gold]\npreempts = []\n"),
            "test.toml:1: [class.gold] rank: missing; a file that defines its own classes gives "
            "each a rank (lower goes first)");
  EXPECT_EQ(ErrorOf("[class.gold]\nrank = 0\n[class.bronze]\nrank = 1\n"),
            "test.toml: default_class: no class 'normal'; name a listed class (gold, bronze)");
  EXPECT_EQ(ErrorOf("[scheduler]\ndefault_class = \"tin\"\n[class.gold]\nrank = 0\n"),
            "test.toml:2: [scheduler] default_class: no class 'tin'; name a listed class (gold)");
  EXPECT_EQ(ErrorOf("[class.Gold]\nrank = 0\n"),
            "test.toml:1: [class.Gold]: not a class name; use 1 to 32 lower-case letters, "
            "digits, '-' or '_'");
}

TEST(ConfigTest, TeamKeys) {
  const Config c = Parse(R"(
[team.ml]
members = ["alice", "bob"]
guaranteed_gpus = 8
max_gpus = 16
gpu_hour_budget = 5000
over_budget = "hold"
fair_share_weight = 2.5
[team.cv]
gpu_hour_budget = 12.5
over_budget = "borrow_only"
[other_teams]
guaranteed_gpus = 1
max_gpus = 4
gpu_hour_budget = 10
over_budget = "hold"
fair_share_weight = 0.5
)");
  ASSERT_EQ(c.policy.teams.size(), 2U);
  const TeamPolicy& cv = c.policy.teams[0];  // tables in name order
  const TeamPolicy& ml = c.policy.teams[1];
  EXPECT_EQ(ml.name, "ml");
  EXPECT_EQ(ml.guaranteed_gpus, 8);
  EXPECT_EQ(ml.max_gpus, 16);
  EXPECT_EQ(ml.gpu_hour_budget, 5000.0);
  EXPECT_EQ(ml.over_budget, OverBudget::kHold);
  EXPECT_EQ(ml.fair_share_weight, 2.5);
  EXPECT_EQ(cv.name, "cv");
  EXPECT_EQ(cv.gpu_hour_budget, 12.5);
  EXPECT_EQ(cv.over_budget, OverBudget::kBorrowOnly);
  EXPECT_EQ(cv.guaranteed_gpus, 0);
  EXPECT_FALSE(cv.max_gpus.has_value());
  EXPECT_EQ(c.team_of_user.at("alice"), "ml");
  EXPECT_EQ(c.team_of_user.at("bob"), "ml");
  EXPECT_EQ(c.team_of_user.size(), 2U);
  const TeamPolicy& other = c.policy.other_teams;
  EXPECT_EQ(other.guaranteed_gpus, 1);
  EXPECT_EQ(other.max_gpus, 4);
  EXPECT_EQ(other.gpu_hour_budget, 10.0);
  EXPECT_EQ(other.over_budget, OverBudget::kHold);
  EXPECT_EQ(other.fair_share_weight, 0.5);
}

TEST(ConfigTest, IdleReaperKeysOfClassesAndTeams) {
  const Config c = Parse(R"(
[class.normal]
idle_after = "30m"
idle_interactive_after = "2h"
idle_grace = "10m"
idle_util_below = 5
idle_action = "cancel"
idle_opt_out = true
[team.ml]
idle_after = "0s"
idle_grace = "0s"
[other_teams]
idle_util_below = 0
idle_action = "requeue"
)");
  const PriorityClassPolicy& normal = Class(c, "normal");
  EXPECT_EQ(normal.idle,
            (IdleRule{.after = minutes(30),
                      .interactive_after = hours(2),
                      .grace = minutes(10),
                      .util_below_pct = 5,
                      .action = IdleAction::kCancel}));
  EXPECT_TRUE(normal.idle_opt_out);
  EXPECT_FALSE(Class(c, "high").idle_opt_out);
  EXPECT_EQ(Class(c, "high").idle, IdleRule{});
  ASSERT_EQ(c.policy.teams.size(), 1U);
  EXPECT_EQ(c.policy.teams[0].idle, (IdleRule{.after = seconds(0), .grace = seconds(0)}));
  EXPECT_EQ(c.policy.other_teams.idle,
            (IdleRule{.util_below_pct = 0, .action = IdleAction::kRequeue}));
}

TEST(ConfigTest, IdleReaperKeyErrorsNameTheLineAndTheFix) {
  EXPECT_EQ(ErrorOf("[class.low]\nidle_util_below = 120\n"),
            "test.toml:2: [class.low] idle_util_below: 120 is not a percentage; use 0 to 100 "
            "(0: only a GPU without processes counts as idle)");
  EXPECT_EQ(ErrorOf("[team.ml]\nidle_action = \"kill\"\n"),
            "test.toml:2: [team.ml] idle_action: 'kill' is not an idle action; use \"requeue\" "
            "(back to the queue) or \"cancel\" (on a Kubernetes server also \"delete_pod\" or "
            "\"scale_owner\")");
  EXPECT_THAT(ErrorOf("[class.low]\nidle_after = 30\n"),
              StartsWith("test.toml:2: [class.low] idle_after: expected a duration"));
  EXPECT_THAT(ErrorOf("[class.low]\nidle_grace = \"soon\"\n"),
              StartsWith("test.toml:2: [class.low] idle_grace: "));
  EXPECT_THAT(ErrorOf("[team.ml]\nidle_opt_out = true\n"),
              StartsWith("test.toml:2: unknown key 'idle_opt_out' in [team.ml]"));
}

TEST(ConfigTest, UpKeysKeepWhereTheyWereSet) {
  const Config c = Parse(R"(
[up]
gpus = "sim:2xH100-80GB"
data_dir = "/srv/gf"
listen_socket = "/run/gf.sock"
host = "0.0.0.0"
port = -1
kill_grace = "0s"
node_name = "gpu01"
sample_interval = "5s"
no_process_after = "2m"
db = "postgresql://gf@db1:5432/fleet?schema=prod"
)");
  const UpConfig& up = c.up;
  ASSERT_TRUE(up.gpus && up.data_dir && up.listen_socket && up.host && up.port && up.kill_grace &&
              up.node_name && up.sample_interval && up.no_process_after);
  EXPECT_EQ(up.gpus->value, "sim:2xH100-80GB");
  EXPECT_EQ(up.gpus->where, "test.toml:3: [up] gpus");
  EXPECT_EQ(up.data_dir->value, "/srv/gf");
  EXPECT_EQ(up.listen_socket->value, "/run/gf.sock");
  EXPECT_EQ(up.host->value, "0.0.0.0");
  EXPECT_EQ(up.port->value, -1);
  EXPECT_EQ(up.kill_grace->value, seconds(0));
  EXPECT_EQ(up.node_name->value, "gpu01");
  EXPECT_EQ(up.sample_interval->value, seconds(5));
  EXPECT_EQ(up.sample_interval->where, "test.toml:10: [up] sample_interval");
  EXPECT_EQ(up.no_process_after->value, minutes(2));
  ASSERT_TRUE(up.db.has_value());
  EXPECT_EQ(up.db->value, "postgresql://gf@db1:5432/fleet?schema=prod");
  EXPECT_EQ(up.db->where, "test.toml:12: [up] db");
}

TEST(ConfigTest, UpLabelsAreAnInlineTableOfValidLabels) {
  const Config c = Parse("[up]\nlabels = { rack = \"a\", zone = \"eu-1\" }\n");
  ASSERT_TRUE(c.up.labels.has_value());
  EXPECT_EQ(c.up.labels->value,
            (std::map<std::string, std::string>{{"rack", "a"}, {"zone", "eu-1"}}));
  EXPECT_EQ(c.up.labels->where, "test.toml:2: [up] labels");
  EXPECT_THAT(ErrorOf("[up]\nlabels = { rack = 1 }\n"),
              HasSubstr("[up] labels rack: expected a string in quotes, got an integer"));
  EXPECT_THAT(ErrorOf("[up]\nlabels = { rack = \"a b\" }\n"),
              HasSubstr("label: 'rack=a b' is not a label; use KEY=VALUE"));
  EXPECT_THAT(ErrorOf("[up]\nlabels = \"rack=a\"\n"), HasSubstr("must be a table"));
}

TEST(ConfigTest, UpTlsKeys) {
  const Config c = Parse("[up]\ntls_cert = \"/etc/gf/cert.pem\"\ntls_key = \"/etc/gf/key.pem\"\n");
  ASSERT_TRUE(c.up.tls_cert && c.up.tls_key);
  EXPECT_EQ(c.up.tls_cert->value, "/etc/gf/cert.pem");
  EXPECT_EQ(c.up.tls_key->where, "test.toml:3: [up] tls_key");
  EXPECT_THAT(ErrorOf("[up]\ntls_cert = 1\n"),
              HasSubstr("[up] tls_cert: expected a string in quotes, got an integer"));
}

TEST(ConfigTest, UpPowerPolicyKeys) {
  const Config c = Parse("[up]\nidle_power_limit = 150\nidle_power_after = \"10m\"\n");
  ASSERT_TRUE(c.up.idle_power_limit && c.up.idle_power_after);
  EXPECT_EQ(c.up.idle_power_limit->value, 150);
  EXPECT_EQ(c.up.idle_power_limit->where, "test.toml:2: [up] idle_power_limit");
  EXPECT_EQ(c.up.idle_power_after->value, minutes(10));
  EXPECT_THAT(ErrorOf("[up]\nidle_power_limit = 0\n"),
              HasSubstr("[up] idle_power_limit: 0 is out of range; use 1 to 10000"));
  EXPECT_THAT(ErrorOf("[up]\nidle_power_limit = \"150W\"\n"),
              HasSubstr("[up] idle_power_limit: expected"));
  EXPECT_THAT(ErrorOf("[up]\nidle_power_after = 30\n"),
              HasSubstr("[up] idle_power_after: expected a duration"));
}

TEST(ConfigTest, UpGpuSelfTestKeys) {
  const Config c = Parse(
      "[up]\ngpu_self_test = \"dcgmi diag -r 1 -i $GPUFLEET_GPU_INDEX\"\n"
      "gpu_self_test_interval = \"30m\"\n");
  ASSERT_TRUE(c.up.gpu_self_test && c.up.gpu_self_test_interval);
  EXPECT_EQ(c.up.gpu_self_test->value, "dcgmi diag -r 1 -i $GPUFLEET_GPU_INDEX");
  EXPECT_EQ(c.up.gpu_self_test->where, "test.toml:2: [up] gpu_self_test");
  EXPECT_EQ(c.up.gpu_self_test_interval->value, minutes(30));
  EXPECT_THAT(ErrorOf("[up]\ngpu_self_test = true\n"),
              HasSubstr("[up] gpu_self_test: expected a string"));
}

TEST(ConfigTest, SharingKeysAndMpsControl) {
  const Config c = Parse(
      "[up]\nmps_control = \"/opt/cuda/bin/nvidia-cuda-mps-control\"\n"
      "[sharing]\nmemory_breach = \"warn\"\nmemory_breach_grace = \"2m\"\n");
  ASSERT_TRUE(c.up.mps_control);
  EXPECT_EQ(c.up.mps_control->value, "/opt/cuda/bin/nvidia-cuda-mps-control");
  EXPECT_EQ(
      c.sharing,
      (SharingConfig{.memory_breach = MemoryBreach::kWarn, .memory_breach_grace = minutes(2)}));
  EXPECT_EQ(Parse("").sharing, SharingConfig{});  // kill, 30 s
  EXPECT_THAT(ErrorOf("[sharing]\nmemory_breach_grace = 30\n"),
              HasSubstr("[sharing] memory_breach_grace: expected a duration"));
  EXPECT_THAT(ErrorOf("[sharing]\nmemory_breach = \"oom\"\n"),
              HasSubstr("'oom' is not a policy; use \"kill\""));
}

TEST(ConfigTest, EnergyPriceKeys) {
  const Config c =
      Parse("[energy]\nprice_per_kwh = 0.28\ncurrency = \"USD\"\nco2_g_per_kwh = 350\n");
  EXPECT_EQ(c.energy,
            (EnergyPrice{.price_per_kwh = 0.28, .currency = "USD", .co2_g_per_kwh = 350.0}));
  EXPECT_EQ(Parse("").energy, EnergyPrice{});  // kWh only
  EXPECT_THAT(ErrorOf("[energy]\nprice_per_kwh = -1\n"),
              HasSubstr("test.toml:2: [energy] price_per_kwh: -1.000000 is not a valid figure; "
                        "use a number >= 0"));
  EXPECT_THAT(ErrorOf("[energy]\nco2_g_per_kwh = \"350g\"\n"),
              HasSubstr("[energy] co2_g_per_kwh: expected a number"));
  EXPECT_THAT(ErrorOf("[energy]\ncurrency = \"\"\n"),
              HasSubstr("[energy] currency: '' is not a currency"));
  EXPECT_THAT(ErrorOf("[energy]\nprice = 1\n"),
              HasSubstr("unknown key 'price' in [energy]; known keys: co2_g_per_kwh, currency, "
                        "price_per_kwh"));
}

TEST(ClientConfigTest, ReadsTheClientTableStrictly) {
  auto c = ParseClientConfig(R"([client]
servers = ["https://a:7460", "https://b:7460"]
token_file = "/home/alice/.config/gpufleet/token"
ca_file = "/etc/gpufleet/ca.pem"
)",
                             "client.toml");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->servers, (std::vector<std::string>{"https://a:7460", "https://b:7460"}));
  EXPECT_EQ(c->token_file, "/home/alice/.config/gpufleet/token");
  EXPECT_EQ(c->ca_file, "/etc/gpufleet/ca.pem");
  const auto error = [](const std::string& text) {
    auto r = ParseClientConfig(text, "client.toml");
    return r.ok() ? std::string("(parsed)") : r.error().message;
  };
  EXPECT_THAT(error("[client]\nserver = \"x\"\n"),
              HasSubstr("client.toml:2: unknown key 'server' in [client]; known keys: ca_file, "
                        "servers, token_file"));
  EXPECT_THAT(error("[up]\nport = 1\n"), HasSubstr("unknown key 'up' in the top level"));
  EXPECT_THAT(error("[client]\nservers = \"https://a:1\"\n"),
              HasSubstr("[client] servers: expected a list of strings"));
  EXPECT_THAT(error("[client]\nservers = []\n"), HasSubstr("the list is empty"));
  EXPECT_EQ(error("[client]\nservers = [\"https://a:1\", \"\"]\n"),
            "client.toml:2: [client] servers: an empty string in the list; give each server's URL");
  EXPECT_THAT(error("[client]\nca_file = \"\"\n"),
              StartsWith("client.toml:2: [client] ca_file: an empty string"));
}

TEST(ClientConfigTest, ReadsTheSlurmMappings) {
  auto c = ParseClientConfig(R"([slurm.partition]
gpu = "normal"
debug = "low"
[slurm.qos]
urgent = "high"
[slurm.gpu_type]
a100 = "A100-SXM4-80GB"
)",
                             "client.toml");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->slurm.partition.at("gpu"), "normal");
  EXPECT_EQ(c->slurm.partition.at("debug"), "low");
  EXPECT_EQ(c->slurm.qos.at("urgent"), "high");
  EXPECT_EQ(c->slurm.gpu_type.at("a100"), "A100-SXM4-80GB");
  const auto error = [](const std::string& text) {
    auto r = ParseClientConfig(text, "client.toml");
    return r.ok() ? std::string("(parsed)") : r.error().message;
  };
  EXPECT_THAT(error("[slurm.account]\nx = \"y\"\n"),
              HasSubstr("unknown key 'account' in [slurm]; known keys: gpu_type, partition, qos"));
  EXPECT_THAT(error("[slurm.partition]\ngpu = 3\n"), HasSubstr("[slurm.partition] gpu"));
  EXPECT_THAT(error("[slurm.qos]\nx = \"\"\n"), HasSubstr("[slurm.qos] x: an empty string"));
}

TEST(ClientConfigTest, RelativeNamesAreResolved) {
  char tmpl[] = "/tmp/gf-client-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/client.toml";
  std::ofstream(path) << "[client]\ntoken_file = \"~/tok\"\nca_file = \"ca.pem\"\n";
  auto c = LoadClientConfig(path, "/home/alice");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->token_file, "/home/alice/tok");
  EXPECT_EQ(c->ca_file, std::string(tmpl) + "/ca.pem");
  std::filesystem::remove_all(tmpl);
  EXPECT_EQ(LoadClientConfig(path, "/home/alice").error().code, ErrorCode::kNotFound);
}

TEST(ConfigTest, UnknownKeysNameTheTableLineAndKnownKeys) {
  EXPECT_EQ(ErrorOf("[team.ml]\nguaranteed_gpus = 1\nmax_gpu = 4\n"),
            "test.toml:3: unknown key 'max_gpu' in [team.ml]; known keys: fair_share_weight, "
            "gpu_hour_budget, guaranteed_gpus, max_gpus, over_budget, members, idle_action, "
            "idle_after, idle_grace, idle_interactive_after, idle_util_below");
  EXPECT_THAT(
      ErrorOf("[scheduler]\nbackfil = true\n"),
      StartsWith("test.toml:2: unknown key 'backfil' in [scheduler]; known keys: backfill,"));
  EXPECT_THAT(ErrorOf("[class.high]\nmax_gpus = 2\n"),
              StartsWith("test.toml:2: unknown key 'max_gpus' in [class.high]"));
  EXPECT_THAT(ErrorOf("[other_teams]\nmembers = [\"x\"]\n"),
              StartsWith("test.toml:2: unknown key 'members' in [other_teams]"));
  EXPECT_THAT(ErrorOf("[up]\ngpu = \"nvml\"\n"),
              StartsWith("test.toml:2: unknown key 'gpu' in [up]"));
  EXPECT_THAT(ErrorOf("\n[teams.ml]\nmax_gpus = 1\n"),
              HasSubstr("unknown key 'teams' in the top level; known keys: api, class, "
                        "energy, notify, other_teams"));
}

TEST(ConfigTest, WrongTypesNameTheKeyAndWhatItTakes) {
  EXPECT_EQ(ErrorOf("[team.ml]\nguaranteed_gpus = \"8\"\n"),
            "test.toml:2: [team.ml] guaranteed_gpus: expected a whole number, got a string");
  EXPECT_THAT(ErrorOf("[team.ml]\ngpu_hour_budget = \"lots\"\n"),
              HasSubstr("[team.ml] gpu_hour_budget: expected a number"));
  EXPECT_THAT(ErrorOf("[scheduler]\nbackfill = \"yes\"\n"),
              HasSubstr("test.toml:2: [scheduler] backfill: expected true or false"));
  EXPECT_THAT(ErrorOf("[up]\nhost = 127\n"),
              HasSubstr("test.toml:2: [up] host: expected a string in quotes, got an integer"));
  EXPECT_THAT(ErrorOf("[class.high]\nallowed_users = \"alice\"\n"),
              HasSubstr("[class.high] allowed_users: expected a list of strings"));
  EXPECT_THAT(ErrorOf("[class.high]\npreempts = [\"low\", 3]\n"),
              HasSubstr("[class.high] preempts: expected a list of strings"));
  EXPECT_THAT(ErrorOf("[scheduler]\nmin_run_time = 600\n"),
              HasSubstr("[scheduler] min_run_time: expected a duration in quotes"));
  EXPECT_THAT(ErrorOf("[scheduler.user_weights]\nalice = \"2\"\n"),
              HasSubstr("[scheduler.user_weights] alice: expected a number"));
  EXPECT_THAT(ErrorOf("team = 3\n"), HasSubstr("test.toml:1: 'team' must be tables [team.NAME]"));
  EXPECT_THAT(ErrorOf("[team]\nml = 3\n"), HasSubstr("test.toml:2: [team.ml] must be a table"));
  EXPECT_THAT(ErrorOf("scheduler = 1\n"), HasSubstr("[scheduler] must be a table"));
}

TEST(ConfigTest, BadDurationsAndRanges) {
  EXPECT_THAT(ErrorOf("[class.high]\n\nmax_time_limit = \"soon\"\n"),
              StartsWith("test.toml:3: [class.high] max_time_limit: "));
  // Zero is a valid minimum run time and kill grace, never a half-life or time limit.
  EXPECT_THAT(ErrorOf("[scheduler]\nfair_share_half_life = \"0s\"\n"),
              StartsWith("test.toml:2: [scheduler] fair_share_half_life: "));
  EXPECT_THAT(ErrorOf("[class.low]\ndefault_time_limit = \"0s\"\n"),
              StartsWith("test.toml:2: [class.low] default_time_limit: "));
  EXPECT_EQ(ErrorOf("[up]\nport = 70000\n"),
            "test.toml:2: [up] port: 70000 is out of range; use -1 to 65535");
  EXPECT_THAT(ErrorOf("[team.ml]\nmax_gpus = 3000000000\n"),
              HasSubstr("[team.ml] max_gpus: 3000000000 is out of range"));
  EXPECT_EQ(ErrorOf("[team.ml]\nover_budget = \"wait\"\n"),
            "test.toml:2: [team.ml] over_budget: 'wait' is not a choice; use \"borrow_only\" "
            "or \"hold\"");
}

// The policy's own rules come from ValidatePolicy, with the line of the key that broke them.
TEST(ConfigTest, PolicyRulesPointAtTheLine) {
  EXPECT_EQ(ErrorOf("[team.ml]\nguaranteed_gpus = 8\nmax_gpus = 4\n"),
            "test.toml:3: [team.ml] max_gpus: 4 is below guaranteed_gpus 8; raise max_gpus or "
            "lower the guarantee");
  EXPECT_EQ(ErrorOf("[class.high]\n\npreempts = [\"urgent\"]\n"),
            "test.toml:3: [class.high] preempts: no class 'urgent'; name a listed class (high, "
            "normal, low)");
  EXPECT_EQ(ErrorOf("# top\n[class.low]\npreempts = [\"high\"]\n"),
            "test.toml:3: [class.low] preempts: 'high' has rank 0, not after low's rank 2; a "
            "class may preempt only classes ranked after it");
  EXPECT_EQ(ErrorOf("[class.low]\nmax_gpus_per_user = -1\n"),
            "test.toml:2: [class.low] max_gpus_per_user: must be 0 or more");
  EXPECT_EQ(ErrorOf("[class.low]\ndefault_time_limit = \"2d\"\nmax_time_limit = \"1d\"\n"),
            "test.toml:2: [class.low] default_time_limit: above max_time_limit; lower it");
  EXPECT_EQ(ErrorOf("[team.ml]\nfair_share_weight = 0\n"),
            "test.toml:2: [team.ml] fair_share_weight: must be above 0");
  EXPECT_EQ(ErrorOf("[other_teams]\nguaranteed_gpus = -2\n"),
            "test.toml:2: [other_teams] guaranteed_gpus: must be 0 or more");
  EXPECT_EQ(ErrorOf("[team.cv]\ngpu_hour_budget = -1.5\n"),
            "test.toml:2: [team.cv] gpu_hour_budget: must be 0 or more");
  EXPECT_EQ(ErrorOf("[scheduler]\nbackfill_depth = -1\n"),
            "test.toml:2: [scheduler] backfill_depth: must be 0 or more");
  EXPECT_EQ(ErrorOf("[scheduler]\nmax_preemptors_per_pass = -1\n"),
            "test.toml:2: [scheduler] max_preemptors_per_pass: must be 0 or more");
  EXPECT_EQ(ErrorOf("[scheduler.user_weights]\nbob = 0\n"),
            "test.toml:2: [scheduler.user_weights] bob: must be above 0");
  EXPECT_EQ(ErrorOf("[scheduler.model_weights]\nV100 = -1\n"),
            "test.toml:2: [scheduler.model_weights] V100: must be above 0");
}

TEST(ConfigTest, AUserBelongsToOneTeam) {
  EXPECT_EQ(ErrorOf("[team.a]\nmembers = [\"alice\"]\n[team.b]\nmembers = [\"bob\", \"alice\"]\n"),
            "test.toml:4: [team.b] members: user 'alice' is already a member of team 'a'; a "
            "user belongs to one team (an admin may still charge a job to another)");
}

TEST(ConfigTest, TomlSyntaxErrorsNameTheFile) {
  const std::string message = ErrorOf("[up]\nport = \n");
  EXPECT_THAT(message, StartsWith("test.toml: not valid TOML: "));
  EXPECT_THAT(message, HasSubstr("test.toml"));
  EXPECT_THAT(ErrorOf("[up]\nport = 1\nport = 2\n"), HasSubstr("not valid TOML"));
}

TEST(ConfigTest, TheExampleFileParsesAndSetsWhatItSays) {
  Result<Config> c = LoadConfig(GF_EXAMPLE_CONFIG);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->source, GF_EXAMPLE_CONFIG);
  ASSERT_EQ(c->policy.teams.size(), 2U);
  EXPECT_EQ(c->policy.teams[1].name, "ml");
  EXPECT_EQ(c->policy.teams[1].guaranteed_gpus, 8);
  EXPECT_EQ(c->policy.teams[0].over_budget, OverBudget::kHold);
  EXPECT_EQ(c->team_of_user.at("carol"), "cv");
  EXPECT_EQ(Class(*c, "high").max_gpus_per_user, 8);
  EXPECT_EQ(Class(*c, "normal").idle.after, minutes(30));
  EXPECT_EQ(Class(*c, "normal").idle.action, IdleAction::kRequeue);
  EXPECT_EQ(c->policy.teams[0].idle.after, hours(1));
  EXPECT_EQ(c->policy.other_teams.max_gpus, 4);
  ASSERT_TRUE(c->up.port.has_value());
  EXPECT_EQ(c->up.port->value, 7460);
  EXPECT_EQ(c->api.watches_per_client, 16);
  EXPECT_EQ(c->api.rate_limit, 500.0);
  EXPECT_FALSE(c->api.max_watches.has_value());  // the daemons' own stock values differ
}

TEST(ConfigTest, LoadConfigReadsAFileAndReportsAMissingOne) {
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / "gf_config_test.toml";
  {
    std::ofstream out(path);
    out << "[scheduler]\nbackfill_depth = 3\nbackfil = 1\n";
  }
  Result<Config> bad = LoadConfig(path.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, StartsWith(path.string() + ":3: unknown key 'backfil'"));
  std::filesystem::remove(path);
  Result<Config> missing = LoadConfig(path.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(missing.error().message, HasSubstr("does not exist"));
}

// Issue #20: `--config SOMEDIR` read as an empty file ran with the stock settings (no quotas)
// while the banner named it; an endless device is read only as far as the size limit.
TEST(ConfigTest, LoadConfigRefusesADirectoryAndAnEndlessFile) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "gf_config_test_dir";
  std::filesystem::create_directories(dir);
  Result<Config> config = LoadConfig(dir.string());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(config.error().message,
            "config file " + dir.string() +
                " is a directory, not a file; give the path of the "
                "file itself");
  std::filesystem::remove(dir);
  Result<Config> zero = LoadConfig("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.error().message, StartsWith("/dev/zero: larger than 1048576 bytes"));
}

// Issue #20: data_dir = "" fell back to /var/lib/gpufleet (another instance's database). No
// key that names a path, a program, a host or a spec takes "".
TEST(ConfigTest, EmptyStringsAreRefusedWhereAValueIsNeeded) {
  for (const std::string key : {"data_dir",
                                "db",
                                "listen_socket",
                                "tls_cert",
                                "tls_key",
                                "gpus",
                                "host",
                                "node_name",
                                "gpu_self_test",
                                "mps_control"}) {
    EXPECT_EQ(ErrorOf("[up]\n" + key + " = \"\"\n"),
              "test.toml:2: [up] " + key +
                  ": an empty string; give a value, or leave the key out for the stock one");
  }
  for (const std::string key : {"sendmail", "ca_file"}) {
    EXPECT_THAT(ErrorOf("[notify]\n" + key + " = \"\"\n"),
                StartsWith("test.toml:2: [notify] " + key + ": an empty string"));
  }
}

// Issue #20: the API server's limits per client.
TEST(ConfigTest, ApiTableSetsTheServersLimits) {
  Result<Config> c = ParseConfig(R"toml(
[api]
max_connections = 2000
connections_per_client = 64
max_watches = 512
watches_per_client = 8
rate_limit = 12.5
rate_burst = 40
)toml",
                                 "test.toml");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->api.max_connections, 2000);
  EXPECT_EQ(c->api.connections_per_client, 64);
  EXPECT_EQ(c->api.max_watches, 512);
  EXPECT_EQ(c->api.watches_per_client, 8);
  EXPECT_EQ(c->api.rate_limit, 12.5);
  EXPECT_EQ(c->api.rate_burst, 40);
  EXPECT_FALSE(ParseConfig("", "test.toml")->api.max_watches.has_value());
  EXPECT_TRUE(ParseConfig("[api]\nmax_connections = 0\nrate_limit = 0\n", "test.toml").ok());
  EXPECT_EQ(ErrorOf("[api]\nwatches_per_client = 0\n"),
            "test.toml:2: [api] watches_per_client: 0 is out of range; use 1 to 10000000");
  EXPECT_THAT(ErrorOf("[api]\nrate_limit = -1\n"), StartsWith("test.toml:2: [api] rate_limit: "));
  EXPECT_THAT(ErrorOf("[api]\nmax_watch = 1\n"),
              StartsWith("test.toml:2: unknown key 'max_watch' in [api]; known keys: "
                         "connections_per_client, max_connections"));
}

TEST(ConfigTest, NotifyTableSetsTheNotifierAndRefusesNonsense) {
  Result<Config> c = ParseConfig(R"toml(
[notify]
email_from = "gpufleet@gpu1.example.com"
sendmail = "/usr/local/bin/sendmail"
webhook_attempts = 3
webhook_timeout = "5s"
webhook_retry_delay = "2s"
ca_file = "/etc/ssl/hooks-ca.pem"
)toml",
                                 "test.toml");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->notify.email_from, "gpufleet@gpu1.example.com");
  EXPECT_EQ(c->notify.sendmail, "/usr/local/bin/sendmail");
  EXPECT_EQ(c->notify.webhook_attempts, 3);
  EXPECT_EQ(c->notify.webhook_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c->notify.webhook_retry_delay, std::chrono::seconds(2));
  EXPECT_EQ(c->notify.ca_file, "/etc/ssl/hooks-ca.pem");
  EXPECT_FALSE(ParseConfig("", "test.toml")->notify.webhook_attempts.has_value());

  Result<Config> zero = ParseConfig("[notify]\nwebhook_attempts = 0\n", "test.toml");
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.error().message, HasSubstr("webhook_attempts"));
  Result<Config> typo = ParseConfig("[notify]\nwebhook_timout = \"5s\"\n", "test.toml");
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo.error().message, HasSubstr("unknown key 'webhook_timout'"));
}

// Issue #20: the addresses webhooks may reach beyond the default (no loopback, link-local or
// unspecified one): model/webhook_allow.h judges them; the file names the key and line.
TEST(ConfigTest, NotifyWebhookAllowListsWhatWebhooksMayReach) {
  Result<Config> c = ParseConfig(
      "[notify]\nwebhook_allow = [\"127.0.0.1\", \"fe80::/10\", \"*.lab\"]\n", "test.toml");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_TRUE(c->notify.webhook_allow.CheckUrl("http://127.0.0.1:9000/x").ok());
  EXPECT_TRUE(c->notify.webhook_allow.CheckAddress("hooks.lab", "::1").ok());
  EXPECT_FALSE(ParseConfig("", "test.toml")->notify.webhook_allow.CheckUrl("http://[::1]/").ok());
  EXPECT_EQ(ErrorOf("[notify]\nwebhook_allow = [\"10.0.0.0/33\"]\n"),
            "test.toml:2: [notify] webhook_allow: '10.0.0.0/33' has no prefix length from 0 to "
            "32; give an address (\"127.0.0.1\"), a CIDR block (\"10.0.0.0/8\", \"fe80::/10\"), "
            "a host name (\"hooks.lab\") or a domain (\"*.lab\")");
  EXPECT_THAT(ErrorOf("[notify]\nwebhook_allow = \"127.0.0.1\"\n"),
              HasSubstr("expected a list of strings"));
}

}  // namespace
}  // namespace gf
