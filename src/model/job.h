// Job: one unit of submitted work, its request, its state machine and its allocation.
//
// Plain value types. The controller thread owns the live instances; everyone else gets copies.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/ids.h"
#include "core/result.h"
#include "model/energy.h"
#include "model/pending_reason.h"
#include "model/slice.h"
#include "model/start_estimate.h"

namespace gf {

// PENDING → STARTING → RUNNING → {COMPLETED, FAILED, CANCELLED, TIMEOUT};
// PENDING/STARTING → CANCELLED; STARTING → FAILED (could not launch);
// STARTING/RUNNING → PREEMPTED → PENDING (requeued keeping its submit time: issue #4) and
// STARTING/RUNNING → NODE_FAIL → PENDING (requeue: issue #6). A job that must not run twice
// (JobSpec::requeue false) ends instead: PREEMPTED → CANCELLED, NODE_FAIL → FAILED.
enum class JobState {
  kPending,
  kStarting,
  kRunning,
  kCompleted,
  kFailed,
  kCancelled,
  kTimeout,
  kPreempted,
  kNodeFail,
};

std::string_view ToString(JobState s);  // "PENDING", "RUNNING", ...
Result<JobState> ParseJobState(std::string_view s);
bool IsTerminal(JobState s);  // COMPLETED, FAILED, CANCELLED, TIMEOUT
bool CanTransition(JobState from, JobState to);

// A job's scheduling class, by name. The administrator defines the classes (the scheduler's
// PolicyConfig::classes, `[class.NAME]` in the settings file): their ranks, which classes each
// may preempt, and their rules. The model carries only the name, not a rank: a job keeps the
// class it was submitted with even when the config later drops that class (the scheduler
// then ranks it after every configured class), and only the config says how classes compare.
// A name rather than an index so that stored jobs, the API and the CLI stay readable and
// survive a reordering of the config. The stock config's classes are named here for code and
// tests: PriorityClass::kHigh, kNormal, kLow.
struct PriorityClass {
  std::string name;
  bool operator==(const PriorityClass&) const = default;
  // By name: for maps, not for rank. NOLINTNEXTLINE(modernize-use-nullptr): llvm#53961
  auto operator<=>(const PriorityClass&) const = default;

  static const PriorityClass kHigh;
  static const PriorityClass kNormal;
  static const PriorityClass kLow;
};
inline const PriorityClass PriorityClass::kHigh{"high"};
inline const PriorityClass PriorityClass::kNormal{"normal"};
inline const PriorityClass PriorityClass::kLow{"low"};

constexpr std::size_t kMaxPriorityClassName = 32;
const std::string& ToString(const PriorityClass& p);  // its name: "high"
// Checks the syntax only (1 to kMaxPriorityClassName lower-case letters, digits, '-', '_'):
// whether such a class exists is the config's business (the controller checks at submit).
// Errors: kInvalidArgument "priority: 'Urgent' is not a class name; use ...".
Result<PriorityClass> ParsePriorityClass(std::string_view s);

struct JobRequest {
  int gpus = 1;  // whole GPUs, all on one node (per node: see `nodes`); 0 = CPU-only
  std::optional<std::string> gpu_type;  // model name, e.g. "H100-80GB"; nullopt = any
  // Node-label constraints (`--constraint rack=a`): the job runs only on a node whose labels
  // hold every key with that value. Empty = any node.
  std::map<std::string, std::string> node_labels{};
  // How many nodes (`--nodes N`): more than 1 makes a multi-node (gang) job of N members, one
  // per node, each with `gpus` GPUs there (JobSpec::gang); every member's request says N.
  int nodes = 1;
  // A part of one GPU (issue #7): `--gpu-share 0.25` is 250 milli-GPU of compute, `--gpu-mem
  // 20G` is 20480 MiB of its memory; either makes the job fractional (one GPU, one node),
  // placed only on GPUs in shared or mps mode (SharingMode). 0 = not asked.
  int gpu_milli = 0;
  std::int64_t gpu_memory_mib = 0;
  // A MIG device of this GPU instance profile (`--mig 3g.40gb`, issue #7): the job runs on one
  // free MIG device of that profile on a GPU in mig mode. "" = not asked.
  std::string mig_profile{};
  // Host CPUs and memory on each node (issue #24): `--cpus N` (Slurm's --cpus-per-task, one
  // task per node) and `--mem 64G` (Slurm's --mem, per node). The scheduler counts them
  // against the node's capacity (Node::cpus, Node::memory_mib) as it counts GPUs, and the
  // agent holds the job to them with its cgroup (cpu quota, memory limit). 0 = not asked: the
  // job reserves none and is not limited, unless the controller's per-GPU defaults
  // ([resources] default_cpus_per_gpu, default_mem_per_gpu) filled them in at submit.
  int cpus = 0;
  std::int64_t memory_mib = 0;
};

// Whether the request reserves host CPUs or memory.
inline bool AsksHost(const JobRequest& r) {
  return r.cpus > 0 || r.memory_mib > 0;
}

// Whether the request is for a part of one GPU rather than whole GPUs.
// What the request holds once placed, in milli-GPUs per node: a share its fraction, whole GPUs
// 1,000 each (a gang member's, not the gang's).
inline std::int64_t RequestedMilli(const JobRequest& r) {
  return r.gpu_milli > 0 ? r.gpu_milli : std::int64_t{r.gpus} * kWholeGpuMilli;
}

inline bool IsFractional(const JobRequest& r) {
  return r.gpu_milli > 0 || r.gpu_memory_mib > 0;
}
// Whether the request is for a MIG device (one, of one GPU).
inline bool IsMig(const JobRequest& r) {
  return !r.mig_profile.empty();
}

struct Allocation {
  NodeId node;
  std::vector<GpuUuid> gpus;  // in the order given to CUDA_VISIBLE_DEVICES
  // What it holds of each GPU: the whole of it (kWholeGpuMilli, memory 0), or for a fractional
  // job the compute share and memory it was given on its one GPU (the memory is its limit).
  int gpu_milli = kWholeGpuMilli;
  std::int64_t gpu_memory_mib = 0;
  // A MIG job: the MIG device it holds on its one GPU (`gpus`), which CUDA_VISIBLE_DEVICES
  // names; its share is the device's compute slices of the GPU's, its memory the device's.
  GpuUuid mig{};
  // The host CPUs and memory it holds on the node (its request's; 0 = none counted): what the
  // scheduler counts against the node and the agent's cgroup limits.
  int cpus = 0;
  std::int64_t memory_mib = 0;
  bool operator==(const Allocation&) const = default;
};

// The milli-GPUs an allocation holds: 1000 per whole GPU, or the share of a fractional job.
inline int HeldMilli(const Allocation& a) {
  return static_cast<int>(a.gpus.size()) * a.gpu_milli;
}

// The same in GPUs: 2.0, or 0.25 for a quarter-GPU job.
inline double HeldGpus(const Allocation& a) {
  return HeldMilli(a) / static_cast<double>(kWholeGpuMilli);
}

// The signals a job may choose as its checkpoint signal: the ones a program can catch and that
// mean "stop soon" or are free for the user (not KILL or STOP: those cannot be caught).
// Numbers are Linux's (the only platform gpufleet runs jobs on).
constexpr int kSigTerm = 15;
struct NamedSignal {
  std::string_view name;  // without "SIG"
  int number;
};
constexpr std::array<NamedSignal, 7> kCheckpointSignals = {
    {{"HUP", 1}, {"INT", 2}, {"QUIT", 3}, {"USR1", 10}, {"USR2", 12}, {"ALRM", 14}, {"TERM", 15}}};
// "USR1", "SIGUSR1", "usr1" or "10" → 10. Errors: kInvalidArgument listing the choices.
Result<int> ParseCheckpointSignal(std::string_view text);
// 10 → "USR1"; a number outside kCheckpointSignals → its decimal text.
std::string CheckpointSignalName(int number);

// The signals `gpufleet cancel --signal SIG` delivers to a running job without ending it (Slurm's
// `scancel --signal`): the checkpoint signals and the job-control ones (CONT, STOP, TSTP, ...).
// Any other number from 1 to kMaxJobSignal goes too, except KILL (which always ends the job:
// that is `gpufleet cancel`).
constexpr std::array<NamedSignal, 13> kJobSignals = {{{"HUP", 1},
                                                      {"INT", 2},
                                                      {"QUIT", 3},
                                                      {"USR1", 10},
                                                      {"USR2", 12},
                                                      {"ALRM", 14},
                                                      {"TERM", 15},
                                                      {"CONT", 18},
                                                      {"STOP", 19},
                                                      {"TSTP", 20},
                                                      {"URG", 23},
                                                      {"PROF", 27},
                                                      {"WINCH", 28}}};
constexpr int kSigKill = 9;
constexpr int kMaxJobSignal = 64;  // SIGRTMAX on Linux
// "USR1", "SIGUSR1", "usr1" or "10" → 10. Errors: kInvalidArgument naming `field`, listing
// examples ("signal: 'FOO' is not a signal; use a name such as USR1, USR2, HUP, INT, TERM, CONT,
// or a number from 1 to 64").
Result<int> ParseJobSignal(std::string_view text, std::string_view field = "signal");
// 10 → "USR1"; a number without a name here → its decimal text.
std::string JobSignalName(int number);

// `--after JOB[:ok]` (Slurm's afterany / afterok): the job waits until `job` has ended, in
// any way (kAny) or COMPLETED with exit code 0 (kOk). A kOk dependency that ends otherwise
// can never be met: the dependent job is cancelled with the cause (Slurm's
// kill_invalid_depend), rather than waiting forever.
enum class DependencyKind { kAny, kOk };
std::string_view ToString(DependencyKind k);  // "any", "ok"
struct Dependency {
  JobId job;
  DependencyKind kind = DependencyKind::kAny;
  bool operator==(const Dependency&) const = default;
};

// One task of a job array (`--array 0-99%4`): every task is a job of its own with its own id;
// they share `array_job` (the id of the array's first task) and `max_running` (the %N: how
// many tasks of the array may hold GPUs at once; nullopt = no limit). The task sees
// GPUFLEET_ARRAY_JOB_ID and GPUFLEET_ARRAY_TASK_ID.
struct ArrayTask {
  JobId array_job;
  int index = 0;
  std::optional<int> max_running{};
  bool operator==(const ArrayTask&) const = default;
};

// One member of a multi-node job (`gpufleet submit --nodes 3`): the controller expands the job
// into `size` jobs with consecutive ids, one per node, as Slurm expands a heterogeneous job into
// components. The members start together or not at all (the scheduler places the pending
// members of a gang on distinct nodes in one decision), and they stop together: when one is
// requeued (preempted, its node failed) the others still running are requeued too, and when one
// fails the others are cancelled. `gang_job` (the id of rank 0) is the id users give. Each
// member sees GPUFLEET_GANG_ID, GPUFLEET_NODE_RANK, GPUFLEET_NUM_NODES, GPUFLEET_NODELIST and
// GPUFLEET_MASTER_ADDR (rank 0's node) to set up its collective (torchrun, NCCL, MPI).
struct GangMember {
  JobId gang_job;
  int rank = 0;
  int size = 1;
  bool operator==(const GangMember&) const = default;
};

// A job's environment variables in the order given; a name may repeat (the last one wins, as
// when the shim sets them one after another).
using EnvList = std::vector<std::pair<std::string, std::string>>;

// The value `name` ends with in `env`, or "" where it is not set.
std::string EnvValue(const EnvList& env, std::string_view name);

// Sets `name` to `value`: the entry that wins (the last) changed in place, or one added.
void SetEnvValue(EnvList& env, std::string_view name, std::string value);

struct JobSpec {
  std::string name;
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::string workdir;            // absolute
  EnvList env;                    // on top of the submitter's environment
  JobRequest request;
  PriorityClass priority = PriorityClass::kNormal;
  std::string team;  // "" = the user's default team
  std::optional<std::chrono::seconds> time_limit;
  // Sent first when the job is preempted (then SIGKILL after the kill grace), so that it can
  // checkpoint. Default SIGTERM (15). One of kCheckpointSignals.
  int checkpoint_signal = kSigTerm;
  std::vector<Dependency> after{};   // all must be met before it is queued
  std::optional<ArrayTask> array{};  // set on each task of an array
  std::optional<GangMember> gang{};  // set on each member of a multi-node job
  // Whether the job goes back to the queue when it is preempted or its node fails under it
  // (Slurm's --requeue, the default). false (`--no-requeue`) is for work that must not run
  // twice (it sends mail, appends to a database): such a job ends instead, CANCELLED when
  // preempted and FAILED when its node fails, with a cause that says so.
  bool requeue = true;
  // An interactive session (`--interactive`: a notebook, a shell): the idle reaper gives it
  // its class's interactive threshold, usually longer (people think between cells).
  bool interactive = false;
  // false (`--no-reap`): the idle reaper leaves it alone. Only where its class allows the
  // opt-out (`idle_opt_out = true`); the controller refuses the submission otherwise.
  bool idle_reap = true;
};

struct Owner {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string user;  // login name at submit time
};

// What a job's GPUs did while it ran, accumulated from the samples of its allocated GPUs
// (monitor/telemetry) and stored with the job when it ends.
struct JobUsage {
  std::int64_t samples = 0;  // GPU samples counted (one per GPU per sample period)
  double mean_util_pct = 0;  // mean GPU utilisation over those samples
  int peak_util_pct = 0;
  std::int64_t peak_memory_mib = 0;  // highest framebuffer use by the job on one GPU
  std::int64_t energy_mj = 0;        // energy counter delta over its GPUs, millijoules
  bool operator==(const JobUsage&) const = default;
};

// What a job's processes used of their host (issue #24), measured by its supervisor when the run
// ends: from the job's cgroup where it has one (v2 cpu.stat usage_usec and memory.peak; v1
// cpuacct.usage and memory.max_usage_in_bytes), else from the kernel's accounting of the
// processes it reaped (getrusage RUSAGE_CHILDREN: user + system time, the largest max RSS).
// Stored with the job when it ends; a requeued job's runs add up (CPU) or take the larger (peak).
struct HostUsage {
  std::int64_t cpu_ms = 0;  // user + system CPU time of every process of the job
  // The highest memory use: of the cgroup (resident and page cache the job caused, as its
  // --mem limit counts it), else the largest resident set of one of its processes.
  std::int64_t peak_memory_kib = 0;
  bool operator==(const HostUsage&) const = default;
};
HostUsage CombineHostUsage(const HostUsage& total, const HostUsage& more);

// The run-time predictor's estimate of a job's run (src/predict, controller/run_time_book.h),
// made from the runs that ended before the job was submitted.
struct JobPrediction {
  Millis expected{0};  // the point estimate
  Millis high{0};      // about the 90th percentile of such runs
  std::string basis;   // which runs it comes from: "user+family+gpus", ..., "cluster"
  // For people: "median of alice's 12 runs of python3 train.py with 4 GPUs".
  std::string explanation;
  // How far the same key's predictions were from the runs that followed them, as of this one:
  // the median of |predicted - actual| / actual over its last `error_runs` runs (at most 20);
  // nullopt when none of its predictions has met a run yet.
  std::optional<double> error_median{};
  int error_runs = 0;
  bool operator==(const JobPrediction&) const = default;
};

struct Job {
  JobId id;
  Owner owner;
  JobSpec spec;
  JobState state = JobState::kPending;
  std::optional<Allocation> allocation;
  Time submit_time{};
  std::optional<Time> start_time;
  std::optional<Time> end_time;
  std::optional<int> exit_code;     // the command's exit status; 128+N after signal N
  std::string reason;               // pending reason, or the cause of the last transition
  std::optional<std::int64_t> pid;  // the shim's pid while STARTING/RUNNING
  std::optional<JobUsage> usage;    // set when the job ends (live figures: Telemetry)
  // What its processes used of the host (CPU time, peak memory), set when a run ends and its
  // supervisor measured it; nullopt for a job that never ran, or ended before this was kept.
  std::optional<HostUsage> host_usage{};
  // Started on borrowed GPUs (beyond its team's guarantee, or over budget): others may
  // preempt it. Set at each start.
  bool preemptible = false;
  // While pending, when the scheduler expects it to start (a reservation, or victims
  // stopping); like `reason`, recomputed each pass and not stored.
  std::optional<Time> estimated_start;
  // With estimated_start (its `latest`): whether it comes from time limits or predicted run
  // times, and from how early (model/start_estimate.h). Recomputed each pass, never stored.
  std::optional<StartEstimate> start_estimate{};
  // While pending, the structured reason behind `reason` (model/pending_reason.h): its stage,
  // code and whether it can ever fit. Its text is `reason` without a requeue cause before it.
  // Set by each pass (and by admission) like `reason`, never stored; nullopt when the
  // scheduler has not given one since the job last changed state.
  std::optional<PendingReason> pending_reason{};
  // An admin approved it past its team's GPU-hour budget (`gpufleet quota approve`).
  bool budget_approved = false;
  // Who holds it (`gpufleet hold`, like `scontrol hold`): a pending job with a holder stays
  // pending but is kept out of the passes (lifecycle/admission.h) until `gpufleet release`.
  // "" = not held. A hold placed by anyone but the job's owner (an operator's or an admin's)
  // is an administrator's hold, which only an operator or an admin releases. Stored.
  std::string held_by{};
  // When the job last reported a checkpoint (`gpufleet checkpoint` from inside the job):
  // preemption prefers victims that lose the least work since then. Cleared at each start.
  std::optional<Time> last_checkpoint{};
  // What its GPUs' energy (usage.energy_mj) cost and emitted at the configured [energy] price;
  // like estimated_start, computed when the job is read and not stored.
  std::optional<EnergyCharge> energy_charge{};
  // How long its run is expected to last, by the run-time predictor at its submission (or at
  // the controller's start); kept while the job is active, never stored (JobPrediction).
  std::optional<JobPrediction> prediction{};
};

// STARTING or RUNNING with an allocation: the job holds GPUs of a node.
inline bool HoldsGpus(const Job& job) {
  return job.allocation && (job.state == JobState::kStarting || job.state == JobState::kRunning);
}

// `more` (a later run of the same job, after a preemption) added to `total`: counts and energy
// add up, the mean is weighted by samples, peaks take the larger.
JobUsage CombineUsage(const JobUsage& total, const JobUsage& more);

// "0.25" → 250 milli-GPU: a decimal share of one GPU in (0, 1], at most three decimals (the
// unit is a milli-GPU; no float is involved). Errors: kInvalidArgument naming `field`.
Result<int> ParseGpuShare(std::string_view text, std::string_view field = "gpu-share");
// "20G", "20GiB", "512M", "512MiB", "1T" (binary units; a bare number is MiB) → MiB, more than
// zero. Errors: kInvalidArgument naming `field`.
Result<std::int64_t> ParseMemoryMib(std::string_view text, std::string_view field = "gpu-mem");

// "8" → 8 CPUs, 1..kMaxJobCpus. Errors: kInvalidArgument naming `field` ("--cpus: 'x' is not
// a CPU count; use a whole number of CPUs, e.g. 8").
inline constexpr int kMaxJobCpus = 65'536;
Result<int> ParseCpuCount(std::string_view text, std::string_view field = "cpus");
// The host memory limit of a job: at most kMaxJobMemoryMib (1 PiB: a larger ask is a count of
// bytes given where MiB were meant).
inline constexpr std::int64_t kMaxJobMemoryMib = std::int64_t{1} << 30;
// Checks cpus in 0..kMaxJobCpus and memory_mib in 0..kMaxJobMemoryMib. Errors:
// kInvalidArgument naming cpus or mem.
Status ValidateHostRequest(const JobRequest& r);
// "8 CPUs, 64 GiB memory" (the parts asked), "" when neither.
std::string DescribeHostRequest(const JobRequest& r);
// 65536 → "64 GiB", 1536 → "1.5 GiB", 512 → "512 MiB".
std::string FormatMib(std::int64_t mib);

// Checks a fractional request: share in 1..1000 milli, memory 0..4 TiB, and a fraction only of
// one GPU on one node (gpus 1, nodes 1); a MIG request: a profile name ("3g.40gb", "1g.10gb+me"),
// one device, without a share. Errors: kInvalidArgument naming gpu-share, gpu-mem, mig or
// gpus and the fix.
Status ValidateFraction(const JobRequest& r);

// Checks a spec as submitted: argv not empty, gpus >= 0, workdir absolute, env names valid,
// name at most 128 bytes of printable UTF-8 (no control character: core/printable_text.h),
// team a team name. Errors: kInvalidArgument naming the field and the fix.
Status ValidateSpec(const JobSpec& spec);

// The name of a job submitted without one: the last path component of its command (argv[0]),
// made safe like any name: control characters escaped (EscapeControl), at most 128 bytes. The
// command itself is any bytes its submitter chose ("\x1b]0;...").
std::string DefaultJobName(std::string_view command);

}  // namespace gf
