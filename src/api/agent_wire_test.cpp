// The agent link's JSON (agent_wire.h): every message goes through the text the wire carries
// (WireDump, then json::parse) and must come back equal; broken messages are refused with an
// error that names the field's path.
#include "api/agent_wire.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

using nlohmann::json;

// What the other side reads: the message as text, parsed back.
json OverTheWire(const json& message) {
  return json::parse(WireDump(message));
}

template <typename T>
T ReadBack(const Result<T>& read) {
  EXPECT_TRUE(read.ok()) << (read.ok() ? "" : read.error().ToString());
  return read.ok() ? read.value() : T{};
}

// The message of the error that reading `body` with `read` must give.
template <typename Read>
std::string ReadError(Read read, const json& body) {
  auto result = read(body);
  EXPECT_FALSE(result.ok()) << body.dump();
  if (result.ok()) {
    return "";
  }
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument) << result.error().ToString();
  return result.error().message;
}

Gpu GpuWithTopology(int index, int numa, int pcie_switch, std::vector<int> peers) {
  return Gpu{.index = index,
             .uuid = GpuUuid("GPU-" + std::to_string(index)),
             .model = "H100-80GB",
             .memory_mib = 81559,
             .health = GpuHealth::kOk,
             .health_cause = "",
             .numa_node = numa,
             .pcie_switch = pcie_switch,
             .nvlink_peers = std::move(peers)};
}

Node TwoGpuNode() {
  Node node;
  node.name = NodeId("gpu07");
  Gpu mig = GpuWithTopology(0, 0, 0, {1});  // in MIG mode, split in two
  mig.mig_enabled = true;
  mig.mig_profiles = {"1g.10gb", "3g.40gb", "7g.80gb"};
  mig.mig_instances = {MigInstance{.profile = "3g.40gb",
                                   .uuid = GpuUuid("MIG-a"),
                                   .gpu_instance_id = 1,
                                   .compute_instance_id = 0,
                                   .slices = 3,
                                   .memory_mib = 40192},
                       MigInstance{.profile = "1g.10gb",
                                   .uuid = GpuUuid("MIG-b"),
                                   .gpu_instance_id = 9,
                                   .compute_instance_id = 0,
                                   .slices = 1,
                                   .memory_mib = 9856}};
  node.gpus.push_back(mig);
  Gpu unknown = GpuWithTopology(1, -1, -1, {});  // topology unknown: null on the wire
  unknown.health = GpuHealth::kDegraded;
  unknown.health_cause = "XID 48: double-bit ECC error";
  node.gpus.push_back(unknown);
  node.cpus = 96;
  node.memory_mib = 1'048'576;
  node.labels = {{"rack", "a3"}, {"zone", "eu-1"}};
  node.state = NodeState::kDraining;
  node.state_reason = "fan replacement";
  node.gpu_backend = "sim:2xH100-80GB";
  node.containment = "cgroup-v1";  // the server's `gpufleet nodes` shows what the agent said
  node.last_seen = FromUnixMillis(1'700'000'123'456);
  return node;
}

// A hello with no jobs.
AgentHello BareHello() {
  return AgentHello{.node = TwoGpuNode(), .running = {}, .ended = {}};
}

JobExitReport Exit(std::int64_t job, int code, std::optional<int> signal, std::string cause) {
  return JobExitReport{.job = JobId(job),
                       .exit_code = code,
                       .signal = signal,
                       .end_time = FromUnixMillis(1'700'000'200'000 + job),
                       .cause = std::move(cause),
                       .node = NodeId()};
}

void ExpectSameExit(const JobExitReport& got, const JobExitReport& want) {
  EXPECT_EQ(got.job, want.job);
  EXPECT_EQ(got.exit_code, want.exit_code);
  EXPECT_EQ(got.signal, want.signal);
  EXPECT_EQ(got.end_time, want.end_time);
  EXPECT_EQ(got.cause, want.cause);
  EXPECT_EQ(got.leftover_pids, want.leftover_pids);
  EXPECT_EQ(got.host_usage, want.host_usage);
}

// A sample with every optional reading set (and two processes, one of each kind).
GpuSample FullSample() {
  GpuSample s;
  s.uuid = GpuUuid("GPU-0");
  s.time = FromUnixMillis(1'700'000'300'000);
  s.memory_total_mib = 81559;
  s.memory_used_mib = 40000;
  s.memory_free_mib = 41559;
  s.util_gpu_pct = 97;
  s.util_memory_pct = 41;
  s.temperature_c = 71;
  s.memory_temperature_c = 80;
  s.power_mw = 612'345;
  s.power_limit_mw = 700'000;
  s.energy_mj = 9'876'543'210;
  s.sm_clock_mhz = 1980;
  s.mem_clock_mhz = 2619;
  s.pcie_tx_kbps = 123'456;
  s.pcie_rx_kbps = 654'321;
  s.pcie_replay_count = 3;
  s.ecc = EccCounters{.volatile_corrected = 1,
                      .volatile_uncorrected = 2,
                      .aggregate_corrected = 30,
                      .aggregate_uncorrected = 4};
  s.remapped_rows =
      RemappedRows{.correctable = 5, .uncorrectable = 1, .pending = true, .failure = false};
  s.throttle_reasons = 0x4 | 0x40;
  s.fan_speed_pct = 55;
  s.pstate = 0;
  s.xids = {XidEvent{.xid = 79, .time = FromUnixMillis(1'700'000'299'000)},
            XidEvent{.xid = 48, .time = FromUnixMillis(1'700'000'299'500)}};
  s.processes = {GpuProcessSample{.pid = 4242,
                                  .used_memory_mib = 39000,
                                  .sm_util_pct = 95,
                                  .mem_util_pct = 40,
                                  .job = JobId(17),
                                  .uid = 1000,
                                  .user = "alice",
                                  .unmanaged = false},
                 GpuProcessSample{.pid = 99,
                                  .used_memory_mib = std::nullopt,
                                  .sm_util_pct = std::nullopt,
                                  .mem_util_pct = std::nullopt,
                                  .job = std::nullopt,
                                  .uid = 0,
                                  .user = "root",
                                  .unmanaged = true}};
  s.health = GpuHealth::kDegraded;
  s.health_cause = "XID 79: GPU has fallen off the bus";
  s.processes[0].mig_uuid = GpuUuid("MIG-a");
  s.processes[0].cpu_pct = 150.5;
  s.processes[0].host_memory_mib = 2048;
  s.processes[0].command = "python train.py --lr 3e-4";
  s.mig_enabled = true;
  s.mig = {MigSample{.instance = MigInstance{.profile = "3g.40gb",
                                             .uuid = GpuUuid("MIG-a"),
                                             .gpu_instance_id = 1,
                                             .compute_instance_id = 0,
                                             .slices = 3,
                                             .memory_mib = 40192},
                     .memory_used_mib = 39000,
                     .memory_total_mib = 40192},
           MigSample{.instance = MigInstance{.profile = "1g.10gb",
                                             .uuid = GpuUuid("MIG-b"),
                                             .gpu_instance_id = 9,
                                             .compute_instance_id = 0,
                                             .slices = 1,
                                             .memory_mib = 9856},
                     .memory_used_mib = std::nullopt,
                     .memory_total_mib = std::nullopt}};
  s.mig_layout_error = "GPU 0: MIG profile '5g.50gb' is not offered by this GPU";
  return s;
}

// A launch whose argv, env and workdir hold bytes that are not UTF-8 (and a NUL): they must
// reach the agent byte for byte.
Job LaunchedJob() {
  Job job;
  job.id = JobId(31);
  job.owner = Owner{.uid = 1000, .gid = 100, .user = "alice"};
  job.spec.name = "train";
  job.spec.team = "vision";
  job.spec.argv = {"python",
                   std::string("caf\xff\xfe.py"),
                   std::string("a\0b", 3),
                   "d\xc3\xa9j\xc3\xa0"};               // the last one is valid UTF-8
  job.spec.workdir = std::string("/data/\xc3\x28run");  // \xc3\x28: a broken sequence
  job.spec.env = {{"LANG", "C"}, {"NAME", std::string("\xe9t\xe9")}, {"EMPTY", ""}};
  job.spec.array = ArrayTask{.array_job = JobId(30), .index = 1};
  job.state = JobState::kStarting;
  job.allocation =
      Allocation{.node = NodeId("gpu07"), .gpus = {GpuUuid("GPU-1"), GpuUuid("GPU-0")}};
  return job;
}

TEST(AgentWireTest, HelloRoundTrips) {
  AgentHello hello{.node = TwoGpuNode(),
                   .running = {JobId(3), JobId(9)},
                   .ended = {Exit(4, 0, std::nullopt, "exited with status 0"),
                             Exit(5, 137, 9, "killed by signal 9")},
                   .run_dir = "/var/lib/gpufleet/agent/run",
                   .jobs_from = "slurm"};
  AgentHello back = ReadBack(AgentHelloFromJson(OverTheWire(AgentHelloToJson(hello))));
  EXPECT_EQ(back.node, hello.node);  // GPUs with topology and health, labels, state_reason
  EXPECT_EQ(back.running, hello.running);
  EXPECT_EQ(back.run_dir, hello.run_dir);
  EXPECT_EQ(back.jobs_from, "slurm");
  ASSERT_EQ(back.ended.size(), 2u);
  ExpectSameExit(back.ended[0], hello.ended[0]);
  ExpectSameExit(back.ended[1], hello.ended[1]);
}

TEST(AgentWireTest, SessionRoundTrips) {
  AgentSession session{.session = 42,
                       .heartbeat = std::chrono::milliseconds(1500),
                       .node_timeout = std::chrono::milliseconds(9000)};
  AgentSession back = ReadBack(AgentSessionFromJson(OverTheWire(AgentSessionToJson(session))));
  EXPECT_EQ(back.session, 42);
  EXPECT_EQ(back.heartbeat, std::chrono::milliseconds(1500));
  EXPECT_EQ(back.node_timeout, std::chrono::milliseconds(9000));
}

TEST(AgentWireTest, ReportBatchRoundTripsWithEverySampleFieldSetAndUnset) {
  GpuSample bare;  // every optional reading absent
  bare.uuid = GpuUuid("GPU-1");
  bare.time = FromUnixMillis(1'700'000'300'001);
  bare.memory_total_mib = 81559;
  GpuSample lost;  // a lost GPU: only uuid, time and lost
  lost.uuid = GpuUuid("GPU-2");
  lost.time = FromUnixMillis(1'700'000'300'002);
  lost.lost = true;
  AgentReportBatch batch{
      .started = {JobStartReport{
          .job = JobId(8), .pid = 31337, .start_time = FromUnixMillis(1'700'000'100'000)}},
      .exited = {Exit(6, 128 + 15, 15, "killed by signal 15"),
                 Exit(7, 2, std::nullopt, "exited with status 2")},
      .samples = {FullSample(), bare, lost},
      .done_seq = 1234};
  batch.exited[1].leftover_pids = {4242, 4243};  // processes it could not stop (issue #20)
  batch.exited[0].host_usage = HostUsage{.cpu_ms = 3'723'000, .peak_memory_kib = 1'258'291};
  AgentReportBatch back =
      ReadBack(AgentReportBatchFromJson(OverTheWire(AgentReportBatchToJson(batch))));
  ASSERT_EQ(back.started.size(), 1u);
  EXPECT_EQ(back.started[0].job, JobId(8));
  EXPECT_EQ(back.started[0].pid, 31337);
  EXPECT_EQ(back.started[0].start_time, batch.started[0].start_time);
  ASSERT_EQ(back.exited.size(), 2u);
  ExpectSameExit(back.exited[0], batch.exited[0]);
  ExpectSameExit(back.exited[1], batch.exited[1]);
  ASSERT_EQ(back.samples.size(), 3u);
  EXPECT_EQ(back.samples[0], batch.samples[0]);
  EXPECT_EQ(back.samples[1], batch.samples[1]);
  EXPECT_EQ(back.samples[2], batch.samples[2]);
  EXPECT_EQ(back.done_seq, 1234);
}

// Kubernetes mode (issue #27): a reading of the node's pods rides with the batch; no reading
// (an agent of another kind, an older one, or a kubelet that did not answer) is no "pods" at all,
// which the server must not take for a node without pods.
TEST(AgentWireTest, ReportBatchCarriesThePodsOfAReadingAndNoneWithout) {
  AgentReportBatch batch;
  batch.pods = std::vector<KubePod>{
      KubePod{.uid = "0f2c9a4e-1b7d-4c3a-9e8f-5a6b7c8d9e01",
              .pod_namespace = "research",
              .name = "train-0",
              .containers = {{.name = "trainer", .gpus = {GpuUuid("GPU-0"), GpuUuid("GPU-1")}},
                             {.name = "eval", .gpus = {GpuUuid("GPU-2")}}}}};
  GpuSample sample;
  sample.uuid = GpuUuid("GPU-3");
  sample.processes = {GpuProcessSample{
      .pid = 9, .unmanaged = true, .pod = "research/train-0", .container = "eval"}};
  batch.samples = {sample};
  AgentReportBatch back =
      ReadBack(AgentReportBatchFromJson(OverTheWire(AgentReportBatchToJson(batch))));
  EXPECT_EQ(back.pods, batch.pods);
  EXPECT_EQ(back.samples[0].processes[0], sample.processes[0]);

  batch.pods = std::vector<KubePod>{};  // a reading: no pod holds a GPU
  back = ReadBack(AgentReportBatchFromJson(OverTheWire(AgentReportBatchToJson(batch))));
  ASSERT_TRUE(back.pods.has_value());
  EXPECT_TRUE(back.pods->empty());

  batch.pods.reset();
  json none = AgentReportBatchToJson(batch);
  EXPECT_FALSE(none.contains("pods"));
  EXPECT_FALSE(ReadBack(AgentReportBatchFromJson(none)).pods.has_value());

  json broken = AgentReportBatchToJson(AgentReportBatch{.pods = std::vector<KubePod>{KubePod{}}});
  broken["pods"][0].erase("uid");
  EXPECT_NE(ReadError(AgentReportBatchFromJson, broken).find("reports.pods[0].uid"),
            std::string::npos);
}

TEST(AgentWireTest, LaunchCarriesBytesThatAreNotUtf8Exactly) {
  const Job job = LaunchedJob();
  AgentCommand launch{.seq = 7, .kind = AgentCommand::Kind::kLaunch, .job = job, .job_id = job.id};
  const std::string text = WireDump(AgentCommandToJson(launch));
  AgentCommand back = ReadBack(AgentCommandFromJson(json::parse(text)));
  EXPECT_EQ(back.seq, 7);
  EXPECT_EQ(back.kind, AgentCommand::Kind::kLaunch);
  EXPECT_EQ(back.job_id, job.id);
  ASSERT_TRUE(back.job.has_value());
  EXPECT_EQ(back.job->id, job.id);
  EXPECT_EQ(back.job->owner.uid, 1000u);
  EXPECT_EQ(back.job->owner.gid, 100u);
  EXPECT_EQ(back.job->owner.user, "alice");
  EXPECT_EQ(back.job->spec.name, "train");
  EXPECT_EQ(back.job->spec.team, "vision");
  EXPECT_EQ(back.job->spec.argv, job.spec.argv);
  EXPECT_EQ(back.job->spec.workdir, job.spec.workdir);
  EXPECT_EQ(back.job->spec.env, job.spec.env);
  EXPECT_EQ(back.job->allocation, job.allocation);
  ASSERT_TRUE(back.job->spec.array.has_value());
  EXPECT_EQ(back.job->spec.array->array_job, JobId(30));
  EXPECT_EQ(back.job->spec.array->index, 1);
  EXPECT_EQ(back.job->state, JobState::kStarting);
  // The text itself is valid UTF-8: nothing was replaced on the way (WireDump would have).
  EXPECT_EQ(text.find("\xef\xbf\xbd"), std::string::npos);
}

TEST(AgentWireTest, KillAndAckRoundTrip) {
  AgentCommand kill{.seq = 8,
                    .kind = AgentCommand::Kind::kKill,
                    .job = std::nullopt,
                    .job_id = JobId(31),
                    .grace = std::chrono::seconds(25),
                    .cause = "preempted by job 40",
                    .first_signal = 10};
  AgentCommand back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(kill))));
  EXPECT_EQ(back.seq, 8);
  EXPECT_EQ(back.kind, AgentCommand::Kind::kKill);
  EXPECT_EQ(back.job_id, JobId(31));
  EXPECT_EQ(back.grace, std::chrono::seconds(25));
  EXPECT_EQ(back.cause, "preempted by job 40");
  EXPECT_EQ(back.first_signal, 10);
  EXPECT_FALSE(back.job.has_value());

  AgentCommand ack{.seq = 9, .kind = AgentCommand::Kind::kAcknowledgeExit, .job_id = JobId(12)};
  back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(ack))));
  EXPECT_EQ(back.seq, 9);
  EXPECT_EQ(back.kind, AgentCommand::Kind::kAcknowledgeExit);
  EXPECT_EQ(back.job_id, JobId(12));
}

TEST(AgentWireTest, SignalRoundTripsAndRefusesWhatCancelWouldNotSend) {
  AgentCommand signal{
      .seq = 10, .kind = AgentCommand::Kind::kSignal, .job_id = JobId(31), .signal = 10};
  AgentCommand back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(signal))));
  EXPECT_EQ(back.seq, 10);
  EXPECT_EQ(back.kind, AgentCommand::Kind::kSignal);
  EXPECT_EQ(back.job_id, JobId(31));
  EXPECT_EQ(back.signal, 10);
  for (const int bad : {0, 9, 65, -1}) {
    json wire{{"seq", 10}, {"job", 31}, {"kind", "signal"}, {"signal", bad}};
    EXPECT_NE(ReadError(AgentCommandFromJson, wire).find("command.signal"), std::string::npos)
        << bad;
  }
  json missing{{"seq", 10}, {"job", 31}, {"kind", "signal"}};
  EXPECT_NE(ReadError(AgentCommandFromJson, missing).find("signal"), std::string::npos);
}

TEST(AgentWireTest, ExitUsageComesWholeOrNotAtAll) {
  const AgentReportBatch one{.exited = {Exit(6, 0, std::nullopt, "exited with 0")}};
  json half = AgentReportBatchToJson(one);
  half["exited"][0]["cpu_ms"] = 1500;  // without peak_memory_kib
  EXPECT_NE(ReadError(AgentReportBatchFromJson, half).find("cpu_ms"), std::string::npos);
  // An older agent sends neither: the run has no measure.
  json old = AgentReportBatchToJson(one);
  old["exited"][0].erase("cpu_ms");
  old["exited"][0].erase("peak_memory_kib");
  AgentReportBatch back = ReadBack(AgentReportBatchFromJson(old));
  ASSERT_EQ(back.exited.size(), 1u);
  EXPECT_FALSE(back.exited[0].host_usage.has_value());
}

TEST(AgentWireTest, ResetGpuHealthRoundTripsAndNeedsItsGpu) {
  AgentCommand reset{
      .seq = 11, .kind = AgentCommand::Kind::kResetGpuHealth, .gpu = GpuUuid("GPU-abc")};
  AgentCommand back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(reset))));
  EXPECT_EQ(back.seq, 11);
  EXPECT_EQ(back.kind, AgentCommand::Kind::kResetGpuHealth);
  EXPECT_EQ(back.gpu, GpuUuid("GPU-abc"));
  json no_gpu{{"seq", 12}, {"job", 0}, {"kind", "reset_gpu_health"}};
  EXPECT_NE(ReadError(AgentCommandFromJson, no_gpu).find("gpu"), std::string::npos);
}

TEST(AgentWireTest, KillProcessRoundTripsAndNeedsAPid) {
  AgentCommand kill{.seq = 13,
                    .kind = AgentCommand::Kind::kKillProcess,
                    .job_id = JobId(5),
                    .cause = "over its GPU memory",
                    .pid = 4242};
  AgentCommand back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(kill))));
  EXPECT_EQ(back.kind, AgentCommand::Kind::kKillProcess);
  EXPECT_EQ(back.job_id, JobId(5));
  EXPECT_EQ(back.pid, 4242u);
  EXPECT_EQ(back.cause, "over its GPU memory");
  json bad_pid{{"seq", 14}, {"job", 5}, {"kind", "kill_process"}, {"pid", -1}};
  EXPECT_NE(ReadError(AgentCommandFromJson, bad_pid).find("pid"), std::string::npos);
}

TEST(AgentWireTest, ApplyMigLayoutRoundTripsAndNeedsItsGpuAndProfiles) {
  AgentCommand apply{.seq = 15,
                     .kind = AgentCommand::Kind::kApplyMigLayout,
                     .gpu = GpuUuid("GPU-abc"),
                     .mig_profiles = {"3g.40gb", "3g.40gb", "1g.10gb"}};
  AgentCommand back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(apply))));
  EXPECT_EQ(back.seq, 15);
  EXPECT_EQ(back.kind, AgentCommand::Kind::kApplyMigLayout);
  EXPECT_EQ(back.gpu, GpuUuid("GPU-abc"));
  EXPECT_EQ(back.mig_profiles, apply.mig_profiles);
  // An empty layout (no instances) is one; a missing one is not.
  apply.mig_profiles.clear();
  back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(apply))));
  EXPECT_EQ(back.kind, AgentCommand::Kind::kApplyMigLayout);
  EXPECT_TRUE(back.mig_profiles.empty());
  json no_profiles{{"seq", 16}, {"job", 0}, {"kind", "apply_mig_layout"}, {"gpu", "GPU-abc"}};
  EXPECT_NE(ReadError(AgentCommandFromJson, no_profiles).find("command.profiles: missing"),
            std::string::npos);
  json no_gpu{{"seq", 17}, {"job", 0}, {"kind", "apply_mig_layout"}, {"profiles", json::array()}};
  EXPECT_NE(ReadError(AgentCommandFromJson, no_gpu).find("command.gpu"), std::string::npos);
}

// The load forecast's ready GPUs: a count, or null for "no forecast" (the idle wait decides).
TEST(AgentWireTest, KeepGpusReadyRoundTripsACountOrNoForecast) {
  AgentCommand keep{.seq = 18, .kind = AgentCommand::Kind::kKeepGpusReady, .ready_gpus = 3};
  AgentCommand back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(keep))));
  EXPECT_EQ(back.kind, AgentCommand::Kind::kKeepGpusReady);
  EXPECT_EQ(back.ready_gpus, 3);
  keep.ready_gpus.reset();
  EXPECT_EQ(AgentCommandToJson(keep)["gpus"], json(nullptr));
  back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(keep))));
  EXPECT_EQ(back.kind, AgentCommand::Kind::kKeepGpusReady);
  EXPECT_FALSE(back.ready_gpus.has_value());
  json negative{{"seq", 19}, {"job", 0}, {"kind", "keep_gpus_ready"}, {"gpus", -1}};
  EXPECT_NE(ReadError(AgentCommandFromJson, negative).find("command.gpus: -1 GPUs"),
            std::string::npos);
  json text{{"seq", 20}, {"job", 0}, {"kind", "keep_gpus_ready"}, {"gpus", "two"}};
  EXPECT_NE(ReadError(AgentCommandFromJson, text).find("command.gpus: expected an integer"),
            std::string::npos);
}

// What a user typed (any byte: a terminal's keys are not UTF-8 text), with or without a size.
TEST(AgentWireTest, TerminalCommandCarriesEveryByteAndTheSize) {
  std::string keys;
  for (int b = 0; b < 256; ++b) {
    keys += static_cast<char>(b);
  }
  AgentCommand typed{.kind = AgentCommand::Kind::kTerminal,
                     .job_id = JobId(9),
                     .terminal = {.data = keys, .size = TerminalSize{50, 132}}};
  const json wire = OverTheWire(AgentCommandToJson(typed));
  EXPECT_EQ(wire["kind"], "terminal");
  EXPECT_EQ(wire["seq"], 0);
  AgentCommand back = ReadBack(AgentCommandFromJson(wire));
  EXPECT_EQ(back.kind, AgentCommand::Kind::kTerminal);
  EXPECT_EQ(back.job_id, JobId(9));
  EXPECT_EQ(back.terminal.data, keys);
  EXPECT_EQ(back.terminal.size, (TerminalSize{50, 132}));
  typed.terminal = {};  // a keepalive
  back = ReadBack(AgentCommandFromJson(OverTheWire(AgentCommandToJson(typed))));
  EXPECT_EQ(back.terminal.data, "");
  EXPECT_FALSE(back.terminal.size.has_value());
}

TEST(AgentWireTest, TerminalInputIsCheckedNamingTheField) {
  const auto error = [](const json& body) {
    Result<TerminalInput> r = TerminalInputFromJson(body, "body");
    return r.ok() ? std::string() : r.error().message;
  };
  EXPECT_NE(error({{"input_base64", "eA="}}).find("body.input_base64: not base64"),
            std::string::npos);
  EXPECT_NE(error({{"rows", 24}}).find("body.cols: missing"), std::string::npos);
  EXPECT_NE(error({{"rows", 0}, {"cols", 80}}).find("body.rows"), std::string::npos);
  EXPECT_NE(error({{"rows", 24}, {"cols", 70000}}).find("body.cols"), std::string::npos);
  EXPECT_NE(error({{"rows", "24"}, {"cols", 80}}).find("body.rows: expected an integer"),
            std::string::npos);
  const std::string big(kMaxTerminalInputBytes + 1, 'x');
  EXPECT_NE(error({{"input_base64", TerminalInputToJson({.data = big})["input_base64"]}})
                .find("at most 16384"),
            std::string::npos);
  EXPECT_NE(error(json::array()).find("body: expected a JSON object"), std::string::npos);
  EXPECT_EQ(error(json::object()), "");  // a keepalive
}

TEST(AgentWireTest, ReadLogCommandRoundTrips) {
  AgentCommand read{
      .seq = 0,
      .kind = AgentCommand::Kind::kReadLog,
      .job_id = JobId(42),
      .request = 7,
      .log = LogRequest{
          .job = JobId(42), .stream = LogStream::kStderr, .offset = 1 << 20, .limit = 4096}};
  const json wire = OverTheWire(AgentCommandToJson(read));
  EXPECT_EQ(wire["kind"], "read_log");
  AgentCommand back = ReadBack(AgentCommandFromJson(wire));
  EXPECT_EQ(back.kind, AgentCommand::Kind::kReadLog);
  EXPECT_EQ(back.seq, 0);  // reads are not numbered commands
  EXPECT_EQ(back.job_id, JobId(42));
  EXPECT_EQ(back.request, 7);
  EXPECT_EQ(back.log.job, JobId(42));
  EXPECT_EQ(back.log.stream, LogStream::kStderr);
  EXPECT_EQ(back.log.offset, 1 << 20);
  EXPECT_EQ(back.log.limit, 4096);

  json bad = wire;
  bad["stream"] = "both";
  EXPECT_EQ(ReadError(AgentCommandFromJson, bad),
            "command.stream: expected stdout or stderr, got 'both'");
  bad = wire;
  bad["offset"] = -1;
  EXPECT_EQ(ReadError(AgentCommandFromJson, bad), "command.offset: must be >= 0");
  bad = wire;
  bad.erase("request");
  EXPECT_EQ(ReadError(AgentCommandFromJson, bad), "command.request: missing");
}

TEST(AgentWireTest, LogReplyCarriesEveryByteAndErrors) {
  // Every byte value, and lengths around base64's groups of three.
  std::string bytes;
  for (int i = 0; i < 256; ++i) {
    bytes += static_cast<char>(i);
  }
  for (std::size_t length : {std::size_t{0},
                             std::size_t{1},
                             std::size_t{2},
                             std::size_t{3},
                             std::size_t{4},
                             std::size_t{256}}) {
    const std::string data = bytes.substr(0, length);
    AgentLogReply reply{.request = 9,
                        .chunk = LogChunk{.data = data, .size = 1000, .next_offset = 300}};
    AgentLogReply back = ReadBack(AgentLogReplyFromJson(OverTheWire(AgentLogReplyToJson(reply))));
    EXPECT_EQ(back.request, 9);
    ASSERT_TRUE(back.chunk.ok()) << back.chunk.error().ToString();
    EXPECT_EQ(back.chunk->data, data) << "length " << length;
    EXPECT_EQ(back.chunk->size, 1000);
    EXPECT_EQ(back.chunk->next_offset, 300);
  }
  EXPECT_EQ(AgentLogReplyToJson(AgentLogReply{
                .request = 1,
                .chunk = LogChunk{.data = "hi\n", .size = 3, .next_offset = 3}})["data_base64"],
            "aGkK");

  AgentLogReply failed{.request = 4, .chunk = IoError("cannot read log /x: Permission denied")};
  AgentLogReply back = ReadBack(AgentLogReplyFromJson(OverTheWire(AgentLogReplyToJson(failed))));
  EXPECT_EQ(back.request, 4);
  ASSERT_FALSE(back.chunk.ok());
  EXPECT_EQ(back.chunk.error().code, ErrorCode::kIo);
  EXPECT_EQ(back.chunk.error().message, "cannot read log /x: Permission denied");

  json bad = AgentLogReplyToJson(AgentLogReply{.request = 1, .chunk = LogChunk{}});
  bad["data_base64"] = "aGk";
  EXPECT_NE(ReadError(AgentLogReplyFromJson, bad).find("log_reply.data_base64: not base64"),
            std::string::npos);
  bad["data_base64"] = "a=Gk";
  EXPECT_NE(ReadError(AgentLogReplyFromJson, bad).find("log_reply.data_base64: not base64"),
            std::string::npos);
  bad.erase("request");
  EXPECT_EQ(ReadError(AgentLogReplyFromJson, bad), "log_reply.request: missing");
}

TEST(AgentWireTest, ErrorsNameTheFieldPath) {
  json hello = AgentHelloToJson(BareHello());
  hello["node"]["gpus"][0]["uuid"] = 7;
  EXPECT_EQ(ReadError(AgentHelloFromJson, hello), "hello.node.gpus[0].uuid: expected a string");

  hello = AgentHelloToJson(BareHello());
  hello["node"].erase("name");
  EXPECT_EQ(ReadError(AgentHelloFromJson, hello), "hello.node.name: missing");
  hello = AgentHelloToJson(BareHello());
  hello["running"] = json::array({1, "two"});
  EXPECT_EQ(ReadError(AgentHelloFromJson, hello), "hello.running[1]: expected an integer");
  EXPECT_EQ(ReadError(AgentHelloFromJson, json::array()), "hello: expected a JSON object");

  json reports = AgentReportBatchToJson(
      AgentReportBatch{.exited = {Exit(1, 0, std::nullopt, ""), Exit(2, 0, std::nullopt, "")}});
  reports["exited"][1]["exit_code"] = "zero";
  EXPECT_EQ(ReadError(AgentReportBatchFromJson, reports),
            "reports.exited[1].exit_code: expected an integer");
  reports = AgentReportBatchToJson(AgentReportBatch{.samples = {FullSample()}});
  reports["samples"][0]["processes"][0]["pid"] = -1;
  EXPECT_EQ(ReadError(AgentReportBatchFromJson, reports),
            "reports.samples[0].processes[0].pid: out of range");

  json launch = AgentCommandToJson(AgentCommand{
      .seq = 1, .kind = AgentCommand::Kind::kLaunch, .job = LaunchedJob(), .job_id = JobId(31)});
  launch["launch"].erase("argv");
  EXPECT_EQ(ReadError(AgentCommandFromJson, launch), "command.launch.argv: missing");
  launch["launch"]["argv"] = 5;
  EXPECT_NE(ReadError(AgentCommandFromJson, launch).find("command.launch.argv"), std::string::npos);
  launch["launch"]["argv"] = json::array({json{{"hex", "zz"}}});  // not hex digits
  EXPECT_NE(ReadError(AgentCommandFromJson, launch).find("command.launch.argv"), std::string::npos);
}

TEST(AgentWireTest, UnknownCommandKindIsRefusedNamingTheChoices) {
  json reboot{{"seq", 3}, {"job", 0}, {"kind", "reboot"}};
  const std::string message = ReadError(AgentCommandFromJson, reboot);
  EXPECT_NE(message.find("command.kind"), std::string::npos) << message;
  EXPECT_NE(message.find("'reboot'"), std::string::npos) << message;
  EXPECT_NE(message.find("launch, kill, signal, ack, read_log, reset_gpu_health, kill_process, "
                         "apply_mig_layout, keep_gpus_ready or terminal"),
            std::string::npos)
      << message;
}

TEST(AgentWireTest, UnknownFieldsAreIgnoredForNewerAgents) {
  json hello = AgentHelloToJson(BareHello());
  hello["future_field"] = json{{"x", 1}};
  hello["node"]["gpus"][0]["future"] = true;
  AgentHello back = ReadBack(AgentHelloFromJson(hello));
  EXPECT_EQ(back.node, TwoGpuNode());
}

TEST(AgentWireTest, WireDumpReplacesRatherThanThrowsOnBrokenUtf8) {
  json sample = json{{"user",
                      std::string("\xff"
                                  "bob")}};
  std::string text;
  ASSERT_NO_THROW(text = WireDump(sample));
  EXPECT_EQ(json::parse(text)["user"],
            "\xef\xbf\xbd"
            "bob");  // U+FFFD, then the rest
}

}  // namespace
}  // namespace gf
