// Slurm's ways of writing time: a duration (`--time`, `TimeLimit=`) and a timestamp
// (`StartTime=` in `scontrol show job`). Shared by the `#SBATCH` reader (cli/sbatch_script.h)
// and the companion mode's reading of Slurm's jobs (slurm_jobs.h). Pure.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"

namespace gf {

// A Slurm time: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS; nullopt for 0, UNLIMITED or
// INFINITE (no limit). Errors: kInvalidArgument saying which formats exist.
Result<std::optional<std::chrono::seconds>> ParseSlurmTime(std::string_view text);

// A timestamp as scontrol prints it, `2026-12-07T10:08:43`, in the local time zone of the host
// (slurmctld and scontrol print local time without a zone; the companion runs beside them).
// nullopt for `Unknown`, `None`, `N/A`, an empty text, or anything that is not such a timestamp.
std::optional<Time> ParseSlurmTimestamp(std::string_view text);

}  // namespace gf
