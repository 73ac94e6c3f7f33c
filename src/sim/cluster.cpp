#include "sim/cluster.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>

#include "config/config.h"
#include "sim/csv.h"

namespace gf::sim {
namespace {

constexpr int kMaxNodes = 100'000;
constexpr int kMaxGpusPerNode = 64;

// GPU memory by model name, for the models the traces' node lists name, so that a share gets
// its part of the memory (ShareOf). NVML's totals for the boards (T4 15109 MiB, V100 16 GB
// 16160, P100 16280, A10 22731, V100 32 GB 32510: the table the FGD simulator uses for the
// openb node list). Alibaba's G2 and G3 are undisclosed: 16 GiB assumed. Other models: 0
// (unknown); trace jobs ask for no memory, so it only sets shares' memory limits.
std::int64_t MemoryOf(std::string_view model) {
  static constexpr std::pair<std::string_view, std::int64_t> kMemory[] = {{"P100", 16280},
                                                                          {"T4", 15109},
                                                                          {"V100M16", 16160},
                                                                          {"V100M32", 32510},
                                                                          {"A10", 22731},
                                                                          {"G2", 16384},
                                                                          {"G3", 16384}};
  for (const auto& [name, mib] : kMemory) {
    if (model == name) {
      return mib;
    }
  }
  return 0;
}

Node MakeNode(const std::string& name,
              int gpus,
              const std::string& model,
              SharingMode sharing = SharingMode::kExclusive) {
  Node node;
  node.name = NodeId(name);
  node.state = NodeState::kUp;
  node.gpu_backend = "sim:" + std::to_string(gpus) + "x" + model;
  for (int i = 0; i < gpus; ++i) {
    Gpu gpu;
    gpu.index = i;
    gpu.uuid = GpuUuid("GPU-" + name + "-" + std::to_string(i));
    gpu.model = model;
    gpu.memory_mib = MemoryOf(model);
    gpu.sharing = sharing;
    node.gpus.push_back(std::move(gpu));
  }
  return node;
}

std::string NodeName(std::size_t index) {
  char name[16];
  std::snprintf(name, sizeof name, "n%05zu", index);
  return name;
}

std::optional<int> ParseCount(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

bool ValidModel(std::string_view model) {
  if (model.empty() || model.size() > 64) {
    return false;
  }
  for (const char c : model) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) {
      return false;
    }
  }
  return true;
}

// One NODESxGPUSxMODEL part, appended to `nodes`.
Status AddSpecPart(std::string_view part, std::vector<Node>& nodes) {
  const std::string quoted = "cluster: '" + std::string(part) + "'";
  SharingMode sharing = SharingMode::kExclusive;
  if (const std::size_t colon = part.find(':'); colon != std::string_view::npos) {
    const std::string_view mode = part.substr(colon + 1);
    Result<SharingMode> parsed = ParseSharingMode(mode, "cluster");
    if (!parsed.ok() || *parsed == SharingMode::kMig) {
      return InvalidArgument(quoted + ": '" + std::string(mode) +
                             "' is not a sharing mode here; use shared, mps or exclusive "
                             "(e.g. 4x8xA100:shared)");
    }
    sharing = *parsed;
    part = part.substr(0, colon);
  }
  const std::size_t x1 = part.find('x');
  const std::size_t x2 = x1 == std::string_view::npos ? x1 : part.find('x', x1 + 1);
  if (x2 == std::string_view::npos) {
    return InvalidArgument(quoted +
                           " is not NODESxGPUSxMODEL (e.g. 32x4xV100, or several "
                           "joined by commas: 16x8xA100,4x8xH100)");
  }
  const std::optional<int> count = ParseCount(part.substr(0, x1));
  const std::optional<int> gpus = ParseCount(part.substr(x1 + 1, x2 - x1 - 1));
  const std::string_view model = part.substr(x2 + 1);
  if (!count || *count < 1 || *count > kMaxNodes) {
    return InvalidArgument(quoted + ": the node count must be a whole number from 1 to " +
                           std::to_string(kMaxNodes));
  }
  if (!gpus || *gpus < 1 || *gpus > kMaxGpusPerNode) {
    return InvalidArgument(quoted + ": GPUs per node must be a whole number from 1 to " +
                           std::to_string(kMaxGpusPerNode));
  }
  if (!ValidModel(model)) {
    return InvalidArgument(quoted +
                           ": the GPU model must be 1 to 64 letters, digits, '-', '_' "
                           "or '.' (e.g. V100, A100-80GB)");
  }
  if (nodes.size() + static_cast<std::size_t>(*count) > kMaxNodes) {
    return InvalidArgument("cluster: more than " + std::to_string(kMaxNodes) + " nodes in all");
  }
  for (int i = 0; i < *count; ++i) {
    nodes.push_back(MakeNode(NodeName(nodes.size()), *gpus, std::string(model), sharing));
  }
  return OkStatus();
}

}  // namespace

Result<std::vector<Node>> ParseClusterSpec(std::string_view spec) {
  if (spec.empty()) {
    return InvalidArgument(
        "cluster: empty; give NODESxGPUSxMODEL (e.g. 32x4xV100) or a "
        "machine-list .csv file");
  }
  std::vector<Node> nodes;
  while (true) {
    const std::size_t comma = spec.find(',');
    GF_TRY(AddSpecPart(spec.substr(0, comma), nodes));
    if (comma == std::string_view::npos) {
      return nodes;
    }
    spec.remove_prefix(comma + 1);
  }
}

namespace {

// What a machine-list table names its columns and entries, and how its third column gives a
// GPU model (it may be empty).
struct MachineTable {
  std::string id_column;
  std::string gpus_column;
  std::string model_column;
  std::string entry;        // "machine id", "node name"
  std::string unique;       // "ids must be unique"
  std::string model_error;  // what a bad third column is: "is not a memory size like 12GB"
  std::string (*model_of)(std::string_view field);
};

// One node per row with GPUs (a row without is skipped): unique, non-empty ids, GPU counts
// from 0 to kMaxGpusPerNode, models from the third column. Errors name the line and field.
Result<std::vector<Node>> ReadMachineTable(std::string_view text,
                                           const std::string& source,
                                           const MachineTable& form) {
  constexpr std::size_t kId = 0;
  constexpr std::size_t kGpus = 1;
  constexpr std::size_t kModel = 2;
  GF_ASSIGN_OR_RETURN(
      CsvTable table,
      CsvTable::Open(
          text, source, {{form.id_column}, {form.gpus_column}, {form.model_column, false}}));
  std::vector<Node> nodes;
  std::set<std::string, std::less<>> seen;
  while (true) {
    GF_ASSIGN_OR_RETURN(const std::optional<int> line, table.Next());
    if (!line) {
      break;
    }
    const std::string_view id = table.Field(kId);
    const std::optional<int> gpus = ParseCount(table.Field(kGpus));
    if (id.empty()) {
      return table.FieldError(kId, "empty " + form.entry);
    }
    if (!seen.emplace(id).second) {
      return table.FieldError(kId,
                              form.entry + " '" + std::string(id) + "' repeats; " + form.unique);
    }
    if (!gpus || *gpus < 0 || *gpus > kMaxGpusPerNode) {
      return table.FieldError(kGpus,
                              "'" + std::string(table.Field(kGpus)) +
                                  "' is not a GPU count from 0 to " +
                                  std::to_string(kMaxGpusPerNode));
    }
    const std::string model = form.model_of(table.Field(kModel));
    if (!ValidModel(model)) {
      return table.FieldError(kModel,
                              "'" + std::string(table.Field(kModel)) + "' " + form.model_error);
    }
    if (*gpus > 0) {
      nodes.push_back(MakeNode(std::string(id), *gpus, model));
    }
  }
  if (nodes.empty()) {
    return InvalidArgument(source + ": no machine with GPUs");
  }
  return nodes;
}

}  // namespace

Result<std::vector<Node>> ParseMachineList(std::string_view text, const std::string& source) {
  // Philly's memory column ("12GB") names the model: GPUs of one size are alike for placement.
  return ReadMachineTable(text,
                          source,
                          MachineTable{.id_column = "machineId",
                                       .gpus_column = "number of GPUs",
                                       .model_column = "single GPU mem",
                                       .entry = "machine id",
                                       .unique = "ids must be unique",
                                       .model_error = "is not a memory size like 12GB",
                                       .model_of = [](std::string_view mem) {
                                         return mem.empty() ? std::string("GPU")
                                                            : "GPU-" + std::string(mem);
                                       }});
}

Result<std::vector<Node>> ParseNodeList(std::string_view text, const std::string& source) {
  return ReadMachineTable(
      text,
      source,
      MachineTable{.id_column = "sn",
                   .gpus_column = "gpu",
                   .model_column = "model",
                   .entry = "node name",
                   .unique = "names are unique",
                   .model_error = "is not a GPU model (letters, digits, '-', '_', '.')",
                   .model_of = [](std::string_view model) {
                     return model.empty() ? std::string("GPU") : std::string(model);
                   }});
}

Result<std::vector<Node>> ClusterFromFile(const std::vector<ClusterFileNode>& file) {
  std::vector<Node> nodes;
  std::set<std::string, std::less<>> names;
  for (const ClusterFileNode& spec : file) {
    if (!ValidModel(spec.model)) {
      return InvalidArgument(spec.where +
                             ": model: 1 to 64 letters, digits, '-', '_' or '.' (e.g. H100-80GB)");
    }
    // Each GPU's NVLink peers: the other GPUs of its group.
    std::vector<std::vector<int>> peers(static_cast<std::size_t>(spec.gpus));
    for (const std::vector<int>& group : spec.nvlink) {
      for (const int g : group) {
        if (g < 0 || g >= spec.gpus) {
          return InvalidArgument(spec.where + ": nvlink: GPU " + std::to_string(g) +
                                 " is not on the node; its GPUs are 0 to " +
                                 std::to_string(spec.gpus - 1));
        }
        if (!peers[static_cast<std::size_t>(g)].empty()) {
          return InvalidArgument(spec.where + ": nvlink: GPU " + std::to_string(g) +
                                 " is in two groups; put it in one");
        }
        for (const int other : group) {
          if (other != g) {
            peers[static_cast<std::size_t>(g)].push_back(other);
          }
        }
        std::sort(peers[static_cast<std::size_t>(g)].begin(),
                  peers[static_cast<std::size_t>(g)].end());
      }
    }
    for (const auto& [key, value] : spec.labels) {
      if (Status label = ValidateLabel(key, value, "labels"); !label.ok()) {
        return InvalidArgument(spec.where + ": " + label.error().message);
      }
    }
    for (int k = 0; k < spec.count; ++k) {
      const std::string name = spec.count > 1 ? spec.name + "-" + std::to_string(k) : spec.name;
      if (!names.insert(name).second) {
        return InvalidArgument(spec.where + ": node " + name + " is named twice; names are unique");
      }
      Node node = MakeNode(name, spec.gpus, spec.model);
      node.labels = spec.labels;
      for (Gpu& gpu : node.gpus) {
        gpu.nvlink_peers = peers[static_cast<std::size_t>(gpu.index)];
      }
      nodes.push_back(std::move(node));
    }
  }
  if (nodes.size() > kMaxNodes) {
    return InvalidArgument("cluster: more than " + std::to_string(kMaxNodes) + " nodes in all");
  }
  return nodes;
}

Result<std::vector<Node>> LoadCluster(const std::string& spec_or_path) {
  if (spec_or_path.ends_with(".toml")) {
    GF_ASSIGN_OR_RETURN(const std::vector<ClusterFileNode> file, LoadClusterFile(spec_or_path));
    return ClusterFromFile(file);
  }
  if (spec_or_path.ends_with(".csv")) {
    GF_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(spec_or_path, "cluster"));
    if (text.starts_with("sn,")) {
      return ParseNodeList(text, spec_or_path);  // the Alibaba openb node list
    }
    return ParseMachineList(text, spec_or_path);
  }
  return ParseClusterSpec(spec_or_path);
}

void ShareEveryGpu(std::vector<Node>& nodes, SharingMode sharing) {
  for (Node& node : nodes) {
    for (Gpu& gpu : node.gpus) {
      gpu.sharing = sharing;
    }
  }
}

int TotalGpus(const std::vector<Node>& nodes) {
  int total = 0;
  for (const Node& node : nodes) {
    total += static_cast<int>(node.gpus.size());
  }
  return total;
}

}  // namespace gf::sim
