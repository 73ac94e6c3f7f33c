#include "core/base64.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(Base64Test, RfcVectors) {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [bytes, text] : vectors) {
    EXPECT_EQ(Base64Encode(bytes), text);
    Result<std::string> back = Base64Decode(text, "data");
    ASSERT_TRUE(back.ok()) << text;
    EXPECT_EQ(*back, bytes);
  }
}

TEST(Base64Test, EveryByteRoundTrips) {
  std::string bytes;
  for (int b = 0; b < 256; ++b) {
    bytes += static_cast<char>(b);
  }
  Result<std::string> back = Base64Decode(Base64Encode(bytes), "data");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
}

TEST(Base64Test, RefusesMalformedTextNamingWhere) {
  for (const char* bad : {"Zg=", "Z===", "Zg==Zg==", "Zm9*", "=Zm9"}) {
    Result<std::string> r = Base64Decode(bad, "input_base64");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("input_base64"), std::string::npos);
  }
}

}  // namespace
}  // namespace gf
