#include "sim/idle_power.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "core/duration.h"
#include "predict/load_forecast.h"

namespace gf::sim {
namespace {

constexpr std::int64_t kNeverMs = std::numeric_limits<std::int64_t>::max();

struct Change {
  std::int64_t at_ms = 0;
  int gpus = 0;  // + taken, - given back
};

// The GPUs a job holds while it runs: its whole GPUs, or one for a share.
int HeldGpus(const JobOutcome& job) {
  return job.gpu_milli > 0 ? 1 : job.gpus;
}

double Hours(std::int64_t ms) {
  return static_cast<double>(ms) / static_cast<double>(kHourMs);
}

IdlePowerFigures Replay(const SimResult& result,
                        const IdlePowerOptions& options,
                        bool use_forecast) {
  std::vector<Change> changes;
  std::vector<DemandSpan> demand;
  for (const JobOutcome& job : result.jobs) {
    const int gpus = HeldGpus(job);
    if (gpus <= 0 || job.runs.empty()) {
      continue;
    }
    for (const auto& [start, end] : job.runs) {
      changes.push_back(Change{.at_ms = start.count(), .gpus = gpus});
      changes.push_back(Change{.at_ms = end.count(), .gpus = -gpus});
    }
    demand.push_back(DemandSpan{.from = FromUnixMillis(job.submit.count()),
                                .to = FromUnixMillis(job.runs.back().second.count()),
                                .gpus = static_cast<double>(gpus)});
  }
  IdlePowerFigures figures;
  if (changes.empty()) {
    return figures;
  }
  // Ends before starts at the same moment: the GPUs freed are the ones taken.
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.at_ms != b.at_ms ? a.at_ms < b.at_ms : a.gpus < b.gpus;
  });
  const std::int64_t first_ms = std::min<std::int64_t>(changes.front().at_ms, 0);
  const std::int64_t last_ms = changes.back().at_ms;
  const Time first_hour = HourOf(FromUnixMillis(first_ms));
  const int hours = static_cast<int>((last_ms - ToUnixMillis(first_hour)) / kHourMs) + 1;
  const std::vector<double> hourly = HourlyDemand(demand, first_hour, hours);

  LoadForecast forecast;
  int observed = 0;  // hours told to the forecast: those that ended
  const int total = result.total_gpus;
  std::vector<std::int64_t> idle_since(static_cast<std::size_t>(std::max(total, 0)), first_ms);
  // The number of idle GPUs (from the front of idle_since, the longest idle) that are capped
  // at `now`: with a forecast, all but those it wants ready, once settled; else those idle
  // `idle_after`.
  std::optional<int> ready;
  const auto capped_from = [&](std::size_t i) {
    const std::int64_t since = idle_since[i];
    if (!ready) {
      return since + options.idle_after.count();
    }
    const auto cappable =
        static_cast<std::size_t>(std::max<int>(static_cast<int>(idle_since.size()) - *ready, 0));
    return i < cappable ? since + options.settle.count() : kNeverMs;
  };
  const auto account = [&](std::int64_t from, std::int64_t to) {  // [from, to): nothing changes
    if (to <= from) {
      return;
    }
    figures.idle_gpu_hours += Hours(to - from) * static_cast<double>(idle_since.size());
    for (std::size_t i = 0; i < idle_since.size(); ++i) {
      const std::int64_t capped = std::max(from, capped_from(i));
      if (capped < to) {
        figures.capped_gpu_hours += Hours(to - capped);
      }
    }
  };
  const auto reforecast = [&](std::int64_t now) {
    if (!use_forecast) {
      return;
    }
    ready = GpusToKeepReady(forecast,
                            FromUnixMillis(now),
                            options.lead_hours,
                            total - static_cast<int>(idle_since.size()),
                            total);
  };
  std::int64_t now = first_ms;
  std::size_t next = 0;
  while (next < changes.size()) {
    // The next moment something changes: a run starts or ends, or an hour ends.
    const std::int64_t hour_end = ToUnixMillis(first_hour) + std::int64_t{observed + 1} * kHourMs;
    const std::int64_t at = std::min(changes[next].at_ms, hour_end);
    account(now, at);
    now = at;
    if (at == hour_end) {
      forecast.Observe(first_hour + std::chrono::hours(observed),
                       hourly[static_cast<std::size_t>(observed)]);
      ++observed;
      reforecast(now);
      continue;
    }
    const Change& change = changes[next++];
    if (change.gpus < 0) {
      idle_since.insert(idle_since.end(), static_cast<std::size_t>(-change.gpus), now);
    } else {
      ++figures.starts;
      bool lifted = false;
      for (int g = 0; g < change.gpus && !idle_since.empty(); ++g) {
        lifted = lifted || capped_from(idle_since.size() - 1) <= now;
        idle_since.pop_back();
      }
      if (lifted) {
        ++figures.starts_delayed;
        figures.added_queueing_s += std::chrono::duration<double>(options.lift).count();
      }
    }
    reforecast(now);
  }
  return figures;
}

std::string Row(const std::string& rule, const IdlePowerFigures& f) {
  char line[160];
  std::snprintf(line,
                sizeof line,
                "  %-30s %10.1f of %-10.1f %6d of %-8d %s\n",
                rule.c_str(),
                f.capped_gpu_hours,
                f.idle_gpu_hours,
                f.starts_delayed,
                f.starts,
                FormatDuration(std::chrono::seconds(std::llround(f.added_queueing_s))).c_str());
  return line;
}

}  // namespace

IdlePowerComparison CompareIdlePower(const SimResult& result, const IdlePowerOptions& options) {
  return IdlePowerComparison{.idle_wait = Replay(result, options, false),
                             .forecast = Replay(result, options, true)};
}

std::string FormatIdlePower(const IdlePowerComparison& comparison,
                            const IdlePowerOptions& options) {
  const auto text = [](Millis d) {
    return FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(d));
  };
  std::string out = "\nidle power caps (a start on a capped GPU waits " + text(options.lift) +
                    " for its limit):\n";
  char head[160];
  std::snprintf(head,
                sizeof head,
                "  %-30s %-24s %-18s %s\n",
                "rule",
                "GPU-hours capped of idle",
                "starts delayed",
                "added queueing");
  out += head;
  out += Row("idle " + text(options.idle_after) + " only", comparison.idle_wait);
  out +=
      Row("load forecast, " + std::to_string(options.lead_hours) + "h ahead", comparison.forecast);
  return out;
}

}  // namespace gf::sim
