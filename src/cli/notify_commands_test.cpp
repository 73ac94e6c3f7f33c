#include "cli/notify_commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gf {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

std::string ErrorOf(const NotifyAddFlags& flags) {
  Result<json> body = SubscriptionBody(flags);
  EXPECT_FALSE(body.ok());
  return body.ok() ? "" : body.error().message;
}

TEST(NotifyCommandsTest, BodiesForEachScope) {
  Result<json> own = SubscriptionBody({.email = "ana@example.com"});
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_EQ(*own,
            json({{"channel", "email"},
                  {"target", "ana@example.com"},
                  {"events", json::array()},
                  {"scope", "user"}}));
  Result<json> team = SubscriptionBody(
      {.webhook = "https://h.example/x", .team = "cv", .events = "job_failed,quota_100"});
  ASSERT_TRUE(team.ok()) << team.error().message;
  EXPECT_EQ((*team)["scope"], "team");
  EXPECT_EQ((*team)["team"], "cv");
  EXPECT_EQ((*team)["events"], json({"job_failed", "quota_100"}));
  Result<json> all = SubscriptionBody({.webhook = "http://h:8080/", .all = true});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)["scope"], "cluster");
}

TEST(NotifyCommandsTest, BadFlagsNameTheFlagAndTheFix) {
  EXPECT_THAT(ErrorOf({}), HasSubstr("give one of --webhook URL or --email ADDRESS"));
  EXPECT_THAT(ErrorOf({.webhook = "http://h/x", .email = "a@b"}), HasSubstr("give one of"));
  EXPECT_THAT(ErrorOf({.webhook = "ftp://h/x"}),
              HasSubstr("--webhook: 'ftp://h/x' is not a webhook URL; give http://"));
  EXPECT_THAT(ErrorOf({.email = "ana"}), HasSubstr("--email: 'ana' is not an e-mail address"));
  EXPECT_THAT(ErrorOf({.email = "a@b", .events = "job_end,jobend"}),
              HasSubstr("--events: event 'jobend' is not one gpufleet notifies of; use job_end"));
  EXPECT_THAT(ErrorOf({.email = "a@b", .team = "cv", .all = true}),
              HasSubstr("--team and --all exclude each other"));
}

}  // namespace
}  // namespace gf
