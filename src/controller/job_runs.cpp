// The agents' reports and a job's run (controller.h), on the state thread: a job started,
// exited, is stopped (cancel, preemption, time limit) and requeued or ended; a node's hello,
// heartbeat and GPU samples; a node lost with its jobs. Split from controller.cpp by topic.
#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "controller/controller.h"
#include "core/duration.h"
#include "lifecycle/admission.h"

namespace gf {

// ---- AgentReports ------------------------------------------------------------------------

void Controller::OnAgentHello(AgentHello hello) {
  // Before any sample of this agent is ingested (samples bypass the state thread).
  telemetry_->SetInventory(hello.node);
  Post([this, hello = std::move(hello)]() mutable { ApplyHello(std::move(hello)); });
}

void Controller::OnJobStarted(JobId id, std::int64_t pid, Time start_time) {
  Post([this, id, pid, start_time] {
    auto it = jobs_.Active().find(id);
    if (it == jobs_.Active().end() || it->second.state != JobState::kStarting) {
      return;
    }
    Job& job = it->second;
    jobs_.Started(job, pid, start_time, "agent:" + job.allocation->node.value());
    // Its start time is known only now: waiting jobs may preempt it once it is old enough.
    if (options_.policy.preemption.enabled) {
      const Time old_enough = start_time + options_.policy.preemption.min_run_time;
      if (old_enough > clock_.Now()) {
        scheduling_.ArmAt(old_enough);
      }
    }
  });
}

void Controller::OnJobExited(JobExitReport report) {
  Post([this, report = std::move(report)] {
    auto it = jobs_.Active().find(report.job);
    const bool runs_there =
        it != jobs_.Active().end() && HoldsGpus(it->second) &&
        (report.node.value().empty() || it->second.allocation->node == report.node);
    if (runs_there) {
      FinishJob(it->second, report);
      return;
    }
    // Already recorded (re-reported after a restart), or the exit of an orphan copy on a node
    // the job no longer runs on: nothing to do but let the reporting agent forget it.
    if (it != jobs_.Active().end() && report.node.value().empty()) {
      return;  // the job's own agent; its exit will be acknowledged when the job ends
    }
    for (const auto& [name, entry] : nodes_.Entries()) {
      if (entry.agent != nullptr && (report.node.value().empty() || name == report.node)) {
        entry.agent->AcknowledgeExit(report.job);
      }
    }
  });
}

void Controller::OnAgentHeartbeat(const NodeId& node) {
  Post([this, node] { nodes_.Heard(node, options_.liveness_clock()); });
}

// A remote node whose agent has not reported for node_timeout is down (NodeRegistry::
// CheckLiveness): its jobs' processes may be gone with it, so they are requeued (NODE_FAIL →
// PENDING) and its GPUs take no work until its agent says hello again.
void Controller::CheckNodeLiveness() {
  for (NodeRegistry::NodeDown& down :
       nodes_.CheckLiveness(options_.node_timeout, options_.liveness_clock())) {
    const NodeId name = down.node.name;
    const std::string& cause = down.cause;
    out_.batch.nodes.push_back(std::move(down.node));
    if (down.agent != nullptr) {
      down.agent->EndSession();  // a partitioned agent's next report gets "say hello again"
    }
    jobs_.Record(std::nullopt, "node", "controller", cause);
    spdlog::warn("controller: {}", cause);
    for (auto& [id, job] : jobs_.Active()) {
      if (HoldsGpus(job) && job.allocation->node == name) {
        jobs_.Lose(job, cause);
      }
    }
    scheduling_.NeedFull();
  }
}

void Controller::OnSamples(NodeId node, std::vector<GpuSample> samples) {
  // Telemetry is thread-safe: samples are taken here, on the agent's thread, and only what
  // the state must record (health changes, conditions, finished minutes) becomes a command.
  // Only a sample whose MIG devices differ from the GPU's previous sample (a layout applied, MIG
  // turned on) or that carries a layout's refusal goes to the state thread.
  std::vector<GpuSample> mig;
  const bool any_mig =
      std::any_of(samples.begin(), samples.end(), [](const GpuSample& s) { return s.mig_enabled; });
  if (any_mig || mig_seen_any_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(mig_seen_mu_);
    for (const GpuSample& sample : samples) {
      if (!sample.mig_enabled && !mig_seen_.contains(sample.uuid)) {
        continue;  // the usual GPU: never in MIG mode
      }
      mig_seen_any_.store(true, std::memory_order_relaxed);
      std::vector<GpuUuid> devices;
      for (const MigSample& device : sample.mig) {
        devices.push_back(device.instance.uuid);
      }
      auto& seen = mig_seen_[sample.uuid];
      if (seen != std::make_pair(sample.mig_enabled, devices) || !sample.mig_layout_error.empty()) {
        seen = {sample.mig_enabled, std::move(devices)};
        mig.push_back(sample);
      }
    }
  }
  IngestResult result = telemetry_->Ingest(node, std::move(samples));
  if (result.health.empty() && result.conditions.empty() && result.minutes.empty() && mig.empty()) {
    return;
  }
  Post([this, node = std::move(node), result = std::move(result), mig = std::move(mig)]() mutable {
    ApplyIngest(node, std::move(result));
    if (!mig.empty()) {
      gpus_.ApplyMigSamples(node, mig);
    }
  });
}

void Controller::ApplyIngest(const NodeId& node, IngestResult result) {
  gpus_.ApplyHealth(node, result.health);
  gpus_.ApplyConditions(node, result.conditions);
  for (GpuMinute& minute : result.minutes) {
    out_.batch.gpu_minutes.push_back(std::move(minute));
  }
}

void Controller::AssignGpus(const Job& job) {
  if (!job.allocation) {
    return;
  }
  // The idle reaper's threshold travels with the assignment: Telemetry judges each sample.
  const std::optional<IdleReaping> rule = IdleReapingFor(options_.policy, job.spec);
  const int idle_util_below = rule ? rule->util_below_pct : kDefaultIdleUtilBelowPct;
  for (const GpuUuid& uuid : job.allocation->gpus) {
    // The team as the store's usage records and quotas key it ("" = no team), so that GPU
    // minutes and runs add up per team in reports; /metrics labels "" as "default".
    telemetry_->Assign(uuid,
                       GpuAssignment{.job = job.id,
                                     .user = job.owner.user,
                                     .team = job.spec.team,
                                     .idle_util_below_pct = idle_util_below,
                                     .since = clock_.Now(),
                                     .share_milli = job.allocation->gpu_milli,
                                     .memory_limit_mib = job.allocation->gpu_memory_mib});
  }
}

void Controller::ReleaseGpus(Job& job) {
  const std::optional<JobUsage> usage = telemetry_->Usage(job.id);
  if (usage) {
    // A requeued job already carries the usage of its earlier runs.
    job.usage = job.usage ? CombineUsage(*job.usage, *usage) : *usage;
  }
  if (job.allocation && job.start_time) {  // else it never started: no GPU-time to account
    out_.batch.usage.push_back(
        usage_.RunEnded(job, usage ? usage->energy_mj : 0, GpuModels(job), clock_.Now()));
  }
  if (job.allocation) {
    for (const GpuUuid& uuid : job.allocation->gpus) {
      telemetry_->Unassign(uuid, job.id);
    }
  }
  telemetry_->ForgetJob(job.id);
}

void Controller::FinishJob(Job& job, const JobExitReport& report) {
  const std::string actor =
      job.allocation ? "agent:" + job.allocation->node.value() : std::string("system");
  NodeAgent* agent = nodes_.AgentFor(job);  // before a requeue clears the allocation
  if (!report.leftover_pids.empty()) {
    gpus_.HoldForLeftovers(job, report);
  }
  jobs_.Exited(job, report.exit_code, report.cause, report.end_time, actor);
  if (agent != nullptr) {
    JobId id = job.id;
    out_.After([agent, id] { agent->AcknowledgeExit(id); });
  }
}

void Controller::ApplyHello(AgentHello hello) {
  const NodeId name = hello.node.name;
  // A node that was down is up again; an admin's drain outlives the agent's reconnects.
  const NodeRegistry::HelloMerged merged =
      nodes_.MergeHello(std::move(hello.node), clock_.Now(), options_.liveness_clock());
  const NodeEntry& entry = nodes_.At(name);
  // OnAgentHello gave telemetry the agent's view; the modes are the controller's.
  telemetry_->SetInventory(entry.node);
  SetNodeState(name);  // draining/drained again if an admin's drain holds
  out_.batch.nodes.push_back(entry.node);
  if (merged.changed) {
    jobs_.Record(std::nullopt,
                 "node",
                 "agent:" + name.value(),
                 "node " + name.value() + (merged.was_down ? " back up" : " up") + " with " +
                     std::to_string(entry.node.gpus.size()) + " GPUs (" + entry.node.gpu_backend +
                     ")");
  }
  std::set<JobId> running(hello.running.begin(), hello.running.end());
  std::map<JobId, JobExitReport> ended;
  for (auto& e : hello.ended) {
    ended.emplace(e.job, e);
  }
  for (auto& [id, job] : jobs_.Active()) {
    if (!job.allocation || job.allocation->node != name ||
        (job.state != JobState::kStarting && job.state != JobState::kRunning)) {
      continue;
    }
    if (running.contains(id)) {
      if (job.state == JobState::kStarting) {
        job.start_time = clock_.Now();
        jobs_.Transition(
            job, JobState::kRunning, "re-attached after restart", "agent:" + name.value());
      } else {
        jobs_.Record(id, "reattach", "agent:" + name.value(), "re-attached after restart");
      }
    } else if (auto e = ended.find(id); e != ended.end()) {
      FinishJob(job, e->second);
    } else if (job.state == JobState::kStarting) {
      // Its launch never reached the agent (a lost stream, or a crash before the launch):
      // send it again. A launch is a no-op for a job the agent already runs.
      out_.After([agent = entry.agent, launch = LaunchOf(job)] { agent->Launch(launch); });
    } else {
      jobs_.Lose(job,
                 "its supervisor was not found on " + name.value() + " when its agent came back");
    }
  }
  // Kills still wanted (a cancel, a time limit, a preemption) whose command may have been lost
  // with the agent's old connection. A kill of a job the agent no longer has is a no-op.
  for (const auto& [id, termination] : jobs_.Stops().Intents()) {
    const Job& job = jobs_.At(id);
    if (running.contains(id) && job.allocation && job.allocation->node == name) {
      out_.After([agent = entry.agent,
                  id = id,
                  grace = options_.kill_grace,
                  cause = termination.cause,
                  signal = kSigTerm] { agent->Kill(id, grace, cause, signal); });
    }
  }
  // Processes the agent holds for jobs that do not run here as far as this controller knows:
  // unknown, pending again (requeued after the node failed), or running elsewhere since. They
  // must not run twice.
  for (JobId id : running) {
    auto it = jobs_.Active().find(id);
    const bool ours =
        it != jobs_.Active().end() && HoldsGpus(it->second) && it->second.allocation->node == name;
    if (!ours) {
      NodeAgent* agent = entry.agent;
      out_.After([agent, id, grace = options_.kill_grace] {
        agent->Kill(id,
                    grace,
                    "orphan: the controller requeued or ended this job while its node was away",
                    kSigTerm);
      });
    }
  }
  for (auto& [id, e] : ended) {
    if (!jobs_.Active().contains(id) && entry.agent != nullptr) {
      out_.After([agent = entry.agent, id = id] { agent->AcknowledgeExit(id); });
    }
  }
  scheduling_.NeedFull();
}

}  // namespace gf
