#include "cli/report_pdf.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gf {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// A temporary directory with executable scripts standing in for Chromium.
class ReportPdfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = (std::filesystem::temp_directory_path() / "gf-pdf-test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(name.data()), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // An executable `name` in the directory running `body` (sh).
  std::string Script(const std::string& name, const std::string& body) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }

  std::string dir_;
};

TEST_F(ReportPdfTest, FindsChromiumFromTheEnvironmentThenPath) {
  const std::string fake = Script("chromium", "exit 0");
  EXPECT_EQ(*FindChromium(fake.c_str(), "/nonexistent"), fake);
  // Not set (or empty): the first chromium on PATH; relative entries are not searched.
  const std::string path = "relative:/nonexistent:" + dir_;
  EXPECT_EQ(*FindChromium(nullptr, path.c_str()), fake);
  EXPECT_EQ(*FindChromium("", path.c_str()), fake);

  // CHROMIUM set to nothing that runs is refused, not replaced by another: it was chosen.
  const auto wrong = FindChromium((dir_ + "/missing").c_str(), path.c_str());
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(wrong.error().message, HasSubstr("CHROMIUM=" + dir_ + "/missing"));
  EXPECT_THAT(wrong.error().message, HasSubstr("apt-get install chromium"));

  const auto none = FindChromium(nullptr, "/nonexistent");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.error().message, HasSubstr("no chromium on PATH"));
  EXPECT_THAT(none.error().message, HasSubstr("set CHROMIUM"));
}

TEST_F(ReportPdfTest, CommandPrintsHeadlessWithAFreshProfile) {
  const auto argv =
      ChromiumPrintCommand("/usr/bin/chromium", "/t/p", "/t/my report#1.html", "/t/r.pdf");
  EXPECT_EQ(argv.front(), "/usr/bin/chromium");
  EXPECT_EQ(argv.back(), "file:///t/my%20report%231.html");
  for (const char* flag : {"--headless",
                           "--no-sandbox",
                           "--user-data-dir=/t/p",
                           "--no-pdf-header-footer",
                           "--print-to-pdf=/t/r.pdf"}) {
    EXPECT_THAT(argv, Contains(std::string(flag)));
  }
}

// The stand-in writes the page it was given, as a "PDF", where --print-to-pdf= says.
TEST_F(ReportPdfTest, ReturnsWhatChromiumPrinted) {
  const std::string fake = Script("chromium",
                                  "for a; do case $a in --print-to-pdf=*) out=${a#*=};; "
                                  "file://*) page=${a#file://};; esac; done\n"
                                  "{ echo '%PDF-1.7'; cat \"$page\"; } >\"$out\"");
  const auto pdf = PrintHtmlToPdf(fake, "<p>hello</p>", Millis(30'000));
  ASSERT_TRUE(pdf.ok()) << pdf.error().message;
  EXPECT_EQ(*pdf, "%PDF-1.7\n<p>hello</p>");
}

TEST_F(ReportPdfTest, ChromiumsFailureIsReportedWithItsOutput) {
  const std::string failing = Script("chromium", "echo 'cannot open display' >&2; exit 3");
  const auto failed = PrintHtmlToPdf(failing, "<p/>", Millis(30'000));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(failed.error().message, HasSubstr("exit 3"));
  EXPECT_THAT(failed.error().message, HasSubstr("cannot open display"));

  // Exit 0 without a PDF is a failure too.
  const auto empty = PrintHtmlToPdf(Script("silent", "exit 0"), "<p/>", Millis(30'000));
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.error().message, HasSubstr("no PDF written"));
}

TEST_F(ReportPdfTest, AHungChromiumIsKilledAtTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const auto hung = PrintHtmlToPdf(Script("hung", "sleep 30"), "<p/>", Millis(300));
  ASSERT_FALSE(hung.ok());
  EXPECT_THAT(hung.error().message, HasSubstr("still running after"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace gf
