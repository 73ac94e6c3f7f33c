// Notifications in the controller (notifications.cpp): who may subscribe to what, and which
// notifications reach which subscriptions, delivered for real by a Notifier through a
// stand-in sendmail that keeps each message as a file. The controller runs on a ManualClock;
// the test plays the agent (FakeAgent).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller.h"
#include "controller/controller_test_util.h"
#include "notify/notifier.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {
namespace {

using ::testing::HasSubstr;

JobSpec Spec(int gpus, PriorityClass priority = PriorityClass::kNormal) {
  JobSpec s;
  s.name = "train";
  s.argv = {"sleep", "100"};
  s.workdir = "/tmp";
  s.request.gpus = gpus;
  s.priority = std::move(priority);
  return s;
}

Subscription Mail(std::string address,
                  SubscriptionScope scope = SubscriptionScope::kUser,
                  std::string team = "") {
  return Subscription{.scope = scope,
                      .team = std::move(team),
                      .channel = NotifyChannel::kEmail,
                      .target = std::move(address)};
}

class NotificationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf-notify-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "mail");
    // Each message in its own file, named by a counter so that the order is kept, and moved
    // into place whole (the test reads the folder while sendmail runs).
    const std::string mail = (dir_ / "mail").string();
    std::ofstream(dir_ / "sendmail")
        << "#!/bin/sh\nn=$(ls '" << mail << "' | wc -l)\ncat > '" << mail << "/.new' && mv '"
        << mail << "/.new' '" << mail << "'/$(printf %05d $n)\n";
    std::filesystem::permissions(dir_ / "sendmail", std::filesystem::perms::owner_all);
    // Team cv (alice's) has a 10 GPU-hour budget; bob is in nlp.
    policy_.teams = {TeamPolicy{.name = "cv", .guaranteed_gpus = 4, .gpu_hour_budget = 10.0},
                     TeamPolicy{.name = "nlp"}};
    team_of_user_ = {{"alice", "cv"}, {"bob", "nlp"}};
  }
  void TearDown() override {
    controller_.reset();
    notifier_.reset();
    std::filesystem::remove_all(dir_);
  }

  // (Re)starts the controller; `running`: the jobs the agent still runs, as its hello says.
  void Boot(std::vector<JobId> running = {}) {
    controller_.reset();
    notifier_.reset();
    // Webhooks are delivered by the notifier's own tests; here every delivery is e-mail, and a
    // webhook attempt would fail (not retried).
    notifier_ = std::make_unique<Notifier>(
        NotifierOptions{.sendmail = (dir_ / "sendmail").string()},
        [](const WebhookRequest& request) -> Result<int> {
          return FailedPrecondition("no webhook client in this test: " + request.url);
        });
    agent_ = std::make_unique<FakeAgent>();
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    ControllerOptions options;
    options.tick = Millis(10);
    options.telemetry = &telemetry_;
    options.policy = policy_;
    options.team_of_user = team_of_user_;
    options.notifier = notifier_.get();
    options.webhook_allow = webhook_allow_;
    controller_ = std::make_unique<Controller>(std::move(*store), clock_, options);
    ASSERT_TRUE(controller_->Load().ok());
    controller_->AttachAgent(NodeId("gpu01"), agent_.get());
    controller_->Start();
    controller_->OnAgentHello(AgentHello{TestNode(4), std::move(running), {}});
  }

  // Every message sendmail got, oldest first.
  std::vector<std::string> Mails() const {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir_ / "mail")) {
      if (!entry.path().filename().string().starts_with(".")) {  // not one being written
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    std::vector<std::string> mails;
    for (const auto& file : files) {
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      mails.push_back(text.str());
    }
    return mails;
  }
  // Waits for `count` messages (the notifier's thread delivers them) and returns them.
  std::vector<std::string> MailsOnce(std::size_t count) {
    EXPECT_TRUE(WaitFor([&] { return Mails().size() >= count; })) << Mails().size();
    return Mails();
  }

  Subscription MustSubscribe(const Caller& caller, Subscription request) {
    auto sub = controller_->CreateSubscription(caller, std::move(request));
    EXPECT_TRUE(sub.ok()) << sub.error().ToString();
    return sub.ok() ? *sub : Subscription{};
  }

  JobId RunJob(const Caller& caller, JobSpec spec) {
    auto job = controller_->Submit(caller, std::move(spec));
    EXPECT_TRUE(job.ok()) << job.error().ToString();
    EXPECT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kStarting); }));
    controller_->OnJobStarted(job->id, 100, clock_.Now());
    EXPECT_TRUE(WaitFor([&] { return StateIs(job->id, JobState::kRunning); }));
    return job->id;
  }
  void Exit(JobId id, int code, JobState expect) {
    controller_->OnJobExited(JobExitReport{id, code, std::nullopt, clock_.Now(), "exited"});
    EXPECT_TRUE(WaitFor([&] { return StateIs(id, expect); }));
  }
  bool StateIs(JobId id, JobState state) { return controller_->GetJob(root_, id)->state == state; }

  std::filesystem::path dir_;
  ManualClock clock_;
  Telemetry telemetry_;
  PolicyConfig policy_;
  std::map<std::string, std::string> team_of_user_;
  WebhookAllowList webhook_allow_;  // [notify] webhook_allow; set before Boot()
  std::unique_ptr<Notifier> notifier_;
  std::unique_ptr<FakeAgent> agent_;
  std::unique_ptr<Controller> controller_;
  Caller root_ = TestCaller(0, "root");
  Caller alice_ = TestCaller(1000, "alice");
  Caller bob_ = TestCaller(1001, "bob");
};

// Issue #20: a webhook is a request the root daemon makes. One aimed at the server itself or
// its link (loopback, link-local: the cloud metadata service) is refused when subscribed,
// naming the field and the setting, unless [notify] webhook_allow lets it.
TEST_F(NotificationsTest, WebhooksToLoopbackAndLinkLocalNeedTheAllowList) {
  Boot();
  for (const std::string url : {"http://127.0.0.1:8080/admin",
                                "http://localhost:9000/",
                                "http://169.254.169.254/latest/meta-data/",
                                "http://[::1]/"}) {
    auto refused = controller_->CreateSubscription(
        alice_, Subscription{.channel = NotifyChannel::kWebhook, .target = url});
    ASSERT_FALSE(refused.ok()) << url;
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(refused.error().message, HasSubstr("target: host "));
    EXPECT_THAT(refused.error().message, HasSubstr("[notify] webhook_allow"));
  }
  EXPECT_TRUE(controller_->ListSubscriptions(root_)->empty());
  MustSubscribe(
      alice_,
      Subscription{.channel = NotifyChannel::kWebhook, .target = "https://hooks.example.com/x"});

  webhook_allow_ = *WebhookAllowList::Parse({"127.0.0.0/8"});
  Boot();
  MustSubscribe(
      alice_,
      Subscription{.channel = NotifyChannel::kWebhook, .target = "http://127.0.0.1:8080/hook"});
  EXPECT_FALSE(controller_
                   ->CreateSubscription(alice_,
                                        Subscription{.channel = NotifyChannel::kWebhook,
                                                     .target = "http://169.254.169.254/"})
                   .ok());
}

TEST_F(NotificationsTest, WhoMaySubscribeToWhat) {
  Boot();
  const Subscription own = MustSubscribe(alice_, Mail("alice@example.com"));
  EXPECT_THAT(own.id, ::testing::StartsWith("sub-"));
  EXPECT_EQ(own.owner, "alice");
  const Subscription team =
      MustSubscribe(alice_, Mail("cv@example.com", SubscriptionScope::kTeam, "cv"));
  auto other_team = controller_->CreateSubscription(
      bob_, Mail("bob@example.com", SubscriptionScope::kTeam, "cv"));
  ASSERT_FALSE(other_team.ok());
  EXPECT_EQ(other_team.error().code, ErrorCode::kPermissionDenied);
  EXPECT_THAT(other_team.error().message, HasSubstr("bob is not a member of team cv"));
  auto all = controller_->CreateSubscription(alice_, Mail("a@b", SubscriptionScope::kCluster));
  ASSERT_FALSE(all.ok());
  EXPECT_THAT(all.error().message, HasSubstr("--all: only an admin"));
  auto bad = controller_->CreateSubscription(
      alice_, Subscription{.channel = NotifyChannel::kWebhook, .target = "ftp://x/y"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(bad.error().message, HasSubstr("target: 'ftp://x/y' is not a webhook URL"));
  const Subscription cluster = MustSubscribe(root_, Mail("ops@b", SubscriptionScope::kCluster));
  MustSubscribe(root_, Mail("ops@b", SubscriptionScope::kTeam, "nlp"));  // admins: any team

  EXPECT_EQ(controller_->ListSubscriptions(alice_)->size(), 2u);
  EXPECT_EQ(controller_->ListSubscriptions(bob_)->size(), 0u);
  EXPECT_EQ(controller_->ListSubscriptions(root_)->size(), 4u);
  auto not_bobs = controller_->DeleteSubscription(bob_, own.id);
  ASSERT_FALSE(not_bobs.ok());
  EXPECT_EQ(not_bobs.error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(controller_->DeleteSubscription(alice_, own.id).ok());
  ASSERT_TRUE(controller_->DeleteSubscription(root_, cluster.id).ok());  // admins: any

  Boot();  // stored: the same ones after a restart
  auto after = controller_->ListSubscriptions(root_);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 2u);
  EXPECT_TRUE(
      std::any_of(after->begin(), after->end(), [&](const Subscription& s) { return s == team; }));
}

// #SBATCH --mail-type (issue #23): a subscription to one job of one's own, delivered its end,
// and removed (stored too) once the job has ended; another user's job, or an ended one, refused.
TEST_F(NotificationsTest, AJobSubscriptionHearsItsJobEndAndGoesWithIt) {
  Boot();
  const JobId job = RunJob(alice_, Spec(1));
  Subscription request = Mail("alice@example.com", SubscriptionScope::kJob);
  request.job = job;
  request.kinds = {NotifyKind::kJobEnd, NotifyKind::kJobFailed};
  const Subscription sub = MustSubscribe(alice_, request);
  EXPECT_EQ(sub.job, job);
  auto bobs = controller_->CreateSubscription(bob_, request);
  ASSERT_FALSE(bobs.ok());
  EXPECT_EQ(bobs.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(controller_->ListSubscriptions(alice_)->size(), 1u);
  Boot({job});  // stored with its job
  ASSERT_EQ(controller_->ListSubscriptions(alice_)->size(), 1u);
  EXPECT_EQ((*controller_->ListSubscriptions(alice_))[0].job, job);

  Exit(job, 0, JobState::kCompleted);
  const std::vector<std::string> mails = MailsOnce(1);
  ASSERT_EQ(mails.size(), 1u);
  EXPECT_THAT(mails[0], HasSubstr("job " + std::to_string(job.value())));
  EXPECT_TRUE(WaitFor([&] { return controller_->ListSubscriptions(alice_)->empty(); }));
  auto ended = controller_->CreateSubscription(alice_, request);
  ASSERT_FALSE(ended.ok());
  EXPECT_THAT(ended.error().message, HasSubstr("has yet to end"));
  Boot();  // its removal was stored
  EXPECT_TRUE(controller_->ListSubscriptions(alice_)->empty());
}

TEST_F(NotificationsTest, JobEndsAndFailuresReachTheOwnerAndTheTeamOnly) {
  Boot();
  MustSubscribe(alice_, Mail("alice@example.com"));
  Subscription failures = Mail("cv@example.com", SubscriptionScope::kTeam, "cv");
  failures.kinds = {NotifyKind::kJobFailed};
  MustSubscribe(alice_, failures);
  MustSubscribe(bob_, Mail("bob@example.com"));  // bob's own jobs: none here

  JobSpec cv = Spec(1);
  cv.team = "cv";
  const JobId ok = RunJob(alice_, cv);
  Exit(ok, 0, JobState::kCompleted);
  std::vector<std::string> mails = MailsOnce(1);
  ASSERT_EQ(mails.size(), 1u);
  EXPECT_THAT(mails[0], HasSubstr("To: alice@example.com\n"));
  EXPECT_THAT(
      mails[0],
      HasSubstr("Subject: [gpufleet] job " + std::to_string(ok.value()) + " (train) completed"));
  EXPECT_THAT(mails[0], HasSubstr("event: job_end\n"));

  const JobId bad = RunJob(alice_, cv);
  Exit(bad, 3, JobState::kFailed);
  mails = MailsOnce(3);
  ASSERT_EQ(mails.size(), 3u);  // alice's, and the team's failures-only one
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_THAT(mails[i], HasSubstr("event: job_failed\n"));
    EXPECT_THAT(mails[i], HasSubstr("job: " + std::to_string(bad.value()) + "\n"));
    EXPECT_THAT(mails[i], HasSubstr("team: cv\n"));
  }
  EXPECT_THAT(mails[1] + mails[2], HasSubstr("To: cv@example.com"));
  for (const std::string& mail : mails) {
    EXPECT_THAT(mail, ::testing::Not(HasSubstr("bob@example.com")));
  }
}

TEST_F(NotificationsTest, APreemptionIsNotified) {
  policy_.teams.clear();  // no quotas: the stock classes alone decide (high preempts low)
  Boot();
  MustSubscribe(alice_, Mail("alice@example.com"));
  const JobId low = RunJob(alice_, Spec(4, PriorityClass::kLow));
  clock_.Advance(std::chrono::minutes(11));  // past the minimum run time
  ASSERT_TRUE(controller_->Submit(bob_, Spec(2, PriorityClass::kHigh)).ok());
  std::vector<std::string> mails = MailsOnce(1);
  ASSERT_EQ(mails.size(), 1u);
  EXPECT_THAT(mails[0], HasSubstr("event: preempted\n"));
  EXPECT_THAT(mails[0], HasSubstr("job: " + std::to_string(low.value()) + "\n"));
  EXPECT_THAT(mails[0], HasSubstr("goes back to the queue"));
}

TEST_F(NotificationsTest, BudgetAt80And100PercentOncePerPeriodAcrossARestart) {
  Boot();
  MustSubscribe(alice_, Mail("cv@example.com", SubscriptionScope::kTeam, "cv"));
  JobSpec cv = Spec(4);
  cv.team = "cv";
  const JobId job = RunJob(alice_, cv);
  clock_.Advance(std::chrono::minutes(121));  // 4 GPUs × 2h01 = 8.07 of 10 GPU-hours
  std::vector<std::string> mails = MailsOnce(1);
  ASSERT_EQ(mails.size(), 1u);
  EXPECT_THAT(mails[0], HasSubstr("event: quota_80\n"));
  EXPECT_THAT(mails[0], HasSubstr("team cv used 8.0667 of its 10 GPU-hour budget"));
  clock_.Advance(std::chrono::minutes(30));  // 10.07
  mails = MailsOnce(2);
  ASSERT_EQ(mails.size(), 2u);
  EXPECT_THAT(mails[1], HasSubstr("event: quota_100\n"));
  Exit(job, 0, JobState::kCompleted);  // its run is stored: the restart counts it
  ASSERT_TRUE(WaitFor([&] { return Mails().size() == 3; }));  // alice has no own subscription:
  EXPECT_THAT(Mails()[2], HasSubstr("event: job_end"));       // the team one hears the end

  Boot();
  clock_.Advance(std::chrono::minutes(5));
  JobSpec again = Spec(1);
  again.team = "cv";
  ASSERT_TRUE(controller_->Submit(alice_, again).ok());  // a turn or two to check budgets in
  ASSERT_TRUE(WaitFor([&] { return agent_->launched().size() == 1; }));
  controller_.reset();
  notifier_->Stop();              // delivers what is queued
  EXPECT_EQ(Mails().size(), 3u);  // no second quota_80 or quota_100
}

}  // namespace
}  // namespace gf
