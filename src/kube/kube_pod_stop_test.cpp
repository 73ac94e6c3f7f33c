#include "kube/kube_pod_stop.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/kube_pod.h"

namespace gf {
namespace {

KubePodStop Notebook(bool scale_owner, std::string workload = "") {
  return KubePodStop{.pod_namespace = "dev",
                     .name = "notebook-alice",
                     .uid = "00000000-002a-4000-8000-0000000000aa",
                     .workload = std::move(workload),
                     .scale_owner = scale_owner};
}

TEST(KubePodStopTest, IsReadFromThePodsJob) {
  EnvList env = KubePodJobEnv(KubePod{.uid = "00000000-002a-4000-8000-0000000000aa",
                                      .pod_namespace = "dev",
                                      .name = "notebook-alice"});
  SetEnvValue(env, kPodWorkloadEnv, "Deployment/notebooks");
  EXPECT_EQ(KubePodStopOfJob(env, /*scale_owner=*/true),
            Notebook(/*scale_owner=*/true, "Deployment/notebooks"));
  EXPECT_EQ(KubePodStopOfJob({{"CUDA_VISIBLE_DEVICES", "0"}}, false), std::nullopt);
}

// delete_pod: a DELETE with the pod's UID as precondition, whatever its owner.
TEST(KubePodStopTest, DeletingAPodNamesItsUidAsPrecondition) {
  for (const std::string workload : {"", "Deployment/notebooks", "Job/train"}) {
    const Result<KubeApiRequest> request = KubeStopRequest(Notebook(false, workload));
    ASSERT_TRUE(request.ok()) << request.error().message;
    EXPECT_EQ(request->method, "DELETE");
    EXPECT_EQ(request->target, "/api/v1/namespaces/dev/pods/notebook-alice");
    EXPECT_EQ(request->content_type, "application/json");
    const nlohmann::json body = nlohmann::json::parse(request->body);
    EXPECT_EQ(body["kind"], "DeleteOptions");
    EXPECT_EQ(body["preconditions"]["uid"], "00000000-002a-4000-8000-0000000000aa");
    EXPECT_EQ(KubeStopDone(Notebook(false, workload)), "pod dev/notebook-alice deleted");
  }
}

// scale_owner: the scale subresource of a Deployment, StatefulSet or ReplicaSet; any other pod
// is deleted (its controller would not make another, or none is known).
TEST(KubePodStopTest, ScalingTheOwnerPatchesItsScaleOrDeletesThePod) {
  const struct {
    std::string workload;
    std::string method;
    std::string target;
  } cases[] = {
      {"Deployment/notebooks", "PATCH", "/apis/apps/v1/namespaces/dev/deployments/notebooks/scale"},
      {"StatefulSet/db", "PATCH", "/apis/apps/v1/namespaces/dev/statefulsets/db/scale"},
      {"ReplicaSet/rs-1", "PATCH", "/apis/apps/v1/namespaces/dev/replicasets/rs-1/scale"},
      {"CronJob/nightly", "DELETE", "/api/v1/namespaces/dev/pods/notebook-alice"},
      {"DaemonSet/agent", "DELETE", "/api/v1/namespaces/dev/pods/notebook-alice"},
      {"Pod/notebook-alice", "DELETE", "/api/v1/namespaces/dev/pods/notebook-alice"},
      {"", "DELETE", "/api/v1/namespaces/dev/pods/notebook-alice"},
  };
  for (const auto& c : cases) {
    const Result<KubeApiRequest> request = KubeStopRequest(Notebook(true, c.workload));
    ASSERT_TRUE(request.ok()) << c.workload << ": " << request.error().message;
    EXPECT_EQ(request->method, c.method) << c.workload;
    EXPECT_EQ(request->target, c.target) << c.workload;
    if (c.method == "PATCH") {
      EXPECT_EQ(request->content_type, "application/merge-patch+json");
      EXPECT_EQ(nlohmann::json::parse(request->body),
                (nlohmann::json{{"spec", {{"replicas", 0}}}}));
    }
  }
  EXPECT_EQ(KubeStopDone(Notebook(true, "Deployment/notebooks")),
            "Deployment/notebooks (namespace dev) scaled to 0 replicas");
  EXPECT_EQ(KubeStopToDo(Notebook(true, "Deployment/notebooks")),
            "scale Deployment/notebooks (namespace dev) to 0 replicas");
}

// The names come from an agent's report: none may lead the request to another object.
TEST(KubePodStopTest, ANameKubernetesWouldNotGiveIsRefused) {
  KubePodStop stop = Notebook(false);
  stop.name = "x/../../../apis/apps/v1/namespaces/prod/deployments/web";
  Result<KubeApiRequest> request = KubeStopRequest(stop);
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(request.error().message.find("pod name"), std::string::npos);

  stop = Notebook(true, "Deployment/web?dryRun=All");
  EXPECT_FALSE(KubeStopRequest(stop).ok());
  stop = Notebook(false);
  stop.pod_namespace = "Dev";
  EXPECT_FALSE(KubeStopRequest(stop).ok());
  stop = Notebook(false);
  stop.uid = "uid\"}";
  EXPECT_FALSE(KubeStopRequest(stop).ok());
}

TEST(KubePodStopTest, AnswersThatLeaveNothingToStopAreDone) {
  const KubePodStop pod = Notebook(false);
  const KubePodStop owner = Notebook(true, "Deployment/notebooks");
  EXPECT_TRUE(KubeStopAnswer(pod, 200, "{}").ok());
  EXPECT_TRUE(KubeStopAnswer(pod, 202, "{}").ok());
  EXPECT_TRUE(KubeStopAnswer(pod, 404, "{}").ok());  // gone already
  EXPECT_TRUE(KubeStopAnswer(pod, 409, "{}").ok());  // replaced: the UID precondition failed
  EXPECT_TRUE(KubeStopAnswer(owner, 200, "{}").ok());
  EXPECT_FALSE(KubeStopAnswer(owner, 409, "{}").ok());  // a conflict on a patch is not "gone"
  EXPECT_FALSE(KubeStopAnswer(pod, 500, "boom").ok());
}

TEST(KubePodStopTest, ARefusalNamesTheRuleToGrant) {
  const std::string body =
      R"({"kind":"Status","status":"Failure","message":"pods \"notebook-alice\" is forbidden: )"
      R"(User \"system:serviceaccount:gpufleet:gpufleet-server\" cannot delete resource \"pods\""})";
  Status s = KubeStopAnswer(Notebook(false), 403, body);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(
      s.error().message,
      "could not delete pod dev/notebook-alice: the API server answered 403 (pods "
      "\"notebook-alice\" is forbidden: User \"system:serviceaccount:gpufleet:gpufleet-server\" "
      "cannot delete resource \"pods\"); grant the server's service account delete on pods "
      "(deploy/kubernetes/reaper.yaml)");
  s = KubeStopAnswer(Notebook(true, "StatefulSet/db"), 403, "forbidden");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("patch on statefulsets/scale (apps)"), std::string::npos)
      << s.error().message;
}

}  // namespace
}  // namespace gf
