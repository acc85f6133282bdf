// The hand-written PTX of tests/unit/ptx/isa/: the ISA instruction by instruction, with every
// modifier, type and scope ptxas accepts, including the forms nvcc rarely or never emits. Each
// file starts with `// ptxas-target: sm_XX`, the target NVIDIA's assembler accepted it for, and
// declares the lowest .version that allows it, so the files also pin the version and target
// requirement checks: none of them may raise one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ptx_test_util.h"

namespace rocuda::ptx {
namespace {

std::vector<std::string> isaFiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(ROCUDA_PTX_ISA_DIR, ec))
    if (entry.path().extension() == ".ptx") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Files that use syntax the front end does not read yet, and what it is.
const std::map<std::string, std::string>& knownGaps() {
  static const std::map<std::string, std::string> gaps = {
      {"video", "operand selectors of the video instructions (r.b0, r.h1, r.b3210) and -r"},
      {"sreg", "%tid.w and whole-vector special registers (mov.v4.u32 {..}, %tid)"},
      {"sreg_sm90", "%clusterid.w and whole-vector cluster special registers"},
      {"texture", ".texref / .samplerref / .surfref declarations"},
      {"texture_indep", ".texref / .samplerref / .surfref declarations"},
      {"texture_pred", ".texref / .surfref declarations"},
      {"texture_sured64", ".surfref declarations"},
  };
  return gaps;
}

std::string pathOf(const std::string& name) {
  return std::string(ROCUDA_PTX_ISA_DIR) + "/" + name + ".ptx";
}

class IsaCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(IsaCorpus, ParsesAndChecksWithoutDiagnostics) {
  auto gap = knownGaps().find(GetParam());
  if (gap != knownGaps().end()) GTEST_SKIP() << "not read yet: " << gap->second;
  std::string text;
  ASSERT_TRUE(test::readFile(pathOf(GetParam()), text));
  ParseResult result = parseModule(text, GetParam() + ".ptx");
  EXPECT_TRUE(result.diagnostics.empty()) << result.formatDiagnostics();
  EXPECT_FALSE(result.module.functions.empty());
}

TEST_P(IsaCorpus, NvidiasAssemblerAcceptsTheFile) {
#ifndef ROCUDA_PTXAS
  GTEST_SKIP() << "ptxas not found at configure time";
#else
  std::string text;
  ASSERT_TRUE(test::readFile(pathOf(GetParam()), text));
  const std::string marker = "// ptxas-target: ";
  ASSERT_EQ(text.compare(0, marker.size(), marker), 0) << "first line must name the target";
  std::string target = text.substr(marker.size(), text.find('\n') - marker.size());
  std::string command = std::string(ROCUDA_PTXAS) + " -arch=" + target + " " +
                        pathOf(GetParam()) + " -o /dev/null > /dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
#endif
}

INSTANTIATE_TEST_SUITE_P(Files, IsaCorpus, ::testing::ValuesIn(isaFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(IsaCorpusFiles, AreThere) { EXPECT_GT(isaFiles().size(), 50u); }

}  // namespace
}  // namespace rocuda::ptx
