#include "config/toml_guard.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"

namespace gf {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Repeat(const std::string& piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) {
    out += piece;
  }
  return out;
}

// "a.a.a = 1" with `segments` segments.
std::string DottedKey(int segments) {
  return "a" + Repeat(".a", segments - 1) + " = 1\n";
}

std::string ErrorOf(const std::string& text) {
  Status s = CheckTomlShape(text, "deep.toml");
  EXPECT_FALSE(s.ok()) << "accepted: " << text.substr(0, 200);
  return s.ok() ? "" : s.error().message;
}

TEST(TomlGuardTest, RealFilesPass) {
  for (const std::string& text : {
           std::string("# nothing\n"),
           std::string("[up]\nlabels = { rack = \"a\", zone = \"eu-1\" }\nport = 7460\n"),
           std::string("[scheduler.user_weights]\nalice = 2.5\n"),
           std::string("[[node]]\nname = \"a\"\nnvlink = [[0, 1], [2, 3]]\n"),
           std::string("[client]\nservers = [\n  \"https://a:7460\",\n  \"https://b:7460\",\n]\n"),
       }) {
    EXPECT_TRUE(CheckTomlShape(text, "ok.toml").ok()) << text;
  }
}

TEST(TomlGuardTest, DeepArraysAreRefusedNamingFileLineAndLimit) {
  EXPECT_EQ(ErrorOf("# one\n\nx = " + Repeat("[", 100'000) + "\n"),
            "deep.toml:3: nested more than 32 levels deep (each table name segment, dotted key "
            "segment, array and inline table is a level); settings need a few: look for an "
            "unclosed '[' or '{', or flatten the file");
  // 31 arrays under a key: 32 levels, the most.
  EXPECT_TRUE(CheckTomlShape("x = " + Repeat("[", 31) + Repeat("]", 31) + "\n", "ok.toml").ok());
  EXPECT_THAT(ErrorOf("x = " + Repeat("[", 32) + Repeat("]", 32) + "\n"),
              StartsWith("deep.toml:1: nested more than 32"));
  // Arrays that close do not add up: many shallow ones are fine.
  EXPECT_TRUE(CheckTomlShape("x = [" + Repeat("[[1]], ", 10'000) + "]\n", "ok.toml").ok());
}

TEST(TomlGuardTest, EveryKindOfNestingCounts) {
  // Headers: 100,000 '[' at a line's start (a header that never ends), and a long dotted one.
  EXPECT_THAT(ErrorOf(Repeat("[", 100'000)), StartsWith("deep.toml:1: nested"));
  EXPECT_THAT(ErrorOf("[" + Repeat("a.", 40) + "a]\n"), StartsWith("deep.toml:1: nested"));
  // Dotted keys, quoted segments included, and keys inside inline tables.
  EXPECT_TRUE(CheckTomlShape(DottedKey(32), "ok.toml").ok());
  EXPECT_THAT(ErrorOf(DottedKey(33)), StartsWith("deep.toml:1: nested"));
  EXPECT_THAT(ErrorOf("\"a\"" + Repeat(".\"a\"", 40) + " = 1\n"), StartsWith("deep.toml:1:"));
  EXPECT_THAT(ErrorOf("x = " + Repeat("{ a = ", 40) + "1" + Repeat("}", 40) + "\n"),
              StartsWith("deep.toml:1: nested"));
  // They add up: a header of 10, a key of 10, 13 arrays = 33.
  EXPECT_THAT(
      ErrorOf("[" + Repeat("a.", 9) + "a]\n" + Repeat("b.", 9) + "b = " + Repeat("[", 13) + "\n"),
      StartsWith("deep.toml:2: nested"));
  // An inline table's next key starts again from the table, not from the last key's depth.
  EXPECT_TRUE(CheckTomlShape("x = { " + Repeat("a.b.c.d = 1, ", 100) + "}\n", "ok.toml").ok());
}

TEST(TomlGuardTest, BracketsAndDotsInStringsAndCommentsAreText) {
  const std::string brackets = Repeat("[{", 100);
  EXPECT_TRUE(CheckTomlShape("x = \"" + brackets + "\"\n", "ok.toml").ok());
  EXPECT_TRUE(CheckTomlShape("x = '" + brackets + "'\n", "ok.toml").ok());
  EXPECT_TRUE(CheckTomlShape("x = \"\"\"\n" + brackets + "\n\\\"\"\"\n\"\"\"\n", "ok.toml").ok());
  EXPECT_TRUE(CheckTomlShape("x = '''\n" + brackets + "\n'''\n", "ok.toml").ok());
  EXPECT_TRUE(CheckTomlShape("x = 1 # " + brackets + "\n", "ok.toml").ok());
  EXPECT_TRUE(CheckTomlShape("\"" + Repeat("a.", 100) + "\" = 1\n", "ok.toml").ok());
  // Dots in values are floats and times, not keys.
  EXPECT_TRUE(
      CheckTomlShape("x = [" + Repeat("1.5, ", 100) + "]\nt = 07:32:00.5\n", "ok.toml").ok());
  // An escaped quote does not end a basic string; a literal string has no escapes.
  EXPECT_TRUE(CheckTomlShape("x = \"\\\"" + brackets + "\"\n", "ok.toml").ok());
  EXPECT_THAT(ErrorOf("x = 'a\\'" + Repeat("[", 40) + "\n"), StartsWith("deep.toml:1: nested"));
  // """a""""" ends the string with two quotes in it; what follows is counted again.
  EXPECT_THAT(ErrorOf("x = \"\"\"a\"\"\"\"\" \ny = " + Repeat("[", 40) + "\n"),
              StartsWith("deep.toml:2: nested"));
  // A string ends at its line: a missing quote does not hide the lines below.
  EXPECT_THAT(ErrorOf("x = \"open\ny = " + Repeat("[", 40) + "\n"),
              StartsWith("deep.toml:2: nested"));
  // Lines inside a multi-line string are counted for the error's line number.
  EXPECT_THAT(ErrorOf("x = '''\n\n'''\ny = " + Repeat("[", 40) + "\n"),
              StartsWith("deep.toml:4: nested"));
}

// tests/fuzz/regressions/settings/ml_literal_string_invalid_utf8: toml11 3.7 read past its buffer
// when it reported a bad UTF-8 sequence inside a '''multi-line literal string'''.
TEST(TomlGuardTest, TextThatIsNotUtf8IsRefusedNamingTheLine) {
  const Status s = CheckTomlShape("[up]\nmps_control = '''/\x83opt/'''\n", "gpufleet.toml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "gpufleet.toml:2:19: not valid UTF-8 (a TOML file must be UTF-8); save the file as "
            "UTF-8");
  EXPECT_TRUE(CheckTomlShape("name = \"j\xC3\xBCrgen\"\n", "f").ok());  // UTF-8 is fine
}

TEST(TomlGuardTest, LargeTextsAreRefused) {
  const std::string big = "# " + std::string(kMaxSettingsBytes, 'x') + "\n";
  EXPECT_EQ(ErrorOf(big),
            "deep.toml: larger than 1048576 bytes (1 MiB), more than any settings file needs; "
            "is it the right file?");
  EXPECT_TRUE(CheckTomlShape(std::string(kMaxSettingsBytes, '\n'), "ok.toml").ok());
}

// The guard is on every parser of settings text: the server's, the client's, the cluster file.
TEST(TomlGuardTest, EverySettingsParserRefusesDeepText) {
  const std::string deep = "x = " + Repeat("[", 100'000) + "\n";
  Result<Config> config = ParseConfig(deep, "gpufleet.toml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.error().message, StartsWith("gpufleet.toml:1: nested more than 32"));
  Result<ClientConfig> client = ParseClientConfig(DottedKey(100'000), "client.toml");
  ASSERT_FALSE(client.ok());
  EXPECT_THAT(client.error().message, StartsWith("client.toml:1: nested more than 32"));
  Result<std::vector<ClusterFileNode>> cluster = ParseClusterFile(deep, "cluster.toml");
  ASSERT_FALSE(cluster.ok());
  EXPECT_THAT(cluster.error().message, HasSubstr("nested more than 32"));
}

}  // namespace
}  // namespace gf
