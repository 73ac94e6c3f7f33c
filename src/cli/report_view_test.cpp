#include "cli/report_view.h"

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/report_json.h"
#include "cli/report_command.h"
#include "report/report.h"

namespace gf {
namespace {

using nlohmann::json;

// A small report through the server's own mapping: what the CLI receives.
json SampleReport() {
  MinuteFigures busy{.minutes_observed = 60,
                     .minutes_allocated = 30,
                     .minutes_idle_allocated = 6,
                     .allocated_pct = 50,
                     .used_pct = 40,
                     .util_pct = 20,
                     .idle_pct = 60,
                     .gpu_hours_allocated = 0.5,
                     .gpu_hours_used = 0.2,
                     .gpu_hours_idle = 0.1,
                     .energy = ChargeFor(3'600'000'000, EnergyPrice{.price_per_kwh = 0.25})};
  Report r{
      .period = "2026-11",
      .start = *ParseMonth("2026-11"),
      .end = *ParseMonth("2026-12"),
      .covered_until = *ParseMonth("2026-11") + std::chrono::days(2),
      .cluster = ClusterFigures{.nodes = 1, .gpus = 2, .figures = busy},
      .nodes = {NodeFigures{.node = "n1", .gpus = 2, .figures = busy}},
      .gpus = {GpuFigures{.node = "n1",
                          .index = 0,
                          .uuid = "g0",
                          .model = "H100-80GB",
                          .figures = busy,
                          .idle = true}},
      .days = {DayFigures{.day = "2026-11-01", .figures = busy}, DayFigures{.day = "2026-11-02"}},
      .teams = {TeamFigures{.team = "cv",
                            .usage = UsageFigures{.jobs = 2,
                                                  .gpu_hours_allocated = 0.5,
                                                  .mean_util_pct = 40,
                                                  .gpu_hours_used = 0.2},
                            .budget_gpu_hours = 10.0,
                            .budget_used_pct = 5.0,
                            .events = EventCounts{.preemptions = 3}},
                TeamFigures{.team = "a<b>"}},
      .users = {UserFigures{
          .team = "cv", .user = "alice", .peak_memory_mib = std::int64_t{12} * 1024}},
      .waste_gpu_hours = 0.1,
      .waste_jobs = {WasteJob{.job = 7,
                              .name = "<script>alert(\"x\")</script>, \"quoted\"\nline",
                              .team = "cv",
                              .user = "alice",
                              .gpu_hours_allocated = 0.5,
                              .gpu_hours_idle = 0.1,
                              .idle_pct = 20}},
      .queue = {QueueFigures{
          .priority = "normal", .runs = 2, .mean_s = 90, .p50_s = 60, .p95_s = 120, .max_s = 120}},
      .events = EventCounts{.preemptions = 3, .gpu_faults = 1},
      .recommendations = {Recommendation{.kind = "idle_gpu",
                                         .subject = "n1/0",
                                         .message = "GPU n1/0 (H100) was idle 60 % <now>"}}};
  return ReportToJson(r);
}

const ReportTable& Find(const std::vector<ReportTable>& tables, const std::string& id) {
  for (const ReportTable& t : tables) {
    if (t.id == id) {
      return t;
    }
  }
  throw std::runtime_error("no table " + id);
}

TEST(ReportViewTest, TablesCarryTheFigures) {
  const std::vector<ReportTable> tables = ReportTables(SampleReport());
  for (const ReportTable& t : tables) {
    for (const auto& row : t.rows) {
      EXPECT_EQ(row.size(), t.header.size()) << t.id;  // every row fits its header
    }
  }
  const ReportTable& cluster = Find(tables, "cluster");
  EXPECT_EQ(cluster.header.back(), "CO2 KG");
  EXPECT_EQ(cluster.header[cluster.header.size() - 2], "COST EUR");
  EXPECT_EQ(
      cluster.rows[0],
      (std::vector<std::string>{
          "1", "2", "60", "50.0", "40.0", "60.0", "0.5", "0.2", "0.1", "1.000", "0.25", "-"}));
  const ReportTable& teams = Find(tables, "teams");
  ASSERT_EQ(teams.rows.size(), 2U);
  EXPECT_EQ(teams.rows[0][0], "cv");
  EXPECT_EQ(teams.rows[0][8], "10");   // budget GPU-h
  EXPECT_EQ(teams.rows[0][9], "5.0");  // budget used %
  EXPECT_EQ(teams.rows[1][8], "-");    // no budget
  EXPECT_EQ(Find(tables, "gpus").rows[0].back(), "idle");
  EXPECT_EQ(Find(tables, "users").rows[0][7], "12.0");  // peak memory, GiB
  const ReportTable& events = Find(tables, "events");
  EXPECT_EQ(events.rows[0][1], "3");
  EXPECT_EQ(events.rows.back()[0], "total");
  EXPECT_EQ(Find(tables, "queue").rows[0],
            (std::vector<std::string>{"normal", "2", "90", "60", "120", "120"}));
}

TEST(ReportViewTest, TextShowsTablesAndAdvice) {
  std::ostringstream out;
  PrintReportText(SampleReport(), out);
  const std::string text = out.str();
  for (const char* want : {"Report for 2026-11",
                           "Teams: GPU-hours allocated vs used",
                           "Queueing delay",
                           "GPU n1/0 (H100) was idle 60 %",
                           "BUDGET GPU-H"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << " in\n" << text;
  }
}

// Issue #24: a period before the server existed printed empty tables without a word.
TEST(ReportViewTest, TextSaysWhenAPeriodHasNoData) {
  Report empty{.period = "2026-01",
               .start = *ParseMonth("2026-01"),
               .end = *ParseMonth("2026-02"),
               .covered_until = *ParseMonth("2026-02"),
               .cluster = ClusterFigures{.nodes = 1, .gpus = 4},
               .teams = {TeamFigures{.team = "cv"}}};
  const json report = ReportToJson(empty);
  EXPECT_FALSE(ReportHasData(report));
  std::ostringstream out;
  PrintReportText(report, out);
  EXPECT_NE(out.str().find("No data for 2026-01: no GPU-minute was recorded and no job ran"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("Teams:"), std::string::npos) << out.str();
  EXPECT_TRUE(ReportHasData(SampleReport()));
}

TEST(ReportViewTest, CsvQuotesByRfc4180) {
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField(""), "");

  std::ostringstream out;
  WriteReportCsv(SampleReport(), out);
  const std::string csv = out.str();
  EXPECT_EQ(csv.rfind("cluster\r\nNODES,GPUS,GPU-MINUTES,", 0), 0U) << csv.substr(0, 80);
  EXPECT_NE(csv.find("\r\nwaste\r\nJOB,NAME,USER,TEAM,"), std::string::npos);
  // A control character in a name (a newline here) is escaped like in every view: the CSV goes
  // to a terminal as often as to a file (issue #20).
  EXPECT_NE(csv.find("7,\"<script>alert(\"\"x\"\")</script>, \"\"quoted\"\"\\x0aline\",alice,cv,"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\r\nrecommendations\r\nKIND,SUBJECT,MESSAGE\r\n"), std::string::npos);
}

TEST(ReportViewTest, HtmlIsOneEscapedFileWithCharts) {
  EXPECT_EQ(HtmlEscape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  std::ostringstream out;
  WriteReportHtml(SampleReport(), out);
  const std::string html = out.str();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0U);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // The job's name is text, not markup; the page has no script and loads nothing.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a&lt;b&gt;"), std::string::npos);  // a team name, in the chart too
  for (const char* external : {"src=", "href=", "url(", "@import"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  // Two inline charts: the days (two days: two bars each) and the teams (two bars each).
  std::size_t svgs = 0;
  for (std::size_t at = html.find("<svg"); at != std::string::npos;
       at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 2U);
  EXPECT_NE(html.find("2026-11-01: allocated 50.0 %, used 20.0 %"), std::string::npos);
  EXPECT_NE(html.find("cv: 0.5 GPU-h allocated, 0.2 used"), std::string::npos);
  EXPECT_NE(html.find("<table id=\"teams\">"), std::string::npos);
  EXPECT_NE(html.find("GPU n1/0 (H100) was idle 60 % &lt;now&gt;"), std::string::npos);
}

TEST(ReportViewTest, FormatsAndTargets) {
  EXPECT_EQ(*ParseReportFormat("html"), ReportFormat::kHtml);
  auto bad = ParseReportFormat("pdf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("use text, json, csv or html"), std::string::npos);

  const Time now = *ParseMonth("2026-11") + std::chrono::days(9);
  EXPECT_EQ(*ReportTarget(ReportFlags{}, now), "/api/v1/report?period=2026-11");
  EXPECT_EQ(*ReportTarget(ReportFlags{.period = "2026-10", .team = "vision & co"}, now),
            "/api/v1/report?period=2026-10&team=vision%20%26%20co");
  auto wrong = ReportTarget(ReportFlags{.period = "11/2026"}, now);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().message.rfind("--period: '11/2026' is not a month", 0), 0U)
      << wrong.error().message;
}

}  // namespace
}  // namespace gf
