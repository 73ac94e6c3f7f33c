// ControllerFixture: a real Controller over SQLite in a temp dir, on a ManualClock, with one node
// (gpu01) played by a FakeAgent; Boot() (re)starts it over the same database, as a restart of
// gpufleet up does. The controller tests derive from it; set the members marked "before Boot"
// in the derived fixture's constructor.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "controller/controller.h"
#include "controller/controller_test_util.h"
#include "store/sqlite/sqlite_store.h"

namespace gf {

class ControllerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / ("gf-ctl-" + std::to_string(getpid()) + "-" +
                                                     test->test_suite_name() + "-" + test->name());
    std::filesystem::remove_all(dir_);
    Boot();
  }
  void TearDown() override {
    controller_.reset();
    std::filesystem::remove_all(dir_);
  }

  // (Re)starts a controller over the same database, as a restart of gpufleet up does.
  void Boot(std::vector<JobId> running = {}, std::vector<JobExitReport> ended = {}) {
    controller_.reset();
    agent_ = std::make_unique<FakeAgent>();
    auto store = OpenSqliteStore(dir_ / "state.db");
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    ControllerOptions options;
    options.tick = Millis(10);
    telemetry_ = std::make_unique<Telemetry>();  // a restart starts with empty telemetry
    options.telemetry = telemetry_.get();
    options.team_of_user = team_of_user_;
    options.policy = policy_;
    options.energy_price = energy_price_;
    options.slurm = slurm_;
    options.kubernetes = kubernetes_;
    options.kube_pod_facts = kube_pod_facts_;
    options.kube_stop_pod = kube_stop_pod_;
    controller_ = std::make_unique<Controller>(std::move(*store), clock_, options);
    ASSERT_TRUE(controller_->Load().ok());
    controller_->AttachAgent(NodeId("gpu01"), agent_.get());
    controller_->Start();
    AgentHello hello{TestNode(gpus_), std::move(running), std::move(ended)};
    // An agent of the server's kind.
    hello.jobs_from = slurm_ != nullptr ? "slurm" : kubernetes_ ? "kubernetes" : "";
    controller_->OnAgentHello(std::move(hello));
    // Reads do not wait for the state thread (view.h): the hello's turn is over once the node
    // is listed.
    ASSERT_TRUE(WaitFor([&] { return !controller_->ListNodes(root_)->empty(); }));
  }

  Job Get(JobId id) { return *controller_->GetJob(root_, id); }

  std::filesystem::path dir_;
  ManualClock clock_;
  Caller root_ = TestCaller(0, "root");
  Caller alice_ = TestCaller(1000, "alice");
  Caller bob_ = TestCaller(1001, "bob");
  std::unique_ptr<FakeAgent> agent_;
  std::unique_ptr<Telemetry> telemetry_;
  int gpus_ = 4;                                     // gpu01's GPUs: before Boot
  std::map<std::string, std::string> team_of_user_;  // before Boot
  PolicyConfig policy_;                              // before Boot
  EnergyPrice energy_price_;                         // before Boot
  SlurmLink* slurm_ = nullptr;                       // companion mode: before Boot
  bool kubernetes_ = false;                          // Kubernetes mode: before Boot
  // Kubernetes mode: what the API server says of pods (ControllerOptions::kube_pod_facts).
  std::function<std::optional<KubePodFacts>(std::string_view)> kube_pod_facts_{};
  // Kubernetes mode: how idle pods are stopped (ControllerOptions::kube_stop_pod).
  std::function<void(KubePodStop, std::function<void(Status)>)> kube_stop_pod_{};
  std::unique_ptr<Controller> controller_;
};

}  // namespace gf
