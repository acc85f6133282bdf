#include "support/platform.h"

#include <gtest/gtest.h>

namespace rocuda::platform {
namespace {

TEST(Platform, FindProgramSearchesPath) {
  EXPECT_FALSE(findProgram("sh").empty());
  EXPECT_TRUE(findProgram("rocuda-no-such-program-anywhere").empty());
  EXPECT_TRUE(findProgram("/nonexistent/dir/prog").empty());
  EXPECT_EQ(findProgram("/bin/sh"), "/bin/sh");
}

TEST(Platform, DirectoryOf) {
  EXPECT_EQ(directoryOf("/a/b/c"), "/a/b");
  EXPECT_EQ(directoryOf("/c"), "/");
  EXPECT_EQ(directoryOf("c"), ".");
}

TEST(Platform, ReadMissingFileIsFileNotFound) {
  auto result = readFile("/nonexistent/rocuda/file");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::FileNotFound);
}

TEST(Platform, MachineFacts) {
  EXPECT_GE(hardwareThreads(), 1u);
  EXPECT_GT(totalPhysicalMemory(), 0u);
  EXPECT_FALSE(cpuModelName().empty());
}

}  // namespace
}  // namespace rocuda::platform
