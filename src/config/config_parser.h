// Internal to gf_config: ConfigParser, which reads a parsed TOML document into Config,
// ClientConfig or the cluster file's nodes, and the types it reads with. Declared here
// because its members are defined in three files: config.cpp (the entry points and the typed
// readers every table uses), config_policy.cpp ([scheduler], [class.*], [team.*]) and
// config_up.cpp ([up], [api], [notify], [sharing], [energy]). Include it from those alone:
// toml11 stays private to gf_config.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <toml.hpp>

#include "config/config.h"

namespace gf {

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

class ConfigParser {
 public:
  explicit ConfigParser(std::string source) : source_(std::move(source)) {
    config_.source = source_;
  }

  Result<Config> Parse(const TomlValue& root);
  Result<std::vector<ClusterFileNode>> ParseCluster(const TomlValue& root) const;
  Result<ClientConfig> ParseClient(const TomlValue& root) const;
  Result<SlurmMapping> ParseSlurmMapping(const TomlValue& v) const;

 private:
  using NamedParser = Status (ConfigParser::*)(const std::string& name, const TomlValue& v);

  // The typed readers (config.cpp).
  std::string At(const TomlValue& v) const;
  std::string KeyAt(const Section& s, const std::string& key) const;
  Error KeyError(const Section& s, const std::string& key, const std::string& what) const;
  Result<Section> TableSection(const TomlValue& v, std::string label, std::string prefix) const;
  Status CheckKeys(const Section& s, const std::vector<std::string>& known) const;
  Status ForEachNamed(const TomlTable& root, const std::string& kind, NamedParser parse);
  void Remember(const Section& s, const std::string& key, const std::string& field);
  Result<std::optional<std::int64_t>> Int(const Section& s, const std::string& key) const;
  Result<std::optional<int>> IntIn(const Section& s,
                                   const std::string& key,
                                   std::int64_t min = std::numeric_limits<int>::min(),
                                   std::int64_t max = std::numeric_limits<int>::max()) const;
  Result<std::optional<double>> Number(const Section& s, const std::string& key) const;
  Result<std::optional<bool>> Bool(const Section& s, const std::string& key) const;
  Result<std::optional<std::string>> String(const Section& s, const std::string& key) const;
  Result<std::optional<std::string>> NonEmptyString(const Section& s, const std::string& key) const;
  // A string key read by `parse` (an enum's parser: "priority", "kill"); its error is the key's.
  template <typename T>
  Result<std::optional<T>> Parsed(const Section& s,
                                  const std::string& key,
                                  Result<T> (*parse)(std::string_view)) const {
    GF_ASSIGN_OR_RETURN(const std::optional<std::string> text, String(s, key));
    if (!text.has_value()) {
      return std::optional<T>();
    }
    Result<T> parsed = parse(*text);
    if (!parsed.ok()) {
      return KeyError(s, key, parsed.error().message);
    }
    return std::optional<T>(*parsed);
  }
  Result<std::optional<std::vector<std::string>>> StringList(const Section& s,
                                                             const std::string& key) const;
  Result<std::optional<std::vector<double>>> NumberList(const Section& s,
                                                        const std::string& key) const;
  Result<std::optional<std::chrono::seconds>> Duration(const Section& s,
                                                       const std::string& key,
                                                       bool zero_ok = false) const;
  void RememberPresent(const Section& s);
  std::string Locate(const std::string& message) const;

  // [scheduler], [class.*], [team.*] (config_policy.cpp).
  Status ParseScheduler(const TomlValue& v);
  Status ParseWeights(const TomlValue& v,
                      const std::string& name,
                      std::map<std::string, double>& weights);
  void ChooseClassSet(const TomlTable& root);
  Status ParseClass(const std::string& name, const TomlValue& v);
  Status ParseTeam(const std::string& name, const TomlValue& v);
  Status ReadTeamFields(const Section& s, TeamPolicy& team);
  Status ReadIdleRule(const Section& s, IdleRule& rule) const;

  // [up] and the daemon's other tables (config_up.cpp).
  Status ParseUp(const TomlValue& v);
  Status ParseApi(const TomlValue& v);
  Status ParseNotify(const TomlValue& v);
  Status ParseSharing(const TomlValue& v);
  Status ParseEnergy(const TomlValue& v);
  Result<std::optional<double>> NonNegative(const Section& s, const std::string& key) const;
  Status ParseUpLabels(const Section& up);
  Status UpString(const Section& s,
                  const std::string& key,
                  std::optional<ConfigValue<std::string>>& out) const;

  template <typename T>
  void Wrap(const Section& s,
            const std::string& key,
            const std::optional<T>& value,
            std::optional<ConfigValue<T>>& out) const {
    if (value.has_value()) {
      out = ConfigValue<T>{*value, KeyAt(s, key)};
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

  std::string source_;
  Config config_;
  bool own_classes_ = false;                  // the file defines its own classes (ChooseClassSet)
  std::map<std::string, std::string> where_;  // ValidatePolicy field name → "file:line: [t] key"
};

}  // namespace gf
