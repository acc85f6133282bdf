// promoteRegisters (compiler/host_codegen.h): a long straight-line kernel's registers become SSA
// values and its blocks are what they were, so that neither target's pipeline sees the
// translator's allocas in a block long enough to make LLVM's own promotion quadratic.
#include <gtest/gtest.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <string>

#include "compiler/host_codegen.h"
#include "compiler/translator.h"

namespace rocuda::compiler {
namespace {

// A kernel whose body is one block of about 3 * `steps` instructions (a dependent chain of
// adds through `steps` registers, each read again at the end), then a branch on the result.
std::string longKernel(int steps) {
  std::string ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry chain(.param .u64 out)\n{\n"
      "  .reg .b32 %r<" +
      std::to_string(steps + 2) +
      ">;\n"
      "  .reg .b64 %rd<2>;\n  .reg .pred %p<2>;\n"
      "  ld.param.u64 %rd1, [out];\n  mov.u32 %r0, %tid.x;\n";
  for (int i = 1; i <= steps; ++i)
    ptx += "  add.s32 %r" + std::to_string(i) + ", %r" + std::to_string(i - 1) + ", " +
           std::to_string(i) + ";\n";
  for (int i = 1; i <= steps; i += 97)
    ptx += "  add.s32 %r" + std::to_string(steps + 1) + ", %r" + std::to_string(steps + 1) +
           ", %r" + std::to_string(i) + ";\n";
  ptx += "  setp.eq.s32 %p1, %r" + std::to_string(steps + 1) + ", 0;\n  @%p1 bra done;\n" +
         "  st.global.u32 [%rd1], %r" + std::to_string(steps + 1) + ";\ndone:\n  ret;\n}\n";
  return ptx;
}

TEST(PromoteRegisters, LongBlocksKeepTheirShapeAndLoseTheirAllocas) {
  llvm::LLVMContext context;
  ModuleInfo info;
  auto module = detail::translatePtx(context, longKernel(3000), "chain", info);
  ASSERT_TRUE(module.ok()) << module.error().message;
  llvm::Function* kernel = (*module)->getFunction("chain");
  ASSERT_NE(kernel, nullptr);
  auto registerAllocas = [&] {
    size_t n = 0;
    for (llvm::Instruction& inst : kernel->getEntryBlock())
      if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst))
        if (alloca->getAllocatedType()->isIntegerTy()) ++n;
    return n;
  };
  size_t blocks = kernel->size();
  size_t longest = 0;
  for (llvm::BasicBlock& block : *kernel) longest = std::max(longest, block.size());
  ASSERT_GT(registerAllocas(), 3000u);
  ASSERT_GT(longest, 3000u);  // the chain is one block, many chunks long

  detail::promoteRegisters(**module);

  EXPECT_TRUE(detail::verifiedIr(**module, "chain", "promoted").ok());
  EXPECT_EQ(registerAllocas(), 0u);
  EXPECT_EQ(kernel->size(), blocks);  // the chunks are joined again
}

}  // namespace
}  // namespace rocuda::compiler
