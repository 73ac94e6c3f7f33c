// ReadLogFile (log_file.h): chunks by offset and limit, the end of the file, a file not yet
// there, bytes that are not text, and a file that cannot be read.
#include "agent/log_file.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

namespace gf {
namespace {

namespace fs = std::filesystem;

class LogFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gf-log-file-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path Write(const std::string& name, const std::string& content) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  fs::path dir_;
};

TEST_F(LogFileTest, ReadsAChunkByOffsetAndLimit) {
  const fs::path path = Write("out", "hello world\n");
  Result<LogChunk> chunk = ReadLogFile(path, 6, 5);
  ASSERT_TRUE(chunk.ok()) << chunk.error().ToString();
  EXPECT_EQ(chunk->data, "world");
  EXPECT_EQ(chunk->size, 12);
  EXPECT_EQ(chunk->next_offset, 11);

  chunk = ReadLogFile(path, 6, 100);  // a limit past the end: up to the end
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->data, "world\n");
  EXPECT_EQ(chunk->next_offset, 12);
}

TEST_F(LogFileTest, AnOffsetPastTheEndReadsEmptyAtTheEnd) {
  Result<LogChunk> chunk = ReadLogFile(Write("out", "abc"), 50, 10);
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->data, "");
  EXPECT_EQ(chunk->size, 3);
  EXPECT_EQ(chunk->next_offset, 3);
}

TEST_F(LogFileTest, AFileNotYetWrittenReadsAsEmpty) {
  Result<LogChunk> chunk = ReadLogFile(dir_ / "7" / "stdout.log", 0, 100);
  ASSERT_TRUE(chunk.ok()) << chunk.error().ToString();
  EXPECT_EQ(chunk->data, "");
  EXPECT_EQ(chunk->size, 0);
  EXPECT_EQ(chunk->next_offset, 0);
}

TEST_F(LogFileTest, BytesComeBackUnchanged) {
  const std::string bytes("a\0\xff\xfe\n", 5);
  Result<LogChunk> chunk = ReadLogFile(Write("bin", bytes), 0, 100);
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->data, bytes);
}

TEST_F(LogFileTest, BadArgumentsAndUnreadableFilesNameTheFile) {
  const fs::path path = Write("out", "x");
  Result<LogChunk> negative = ReadLogFile(path, -1, 10);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().code, ErrorCode::kInvalidArgument);

  // A directory where the file should be: it exists and cannot be read as a file.
  fs::create_directories(dir_ / "dir");
  Result<LogChunk> unreadable = ReadLogFile(dir_ / "dir", 0, 10);
  ASSERT_FALSE(unreadable.ok());
  EXPECT_EQ(unreadable.error().code, ErrorCode::kIo);
  EXPECT_NE(unreadable.error().message.find((dir_ / "dir").string()), std::string::npos)
      << unreadable.error().message;
}

}  // namespace
}  // namespace gf
