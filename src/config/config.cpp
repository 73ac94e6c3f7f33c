#include "config/config.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <toml.hpp>
#include <unistd.h>

#include "config/toml_guard.h"
#include "core/duration.h"
#include "model/node.h"
#include "scheduler/idle_policy.h"

namespace gf {
namespace {

// The idle reaper's keys, in [class.NAME] and [team.NAME] (and [other_teams]).
constexpr std::array<std::string_view, 5> kIdleKeys = {
    "idle_action", "idle_after", "idle_grace", "idle_interactive_after", "idle_util_below"};

// Ordered tables, so that "known keys" lists and the order of checks do not depend on hashing.
using TomlValue = toml::basic_value<toml::discard_comments, std::map, std::vector>;
using TomlTable = TomlValue::table_type;

// One TOML table being read: its name as the file writes it ("[team.ml]"), and the prefix of
// its fields in ValidatePolicy's messages ("teams[ml]"), so that a policy error can be traced
// back to the line that set the field.
struct Section {
  const TomlValue* value = nullptr;
  std::string label;
  std::string policy_prefix;

  const TomlTable& Table() const { return value->as_table(); }
};

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    out += (out.empty() ? "" : ", ") + w;
  }
  return out;
}

// "an integer", "a string": what a value is, for "expected ..., got ..." messages.
std::string TypeName(const TomlValue& v) {
  std::ostringstream out;
  out << v.type();
  const std::string type = out.str();
  const bool vowel =
      !type.empty() && std::string_view("aeiou").find(type[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + type;
}

class ConfigParser {
 public:
  explicit ConfigParser(std::string source) : source_(std::move(source)) {
    config_.source = source_;
  }

  Result<Config> Parse(const TomlValue& root) {
    const Section top{&root, "the top level", ""};
    GF_TRY(CheckKeys(
        top,
        {"api", "class", "energy", "notify", "other_teams", "scheduler", "sharing", "team", "up"}));
    const TomlTable& table = root.as_table();
    if (auto it = table.find("scheduler"); it != table.end()) {
      GF_TRY(ParseScheduler(it->second));
    }
    ChooseClassSet(table);
    GF_TRY(ForEachNamed(table, "class", &ConfigParser::ParseClass));
    GF_TRY(ForEachNamed(table, "team", &ConfigParser::ParseTeam));
    if (auto it = table.find("other_teams"); it != table.end()) {
      GF_ASSIGN_OR_RETURN(const Section s,
                          TableSection(it->second, "[other_teams]", "other_teams"));
      GF_TRY(ReadTeamFields(s, config_.policy.other_teams));
    }
    if (auto it = table.find("up"); it != table.end()) {
      GF_TRY(ParseUp(it->second));
    }
    if (auto it = table.find("api"); it != table.end()) {
      GF_TRY(ParseApi(it->second));
    }
    if (auto it = table.find("notify"); it != table.end()) {
      GF_TRY(ParseNotify(it->second));
    }
    if (auto it = table.find("sharing"); it != table.end()) {
      GF_TRY(ParseSharing(it->second));
    }
    if (auto it = table.find("energy"); it != table.end()) {
      GF_TRY(ParseEnergy(it->second));
    }
    if (Status s = ValidatePolicy(config_.policy); !s.ok()) {
      return InvalidArgument(Locate(s.error().message));
    }
    return std::move(config_);
  }

  // The simulator's cluster file (config.h): [[node]] tables and nothing else.
  Result<std::vector<ClusterFileNode>> ParseCluster(const TomlValue& root) const {
    GF_TRY(CheckKeys(Section{&root, "the top level", ""}, {"node"}));
    const auto it = root.as_table().find("node");
    if (it == root.as_table().end() || !it->second.is_array() || it->second.as_array().empty()) {
      return InvalidArgument(source_ +
                             ": no [[node]] table; give one per node, e.g. [[node]] name = "
                             "\"a\" gpus = 8 model = \"H100-80GB\"");
    }
    std::vector<ClusterFileNode> nodes;
    for (const TomlValue& v : it->second.as_array()) {
      GF_ASSIGN_OR_RETURN(const Section s,
                          TableSection(v, "[[node]] " + std::to_string(nodes.size() + 1), ""));
      GF_TRY(CheckKeys(s, {"count", "gpus", "labels", "model", "name", "nvlink"}));
      ClusterFileNode node;
      node.where = At(v) + ": " + s.label;
      GF_ASSIGN_OR_RETURN(const auto name, String(s, "name"));
      GF_ASSIGN_OR_RETURN(const auto model, String(s, "model"));
      GF_ASSIGN_OR_RETURN(const auto gpus, IntIn(s, "gpus", 1, 64));
      GF_ASSIGN_OR_RETURN(const auto count, IntIn(s, "count", 1, 100'000));
      if (!name.has_value() || !model.has_value() || !gpus.has_value()) {
        return InvalidArgument(node.where + ": name, gpus and model are required");
      }
      node.name = *name;
      node.model = *model;
      node.gpus = *gpus;
      node.count = count.value_or(1);
      if (auto nv = s.Table().find("nvlink"); nv != s.Table().end()) {
        const Error wrong = KeyError(
            s, "nvlink", "expected a list of GPU index lists, e.g. [[0, 1, 2, 3], [4, 5, 6, 7]]");
        if (!nv->second.is_array()) {
          return wrong;
        }
        for (const TomlValue& group : nv->second.as_array()) {
          if (!group.is_array()) {
            return wrong;
          }
          std::vector<int> indexes;
          for (const TomlValue& index : group.as_array()) {
            if (!index.is_integer()) {
              return wrong;
            }
            indexes.push_back(static_cast<int>(index.as_integer()));
          }
          node.nvlink.push_back(std::move(indexes));
        }
      }
      if (auto labels = s.Table().find("labels"); labels != s.Table().end()) {
        GF_ASSIGN_OR_RETURN(const Section l, TableSection(labels->second, s.label + " labels", ""));
        for (const auto& [key, value] : l.Table()) {
          GF_ASSIGN_OR_RETURN(const auto text, String(l, key));
          node.labels[key] = *text;
        }
      }
      nodes.push_back(std::move(node));
    }
    return nodes;
  }

  // The client settings file (config.h): a [client] table and nothing else.
  Result<ClientConfig> ParseClient(const TomlValue& root) const {
    GF_TRY(CheckKeys(Section{&root, "the top level", ""}, {"client"}));
    ClientConfig out;
    out.source = source_;
    const auto it = root.as_table().find("client");
    if (it == root.as_table().end()) {
      return out;
    }
    GF_ASSIGN_OR_RETURN(const Section s, TableSection(it->second, "[client]", ""));
    GF_TRY(CheckKeys(s, {"ca_file", "servers", "token_file"}));
    GF_ASSIGN_OR_RETURN(const auto servers, StringList(s, "servers"));
    if (servers.has_value() && servers->empty()) {
      return KeyError(s,
                      "servers",
                      "the list is empty; name at least one server, e.g. "
                      "[\"https://gpu-a:7460\"], or leave the key out");
    }
    if (servers.has_value() &&
        std::find(servers->begin(), servers->end(), std::string()) != servers->end()) {
      return KeyError(s, "servers", "an empty string in the list; give each server's URL");
    }
    out.servers = servers.value_or(std::vector<std::string>{});
    GF_ASSIGN_OR_RETURN(const auto token_file, NonEmptyString(s, "token_file"));
    out.token_file = token_file.value_or("");
    GF_ASSIGN_OR_RETURN(const auto ca_file, NonEmptyString(s, "ca_file"));
    out.ca_file = ca_file.value_or("");
    return out;
  }

 private:
  using NamedParser = Status (ConfigParser::*)(const std::string& name, const TomlValue& v);

  // "gpufleet.toml:7" when the value came from the file, else "gpufleet.toml".
  std::string At(const TomlValue& v) const {
    const toml::source_location loc = v.location();
    if (loc.file_name() != source_) {
      return source_;
    }
    return source_ + ":" + std::to_string(loc.line());
  }

  std::string KeyAt(const Section& s, const std::string& key) const {
    return At(s.Table().at(key)) + ": " + s.label + " " + key;
  }

  Error KeyError(const Section& s, const std::string& key, const std::string& what) const {
    return InvalidArgument(KeyAt(s, key) + ": " + what);
  }

  Result<Section> TableSection(const TomlValue& v, std::string label, std::string prefix) const {
    if (!v.is_table()) {
      return InvalidArgument(At(v) + ": " + label + " must be a table (a " + label +
                             " header with keys under it), not " + TypeName(v));
    }
    return Section{&v, std::move(label), std::move(prefix)};
  }

  Status CheckKeys(const Section& s, const std::vector<std::string>& known) const {
    for (const auto& [key, value] : s.Table()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        return InvalidArgument(At(value) + ": unknown key '" + key + "' in " + s.label +
                               "; known keys: " + Join(known));
      }
    }
    return OkStatus();
  }

  // `[kind.NAME]` tables: each NAME is parsed by `parse`, in name order.
  Status ForEachNamed(const TomlTable& root, const std::string& kind, NamedParser parse) {
    auto it = root.find(kind);
    if (it == root.end()) {
      return OkStatus();
    }
    if (!it->second.is_table()) {
      return InvalidArgument(At(it->second) + ": '" + kind + "' must be tables [" + kind +
                             ".NAME], not " + TypeName(it->second));
    }
    for (const auto& [name, value] : it->second.as_table()) {
      GF_TRY((this->*parse)(name, value));
    }
    return OkStatus();
  }

  // Records where a policy field was set, under the name ValidatePolicy gives it.
  void Remember(const Section& s, const std::string& key, const std::string& field) {
    const std::string path = s.policy_prefix.empty() ? field : s.policy_prefix + "." + field;
    where_[path] = KeyAt(s, key);
  }

  // ---- typed reads: nullopt when the key is absent ----

  Result<std::optional<std::int64_t>> Int(const Section& s, const std::string& key) const {
    auto it = s.Table().find(key);
    if (it == s.Table().end()) {
      return std::optional<std::int64_t>();
    }
    if (!it->second.is_integer()) {
      return KeyError(s, key, "expected a whole number, got " + TypeName(it->second));
    }
    return std::optional<std::int64_t>(it->second.as_integer());
  }

  // A whole number that fits `int` and lies in [min, max]. The policy's own rules (0 or more,
  // max_gpus above the guarantee) are ValidatePolicy's to check, not repeated here.
  Result<std::optional<int>> IntIn(const Section& s,
                                   const std::string& key,
                                   std::int64_t min = std::numeric_limits<int>::min(),
                                   std::int64_t max = std::numeric_limits<int>::max()) const {
    GF_ASSIGN_OR_RETURN(const std::optional<std::int64_t> v, Int(s, key));
    if (!v.has_value()) {
      return std::optional<int>();
    }
    if (*v < min || *v > max) {
      return KeyError(s,
                      key,
                      std::to_string(*v) + " is out of range; use " + std::to_string(min) + " to " +
                          std::to_string(max));
    }
    return std::optional<int>(static_cast<int>(*v));
  }

  Result<std::optional<double>> Number(const Section& s, const std::string& key) const {
    auto it = s.Table().find(key);
    if (it == s.Table().end()) {
      return std::optional<double>();
    }
    if (it->second.is_integer()) {
      return std::optional<double>(static_cast<double>(it->second.as_integer()));
    }
    if (!it->second.is_floating()) {
      return KeyError(s, key, "expected a number, got " + TypeName(it->second));
    }
    return std::optional<double>(it->second.as_floating());
  }

  Result<std::optional<bool>> Bool(const Section& s, const std::string& key) const {
    auto it = s.Table().find(key);
    if (it == s.Table().end()) {
      return std::optional<bool>();
    }
    if (!it->second.is_boolean()) {
      return KeyError(s, key, "expected true or false, got " + TypeName(it->second));
    }
    return std::optional<bool>(it->second.as_boolean());
  }

  Result<std::optional<std::string>> String(const Section& s, const std::string& key) const {
    auto it = s.Table().find(key);
    if (it == s.Table().end()) {
      return std::optional<std::string>();
    }
    if (!it->second.is_string()) {
      return KeyError(s, key, "expected a string in quotes, got " + TypeName(it->second));
    }
    return std::optional<std::string>(it->second.as_string().str);
  }

  // A string that names something (a file, a program, a host): "" would silently mean "the
  // stock value" downstream (data_dir = "" fell back to /var/lib/gpufleet, another instance's
  // database), so it is refused; leaving the key out is how to ask for the stock value.
  Result<std::optional<std::string>> NonEmptyString(const Section& s,
                                                    const std::string& key) const {
    GF_ASSIGN_OR_RETURN(std::optional<std::string> value, String(s, key));
    if (value.has_value() && value->empty()) {
      return KeyError(s,
                      key,
                      "an empty string; give a value, or leave the key out for the "
                      "stock one");
    }
    return value;
  }

  Result<std::optional<std::vector<std::string>>> StringList(const Section& s,
                                                             const std::string& key) const {
    using Out = std::optional<std::vector<std::string>>;
    auto it = s.Table().find(key);
    if (it == s.Table().end()) {
      return Out();
    }
    const Error wrong = KeyError(s, key, "expected a list of strings, e.g. [\"alice\", \"bob\"]");
    if (!it->second.is_array()) {
      return wrong;
    }
    std::vector<std::string> out;
    for (const TomlValue& item : it->second.as_array()) {
      if (!item.is_string()) {
        return wrong;
      }
      out.push_back(item.as_string().str);
    }
    return Out(std::move(out));
  }

  Result<std::optional<std::vector<double>>> NumberList(const Section& s,
                                                        const std::string& key) const {
    using Out = std::optional<std::vector<double>>;
    auto it = s.Table().find(key);
    if (it == s.Table().end()) {
      return Out();
    }
    const Error wrong = KeyError(s, key, "expected a list of numbers, e.g. [3250, 7200]");
    if (!it->second.is_array()) {
      return wrong;
    }
    std::vector<double> out;
    for (const TomlValue& item : it->second.as_array()) {
      if (item.is_integer()) {
        out.push_back(static_cast<double>(item.as_integer()));
      } else if (item.is_floating()) {
        out.push_back(item.as_floating());
      } else {
        return wrong;
      }
    }
    return Out(std::move(out));
  }

  // A duration as people type them ("30s", "10m", "7d"); "0s" only where `zero_ok`, since
  // ParseDuration takes positive durations only.
  Result<std::optional<std::chrono::seconds>> Duration(const Section& s,
                                                       const std::string& key,
                                                       bool zero_ok = false) const {
    using Out = std::optional<std::chrono::seconds>;
    auto it = s.Table().find(key);
    if (it == s.Table().end()) {
      return Out();
    }
    if (!it->second.is_string()) {
      return KeyError(s,
                      key,
                      "expected a duration in quotes, e.g. \"30s\", \"10m\", \"7d\"; got " +
                          TypeName(it->second));
    }
    const std::string& text = it->second.as_string().str;
    if (zero_ok && (text == "0" || text == "0s")) {
      return Out(std::chrono::seconds(0));
    }
    Result<std::chrono::seconds> d = ParseDuration(text);
    if (!d.ok()) {
      return KeyError(s, key, d.error().message);
    }
    return Out(*d);
  }

  // ---- sections ----

  Status ParseScheduler(const TomlValue& v) {
    GF_ASSIGN_OR_RETURN(const Section s, TableSection(v, "[scheduler]", ""));
    GF_TRY(CheckKeys(s,
                     {"backfill",
                      "backfill_depth",
                      "default_class",
                      "fair_share_half_life",
                      "las_thresholds",
                      "max_preemptors_per_pass",
                      "min_run_time",
                      "model_weights",
                      "order",
                      "preemption",
                      "user_weights"}));
    PolicyConfig& p = config_.policy;
    GF_ASSIGN_OR_RETURN(const auto default_class, String(s, "default_class"));
    Set(p.default_class, default_class);
    GF_ASSIGN_OR_RETURN(const auto half_life, Duration(s, "fair_share_half_life"));
    Set(p.fair_share.half_life, half_life);
    GF_ASSIGN_OR_RETURN(const auto preemption, Bool(s, "preemption"));
    Set(p.preemption.enabled, preemption);
    GF_ASSIGN_OR_RETURN(const auto min_run, Duration(s, "min_run_time", /*zero_ok=*/true));
    Set(p.preemption.min_run_time, min_run);
    GF_ASSIGN_OR_RETURN(const auto preemptors, IntIn(s, "max_preemptors_per_pass"));
    Set(p.preemption.max_preemptors_per_pass, preemptors);
    GF_ASSIGN_OR_RETURN(const auto backfill, Bool(s, "backfill"));
    Set(p.backfill.enabled, backfill);
    GF_ASSIGN_OR_RETURN(const auto depth, IntIn(s, "backfill_depth"));
    Set(p.backfill.depth, depth);
    GF_ASSIGN_OR_RETURN(const auto order, String(s, "order"));
    if (order.has_value()) {
      Result<QueueOrder> parsed = ParseQueueOrder(*order);
      if (!parsed.ok()) {
        return KeyError(s, "order", parsed.error().message);
      }
      p.ordering.order = *parsed;
    }
    GF_ASSIGN_OR_RETURN(const auto thresholds, NumberList(s, "las_thresholds"));
    Set(p.ordering.las_thresholds, thresholds);
    for (const auto& [key, field] :
         {std::pair<std::string, std::string>{"default_class", "default_class"},
          {"fair_share_half_life", "fair_share.half_life"},
          {"min_run_time", "preemption.min_run_time"},
          {"max_preemptors_per_pass", "preemption.max_preemptors_per_pass"},
          {"backfill_depth", "backfill.depth"},
          {"las_thresholds", "ordering.las_thresholds"}}) {
      if (s.Table().contains(key)) {
        Remember(s, key, field);
      }
    }
    if (auto it = s.Table().find("user_weights"); it != s.Table().end()) {
      GF_TRY(ParseWeights(it->second, "user_weights", p.fair_share.user_weights));
    }
    if (auto it = s.Table().find("model_weights"); it != s.Table().end()) {
      GF_TRY(ParseWeights(it->second, "model_weights", p.fair_share.model_weights));
    }
    return OkStatus();
  }

  // [scheduler.NAME]: a number per key (a user, a GPU model), into fair_share.NAME.
  Status ParseWeights(const TomlValue& v,
                      const std::string& name,
                      std::map<std::string, double>& weights) {
    GF_ASSIGN_OR_RETURN(const Section s,
                        TableSection(v, "[scheduler." + name + "]", "fair_share." + name));
    for (const auto& [key, value] : s.Table()) {
      GF_ASSIGN_OR_RETURN(const std::optional<double> weight, Number(s, key));
      weights[key] = *weight;
      where_["fair_share." + name + "[" + key + "]"] = KeyAt(s, key);
    }
    return OkStatus();
  }

  // Which classes the file starts from. Tables that all name stock classes (high, normal,
  // low) tune them: a key a table leaves out keeps the stock value, so
  // `[class.high] max_gpus_per_user = 8` is all it takes to cap one class. A table naming a
  // class of its own means the admin defines the tiers: the classes are then exactly the
  // file's tables (a stock name among them starts blank too), as an admin listing their
  // tiers expects, rather than their tiers mixed with ours.
  void ChooseClassSet(const TomlTable& root) {
    const auto it = root.find("class");
    if (it == root.end() || !it->second.is_table()) {
      return;  // ForEachNamed reports a "class" that is not tables
    }
    const std::vector<PriorityClassPolicy> stock = DefaultPriorityClasses();
    for (const auto& entry : it->second.as_table()) {
      // Not a structured binding: clang 14 (the fuzz preset) cannot capture one in a lambda.
      const std::string& name = entry.first;
      const bool is_stock =
          std::any_of(stock.begin(), stock.end(), [&](const auto& c) { return c.name == name; });
      own_classes_ = own_classes_ || !is_stock;
    }
    if (own_classes_) {
      config_.policy.classes.clear();
    }
  }

  // [class.NAME]: tunes the stock class of that name, or defines one (ChooseClassSet).
  Status ParseClass(const std::string& name, const TomlValue& v) {
    GF_ASSIGN_OR_RETURN(const Section s,
                        TableSection(v, "[class." + name + "]", "classes[" + name + "]"));
    std::vector<std::string> known = {"allowed_users",
                                      "default_time_limit",
                                      "idle_opt_out",
                                      "max_gpus_per_user",
                                      "max_time_limit",
                                      "preempts",
                                      "rank"};
    known.insert(known.end(), kIdleKeys.begin(), kIdleKeys.end());
    GF_TRY(CheckKeys(s, known));
    std::vector<PriorityClassPolicy>& classes = config_.policy.classes;
    auto it = std::find_if(classes.begin(), classes.end(), [&](const PriorityClassPolicy& c) {
      return c.name == name;
    });
    if (it == classes.end()) {
      if (!s.Table().contains("rank")) {
        // Without it the order of the admin's tiers would be a guess.
        return InvalidArgument(At(v) + ": " + s.label +
                               " rank: missing; a file that defines its own classes gives "
                               "each a rank (lower goes first)");
      }
      PriorityClassPolicy added;
      added.name = name;
      it = classes.insert(classes.end(), std::move(added));
    }
    PriorityClassPolicy& cls = *it;
    where_[s.policy_prefix] = where_[s.policy_prefix + ".name"] = At(v) + ": " + s.label;
    GF_ASSIGN_OR_RETURN(const auto rank, IntIn(s, "rank"));
    Set(cls.rank, rank);
    GF_ASSIGN_OR_RETURN(const auto preempts, StringList(s, "preempts"));
    Set(cls.preempts, preempts);
    GF_ASSIGN_OR_RETURN(const auto users, StringList(s, "allowed_users"));
    Set(cls.allowed_users, users);
    GF_ASSIGN_OR_RETURN(const auto max_gpus, IntIn(s, "max_gpus_per_user"));
    SetOptional(cls.max_gpus_per_user, max_gpus);
    GF_ASSIGN_OR_RETURN(const auto default_limit, Duration(s, "default_time_limit"));
    SetOptional(cls.default_time_limit, default_limit);
    GF_ASSIGN_OR_RETURN(const auto max_limit, Duration(s, "max_time_limit"));
    SetOptional(cls.max_time_limit, max_limit);
    GF_TRY(ReadIdleRule(s, cls.idle));
    GF_ASSIGN_OR_RETURN(const auto opt_out, Bool(s, "idle_opt_out"));
    Set(cls.idle_opt_out, opt_out);
    RememberPresent(s);
    return OkStatus();
  }

  Status ParseTeam(const std::string& name, const TomlValue& v) {
    GF_ASSIGN_OR_RETURN(const Section s,
                        TableSection(v, "[team." + name + "]", "teams[" + name + "]"));
    where_[s.policy_prefix] = At(v) + ": " + s.label;
    TeamPolicy team;
    team.name = name;
    GF_TRY(ReadTeamFields(s, team));
    config_.policy.teams.push_back(std::move(team));
    GF_ASSIGN_OR_RETURN(const auto members, StringList(s, "members"));
    for (const std::string& user : members.value_or(std::vector<std::string>{})) {
      auto [it, added] = config_.team_of_user.emplace(user, name);
      if (!added) {
        return KeyError(s,
                        "members",
                        "user '" + user + "' is already a member of team '" + it->second +
                            "'; a user belongs to one team (an admin may still charge a job to "
                            "another)");
      }
    }
    return OkStatus();
  }

  // The keys of [team.NAME] and [other_teams] (which has no members: it is everyone else).
  Status ReadTeamFields(const Section& s, TeamPolicy& team) {
    std::vector<std::string> known = {
        "fair_share_weight", "gpu_hour_budget", "guaranteed_gpus", "max_gpus", "over_budget"};
    if (s.policy_prefix != "other_teams") {
      known.emplace_back("members");
    }
    known.insert(known.end(), kIdleKeys.begin(), kIdleKeys.end());
    GF_TRY(CheckKeys(s, known));
    GF_ASSIGN_OR_RETURN(const auto guaranteed, IntIn(s, "guaranteed_gpus"));
    Set(team.guaranteed_gpus, guaranteed);
    GF_ASSIGN_OR_RETURN(const auto max_gpus, IntIn(s, "max_gpus"));
    SetOptional(team.max_gpus, max_gpus);
    GF_ASSIGN_OR_RETURN(const auto budget, Number(s, "gpu_hour_budget"));
    SetOptional(team.gpu_hour_budget, budget);
    GF_ASSIGN_OR_RETURN(const auto weight, Number(s, "fair_share_weight"));
    Set(team.fair_share_weight, weight);
    GF_ASSIGN_OR_RETURN(const auto over, String(s, "over_budget"));
    if (over.has_value()) {
      if (*over == "borrow_only") {
        team.over_budget = OverBudget::kBorrowOnly;
      } else if (*over == "hold") {
        team.over_budget = OverBudget::kHold;
      } else {
        return KeyError(
            s, "over_budget", "'" + *over + "' is not a choice; use \"borrow_only\" or \"hold\"");
      }
    }
    GF_TRY(ReadIdleRule(s, team.idle));
    RememberPresent(s);
    return OkStatus();
  }

  // The idle reaper's keys (kIdleKeys) of a [class.NAME] or [team.NAME] table; ranges and
  // the like are ValidatePolicy's (ValidateIdleRule), located through RememberPresent.
  Status ReadIdleRule(const Section& s, IdleRule& rule) const {
    GF_ASSIGN_OR_RETURN(const auto after, Duration(s, "idle_after", /*zero_ok=*/true));
    SetOptional(rule.after, after);
    GF_ASSIGN_OR_RETURN(const auto interactive,
                        Duration(s, "idle_interactive_after", /*zero_ok=*/true));
    SetOptional(rule.interactive_after, interactive);
    GF_ASSIGN_OR_RETURN(const auto grace, Duration(s, "idle_grace", /*zero_ok=*/true));
    SetOptional(rule.grace, grace);
    GF_ASSIGN_OR_RETURN(const auto below, IntIn(s, "idle_util_below"));
    SetOptional(rule.util_below_pct, below);
    GF_ASSIGN_OR_RETURN(const auto action, String(s, "idle_action"));
    if (action.has_value()) {
      Result<IdleAction> parsed = ParseIdleAction(*action);
      if (!parsed.ok()) {
        return KeyError(s, "idle_action", parsed.error().message);
      }
      rule.action = *parsed;
    }
    return OkStatus();
  }

  Status ParseUp(const TomlValue& v) {
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
                      "node_name",
                      "port",
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
    GF_ASSIGN_OR_RETURN(const auto power_limit,
                        IntIn(s, "idle_power_limit", 1, kMaxIdlePowerLimitW));
    Wrap(s, "idle_power_limit", power_limit, up.idle_power_limit);
    GF_ASSIGN_OR_RETURN(const auto power_after, Duration(s, "idle_power_after"));
    Wrap(s, "idle_power_after", power_after, up.idle_power_after);
    GF_TRY(UpString(s, "gpu_self_test", up.gpu_self_test));
    GF_TRY(UpString(s, "mps_control", up.mps_control));
    GF_ASSIGN_OR_RETURN(const auto self_test_every, Duration(s, "gpu_self_test_interval"));
    Wrap(s, "gpu_self_test_interval", self_test_every, up.gpu_self_test_interval);
    return ParseUpLabels(s);
  }

  // [api]: the API server's limits (docs/config.md). The upper bounds only catch typos that
  // would be no limit at all; the server checks nothing more.
  Status ParseApi(const TomlValue& v) {
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
  Status ParseNotify(const TomlValue& v) {
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

  Status ParseSharing(const TomlValue& v) {
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

  Status ParseEnergy(const TomlValue& v) {
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
  Result<std::optional<double>> NonNegative(const Section& s, const std::string& key) const {
    GF_ASSIGN_OR_RETURN(const std::optional<double> value, Number(s, key));
    if (value && !(*value >= 0 && std::isfinite(*value))) {
      return KeyError(s, key, std::to_string(*value) + " is not a valid figure; use a number >= 0");
    }
    return value;
  }

  // labels = { rack = "a", zone = "x" } (or an [up.labels] table): strings, valid labels.
  Status ParseUpLabels(const Section& up) {
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
    config_.up.labels =
        ConfigValue<std::map<std::string, std::string>>{labels, KeyAt(up, "labels")};
    return OkStatus();
  }

  // Every [up] string names a path, a program, a host or a spec: none may be "".
  Status UpString(const Section& s,
                  const std::string& key,
                  std::optional<ConfigValue<std::string>>& out) const {
    GF_ASSIGN_OR_RETURN(const auto value, NonEmptyString(s, key));
    Wrap(s, key, value, out);
    return OkStatus();
  }

  template <typename T>
  void Wrap(const Section& s,
            const std::string& key,
            const std::optional<T>& value,
            std::optional<ConfigValue<T>>& out) const {
    if (value.has_value()) {
      out = ConfigValue<T>{*value, KeyAt(s, key)};
    }
  }

  // A policy section's keys are named in ValidatePolicy's messages as they are in the file.
  void RememberPresent(const Section& s) {
    for (const auto& entry : s.Table()) {
      Remember(s, entry.first, entry.first);
    }
  }

  template <typename T>
  static void Set(T& field, const std::optional<T>& value) {
    if (value.has_value()) {
      field = *value;
    }
  }

  template <typename T>
  static void SetOptional(std::optional<T>& field, const std::optional<T>& value) {
    if (value.has_value()) {
      field = value;
    }
  }

  // ValidatePolicy says "teams[ml].max_gpus: 4 is below ..."; the reader of a config file
  // needs "gpufleet.toml:9: [team.ml] max_gpus: 4 is below ...". Falls back to the field's
  // table, then to the file name, for a field the file did not set (a stock value).
  std::string Locate(const std::string& message) const {
    const std::size_t colon = message.find(": ");
    if (colon == std::string::npos) {
      return source_ + ": " + message;
    }
    const std::string field = message.substr(0, colon);
    const std::string rest = message.substr(colon + 2);
    if (auto it = where_.find(field); it != where_.end()) {
      return it->second + ": " + rest;
    }
    const std::string table = field.substr(0, field.rfind('.'));
    if (auto it = where_.find(table); it != where_.end()) {
      return it->second + ": " + message;
    }
    return source_ + ": " + message;
  }

  std::string source_;
  Config config_;
  bool own_classes_ = false;                  // the file defines its own classes (ChooseClassSet)
  std::map<std::string, std::string> where_;  // ValidatePolicy field name → "file:line: [t] key"
};

Result<TomlValue> ParseToml(std::string_view text, const std::string& source_name) {
  // toml11 recurses on nesting: a text too deep for its stack is refused before it sees it.
  GF_TRY(CheckTomlShape(text, source_name));
  try {
    std::istringstream in{std::string(text)};
    return toml::parse<toml::discard_comments, std::map, std::vector>(in, source_name);
  } catch (const std::exception& e) {
    // toml11's message already names the file and line and underlines the spot.
    return InvalidArgument(source_name + ": not valid TOML: " + e.what());
  }
}

// The text of a settings file (`what`: "config file", ...); `missing` is the whole message when
// it does not exist. A directory is refused: reading one gives no text, and an empty text is
// the stock settings, which must never stand in for a file the admin named. Reads at most one
// byte past kMaxSettingsBytes (a device such as /dev/zero never ends); CheckTomlShape refuses
// such a text.
Result<std::string> ReadSettingsFile(const std::string& path,
                                     const std::string& what,
                                     const std::string& missing) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return NotFound(missing);
    }
    return IoError("cannot read " + what + " " + path + ": " + ErrnoText(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(what + " " + path +
                           " is a directory, not a file; give the path of the file itself");
  }
  std::string text;
  char buffer[65536];
  while (text.size() <= kMaxSettingsBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return IoError("cannot read " + what + " " + path + ": " + ErrnoText(err));
    }
    if (n == 0) {
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

// A file name from the client settings file: "~/x" in `home`, "x" next to the file.
std::string ResolveClientPath(const std::string& name,
                              const std::string& config_path,
                              const std::string& home) {
  if (name.empty() || name.front() == '/') {
    return name;
  }
  if (name.starts_with("~/")) {
    return home + name.substr(1);
  }
  return (std::filesystem::path(config_path).parent_path() / name).string();
}

}  // namespace

Result<Config> ParseConfig(std::string_view text, const std::string& source_name) {
  GF_ASSIGN_OR_RETURN(const TomlValue root, ParseToml(text, source_name));
  return ConfigParser(source_name).Parse(root);
}

Result<Config> LoadConfig(const std::string& path) {
  GF_ASSIGN_OR_RETURN(const std::string text,
                      ReadSettingsFile(path,
                                       "config file",
                                       "config file " + path +
                                           " does not exist; create it (see "
                                           "deploy/gpufleet.example.toml) or give another "
                                           "with --config"));
  return ParseConfig(text, path);
}

Result<std::vector<ClusterFileNode>> ParseClusterFile(std::string_view text,
                                                      const std::string& source_name) {
  GF_ASSIGN_OR_RETURN(const TomlValue root, ParseToml(text, source_name));
  return ConfigParser(source_name).ParseCluster(root);
}

Result<std::vector<ClusterFileNode>> LoadClusterFile(const std::string& path) {
  GF_ASSIGN_OR_RETURN(
      const std::string text,
      ReadSettingsFile(path, "cluster file", "cluster file " + path + " does not exist"));
  return ParseClusterFile(text, path);
}

Result<ClientConfig> ParseClientConfig(std::string_view text, const std::string& source_name) {
  GF_ASSIGN_OR_RETURN(const TomlValue root, ParseToml(text, source_name));
  return ConfigParser(source_name).ParseClient(root);
}

Result<ClientConfig> LoadClientConfig(const std::string& path, const std::string& home) {
  GF_ASSIGN_OR_RETURN(const std::string text,
                      ReadSettingsFile(path,
                                       "client settings file",
                                       "client settings file " + path +
                                           " does not exist (GPUFLEET_CLIENT_CONFIG "
                                           "names it); create it or unset the variable"));
  GF_ASSIGN_OR_RETURN(ClientConfig config, ParseClientConfig(text, path));
  config.token_file = ResolveClientPath(config.token_file, path, home);
  config.ca_file = ResolveClientPath(config.ca_file, path, home);
  return config;
}

}  // namespace gf
