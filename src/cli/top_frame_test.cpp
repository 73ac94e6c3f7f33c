#include "cli/top_frame.h"

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

TEST(TopFrameTest, WholeFrameAt80x24) {
  const auto lines = RenderTopFrame(Cluster(), 80, 24);
  ExpectFits(lines, 80, 24);
  const std::vector<std::string> want = {
      "gpufleet top                                                       live  q: quit",
      "GPUs 2/4 busy  util 35%  mem 160/320G  power 1400W  jobs 1 running 1 pending",
      "NODE   GPU MODEL     UTIL                        MEM TEMP POWER HEALTH JOB USER",
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

TEST(TopFrameTest, NarrowScreensDropTheLeastUsefulColumnsFirst) {
  const auto at50 = RenderTopFrame(Cluster(), 50, 24);
  ExpectFits(at50, 50, 24);
  EXPECT_EQ(at50[2].text, "NODE   GPU UTIL    MEM TEMP POWER HEALTH JOB USER");  // bar, model
  EXPECT_EQ(at50[3].text, "node-a   0  90% 40/80G  65C  350W ok      12 alice");
  const auto at30 = RenderTopFrame(Cluster(), 30, 24);
  ExpectFits(at30, 30, 24);
  EXPECT_EQ(at30[2].text, "GPU UTIL    MEM HEALTH JOB");  // also temp, power, node, user
  EXPECT_EQ(at30[5].text, "  2   0% 40/80G FAILED   -");
}

TEST(TopFrameTest, ShortScreensCutAndCountRows) {
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
}

// A shared GPU names its jobs and their total share, counts once as busy, and each of its
// jobs counts as running.
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
            "GPUs 4/4 busy  util 35%  mem 160/320G  power 1400W  jobs 4 running 1 pending");
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
  EXPECT_EQ(texts[1], "GPUs 0/3 busy  util -  mem 0/0G  power -  jobs 0 running 0 pending");
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
