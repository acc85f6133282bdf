// gcnArchName parsing and the supported processor table.
#include <gtest/gtest.h>

#include "compiler/amdgpu/amdgpu_codegen.h"

namespace rocuda::compiler {
namespace {

TEST(AmdgpuTarget, ParsesPlainProcessor) {
  auto target = parseGcnArchName("gfx1100");
  ASSERT_TRUE(target.ok()) << target.error().message;
  EXPECT_EQ(target->processor, "gfx1100");
  EXPECT_EQ(target->features, "");
  EXPECT_EQ(target->codeObjectVersion, 5);
}

TEST(AmdgpuTarget, ParsesFeatures) {
  auto target = parseGcnArchName("gfx90a:sramecc+:xnack-");
  ASSERT_TRUE(target.ok()) << target.error().message;
  EXPECT_EQ(target->processor, "gfx90a");
  EXPECT_EQ(target->features, "+sramecc,-xnack");
}

TEST(AmdgpuTarget, RejectsBadNames) {
  auto unknown = parseGcnArchName("gfx803");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::NotSupported);
  for (const char* bad : {"", "sm_80", "gfx", "gfx90a:", "gfx90a:xnack", "gfx90a:foo+",
                          "gfx1100:xnack+", "gfx1100:sramecc-"}) {
    auto result = parseGcnArchName(bad);
    ASSERT_FALSE(result.ok()) << bad;
    EXPECT_EQ(result.error().code, ErrorCode::InvalidValue) << bad;
  }
}

TEST(AmdgpuTarget, WaveSizes) {
  EXPECT_EQ(supportedAmdgpuProcessors().size(), 10u);
  for (const auto& p : supportedAmdgpuProcessors())
    EXPECT_EQ(amdgpuWavefrontSize(p), (p == "gfx90a" || p == "gfx942") ? 64 : 32) << p;
  EXPECT_EQ(amdgpuWavefrontSize("gfx803"), 0);
}

}  // namespace
}  // namespace rocuda::compiler
