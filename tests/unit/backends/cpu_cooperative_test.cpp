// Cooperative grids on the CPU device: every block resident at once, meeting at a grid barrier
// built as cooperative groups builds it (workspace address from %envreg1/%envreg2, thread 0
// adding to the barrier word with atom.add.release.gpu and spinning on ld.acquire.gpu), in
// each block form; many more blocks than cores, whose waiting costs next to no processor time;
// a trapping or departed block fails the launch instead of hanging it. Also ordinary grids whose
// blocks wait for later ones, which a GPU runs at the same time when the grid fits it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "backends/device_backend.h"

namespace rocuda::backends {
namespace {

using compiler::CpuExecution;

// One grid barrier, labels suffixed with `tag`; with `blockBarrier`, bracketed by bar.sync 0 as
// cooperative groups does (so that every thread of the block waits).
std::string gridBarrier(const std::string& tag, bool blockBarrier) {
  std::string sync = blockBarrier ? "  bar.sync 0;\n" : "";
  return sync + "  @%p2 bra WAITED" + tag + ";\n" +
         "  atom.add.release.gpu.u32 %r10, [%rd6], %r7;\n"
         "SPIN" +
         tag +
         ":\n"
         "  ld.acquire.gpu.u32 %r11, [%rd6];\n"
         "  xor.b32 %r12, %r11, %r10;\n"
         "  setp.gt.s32 %p4, %r12, -1;\n"
         "  @%p4 bra SPIN" +
         tag +
         ";\n"
         "WAITED" +
         tag + ":\n" + sync;
}

// coop(slots, out, rounds, victim, mode): per round, thread 0 of each block writes
// slots[ctaid] = ctaid + round + 1, the grid meets, every thread adds the sum of the slots to
// out[global id], the grid meets again. Block `victim` traps (mode 1) or leaves (mode 2) before
// the first barrier. Without a workspace every thread stores envreg0 | envreg3 | envreg31 - 1.
std::string coopPtx(bool blockBarrier) {
  return R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry coop(.param .u64 slots, .param .u64 out, .param .u32 rounds, .param .u32 victim,
                     .param .u32 mode)
{
  .reg .pred %p<8>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [slots];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r20, [rounds];
  ld.param.u32 %r23, [victim];
  ld.param.u32 %r24, [mode];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %nctaid.x;
  mov.u32 %r13, %ntid.x;
  mad.lo.s32 %r14, %r1, %r13, %r2;
  mul.wide.u32 %rd9, %r14, 4;
  add.s64 %rd10, %rd2, %rd9;
  mov.u32 %r4, %envreg1;
  mov.u32 %r5, %envreg2;
  mov.b64 %rd3, {%r5, %r4};
  setp.eq.s64 %p1, %rd3, 0;
  @%p1 bra INVALID;
  setp.ne.u32 %p7, %r1, %r23;
  @%p7 bra PARTICIPATE;
  setp.eq.u32 %p7, %r24, 1;
  @%p7 trap;
  setp.eq.u32 %p7, %r24, 2;
  @%p7 ret;
PARTICIPATE:
  add.s64 %rd6, %rd3, 4;
  setp.ne.u32 %p2, %r2, 0;
  mov.u32 %r7, 1;
  setp.ne.u32 %p3, %r1, 0;
  @%p3 bra NB_DONE;
  sub.s32 %r8, %r3, 1;
  mov.u32 %r9, -2147483648;
  sub.s32 %r7, %r9, %r8;
NB_DONE:
  mov.u32 %r21, 0;
ROUND:
  @%p2 bra ARRIVE;
  add.u32 %r6, %r1, %r21;
  add.u32 %r6, %r6, 1;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.global.u32 [%rd5], %r6;
ARRIVE:
)" + gridBarrier("A", blockBarrier) +
         R"(  mov.u32 %r15, 0;
  mov.u32 %r16, 0;
  mov.u64 %rd7, %rd1;
SUM:
  ld.global.u32 %r17, [%rd7];
  add.u32 %r15, %r15, %r17;
  add.s64 %rd7, %rd7, 4;
  add.u32 %r16, %r16, 1;
  setp.lt.u32 %p5, %r16, %r3;
  @%p5 bra SUM;
  ld.global.u32 %r22, [%rd10];
  add.u32 %r22, %r22, %r15;
  st.global.u32 [%rd10], %r22;
)" + gridBarrier("B", blockBarrier) +
         R"(  add.u32 %r21, %r21, 1;
  setp.lt.u32 %p6, %r21, %r20;
  @%p6 bra ROUND;
  ret;
INVALID:
  mov.u32 %r30, %envreg0;
  mov.u32 %r31, %envreg3;
  mov.u32 %r32, %envreg31;
  or.b32 %r30, %r30, %r31;
  or.b32 %r30, %r30, %r32;
  sub.u32 %r30, %r30, 1;
  st.global.u32 [%rd10], %r30;
  ret;
}
)";
}

class CpuCooperative : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("ROCUDA_CACHE", "0", 1);
    // Every kernel compiled at load, so that the form it took can be checked before launching.
    ::setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    device_ = createCpuBackend().release();
  }
  static void TearDownTestSuite() {
    delete device_;
    device_ = nullptr;
  }
  void TearDown() override { ::unsetenv("ROCUDA_CPU_BLOCK_FORMS"); }

  LoadedKernel* load(const std::string& ptx, bool blockForms, const char* name = "coop") {
    if (blockForms)
      ::unsetenv("ROCUDA_CPU_BLOCK_FORMS");
    else
      ::setenv("ROCUDA_CPU_BLOCK_FORMS", "0", 1);
    auto module = device_->loadPtx(ptx, name);
    EXPECT_TRUE(module.ok()) << (module.ok() ? "" : module.error().message);
    if (!module.ok()) return nullptr;
    modules_.push_back(std::move(*module));
    return modules_.back()->kernel(name);
  }

  // Runs `kernel` over `blocks` x `threads`; returns the launch status, `out` the outputs.
  static Status run(LoadedKernel& kernel, uint32_t blocks, uint32_t threads, bool cooperative,
                    uint32_t rounds, std::vector<uint32_t>& out, uint32_t victim = ~0u,
                    uint32_t mode = 0) {
    std::vector<uint32_t> slots(blocks, 0);
    out.assign(size_t(blocks) * threads, 0);
    void* s = slots.data();
    void* o = out.data();
    const compiler::KernelInfo& info = kernel.info();
    std::vector<uint8_t> params(info.paramBufferSize);
    const void* args[] = {&s, &o, &rounds, &victim, &mode};
    for (size_t i = 0; i < info.params.size(); ++i)
      std::memcpy(params.data() + info.params[i].offset, args[i], info.params[i].size);
    LaunchConfig config;
    config.grid = {blocks, 1, 1};
    config.block = {threads, 1, 1};
    config.cooperative = cooperative;
    return device_->launch(kernel, config, params.data());
  }

  static uint32_t expectedSum(uint32_t blocks, uint32_t rounds) {
    uint32_t sum = 0;
    for (uint32_t round = 0; round < rounds; ++round)
      for (uint32_t block = 0; block < blocks; ++block) sum += block + 1 + round;
    return sum;
  }

  static DeviceBackend* device_;
  std::vector<std::unique_ptr<LoadedModule>> modules_;
};

DeviceBackend* CpuCooperative::device_ = nullptr;

struct Form {
  const char* name;
  bool blockBarrier;  // bar.sync around the grid barrier (needs the block to wait)
  bool blockForms;
  CpuExecution expected;
  uint32_t threads;
};

// Without a block barrier the grid barrier's spin-wait makes the kernel a ThreadEntry (the
// thread waited for might be a later one of the block): its threads run as fibers.
const Form kForms[] = {
    {"ThreadEntry (spin-wait, no block barrier)", false, true, CpuExecution::ThreadEntry, 1},
    {"Continuation", true, true, CpuExecution::Continuation, 64},
    {"ThreadEntry (fibers)", true, false, CpuExecution::ThreadEntry, 64},
    {"ThreadEntry (sequential)", false, false, CpuExecution::ThreadEntry, 1},
};

TEST_F(CpuCooperative, GridBarrierInEveryBlockFormWithManyMoreBlocksThanCores) {
  for (const Form& form : kForms) {
    SCOPED_TRACE(form.name);
    LoadedKernel* kernel = load(coopPtx(form.blockBarrier), form.blockForms);
    ASSERT_NE(kernel, nullptr);
    EXPECT_EQ(kernel->info().cpuExecution, form.expected);
    uint32_t blocks = 4 * uint32_t(device_->description().multiprocessorCount) + 3;
    std::vector<uint32_t> out;
    ASSERT_TRUE(run(*kernel, blocks, form.threads, true, 4, out).ok());
    uint32_t expected = expectedSum(blocks, 4);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], expected) << "thread " << i;
  }
}

TEST_F(CpuCooperative, OrdinaryLaunchReadsNoWorkspaceAndZeroEnvregs) {
  for (const Form& form : kForms) {
    SCOPED_TRACE(form.name);
    LoadedKernel* kernel = load(coopPtx(form.blockBarrier), form.blockForms);
    ASSERT_NE(kernel, nullptr);
    std::vector<uint32_t> out;
    ASSERT_TRUE(run(*kernel, 3, form.threads, false, 1, out).ok());
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 0xffffffffu) << "thread " << i;
  }
}

TEST_F(CpuCooperative, TrappingBlockFailsTheGridInsteadOfHangingIt) {
  for (const Form& form : kForms) {
    SCOPED_TRACE(form.name);
    LoadedKernel* kernel = load(coopPtx(form.blockBarrier), form.blockForms);
    ASSERT_NE(kernel, nullptr);
    std::vector<uint32_t> out;
    Status status = run(*kernel, 6, form.threads, true, 2, out, /*victim=*/4, /*mode=*/1);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().code, ErrorCode::LaunchFailed);
  }
}

TEST_F(CpuCooperative, BlockThatLeavesBeforeTheBarrierIsReportedAsDeadlock) {
  // One form suffices: detection waits about two seconds of no progress.
  LoadedKernel* kernel = load(coopPtx(true), true);
  ASSERT_NE(kernel, nullptr);
  std::vector<uint32_t> out;
  Status status = run(*kernel, 5, 32, true, 1, out, /*victim=*/2, /*mode=*/2);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::LaunchFailed);
}

// Block 0 reads %clock64 `reads` times while every other block waits for it at a grid barrier
// (one thread per block: a BlockLoop kernel). A count of reads, not a span of cycles, so that
// block 0's processor time does not depend on how loaded the machine is.
const char* kBusyPtx = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry busy(.param .u64 reads)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd9, [reads];
  mov.u32 %r4, %envreg1;
  mov.u32 %r5, %envreg2;
  mov.b64 %rd3, {%r5, %r4};
  add.s64 %rd6, %rd3, 4;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r3, %nctaid.x;
  mov.u32 %r7, 1;
  setp.ne.u32 %p3, %r1, 0;
  @%p3 bra ARRIVE;
  sub.s32 %r8, %r3, 1;
  mov.u32 %r9, -2147483648;
  sub.s32 %r7, %r9, %r8;
  mov.u64 %rd1, 0;
WORK:
  mov.u64 %rd2, %clock64;
  add.s64 %rd1, %rd1, 1;
  setp.lt.u64 %p1, %rd1, %rd9;
  @%p1 bra WORK;
ARRIVE:
  atom.add.release.gpu.u32 %r10, [%rd6], %r7;
SPIN:
  ld.acquire.gpu.u32 %r11, [%rd6];
  xor.b32 %r12, %r11, %r10;
  setp.gt.s32 %p2, %r12, -1;
  @%p2 bra SPIN;
  ret;
}
)";

double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

TEST_F(CpuCooperative, WaitingBlocksLeaveTheCoresToTheBlockTheyWaitFor) {
  LoadedKernel* kernel = load(kBusyPtx, true, "busy");
  ASSERT_NE(kernel, nullptr);
  // A spin-wait without a block barrier: fibers, whose scheduler backs off as a whole.
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::ThreadEntry);
  uint64_t reads = 10'000'000;  // about 0.1 s
  std::vector<uint8_t> params(kernel->info().paramBufferSize);
  std::memcpy(params.data() + kernel->info().params[0].offset, &reads, sizeof reads);
  // The processor time a cooperative launch of `blocks` takes.
  auto cpuSeconds = [&](uint32_t blocks) {
    LaunchConfig config;
    config.grid = {blocks, 1, 1};
    config.cooperative = true;
    double start = processCpuSeconds();
    EXPECT_TRUE(device_->launch(*kernel, config, params.data()).ok());
    return processCpuSeconds() - start;
  };
  double alone = cpuSeconds(1);
  double waited = cpuSeconds(8 * uint32_t(device_->description().multiprocessorCount));
  // Block 0's work is the same; waiters that spun would add the time of every other core.
  EXPECT_LT(waited, 1.5 * alone + 0.03) << "alone " << alone << " s, with waiters " << waited;
}

// Every block but the last spins on a flag that the last block sets; then each writes out[ctaid].
const char* kLaterBlockPtx = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry later(.param .u64 flag, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %nctaid.x;
  sub.u32 %r3, %r2, 1;
  setp.eq.u32 %p1, %r1, %r3;
  @%p1 bra SET;
SPIN:
  ld.acquire.gpu.u32 %r4, [%rd1];
  setp.eq.u32 %p2, %r4, 0;
  @%p2 bra SPIN;
  bra.uni DONE;
SET:
  mov.u32 %r5, 1;
  st.release.gpu.u32 [%rd1], %r5;
DONE:
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.u32 [%rd4], %r2;
  ret;
}
)";

// An ordinary launch of `later`; `resident`: the blocks the device holds at once (0: all).
Status runLater(DeviceBackend& device, LoadedKernel& kernel, uint32_t blocks, uint32_t resident,
                std::vector<uint32_t>& out) {
  uint32_t flag = 0;
  out.assign(blocks, 0);
  void* f = &flag;
  void* o = out.data();
  const compiler::KernelInfo& info = kernel.info();
  std::vector<uint8_t> params(info.paramBufferSize);
  std::memcpy(params.data() + info.params[0].offset, &f, sizeof f);
  std::memcpy(params.data() + info.params[1].offset, &o, sizeof o);
  LaunchConfig config;
  config.grid = {blocks, 1, 1};
  config.block = {32, 1, 1};
  config.residentBlocks = resident;
  return device.launch(kernel, config, params.data());
}

TEST_F(CpuCooperative, OrdinaryBlocksWaitingForALaterBlockRunWithIt) {
  // Many more waiting blocks than cores: the grid fits the device, so all run at once.
  uint32_t blocks = 4 * uint32_t(device_->description().multiprocessorCount) + 3;
  for (bool blockForms : {true, false}) {
    SCOPED_TRACE(blockForms ? "block forms" : "per-thread functions");
    LoadedKernel* kernel = load(kLaterBlockPtx, blockForms, "later");
    ASSERT_NE(kernel, nullptr);
    std::vector<uint32_t> out;
    Status status = runLater(*device_, *kernel, blocks, 0, out);
    ASSERT_TRUE(status.ok()) << status.error().message;
    for (uint32_t b = 0; b < blocks; ++b) EXPECT_EQ(out[b], blocks) << "block " << b;
  }
}

TEST_F(CpuCooperative, OrdinaryGridWaitingForMoreBlocksThanFitIsReportedAsDeadlock) {
  // Four blocks fit; the first four wait for the ninth, which a GPU would never start either.
  LoadedKernel* kernel = load(kLaterBlockPtx, true, "later");
  ASSERT_NE(kernel, nullptr);
  std::vector<uint32_t> out;
  Status status = runLater(*device_, *kernel, 9, 4, out);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::LaunchFailed);
}

// Block 1 works for `busy` nanoseconds, releases block 0 (flags[0]) and waits for it
// (flags[1]); block 0, released, works as long before releasing block 1. Neither polls while it
// works (%globaltimer is no memory). Block 0's wait sees nothing change for longer than a
// cooperative grid's stuck limit (about 2 s), and block 1's wait does later, while block 0 works.
const char* kHandOverPtx = R"(.version 7.0
.target sm_70
.address_size 64
.visible .entry handOver(.param .u64 flags, .param .u64 busy)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [flags];
  ld.param.u64 %rd2, [busy];
  mov.u32 %r1, %ctaid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra SECOND;
WAIT_A:
  ld.acquire.gpu.u32 %r2, [%rd1];
  setp.eq.u32 %p2, %r2, 0;
  @%p2 bra WAIT_A;
  mov.u64 %rd3, %globaltimer;
  add.u64 %rd4, %rd3, %rd2;
WORK0:
  mov.u64 %rd5, %globaltimer;
  setp.lt.u64 %p3, %rd5, %rd4;
  @%p3 bra WORK0;
  st.release.gpu.u32 [%rd1+4], 1;
  ret;
SECOND:
  mov.u64 %rd3, %globaltimer;
  add.u64 %rd4, %rd3, %rd2;
WORK1:
  mov.u64 %rd5, %globaltimer;
  setp.lt.u64 %p3, %rd5, %rd4;
  @%p3 bra WORK1;
  st.release.gpu.u32 [%rd1], 1;
WAIT_B:
  ld.acquire.gpu.u32 %r3, [%rd1+4];
  setp.eq.u32 %p2, %r3, 0;
  @%p2 bra WAIT_B;
  ret;
}
)";

TEST_F(CpuCooperative, BlockThatLeftALongWaitAndWorksIsNotStuck) {
  // Block 0 counted as stuck when its wait ended; block 1 then waits past the limit while block
  // 0 still works: every running block is marked stuck, but block 0 no longer polls to confirm
  // it, so the grid is not a deadlock and completes.
  LoadedKernel* kernel = load(kHandOverPtx, true, "handOver");
  ASSERT_NE(kernel, nullptr);
  uint32_t flags[2] = {0, 0};
  void* f = flags;
  uint64_t busy = 3'000'000'000;  // ns
  std::vector<uint8_t> params(kernel->info().paramBufferSize);
  std::memcpy(params.data() + kernel->info().params[0].offset, &f, sizeof f);
  std::memcpy(params.data() + kernel->info().params[1].offset, &busy, sizeof busy);
  LaunchConfig config;
  config.grid = {2, 1, 1};
  config.cooperative = true;
  Status status = device_->launch(*kernel, config, params.data());
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(flags[0], 1u);
  EXPECT_EQ(flags[1], 1u);
}

}  // namespace
}  // namespace rocuda::backends
