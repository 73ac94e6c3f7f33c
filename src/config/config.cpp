// The settings files (config.h): reading and parsing a file, the entry points of ConfigParser
// (config_parser.h) and the typed readers every table uses. The tables themselves are read in
// config_policy.cpp and config_up.cpp.
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
#include <unistd.h>

#include "config/config_parser.h"
#include "config/toml_guard.h"
#include "core/duration.h"
#include "model/node.h"
#include "scheduler/idle_policy.h"

namespace gf {
namespace {

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

}  // namespace

Result<Config> ConfigParser::Parse(const TomlValue& root) {
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
    GF_ASSIGN_OR_RETURN(const Section s, TableSection(it->second, "[other_teams]", "other_teams"));
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
Result<std::vector<ClusterFileNode>> ConfigParser::ParseCluster(const TomlValue& root) const {
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
Result<ClientConfig> ConfigParser::ParseClient(const TomlValue& root) const {
  GF_TRY(CheckKeys(Section{&root, "the top level", ""}, {"client", "slurm"}));
  ClientConfig out;
  out.source = source_;
  if (const auto slurm = root.as_table().find("slurm"); slurm != root.as_table().end()) {
    GF_ASSIGN_OR_RETURN(out.slurm, ParseSlurmMapping(slurm->second));
  }
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

// [slurm.partition], [slurm.qos], [slurm.gpu_type]: each a name → non-empty name table.
Result<SlurmMapping> ConfigParser::ParseSlurmMapping(const TomlValue& v) const {
  GF_ASSIGN_OR_RETURN(const Section s, TableSection(v, "[slurm]", ""));
  GF_TRY(CheckKeys(s, {"gpu_type", "partition", "qos"}));
  SlurmMapping out;
  for (auto [key, into] : {std::pair{"partition", &out.partition},
                           std::pair{"qos", &out.qos},
                           std::pair{"gpu_type", &out.gpu_type}}) {
    const auto it = s.Table().find(key);
    if (it == s.Table().end()) {
      continue;
    }
    GF_ASSIGN_OR_RETURN(const Section table,
                        TableSection(it->second, "[slurm." + std::string(key) + "]", ""));
    for (const auto& entry : table.Table()) {
      GF_ASSIGN_OR_RETURN(const std::optional<std::string> to, NonEmptyString(table, entry.first));
      (*into)[entry.first] = *to;
    }
  }
  return out;
}

// "gpufleet.toml:7" when the value came from the file, else "gpufleet.toml".
std::string ConfigParser::At(const TomlValue& v) const {
  const toml::source_location loc = v.location();
  if (loc.file_name() != source_) {
    return source_;
  }
  return source_ + ":" + std::to_string(loc.line());
}

std::string ConfigParser::KeyAt(const Section& s, const std::string& key) const {
  return At(s.Table().at(key)) + ": " + s.label + " " + key;
}

Error ConfigParser::KeyError(const Section& s,
                             const std::string& key,
                             const std::string& what) const {
  return InvalidArgument(KeyAt(s, key) + ": " + what);
}

Result<Section> ConfigParser::TableSection(const TomlValue& v,
                                           std::string label,
                                           std::string prefix) const {
  if (!v.is_table()) {
    return InvalidArgument(At(v) + ": " + label + " must be a table (a " + label +
                           " header with keys under it), not " + TypeName(v));
  }
  return Section{&v, std::move(label), std::move(prefix)};
}

Status ConfigParser::CheckKeys(const Section& s, const std::vector<std::string>& known) const {
  for (const auto& [key, value] : s.Table()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return InvalidArgument(At(value) + ": unknown key '" + key + "' in " + s.label +
                             "; known keys: " + Join(known));
    }
  }
  return OkStatus();
}

// `[kind.NAME]` tables: each NAME is parsed by `parse`, in name order.
Status ConfigParser::ForEachNamed(const TomlTable& root,
                                  const std::string& kind,
                                  NamedParser parse) {
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
void ConfigParser::Remember(const Section& s, const std::string& key, const std::string& field) {
  const std::string path = s.policy_prefix.empty() ? field : s.policy_prefix + "." + field;
  where_[path] = KeyAt(s, key);
}

Result<std::optional<std::int64_t>> ConfigParser::Int(const Section& s,
                                                      const std::string& key) const {
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
Result<std::optional<int>> ConfigParser::IntIn(const Section& s,
                                               const std::string& key,
                                               std::int64_t min,
                                               std::int64_t max) const {
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

Result<std::optional<double>> ConfigParser::Number(const Section& s, const std::string& key) const {
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

Result<std::optional<bool>> ConfigParser::Bool(const Section& s, const std::string& key) const {
  auto it = s.Table().find(key);
  if (it == s.Table().end()) {
    return std::optional<bool>();
  }
  if (!it->second.is_boolean()) {
    return KeyError(s, key, "expected true or false, got " + TypeName(it->second));
  }
  return std::optional<bool>(it->second.as_boolean());
}

Result<std::optional<std::string>> ConfigParser::String(const Section& s,
                                                        const std::string& key) const {
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
Result<std::optional<std::string>> ConfigParser::NonEmptyString(const Section& s,
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

Result<std::optional<std::vector<std::string>>> ConfigParser::StringList(
    const Section& s, const std::string& key) const {
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

Result<std::optional<std::vector<double>>> ConfigParser::NumberList(const Section& s,
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
Result<std::optional<std::chrono::seconds>> ConfigParser::Duration(const Section& s,
                                                                   const std::string& key,
                                                                   bool zero_ok) const {
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

// A policy section's keys are named in ValidatePolicy's messages as they are in the file.
void ConfigParser::RememberPresent(const Section& s) {
  for (const auto& entry : s.Table()) {
    Remember(s, entry.first, entry.first);
  }
}

// ValidatePolicy says "teams[ml].max_gpus: 4 is below ..."; the reader of a config file
// needs "gpufleet.toml:9: [team.ml] max_gpus: 4 is below ...". Falls back to the field's
// table, then to the file name, for a field the file did not set (a stock value).
std::string ConfigParser::Locate(const std::string& message) const {
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

namespace {

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
      std::string message = "cannot read " + what;
      message.append(" ").append(path).append(": ").append(ErrnoText(err));
      return IoError(message);
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
