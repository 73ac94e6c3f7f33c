#include "kube/kube_pods.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

// A pod as the API server writes it (trimmed to what is read, plus fields that are not).
std::string PodJson(const std::string& uid,
                    const std::string& name,
                    const std::string& owner_kind = "",
                    const std::string& owner_name = "",
                    const std::string& account = "trainer") {
  std::string owners;
  if (!owner_kind.empty()) {
    owners = R"(,"ownerReferences":[{"apiVersion":"v1","kind":"Other","name":"not-me","uid":"x"},
      {"apiVersion":"apps/v1","kind":")" +
             owner_kind + R"(","name":")" + owner_name +
             R"(","uid":"y","controller":true,"blockOwnerDeletion":true}])";
  }
  return R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","namespace":"ml","uid":")" + uid + R"(","resourceVersion":"41")" + owners +
         R"(},"spec":{"serviceAccountName":")" + account +
         R"(","priorityClassName":"high","containers":[{"name":"c"}]},
         "status":{"phase":"Running"}})";
}

std::string Event(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}";
}

TEST(KubePodsTest, ReadsAPodsAccountClassPhaseAndController) {
  const auto event = ParseKubeWatchLine(
      KubeResource::kPods, Event("ADDED", PodJson("u1", "web-7d9-abc", "ReplicaSet", "web-7d9")));
  ASSERT_TRUE(event.ok()) << event.error().message;
  EXPECT_EQ(event->type, KubeWatchType::kAdded);
  EXPECT_EQ(event->resource_version, "41");
  ASSERT_TRUE(event->pod);
  EXPECT_EQ(*event->pod,
            (KubeApiPod{.uid = "u1",
                        .pod_namespace = "ml",
                        .name = "web-7d9-abc",
                        .service_account = "trainer",
                        .priority_class = "high",
                        .phase = "Running",
                        .controller = KubeOwnerRef{"ReplicaSet", "web-7d9"}}));
}

TEST(KubePodsTest, AnUnsetServiceAccountIsDefault) {
  const auto event =
      ParseKubeWatchLine(KubeResource::kPods, Event("ADDED", PodJson("u1", "p", "", "", "")));
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->pod->service_account, "default");
  EXPECT_FALSE(event->pod->controller);
}

TEST(KubePodsTest, ErrorsOfTheStream) {
  // 410 Gone: the version is too old; the caller lists again.
  const auto gone = ParseKubeWatchLine(
      KubeResource::kPods,
      R"x({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired",
          "message":"too old resource version: 5 (3020)"}})x");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(gone.error().message.find("too old resource version"), std::string::npos);
  const auto other = ParseKubeWatchLine(
      KubeResource::kPods, R"({"type":"ERROR","object":{"code":500,"message":"etcd down"}})");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kUnavailable);
  for (const char* bad : {"",
                          "[]",
                          "not json",
                          R"({"type":"RENAMED","object":{}})",
                          R"({"type":"ADDED","object":{"metadata":{"name":"x"}}})"}) {
    const auto parsed = ParseKubeWatchLine(KubeResource::kPods, bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << bad;
  }
  // A bookmark carries only a version.
  const auto bookmark = ParseKubeWatchLine(
      KubeResource::kPods,
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"77"}}})");
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->type, KubeWatchType::kBookmark);
  EXPECT_EQ(bookmark->resource_version, "77");
}

TEST(KubePodsTest, ReadsAListPage) {
  const auto page = ParseKubeList(
      KubeResource::kPods,
      R"({"kind":"PodList","metadata":{"resourceVersion":"900","continue":"eyJ2IjoxfQ=="},
          "items":[)" +
          PodJson("u1", "a") + "," + PodJson("u2", "b") + "]}");
  ASSERT_TRUE(page.ok()) << page.error().message;
  ASSERT_EQ(page->items.size(), 2U);
  EXPECT_EQ(page->items[1].pod->name, "b");
  EXPECT_EQ(page->resource_version, "900");
  EXPECT_EQ(page->continue_token, "eyJ2IjoxfQ==");
  EXPECT_FALSE(ParseKubeList(KubeResource::kPods, R"({"kind":"Status","code":403})").ok());
}

// The workload of each kind of pod, by hand: a Deployment's pod through its ReplicaSet, a
// CronJob's through its Job, a StatefulSet's and a bare pod as they are, and a pod whose
// ReplicaSet is not read yet counted to the ReplicaSet.
TEST(KubePodsTest, NamesEachPodsWorkloadOneLevelUp) {
  KubePodBook book;
  auto apply = [&](KubeResource resource, const std::string& line) {
    const auto event = ParseKubeWatchLine(resource, line);
    ASSERT_TRUE(event.ok()) << event.error().message;
    book.Apply(resource, *event);
  };
  apply(KubeResource::kPods, Event("ADDED", PodJson("d", "web-7d9-abc", "ReplicaSet", "web-7d9")));
  apply(KubeResource::kPods, Event("ADDED", PodJson("c", "nightly-123-x", "Job", "nightly-123")));
  apply(KubeResource::kPods, Event("ADDED", PodJson("s", "db-0", "StatefulSet", "db")));
  apply(KubeResource::kPods, Event("ADDED", PodJson("b", "notebook")));
  apply(KubeResource::kPods, Event("ADDED", PodJson("o", "orphan-x", "ReplicaSet", "orphan")));
  const std::string rs = R"({"metadata":{"name":"web-7d9","namespace":"ml","uid":"r1",
      "ownerReferences":[{"kind":"Deployment","name":"web","controller":true}]}})";
  const std::string job = R"({"metadata":{"name":"nightly-123","namespace":"ml","uid":"j1",
      "ownerReferences":[{"kind":"CronJob","name":"nightly","controller":true}]}})";
  apply(KubeResource::kReplicaSets, Event("ADDED", rs));
  apply(KubeResource::kJobs, Event("ADDED", job));

  EXPECT_EQ(book.WorkloadOf("d"), (KubeWorkload{"Deployment", "web"}));
  EXPECT_EQ(book.WorkloadOf("c"), (KubeWorkload{"CronJob", "nightly"}));
  EXPECT_EQ(book.WorkloadOf("s"), (KubeWorkload{"StatefulSet", "db"}));
  EXPECT_EQ(book.WorkloadOf("b"), (KubeWorkload{"Pod", "notebook"}));
  EXPECT_EQ(book.WorkloadOf("o"), (KubeWorkload{"ReplicaSet", "orphan"}));
  EXPECT_EQ(book.WorkloadOf("nobody"), std::nullopt);
  EXPECT_EQ(book.PodCount(), 5U);

  // Deleted: the pod is gone; its ReplicaSet's deletion leaves its pods with the ReplicaSet.
  apply(KubeResource::kPods, Event("DELETED", PodJson("b", "notebook")));
  EXPECT_EQ(book.Pod("b"), nullptr);
  apply(KubeResource::kReplicaSets, Event("DELETED", rs));
  EXPECT_EQ(book.WorkloadOf("d"), (KubeWorkload{"ReplicaSet", "web-7d9"}));

  // A relist replaces what was known: what it does not name is gone.
  const auto page =
      ParseKubeList(KubeResource::kPods, R"({"items":[)" + PodJson("s", "db-0") + "]}");
  ASSERT_TRUE(page.ok());
  book.Relist(KubeResource::kPods, page->items);
  EXPECT_EQ(book.PodCount(), 1U);
  EXPECT_EQ(book.WorkloadOf("s"), (KubeWorkload{"Pod", "db-0"}));
}

}  // namespace
}  // namespace gf
