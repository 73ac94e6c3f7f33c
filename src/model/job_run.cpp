#include "model/job_run.h"

#include <charconv>

namespace gf {

namespace {

constexpr std::string_view kArrow = " -> ";
constexpr std::string_view kStartingOn = "starting on ";
constexpr std::string_view kGpus = " GPUs ";

// "0,1" → {0, 1}; stops at the first character that is neither a digit nor a comma.
std::vector<int> ParseIndexes(std::string_view text) {
  std::vector<int> out;
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  while (p < end) {
    int value = 0;
    const auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc()) {
      break;
    }
    out.push_back(value);
    p = next;
    if (p == end || *p != ',') {
      break;
    }
    ++p;
  }
  return out;
}

std::optional<GpuUuid> UuidAt(const std::vector<Node>& nodes, const NodeId& node, int index) {
  for (const Node& n : nodes) {
    if (n.name != node) {
      continue;
    }
    for (const Gpu& gpu : n.gpus) {
      if (gpu.index == index) {
        return gpu.uuid;
      }
    }
  }
  return std::nullopt;
}

// Where "starting on NODE GPUs 0,1 ..." put the run: its node and GPU indexes.
void ReadPlacement(std::string_view cause, const std::vector<Node>& nodes, JobRun& run) {
  if (cause.substr(0, kStartingOn.size()) != kStartingOn) {
    return;
  }
  cause.remove_prefix(kStartingOn.size());
  const std::size_t gpus = cause.find(kGpus);
  if (gpus == std::string_view::npos) {
    return;
  }
  run.node = NodeId(std::string(cause.substr(0, gpus)));
  for (const int index : ParseIndexes(cause.substr(gpus + kGpus.size()))) {
    run.gpus.push_back(RunGpu{.index = index, .uuid = UuidAt(nodes, *run.node, index)});
  }
}

// The latest run as the job holds it: the agent's times and the GPUs it was given, in order.
void TakeJobFields(const Job& job, const std::vector<Node>& nodes, JobRun& run) {
  run.start = job.start_time;
  if (job.end_time) {
    run.end = job.end_time;
  }
  if (!job.allocation) {
    return;
  }
  run.node = job.allocation->node;
  run.gpus.clear();
  for (const GpuUuid& uuid : job.allocation->gpus) {
    RunGpu gpu{.index = -1, .uuid = uuid};
    for (const Node& n : nodes) {
      for (const Gpu& g : n.gpus) {
        if (n.name == job.allocation->node && g.uuid == uuid) {
          gpu.index = g.index;
        }
      }
    }
    run.gpus.push_back(std::move(gpu));
  }
}

}  // namespace

std::string StateChangeText(std::string_view from, std::string_view to, std::string_view cause) {
  std::string out(from);
  out += kArrow;
  out += to;
  out += ": ";
  out += cause;
  return out;
}

std::optional<StateChange> ParseStateChange(std::string_view message) {
  const std::size_t arrow = message.find(kArrow);
  if (arrow == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view rest = message.substr(arrow + kArrow.size());
  const std::size_t colon = rest.find(": ");
  return StateChange{
      .from = std::string(message.substr(0, arrow)),
      .to = std::string(rest.substr(0, colon)),
      .cause = colon == std::string_view::npos ? "" : std::string(rest.substr(colon + 2))};
}

std::string StartingText(std::string_view node, const std::vector<int>& gpu_indexes) {
  std::string out(kStartingOn);
  out += node;
  out += kGpus;
  for (std::size_t i = 0; i < gpu_indexes.size(); ++i) {
    out += (i == 0 ? "" : ",") + std::to_string(gpu_indexes[i]);
  }
  return gpu_indexes.empty() ? out + "none" : out;
}

std::vector<JobRun> JobRuns(const Job& job,
                            const std::vector<Event>& events,
                            const std::vector<Node>& nodes) {
  const std::string_view starting = ToString(JobState::kStarting);
  const std::string_view running = ToString(JobState::kRunning);
  std::vector<JobRun> runs;
  bool open = false;  // the last run has not ended
  for (const Event& event : events) {
    if (event.kind != "state") {
      continue;
    }
    const std::optional<StateChange> change = ParseStateChange(event.message);
    if (!change) {
      continue;
    }
    if (change->to == starting) {
      JobRun run{.number = static_cast<int>(runs.size()) + 1, .placed = event.time};
      ReadPlacement(change->cause, nodes, run);
      runs.push_back(std::move(run));
      open = true;
    } else if (open && change->to == running) {
      runs.back().start = event.time;
    } else if (open && (change->from == starting || change->from == running)) {
      JobRun& run = runs.back();
      run.end = event.time;
      if (auto state = ParseJobState(change->to); state.ok()) {
        run.end_state = *state;
      }
      run.end_cause = change->cause;
      open = false;
    }
  }
  if (runs.empty() && job.start_time) {
    runs.push_back(JobRun{.placed = *job.start_time});
    if (IsTerminal(job.state)) {
      runs.back().end_state = job.state;
      runs.back().end_cause = job.reason;
    }
  }
  // The job's own fields describe its latest run while it holds that run's allocation (a
  // requeued job loses it, and its start and end times, as it goes back to the queue).
  if (!runs.empty() && job.state != JobState::kPending && job.allocation) {
    TakeJobFields(job, nodes, runs.back());
  }
  return runs;
}

}  // namespace gf
