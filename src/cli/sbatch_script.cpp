#include "cli/sbatch_script.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "model/notification.h"
#include "model/output_pattern.h"

namespace gf {
namespace {

constexpr std::string_view kSbatch = "#SBATCH";
constexpr std::string_view kGpufleet = "#GPUFLEET";

// sbatch's one-letter options, by their long names.
const std::map<char, std::string_view>& ShortOptions() {
  static const std::map<char, std::string_view> names = {
      {'A', "account"},       {'a', "array"},         {'B', "extra-node-info"},
      {'C', "constraint"},    {'c', "cpus-per-task"}, {'D', "chdir"},
      {'d', "dependency"},    {'e', "error"},         {'F', "nodefile"},
      {'G', "gpus"},          {'H', "hold"},          {'h', "help"},
      {'I', "immediate"},     {'i', "input"},         {'J', "job-name"},
      {'k', "no-kill"},       {'L', "licenses"},      {'M', "clusters"},
      {'m', "distribution"},  {'N', "nodes"},         {'n', "ntasks"},
      {'O', "overcommit"},    {'o', "output"},        {'p', "partition"},
      {'Q', "quiet"},         {'q', "qos"},           {'S', "core-spec"},
      {'s', "oversubscribe"}, {'t', "time"},          {'V', "version"},
      {'v', "verbose"},       {'W', "wait"},          {'w', "nodelist"},
      {'x', "exclude"}};
  return names;
}

// Options that take no value (or only an optional one, given with '=').
bool IsFlag(std::string_view name) {
  static const std::set<std::string_view> flags = {
      "contiguous", "exclusive", "get-user-env",  "help",       "hold",       "ignore-pbs",
      "immediate",  "nice",      "no-kill",       "no-requeue", "overcommit", "oversubscribe",
      "parsable",   "propagate", "quiet",         "reboot",     "requeue",    "spread-job",
      "test-only",  "usage",     "use-min-nodes", "verbose",    "version",    "wait"};
  return flags.count(name) > 0;
}

// Why gpufleet does not honour the directive `name`, for the warning line.
std::string WhyNotHonoured(std::string_view name) {
  static const std::set<std::string_view> resources = {"cores-per-socket",
                                                       "exclusive",
                                                       "mem-bind",
                                                       "mincpus",
                                                       "ntasks-per-core",
                                                       "ntasks-per-gpu",
                                                       "ntasks-per-socket",
                                                       "sockets-per-node",
                                                       "threads-per-core",
                                                       "tmp",
                                                       "hint",
                                                       "core-spec",
                                                       "extra-node-info",
                                                       "oversubscribe",
                                                       "overcommit"};
  if (resources.count(name) > 0) {
    return "gpufleet reserves whole GPUs, CPUs (--cpus-per-task) and memory (--mem), not this";
  }
  if (name == "constraint" || name == "nodelist" || name == "exclude" || name == "nodefile") {
    return "gpufleet picks nodes by label: use #GPUFLEET --constraint KEY=VALUE";
  }
  if (name == "signal") {
    return "gpufleet signals on preemption, not before the time limit: use "
           "#GPUFLEET --checkpoint-signal";
  }
  if (name == "begin" || name == "deadline" || name == "hold") {
    return "gpufleet queues a job at once";
  }
  return "gpufleet has no counterpart";
}

// Directives that ask for what gpufleet does anyway: cancel a job whose afterok dependency
// failed, start the output file afresh.
bool IsGpufleetsWayAnyway(std::string_view name, std::string_view value) {
  return (name == "kill-on-invalid-dep" && value == "yes") ||
         (name == "open-mode" && value == "truncate");
}

// One directive as written: `--gres=gpu:2` or `-N 2`, under its long name.
struct Directive {
  std::string name;
  std::optional<std::string> value;
  std::string written;  // "--gres=gpu:2", "-N 2", "--requeue"
  int line = 0;
};

// The words of a directive line: split at blanks, with '...' and "..." quoting, up to an
// unquoted '#' (a trailing comment). Errors: an unterminated quote (the message's tail).
Result<std::vector<std::string>> Words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '#') {
      break;
    } else if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (in_word) {
        words.push_back(std::move(word));
        word.clear();
        in_word = false;
      }
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    return InvalidArgument(std::string("a quote (") + quote + ") is not closed");
  }
  if (in_word) {
    words.push_back(std::move(word));
  }
  return words;
}

class SbatchReader {
 public:
  SbatchReader(const std::string& script, const SlurmMapping& mapping)
      : script_(script), mapping_(mapping) {}

  Result<SbatchOptions> Read(const std::vector<SbatchLine>& lines) {
    for (const SbatchLine& line : lines) {
      GF_ASSIGN_OR_RETURN(const std::vector<Directive> directives, Split(line));
      for (const Directive& d : directives) {
        GF_TRY(Apply(d));
      }
    }
    GF_TRY(Finish());
    return std::move(out_);
  }

 private:
  Error Bad(int line, std::string_view written, const std::string& why) const {
    return InvalidArgument(script_ + " line " + std::to_string(line) + ": #SBATCH " +
                           std::string(written) + ": " + why);
  }
  Error Bad(const Directive& d, const std::string& why) const {
    return Bad(d.line, d.written, why);
  }

  void NotHonoured(const Directive& d, const std::string& why) {
    out_.not_honoured.push_back(d.written + " (" + why + ")");
  }

  Result<std::vector<Directive>> Split(const SbatchLine& line) const {
    Result<std::vector<std::string>> words = Words(line.text);
    if (!words.ok()) {
      return Bad(line.number, line.text, words.error().message);
    }
    std::vector<Directive> out;
    for (std::size_t i = 0; i < words->size(); ++i) {
      const std::string& word = (*words)[i];
      Directive d{.name = "", .value = std::nullopt, .written = word, .line = line.number};
      if (word.rfind("--", 0) == 0 && word.size() > 2) {
        const std::size_t eq = word.find('=');
        d.name = word.substr(2, eq == std::string::npos ? eq : eq - 2);
        if (eq != std::string::npos) {
          d.value = word.substr(eq + 1);
        }
      } else if (word.size() >= 2 && word[0] == '-' && word[1] != '-') {
        const auto it = ShortOptions().find(word[1]);
        d.name = it == ShortOptions().end() ? word.substr(1, 1) : std::string(it->second);
        if (word.size() > 2) {
          d.value = word.substr(word[2] == '=' ? 3 : 2);
        }
      } else {
        return Bad(line.number,
                   word,
                   "not an option; a directive line holds options such as --time=1:00:00 (quote "
                   "a value with blanks: --job-name=\"my job\")");
      }
      if (!d.value && !IsFlag(d.name)) {
        if (i + 1 >= words->size()) {
          return Bad(d, "needs a value (e.g. " + word + "=VALUE)");
        }
        d.value = (*words)[++i];
        d.written += " " + *d.value;
      }
      out.push_back(std::move(d));
    }
    return out;
  }

  // "[TYPE:]N" of --gpus, --gpus-per-node and --gpus-per-task.
  Result<int> TypedCount(const Directive& d) {
    const std::string& text = *d.value;
    const std::size_t colon = text.rfind(':');
    const std::string count = colon == std::string::npos ? text : text.substr(colon + 1);
    const auto n = Count(count, 0, 1024);
    if (!n || (colon != std::string::npos && colon == 0)) {
      return Bad(d, "not [TYPE:]N, a number of GPUs from 0 to 1024 (e.g. 2 or a100:2)");
    }
    if (colon != std::string::npos) {
      gpu_type_ = text.substr(0, colon);
    }
    return *n;
  }

  static std::optional<int> Count(std::string_view text, int min, int max) {
    int n = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || n < min ||
        n > max) {
      return std::nullopt;
    }
    return n;
  }

  // --gres=gpu[:TYPE][:N][,OTHER...]: the GPUs on each node; other resources are not honoured.
  Status Gres(const Directive& d) {
    std::istringstream items(*d.value);
    std::string item;
    while (std::getline(items, item, ',')) {
      if (item != "gpu" && item.rfind("gpu:", 0) != 0) {
        NotHonoured(
            Directive{.name = "gres", .value = item, .written = "--gres=" + item, .line = d.line},
            "only GPUs are a resource gpufleet reserves");
        continue;
      }
      std::vector<std::string> parts;
      std::istringstream fields(item);
      for (std::string part; std::getline(fields, part, ':');) {
        parts.push_back(part);
      }
      std::optional<int> n = 1;
      if (parts.size() == 2) {
        n = Count(parts[1], 0, 1024);
        if (!n) {  // gpu:TYPE, one of them
          gpu_type_ = parts[1];
          n = 1;
        }
      } else if (parts.size() == 3) {
        gpu_type_ = parts[1];
        n = Count(parts[2], 0, 1024);
      } else if (parts.size() > 3) {
        n.reset();
      }
      if (!n || (parts.size() >= 2 && parts[1].empty())) {
        return Bad(d, "'" + item + "' is not gpu[:TYPE][:N] (e.g. gpu:2 or gpu:a100:2)");
      }
      gpus_per_node_ = *n;
      gpus_total_.reset();
      gpus_per_task_.reset();
    }
    return OkStatus();
  }

  // --dependency=afterok:12:13,afterany:14 → --after 12:ok 13:ok 14.
  Status Dependencies(const Directive& d) {
    const std::string& text = *d.value;
    if (text.find('?') != std::string::npos) {
      return Bad(d,
                 "'?' (any one of them) is not supported; gpufleet waits for all dependencies: "
                 "separate them with ','");
    }
    std::istringstream items(text);
    std::string item;
    while (std::getline(items, item, ',')) {
      const std::size_t colon = item.find(':');
      const std::string kind = item.substr(0, colon);
      if (kind != "afterok" && kind != "afterany") {
        return Bad(d,
                   "'" + kind +
                       "' is not supported; gpufleet runs a job after others ended (afterany) "
                       "or completed with exit code 0 (afterok)");
      }
      if (colon == std::string::npos) {
        return Bad(d, "'" + item + "' names no job; give afterok:JOB[:JOB...]");
      }
      std::istringstream ids(item.substr(colon + 1));
      for (std::string id; std::getline(ids, id, ':');) {
        std::string after = kind == "afterok" ? id + ":ok" : id;
        if (Result<std::vector<Dependency>> parsed = ParseAfter({after}); !parsed.ok()) {
          return Bad(d,
                     "'" + id +
                         "' is not a job id; give the ids gpufleet submit printed (a delay "
                         "such as +10 is not supported)");
        }
        out_.options.after.push_back(std::move(after));
      }
    }
    return OkStatus();
  }

  // --partition=a,b: the first one with a [slurm.partition] class.
  std::optional<std::string> PartitionClass(const std::string& partitions) const {
    std::istringstream items(partitions);
    for (std::string item; std::getline(items, item, ',');) {
      if (const auto it = mapping_.partition.find(item); it != mapping_.partition.end()) {
        return it->second;
      }
    }
    return std::nullopt;
  }

  Status Apply(const Directive& d) {
    const std::string& name = d.name;
    const std::string value = d.value.value_or("");
    SubmitOptions& o = out_.options;
    if (name == "gres") {
      return Gres(d);
    }
    if (name == "gpus" || name == "gpus-per-node" || name == "gpus-per-task") {
      GF_ASSIGN_OR_RETURN(const int n, TypedCount(d));
      gpus_total_.reset();
      gpus_per_node_.reset();
      gpus_per_task_.reset();
      (name == "gpus"            ? gpus_total_
       : name == "gpus-per-node" ? gpus_per_node_
                                 : gpus_per_task_) = n;
      gpus_directive_ = d;
    } else if (name == "nodes") {
      const std::size_t dash = value.find('-');
      const auto low = Count(value.substr(0, dash), 1, 1024);
      const auto high = dash == std::string::npos ? low : Count(value.substr(dash + 1), 1, 1024);
      if (!low || !high) {
        return Bad(d, "not a node count from 1 to 1024");
      }
      if (*low != *high) {
        return Bad(d,
                   "a range of node counts is not supported; gpufleet starts a multi-node job on "
                   "exactly N nodes: give one count (e.g. --nodes=" +
                       std::to_string(*low) + ")");
      }
      nodes_ = *low;
    } else if (name == "ntasks" || name == "ntasks-per-node") {
      const auto n = Count(value, 1, 1 << 20);
      if (!n) {
        return Bad(d, "not a number of tasks, 1 or more");
      }
      (name == "ntasks" ? ntasks_ : ntasks_per_node_) = *n;
      tasks_directive_ = d;
    } else if (name == "time") {
      Result<std::optional<std::chrono::seconds>> t = ParseSlurmTime(value);
      if (!t.ok()) {
        return Bad(d, t.error().message);
      }
      o.time = *t ? std::optional(std::to_string((*t)->count()) + "s") : std::nullopt;
    } else if (name == "cpus-per-task" || name == "cpus-per-gpu") {
      const auto n = Count(value, 1, kMaxJobCpus);
      if (!n) {
        return Bad(d, "not a CPU count from 1 to " + std::to_string(kMaxJobCpus));
      }
      (name == "cpus-per-task" ? cpus_per_task_ : cpus_per_gpu_) = *n;
      (name == "cpus-per-task" ? cpus_per_gpu_ : cpus_per_task_).reset();
    } else if (name == "mem" || name == "mem-per-cpu" || name == "mem-per-gpu") {
      if (value == "0") {
        // Slurm's "all the memory of the node": gpufleet reserves an amount, not a node.
        NotHonoured(d, "gpufleet reserves an amount of memory: give one, e.g. --mem=64G");
        return OkStatus();
      }
      Result<std::int64_t> mib = ParseMemoryMib(value, "--" + name);
      if (!mib.ok()) {
        return Bad(d, mib.error().message.substr(name.size() + 4));
      }
      mem_.reset();
      mem_per_cpu_.reset();
      mem_per_gpu_.reset();
      (name == "mem" ? mem_ : name == "mem-per-cpu" ? mem_per_cpu_ : mem_per_gpu_) = *mib;
    } else if (name == "job-name") {
      o.name = value;
    } else if (name == "output" || name == "error") {
      if (Status s = ValidateOutputPattern(value, "--" + name); !s.ok()) {
        return Bad(d, s.error().message.substr(name.size() + 4));
      }
      (name == "output" ? o.output : o.error) = value;
    } else if (name == "array") {
      if (Result<ArrayRequest> a = ParseArraySpec(value); !a.ok()) {
        return Bad(d, a.error().message.substr(std::string_view("--array: ").size()));
      }
      o.array = value;
    } else if (name == "dependency") {
      return Dependencies(d);
    } else if (name == "account") {
      o.team = value;
    } else if (name == "qos") {
      qos_ = d;
    } else if (name == "partition") {
      partition_ = d;
    } else if (name == "export") {
      if (Result<ExportSpec> e = ParseExportSpec(value); !e.ok()) {
        return Bad(d, e.error().message.substr(std::string_view("--export: ").size()));
      }
      o.export_env = value;
    } else if (name == "chdir") {
      o.workdir = value;
    } else if (name == "requeue" || name == "no-requeue") {
      o.requeue = name == "requeue";
    } else if (name == "mail-type") {
      return MailType(d);
    } else if (name == "mail-user") {
      if (value.find('@') == std::string::npos) {
        return Bad(d,
                   "'" + value +
                       "' is not an e-mail address; gpufleet mails a full address, "
                       "e.g. --mail-user=alice@example.org");
      }
      o.mail_user = value;
    } else if (IsGpufleetsWayAnyway(name, value)) {
      // Honoured by doing nothing.
    } else {
      NotHonoured(d, WhyNotHonoured(name));
    }
    return OkStatus();
  }

  // --mail-type=END,FAIL: the job's notifications, as gpufleet names them (a subscription to the
  // job, made once it is submitted: SubmitOptions::mail_events). Slurm's types without a
  // counterpart are named in the warning; an unknown one is refused.
  Status MailType(const Directive& d) {
    struct Type {
      std::string_view slurm;
      std::vector<NotifyKind> kinds;
    };
    static const std::vector<Type> types = {
        {"NONE", {}},
        {"END", {NotifyKind::kJobEnd, NotifyKind::kJobFailed}},  // Slurm's END: any end
        {"FAIL", {NotifyKind::kJobFailed}},
        {"REQUEUE", {NotifyKind::kPreempted}},
        {"ALL",
         {NotifyKind::kJobEnd,
          NotifyKind::kJobFailed,
          NotifyKind::kPreempted,
          NotifyKind::kIdleWarning}},
    };
    static const std::vector<std::pair<std::string_view, std::string_view>> without_counterpart = {
        {"BEGIN", "gpufleet has no job-start notification"},
        {"TIME_LIMIT", "gpufleet has no time-limit warning"},
        {"TIME_LIMIT_90", "gpufleet has no time-limit warning"},
        {"TIME_LIMIT_80", "gpufleet has no time-limit warning"},
        {"TIME_LIMIT_50", "gpufleet has no time-limit warning"},
        {"INVALID_DEPEND",
         "a job whose dependency cannot be met is cancelled and notified as ended"},
        {"STAGE_OUT", "gpufleet has no burst buffers"},
        {"ARRAY_TASKS", "gpufleet notifies each task of an array anyway"},
    };
    std::vector<NotifyKind> kinds;
    std::vector<std::string> without;
    std::string list = d.value.value_or("");
    std::transform(list.begin(), list.end(), list.begin(), [](unsigned char c) {
      return static_cast<char>(std::toupper(c));
    });
    std::size_t pos = 0;
    while (pos <= list.size()) {
      std::size_t comma = list.find(',', pos);
      if (comma == std::string::npos) {
        comma = list.size();
      }
      const std::string item = list.substr(pos, comma - pos);
      pos = comma + 1;
      const auto type =
          std::find_if(types.begin(), types.end(), [&](const Type& t) { return t.slurm == item; });
      const auto other = std::find_if(without_counterpart.begin(),
                                      without_counterpart.end(),
                                      [&](const auto& w) { return w.first == item; });
      if (type != types.end()) {
        for (const NotifyKind kind : type->kinds) {
          if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
            kinds.push_back(kind);
          }
        }
      } else if (other != without_counterpart.end()) {
        without.push_back(item + ": " + std::string(other->second));
      } else {
        return Bad(d,
                   "'" + item +
                       "' is not a mail type; use NONE, BEGIN, END, FAIL, REQUEUE, ALL, "
                       "TIME_LIMIT, TIME_LIMIT_90, TIME_LIMIT_80, TIME_LIMIT_50, ARRAY_TASKS "
                       "(comma-separated)");
      }
    }
    for (const std::string& w : without) {
      NotHonoured(d, w);
    }
    std::sort(kinds.begin(), kinds.end());
    std::string events;
    for (const NotifyKind kind : kinds) {
      events += events.empty() ? "" : ",";
      events += ToString(kind);
    }
    out_.options.mail_events = events;
    mail_type_ = d;
    return OkStatus();
  }

  // What only all the directives together say: GPUs per node, tasks, class, output file.
  Status Finish() {
    SubmitOptions& o = out_.options;
    if (o.mail_events && !o.mail_events->empty() && !o.mail_user) {
      NotHonoured(*mail_type_,
                  "no --mail-user: give the address to mail, "
                  "e.g. #SBATCH --mail-user=you@example.org");
      o.mail_events.reset();
    }
    const int nodes = nodes_.value_or(1);
    if (nodes > 1) {
      o.nodes = std::to_string(nodes);
    }
    int tasks_per_node = ntasks_per_node_.value_or(1);
    if (!ntasks_per_node_ && ntasks_) {
      tasks_per_node = (*ntasks_ + nodes - 1) / nodes;
    }
    if (tasks_per_node != 1 || (ntasks_ && *ntasks_ != nodes * tasks_per_node)) {
      NotHonoured(*tasks_directive_,
                  "gpufleet starts one task per node; start more processes from the script, "
                  "e.g. torchrun --nproc-per-node");
    }
    int gpus = 0;  // as under sbatch, a script asking for no GPU gets none
    if (gpus_per_node_) {
      gpus = *gpus_per_node_;
    } else if (gpus_per_task_) {
      gpus = *gpus_per_task_ * tasks_per_node;
    } else if (gpus_total_) {
      if (*gpus_total_ % nodes != 0) {
        return Bad(*gpus_directive_,
                   "gpufleet gives each node of a job the same number of GPUs, and " +
                       std::to_string(*gpus_total_) + " GPUs do not split over " +
                       std::to_string(nodes) + " nodes; use --gpus-per-node");
      }
      gpus = *gpus_total_ / nodes;
    }
    o.gpus = std::to_string(gpus);
    HostOptions(gpus, tasks_per_node);
    if (gpu_type_) {
      const auto it = mapping_.gpu_type.find(*gpu_type_);
      o.gpu_type = it == mapping_.gpu_type.end() ? *gpu_type_ : it->second;
    }
    ResolveClass();
    if (!o.output) {
      o.output = o.array ? "slurm-%A_%a.out" : "slurm-%j.out";
    }
    return OkStatus();
  }

  // Host CPUs and memory on each node (issue #24), as Slurm counts them with one task per
  // node's tasks: --cpus-per-task times the tasks, or --cpus-per-gpu times the GPUs; --mem,
  // or --mem-per-cpu times those CPUs, or --mem-per-gpu times the GPUs.
  void HostOptions(int gpus, int tasks_per_node) {
    SubmitOptions& o = out_.options;
    int cpus = 0;
    if (cpus_per_task_) {
      cpus = *cpus_per_task_ * tasks_per_node;
    } else if (cpus_per_gpu_) {
      cpus = *cpus_per_gpu_ * gpus;
    }
    if (cpus > 0) {
      o.cpus = std::to_string(std::min(cpus, kMaxJobCpus));
    }
    std::int64_t mib = 0;
    if (mem_) {
      mib = *mem_;
    } else if (mem_per_cpu_) {
      mib = *mem_per_cpu_ * std::max(cpus, 1);
    } else if (mem_per_gpu_) {
      mib = *mem_per_gpu_ * gpus;
    }
    if (mib > 0) {
      o.mem = std::to_string(mib) + "M";
    }
  }

  // --qos, else --partition, through the [slurm.qos] and [slurm.partition] tables.
  void ResolveClass() {
    std::optional<std::string> from_qos;
    if (qos_) {
      if (const auto it = mapping_.qos.find(*qos_->value); it != mapping_.qos.end()) {
        from_qos = it->second;
      } else {
        NotHonoured(*qos_, "no [slurm.qos] entry in the client settings file maps it to a class");
      }
    }
    std::optional<std::string> from_partition;
    if (partition_) {
      from_partition = PartitionClass(*partition_->value);
      if (!from_partition) {
        NotHonoured(*partition_,
                    "no [slurm.partition] entry in the client settings file maps it to a class");
      } else if (from_qos && *from_qos != *from_partition) {
        NotHonoured(*partition_, "the class comes from --qos");
      }
    }
    if (from_qos || from_partition) {
      out_.options.priority = from_qos ? from_qos : from_partition;
    }
  }

  const std::string& script_;
  const SlurmMapping& mapping_;
  SbatchOptions out_;
  std::optional<int> gpus_per_node_;
  std::optional<int> gpus_total_;
  std::optional<int> gpus_per_task_;
  std::optional<Directive> gpus_directive_;
  std::optional<std::string> gpu_type_;
  std::optional<int> nodes_;
  std::optional<int> ntasks_;
  std::optional<int> ntasks_per_node_;
  std::optional<Directive> tasks_directive_;
  std::optional<Directive> qos_;
  std::optional<Directive> partition_;
  std::optional<Directive> mail_type_;
  std::optional<int> cpus_per_task_;
  std::optional<int> cpus_per_gpu_;
  std::optional<std::int64_t> mem_;  // MiB
  std::optional<std::int64_t> mem_per_cpu_;
  std::optional<std::int64_t> mem_per_gpu_;
};

// The text after `prefix` when `line` is "PREFIX" or "PREFIX words" (not "#SBATCHX").
std::optional<std::string> After(const std::string& line, std::string_view prefix) {
  if (!line.starts_with(prefix) ||
      (line.size() > prefix.size() &&
       std::isspace(static_cast<unsigned char>(line[prefix.size()])) == 0)) {
    return std::nullopt;
  }
  return line.substr(prefix.size());
}

}  // namespace

ScriptDirectives ParseScriptDirectives(std::istream& in) {
  ScriptDirectives out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();  // a script saved with CRLF line ends
    }
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) {
      continue;
    }
    if (line[first] != '#') {
      break;  // directives end at the first command, as with #SBATCH
    }
    if (const auto words = After(line, kGpufleet)) {
      std::istringstream split(*words);
      for (std::string word; split >> word;) {
        out.gpufleet.push_back(word);
      }
    } else if (const auto text = After(line, kSbatch)) {
      out.sbatch.push_back(SbatchLine{.number = number, .text = *text});
    }
  }
  return out;
}

Result<ScriptDirectives> ReadScriptDirectives(const std::string& script_path) {
  std::ifstream in(script_path);
  if (!in) {
    return InvalidArgument("script: cannot read '" + script_path + "'");
  }
  return ParseScriptDirectives(in);
}

Result<SbatchOptions> ReadSbatchLines(const std::vector<SbatchLine>& lines,
                                      const std::string& script,
                                      const SlurmMapping& mapping) {
  return SbatchReader(script, mapping).Read(lines);
}

std::string NotHonouredWarning(const std::string& script,
                               const std::vector<std::string>& not_honoured) {
  if (not_honoured.empty()) {
    return "";
  }
  std::string line = "warning: " + script + ": #SBATCH directives not honoured: ";
  for (std::size_t i = 0; i < not_honoured.size(); ++i) {
    line += (i == 0 ? "" : ", ") + not_honoured[i];
  }
  return line;
}

}  // namespace gf
