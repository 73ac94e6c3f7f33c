#include "codec/codec.h"

#include <gtest/gtest.h>

namespace gf {
namespace {

TEST(StoreCodecTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("zoë 训练 🚀"));
  EXPECT_TRUE(IsValidUtf8(std::string("nul\0inside", 10)));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("caf\xe9"));           // latin-1
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // cut short
}

TEST(StoreCodecTest, StringsRoundTripAnyBytes) {
  const std::vector<std::string> strings = {"",
                                            "a b",
                                            "it's \"q\"",
                                            "caf\xe9",
                                            std::string("\xff\x00x", 3),
                                            std::string("a\0b", 3),
                                            "zoë"};
  auto text = EncodeStrings(strings);
  ASSERT_TRUE(text.ok()) << text.error().ToString();
  auto back = DecodeStrings(*text, "test");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(*back, strings);
}

TEST(StoreCodecTest, EnvKeepsOrderAndDuplicates) {
  const EnvList env = {{"B", "1"}, {"A", "x=y"}, {"B", "\xfe"}};
  auto back = DecodeEnv(*EncodeEnv(env), "test");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(*back, env);
}

TEST(StoreCodecTest, GpusAndLabelsRoundTrip) {
  std::vector<Gpu> gpus(2);
  gpus[0].uuid = GpuUuid("GPU-1");
  gpus[1].index = 1;
  gpus[1].health = GpuHealth::kFailed;
  gpus[1].health_cause = "XID 48";
  gpus[1].memory_mib = 81'920;
  gpus[1].numa_node = 1;
  gpus[1].pcie_switch = 0;
  gpus[1].nvlink_peers = {0, 3};
  gpus[1].sharing = SharingMode::kMps;
  gpus[1].sharing_next = SharingMode::kExclusive;
  gpus[0].sharing = SharingMode::kShared;
  gpus[0].mig_enabled = true;
  gpus[0].mig_profiles = {"1g.10gb", "3g.40gb"};
  gpus[0].mig_instances = {MigInstance{.profile = "3g.40gb",
                                       .uuid = GpuUuid("MIG-\xff"),  // bytes, as any string
                                       .gpu_instance_id = 2,
                                       .compute_instance_id = 0,
                                       .slices = 3,
                                       .memory_mib = 40192}};
  gpus[0].mig_layout_next = std::vector<std::string>{"1g.10gb", "1g.10gb"};
  auto back = DecodeGpus(*EncodeGpus(gpus), "test");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(*back, gpus);

  const std::map<std::string, std::string> labels = {{"zone", "ü"}, {"raw", "\xff"}};
  auto labels_back = DecodeLabels(*EncodeLabels(labels), "test");
  ASSERT_TRUE(labels_back.ok());
  EXPECT_EQ(*labels_back, labels);
  EXPECT_EQ(EncodeLabels({{"\xff", "v"}}).error().code, ErrorCode::kInvalidArgument);
}

TEST(StoreCodecTest, GpusWrittenBeforeTopologyDecodeWithTopologyUnknown) {
  auto old = DecodeGpus(
      "[{\"index\":2,\"uuid\":\"u\",\"model\":\"m\",\"memory_mib\":1,"
      "\"health\":\"ok\",\"health_cause\":\"\"}]",
      "gpus");
  ASSERT_TRUE(old.ok()) << old.error().ToString();
  ASSERT_EQ(old->size(), 1U);
  EXPECT_EQ((*old)[0].index, 2);
  EXPECT_EQ((*old)[0].numa_node, -1);
  EXPECT_EQ((*old)[0].pcie_switch, -1);
  EXPECT_TRUE((*old)[0].nvlink_peers.empty());
  // Sharing came with schema v10: older GPUs are exclusive, with no change waiting.
  EXPECT_EQ((*old)[0].sharing, SharingMode::kExclusive);
  EXPECT_FALSE((*old)[0].sharing_next.has_value());
  EXPECT_FALSE((*old)[0].mig_enabled);  // so did MIG: not in MIG mode
  EXPECT_TRUE((*old)[0].mig_instances.empty());
}

TEST(StoreCodecTest, UnknownSharingModeIsAnInternalErrorNamingTheRow) {
  auto r = DecodeGpus(
      "[{\"index\":0,\"uuid\":\"u\",\"model\":\"m\",\"memory_mib\":1,"
      "\"health\":\"ok\",\"health_cause\":\"\",\"sharing\":\"timeslice\"}]",
      "node n1 gpus");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInternal);
  EXPECT_NE(r.error().message.find("node n1 gpus"), std::string::npos) << r.error().message;
}

TEST(StoreCodecTest, DamagedTextIsAnInternalErrorNamingTheField) {
  for (std::string_view text :
       {"", "[", "{}", "[1]", "[{\"hex\": \"abc\"}]", "[{\"hex\": \"zz\"}]", "[{\"nohex\": 1}]"}) {
    auto r = DecodeStrings(text, "job 4 argv");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, ErrorCode::kInternal);
    EXPECT_NE(r.error().message.find("job 4 argv"), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(DecodeEnv("[[\"A\"]]", "env").ok());
  EXPECT_FALSE(DecodeGpus("[{\"index\": 0}]", "gpus").ok());
  EXPECT_FALSE(DecodeGpus("[{\"index\":0,\"uuid\":\"u\",\"model\":\"m\",\"memory_mib\":1,"
                          "\"health\":\"sick\",\"health_cause\":\"\"}]",
                          "gpus")
                   .ok());
  EXPECT_FALSE(DecodeLabels("[]", "labels").ok());
  EXPECT_FALSE(DecodeLabels("{\"a\": 1}", "labels").ok());
}

}  // namespace
}  // namespace gf
