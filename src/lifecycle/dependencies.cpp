#include "lifecycle/dependencies.h"

#include <algorithm>
#include <deque>
#include <set>
#include <utility>

namespace gf {

bool Satisfies(DependencyKind kind, const JobOutcome& outcome) {
  if (kind == DependencyKind::kAny) {
    return true;
  }
  return outcome.state == JobState::kCompleted && outcome.exit_code.value_or(0) == 0;
}

std::string BrokenCause(JobId job, const JobOutcome& outcome) {
  return BrokenCause("job " + std::to_string(job.value()), outcome);
}

std::string BrokenCause(const std::string& name, const JobOutcome& outcome) {
  const std::string subject = "dependency " + name;
  switch (outcome.state) {
    case JobState::kCancelled:
      return subject + " was cancelled";
    case JobState::kTimeout:
      return subject + " timed out";
    case JobState::kFailed:
    case JobState::kCompleted:  // completed with a non-zero exit cannot happen, but say so
      return subject + " failed" +
             (outcome.exit_code ? " (exit " + std::to_string(*outcome.exit_code) + ")" : "");
    default:
      return subject + " ended " + std::string(ToString(outcome.state));
  }
}

PendingReason WaitingReason(const Dependency& dependency) {
  return WaitingReason(dependency.kind, "job " + std::to_string(dependency.job.value()));
}

PendingReason WaitingReason(DependencyKind kind, const std::string& name) {
  return PendingReason::Of(
      PendingCode::kDependency,
      "waiting for " + name +
          (kind == DependencyKind::kOk ? " to complete successfully" : " to end"));
}

Status ValidateDependencies(const std::vector<Dependency>& after) {
  if (after.size() > kMaxDependencies) {
    return InvalidArgument("after: " + std::to_string(after.size()) + " jobs; at most " +
                           std::to_string(kMaxDependencies) +
                           " may be given (wait for one job that waits for the others)");
  }
  std::set<JobId> seen;
  for (const Dependency& d : after) {
    if (!seen.insert(d.job).second) {
      return InvalidArgument("after: job " + std::to_string(d.job.value()) +
                             " is given twice; give each job once (JOB or JOB:ok)");
    }
  }
  return OkStatus();
}

void DependencyGraph::Wait(JobId job, const std::vector<Dependency>& unmet) {
  unmet_.erase(job);
  if (unmet.empty()) {
    return;
  }
  unmet_[job] = unmet;
  for (const Dependency& d : unmet) {
    waiters_[d.job].push_back(job);
  }
}

bool DependencyGraph::Waiting(JobId job) const {
  return unmet_.contains(job);
}

std::optional<Dependency> DependencyGraph::FirstUnmet(JobId job) const {
  auto it = unmet_.find(job);
  if (it == unmet_.end()) {
    return std::nullopt;
  }
  return it->second.front();
}

std::vector<DependencyGraph::Broken> DependencyGraph::OnEnded(JobId job,
                                                              const JobOutcome& outcome) {
  std::vector<Broken> broken;
  unmet_.erase(job);
  Resolve(job, outcome, broken);
  // Each broken job counts as cancelled for the jobs that wait for it (the cascade). The list
  // grows while it is walked: index, not iterator.
  for (std::size_t i = 0; i < broken.size(); ++i) {
    Resolve(broken[i].job,
            JobOutcome{.state = JobState::kCancelled, .exit_code = std::nullopt},
            broken);
  }
  return broken;
}

void DependencyGraph::Resolve(JobId target,
                              const JobOutcome& outcome,
                              std::vector<Broken>& broken) {
  auto node = waiters_.find(target);
  if (node == waiters_.end()) {
    return;
  }
  const std::vector<JobId> waiters = std::move(node->second);
  waiters_.erase(node);
  for (JobId waiter : waiters) {
    auto it = unmet_.find(waiter);
    if (it == unmet_.end()) {
      continue;  // no longer waits: ended, or already broken by another dependency
    }
    std::vector<Dependency>& deps = it->second;
    auto on_target = std::find_if(
        deps.begin(), deps.end(), [&](const Dependency& d) { return d.job == target; });
    if (on_target == deps.end()) {
      continue;
    }
    if (!Satisfies(on_target->kind, outcome)) {
      unmet_.erase(it);
      broken.push_back(Broken{.job = waiter,
                              .cause = name_of_ ? BrokenCause(name_of_(target), outcome)
                                                : BrokenCause(target, outcome)});
      continue;
    }
    deps.erase(on_target);
    if (deps.empty()) {
      unmet_.erase(it);
    }
  }
}

}  // namespace gf
