#include "scheduler/placement/whole_gpu_fit.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "core/check.h"

namespace gf {
namespace {

bool EqualsIgnoringCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool Givable(const CandidateGpu& gpu,
             const JobRequest& request,
             const std::set<GpuUuid>& off_limits) {
  return gpu.free && MatchesType(request, gpu.model) && !off_limits.contains(gpu.uuid);
}

// "label" or "labels", as many as `labels` has.
std::string LabelWord(const std::map<std::string, std::string>& labels) {
  return labels.size() == 1 ? "label" : "labels";
}

int CountFree(const CandidateNode& node) {
  return static_cast<int>(
      std::count_if(node.usable.begin(), node.usable.end(), [](const auto& g) { return g.free; }));
}

// Matching GPUs on one node: usable ones and, of those, free ones.
struct MatchCount {
  int usable = 0;
  int free = 0;
};

MatchCount CountMatching(const CandidateNode& node, const JobRequest& request) {
  MatchCount count;
  if (!HasLabels(node.labels, request.node_labels)) {
    return count;
  }
  for (const CandidateGpu& gpu : node.usable) {
    if (MatchesType(request, gpu.model)) {
      ++count.usable;
      count.free += gpu.free ? 1 : 0;
    }
  }
  return count;
}

}  // namespace

std::string NotUpNodes(const ClusterSnapshot& cluster) {
  constexpr std::size_t kNamed = 3;  // a reason stays one line on a cluster mostly drained
  std::vector<const Node*> not_up;
  for (const NodeSnapshot& snapshot : cluster.nodes) {
    if (snapshot.node.state != NodeState::kUp) {
      not_up.push_back(&snapshot.node);
    }
  }
  std::sort(
      not_up.begin(), not_up.end(), [](const Node* a, const Node* b) { return a->name < b->name; });
  std::string out;
  for (std::size_t i = 0; i < std::min(not_up.size(), kNamed); ++i) {
    const Node& node = *not_up[i];
    out += (out.empty() ? "node " : "; node ") + node.name.value() + " is " +
           std::string(ToString(node.state)) +
           (node.state_reason.empty() ? "" : ": " + node.state_reason);
  }
  if (not_up.size() > kNamed) {
    out += "; " + std::to_string(not_up.size() - kNamed) + " more not up";
  }
  return out;
}

Capacity BuildCapacity(const ClusterSnapshot& cluster, NodeScope scope) {
  Capacity capacity;
  if (scope == NodeScope::kUp) {
    capacity.not_up = NotUpNodes(cluster);
  }
  for (const NodeSnapshot& snapshot : cluster.nodes) {
    const NodeState state = snapshot.node.state;
    if (scope == NodeScope::kUp ? state != NodeState::kUp : state == NodeState::kDown) {
      continue;
    }
    CandidateNode node{.name = snapshot.node.name, .usable = {}, .labels = snapshot.node.labels};
    for (const Gpu& gpu : snapshot.node.gpus) {
      if (!TakesWork(gpu)) {
        continue;
      }
      node.usable.push_back(CandidateGpu{.index = gpu.index,
                                         .uuid = gpu.uuid,
                                         .model = gpu.model,
                                         .free = !snapshot.allocated.contains(gpu.uuid),
                                         .memory_mib = gpu.memory_mib});
    }
    std::stable_sort(node.usable.begin(), node.usable.end(), [](const auto& a, const auto& b) {
      return a.index < b.index;
    });
    capacity.nodes.push_back(std::move(node));
  }
  std::stable_sort(capacity.nodes.begin(), capacity.nodes.end(), [](const auto& a, const auto& b) {
    return a.name < b.name;
  });
  return capacity;
}

bool HasLabels(const std::map<std::string, std::string>& labels,
               const std::map<std::string, std::string>& wanted) {
  return std::all_of(wanted.begin(), wanted.end(), [&](const auto& want) {
    const auto it = labels.find(want.first);
    return it != labels.end() && it->second == want.second;
  });
}

Status CheckNodeLabels(const Capacity& capacity, const JobRequest& request) {
  std::set<std::string> labels;
  for (const CandidateNode& node : capacity.nodes) {
    if (HasLabels(node.labels, request.node_labels)) {
      return OkStatus();
    }
    CollectLabels(node.labels, labels);
  }
  return InvalidArgument(
      "constraint: no node has " + LabelWord(request.node_labels) + " " +
      FormatLabels(request.node_labels) + "; " +
      (labels.empty() ? std::string("the nodes of this cluster have no labels")
                      : "labels in this cluster: " + JoinLabels(labels)) +
      " (a node gets labels from `gpufleet up --label KEY=VALUE` or [up] labels)");
}

std::string FormatLabels(const std::map<std::string, std::string>& labels) {
  std::string text;
  for (const auto& [key, value] : labels) {
    text.append(text.empty() ? "" : ", ").append(key).append("=").append(value);
  }
  return text;
}

void CollectLabels(const std::map<std::string, std::string>& labels, std::set<std::string>& into) {
  for (const auto& [key, value] : labels) {
    into.insert(std::string(key).append("=").append(value));
  }
}

std::string JoinLabels(const std::set<std::string>& labels) {
  std::string text;
  for (const std::string& label : labels) {
    text += (text.empty() ? "" : ", ") + label;
  }
  return text;
}

bool MatchesType(const JobRequest& request, const std::string& model) {
  return !request.gpu_type.has_value() || request.gpu_type->empty() ||
         EqualsIgnoringCase(*request.gpu_type, model);
}

std::optional<Allocation> FindBestFit(const Capacity& capacity,
                                      const JobRequest& request,
                                      const std::set<GpuUuid>& off_limits) {
  GF_CHECK(request.gpus >= 0);
  const CandidateNode* best = nullptr;
  int best_left = std::numeric_limits<int>::max();
  for (const CandidateNode& node : capacity.nodes) {
    if (!HasLabels(node.labels, request.node_labels)) {
      continue;
    }
    const auto givable = std::count_if(node.usable.begin(), node.usable.end(), [&](const auto& g) {
      return Givable(g, request, off_limits);
    });
    if (givable < request.gpus) {
      continue;
    }
    // Nodes are sorted by name and only a strictly better node replaces the best one, so
    // ties go to the first name.
    const int left = CountFree(node) - request.gpus;
    if (left < best_left) {
      best = &node;
      best_left = left;
    }
  }
  if (best == nullptr) {
    return std::nullopt;
  }
  Allocation allocation{.node = best->name, .gpus = {}};
  for (const CandidateGpu& gpu : best->usable) {
    if (static_cast<int>(allocation.gpus.size()) == request.gpus) {
      break;
    }
    if (Givable(gpu, request, off_limits)) {
      allocation.gpus.push_back(gpu.uuid);
    }
  }
  return allocation;
}

void Reserve(Capacity& capacity, const Allocation& allocation) {
  int reserved = 0;
  for (CandidateNode& node : capacity.nodes) {
    if (node.name != allocation.node) {
      continue;
    }
    for (CandidateGpu& gpu : node.usable) {
      if (std::find(allocation.gpus.begin(), allocation.gpus.end(), gpu.uuid) !=
          allocation.gpus.end()) {
        GF_CHECK(gpu.free);
        gpu.free = false;
        ++reserved;
      }
    }
  }
  GF_CHECK(reserved == static_cast<int>(allocation.gpus.size()));
}

std::set<GpuUuid> CouldEverUse(const Capacity& capacity, const JobRequest& request) {
  GF_CHECK(request.gpus >= 1);
  std::set<GpuUuid> gpus;
  for (const CandidateNode& node : capacity.nodes) {
    if (CountMatching(node, request).usable < request.gpus) {
      continue;
    }
    for (const CandidateGpu& gpu : node.usable) {
      if (MatchesType(request, gpu.model)) {
        gpus.insert(gpu.uuid);
      }
    }
  }
  return gpus;
}

int LargestUsable(const Capacity& capacity, const JobRequest& request) {
  int largest = 0;
  for (const CandidateNode& node : capacity.nodes) {
    largest = std::max(largest, CountMatching(node, request).usable);
  }
  return largest;
}

int NodesWithUsable(const Capacity& capacity, const JobRequest& request) {
  return static_cast<int>(
      std::count_if(capacity.nodes.begin(), capacity.nodes.end(), [&](const CandidateNode& node) {
        return HasLabels(node.labels, request.node_labels) &&
               CountMatching(node, request).usable >= request.gpus;
      }));
}

std::string UsableModels(const Capacity& capacity) {
  std::set<std::string> models;
  for (const CandidateNode& node : capacity.nodes) {
    for (const CandidateGpu& gpu : node.usable) {
      models.insert(gpu.model);
    }
  }
  std::string list;
  for (const std::string& model : models) {
    list += (list.empty() ? "" : ", ") + model;
  }
  return list;
}

PendingReason ExplainNoFit(const Capacity& capacity, const JobRequest& request) {
  NoFitFacts facts;
  facts.any_node = !capacity.nodes.empty();
  facts.not_up = capacity.not_up;
  facts.most_usable = LargestUsable(capacity, request);
  facts.models = UsableModels(capacity);
  if (!request.node_labels.empty()) {
    std::set<std::string> labels;
    facts.any_labelled_node = false;
    for (const CandidateNode& node : capacity.nodes) {
      facts.any_labelled_node =
          facts.any_labelled_node || HasLabels(node.labels, request.node_labels);
      CollectLabels(node.labels, labels);
    }
    facts.labels = JoinLabels(labels);
  }
  bool first = true;
  for (const CandidateNode& node : capacity.nodes) {
    if (!HasLabels(node.labels, request.node_labels)) {
      continue;
    }
    const MatchCount count = CountMatching(node, request);
    if (first || count.free > facts.most_free) {
      first = false;
      facts.most_free = count.free;
      facts.most_free_node = node.name.value();
      facts.most_free_node_usable = count.usable;
    }
  }
  return DescribeNoFit(request, facts);
}

PendingReason DescribeNoFit(const JobRequest& request, const NoFitFacts& facts) {
  if (!facts.any_node) {
    return PendingReason::Of(
        PendingCode::kNoNodeUp,
        facts.not_up.empty() ? "no node is up" : "no node takes new work: " + facts.not_up);
  }
  const std::string needs = "needs " + DescribeRequest(request);
  const std::string on_one_node = request.gpus > 1 ? " on one node" : "";
  if (!facts.any_labelled_node) {
    return PendingReason::Of(
        PendingCode::kNoNodeWithLabels,
        needs + "; no up node has " + LabelWord(request.node_labels) + " " +
            FormatLabels(request.node_labels) +
            (facts.labels.empty() ? " (up nodes have no labels)"
                                  : " (labels of the up nodes: " + facts.labels + ")"));
  }
  if (facts.most_usable == 0) {
    if (request.gpu_type.has_value() && !request.gpu_type->empty()) {
      return PendingReason::Of(PendingCode::kNoGpuOfType,
                               needs + "; no up node has one" +
                                   (facts.models.empty() ? "" : " (up: " + facts.models + ")"));
    }
    return PendingReason::Of(PendingCode::kNoUsableGpu, needs + "; no up node has a usable GPU");
  }
  if (facts.most_usable < request.gpus) {
    return PendingReason::Of(PendingCode::kTooLarge,
                             needs + on_one_node + "; the largest up node has " +
                                 std::to_string(facts.most_usable) + " usable");
  }
  if (facts.most_free == 0) {
    return PendingReason::Of(PendingCode::kNoFreeGpus, needs + "; 0 free");
  }
  return PendingReason::Of(PendingCode::kNoFreeGpus,
                           needs + on_one_node + "; at most " + std::to_string(facts.most_free) +
                               " free on a node (" + facts.most_free_node + ": " +
                               std::to_string(facts.most_free) + " of " +
                               std::to_string(facts.most_free_node_usable) + " free)");
}

std::string DescribeRequest(const JobRequest& request) {
  const std::string nodes =
      request.nodes > 1 ? " on each of " + std::to_string(request.nodes) + " nodes" : "";
  const std::string host = DescribeHostRequest(request);
  const std::string with_host = host.empty() ? "" : ", " + host;
  if (request.gpus == 0) {
    return "no GPU" + with_host + nodes;
  }
  std::string text = std::to_string(request.gpus) + (request.gpus == 1 ? " GPU" : " GPUs");
  if (request.gpu_type.has_value() && !request.gpu_type->empty()) {
    text += " of type " + *request.gpu_type;
  }
  if (!request.node_labels.empty()) {
    text += " with " + LabelWord(request.node_labels) + " " + FormatLabels(request.node_labels);
  }
  return text + with_host + nodes;
}

}  // namespace gf
