#include "codec/codec.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/hex.h"
#include "json/json_text.h"

namespace gf {
namespace {

using Json = nlohmann::json;

// Number of continuation bytes after lead byte `c`, and the allowed range of the first of them
// (Unicode Table 3-7); -1 if `c` cannot start a sequence.
int Utf8Tail(unsigned char c, unsigned char& lo, unsigned char& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (c < 0x80) {
    return 0;
  }
  if (c >= 0xC2 && c <= 0xDF) {
    return 1;
  }
  if (c == 0xE0) {
    lo = 0xA0;
    return 2;
  }  // no overlongs
  if (c == 0xED) {
    hi = 0x9F;
    return 2;
  }  // no surrogates
  if (c >= 0xE1 && c <= 0xEF) {
    return 2;
  }
  if (c == 0xF0) {
    lo = 0x90;
    return 3;
  }  // no overlongs
  if (c == 0xF4) {
    hi = 0x8F;
    return 3;
  }  // nothing above U+10FFFF
  if (c >= 0xF1 && c <= 0xF3) {
    return 3;
  }
  return -1;
}

// A byte string as JSON: itself when it is UTF-8, {"hex": ...} otherwise.
Json BytesToJson(const std::string& s) {
  if (IsValidUtf8(s)) {
    return s;
  }
  return Json{{"hex", HexEncode(s)}};
}

// Throws nlohmann::json::exception (caught by Guard) or std::invalid_argument on bad input.
std::string BytesFromJson(const Json& j) {
  if (j.is_string()) {
    return j.get<std::string>();
  }
  std::optional<std::string> bytes = HexDecode(j.at("hex").get<std::string>());
  if (!bytes) {
    throw std::invalid_argument("bad hex string");
  }
  return *bytes;
}

// Runs `fn`, turning any exception (nlohmann's, or our own invalid_argument) into an Error:
// nothing throws across the module boundary.
template <typename Fn>
auto Guard(ErrorCode code, std::string_view what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return MakeError(code, std::string(what) + ": " + e.what());
  }
}

Result<std::string> Dump(const Json& j, std::string_view what) {
  return Guard(ErrorCode::kInternal, what, [&]() -> Result<std::string> { return j.dump(); });
}

// Only gpufleet writes these columns, but a database is outside the process (PostgreSQL is
// shared with its admins): the text is read with the one parser of outside JSON
// (json/json_text.h), its bounds included. A failure means the stored text is damaged.
Result<Json> Parse(std::string_view text, std::string_view what, Json::value_t expected) {
  Result<Json> parsed = ParseJsonText(text, what);
  if (!parsed.ok()) {
    return Internal(parsed.error().message);
  }
  if (parsed->type() != expected) {
    return Internal(std::string(what) +
                    ": stored JSON has the wrong type: " + std::string(text.substr(0, 80)));
  }
  return parsed;
}

std::string Decoding(std::string_view what) {
  return "decode " + std::string(what);
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char lo = 0;
    unsigned char hi = 0;
    int tail = Utf8Tail(static_cast<unsigned char>(s[i]), lo, hi);
    if (tail < 0 || s.size() - i - 1 < static_cast<std::size_t>(tail)) {
      return false;  // not a lead byte, or the sequence is cut short
    }
    for (int k = 1; k <= tail; ++k) {
      auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      if (c < lo || c > hi) {
        return false;
      }
      lo = 0x80;
      hi = 0xBF;
    }
    i += static_cast<std::size_t>(tail) + 1;
  }
  return true;
}

Result<std::string> EncodeStrings(const std::vector<std::string>& strings) {
  Json j = Json::array();
  for (const auto& s : strings) {
    j.push_back(BytesToJson(s));
  }
  return Dump(j, "encode string list");
}

Result<std::vector<std::string>> DecodeStrings(std::string_view text, std::string_view what) {
  GF_ASSIGN_OR_RETURN(Json j, Parse(text, what, Json::value_t::array));
  return Guard(ErrorCode::kInternal, Decoding(what), [&]() -> Result<std::vector<std::string>> {
    std::vector<std::string> out;
    out.reserve(j.size());
    for (const auto& e : j) {
      out.push_back(BytesFromJson(e));
    }
    return out;
  });
}

Result<std::string> EncodeEnv(const EnvList& env) {
  Json j = Json::array();
  for (const auto& [name, value] : env) {
    j.push_back(Json::array({BytesToJson(name), BytesToJson(value)}));
  }
  return Dump(j, "encode env");
}

Result<EnvList> DecodeEnv(std::string_view text, std::string_view what) {
  GF_ASSIGN_OR_RETURN(Json j, Parse(text, what, Json::value_t::array));
  return Guard(ErrorCode::kInternal, Decoding(what), [&]() -> Result<EnvList> {
    EnvList out;
    out.reserve(j.size());
    for (const auto& e : j) {
      if (!e.is_array() || e.size() != 2) {
        throw std::invalid_argument("env entry is not a pair");
      }
      out.emplace_back(BytesFromJson(e[0]), BytesFromJson(e[1]));
    }
    return out;
  });
}

Result<std::string> EncodeGpuUuids(const std::vector<GpuUuid>& uuids) {
  Json j = Json::array();
  for (const auto& u : uuids) {
    j.push_back(BytesToJson(u.value()));
  }
  return Dump(j, "encode GPU list");
}

Result<std::vector<GpuUuid>> DecodeGpuUuids(std::string_view text, std::string_view what) {
  GF_ASSIGN_OR_RETURN(std::vector<std::string> strings, DecodeStrings(text, what));
  std::vector<GpuUuid> out;
  out.reserve(strings.size());
  for (auto& s : strings) {
    out.emplace_back(std::move(s));
  }
  return out;
}

Result<std::string> EncodeGpus(const std::vector<Gpu>& gpus) {
  Json j = Json::array();
  for (const auto& g : gpus) {
    j.push_back(Json{{"index", g.index},
                     {"uuid", BytesToJson(g.uuid.value())},
                     {"model", BytesToJson(g.model)},
                     {"memory_mib", g.memory_mib},
                     {"health", std::string(ToString(g.health))},
                     {"health_cause", BytesToJson(g.health_cause)},
                     {"numa_node", g.numa_node},
                     {"pcie_switch", g.pcie_switch},
                     {"nvlink_peers", g.nvlink_peers},
                     {"sharing", std::string(ToString(g.sharing))}});
    if (g.sharing_next.has_value()) {  // a mode change waiting for the GPU to empty
      j.back()["sharing_next"] = std::string(ToString(*g.sharing_next));
    }
    if (g.mig_enabled || !g.mig_instances.empty() || !g.mig_profiles.empty()) {
      Json instances = Json::array();
      for (const MigInstance& m : g.mig_instances) {
        instances.push_back(Json{{"profile", BytesToJson(m.profile)},
                                 {"uuid", BytesToJson(m.uuid.value())},
                                 {"gpu_instance_id", m.gpu_instance_id},
                                 {"compute_instance_id", m.compute_instance_id},
                                 {"slices", m.slices},
                                 {"memory_mib", m.memory_mib}});
      }
      Json profiles = Json::array();
      for (const std::string& p : g.mig_profiles) {
        profiles.push_back(BytesToJson(p));
      }
      j.back()["mig_enabled"] = g.mig_enabled;
      j.back()["mig_instances"] = std::move(instances);
      j.back()["mig_profiles"] = std::move(profiles);
    }
    if (g.mig_layout_next.has_value()) {  // an admin's layout waiting for the GPU to empty
      Json layout = Json::array();
      for (const std::string& p : *g.mig_layout_next) {
        layout.push_back(BytesToJson(p));
      }
      j.back()["mig_layout_next"] = std::move(layout);
    }
  }
  return Dump(j, "encode node GPUs");
}

Result<std::vector<Gpu>> DecodeGpus(std::string_view text, std::string_view what) {
  GF_ASSIGN_OR_RETURN(Json j, Parse(text, what, Json::value_t::array));
  return Guard(ErrorCode::kInternal, Decoding(what), [&]() -> Result<std::vector<Gpu>> {
    std::vector<Gpu> out;
    out.reserve(j.size());
    for (const auto& e : j) {
      Gpu g;
      g.index = e.at("index").get<int>();
      g.uuid = GpuUuid(BytesFromJson(e.at("uuid")));
      g.model = BytesFromJson(e.at("model"));
      g.memory_mib = e.at("memory_mib").get<std::int64_t>();
      auto health = ParseGpuHealth(e.at("health").get<std::string>());
      if (!health.ok()) {
        return Internal(std::string(what) + ": " + health.error().message);
      }
      g.health = *health;
      g.health_cause = BytesFromJson(e.at("health_cause"));
      // Topology came with issue #4: rows written before it have none (unknown).
      g.numa_node = e.value("numa_node", -1);
      g.pcie_switch = e.value("pcie_switch", -1);
      g.nvlink_peers = e.value("nvlink_peers", std::vector<int>{});
      // Sharing came with issue #7 (schema v10): rows written before are exclusive GPUs.
      if (e.contains("sharing")) {
        auto sharing = ParseSharingMode(e.at("sharing").get<std::string>(), "sharing");
        if (!sharing.ok()) {
          return Internal(std::string(what) + ": " + sharing.error().message);
        }
        g.sharing = *sharing;
      }
      if (e.contains("sharing_next")) {
        auto next = ParseSharingMode(e.at("sharing_next").get<std::string>(), "sharing_next");
        if (!next.ok()) {
          return Internal(std::string(what) + ": " + next.error().message);
        }
        g.sharing_next = *next;
      }
      // MIG came with issue #7 too: rows without it are GPUs not in MIG mode.
      g.mig_enabled = e.value("mig_enabled", false);
      for (const auto& m : e.value("mig_instances", Json::array())) {
        g.mig_instances.push_back(
            MigInstance{.profile = BytesFromJson(m.at("profile")),
                        .uuid = GpuUuid(BytesFromJson(m.at("uuid"))),
                        .gpu_instance_id = m.at("gpu_instance_id").get<int>(),
                        .compute_instance_id = m.at("compute_instance_id").get<int>(),
                        .slices = m.at("slices").get<int>(),
                        .memory_mib = m.at("memory_mib").get<std::int64_t>()});
      }
      for (const auto& p : e.value("mig_profiles", Json::array())) {
        g.mig_profiles.push_back(BytesFromJson(p));
      }
      if (e.contains("mig_layout_next")) {
        g.mig_layout_next.emplace();
        for (const auto& p : e.at("mig_layout_next")) {
          g.mig_layout_next->push_back(BytesFromJson(p));
        }
      }
      out.push_back(std::move(g));
    }
    return out;
  });
}

Result<std::string> EncodeLabels(const std::map<std::string, std::string>& labels) {
  Json j = Json::object();
  for (const auto& [key, value] : labels) {
    if (!IsValidUtf8(key)) {
      return InvalidArgument("label key '" + key + "' is not valid UTF-8; use UTF-8 label keys");
    }
    j[key] = BytesToJson(value);
  }
  return Dump(j, "encode labels");
}

Result<std::map<std::string, std::string>> DecodeLabels(std::string_view text,
                                                        std::string_view what) {
  GF_ASSIGN_OR_RETURN(Json j, Parse(text, what, Json::value_t::object));
  return Guard(
      ErrorCode::kInternal, Decoding(what), [&]() -> Result<std::map<std::string, std::string>> {
        std::map<std::string, std::string> out;
        for (const auto& [key, value] : j.items()) {
          out[key] = BytesFromJson(value);
        }
        return out;
      });
}

}  // namespace gf

namespace gf {

Result<std::string> EncodeDependencies(const std::vector<Dependency>& after) {
  Json j = Json::array();
  for (const Dependency& d : after) {
    j.push_back(Json{{"job", d.job.value()}, {"kind", std::string(ToString(d.kind))}});
  }
  return Dump(j, "encode dependencies");
}

Result<std::vector<Dependency>> DecodeDependencies(std::string_view text, std::string_view what) {
  GF_ASSIGN_OR_RETURN(Json j, Parse(text, what, Json::value_t::array));
  return Guard(ErrorCode::kInternal, Decoding(what), [&]() -> Result<std::vector<Dependency>> {
    std::vector<Dependency> out;
    out.reserve(j.size());
    for (const Json& item : j) {
      const auto kind = item.at("kind").get<std::string>();
      if (kind != ToString(DependencyKind::kAny) && kind != ToString(DependencyKind::kOk)) {
        throw std::invalid_argument("unknown dependency kind '" + kind + "'");
      }
      const bool ok = kind == ToString(DependencyKind::kOk);
      out.push_back(Dependency{.job = JobId(item.at("job").get<std::int64_t>()),
                               .kind = ok ? DependencyKind::kOk : DependencyKind::kAny});
    }
    return out;
  });
}

}  // namespace gf
