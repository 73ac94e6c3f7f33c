// The memory breach watch's responses and its grace (memory_breach_watch.h).
#include "controller/memory_breach_watch.h"

#include "core/duration.h"

namespace gf {

BreachResponse MemoryBreachWatch::OnBreach(const Job& job,
                                           const ConditionChange& change,
                                           bool can_kill,
                                           Time now) {
  const bool kill =
      sharing_.memory_breach == MemoryBreach::kKill && change.pid.has_value() && can_kill;
  const std::string action =
      kill ? "killed its process " + std::to_string(*change.pid) +
                 " (gpufleet holds shared GPUs to each job's memory: [sharing] memory_breach)"
           : "warned only ([sharing] memory_breach = \"warn\"); other jobs on the GPU may run "
             "out of memory";
  if (kill) {
    killed_at_.emplace(job.id, now);  // the first kill's time is kept
  }
  return BreachResponse{
      .kill = kill,
      .event = change.message + "; " + action,
      .notify_subject = "job " + std::to_string(job.id.value()) + " is over its GPU memory limit",
      .notify_message = change.message + "; " + action};
}

std::vector<BreachStop> MemoryBreachWatch::Overdue(
    Time now, const std::function<BreachWatched(JobId)>& state) {
  std::vector<BreachStop> stops;
  const std::chrono::seconds grace = sharing_.memory_breach_grace;
  for (auto it = killed_at_.begin(); it != killed_at_.end();) {
    const BreachWatched watched = state(it->first);
    if (watched == BreachWatched::kGone) {
      it = killed_at_.erase(it);
      continue;
    }
    if (now < it->second + grace || watched == BreachWatched::kStopping) {
      ++it;
      continue;
    }
    stops.push_back(BreachStop{
        .job = it->first,
        .cause = "still over its GPU memory limit " + FormatDuration(grace) +
                 " after its largest process was killed ([sharing] memory_breach_grace): "
                 "stopping the job"});
    it = killed_at_.erase(it);
  }
  return stops;
}

}  // namespace gf
