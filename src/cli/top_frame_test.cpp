#include "cli/top_frame.h"

#include <algorithm>
#include <deque>

#include <gtest/gtest.h>

namespace gf {
namespace {

using nlohmann::json;

constexpr std::int64_t kNowMs = 1'700'000'100'000;

json Gpu(int index, json job, const std::string& user, int util, const std::string& health) {
  return json{{"node", "node-a"},
              {"index", index},
              {"uuid", "GPU-" + std::to_string(index)},
              {"model", "H100-80GB"},
              {"memory_mib", 81920},
              {"health", health},
              {"job", std::move(job)},
              {"user", user},
              {"sample",
               {{"util_gpu_pct", util},
                {"memory_used_mib", 40960},
                {"memory_total_mib", 81920},
                {"temperature_c", 65},
                {"power_mw", 350'000}}}};
}

json Job(int id, const std::string& user, const std::string& state, int gpus) {
  json job{{"id", id},
           {"user", user},
           {"state", state},
           {"gpus", gpus},
           {"name", "train"},
           {"reason", ""},
           {"submit_time_ms", kNowMs - 600'000}};
  if (state == "RUNNING") {
    job["start_time_ms"] = kNowMs - 125'000;
  } else {
    job["reason"] = "waiting for 8 GPUs";
  }
  return job;
}

TopInput Cluster() {
  TopInput in;
  in.gpus = json{{"gpus",
                  {Gpu(0, 12, "alice", 90, "ok"),
                   Gpu(1, 12, "alice", 50, "ok"),
                   Gpu(2, nullptr, "", 0, "failed"),
                   Gpu(3, nullptr, "", 0, "ok")}}};
  in.jobs = json{{"jobs", {Job(13, "alice", "PENDING", 8), Job(12, "alice", "RUNNING", 2)}}};
  in.status = "live";
  in.now_ms = kNowMs;
  return in;
}

std::vector<std::string> Texts(const std::vector<TopLine>& lines) {
  std::vector<std::string> out;
  out.reserve(lines.size());
  for (const auto& line : lines) {
    out.push_back(line.text);
  }
  return out;
}

void ExpectFits(const std::vector<TopLine>& lines, int width, int height) {
  EXPECT_LE(static_cast<int>(lines.size()), height);
  for (const auto& line : lines) {
    EXPECT_LE(static_cast<int>(line.text.size()), width) << line.text;
    for (const char c : line.text) {
      EXPECT_TRUE(c >= 0x20 && c < 0x7F) << "non-printable in: " << line.text;
    }
  }
}

std::optional<TopColor> ColorAt(const TopLine& line, std::string_view text) {
  const std::size_t at = line.text.find(text);
  for (const TopPaint& p : line.paints) {
    if (at != std::string::npos && p.begin <= at && at + text.size() <= p.end) {
      return p.color;
    }
  }
  return std::nullopt;
}

json Process(int pid, json job, const std::string& user, int gpu_mib, double cpu, int host_mib) {
  return json{{"pid", pid},
              {"job", job},
              {"user", user},
              {"unmanaged", job.is_null()},
              {"used_memory_mib", gpu_mib},
              {"cpu_pct", cpu},
              {"host_memory_mib", host_mib},
              {"command", "python train.py --pid " + std::to_string(pid)}};
}

TEST(TopFrameTest, WholeFrameAt80x24) {
  const auto lines = RenderTopFrame(Cluster(), 80, 24);
  ExpectFits(lines, 80, 24);
  const std::vector<std::string> want = {
      "gpufleet top  jobs: 1 running, 1 pending                                    live",
      "GPUs 2/4 allocated, 2 busy, 1 failed  util 35%  mem 160/320G  power 1400W",
      "NODE   GPU MODEL     UTIL                        MEM TEMP POWER STATUS JOB USER",
      "node-a   0 H100-80GB  90% [###############--] 40/80G  65C  350W ok      12 alice",
      "node-a   1 H100-80GB  50% [#########--------] 40/80G  65C  350W ok      12 alice",
      "node-a   2 H100-80GB   0% [-----------------] 40/80G  65C  350W FAILED   - -",
      "node-a   3 H100-80GB   0% [-----------------] 40/80G  65C  350W ok       - -",
      "",
      "JOB USER  STATE   GPUS ELAPSED UTIL NAME/REASON",
      " 12 alice RUNNING    2    2m5s  70% train",
      " 13 alice PENDING    8       -    - waiting for 8 GPUs",
  };
  EXPECT_EQ(Texts(lines), want);
  EXPECT_EQ(lines[0].style, TopStyle::kTitle);
  EXPECT_EQ(lines[2].style, TopStyle::kHeading);
  EXPECT_EQ(lines[5].style, TopStyle::kAlert);  // the failed GPU stands out
  EXPECT_EQ(lines[4].style, TopStyle::kNormal);
}

// nvitop's load colours: light (< 10 %) green, moderate yellow, heavy (>= 75 %) red; memory
// at 10 % / 80 %; health and states in their colours.
TEST(TopFrameTest, ColoursMarkLoadHealthAndState) {
  TopInput in = Cluster();
  in.gpus["gpus"][1]["sample"]["memory_used_mib"] = 409;  // 0.5 % of the card
  const auto lines = RenderTopFrame(in, 80, 24);
  EXPECT_EQ(ColorAt(lines[3], " 90%"), TopColor::kRed);
  EXPECT_EQ(ColorAt(lines[3], "###"), TopColor::kRed);
  EXPECT_EQ(ColorAt(lines[4], " 50%"), TopColor::kYellow);
  EXPECT_EQ(ColorAt(lines[6], "  0%"), TopColor::kGreen);
  EXPECT_EQ(ColorAt(lines[3], "40/80G"), TopColor::kYellow);  // 50 %
  EXPECT_EQ(ColorAt(lines[4], "409M/80G"), TopColor::kGreen) << lines[4].text;
  EXPECT_EQ(ColorAt(lines[5], "FAILED"), TopColor::kRed);
  EXPECT_EQ(ColorAt(lines[6], "ok"), TopColor::kGreen);
  EXPECT_EQ(ColorAt(lines[1], "1 failed"), TopColor::kRed);
  EXPECT_EQ(ColorAt(lines[9], "RUNNING"), TopColor::kGreen);
  EXPECT_EQ(ColorAt(lines[10], "PENDING"), TopColor::kYellow);
  for (const TopLine& line : lines) {
    for (std::size_t i = 0; i < line.paints.size(); ++i) {
      EXPECT_LT(line.paints[i].begin, line.paints[i].end) << line.text;
      EXPECT_LE(line.paints[i].end, line.text.size()) << line.text;
      if (i > 0) {
        EXPECT_LE(line.paints[i - 1].end, line.paints[i].begin) << line.text;
      }
    }
  }
}

// Memory below 1 GiB is in MiB and below 10 GiB has a decimal, not a 0 (409 MiB was "0/80G").
TEST(TopFrameTest, SmallMemoryIsNotRoundedToZero) {
  TopInput in = Cluster();
  in.gpus["gpus"][0]["sample"]["memory_used_mib"] = 409;
  in.gpus["gpus"][1]["sample"]["memory_used_mib"] = 1536;
  for (int i = 2; i < 4; ++i) {
    in.gpus["gpus"][i]["sample"]["memory_used_mib"] = 0;
  }
  const auto texts = Texts(RenderTopFrame(in, 80, 24));
  EXPECT_NE(texts[3].find(" 409M/80G "), std::string::npos) << texts[3];
  EXPECT_NE(texts[4].find(" 1.5/80G "), std::string::npos) << texts[4];
  EXPECT_NE(texts[1].find("mem 1.9/320G"), std::string::npos) << texts[1];
}

// A GPU held by a job that runs nothing on it says so (as `gpufleet gpus` does), and so does a
// GPU running a process that nobody allocated.
TEST(TopFrameTest, ConditionsAreShownOnTheGpuRows) {
  TopInput in = Cluster();
  in.gpus["gpus"][1]["conditions"] = {"allocated_no_process"};
  in.gpus["gpus"][3]["conditions"] = {"unallocated_process"};
  const auto lines = RenderTopFrame(in, 100, 24);
  EXPECT_NE(lines[4].text.find(" idle: no process "), std::string::npos) << lines[4].text;
  EXPECT_EQ(ColorAt(lines[4], "idle: no process"), TopColor::kYellow);
  EXPECT_NE(lines[6].text.find(" unmanaged process "), std::string::npos) << lines[6].text;
  EXPECT_EQ(ColorAt(lines[6], "unmanaged process"), TopColor::kMagenta);
}

// On a wide terminal a reason or a command is shown whole, not cut at a fixed width.
TEST(TopFrameTest, WideScreensShowWholeReasonsAndCommands) {
  TopInput in = Cluster();
  const std::string reason(120, 'r');
  in.jobs["jobs"][0]["reason"] = reason;
  in.gpus["gpus"][0]["sample"]["processes"] = {Process(4242, 12, "alice", 30000, 99.5, 2048)};
  in.gpus["gpus"][0]["sample"]["processes"][0]["command"] = std::string(100, 'c');
  const auto lines = RenderTopFrame(in, 200, 50);
  ExpectFits(lines, 200, 50);
  const auto texts = Texts(lines);
  EXPECT_TRUE(std::any_of(texts.begin(), texts.end(), [&](const std::string& t) {
    return t.ends_with(" " + reason);
  })) << "the reason is cut";
  EXPECT_TRUE(std::any_of(texts.begin(), texts.end(), [](const std::string& t) {
    return t.ends_with(" " + std::string(100, 'c'));
  })) << "the command is cut";
}

TEST(TopFrameTest, ProcessPanelSortedByTheChosenKey) {
  TopInput in = Cluster();
  in.gpus["gpus"][0]["sample"]["processes"] = {Process(300, 12, "alice", 1000, 250.0, 512),
                                               Process(200, 12, "alice", 30000, 5.0, 4096)};
  in.gpus["gpus"][3]["sample"]["processes"] = {Process(100, nullptr, "mallory", 2000, 99.0, 100)};
  in.gpus["gpus"][3]["sample"]["processes"][0]["cpu_pct"] = nullptr;  // first sample: unknown
  const auto panel = [&in](TopSort sort) {
    in.controls.sort = sort;
    const auto texts = Texts(RenderTopFrame(in, 100, 30));
    const auto head = std::find_if(texts.begin(), texts.end(), [](const std::string& t) {
      return t.starts_with("NODE   GPU") && t.find("COMMAND") != std::string::npos;
    });
    return std::vector<std::string>(head, texts.end());
  };
  const std::vector<std::string> by_memory = {
      "NODE   GPU PID USER          JOB GPU-MEM*  CPU HOST-MEM COMMAND",
      "node-a   0 200 alice          12      29G   5%     4.0G python train.py --pid 200",
      "node-a   3 100 mallory unmanaged     2.0G    -     100M python train.py --pid 100",
      "node-a   0 300 alice          12    1000M 250%     512M python train.py --pid 300",
  };
  EXPECT_EQ(panel(TopSort::kGpuMemory), by_memory);
  const auto by_cpu = panel(TopSort::kCpu);
  ASSERT_EQ(by_cpu.size(), 4U);
  EXPECT_NE(by_cpu[0].find("CPU*"), std::string::npos);
  EXPECT_NE(by_cpu[1].find(" 300 "), std::string::npos) << "250 % first";
  EXPECT_NE(by_cpu[3].find(" 100 "), std::string::npos) << "unknown CPU last";
  const auto by_pid = panel(TopSort::kPid);
  EXPECT_NE(by_pid[1].find(" 100 "), std::string::npos);
  EXPECT_NE(by_pid[3].find(" 300 "), std::string::npos);
  const auto lines = RenderTopFrame(in, 100, 30);
  const auto unmanaged = std::find_if(lines.begin(), lines.end(), [](const TopLine& l) {
    return l.text.find("unmanaged ") != std::string::npos && l.text.starts_with("node-a   3");
  });
  ASSERT_NE(unmanaged, lines.end());
  EXPECT_EQ(ColorAt(*unmanaged, "unmanaged"), TopColor::kMagenta);
}

TEST(TopFrameTest, SparklinesFromTheHistoryNewestAtTheRight) {
  TopInput in = Cluster();
  in.history["GPU-0"] = {0, 50, 100};
  in.history["GPU-1"] = std::deque<int>(200, 100);  // more than fits: the newest shown
  const auto lines = RenderTopFrame(in, 120, 24);
  ExpectFits(lines, 120, 24);
  EXPECT_NE(lines[2].text.find("HISTORY"), std::string::npos) << lines[2].text;
  EXPECT_NE(lines[3].text.find(" _+@ "), std::string::npos) << lines[3].text;
  EXPECT_EQ(ColorAt(lines[3], "_+@"), TopColor::kCyan);
  EXPECT_NE(lines[4].text.find("@@@@@@@@"), std::string::npos) << lines[4].text;
  // No history (`top --once`): no column.
  EXPECT_EQ(RenderTopFrame(Cluster(), 120, 24)[2].text.find("HISTORY"), std::string::npos);
  // Narrow: the sparkline is the first column to go.
  EXPECT_NE(RenderTopFrame(in, 80, 24)[2].text.find("HISTORY"), std::string::npos);
  EXPECT_EQ(RenderTopFrame(in, 70, 24)[2].text.find("HISTORY"), std::string::npos);
  EXPECT_NE(RenderTopFrame(in, 70, 24)[2].text.find("MODEL"), std::string::npos);
}

TEST(TopFrameTest, TheLiveViewEndsWithTheKeysOrTheQuestion) {
  TopInput in = Cluster();
  in.live = true;
  auto lines = RenderTopFrame(in, 80, 24);
  ASSERT_EQ(lines.size(), 24U) << "the live view fills the screen";
  EXPECT_EQ(lines.back().text,
            "j/k: select job  c: cancel it  s: sort processes (GPU memory)  q: quit");
  in.controls.selected_job = 13;
  in.controls.confirm_cancel = 13;
  lines = RenderTopFrame(in, 80, 24);
  EXPECT_EQ(lines.back().text, "Cancel job 13? y: yes, any other key: no");
  EXPECT_EQ(lines.back().style, TopStyle::kPrompt);
  EXPECT_EQ(lines[10].style, TopStyle::kSelected);
  EXPECT_EQ(lines[10].text.rfind(" 13 alice PENDING", 0), 0U);
  EXPECT_EQ(lines[9].style, TopStyle::kNormal);
  EXPECT_EQ(TopJobOrder(in.jobs), (std::vector<std::int64_t>{12, 13}));
}

TEST(TopFrameTest, NarrowScreensDropTheLeastUsefulColumnsFirst) {
  const auto at50 = RenderTopFrame(Cluster(), 50, 24);
  ExpectFits(at50, 50, 24);
  EXPECT_EQ(at50[2].text, "NODE   GPU UTIL    MEM TEMP POWER STATUS JOB USER");  // bar, model
  EXPECT_EQ(at50[3].text, "node-a   0  90% 40/80G  65C  350W ok      12 alice");
  const auto at30 = RenderTopFrame(Cluster(), 30, 24);
  ExpectFits(at30, 30, 24);
  EXPECT_EQ(at30[2].text, "GPU UTIL    MEM STATUS JOB");  // also temp, power, node, user
  EXPECT_EQ(at30[5].text, "  2   0% 40/80G FAILED   -");
}

TEST(TopFrameTest, ShortScreensCutAndCountRowsAndKeepTheSelectedJob) {
  TopInput in = Cluster();
  for (int i = 4; i < 40; ++i) {
    in.gpus["gpus"].push_back(Gpu(i, nullptr, "", 10, "ok"));
  }
  for (int i = 20; i < 30; ++i) {
    in.jobs["jobs"].push_back(Job(i, "bob", "PENDING", 1));
  }
  const auto lines = RenderTopFrame(in, 80, 24);
  ExpectFits(lines, 80, 24);
  ASSERT_EQ(lines.size(), 24U);
  const auto texts = Texts(lines);
  // 2 header lines, GPU heading + 14 rows + "more", blank, job heading + 3 rows + "more".
  EXPECT_EQ(texts[16].rfind("node-a  13 ", 0), 0U);
  EXPECT_EQ(texts[17], "... 26 more GPUs");
  EXPECT_EQ(texts[18], "");
  EXPECT_EQ(texts[19].rfind("JOB", 0), 0U);
  EXPECT_EQ(texts[20].rfind(" 12 alice RUNNING", 0), 0U);  // running jobs come first
  EXPECT_EQ(texts[23], "... 9 more jobs");
  // Job 25 is the 8th of the list: the rows shown end with it.
  in.controls.selected_job = 25;
  const auto selected = RenderTopFrame(in, 80, 24);
  EXPECT_EQ(selected[22].text.rfind(" 25 bob", 0), 0U) << selected[22].text;
  EXPECT_EQ(selected[22].style, TopStyle::kSelected);
}

TEST(TopFrameTest, SharedGpuShowsItsJobsAndShares) {
  TopInput in = Cluster();
  json& shared = in.gpus["gpus"][3];
  shared["holders"] = {{{"job", 20}, {"user", "bob"}, {"share_milli", 500}},
                       {{"job", 21}, {"user", "carol"}, {"share_milli", 250}}};
  json& fraction = in.gpus["gpus"][2];
  fraction["holders"] = {{{"job", 22}, {"user", "dan"}, {"share_milli", 250}}};
  fraction["job"] = 22;
  fraction["user"] = "dan";
  const auto lines = RenderTopFrame(in, 80, 24);
  ExpectFits(lines, 80, 24);
  EXPECT_EQ(lines[1].text,
            "GPUs 4/4 allocated, 2 busy, 1 failed  util 35%  mem 160/320G  power 1400W");
  EXPECT_EQ(lines[3].text.substr(lines[3].text.size() - 8), "12 alice");  // whole: as before
  EXPECT_NE(lines[5].text.find(" 22 (0.25) dan"), std::string::npos) << lines[5].text;
  EXPECT_NE(lines[6].text.find(" 2 jobs (0.75) bob,carol"), std::string::npos) << lines[6].text;
}

TEST(TopFrameTest, MissingFieldsAreDashesAndHostileTextIsDefused) {
  TopInput in;
  in.gpus = json{{"gpus",
                  {json{{"index", 0}, {"user", "\x1b[2Jevil"}},  // no sample, no node
                   json{{"index", "x"},
                        {"node", "n\xc3\xa9ud"},
                        {"sample", {{"processes", {{{"user", "bob"}}}}}}},
                   json("not an object")}}};
  in.jobs = json{{"jobs", json::array()}};
  in.now_ms = kNowMs;
  const auto lines = RenderTopFrame(in, 80, 24);
  ExpectFits(lines, 80, 24);
  const auto texts = Texts(lines);
  EXPECT_EQ(texts[1], "GPUs 0/3 allocated, 0 busy  util -  mem 0.0/0G  power -");
  // An escape from a user name is shown, not sent: ESC became "\x1b", as in every view. A
  // process nobody allocated shows its owner, marked '*'.
  const std::string blank = " -        - [--------------------]   -    -     - -        - ";
  EXPECT_EQ(texts[3], "-      0" + blank + "\\x1b[2Jevil");
  EXPECT_EQ(texts[4], "n?ud   x" + blank + "bob*");
  EXPECT_EQ(texts[5], "-      -" + blank + "-");
}

TEST(TopFrameTest, UnknownListsAndTinyScreens) {
  TopInput in;
  in.status = "gpus: cannot reach gpufleet";
  const auto lines = RenderTopFrame(in, 40, 5);
  ExpectFits(lines, 40, 5);
  EXPECT_EQ(lines[0].text, "gpufleet top gpus: cannot reach gpufleet");
  EXPECT_TRUE(RenderTopFrame(Cluster(), 0, 24).empty());
  EXPECT_EQ(RenderTopFrame(Cluster(), 80, 1).size(), 1U);
  const auto three = RenderTopFrame(Cluster(), 10, 3);
  ExpectFits(three, 10, 3);
  EXPECT_EQ(three.size(), 3U);
}

}  // namespace
}  // namespace gf
