// promoteRegisters (compiler/host_codegen.h): a long straight-line kernel's registers become SSA
// values and its blocks are what they were; registers written in loops, on one side of a branch,
// on no path at all and in unreachable code get the phis their reads need, and the kernel
// computes what the PTX says.
#include <gtest/gtest.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <string>

#include "compiler/host_codegen.h"
#include "compiler/translator.h"
#include "test_runtime.h"

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

// A loop whose sum is written on both sides of a branch, a register (%r6) written on one path
// only and read where both paths meet (thread 1 skips its write and its read), and a block
// after `ret` that no path reaches, which writes the loop counter and jumps into the loop.
constexpr const char* kControlFlowPtx = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry flow(.param .u64 out, .param .u32 n)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  .reg .pred %p<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, 0;
  mov.u32 %r4, 0;
  setp.eq.u32 %p3, %r2, 1;
  @%p3 bra loop;
  mov.u32 %r6, 7;
loop:
  setp.ge.u32 %p1, %r4, %r1;
  @%p1 bra after;
  and.b32 %r5, %r4, 1;
  setp.eq.u32 %p2, %r5, 0;
  @%p2 bra even;
  add.u32 %r3, %r3, %r4;
  bra next;
even:
  mul.lo.u32 %r7, %r4, 2;
  add.u32 %r3, %r3, %r7;
next:
  add.u32 %r4, %r4, 1;
  bra loop;
after:
  @%p3 bra store;
  add.u32 %r3, %r3, %r6;
store:
  cvt.u64.u32 %rd2, %r2;
  shl.b64 %rd2, %rd2, 2;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
dead:
  mov.u32 %r4, 99;
  bra loop;
}
)";

TEST(PromoteRegisters, LoopsJoinsAndUnreachableCodeGetTheirPhis) {
  llvm::LLVMContext context;
  ModuleInfo info;
  auto module = detail::translatePtx(context, kControlFlowPtx, "flow", info);
  ASSERT_TRUE(module.ok()) << module.error().message;
  detail::promoteRegisters(**module);
  ASSERT_TRUE(detail::verifiedIr(**module, "flow", "promoted").ok());
  llvm::Function* kernel = (*module)->getFunction("flow");
  ASSERT_NE(kernel, nullptr);
  size_t allocas = 0, phis = 0;
  for (llvm::BasicBlock& block : *kernel)
    for (llvm::Instruction& inst : block) {
      allocas += llvm::isa<llvm::AllocaInst>(inst) && inst.getType()->isPointerTy() &&
                 llvm::cast<llvm::AllocaInst>(inst).getAllocatedType()->isIntegerTy();
      phis += llvm::isa<llvm::PHINode>(inst);
    }
  EXPECT_EQ(allocas, 0u);
  EXPECT_GE(phis, 3u);  // the loop's counter and sum, the sum after the branch

  auto loaded = test::compileAndLoad(kControlFlowPtx, "flow");
  ASSERT_TRUE(loaded);
  uint32_t out[4] = {};
  void* outPtr = out;
  uint32_t n = 10;
  ASSERT_TRUE(test::launch(*loaded, "flow", {}, {4, 1, 1}, {&outPtr, &n}));
  // Odd i add i (25), even i add 2i (40); every thread but 1 adds its %r6 (7).
  EXPECT_EQ(out[0], 72u);
  EXPECT_EQ(out[1], 65u);
  EXPECT_EQ(out[2], 72u);
  EXPECT_EQ(out[3], 72u);
}

}  // namespace
}  // namespace rocuda::compiler
