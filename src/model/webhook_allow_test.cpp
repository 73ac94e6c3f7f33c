#include "model/webhook_allow.h"

#include <string>

#include <gtest/gtest.h>

namespace gf {
namespace {

WebhookAllowList Allow(const std::vector<std::string>& entries) {
  auto list = WebhookAllowList::Parse(entries);
  EXPECT_TRUE(list.ok()) << list.error().message;
  return list.ok() ? *list : WebhookAllowList();
}

TEST(WebhookAllowTest, LoopbackLinkLocalAndUnspecifiedAreRefusedByDefault) {
  const WebhookAllowList none;
  for (const std::string url : {"http://127.0.0.1:8080/x",
                                "http://127.9.9.9/",
                                "http://[::1]:80/",
                                "http://localhost/",
                                "http://api.LOCALHOST./",
                                "http://169.254.169.254/latest/meta-data",
                                "http://[fe80::1%25eth0]/",
                                "http://0.0.0.0:22/",
                                "http://[::]/",
                                "http://[::ffff:127.0.0.1]/",
                                "http://2130706433/",
                                "http://127.1/",
                                "http://0x7f.1/",
                                "https://hooks.example.com@127.0.0.1/"}) {
    const Status checked = none.CheckUrl(url);
    ASSERT_FALSE(checked.ok()) << url;
    EXPECT_EQ(checked.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(checked.error().message.find("[notify] webhook_allow"), std::string::npos);
  }
  EXPECT_EQ(none.CheckUrl("http://127.0.0.1:8080/x").error().message,
            "host 127.0.0.1, a loopback address: webhooks may not reach it (the "
            "server would send requests to itself or its network's services); an admin may "
            "allow it with [notify] webhook_allow = [\"127.0.0.1\"] in the server's settings");
  EXPECT_NE(none.CheckUrl("http://169.254.169.254/").error().message.find("link-local"),
            std::string::npos);
}

TEST(WebhookAllowTest, OtherAddressesAndNamesPassAtSubscription) {
  const WebhookAllowList none;
  for (const std::string url : {"https://hooks.example.com/x",
                                "http://10.1.2.3:9000/",
                                "http://192.168.1.5/",
                                "http://[2001:db8::1]/",
                                "http://h/"}) {
    EXPECT_TRUE(none.CheckUrl(url).ok()) << url;
  }
}

TEST(WebhookAllowTest, ListedAddressesBlocksAndNamesAreAllowed) {
  const WebhookAllowList list = Allow({"127.0.0.1", "fe80::/10", "hooks.lab", "*.test"});
  EXPECT_TRUE(list.CheckUrl("http://127.0.0.1:8080/").ok());
  EXPECT_TRUE(list.CheckUrl("http://[::ffff:127.0.0.1]/").ok());  // the same address
  EXPECT_FALSE(list.CheckUrl("http://127.0.0.2/").ok());          // not the block
  EXPECT_FALSE(list.CheckUrl("http://[::1]/").ok());
  EXPECT_TRUE(list.CheckUrl("http://[fe80::abcd]/").ok());
  EXPECT_TRUE(list.CheckAddress("hooks.lab", "127.0.0.1").ok());  // a listed name, any address
  EXPECT_TRUE(list.CheckAddress("Receiver.TEST", "::1").ok());
  EXPECT_FALSE(list.CheckAddress("test", "::1").ok());  // "*.test" is the names under it
  EXPECT_TRUE(Allow({"127.0.0.0/8"}).CheckUrl("http://127.9.9.9/").ok());
  EXPECT_TRUE(Allow({"localhost"}).CheckUrl("http://localhost:9000/").ok());
}

// The delivery check judges the addresses a name resolves to: the name itself proves nothing.
TEST(WebhookAllowTest, ANameResolvingToLoopbackIsRefusedAtDelivery) {
  const WebhookAllowList none;
  const Status refused = none.CheckAddress("hooks.example.com", "127.0.0.1");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message.rfind(
                "host hooks.example.com resolves to 127.0.0.1, a loopback address", 0),
            0U)
      << refused.error().message;
  EXPECT_FALSE(none.CheckAddress("h", "::ffff:169.254.169.254").ok());
  EXPECT_FALSE(none.CheckAddress("h", "0.0.0.0").ok());
  EXPECT_TRUE(none.CheckAddress("h", "93.184.216.34").ok());
  EXPECT_TRUE(none.CheckAddress("h", "2001:db8::1").ok());
  EXPECT_TRUE(Allow({"127.0.0.1"}).CheckAddress("hooks.example.com", "127.0.0.1").ok());
}

TEST(WebhookAllowTest, BadEntriesNameTheEntry) {
  for (const std::string bad : {"10.0.0.0/33", "::1/129", "10.0.0.0/x", "", "a b", "*.", "h/8"}) {
    auto list = WebhookAllowList::Parse({bad});
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_EQ(list.error().message.rfind("'" + bad + "'", 0), 0U) << list.error().message;
  }
}

TEST(WebhookAllowTest, UrlHostDropsUserinfoPortAndBrackets) {
  EXPECT_EQ(WebhookUrlHost("http://a:b@[::1]:80/x"), "::1");
  EXPECT_EQ(WebhookUrlHost("https://Hooks.Example.com./x?y"), "hooks.example.com");
  EXPECT_EQ(WebhookUrlHost("http://h:9000?q"), "h");
}

}  // namespace
}  // namespace gf
