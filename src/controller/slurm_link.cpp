#include "controller/slurm_link.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace gf {

SlurmLink::SlurmLink(std::unique_ptr<SlurmControl> control, Millis poll_interval)
    : control_(std::move(control)), poll_interval_(poll_interval) {}

SlurmLink::~SlurmLink() {
  Stop();
}

void SlurmLink::Start(std::function<void(std::vector<SlurmJob>)> on_jobs) {
  on_jobs_ = std::move(on_jobs);
  thread_ = std::thread([this] { Loop(); });
}

void SlurmLink::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void SlurmLink::Enqueue(std::string what, std::function<Status()> action) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    actions_.emplace_back(std::move(what), std::move(action));
  }
  wake_.notify_all();
}

void SlurmLink::Cancel(std::int64_t job, const std::string& cause) {
  Enqueue("cancel job " + std::to_string(job) + " (" + cause + ")",
          [this, job] { return control_->Cancel(job); });
}

void SlurmLink::Requeue(std::int64_t job, const std::string& cause) {
  Enqueue("requeue job " + std::to_string(job) + " (" + cause + ")",
          [this, job] { return control_->Requeue(job); });
}

void SlurmLink::DrainNode(const std::string& node, const std::string& reason) {
  Enqueue("drain node " + node + " (" + reason + ")",
          [this, node, reason] { return control_->DrainNode(node, reason); });
}

void SlurmLink::ResumeNode(const std::string& node) {
  Enqueue("resume node " + node, [this, node] { return control_->ResumeNode(node); });
}

void SlurmLink::Loop() {
  bool reading_failed = false;
  auto next_reading = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!actions_.empty()) {
      auto [what, action] = std::move(actions_.front());
      actions_.pop_front();
      lock.unlock();
      const Status s = action();
      if (s.ok()) {
        spdlog::info("slurm: {}", what);
      } else {
        spdlog::warn("slurm: could not {}: {}", what, s.error().message);
      }
      next_reading = std::chrono::steady_clock::now();  // show its effect soon
      lock.lock();
      continue;
    }
    if (std::chrono::steady_clock::now() >= next_reading) {
      lock.unlock();
      Result<std::vector<SlurmJob>> jobs = control_->Jobs();
      if (jobs.ok()) {
        if (reading_failed) {
          spdlog::info("slurm: reading Slurm's jobs again");
        }
        reading_failed = false;
        on_jobs_(std::move(*jobs));
      } else if (!reading_failed) {
        reading_failed = true;
        spdlog::error(
            "slurm: cannot read Slurm's jobs (gpufleet's view of them stands still "
            "until it can): {}",
            jobs.error().message);
      }
      next_reading = std::chrono::steady_clock::now() + poll_interval_;
      lock.lock();
      continue;
    }
    wake_.wait_until(lock, next_reading, [this] { return stop_ || !actions_.empty(); });
  }
}

}  // namespace gf
