#include "cli/report_view.h"

#include <algorithm>
#include <regex>
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

// Kubernetes mode's workloads: a table of their own after the users', only where there are any.
TEST(ReportViewTest, WorkloadsHaveATableOnlyOnAKubernetesSite) {
  const auto has = [](const std::vector<ReportTable>& tables) {
    return std::any_of(
        tables.begin(), tables.end(), [](const ReportTable& t) { return t.id == "workloads"; });
  };
  json report = SampleReport();
  EXPECT_FALSE(has(ReportTables(report)));
  const Report pods{.workloads = {WorkloadFigures{.team = "vision",
                                                  .workload = "Deployment/train",
                                                  .usage = UsageFigures{.jobs = 2,
                                                                        .gpu_hours_allocated = 3,
                                                                        .mean_util_pct = 40,
                                                                        .gpu_hours_used = 1.2,
                                                                        .gpu_hours_idle = 0.5}},
                                  WorkloadFigures{.team = "vision"}}};
  report["workloads"] = ReportToJson(pods)["workloads"];
  const std::vector<ReportTable> tables = ReportTables(report);
  ASSERT_TRUE(has(tables));
  const ReportTable& workloads = Find(tables, "workloads");
  ASSERT_EQ(workloads.rows.size(), 2U);
  EXPECT_EQ(workloads.rows[0].size(), workloads.header.size());
  EXPECT_EQ(
      std::vector<std::string>(workloads.rows[0].begin(), workloads.rows[0].begin() + 7),
      (std::vector<std::string>{"Deployment/train", "vision", "2", "3", "40.0", "1.2", "0.5"}));
  EXPECT_EQ(workloads.rows[1][0], "(owner not known)");
  std::ostringstream text;
  PrintReportText(report, text);
  EXPECT_NE(text.str().find("Kubernetes workloads"), std::string::npos) << text.str();
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
  // Three inline charts: the days, the teams and the wasting jobs.
  std::size_t svgs = 0;
  for (std::size_t at = html.find("<svg"); at != std::string::npos;
       at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 3U);
  EXPECT_NE(html.find("2026-11-01: 0.5 GPU-h allocated of 1 observed, 0.2 used"),
            std::string::npos);
  EXPECT_NE(html.find("cv: 0.2 of 0.5 GPU-h used (40.0 %)"), std::string::npos);
  // An A4 print stylesheet that keeps each chart on one page.
  EXPECT_NE(html.find("@page{size:A4"), std::string::npos);
  EXPECT_NE(html.find(".chart{break-inside:avoid"), std::string::npos);
  EXPECT_NE(html.find("<table id=\"teams\">"), std::string::npos);
  EXPECT_NE(html.find("GPU n1/0 (H100) was idle 60 % &lt;now&gt;"), std::string::npos);
}

// One bar of a chart as the HTML draws it: its class, geometry, the figure it carries
// (data-value) and its tooltip.
struct Bar {
  std::string cls;
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;
  std::string value;
  std::string tip;
};

// The bars of the chart section `id` of `html`, in drawing order (legend swatches, which carry
// no figure, left out).
std::vector<Bar> BarsOf(const std::string& html, const std::string& id) {
  const std::size_t begin = html.find("<section class=\"chart\" id=\"" + id + "\">");
  const std::size_t end = html.find("</section>", begin);
  if (begin == std::string::npos || end == std::string::npos) {
    throw std::runtime_error("no chart " + id);
  }
  const std::string section = html.substr(begin, end - begin);
  static const std::regex rect_pattern(
      "<rect class=\"(\\w+)\" x=\"([-\\d.]+)\" y=\"([-\\d.]+)\" width=\"([\\d.]+)\" "
      "height=\"([\\d.]+)\" data-value=\"([^\"]*)\"><title>([^<]*)</title>");
  std::vector<Bar> bars;
  for (auto it = std::sregex_iterator(section.begin(), section.end(), rect_pattern);
       it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    bars.push_back(Bar{.cls = m[1],
                       .x = std::stod(m[2]),
                       .y = std::stod(m[3]),
                       .width = std::stod(m[4]),
                       .height = std::stod(m[5]),
                       .value = m[6],
                       .tip = m[7]});
  }
  return bars;
}

std::vector<std::string> ValuesOf(const std::vector<Bar>& bars, const std::string& cls) {
  std::vector<std::string> values;
  for (const Bar& bar : bars) {
    if (bar.cls == cls) {
      values.push_back(bar.value);
    }
  }
  return values;
}

// The charts' figures are the report's, counted by hand on a small month: two days with samples
// around one without, three teams, two wasting jobs.
TEST(ReportViewTest, HtmlChartsDrawTheReportsFigures) {
  const auto day = [](std::int64_t observed, double allocated, double used) {
    return MinuteFigures{
        .minutes_observed = observed, .gpu_hours_allocated = allocated, .gpu_hours_used = used};
  };
  Report r{.period = "2026-11",
           .start = *ParseMonth("2026-11"),
           .end = *ParseMonth("2026-12"),
           .covered_until = *ParseMonth("2026-11") + std::chrono::days(3),
           .cluster = ClusterFigures{.nodes = 1, .gpus = 4},
           // 240 GPU-minutes observed: 4 GPU-hours of capacity; the 2nd has no sample at all.
           .days = {DayFigures{.day = "2026-11-01", .figures = day(240, 3, 1.5)},
                    DayFigures{.day = "2026-11-02"},
                    DayFigures{.day = "2026-11-03", .figures = day(120, 0.5, 0.25)}},
           .teams = {TeamFigures{.team = "cv",
                                 .usage = UsageFigures{.gpu_hours_allocated = 0.5,
                                                       .mean_util_pct = 40,
                                                       .gpu_hours_used = 0.2}},
                     TeamFigures{.team = "nlp",
                                 .usage = UsageFigures{.gpu_hours_allocated = 2,
                                                       .mean_util_pct = 75,
                                                       .gpu_hours_used = 1.5}},
                     TeamFigures{.team = "a<b>"}},
           .waste_jobs = {WasteJob{.job = 9,
                                   .name = "big-idle",
                                   .team = "nlp",
                                   .user = "bob",
                                   .gpu_hours_allocated = 0.8,
                                   .gpu_hours_idle = 0.4,
                                   .idle_pct = 50},
                          WasteJob{.job = 7,
                                   .name = "eval",
                                   .team = "cv",
                                   .user = "alice",
                                   .gpu_hours_allocated = 0.5,
                                   .gpu_hours_idle = 0.1,
                                   .idle_pct = 20}}};
  std::ostringstream out;
  WriteReportHtml(ReportToJson(r), out);
  const std::string html = out.str();

  // Per day: capacity, allocated and used, the day without samples drawn as nothing.
  const std::vector<Bar> days = BarsOf(html, "chart-days");
  ASSERT_EQ(days.size(), 6U) << html;
  EXPECT_EQ(ValuesOf(days, "cap"), (std::vector<std::string>{"4", "2"}));
  EXPECT_EQ(ValuesOf(days, "alloc"), (std::vector<std::string>{"3", "0.5"}));
  EXPECT_EQ(ValuesOf(days, "used"), (std::vector<std::string>{"1.5", "0.25"}));
  // Heights in proportion to the figures, from one baseline; the 3rd day two slots on.
  EXPECT_NEAR(days[1].height / days[0].height, 3.0 / 4, 0.01);
  EXPECT_NEAR(days[2].height / days[0].height, 1.5 / 4, 0.01);
  EXPECT_NEAR(days[3].height / days[0].height, 2.0 / 4, 0.01);
  EXPECT_NEAR(days[5].height / days[0].height, 0.25 / 4, 0.01);
  for (const Bar& bar : days) {
    EXPECT_NEAR(bar.y + bar.height, days[0].y + days[0].height, 0.11) << bar.tip;
  }
  const double slot = (days[3].x - days[0].x) / 2;
  EXPECT_GT(slot, 0);
  EXPECT_NEAR(days[4].x - days[1].x, 2 * slot, 0.11);
  EXPECT_EQ(days[0].tip, "2026-11-01: 3 GPU-h allocated of 4 observed, 1.5 used");

  // Per team, largest allocation first: used, then allocated-not-used, stacked end to end.
  const std::vector<Bar> teams = BarsOf(html, "chart-teams");
  ASSERT_EQ(teams.size(), 6U) << html;
  EXPECT_EQ(ValuesOf(teams, "used"), (std::vector<std::string>{"1.5", "0.2", "0"}));
  EXPECT_EQ(ValuesOf(teams, "alloc"), (std::vector<std::string>{"0.5", "0.3", "0"}));
  EXPECT_EQ(teams[0].tip, "nlp: 1.5 of 2 GPU-h used (75.0 %)");
  EXPECT_EQ(teams[2].tip, "cv: 0.2 of 0.5 GPU-h used (40.0 %)");
  EXPECT_EQ(teams[4].tip, "a&lt;b&gt;: 0 of 0 GPU-h used (0.0 %)");  // as the HTML has it
  for (std::size_t i = 0; i + 1 < teams.size(); i += 2) {
    EXPECT_NEAR(teams[i].x + teams[i].width, teams[i + 1].x, 0.11) << teams[i].tip;
    EXPECT_EQ(teams[i].y, teams[i + 1].y);
  }
  const double nlp_width = teams[0].width + teams[1].width;
  EXPECT_NEAR((teams[2].width + teams[3].width) / nlp_width, 0.5 / 2, 0.01);
  EXPECT_NEAR(teams[0].width / nlp_width, 1.5 / 2, 0.01);
  EXPECT_LT(html.find(">nlp</text>"), html.find(">cv</text>"));

  // Top wasters: the report's order (most idle first), bars in proportion.
  const std::vector<Bar> waste = BarsOf(html, "chart-waste");
  ASSERT_EQ(waste.size(), 2U) << html;
  EXPECT_EQ(ValuesOf(waste, "idle"), (std::vector<std::string>{"0.4", "0.1"}));
  EXPECT_EQ(waste[0].tip, "job 9 big-idle: 0.4 of 0.8 GPU-h (50 %), bob, nlp");
  EXPECT_EQ(waste[1].tip, "job 7 eval: 0.1 of 0.5 GPU-h (20 %), alice, cv");
  EXPECT_LT(waste[0].y, waste[1].y);
  EXPECT_NEAR(waste[1].width / waste[0].width, 0.1 / 0.4, 0.01);
}

// Without data each chart says so in a sentence instead of drawing an empty frame.
TEST(ReportViewTest, HtmlChartsWithoutFiguresSaySo) {
  Report empty{.period = "2026-01",
               .start = *ParseMonth("2026-01"),
               .end = *ParseMonth("2026-02"),
               .covered_until = *ParseMonth("2026-02")};
  std::ostringstream out;
  WriteReportHtml(ReportToJson(empty), out);
  const std::string html = out.str();
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("No GPU was observed in this period."), std::string::npos);
  EXPECT_NE(html.find("No team ran a job in this period."), std::string::npos);
  EXPECT_NE(html.find("No job held a GPU idle in this period."), std::string::npos);
}

TEST(ReportViewTest, FormatsAndTargets) {
  EXPECT_EQ(*ParseReportFormat("html"), ReportFormat::kHtml);
  EXPECT_EQ(*ParseReportFormat("pdf"), ReportFormat::kPdf);
  auto bad = ParseReportFormat("xml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("use text, json, csv, html or pdf"), std::string::npos);

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
