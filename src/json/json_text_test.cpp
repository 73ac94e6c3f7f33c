// ParseJsonText: the depth limit, duplicate keys, syntax errors and their messages; the bounded
// previews. The deep inputs are the ones of issue #20 (a 100,000-deep body crashed the daemon).
#include "json/json_text.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

std::string NestedObjects(std::size_t depth) {
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) {
    text += R"({"a":)";
  }
  text += "1";
  return text + std::string(depth, '}');
}

TEST(ParseJsonTextTest, ReadsWhatJsonParseReads) {
  const std::string text =
      R"({"s":"h\u00e9","i":-3,"u":18446744073709551615,"f":0.25,"b":true,"n":null,)"
      R"("a":[1,[2,{"k":[]}]],"o":{}})";
  Result<json> parsed = ParseJsonText(text, "test");
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  EXPECT_EQ(*parsed, json::parse(text));
  EXPECT_TRUE((*parsed)["u"].is_number_unsigned());
  EXPECT_TRUE((*parsed)["i"].is_number_integer());
}

TEST(ParseJsonTextTest, ReadsABareScalar) {
  EXPECT_EQ(ParseJsonText(" 42 ", "test").value(), json(42));
  EXPECT_EQ(ParseJsonText(R"("x")", "test").value(), json("x"));
}

TEST(ParseJsonTextTest, DepthAtTheLimitIsAccepted) {
  EXPECT_TRUE(ParseJsonText(Nested(kJsonMaxDepth), "test").ok());
  EXPECT_TRUE(ParseJsonText(NestedObjects(kJsonMaxDepth), "test").ok());
}

TEST(ParseJsonTextTest, OneLevelBeyondTheLimitIsRefusedWithTheLimitAndTheFix) {
  for (const std::string& text : {Nested(kJsonMaxDepth + 1), NestedObjects(kJsonMaxDepth + 1)}) {
    Result<json> parsed = ParseJsonText(text, "request body");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(parsed.error().message,
              "request body: JSON nested deeper than 64 levels (the limit); flatten it");
  }
}

TEST(ParseJsonTextTest, AHundredThousandLevelsAreRefusedWithoutRecursion) {
  // 200 KB of brackets: json::parse accepts it, and dump() or == on the result then recurses
  // 100,000 times. Here the parse stops at level 65 and nothing deep is ever built.
  for (const std::string& text :
       {Nested(100'000), NestedObjects(100'000), std::string(100'000, '[')}) {
    Result<json> parsed = ParseJsonText(text, "request body");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().message, HasSubstr("nested deeper than 64 levels"));
  }
}

TEST(ParseJsonTextTest, TheLimitIsAParameter) {
  EXPECT_TRUE(ParseJsonText("[[1]]", "test", JsonLimits{.max_depth = 2}).ok());
  Result<json> parsed = ParseJsonText("[[[1]]]", "test", JsonLimits{.max_depth = 2});
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message,
            "test: JSON nested deeper than 2 levels (the limit); flatten it");
  EXPECT_FALSE(ParseJsonText("[]", "test", JsonLimits{.max_depth = 0}).ok());
  EXPECT_TRUE(ParseJsonText("7", "test", JsonLimits{.max_depth = 0}).ok());
}

TEST(ParseJsonTextTest, DuplicateKeysAreRefusedNamingTheKeyAndTheObject) {
  Result<json> top = ParseJsonText(R"({"command":["a"],"command":["b"]})", "request body");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(top.error().message,
            "request body: duplicate key \"command\" in the top-level object; send each key "
            "once");

  Result<json> nested = ParseJsonText(R"({"env":{"PATH":"/bin","PATH":"/tmp"}})", "request body");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().message,
            "request body: duplicate key \"PATH\" in object env; send each key once");

  Result<json> in_array = ParseJsonText(R"({"nodes":[{},{"gpus":[{"u":1,"u":2}]}]})", "hello");
  ASSERT_FALSE(in_array.ok());
  EXPECT_EQ(in_array.error().message,
            "hello: duplicate key \"u\" in object nodes[1].gpus[0]; send each key once");
}

TEST(ParseJsonTextTest, TheSameKeyInDifferentObjectsIsFine) {
  Result<json> parsed = ParseJsonText(R"({"a":{"x":1},"b":{"x":2},"c":[{"x":3},{"x":4}]})", "t");
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  EXPECT_EQ((*parsed)["c"][1]["x"], 4);
}

TEST(ParseJsonTextTest, AHugeDuplicateKeyIsQuotedShort) {
  const std::string key(100'000, 'k');
  Result<json> parsed = ParseJsonText(R"({")" + key + R"(":1,")" + key + R"(":2})", "body");
  ASSERT_FALSE(parsed.ok());
  EXPECT_LT(parsed.error().message.size(), 200U);
  EXPECT_THAT(parsed.error().message, HasSubstr("kkk...\""));
}

TEST(ParseJsonTextTest, SyntaxErrorsSayNotValidJsonWithoutTheLibraryPrefix) {
  for (const std::string_view text : {"", "{", R"({"a":1,})", "[1] [2]", "nul", "\"\x01\""}) {
    Result<json> parsed = ParseJsonText(text, "request body");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(parsed.error().message, HasSubstr("request body: not valid JSON at line 1"));
    EXPECT_THAT(parsed.error().message, Not(HasSubstr("json.exception")));
  }
  EXPECT_EQ(ParseJsonText("{", "x").error().message,
            "x: not valid JSON at line 1, column 2: syntax error while parsing object key - "
            "unexpected end of input; expected string literal");
}

TEST(ParseJsonTextTest, AHugeBadTokenIsQuotedShort) {
  // nlohmann's message repeats the token it choked on ("last read: '...'"), here 100 KB long.
  const std::string text = "[\"" + std::string(100'000, 'x') + "\x01\"]";
  Result<json> parsed = ParseJsonText(text, "request body");
  ASSERT_FALSE(parsed.ok());
  EXPECT_LT(parsed.error().message.size(), 300U);
}

TEST(JsonPreviewTest, ASmallValueIsWhatDumpWrites) {
  const json v = json::parse(R"({"a":[1,2.5,"x\n"],"b":{"c":null,"d":true},"e":[]})");
  EXPECT_EQ(JsonPreview(v, 60), v.dump());
  EXPECT_EQ(JsonPreview(json(7), 60), "7");
  EXPECT_EQ(JsonPreview(json::object(), 60), "{}");
}

TEST(JsonPreviewTest, ALongValueIsCutWithAnEllipsis) {
  json big = json::array();
  for (int i = 0; i < 300'000; ++i) {
    big.push_back(i);
  }
  const std::string preview = JsonPreview(big, 20);
  EXPECT_EQ(preview, big.dump().substr(0, 20) + "...");
}

TEST(JsonPreviewTest, AHugeStringOrKeyIsCutBeforeItIsEscaped) {
  const std::string long_text(1 << 20, 'y');
  EXPECT_EQ(JsonPreview(json(long_text), 10), "\"yyyyyyyyy...");
  EXPECT_EQ(JsonPreview(json{{long_text, 1}}, 10), "{\"yyyyyyyy...");
}

TEST(JsonPreviewTest, ADeepValueCostsOnlyThePreview) {
  // Built by hand (nlohmann's destructor is iterative); the preview walks 10 levels, not 100,000.
  json deep = json::array();
  for (int i = 0; i < 100'000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  EXPECT_EQ(JsonPreview(deep, 10), "[[[[[[[[[[...");
}

TEST(JsonPreviewTest, CutsAtACharacterBoundary) {
  // "é" is two bytes: cutting after byte 2 would leave half of it.
  EXPECT_EQ(JsonPreview(json("\xC3\xA9\xC3\xA9\xC3\xA9"), 2), "\"...");
  EXPECT_EQ(JsonPreview(json("\xC3\xA9\xC3\xA9\xC3\xA9"), 3), "\"\xC3\xA9...");
}

// tests/fuzz/regressions/job_spec/parse_error_quotes_invalid_utf8: nlohmann's syntax error
// quotes the bytes it read ("last read: '\"sh\"\xd4'"); the error message must still be valid
// UTF-8, or the server's JSON answer of it cannot be written (dump() throws type_error.316).
TEST(JsonTextTest, ASyntaxErrorQuotingBytesThatAreNotUtf8IsStillValidUtf8) {
  const Result<nlohmann::json> bad = ParseJsonText("{\"command\":[\"sh\"\xD4\xE5-c\"]}", "body");
  ASSERT_FALSE(bad.ok());
  EXPECT_NO_THROW((void)nlohmann::json(bad.error().message).dump()) << bad.error().message;
  EXPECT_NE(bad.error().message.find("\\xd4"), std::string::npos) << bad.error().message;
}

TEST(TextPreviewTest, EscapesControlsAndBytesThatAreNotUtf8) {
  EXPECT_EQ(TextPreview("a\x1b[2Jb\xFF", 20), "a\\x1b[2Jb\\xff");
}

TEST(TextPreviewTest, CutsLongTextAtACharacterBoundary) {
  EXPECT_EQ(TextPreview("short", 10), "short");
  EXPECT_EQ(TextPreview("0123456789abc", 10), "0123456789...");
  EXPECT_EQ(TextPreview("ab\xC3\xA9", 3), "ab...");
}

}  // namespace
}  // namespace gf
