#include "kube/kube_log_names.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gf {
namespace {

constexpr std::string_view kId = "4f3e2d1c0b0a99887766554433221100ffeeddccbbaa00112233445566778899";

TEST(KubeLogNamesTest, AContainerLogLinkNamesPodNamespaceContainerAndId) {
  const auto found = ContainerOfLogLink("train-0_ml_trainer-" + std::string(kId) + ".log");
  ASSERT_TRUE(found);
  EXPECT_EQ(*found,
            (KubeContainerLog{.pod_namespace = "ml",
                              .pod_name = "train-0",
                              .container = "trainer",
                              .container_id = std::string(kId)}));
  // Dashes and dots in every part: the id is what follows the last dash.
  const auto dashed =
      ContainerOfLogLink("web-7d9f-x2k.v1_team-a_log-shipper-" + std::string(kId) + ".log");
  ASSERT_TRUE(dashed);
  EXPECT_EQ(dashed->pod_name, "web-7d9f-x2k.v1");
  EXPECT_EQ(dashed->pod_namespace, "team-a");
  EXPECT_EQ(dashed->container, "log-shipper");
}

TEST(KubeLogNamesTest, OtherFilesAreNotContainers) {
  const std::string id(kId);
  const std::vector<std::string> names = {
      "train-0_ml_trainer-" + id,             // no .log
      "train-0_ml_trainer-" + id + ".log.1",  // not a link's name (a rotated file)
      "train-0_ml_trainer.log",               // no id
      "train-0_ml_trainer-4f3e2d1c.log",      // short id
      "train-0_ml-" + id + ".log",            // two parts
      "a_b_c_d-" + id + ".log",               // four parts
      "Train-0_ml_trainer-" + id + ".log",    // not a DNS name
      "_ml_trainer-" + id + ".log",           // empty pod name
      std::string(".log"),
  };
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(ContainerOfLogLink(name));
  }
}

TEST(KubeLogNamesTest, APodLogFolderNamesNamespacePodAndUid) {
  const auto found = PodOfLogFolder("ml_train-0_0F1E2D3C-4b5a-6978-8796-a5b4c3d2e1f0");
  ASSERT_TRUE(found);
  EXPECT_EQ(*found,
            (KubePodLog{.pod_namespace = "ml",
                        .pod_name = "train-0",
                        .pod_uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}));
  EXPECT_FALSE(PodOfLogFolder("ml_train-0"));
  EXPECT_FALSE(PodOfLogFolder("ml_train-0_not-a-uid"));
  EXPECT_FALSE(PodOfLogFolder("ml_train_0_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"));
  EXPECT_FALSE(PodOfLogFolder("ML_train-0_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"));
}

}  // namespace
}  // namespace gf
