// SbatchScript: a Slurm batch script's `#SBATCH` lines read as `gpufleet submit` options (issue
// #23), so that a script written for sbatch runs unchanged.
//
// Each honoured directive becomes the SubmitOptions field of the same meaning (--gres=gpu:a100:2
// → 2 GPUs of that type on each node, --time in Slurm's formats, --account → team, --qos and
// --partition → class through the client file's [slurm] tables, ...). A directive gpufleet has
// no counterpart for (--mem, --mail-type, ...) is not dropped in silence: it is listed in
// `not_honoured`, which the client prints as one warning line. A directive whose value is
// malformed, or whose meaning gpufleet cannot keep (a node range, an afternotok dependency), is
// refused with the script line and the directive named. The client applies these options last:
// #GPUFLEET lines and the command line win (client_commands.cpp ApplyDirectives).
// Plain functions; no shared state.
#pragma once

#include <chrono>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/submit_request.h"
#include "config/config.h"
#include "core/result.h"

#include "slurm/slurm_time.h"

namespace gf {

// One #SBATCH line of a script: its number (from 1) and its text after "#SBATCH".
struct SbatchLine {
  int number = 0;
  std::string text;
};

// A script's directives: the words of its #GPUFLEET lines and its #SBATCH lines, both only from
// the lines before its first command (as sbatch reads them). "# SBATCH" and "##SBATCH" are
// comments, as in Slurm (the way to turn a directive off).
struct ScriptDirectives {
  std::vector<std::string> gpufleet;
  std::vector<SbatchLine> sbatch;
};
ScriptDirectives ParseScriptDirectives(std::istream& in);

// The same, of the file at `script_path`. Errors: kInvalidArgument when it cannot be read.
Result<ScriptDirectives> ReadScriptDirectives(const std::string& script_path);

// What a script's #SBATCH lines ask for.
struct SbatchOptions {
  SubmitOptions options;  // the fields they set; the others unset
  // Each directive not honoured, as written, with why: "--mem=32G (GPUs are reserved, not
  // memory)". In the order of the script.
  std::vector<std::string> not_honoured;
};

// Reads `lines` of the script `script` (its name, for messages) with `mapping` (the client
// file's [slurm] tables). Without --output, the job writes to slurm-%j.out (slurm-%A_%a.out for
// an array) in its working directory, as under sbatch.
// Errors: kInvalidArgument "job.sh line 4: #SBATCH --time=1:2:3:4: ..." naming the fix.
Result<SbatchOptions> ReadSbatchLines(const std::vector<SbatchLine>& lines,
                                      const std::string& script,
                                      const SlurmMapping& mapping);

// The warning line for `not_honoured`, "" when it is empty:
// "warning: job.sh: #SBATCH directives not honoured: --mem=32G (...), --exclusive (...)".
std::string NotHonouredWarning(const std::string& script,
                               const std::vector<std::string>& not_honoured);

}  // namespace gf
