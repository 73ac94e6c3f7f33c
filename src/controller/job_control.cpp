// JobDesk's job control (job_desk.h), as Slurm's scontrol hold/release/requeue/update and
// scancel's filters (issue #24): on the state thread, each job changed through the job book and
// the next pass told through the scheduling stage.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "controller/job_desk.h"
#include "controller/submit_team.h"
#include "core/duration.h"
#include "lifecycle/admission.h"
#include "lifecycle/gang_rules.h"
#include "model/team.h"

namespace gf {
namespace {

std::string StateOf(const Job& job) {
  return std::string(ToString(job.state));
}

bool Matches(const JobSelector& selector, const Job& job) {
  // RUNNING takes STARTING too: a job that just got its GPUs is running to its owner.
  const bool state = !selector.state || job.state == *selector.state ||
                     (*selector.state == JobState::kRunning && job.state == JobState::kStarting);
  return state && (!selector.user || job.owner.user == *selector.user) &&
         (!selector.name || job.spec.name == *selector.name) &&
         (!selector.team || job.spec.team == *selector.team);
}

std::string LimitText(const std::optional<std::chrono::seconds>& limit) {
  return limit ? FormatDuration(*limit) : "none";
}

// "gpus 1 → 2, time limit 1h → 2h": what an update changes, for its event; empty when nothing.
std::string Changes(const JobSpec& from, const JobSpec& to) {
  std::vector<std::string> parts;
  const auto change = [&](const std::string& what, const std::string& a, const std::string& b) {
    if (a != b) {
      parts.push_back(what + " " + a + " → " + b);
    }
  };
  change("gpus", std::to_string(from.request.gpus), std::to_string(to.request.gpus));
  change("cpus", std::to_string(from.request.cpus), std::to_string(to.request.cpus));
  change("mem",
         from.request.memory_mib > 0 ? FormatMib(from.request.memory_mib) : "none",
         to.request.memory_mib > 0 ? FormatMib(to.request.memory_mib) : "none");
  change("time limit", LimitText(from.time_limit), LimitText(to.time_limit));
  change("class", from.priority.name, to.priority.name);
  change("team", TeamLabel(from.team), TeamLabel(to.team));
  change("name", "'" + from.name + "'", "'" + to.name + "'");
  std::string out;
  for (const std::string& part : parts) {
    out += (out.empty() ? "" : ", ") + part;
  }
  return out;
}

}  // namespace

std::vector<Job*> JobDesk::WholeJob(const Job& found) {
  if (found.spec.gang.has_value()) {
    return GangMembers(p_.jobs.Active(), *found.spec.gang);
  }
  return {&p_.jobs.At(found.id)};
}

Result<Job> JobDesk::FindPending(const Caller& caller,
                                 JobId id,
                                 Action action,
                                 const std::string& why) {
  GF_ASSIGN_OR_RETURN(Job found, FindVisible(caller, id, action));
  if (found.state != JobState::kPending) {
    return FailedPrecondition(std::string(ToString(action)) + ": job " +
                              std::to_string(id.value()) + " is " + StateOf(found) +
                              ", not PENDING; " + why);
  }
  return found;
}

Result<Job> JobDesk::Hold(const Caller& caller, JobId id) {
  GF_ASSIGN_OR_RETURN(
      const Job found,
      FindPending(caller,
                  id,
                  Action::kHold,
                  "only a waiting job can be held (gpufleet requeue " + std::to_string(id.value()) +
                      " puts a running one back in the queue)"));
  const bool by_owner = Whose(caller, found.owner.uid) == Ownership::kOwn;
  // An operator's or admin's hold replaces its owner's, so that the owner cannot lift it; any
  // other hold of a held job changes nothing.
  if (!found.held_by.empty() && (by_owner || found.held_by != found.owner.user)) {
    return found;
  }
  for (Job* job : WholeJob(found)) {
    job->held_by = caller.user;
    const std::optional<PendingReason> reason = HoldReason(*job);
    job->reason = reason->text;  // what the answer shows; the pass sets the same
    job->pending_reason = reason;
    job->estimated_start.reset();
    p_.jobs.Write(*job);
    p_.jobs.Record(job->id, "hold", caller.user, reason->text);
  }
  p_.scheduling.NeedFull();  // the kept scheduler still queues it
  return p_.jobs.At(id);
}

Result<Job> JobDesk::Release(const Caller& caller, JobId id) {
  const std::string name = std::to_string(id.value());
  GF_ASSIGN_OR_RETURN(const Job found,
                      FindPending(caller, id, Action::kRelease, "only a held job is released"));
  if (found.held_by.empty()) {
    return FailedPrecondition("release: job " + name + " is not held (gpufleet hold " + name +
                              " holds it)");
  }
  if (found.held_by != found.owner.user) {  // an administrator's hold: its owner may not lift it
    if (Status allowed = Authorize(caller, Resource::kJob, Action::kRelease, Ownership::kOther);
        !allowed.ok()) {
      return PermissionDenied("release: job " + name + " is held by " + found.held_by +
                              ", an administrator's hold; " + allowed.error().message +
                              "; ask an administrator to run 'gpufleet release " + name + "'");
    }
  }
  for (Job* job : WholeJob(found)) {
    job->held_by.clear();
    job->reason = "released by " + caller.user + "; waiting for the scheduler";
    job->pending_reason.reset();
    p_.jobs.Write(*job);
    p_.jobs.Record(job->id, "release", caller.user, "released by " + caller.user);
  }
  p_.scheduling.NeedFull();  // a candidate again: the full pass queues it at its place
  return p_.jobs.At(id);
}

Result<Job> JobDesk::Requeue(const Caller& caller, JobId id) {
  GF_ASSIGN_OR_RETURN(const Job found, FindVisible(caller, id, Action::kRequeue));
  const std::string name = std::to_string(id.value());
  if (!HoldsGpus(found)) {
    return FailedPrecondition(
        "requeue: job " + name + " is " + StateOf(found) +
        ", not RUNNING; only a running job can be requeued" +
        (found.state == JobState::kPending ? " (it is in the queue already)" : ""));
  }
  if (!found.spec.requeue) {
    return FailedPrecondition("requeue: job " + name +
                              " was submitted with --no-requeue (it must not run twice); stop "
                              "it with gpufleet cancel " +
                              name + ", or submit it again without --no-requeue");
  }
  if (const std::optional<StopIntent> stopping = p_.jobs.Stops().Find(id)) {
    return FailedPrecondition("requeue: job " + name + " is already being stopped (" +
                              stopping->cause + ")");
  }
  Job& job = p_.jobs.At(id);
  // As a preemption stops it: its checkpoint signal first, so that it can save its work, then
  // back in the queue at its place (its submit time kept); a gang's other members follow it
  // (SettleGangs).
  const std::string after = "requeue by " + caller.user;
  const std::string cause = "gpufleet requeue " + name;
  p_.jobs.Record(id,
                 "requeue",
                 caller.user,
                 after + ": sending SIG" + CheckpointSignalName(job.spec.checkpoint_signal) + ", " +
                     p_.jobs.AfterStopText(job, JobState::kCancelled));
  job.reason = after;  // what its owner sees while it stops
  p_.jobs.StopToRequeue(job, JobState::kPreempted, after, cause, job.spec.checkpoint_signal);
  return job;
}

Result<std::vector<JobId>> JobDesk::Matching(const Caller& caller,
                                             const JobSelector& selector,
                                             const std::string& what) {
  GF_TRY(Authorize(caller, Resource::kJob, Action::kCancel, Ownership::kOwn, what));
  if (selector.Empty()) {
    return InvalidArgument(
        what + ": no job named; give job ids, or filters (--user, --state, --name, --team), e.g. " +
        (what == "signal" ? "gpufleet cancel --signal USR1 --user " + caller.user
                          : "gpufleet cancel --user " + caller.user + " --state PENDING"));
  }
  // Others' jobs the caller may not cancel are not matched: they do not exist to it.
  std::vector<JobId> ids;
  for (const auto& [id, job] : p_.jobs.Active()) {
    if (!IsTerminal(job.state) && Visible(caller, job, Action::kCancel) && Matches(selector, job)) {
      ids.push_back(id);
    }
  }
  return ids;
}

Result<std::vector<Job>> JobDesk::CancelMatching(const Caller& caller,
                                                 const JobSelector& selector) {
  GF_ASSIGN_OR_RETURN(const std::vector<JobId> ids, Matching(caller, selector, "cancel"));
  std::vector<Job> out;
  out.reserve(ids.size());
  for (const JobId id : ids) {
    GF_ASSIGN_OR_RETURN(Job job, Cancel(caller, id));
    out.push_back(std::move(job));
  }
  return out;
}

Status JobDesk::SendSignal(const Caller& caller, const Job& found, int sig) {
  const std::vector<Job*> members = WholeJob(found);
  std::vector<std::pair<NodeAgent*, JobId>> targets;
  for (const Job* job : members) {
    if (job->state != JobState::kRunning) {
      continue;  // a member still starting or already stopping: nothing of it to signal yet
    }
    NodeAgent* agent = p_.nodes.AgentFor(*job);
    if (agent == nullptr) {
      return FailedPrecondition("signal: job " + std::to_string(job->id.value()) +
                                " runs on node " + job->allocation->node.value() +
                                ", whose agent is not connected now; try again once gpufleet "
                                "nodes shows it up");
    }
    targets.emplace_back(agent, job->id);
  }
  const std::string name = "SIG" + JobSignalName(sig);
  for (const auto& [agent, id] : targets) {
    p_.jobs.Record(id, "signal", caller.user, name + " sent by " + caller.user);
    p_.out.After([agent = agent, id = id, sig] { agent->Signal(id, sig); });
  }
  return OkStatus();
}

Result<Job> JobDesk::Signal(const Caller& caller, JobId id, int sig) {
  if (sig < 1 || sig > kMaxJobSignal || sig == kSigKill) {
    return InvalidArgument("signal: " + std::to_string(sig) +
                           " cannot be sent to a job; give a signal from 1 to " +
                           std::to_string(kMaxJobSignal) + " other than 9 (KILL: cancel ends it)");
  }
  GF_ASSIGN_OR_RETURN(const Job found, FindVisible(caller, id, Action::kCancel));
  if (found.state != JobState::kRunning) {
    std::string state = StateOf(found);
    std::transform(state.begin(), state.end(), state.begin(), [](unsigned char c) {
      return static_cast<char>(std::tolower(c));
    });
    return FailedPrecondition(
        "job " + std::to_string(id.value()) + " is " + state +
        ": --signal reaches running jobs only" +
        (found.state == JobState::kStarting ? " (it is starting; try again in a moment)" : ""));
  }
  GF_TRY(SendSignal(caller, found, sig));
  return p_.jobs.At(id);
}

Result<SignalOutcome> JobDesk::SignalMatching(const Caller& caller,
                                              const JobSelector& selector,
                                              int sig) {
  GF_ASSIGN_OR_RETURN(const std::vector<JobId> ids, Matching(caller, selector, "signal"));
  SignalOutcome out;
  std::set<JobId> gangs;  // a multi-node job is signalled whole, once, by its first member
  for (const JobId id : ids) {
    const Job& job = p_.jobs.At(id);
    if (job.state != JobState::kRunning) {
      out.skipped.push_back(job);
      continue;
    }
    if (job.spec.gang && !gangs.insert(job.spec.gang->gang_job).second) {
      out.signalled.push_back(job);
      continue;
    }
    GF_ASSIGN_OR_RETURN(Job signalled, Signal(caller, id, sig));
    out.signalled.push_back(std::move(signalled));
  }
  return out;
}

Result<Job> JobDesk::Update(const Caller& caller, JobId id, const JobUpdate& update) {
  const std::string name = std::to_string(id.value());
  GF_ASSIGN_OR_RETURN(
      const Job found,
      FindPending(caller,
                  id,
                  Action::kUpdate,
                  "only a waiting job can be changed (cancel it and submit it again)"));
  if (update.Empty()) {
    return InvalidArgument(
        "update: nothing to change; give --gpus, --cpus, --mem, --time, --class, --team or "
        "--name");
  }
  if (found.spec.gang.has_value()) {
    return InvalidArgument("update: job " + name +
                           " is a multi-node job, which is changed whole or not at all; cancel "
                           "it and submit it again");
  }
  if ((update.team && update.team->empty()) || (update.name && update.name->empty())) {
    return InvalidArgument(std::string(update.team && update.team->empty() ? "team" : "name") +
                           ": empty; give a value, or leave the option out to keep it");
  }
  JobSpec spec = found.spec;
  spec.request.gpus = update.gpus.value_or(spec.request.gpus);
  spec.request.cpus = update.cpus.value_or(spec.request.cpus);
  spec.request.memory_mib = update.memory_mib.value_or(spec.request.memory_mib);
  spec.time_limit = update.time_limit ? update.time_limit : spec.time_limit;
  spec.priority = update.priority.value_or(spec.priority);
  spec.team = update.team.value_or(spec.team);
  spec.name = update.name.value_or(spec.name);
  // The checks of a submission, in the caller's rights: the class exists, the team is theirs
  // to charge, the request fits some node; and the job's owner may use the class (a submission
  // would wait for ever in it: the pass's kClassNotAllowed).
  GF_TRY(CheckSubmission(caller, spec));
  if (update.priority) {
    const PriorityClassPolicy cls = ClassPolicyFor(policy_, spec.priority);
    if (!cls.allowed_users.empty() &&
        std::find(cls.allowed_users.begin(), cls.allowed_users.end(), found.owner.user) ==
            cls.allowed_users.end()) {
      return PermissionDenied("class: user " + found.owner.user + " may not use class " + cls.name +
                              "; keep its class, or ask an administrator");
    }
  }
  const std::string changes = Changes(found.spec, spec);
  Job& job = p_.jobs.At(id);
  if (changes.empty()) {
    return job;
  }
  job.spec = std::move(spec);
  job.prediction = p_.runtimes.Estimate(job);  // the GPUs may have changed
  p_.jobs.Write(job);
  p_.jobs.Record(id, "update", caller.user, "updated by " + caller.user + ": " + changes);
  p_.scheduling.NeedFull();  // the kept scheduler holds its old request
  return job;
}

}  // namespace gf
