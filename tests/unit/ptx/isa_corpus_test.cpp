// The hand-written PTX of tests/unit/ptx/isa/: the ISA instruction by instruction, with every
// modifier, type and scope ptxas accepts, including the forms nvcc rarely or never emits. Each
// file starts with `// ptxas-target: sm_XX`, the target NVIDIA's assembler accepted it for, and
// declares the lowest .version that allows it, so the files also pin the version and target
// requirement checks: none of them may raise one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ptx/printer.h"
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

std::string pathOf(const std::string& name) {
  return std::string(ROCUDA_PTX_ISA_DIR) + "/" + name + ".ptx";
}

class IsaCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(IsaCorpus, ParsesAndChecksWithoutDiagnostics) {
  std::string text;
  ASSERT_TRUE(test::readFile(pathOf(GetParam()), text));
  ParseResult result = parseModule(text, GetParam() + ".ptx");
  EXPECT_TRUE(result.diagnostics.empty()) << result.formatDiagnostics();
  EXPECT_FALSE(result.module.functions.empty());
}

// ptxas at the file's declared target, on `path`; the command when it fails.
std::string assembleFails(const std::string& text, const std::string& path) {
#ifdef ROCUDA_PTXAS
  const std::string marker = "// ptxas-target: ";
  if (text.compare(0, marker.size(), marker) != 0) return "first line must name the target";
  std::string target = text.substr(marker.size(), text.find('\n') - marker.size());
  std::string command =
      std::string(ROCUDA_PTXAS) + " -arch=" + target + " " + path + " -o /dev/null > /dev/null 2>&1";
  return std::system(command.c_str()) == 0 ? "" : command;
#else
  (void)text, (void)path;
  return "";
#endif
}

TEST_P(IsaCorpus, NvidiasAssemblerAcceptsTheFile) {
#ifndef ROCUDA_PTXAS
  GTEST_SKIP() << "ptxas not found at configure time";
#endif
  std::string text;
  ASSERT_TRUE(test::readFile(pathOf(GetParam()), text));
  EXPECT_EQ(assembleFails(text, pathOf(GetParam())), "");
}

// The printer writes back what it read: the printed module parses to the same statements, and
// NVIDIA's assembler accepts it (every rare spelling survives: .shared::cta, %pm0_64, r.b3210).
TEST_P(IsaCorpus, PrintsBackToPtxThatPtxasAccepts) {
  std::string text;
  ASSERT_TRUE(test::readFile(pathOf(GetParam()), text));
  ParseResult first = parseModule(text, GetParam() + ".ptx");
  ASSERT_FALSE(first.hasErrors()) << first.formatDiagnostics();
  std::string printed = printModule(first.module);
  ParseResult second = parseModule(printed, GetParam() + ".printed.ptx");
  ASSERT_FALSE(second.hasErrors()) << second.formatDiagnostics();
  // The printer puts a prototype of every .func first; compare the definitions.
  auto bodies = [](const Module& m) {
    std::vector<std::pair<std::string, size_t>> out;
    for (const Function& f : m.functions)
      if (!f.isDeclaration) out.emplace_back(f.name, f.body.size());
    return out;
  };
  EXPECT_EQ(bodies(first.module), bodies(second.module));
#ifdef ROCUDA_PTXAS
  std::string path = ::testing::TempDir() + "isa_" + std::to_string(::getpid()) + "_" + GetParam() +
                     ".printed.ptx";
  std::string marker = text.substr(0, text.find('\n') + 1);  // keep the ptxas-target line
  {
    std::FILE* out = std::fopen(path.c_str(), "w");
    ASSERT_NE(out, nullptr);
    std::fputs((marker + printed).c_str(), out);
    std::fclose(out);
  }
  EXPECT_EQ(assembleFails(marker + printed, path), "");
  std::remove(path.c_str());
#endif
}

INSTANTIATE_TEST_SUITE_P(Files, IsaCorpus, ::testing::ValuesIn(isaFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(IsaCorpusFiles, AreThere) { EXPECT_GT(isaFiles().size(), 50u); }

}  // namespace
}  // namespace rocuda::ptx
