// gcnArchName parsing, the supported processor table and the optimisation pipeline.
#include <gtest/gtest.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/amdgpu/amdgpu_codegen.h"
#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/host_codegen.h"

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

// The pipeline is text for the LLVM it was taken from: a pass renamed or an option spelt wrong
// would make every compilation fall back to O2 (with a warning) instead of failing a test.
TEST(AmdgpuTarget, OptimizationPipelineParses) {
  auto target = parseGcnArchName("gfx1100");
  ASSERT_TRUE(target.ok());
  auto tm = amdgpu::createAmdgpuTargetMachine(*target);
  ASSERT_TRUE(tm.ok()) << tm.error().message;
  std::string text = amdgpu::optimizationPipeline();
  EXPECT_EQ(text.find('$'), std::string::npos) << text;  // every placeholder replaced
  EXPECT_EQ(text.find(' '), std::string::npos);
  EXPECT_EQ(text.find("slp-vectorizer"), std::string::npos);  // not in this PassBuilder's O2 either
  detail::PassContext passes(**tm);
  llvm::ModulePassManager pipeline;
  llvm::Error error = passes.pb.parsePassPipeline(pipeline, text);
  EXPECT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
}

// Every pass of the pipeline is one of O2's, in O2's order: what it leaves out of O2 is all it
// changes (an LLVM whose O2 differs shows here first).
TEST(AmdgpuTarget, OptimizationPipelineIsO2LessSomePasses) {
  auto target = parseGcnArchName("gfx90a");
  ASSERT_TRUE(target.ok());
  auto tm = amdgpu::createAmdgpuTargetMachine(*target);
  ASSERT_TRUE(tm.ok()) << tm.error().message;
  llvm::PassInstrumentationCallbacks names;  // lets printPipeline name the passes
  llvm::PassBuilder builder(tm->get(), llvm::PipelineTuningOptions(), std::nullopt, &names);
  auto print = [&](llvm::ModulePassManager& pipeline) {
    std::string text;
    llvm::raw_string_ostream os(text);
    pipeline.printPipeline(os, [&](llvm::StringRef type) {
      llvm::StringRef name = names.getPassNameForClassName(type);
      return name.empty() ? type : name;
    });
    std::vector<std::string> passes(1);  // the pass names, nesting dropped
    for (char c : text)
      if (c == ',' || c == '(' || c == ')') {
        if (!passes.back().empty()) passes.emplace_back();
      } else {
        passes.back() += c;
      }
    if (passes.back().empty()) passes.pop_back();
    return passes;
  };
  llvm::ModulePassManager o2 = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  llvm::ModulePassManager ours;
  if (llvm::Error error = builder.parsePassPipeline(ours, amdgpu::optimizationPipeline()))
    FAIL() << llvm::toString(std::move(error));
  std::vector<std::string> all = print(o2), kept = print(ours);
  ASSERT_GT(kept.size(), 50u);
  EXPECT_LT(kept.size(), all.size());
  size_t at = 0;
  for (const std::string& pass : kept) {
    while (at < all.size() && all[at] != pass) ++at;
    ASSERT_LT(at, all.size()) << "'" << pass << "' is not in O2 at this point";
    ++at;
  }
}

}  // namespace
}  // namespace rocuda::compiler
