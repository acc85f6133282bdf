// The CPU device running kernels in each block form (compiler.h): work-item loops, continuations
// stepped from wait to wait, and the per-thread slow path, checked against host references.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/device_backend.h"

namespace rocuda::backends {
namespace {

std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using compiler::CpuExecution;

class CpuBlockForms : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::setenv("ROCUDA_CACHE", "0", 1);  // compile afresh: the test is about the compiler's output
    // Every kernel compiled at load, so that the form it took can be checked before launching.
    ::setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    device_ = createCpuBackend().release();
  }
  static void TearDownTestSuite() {
    delete device_;
    device_ = nullptr;
  }

  LoadedKernel* load(const char* ptx, const char* kernel) {
    auto module = device_->loadPtx(ptx, kernel);
    EXPECT_TRUE(module.ok()) << (module.ok() ? "" : module.error().message);
    if (!module.ok()) return nullptr;
    modules_.push_back(std::move(*module));
    return modules_.back()->kernel(kernel);
  }

  // Pack `args` (each the address of a value) as the kernel's parameter buffer.
  static std::vector<uint8_t> pack(const LoadedKernel& kernel, std::vector<const void*> args) {
    const compiler::KernelInfo& info = kernel.info();
    std::vector<uint8_t> buffer(info.paramBufferSize);
    for (size_t i = 0; i < args.size() && i < info.params.size(); ++i)
      std::memcpy(buffer.data() + info.params[i].offset, args[i], info.params[i].size);
    return buffer;
  }

  static Status launch(LoadedKernel& kernel, std::array<uint32_t, 3> grid,
                       std::array<uint32_t, 3> block, std::vector<const void*> args) {
    LaunchConfig config;
    config.grid = grid;
    config.block = block;
    std::vector<uint8_t> params = pack(kernel, std::move(args));
    return device_->launch(kernel, config, params.data());
  }

  static DeviceBackend* device_;
  std::vector<std::unique_ptr<LoadedModule>> modules_;

 public:
  // One block of `threads` threads.
  static Status run(LoadedKernel& kernel, uint32_t threads, std::vector<const void*> args) {
    return launch(kernel, {1, 1, 1}, {threads, 1, 1}, std::move(args));
  }
};

DeviceBackend* CpuBlockForms::device_ = nullptr;

const char* kIdsPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry ids(.param .u64 out, .param .u64 lanes)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd4, [lanes];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.y;
  mov.u32 %r3, %tid.z;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %ntid.y;
  mov.u32 %r6, %ctaid.x;
  mov.u32 %r8, %ntid.z;
  mad.lo.u32 %r7, %r3, %r5, %r2;
  mad.lo.u32 %r7, %r7, %r4, %r1;
  mul.lo.u32 %r9, %r4, %r5;
  mul.lo.u32 %r9, %r9, %r8;
  mad.lo.u32 %r10, %r6, %r9, %r7;
  mad.lo.u32 %r11, %r2, 100, %r1;
  mad.lo.u32 %r11, %r3, 10000, %r11;
  mad.lo.u32 %r11, %r6, 1000000, %r11;
  mul.wide.u32 %rd2, %r10, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r11;
  mov.u32 %r12, %laneid;
  mov.u32 %r13, %warpid;
  mov.u32 %r15, %lanemask_lt;
  popc.b32 %r16, %r15;
  add.u32 %r12, %r12, %r16;
  mad.lo.u32 %r14, %r13, 64, %r12;
  add.s64 %rd5, %rd4, %rd2;
  st.global.u32 [%rd5], %r14;
  ret;
}
)";

TEST_F(CpuBlockForms, WorkItemLoopSeesEveryThreadIdentity) {
  LoadedKernel* kernel = load(kIdsPtx, "ids");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::BlockLoop);
  const uint32_t nx = 8, ny = 5, nz = 3, blocks = 3, perBlock = nx * ny * nz;
  std::vector<uint32_t> out(blocks * perBlock, 0xdead), lanes(blocks * perBlock, 0xdead);
  void* o = out.data();
  void* l = lanes.data();
  ASSERT_TRUE(launch(*kernel, {blocks, 1, 1}, {nx, ny, nz}, {&o, &l}).ok());
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t z = 0; z < nz; ++z)
      for (uint32_t y = 0; y < ny; ++y)
        for (uint32_t x = 0; x < nx; ++x) {
          uint32_t linear = (z * ny + y) * nx + x, index = b * perBlock + linear;
          ASSERT_EQ(out[index], x + 100 * y + 10000 * z + 1000000 * b) << index;
          // laneid + popc(lanemask_lt) + 64 * warpid = 2 * lane + 64 * warp.
          ASSERT_EQ(lanes[index], 2 * (linear % 32) + 64 * (linear / 32)) << index;
        }
}

// A barrier inside a loop, shared memory exchanged across it, and local memory live across it.
const char* kReversePtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry reverse(.param .u64 out, .param .u32 iters)
{
  .local .align 4 .b8 depot[64];
  .shared .align 4 .b8 sbuf[4096];
  .reg .pred %p<3>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, 0;
  mov.u32 %r5, %r2;
  and.b32 %r6, %r2, 15;
  mov.u64 %rd2, depot;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.local.u32 [%rd4], %r2;
  mov.u32 %r8, sbuf;
LOOP:
  setp.ge.u32 %p1, %r4, %r1;
  @%p1 bra DONE;
  shl.b32 %r7, %r2, 2;
  add.u32 %r9, %r8, %r7;
  st.shared.u32 [%r9], %r5;
  bar.sync 0;
  sub.u32 %r10, %r3, 1;
  sub.u32 %r10, %r10, %r2;
  shl.b32 %r11, %r10, 2;
  add.u32 %r12, %r8, %r11;
  ld.shared.u32 %r13, [%r12];
  add.u32 %r5, %r13, %r4;
  bar.sync 0;
  add.u32 %r4, %r4, 1;
  bra LOOP;
DONE:
  ld.local.u32 %r14, [%rd4];
  mul.lo.u32 %r15, %r14, 1000;
  add.u32 %r5, %r5, %r15;
  mov.u32 %r16, %ctaid.x;
  mad.lo.u32 %r17, %r16, %r3, %r2;
  mul.wide.u32 %rd5, %r17, 4;
  add.s64 %rd6, %rd1, %rd5;
  st.global.u32 [%rd6], %r5;
  ret;
}
)";

TEST_F(CpuBlockForms, ContinuationsKeepStateAcrossBarriersInLoops) {
  LoadedKernel* kernel = load(kReversePtx, "reverse");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::Continuation);
  const uint32_t threads = 200, blocks = 4, iters = 5;
  std::vector<uint32_t> out(threads * blocks, 0);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {blocks, 1, 1}, {threads, 1, 1}, {&o, &iters}).ok());
  std::vector<uint32_t> v(threads);
  std::iota(v.begin(), v.end(), 0u);
  for (uint32_t i = 0; i < iters; ++i) {
    std::vector<uint32_t> next(threads);
    for (uint32_t t = 0; t < threads; ++t) next[t] = v[threads - 1 - t] + i;
    v = next;
  }
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t t = 0; t < threads; ++t)
      ASSERT_EQ(out[b * threads + t], v[t] + t * 1000) << "block " << b << " thread " << t;
}

// bar.red, a shuffle reduction and a ballot in one kernel.
const char* kCollectivesPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry collectives(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p1, %r2, 1;
  bar.red.popc.u32 %r3, 0, %p1;
  mov.u32 %r4, %r1;
  shfl.sync.down.b32 %r5, %r4, 16, 31, -1;
  add.u32 %r4, %r4, %r5;
  shfl.sync.down.b32 %r5, %r4, 8, 31, -1;
  add.u32 %r4, %r4, %r5;
  shfl.sync.down.b32 %r5, %r4, 4, 31, -1;
  add.u32 %r4, %r4, %r5;
  shfl.sync.down.b32 %r5, %r4, 2, 31, -1;
  add.u32 %r4, %r4, %r5;
  shfl.sync.down.b32 %r5, %r4, 1, 31, -1;
  add.u32 %r4, %r4, %r5;
  setp.lt.u32 %p2, %r1, 40;
  vote.sync.ballot.b32 %r6, %p2, -1;
  mul.lo.u32 %r7, %r1, 3;
  mul.wide.u32 %rd2, %r7, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  st.global.u32 [%rd3+4], %r4;
  st.global.u32 [%rd3+8], %r6;
  ret;
}
)";

TEST_F(CpuBlockForms, ContinuationsReleaseBarrierReductionsAndWarpCollectives) {
  LoadedKernel* kernel = load(kCollectivesPtx, "collectives");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::Continuation);
  const uint32_t threads = 64;
  std::vector<uint32_t> out(threads * 3, 0);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {threads, 1, 1}, {&o}).ok());
  // Host reference of shfl.down with clamp 31: a lane whose source is out of range keeps its own.
  std::vector<uint32_t> sum(threads);
  std::iota(sum.begin(), sum.end(), 0u);
  for (uint32_t delta : {16u, 8u, 4u, 2u, 1u}) {
    std::vector<uint32_t> next = sum;
    for (uint32_t t = 0; t < threads; ++t) {
      uint32_t lane = t % 32, source = lane + delta <= 31 ? t + delta : t;
      next[t] = sum[t] + sum[source];
    }
    sum = next;
  }
  for (uint32_t t = 0; t < threads; ++t) {
    EXPECT_EQ(out[3 * t], 32u) << t;  // 32 odd threads in the block
    EXPECT_EQ(out[3 * t + 1], sum[t]) << t;
    EXPECT_EQ(out[3 * t + 2], t < 32 ? 0xffffffffu : 0x000000ffu) << t;
  }
}

// bar.red on named barriers with thread counts: warps 0-1 reduce at barrier 1, warps 2-3 at
// barrier 2, twice each (the second round's tally starts afresh); each group sees its own votes.
const char* kNamedReductionPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry named(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 12;
  add.s64 %rd3, %rd1, %rd2;
  setp.eq.u32 %p1, %r1, 0;
  setp.ne.u32 %p2, %r1, 70;
  setp.lt.u32 %p3, %r1, 64;
  @!%p3 bra SECOND;
  bar.red.popc.u32 %r2, 1, 64, %p1;
  bar.red.and.pred %p2, 1, 64, %p2;
  bra.uni DONE;
SECOND:
  bar.red.popc.u32 %r2, 2, 64, %p2;
  bar.red.and.pred %p2, 2, 64, %p2;
DONE:
  selp.u32 %r3, 1, 0, %p2;
  st.global.u32 [%rd3], %r2;
  st.global.u32 [%rd3+4], %r3;
  ret;
}
)";

TEST_F(CpuBlockForms, NamedBarrierReductionsCountTheirOwnGroup) {
  LoadedKernel* kernel = load(kNamedReductionPtx, "named");
  ASSERT_NE(kernel, nullptr);
  const uint32_t threads = 128;
  std::vector<uint32_t> out(threads * 3, 7);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {threads, 1, 1}, {&o}).ok());
  for (uint32_t t = 0; t < threads; ++t) {
    bool first = t < 64;
    EXPECT_EQ(out[3 * t], first ? 1u : 63u) << t;     // thread 0 true; all but thread 70 true
    EXPECT_EQ(out[3 * t + 1], first ? 1u : 0u) << t;  // and: thread 70 false in group 2
  }
}

// activemask where a warp diverges (48 threads: the second warp has 16 lanes): in the converged
// code, in each side of a branch, after a __syncwarp only the odd lanes take, and with the lanes
// of tid >= 44 gone ahead. `prologue` goes first (a call that sends the kernel down the slow
// path, or nothing).
std::string activemaskPtx(const std::string& functions, const std::string& prologue) {
  return R"(.version 7.0
.target sm_75
.address_size 64
)" + functions + R"(
.visible .entry masks(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
)" + prologue + R"(
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p1, %r2, 0;
  activemask.b32 %r3;
  @%p1 bra EVEN;
  activemask.b32 %r4;
  bra.uni JOIN;
EVEN:
  activemask.b32 %r4;
JOIN:
  @!%p1 bar.warp.sync 0xaaaaaaaa;
  activemask.b32 %r5;
  st.global.u32 [%rd3], %r3;
  st.global.u32 [%rd3+4], %r4;
  st.global.u32 [%rd3+8], %r5;
  setp.ge.u32 %p2, %r1, 44;
  @%p2 bra DONE;
  activemask.b32 %r6;
  st.global.u32 [%rd3+12], %r6;
DONE:
  ret;
}
)";
}

void expectActivemasks(const std::vector<uint32_t>& out, uint32_t threads) {
  for (uint32_t t = 0; t < threads; ++t) {
    uint32_t live = t < 32 ? 0xffffffffu : 0x0000ffffu;
    uint32_t side = (t % 2 == 0 ? 0x55555555u : 0xaaaaaaaau) & live;
    uint32_t ahead = t < 32 ? 0xffffffffu : 0x00000fffu;
    EXPECT_EQ(out[4 * t], live) << "converged, thread " << t;
    EXPECT_EQ(out[4 * t + 1], side) << "diverged, thread " << t;
    EXPECT_EQ(out[4 * t + 2], live) << "after the odd lanes' __syncwarp, thread " << t;
    EXPECT_EQ(out[4 * t + 3], t < 44 ? ahead : 0u) << "with lanes gone ahead, thread " << t;
  }
}

TEST_F(CpuBlockForms, ActivemaskAnswersTheLanesAtTheSameInstruction) {
  std::string ptx = activemaskPtx("", "");
  LoadedKernel* kernel = load(ptx.c_str(), "masks");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::Continuation);
  const uint32_t threads = 48;
  std::vector<uint32_t> out(threads * 4, 0);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {2, 1, 1}, {threads, 1, 1}, {&o}).ok());
  expectActivemasks(out, threads);
}

// The shuffle and vote of PTX before 6.0 (no .sync, no member mask: the lanes executing them
// together take part), converged and in a branch of the even lanes, in a full and a partial warp.
const char* kLegacyWarpPtx = R"(.version 5.0
.target sm_60
.address_size 64
.visible .entry legacy(.param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  shfl.bfly.b32 %r2, %r1, 1, 0x1f;
  and.b32 %r3, %r1, 1;
  setp.eq.u32 %p1, %r3, 0;
  @!%p1 bra ODD;
  shfl.down.b32 %r4|%p2, %r1, 2, 0x1f;
  vote.ballot.b32 %r5, %p1;
  selp.u32 %r6, 1, 0, %p2;
  bra JOIN;
ODD:
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
  mov.u32 %r6, 7;
JOIN:
  st.global.v4.u32 [%rd3], {%r2, %r4, %r5, %r6};
  ret;
}
)";

TEST_F(CpuBlockForms, ShuffleAndVoteWithoutSyncTakeTheActiveLanes) {
  LoadedKernel* kernel = load(kLegacyWarpPtx, "legacy");
  ASSERT_NE(kernel, nullptr);
  const uint32_t threads = 48;  // a full warp and one of 16 lanes
  std::vector<uint32_t> out(threads * 4, 0);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {threads, 1, 1}, {&o}).ok());
  for (uint32_t t = 0; t < threads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    uint32_t lane = t % 32, live = t < 32 ? 32 : 16;
    EXPECT_EQ(out[4 * t], t ^ 1);  // butterfly across the whole warp
    if (t % 2 == 1) {
      EXPECT_EQ(out[4 * t + 3], 7u);
      continue;
    }
    // Among the even lanes: down by 2 reads the next even lane; past lane 31 a lane keeps its
    // own value and its predicate is false. (Lane 14 of the partial warp reads a lane that does
    // not exist: undefined, not checked.)
    if (lane + 2 < live) {
      EXPECT_EQ(out[4 * t + 1], t + 2);
      EXPECT_EQ(out[4 * t + 3], 1u);
    } else if (lane + 2 > 31) {
      EXPECT_EQ(out[4 * t + 1], t);
      EXPECT_EQ(out[4 * t + 3], 0u);
    }
    EXPECT_EQ(out[4 * t + 2], live == 32 ? 0x55555555u : 0x5555u);  // the ballot of the branch
  }
}

// A warp sum by shuffles down 16..1 (one fused chain, run by the round function), in blocks
// whose last warp is whole and blocks whose last warp has 16 lanes. Whole warps get CUDA's
// results; in the short warp a lane whose source does not exist keeps its own value, as the
// runtime's chain does (undefined in CUDA, where those lanes would not be in the mask).
const char* kChainSumPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry chainSum(.param .u64 out)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mad.lo.s32 %r2, %r1, 3, 1;
  shfl.sync.down.b32 %r3, %r2, 16, 31, -1;
  add.s32 %r4, %r2, %r3;
  shfl.sync.down.b32 %r5, %r4, 8, 31, -1;
  add.s32 %r6, %r4, %r5;
  shfl.sync.down.b32 %r7, %r6, 4, 31, -1;
  add.s32 %r8, %r6, %r7;
  shfl.sync.down.b32 %r9, %r8, 2, 31, -1;
  add.s32 %r10, %r8, %r9;
  shfl.sync.down.b32 %r11, %r10, 1, 31, -1;
  add.s32 %r12, %r10, %r11;
  bar.sync 0;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r12;
  ret;
}
)";

TEST_F(CpuBlockForms, ShuffleChainsInWholeAndShortWarps) {
  LoadedKernel* kernel = load(kChainSumPtx, "chainSum");
  ASSERT_NE(kernel, nullptr);
  for (uint32_t threads : {96u, 80u}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    std::vector<uint32_t> out(threads, 0);
    void* o = out.data();
    ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {threads, 1, 1}, {&o}).ok());
    for (uint32_t first = 0; first < threads; first += 32) {
      uint32_t lanes = std::min(32u, threads - first);
      std::vector<uint32_t> v(lanes);
      for (uint32_t l = 0; l < lanes; ++l) v[l] = (first + l) * 3 + 1;
      for (uint32_t offset = 16; offset > 0; offset /= 2) {
        std::vector<uint32_t> next(lanes);
        for (uint32_t l = 0; l < lanes; ++l)
          next[l] = v[l] + (l + offset < lanes ? v[l + offset] : v[l]);
        v = next;
      }
      for (uint32_t l = 0; l < lanes; ++l)
        EXPECT_EQ(out[first + l], v[l]) << "thread " << first + l;
    }
  }
}

// elect.sync over the whole warp, over the odd lanes in a branch, and over lanes 4..7 alone.
const char* kElectPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry elect(.param .u64 out)
{
  .reg .pred %p<6>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  elect.sync %r2|%p1, 0xffffffff;
  selp.u32 %r3, 1, 0, %p1;
  mov.u32 %r4, 99;
  mov.u32 %r5, 99;
  and.b32 %r6, %r1, 1;
  setp.eq.u32 %p2, %r6, 1;
  @!%p2 bra FOUR;
  elect.sync _|%p3, 0xaaaaaaaa;
  selp.u32 %r4, 1, 0, %p3;
FOUR:
  and.b32 %r7, %r1, 31;
  setp.lt.u32 %p4, %r7, 4;
  setp.gt.u32 %p5, %r7, 7;
  or.pred %p4, %p4, %p5;
  @%p4 bra DONE;
  elect.sync %r5|%p3, 0xf0;
  selp.u32 %r8, 1, 0, %p3;
  shl.b32 %r8, %r8, 8;
  or.b32 %r5, %r5, %r8;
DONE:
  st.global.v4.u32 [%rd3], {%r2, %r3, %r4, %r5};
  ret;
}
)";

TEST_F(CpuBlockForms, ElectChoosesTheLowestMemberLane) {
  LoadedKernel* kernel = load(kElectPtx, "elect");
  ASSERT_NE(kernel, nullptr);
  const uint32_t threads = 64;
  std::vector<uint32_t> out(threads * 4, 0);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {threads, 1, 1}, {&o}).ok());
  for (uint32_t t = 0; t < threads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    uint32_t lane = t % 32;
    EXPECT_EQ(out[4 * t], 0u);  // the whole warp: lane 0 leads
    EXPECT_EQ(out[4 * t + 1], lane == 0 ? 1u : 0u);
    EXPECT_EQ(out[4 * t + 2], t % 2 == 1 ? (lane == 1 ? 1u : 0u) : 99u);  // odd lanes: lane 1
    if (lane >= 4 && lane <= 7)
      EXPECT_EQ(out[4 * t + 3], 4u | (lane == 4 ? 1u << 8 : 0u));  // lanes 4..7: lane 4
    else
      EXPECT_EQ(out[4 * t + 3], 99u);
  }
}

// One thread through an mbarrier's states: counts, transaction counts, drops, the state and
// parity forms of the waits (a wait that cannot complete returns false: nothing else can run).
const char* kMBarrierStatesPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry mbarrierStates(.param .u64 out)
{
  .shared .align 8 .b64 bar;
  .reg .pred %p<8>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  mbarrier.init.shared::cta.b64 [bar], 3;
  mbarrier.arrive.shared::cta.b64 %rd2, [bar], 2;
  mbarrier.pending_count.b64 %r1, %rd2;
  mbarrier.test_wait.shared::cta.b64 %p1, [bar], %rd2;
  mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], 16;
  mbarrier.arrive.shared::cta.b64 %rd3, [bar];
  mbarrier.pending_count.b64 %r2, %rd3;
  mbarrier.try_wait.shared::cta.b64 %p2, [bar], %rd3;
  mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [bar], 16;
  mbarrier.try_wait.shared::cta.b64 %p3, [bar], %rd3, 1000;
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [bar], 0;
  mbarrier.test_wait.parity.shared::cta.b64 %p5, [bar], 1;
  mbarrier.arrive_drop.shared::cta.b64 %rd4, [bar];
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [bar], 8;
  mbarrier.pending_count.b64 %r3, %rd5;
  mbarrier.complete_tx.shared::cta.b64 [bar], 8;
  mbarrier.arrive.shared::cta.b64 %rd6, [bar];
  mbarrier.test_wait.parity.shared::cta.b64 %p6, [bar], 1;
  mbarrier.arrive.shared::cta.b64 %rd7, [bar];
  mbarrier.pending_count.b64 %r4, %rd7;
  mbarrier.inval.shared::cta.b64 [bar];
  selp.u32 %r11, 1, 0, %p1;
  selp.u32 %r12, 1, 0, %p2;
  selp.u32 %r13, 1, 0, %p3;
  selp.u32 %r14, 1, 0, %p4;
  selp.u32 %r15, 1, 0, %p5;
  selp.u32 %r16, 1, 0, %p6;
  st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r4};
  st.global.v4.u32 [%rd1+16], {%r11, %r12, %r13, %r14};
  st.global.v2.u32 [%rd1+32], {%r15, %r16};
  ret;
}
)";

TEST_F(CpuBlockForms, MBarrierCountsArrivalsAndTransactions) {
  LoadedKernel* kernel = load(kMBarrierStatesPtx, "mbarrierStates");
  ASSERT_NE(kernel, nullptr);
  std::vector<uint32_t> out(10, 0xdead);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {1, 1, 1}, {&o}).ok());
  // Pending after arriving 2 of 3; after the last arrival (the phase waits for 16 bytes); in
  // phase 1 after a drop and an arrival; in phase 2, whose expected count the drop lowered to 2.
  EXPECT_EQ(out[0], 1u);
  EXPECT_EQ(out[1], 0u);
  EXPECT_EQ(out[2], 1u);
  EXPECT_EQ(out[3], 1u);
  EXPECT_EQ(out[4], 0u) << "test_wait before the last arrival";
  EXPECT_EQ(out[5], 0u) << "try_wait with transactions pending";
  EXPECT_EQ(out[6], 1u) << "try_wait after complete_tx";
  EXPECT_EQ(out[7], 1u) << "parity 0 after phase 0";
  EXPECT_EQ(out[8], 0u) << "parity 1 while phase 1 runs";
  EXPECT_EQ(out[9], 1u) << "parity 1 after phase 1";
}

// A producer/consumer loop on mbarriers, as cuda::pipeline and cuda::barrier make it: each
// iteration every thread publishes a value, waits (try_wait.parity) for all of them, adds its
// neighbour's, waits (test_wait with the arrival's state) until all have read, then waits at its
// half of the block's own barrier. Every such round completes in the round function
// (emitMBarrierCompletion). At the end a hand-off that no round can complete at once: the
// first half waits on `upper`, which the second half arrives on only after its wait on `lower`
// (the runtime releases the second half first).
const char* kMBarrierRoundsPtx = R"(.version 7.8
.target sm_90
.address_size 64
.visible .entry mbarrierRounds(.param .u64 out, .param .u32 iterations)
{
  .shared .align 8 .b64 full;
  .shared .align 8 .b64 empty;
  .shared .align 8 .b64 half[2];
  .shared .align 8 .b64 lower;
  .shared .align 8 .b64 upper;
  .shared .align 4 .b32 token;
  .shared .align 4 .b32 values[256];
  .reg .pred %p<8>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r10, [iterations];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ntid.x;
  shr.u32 %r3, %r2, 1;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra INITED;
  mbarrier.init.shared.b64 [full], %r2;
  mbarrier.init.shared.b64 [empty], %r2;
  mbarrier.init.shared.b64 [half], %r3;
  mbarrier.init.shared.b64 [half+8], %r3;
  mbarrier.init.shared.b64 [lower], %r3;
  mbarrier.init.shared.b64 [upper], %r3;
INITED:
  bar.sync 0;
  shl.b32 %r4, %r1, 2;
  mov.u32 %r5, values;
  add.u32 %r6, %r5, %r4;
  add.u32 %r7, %r1, 1;
  rem.u32 %r7, %r7, %r2;
  shl.b32 %r7, %r7, 2;
  add.u32 %r7, %r5, %r7;
  setp.ge.u32 %p2, %r1, %r3;
  selp.u32 %r8, 8, 0, %p2;
  mov.u32 %r9, half;
  add.u32 %r9, %r9, %r8;
  mov.u32 %r11, 0;
  mov.u32 %r12, 0;
  mov.u32 %r13, 0;
LOOP:
  setp.ge.u32 %p3, %r11, %r10;
  @%p3 bra HANDOFF;
  mad.lo.u32 %r14, %r11, 1000, %r1;
  st.shared.u32 [%r6], %r14;
  mbarrier.arrive.shared.b64 %rd2, [full];
WAITFULL:
  mbarrier.try_wait.parity.shared.b64 %p4, [full], %r13;
  @!%p4 bra WAITFULL;
  ld.shared.u32 %r15, [%r7];
  add.u32 %r12, %r12, %r15;
  mbarrier.arrive.shared.b64 %rd3, [empty];
WAITEMPTY:
  mbarrier.test_wait.shared.b64 %p5, [empty], %rd3;
  @!%p5 bra WAITEMPTY;
  mbarrier.arrive.shared.b64 %rd4, [%r9];
WAITHALF:
  mbarrier.try_wait.parity.shared.b64 %p6, [%r9], %r13;
  @!%p6 bra WAITHALF;
  xor.b32 %r13, %r13, 1;
  add.u32 %r11, %r11, 1;
  bra LOOP;
HANDOFF:
  @%p2 bra SECOND;
  mbarrier.arrive.shared.b64 %rd5, [lower];
WAITUPPER:
  mbarrier.try_wait.parity.shared.b64 %p7, [upper], 0;
  @!%p7 bra WAITUPPER;
  ld.shared.u32 %r16, [token];
  bra JOIN;
SECOND:
WAITLOWER:
  mbarrier.try_wait.parity.shared.b64 %p7, [lower], 0;
  @!%p7 bra WAITLOWER;
  mov.u32 %r16, 77;
  st.shared.u32 [token], %r16;
  mbarrier.arrive.shared.b64 %rd6, [upper];
JOIN:
  add.u32 %r12, %r12, %r16;
  mov.u32 %r17, %ctaid.x;
  mad.lo.u32 %r18, %r17, %r2, %r1;
  mul.wide.u32 %rd7, %r18, 4;
  add.s64 %rd8, %rd1, %rd7;
  st.global.u32 [%rd8], %r12;
  ret;
}
)";

TEST_F(CpuBlockForms, MBarrierWaitsTheBlockCompletesStayInTheRoundFunction) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("rocuda_mbarrier_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::setenv("ROCUDA_DUMP", dir.c_str(), 1);
  LoadedKernel* kernel = load(kMBarrierRoundsPtx, "mbarrierRounds");
  ::unsetenv("ROCUDA_DUMP");
  ASSERT_NE(kernel, nullptr);
  std::string block = readText(dir / "mbarrierRounds.mbarrierRounds.block.ll");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(kernel->info().cpuExecution, compiler::CpuExecution::Continuation);
  // The round function checks the waiting threads' phases itself.
  size_t rounds = block.find("@__rocuda_round_mbarrierRounds(");
  ASSERT_NE(rounds, std::string::npos) << block;
  EXPECT_NE(block.find("mbarrier.lane", rounds), std::string::npos) << block;
  EXPECT_NE(block.find("load atomic i64", rounds), std::string::npos) << block;

  const uint32_t iterations = 40;
  for (uint32_t threads : {256u, 96u}) {
    const uint32_t blocks = 3;
    std::vector<uint32_t> out(blocks * threads, 0xdead);
    void* o = out.data();
    ASSERT_TRUE(launch(*kernel, {blocks, 1, 1}, {threads, 1, 1}, {&o, &iterations}).ok());
    for (uint32_t b = 0; b < blocks; ++b)
      for (uint32_t t = 0; t < threads; ++t) {
        uint32_t want =
            1000 * iterations * (iterations - 1) / 2 + iterations * ((t + 1) % threads) + 77;
        ASSERT_EQ(out[b * threads + t], want)
            << "block " << b << " thread " << t << " of " << threads;
      }
  }
}

// Every thread waits for an mbarrier that expects twice as many arrivals: the launch fails
// with a log line instead of spinning for ever.
const char* kMBarrierDeadlockPtx = R"(.version 7.0
.target sm_80
.address_size 64
.visible .entry mbarrierDeadlock()
{
  .shared .align 8 .b64 bar;
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra ARRIVE;
  mbarrier.init.shared.b64 [bar], 64;
ARRIVE:
  bar.sync 0;
  mbarrier.arrive.shared.b64 %rd1, [bar];
WAIT:
  mbarrier.test_wait.shared.b64 %p2, [bar], %rd1;
  @!%p2 bra WAIT;
  ret;
}
)";

TEST_F(CpuBlockForms, MBarrierThatCannotCompleteFailsTheLaunch) {
  LoadedKernel* kernel = load(kMBarrierDeadlockPtx, "mbarrierDeadlock");
  ASSERT_NE(kernel, nullptr);
  EXPECT_FALSE(launch(*kernel, {2, 1, 1}, {32, 1, 1}, {}).ok());
}

// brx.idx over a .branchtargets list (nvcc's jump tables); an index past the list traps.
const char* kBranchTablePtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry pick(.param .u64 out, .param .u32 which)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [which];
  ts: .branchtargets CASE0, CASE1, CASE2;
  brx.idx %r1, ts;
CASE0:
  mov.u32 %r2, 10;
  bra.uni DONE;
CASE1:
  mov.u32 %r2, 11;
  bra.uni DONE;
CASE2:
  mov.u32 %r2, 12;
DONE:
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

TEST_F(CpuBlockForms, BranchTableJumpsByIndex) {
  LoadedKernel* kernel = load(kBranchTablePtx, "pick");
  ASSERT_NE(kernel, nullptr);
  for (uint32_t which : {2u, 0u, 1u}) {
    uint32_t out = 0;
    void* o = &out;
    ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {1, 1, 1}, {&o, &which}).ok());
    EXPECT_EQ(out, 10 + which);
  }
  uint32_t out = 0, beyond = 3;
  void* o = &out;
  EXPECT_FALSE(launch(*kernel, {1, 1, 1}, {1, 1, 1}, {&o, &beyond}).ok());
  EXPECT_EQ(out, 0u);
}

const char* kTrapPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry trapLoop(.param .u32 which)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  ld.param.u32 %r1, [which];
  mov.u32 %r2, %tid.x;
  setp.eq.u32 %p1, %r2, %r1;
  @%p1 trap;
  ret;
}
.visible .entry trapStep(.param .u32 which)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  ld.param.u32 %r1, [which];
  bar.sync 0;
  mov.u32 %r2, %tid.x;
  setp.eq.u32 %p1, %r2, %r1;
  @%p1 trap;
  ret;
}
)";

TEST_F(CpuBlockForms, TrapStopsTheLaunchInEitherForm) {
  LoadedKernel* loop = load(kTrapPtx, "trapLoop");
  ASSERT_NE(loop, nullptr);
  LoadedKernel* step = modules_.back()->kernel("trapStep");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(loop->info().cpuExecution, CpuExecution::BlockLoop);
  EXPECT_EQ(step->info().cpuExecution, CpuExecution::Continuation);
  uint32_t which = 5;
  EXPECT_EQ(launch(*loop, {2, 1, 1}, {32, 1, 1}, {&which}).error().code, ErrorCode::LaunchFailed);
  EXPECT_EQ(launch(*step, {2, 1, 1}, {32, 1, 1}, {&which}).error().code, ErrorCode::LaunchFailed);
  which = 1000;  // no thread traps: the same kernels now complete
  EXPECT_TRUE(launch(*loop, {2, 1, 1}, {32, 1, 1}, {&which}).ok());
  EXPECT_TRUE(launch(*step, {2, 1, 1}, {32, 1, 1}, {&which}).ok());
}

// Thread 0 waits at the block barrier while thread 1 waits for thread 0 in a shuffle.
const char* kDeadlockPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry deadlock()
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra BARRIER;
  shfl.sync.idx.b32 %r2, %r1, 0, 31, 3;
  ret;
BARRIER:
  bar.sync 0;
  ret;
}
)";

TEST_F(CpuBlockForms, DeadlockedContinuationFailsInsteadOfHanging) {
  LoadedKernel* kernel = load(kDeadlockPtx, "deadlock");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(launch(*kernel, {1, 1, 1}, {2, 1, 1}, {}).error().code, ErrorCode::LaunchFailed);
}

// A recursive function that waits at a barrier cannot be inlined: the kernel takes the slow
// path (fibers), says why, and still computes the right answer.
const char* kRecursivePtx = R"(.version 7.0
.target sm_75
.address_size 64
.func (.param .b32 result) depth(.param .b32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  ld.param.u32 %r1, [n];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra RECURSE;
  bar.sync 0;
  st.param.b32 [result], 0;
  ret;
RECURSE:
  sub.u32 %r2, %r1, 1;
  {
  .param .b32 param0;
  st.param.b32 [param0], %r2;
  .param .b32 retval0;
  call.uni (retval0), depth, (param0);
  ld.param.b32 %r3, [retval0];
  }
  add.u32 %r4, %r3, 1;
  st.param.b32 [result], %r4;
  ret;
}
.visible .entry recursive(.param .u64 out)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  {
  .param .b32 param0;
  st.param.b32 [param0], 3;
  .param .b32 retval0;
  call.uni (retval0), depth, (param0);
  ld.param.b32 %r2, [retval0];
  }
  add.u32 %r3, %r2, %r1;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
}
)";

TEST_F(CpuBlockForms, WaitInAFunctionNotInlinedTakesTheSlowPathAndSaysWhy) {
  LoadedKernel* kernel = load(kRecursivePtx, "recursive");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::ThreadEntry);
  EXPECT_NE(kernel->info().cpuSlowPathReason.find("not inlined"), std::string::npos)
      << kernel->info().cpuSlowPathReason;
  std::vector<uint32_t> out(8, 0);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {8, 1, 1}, {&o}).ok());
  for (uint32_t t = 0; t < 8; ++t) EXPECT_EQ(out[t], 3 + t);
}

// What keeps a kernel on the per-thread path (fibers): kRecursivePtx's function, waiting at a
// barrier, called first.
struct SlowPath {
  std::string functions, prologue;
};
SlowPath slowPath() {
  std::string functions(kRecursivePtx, std::strstr(kRecursivePtx, ".visible .entry"));
  return {functions.substr(functions.find(".func")), R"(  {
  .param .b32 param0;
  st.param.b32 [param0], 2;
  .param .b32 retval0;
  call.uni (retval0), depth, (param0);
  }
)"};
}

TEST_F(CpuBlockForms, ActivemaskOnTheSlowPathToo) {
  SlowPath slow = slowPath();
  std::string ptx = activemaskPtx(slow.functions, slow.prologue);
  LoadedKernel* kernel = load(ptx.c_str(), "masks");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::ThreadEntry);
  const uint32_t threads = 48;
  std::vector<uint32_t> out(threads * 4, 0);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {threads, 1, 1}, {&o}).ok());
  expectActivemasks(out, threads);
}

// Spin-waits (compiler.h): which loops count as one decides the form. A thread of a block that
// waits for a later thread of the same block needs the threads to run as fibers; a
// compare-and-swap retried with the value it read, or a loop reading volatile shared memory
// that ends by its count, waits for nobody and keeps the block form.
const char* kSpinWaitsPtx = R"(.version 8.0
.target sm_80
.address_size 64
// Relaxed, not volatile: volatile shared accesses of a kernel without __syncwarp are warp
// lockstep points (host_warp_lockstep.cpp), waits that need no spin polls.
.visible .entry waitForLastThread(.param .u64 out)
{
  .shared .align 4 .b32 flag;
  .reg .pred %p<3>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra CLEARED;
  st.relaxed.cta.shared.u32 [flag], 0;
CLEARED:
  bar.sync 0;
  mov.u32 %r2, %ntid.x;
  sub.u32 %r3, %r2, 1;
  setp.ne.u32 %p1, %r1, %r3;
  @%p1 bra WAIT;
  st.relaxed.cta.shared.u32 [flag], 7;
WAIT:
  setp.ne.u32 %p2, %r1, 0;
  @%p2 bra DONE;
SPIN:
  ld.relaxed.cta.shared.u32 %r4, [flag];
  setp.eq.u32 %p1, %r4, 0;
  @%p1 bra SPIN;
  st.global.u32 [%rd1], %r4;
DONE:
  ret;
}
.visible .entry casRetryAdd(.param .u64 sum)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [sum];
  ld.global.u32 %r1, [%rd1];
RETRY:
  add.u32 %r2, %r1, 1;
  atom.global.cas.b32 %r3, [%rd1], %r1, %r2;
  setp.ne.u32 %p1, %r3, %r1;
  mov.u32 %r1, %r3;
  @%p1 bra RETRY;
  ret;
}
.visible .entry spinLockAdd(.param .u64 lock, .param .u64 sum)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [lock];
  ld.param.u64 %rd2, [sum];
ACQUIRE:
  atom.global.cas.b32 %r1, [%rd1], 0, 1;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra ACQUIRE;
  ld.volatile.global.u32 %r2, [%rd2];
  add.u32 %r2, %r2, 1;
  st.volatile.global.u32 [%rd2], %r2;
  atom.global.exch.b32 %r3, [%rd1], 0;
  ret;
}
.visible .entry volatileSharedSum(.param .u64 out)
{
  .shared .align 4 .b32 values[64];
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, values;
  add.u32 %r3, %r3, %r2;
  st.volatile.shared.u32 [%r3], %r1;
  bar.sync 0;
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
  mov.u32 %r3, values;
SUM:
  ld.volatile.shared.u32 %r6, [%r3];
  add.u32 %r4, %r4, %r6;
  add.u32 %r3, %r3, 4;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p1, %r5, 64;
  @%p1 bra SUM;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r4;
  ret;
}
.visible .entry lookBack(.param .u64 flags, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [flags];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  mov.u32 %r5, 0;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra PUBLISH;
  add.s64 %rd5, %rd4, -4;
  ld.volatile.global.u32 %r3, [%rd5];
  bra.uni CHECK;
RELOAD:
  ld.volatile.global.u32 %r3, [%rd5];
CHECK:
  setp.eq.u32 %p2, %r3, 0;
  vote.sync.any.pred %p3, %p2, -1;
  @%p3 bra RELOAD;
  mov.u32 %r5, %r3;
PUBLISH:
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra DONE;
  add.s64 %rd6, %rd2, %rd3;
  st.global.u32 [%rd6], %r5;
  add.u32 %r6, %r5, 1;
  membar.gl;
  st.volatile.global.u32 [%rd4], %r6;
DONE:
  ret;
}
)";

TEST_F(CpuBlockForms, SpinWaitsDecideTheForm) {
  LoadedKernel* waits = load(kSpinWaitsPtx, "waitForLastThread");
  ASSERT_NE(waits, nullptr);
  EXPECT_EQ(waits->info().cpuExecution, CpuExecution::ThreadEntry);
  EXPECT_TRUE(waits->info().spinWaitsOnBlockMemory);
  EXPECT_NE(waits->info().cpuSlowPathReason.find("spin-waits on shared memory"), std::string::npos)
      << waits->info().cpuSlowPathReason;
  uint32_t out = 0;
  void* o = &out;
  // Thread 0 waits for thread 95, which sets the flag after it in a block run one by one.
  ASSERT_TRUE(launch(*waits, {2, 1, 1}, {96, 1, 1}, {&o}).ok());
  EXPECT_EQ(out, 7u);

  LoadedKernel* retry = load(kSpinWaitsPtx, "casRetryAdd");
  ASSERT_NE(retry, nullptr);
  EXPECT_EQ(retry->info().cpuExecution, CpuExecution::BlockLoop);
  EXPECT_FALSE(retry->info().spinWaits);
  uint32_t sum = 0;
  void* s = &sum;
  ASSERT_TRUE(launch(*retry, {4, 1, 1}, {64, 1, 1}, {&s}).ok());
  EXPECT_EQ(sum, 256u);

  // A spin lock may be held by a later thread of the block (on a GPU by any thread): a
  // ThreadEntry whose threads run as fibers.
  LoadedKernel* locked = load(kSpinWaitsPtx, "spinLockAdd");
  ASSERT_NE(locked, nullptr);
  EXPECT_EQ(locked->info().cpuExecution, CpuExecution::ThreadEntry);
  EXPECT_TRUE(locked->info().spinWaits);
  EXPECT_FALSE(locked->info().spinWaitsOnBlockMemory);
  uint32_t lock = 0;
  sum = 0;
  void* l = &lock;
  ASSERT_TRUE(launch(*locked, {4, 1, 1}, {64, 1, 1}, {&l, &s}).ok());
  EXPECT_EQ(sum, 256u);
  EXPECT_EQ(lock, 0u);

  LoadedKernel* reads = load(kSpinWaitsPtx, "volatileSharedSum");
  ASSERT_NE(reads, nullptr);
  EXPECT_NE(reads->info().cpuExecution, CpuExecution::ThreadEntry);
  EXPECT_FALSE(reads->info().spinWaits);
  std::vector<uint32_t> sums(64, 0);
  void* o2 = sums.data();
  ASSERT_TRUE(launch(*reads, {1, 1, 1}, {64, 1, 1}, {&o2}).ok());
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(sums[t], 64u * 63 / 2);
}

// A decoupled look-back (CUB's scans): each block waits for its predecessor's flag, read once
// before the loop and again on its back edge; the optimizer merges the two reads into one in the
// loop's header, dropping their pollable-access metadata. It is still found to be a spin-wait (a
// continuation with spin polls, whose blocks start in order), and every block sees its
// predecessor's result.
TEST_F(CpuBlockForms, LookBackIsASpinWaitAcrossBlocks) {
  LoadedKernel* lookBack = load(kSpinWaitsPtx, "lookBack");
  ASSERT_NE(lookBack, nullptr);
  EXPECT_EQ(lookBack->info().cpuExecution, CpuExecution::Continuation);
  EXPECT_TRUE(lookBack->info().spinWaits);
  EXPECT_FALSE(lookBack->info().spinWaitsOnBlockMemory);
  constexpr uint32_t kBlocks = 3000;
  for (int run = 0; run < 3; ++run) {
    std::vector<uint32_t> flags(kBlocks, 0), out(kBlocks, UINT32_MAX);
    void* f = flags.data();
    void* o = out.data();
    ASSERT_TRUE(launch(*lookBack, {kBlocks, 1, 1}, {32, 1, 1}, {&f, &o}).ok());
    for (uint32_t b = 0; b < kBlocks; ++b) {
      ASSERT_EQ(out[b], b) << "block " << b;
      ASSERT_EQ(flags[b], b + 1) << "block " << b;
    }
  }
}

// mma.sync (m8n8k16, s8 into s32) is one warp collective: the warp's 32 records meet in its tile
// function. 48 threads: the second warp has 16 lanes, and the lanes it lacks count as zero
// fragments. `prologue` goes first (it can force the slow path).
std::string mmaPtx(const std::string& functions, const std::string& prologue) {
  return std::string(R"(.version 7.0
.target sm_75
.address_size 64
)") + functions +
         R"(
.visible .entry mma(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
)" + prologue +
         R"(
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd1, %r1, 4;
  ld.param.u64 %rd2, [a];
  add.s64 %rd3, %rd2, %rd1;
  ld.global.b32 %r2, [%rd3];
  ld.param.u64 %rd4, [b];
  add.s64 %rd5, %rd4, %rd1;
  ld.global.b32 %r3, [%rd5];
  mul.wide.u32 %rd6, %r1, 8;
  ld.param.u64 %rd7, [c];
  add.s64 %rd8, %rd7, %rd6;
  ld.global.v2.b32 {%r4, %r5}, [%rd8];
  mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r6, %r7}, {%r2}, {%r3}, {%r4, %r5};
  ld.param.u64 %rd9, [d];
  add.s64 %rd10, %rd9, %rd6;
  st.global.v2.b32 [%rd10], {%r6, %r7};
  ret;
}
)";
}

// Runs the mma kernel on `threads` threads and checks D against a host product (PTX ISA,
// m8n8k16 fragments: lane 4g + t holds row g of A and column g of B at k = 4t..4t+3, and D's row
// g, columns 2t and 2t + 1).
void expectMmaProducts(CpuBlockForms& test, LoadedKernel& kernel, uint32_t threads) {
  std::vector<uint32_t> a(threads), b(threads);
  std::vector<int32_t> c(2 * threads), d(2 * threads, 0);
  for (uint32_t t = 0; t < threads; ++t) {
    a[t] = 0x01020304u * (t % 7 + 1) ^ 0x80u * (t % 3);
    b[t] = 0xfd03ff02u + 0x00110011u * t;
    c[2 * t] = static_cast<int32_t>(1000 * t) - 7;
    c[2 * t + 1] = -static_cast<int32_t>(t);
  }
  void *pa = a.data(), *pb = b.data(), *pc = c.data(), *pd = d.data();
  ASSERT_TRUE(test.run(kernel, threads, {&pa, &pb, &pc, &pd}).ok());
  auto byte = [](uint32_t word, int i) { return static_cast<int8_t>(word >> (8 * i)); };
  for (uint32_t t = 0; t < threads; ++t) {
    uint32_t warp = t / 32 * 32, g = t % 32 / 4, q = t % 4;
    // A lane missing from a partial warp holds zeros.
    auto word = [&](const std::vector<uint32_t>& w, uint32_t lane) {
      return warp + lane < threads ? w[warp + lane] : 0u;
    };
    for (uint32_t j = 0; j < 2; ++j) {
      uint32_t column = 2 * q + j;
      int64_t sum = c[2 * t + j];
      for (uint32_t k = 0; k < 16; ++k)
        sum += byte(word(a, 4 * g + k / 4), static_cast<int>(k % 4)) *
               byte(word(b, 4 * column + k / 4), static_cast<int>(k % 4));
      EXPECT_EQ(d[2 * t + j], static_cast<int32_t>(sum)) << "thread " << t << ", element " << j;
    }
  }
}

TEST_F(CpuBlockForms, MmaIsOneCollectiveOfTheWarp) {
  LoadedKernel* kernel = load(mmaPtx("", "").c_str(), "mma");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::Continuation);
  expectMmaProducts(*this, *kernel, 64);
  expectMmaProducts(*this, *kernel, 48);
}

TEST_F(CpuBlockForms, MmaOnTheSlowPathToo) {
  SlowPath slow = slowPath();
  LoadedKernel* kernel = load(mmaPtx(slow.functions, slow.prologue).c_str(), "mma");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::ThreadEntry);
  expectMmaProducts(*this, *kernel, 64);
  expectMmaProducts(*this, *kernel, 48);
}

// Named barriers as warp-specialised kernels use them (128 threads): warps 0-1 exchange through
// shared memory at barrier 1 (64 threads) while warp 2 waits, in a loop of __syncwarp, for a flag
// warp 0 sets after that exchange (with whole-block barriers warp 2 would spin for ever), and
// warp 0 hands data to warp 3 through barrier 3 with bar.arrive (warp 0 does not wait). Barrier 5
// without a count then joins all 128 threads. `prologue` runs first (it can force the slow path).
std::string namedBarrierPtx(const std::string& functions, const std::string& prologue) {
  return std::string(R"(.version 7.0
.target sm_75
.address_size 64
)") + functions +
         R"(
.visible .entry named(.param .u64 out)
{
  .shared .align 4 .b32 flag;
  .shared .align 4 .b32 data[32];
  .shared .align 4 .b32 ring[64];
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<12>;
)" + prologue +
         R"(
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  and.b32 %r3, %r1, 31;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  mov.u32 %r10, flag;
  mov.u32 %r11, data;
  mov.u32 %r12, ring;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra START;
  st.shared.u32 [%r10], 0;
START:
  bar.sync 0;
  setp.gt.u32 %p1, %r2, 1;
  @%p1 bra GROUPB;
  mad.lo.u32 %r4, %r1, 3, 1;
  shl.b32 %r5, %r1, 2;
  add.u32 %r5, %r12, %r5;
  st.shared.u32 [%r5], %r4;
  bar.sync 1, 64;
  add.u32 %r6, %r1, 1;
  and.b32 %r6, %r6, 63;
  shl.b32 %r6, %r6, 2;
  add.u32 %r6, %r12, %r6;
  ld.shared.u32 %r7, [%r6];
  st.global.u32 [%rd3], %r7;
  bar.sync 1, 64;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra JOIN;
  add.u32 %r8, %r3, 100;
  shl.b32 %r9, %r3, 2;
  add.u32 %r9, %r11, %r9;
  st.shared.u32 [%r9], %r8;
  bar.arrive 3, 64;
  mov.u32 %r8, 1;
  st.volatile.shared.u32 [%r10], %r8;
  bra.uni JOIN;
GROUPB:
  setp.eq.u32 %p2, %r2, 3;
  @%p2 bra CONSUMER;
  mov.u32 %r13, 0;
SPIN:
  add.u32 %r13, %r13, 1;
  setp.gt.u32 %p3, %r13, 100000;
  @%p3 bra GAVEUP;
  ld.volatile.shared.u32 %r14, [%r10];
  bar.warp.sync -1;
  setp.eq.u32 %p3, %r14, 0;
  @%p3 bra SPIN;
  st.global.u32 [%rd3], 7;
  bra.uni JOIN;
GAVEUP:
  st.global.u32 [%rd3], 99;
  bra.uni JOIN;
CONSUMER:
  bar.sync 3, 64;
  shl.b32 %r9, %r3, 2;
  add.u32 %r9, %r11, %r9;
  ld.shared.u32 %r15, [%r9];
  st.global.u32 [%rd3], %r15;
JOIN:
  bar.sync 5;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.shared.u32 %r16, [%r10];
  st.global.u32 [%rd1+512], %r16;
DONE:
  ret;
}
)";
}

void expectNamedBarriers(const std::vector<uint32_t>& out) {
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], ((t + 1) & 63) * 3 + 1) << "thread " << t;
  for (uint32_t t = 64; t < 96; ++t) EXPECT_EQ(out[t], 7u) << "thread " << t << " (99: gave up)";
  for (uint32_t t = 96; t < 128; ++t) EXPECT_EQ(out[t], t - 96 + 100) << "thread " << t;
  EXPECT_EQ(out[128], 1u);
}

TEST_F(CpuBlockForms, NamedBarriersCountTheirOwnThreadsAndArriveDoesNotWait) {
  std::string ptx = namedBarrierPtx("", "");
  LoadedKernel* kernel = load(ptx.c_str(), "named");
  ASSERT_NE(kernel, nullptr);
  for (int run = 0; run < 2; ++run) {  // two blocks each: barrier counts start afresh
    std::vector<uint32_t> out(129, 0);
    void* o = out.data();
    ASSERT_TRUE(launch(*kernel, {2, 1, 1}, {128, 1, 1}, {&o}).ok());
    expectNamedBarriers(out);
  }
}

TEST_F(CpuBlockForms, NamedBarriersOnTheSlowPathToo) {
  SlowPath slow = slowPath();
  std::string ptx = namedBarrierPtx(slow.functions, slow.prologue);
  LoadedKernel* kernel = load(ptx.c_str(), "named");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::ThreadEntry);
  std::vector<uint32_t> out(129, 0);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {1, 1, 1}, {128, 1, 1}, {&o}).ok());
  expectNamedBarriers(out);
}

// A named barrier expecting more threads than ever arrive: a deadlock, reported, not a hang.
TEST_F(CpuBlockForms, NamedBarrierThatCannotCompleteFailsTheLaunch) {
  const char* ptx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry short()
{
  bar.sync 2, 64;
  ret;
}
)";
  LoadedKernel* kernel = load(ptx, "short");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(launch(*kernel, {1, 1, 1}, {32, 1, 1}, {}).error().code, ErrorCode::LaunchFailed);
}

// Values every thread computes alike, live across block barriers, in the block's uniform slots
// (compiler.h): a tree over a 2-D block with the shift count across barriers, then a loop whose
// counter and a value rewritten after the barrier of each iteration live across bar.red and
// bar.sync (the value is read before and written after the barrier in one region).
const char* kUniformTreePtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry uniform_tree(.param .u64 out, .param .u32 iters)
{
  .shared .align 4 .b32 sbuf[1024];
  .reg .pred %p<4>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %tid.y;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %ntid.y;
  mad.lo.u32 %r6, %r3, %r4, %r2;
  mul.lo.u32 %r7, %r4, %r5;
  mov.u32 %r8, %ctaid.x;
  add.u32 %r9, %r6, %r8;
  mov.u32 %r10, sbuf;
  shl.b32 %r11, %r6, 2;
  add.u32 %r12, %r10, %r11;
  st.shared.u32 [%r12], %r9;
  bar.sync 0;
  shr.u32 %r13, %r7, 1;
TREE:
  setp.eq.u32 %p1, %r13, 0;
  @%p1 bra TREE_DONE;
  setp.ge.u32 %p2, %r6, %r13;
  @%p2 bra SKIP;
  shl.b32 %r14, %r13, 2;
  add.u32 %r15, %r12, %r14;
  ld.shared.u32 %r16, [%r15];
  ld.shared.u32 %r17, [%r12];
  add.u32 %r17, %r17, %r16;
  st.shared.u32 [%r12], %r17;
SKIP:
  bar.sync 0;
  shr.u32 %r13, %r13, 1;
  bra TREE;
TREE_DONE:
  ld.shared.u32 %r18, [%r10];
  mov.u32 %r19, 0;
  mov.u32 %r20, 0;
  mov.u32 %r21, 5;
  mov.u32 %r22, 0;
LOOP:
  setp.ge.u32 %p1, %r19, %r1;
  @%p1 bra DONE;
  add.u32 %r23, %r6, %r19;
  rem.u32 %r24, %r23, 3;
  setp.eq.u32 %p3, %r24, 0;
  bar.red.popc.u32 %r25, 0, %p3;
  add.u32 %r20, %r20, %r25;
  add.u32 %r22, %r22, %r21;
  mul.lo.u32 %r26, %r21, 3;
  rem.u32 %r26, %r26, 1000;
  add.u32 %r21, %r26, %r19;
  bar.sync 0;
  add.u32 %r19, %r19, 1;
  bra LOOP;
DONE:
  mad.lo.u32 %r27, %r8, %r7, %r6;
  mul.lo.u32 %r28, %r27, 3;
  mul.wide.u32 %rd2, %r28, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r18;
  st.global.u32 [%rd3+4], %r20;
  st.global.u32 [%rd3+8], %r22;
  ret;
}
)";

TEST_F(CpuBlockForms, UniformValuesAcrossBarriersKeepOneSlotPerBlock) {
  LoadedKernel* kernel = load(kUniformTreePtx, "uniform_tree");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::Continuation);
  EXPECT_GT(kernel->info().cpuUniformFrameBytes, 0u);
  const uint32_t bx = 16, by = 8, count = bx * by, blocks = 3, iters = 7;
  std::vector<uint32_t> out(3 * count * blocks, 0);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {blocks, 1, 1}, {bx, by, 1}, {&o, &iters}).ok());
  uint32_t votes = 0, steps = 0;
  for (uint32_t k = 0, step = 5; k < iters; ++k) {
    for (uint32_t t = 0; t < count; ++t) votes += (t + k) % 3 == 0;
    steps += step;
    step = step * 3 % 1000 + k;
  }
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t t = 0; t < count; ++t) {
      const uint32_t* got = &out[3 * (b * count + t)];
      ASSERT_EQ(got[0], count * (count - 1) / 2 + count * b) << "block " << b << " thread " << t;
      ASSERT_EQ(got[1], votes) << "block " << b << " thread " << t;
      ASSERT_EQ(got[2], steps) << "block " << b << " thread " << t;
    }
}

// Odd threads exit before a barrier loop; the even ones pass values round a ring of shared
// memory, with a multiplier every thread updates alike after each barrier. Threads finishing
// at different points hand the block to the per-thread scheduler, which must keep the uniform
// slots as the rounds do.
const char* kUniformAfterExitPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry uniform_after_exit(.param .u64 out, .param .u32 iters)
{
  .shared .align 4 .b32 ring[1024];
  .reg .pred %p<3>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ntid.x;
  and.b32 %r4, %r2, 1;
  setp.ne.u32 %p1, %r4, 0;
  @%p1 bra EXIT;
  mov.u32 %r5, %r2;
  mov.u32 %r6, 0;
  mov.u32 %r7, 1;
  mov.u32 %r8, ring;
  shl.b32 %r9, %r2, 2;
  add.u32 %r10, %r8, %r9;
LOOP:
  setp.ge.u32 %p2, %r6, %r1;
  @%p2 bra DONE;
  st.shared.u32 [%r10], %r5;
  bar.sync 0;
  add.u32 %r11, %r2, 2;
  rem.u32 %r11, %r11, %r3;
  shl.b32 %r12, %r11, 2;
  add.u32 %r13, %r8, %r12;
  ld.shared.u32 %r14, [%r13];
  add.u32 %r5, %r14, %r7;
  shl.b32 %r15, %r7, 1;
  add.u32 %r7, %r15, %r6;
  bar.sync 0;
  add.u32 %r6, %r6, 1;
  bra LOOP;
DONE:
  mov.u32 %r16, %ctaid.x;
  mad.lo.u32 %r17, %r16, %r3, %r2;
  mul.wide.u32 %rd2, %r17, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r5;
EXIT:
  ret;
}
)";

TEST_F(CpuBlockForms, UniformSlotsSurviveThreadsExitingBeforeBarriers) {
  LoadedKernel* kernel = load(kUniformAfterExitPtx, "uniform_after_exit");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::Continuation);
  EXPECT_GT(kernel->info().cpuUniformFrameBytes, 0u);
  const uint32_t threads = 96, blocks = 2, iters = 9;
  std::vector<uint32_t> out(threads * blocks, 0xffffffffu);
  void* o = out.data();
  ASSERT_TRUE(launch(*kernel, {blocks, 1, 1}, {threads, 1, 1}, {&o, &iters}).ok());
  std::vector<uint32_t> v(threads);
  std::iota(v.begin(), v.end(), 0u);
  uint32_t mult = 1;
  for (uint32_t k = 0; k < iters; ++k) {
    std::vector<uint32_t> next = v;
    for (uint32_t t = 0; t < threads; t += 2) next[t] = v[(t + 2) % threads] + mult;
    v = next;
    mult = mult * 2 + k;
  }
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t t = 0; t < threads; ++t)
      ASSERT_EQ(out[b * threads + t], t % 2 == 0 ? v[t] : 0xffffffffu)
          << "block " << b << " thread " << t;
}

// A kernel whose rounds call nothing: its round function goes on to the next blocks itself
// (KernelInfo::cpuChainsBlocks), advancing ctaid in x, then y, then z. In blocks (3, 1, z) the
// threads from 32 on leave before the barrier, so the runtime takes part in them (a prefix at
// the barrier, the rest finished) in the middle of a chain; the blocks after them start afresh.
const char* kChainedPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry chained(.param .u64 out)
{
  .reg .pred %p<5>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 sums[1024];
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ctaid.y;
  mov.u32 %r4, %ctaid.z;
  setp.eq.u32 %p1, %r2, 3;
  setp.eq.u32 %p2, %r3, 1;
  and.pred %p1, %p1, %p2;
  setp.ge.u32 %p3, %r1, 32;
  and.pred %p1, %p1, %p3;
  @%p1 bra DONE;
  mad.lo.u32 %r5, %r3, 16, %r2;
  mad.lo.u32 %r5, %r4, 256, %r5;
  mov.u32 %r7, sums;
  shl.b32 %r6, %r1, 2;
  add.u32 %r8, %r7, %r6;
  add.u32 %r9, %r1, %r5;
  st.shared.u32 [%r8], %r9;
  bar.sync 0;
  setp.ne.u32 %p2, %r1, 0;
  @%p2 bra DONE;
  mov.u32 %r10, %nctaid.x;
  mov.u32 %r11, %nctaid.y;
  mad.lo.u32 %r12, %r4, %r11, %r3;
  mad.lo.u32 %r12, %r12, %r10, %r2;
  mov.u32 %r13, 0;
  mov.u32 %r14, 0;
LOOP:
  shl.b32 %r15, %r14, 2;
  add.u32 %r15, %r7, %r15;
  ld.shared.u32 %r16, [%r15];
  add.u32 %r13, %r13, %r16;
  add.u32 %r14, %r14, 1;
  setp.lt.u32 %p4, %r14, 32;
  @%p4 bra LOOP;
  mul.wide.u32 %rd2, %r12, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r13;
DONE:
  ret;
}
)";

TEST_F(CpuBlockForms, RoundFunctionsGoOnToTheNextBlocks) {
  LoadedKernel* kernel = load(kChainedPtx, "chained");
  ASSERT_NE(kernel, nullptr);
  ASSERT_EQ(kernel->info().cpuExecution, CpuExecution::Continuation);
  EXPECT_TRUE(kernel->info().cpuChainsBlocks);
  // Enough blocks that the thread pool hands a worker ranges of many.
  const std::array<uint32_t, 3> grid{40, 6, 2};
  const uint32_t blocks = grid[0] * grid[1] * grid[2];
  for (int launchIndex = 0; launchIndex < 3; ++launchIndex) {
    std::vector<uint32_t> out(blocks, 0xffffffffu);
    void* o = out.data();
    ASSERT_TRUE(launch(*kernel, grid, {64, 1, 1}, {&o}).ok());
    for (uint32_t z = 0; z < grid[2]; ++z)
      for (uint32_t y = 0; y < grid[1]; ++y)
        for (uint32_t x = 0; x < grid[0]; ++x)
          ASSERT_EQ(out[x + grid[0] * (y + grid[1] * z)], 496 + 32 * (x + 16 * y + 256 * z))
              << "block " << x << "," << y << "," << z << ", launch " << launchIndex;
  }
}

// A block reduction by warp shuffles whose last warp finishes alone (`if (tid < 32)`): the
// runtime hands that warp back to the round function with a thread limit of 32, and the round
// function, chaining blocks, starts the next block in a call of its own for all the threads. In
// odd blocks the threads from 64 on leave before the barrier, so such a block comes back to the
// runtime with 64 threads waiting (thread 63 then marks `seen`): the limit of the block before
// must not hold for it.
const char* kChainedTailPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry chained_tail(.param .u64 out, .param .u64 seen)
{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<6>;
  .shared .align 4 .b8 warpSums[32];
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd4, [seen];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  add.u32 %r3, %r1, %r2;
  shfl.sync.down.b32 %r4, %r3, 16, 31, -1;
  add.u32 %r3, %r3, %r4;
  shfl.sync.down.b32 %r4, %r3, 8, 31, -1;
  add.u32 %r3, %r3, %r4;
  shfl.sync.down.b32 %r4, %r3, 4, 31, -1;
  add.u32 %r3, %r3, %r4;
  shfl.sync.down.b32 %r4, %r3, 2, 31, -1;
  add.u32 %r3, %r3, %r4;
  shfl.sync.down.b32 %r4, %r3, 1, 31, -1;
  add.u32 %r3, %r3, %r4;
  and.b32 %r5, %r1, 31;
  setp.ne.u32 %p1, %r5, 0;
  @%p1 bra SKIP;
  shr.u32 %r6, %r1, 5;
  shl.b32 %r7, %r6, 2;
  mov.u32 %r8, warpSums;
  add.u32 %r9, %r8, %r7;
  st.shared.u32 [%r9], %r3;
SKIP:
  and.b32 %r17, %r2, 1;
  setp.ne.u32 %p1, %r17, 0;
  setp.ge.u32 %p2, %r1, 64;
  and.pred %p1, %p1, %p2;
  @%p1 bra DONE;
  bar.sync 0;
  setp.ne.u32 %p2, %r1, 63;
  @%p2 bra TAIL;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd4, %rd2;
  st.global.u32 [%rd3], 1;
TAIL:
  setp.ge.u32 %p2, %r1, 32;
  @%p2 bra DONE;
  mov.u32 %r10, %ntid.x;
  shr.u32 %r11, %r10, 5;
  mov.u32 %r12, 0;
  setp.ge.u32 %p3, %r1, %r11;
  @%p3 bra ZERO;
  shl.b32 %r13, %r1, 2;
  mov.u32 %r14, warpSums;
  add.u32 %r15, %r14, %r13;
  ld.shared.u32 %r12, [%r15];
ZERO:
  shfl.sync.down.b32 %r16, %r12, 16, 31, -1;
  add.u32 %r12, %r12, %r16;
  shfl.sync.down.b32 %r16, %r12, 8, 31, -1;
  add.u32 %r12, %r12, %r16;
  shfl.sync.down.b32 %r16, %r12, 4, 31, -1;
  add.u32 %r12, %r12, %r16;
  shfl.sync.down.b32 %r16, %r12, 2, 31, -1;
  add.u32 %r12, %r12, %r16;
  shfl.sync.down.b32 %r16, %r12, 1, 31, -1;
  add.u32 %r12, %r12, %r16;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r12;
DONE:
  ret;
}
)";

TEST_F(CpuBlockForms, RoundFunctionsGoOnAfterAWarpFinishesTheBlock) {
  LoadedKernel* kernel = load(kChainedTailPtx, "chained_tail");
  ASSERT_NE(kernel, nullptr);
  ASSERT_EQ(kernel->info().cpuExecution, CpuExecution::Continuation);
  EXPECT_TRUE(kernel->info().cpuChainsBlocks);
  const uint32_t blocks = 600, threads = 256;
  for (int launchIndex = 0; launchIndex < 3; ++launchIndex) {
    std::vector<uint32_t> out(blocks, 0xffffffffu), seen(blocks, 0);
    void *o = out.data(), *s = seen.data();
    ASSERT_TRUE(launch(*kernel, {blocks, 1, 1}, {threads, 1, 1}, {&o, &s}).ok());
    for (uint32_t b = 0; b < blocks; ++b) {
      ASSERT_EQ(out[b], threads * (threads - 1) / 2 + threads * b)
          << "block " << b << ", launch " << launchIndex;
      ASSERT_EQ(seen[b], 1u) << "block " << b << ", launch " << launchIndex;
    }
  }
}

// Shared-memory atomics, which the CPU device does as plain accesses (a block's threads share
// one host thread and switch only at waits; global ones stay atomic): the compiled kernel keeps
// no shared atomic, and every thread's increment counts, in a kernel that waits at barriers,
// over many launches of 4 blocks on the thread pool.
TEST_F(CpuBlockForms, SharedAtomicsCountEveryThread) {
  const char* ptx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry sharedCounts(.param .u64 out)
{
  .shared .align 4 .b8 bins[16];
  .shared .align 4 .b8 top[4];
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 3;
  shl.b32 %r2, %r2, 2;
  mov.u32 %r3, bins;
  add.u32 %r3, %r3, %r2;
  setp.ge.u32 %p1, %r1, 4;
  @%p1 bra $L_zeroed;
  st.shared.u32 [%r3], 0;
  st.shared.u32 [top], 0;
$L_zeroed:
  bar.sync 0;
  atom.shared.add.u32 %r4, [%r3], 1;
  atom.shared.max.u32 %r5, [top], %r1;
  atom.shared.cas.b32 %r6, [top], 1000, 2000;
  bar.sync 0;
  @%p1 bra $L_done;
  ld.shared.u32 %r7, [%r3];
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  red.global.add.u32 [%rd3], %r7;
  ld.shared.u32 %r8, [top];
  atom.global.max.u32 %r9, [%rd1+16], %r8;
$L_done:
  ret;
}
)";
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("rocuda_atomics_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::setenv("ROCUDA_DUMP", dir.c_str(), 1);
  LoadedKernel* kernel = load(ptx, "sharedCounts");  // compiled now (EAGER), dumped as M.K
  ::unsetenv("ROCUDA_DUMP");
  ASSERT_NE(kernel, nullptr);
  std::string neutral = readText(dir / "sharedCounts.sharedCounts.ll");
  std::string block = readText(dir / "sharedCounts.sharedCounts.block.ll");
  std::filesystem::remove_all(dir);
  // The lines of `text` holding `what`, and those of them that also hold `also`.
  auto lines = [](const std::string& text, const std::string& what, const std::string& also) {
    std::pair<size_t, size_t> n{0, 0};
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.find(what) != std::string::npos) {
        ++n.first;
        if (line.find(also) != std::string::npos) ++n.second;
      }
    return n;
  };
  // Translated: two shared read-modify-writes and a compare-and-swap marked block-private, and
  // the two global ones (marked global).
  EXPECT_EQ(lines(neutral, "atomicrmw", "rocuda.block_private"),
            std::make_pair(size_t{4}, size_t{2}))
      << neutral;
  EXPECT_EQ(lines(neutral, "cmpxchg", "rocuda.block_private"),
            std::make_pair(size_t{1}, size_t{1}));
  // Block form: every atomic left is a global one (the rounds copy them), none shared.
  auto [atomics, global] = lines(block, "atomicrmw", "rocuda.space");
  EXPECT_GT(atomics, 0u) << block;
  EXPECT_EQ(atomics, global) << block;
  EXPECT_EQ(lines(block, "cmpxchg", "").first, 0u) << block;

  for (int round = 0; round < 50; ++round) {
    uint32_t out[5] = {0, 0, 0, 0, 0};
    uint32_t* p = out;
    ASSERT_TRUE(launch(*kernel, {4, 1, 1}, {256, 1, 1}, {&p}).ok());
    for (int i = 0; i < 4; ++i) ASSERT_EQ(out[i], 4u * 64u) << "bin " << i << " round " << round;
    ASSERT_EQ(out[4], 255u) << "round " << round;
  }
}

// out[i] = a[i] + b[i] (vector add), and the same with a count of the sums kept atomically.
const char* kStreamingPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry sums(.param .u64 a, .param .u64 b, .param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .f32 %f<4>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.s32 %rd4, %r5, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd6];
  add.rn.f32 %f3, %f1, %f2;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
}
.visible .entry countedSums(.param .u64 a, .param .u64 b, .param .u64 out, .param .u32 n,
                            .param .u64 count)
{
  .reg .pred %p<2>;
  .reg .f32 %f<4>;
  .reg .b32 %r<7>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [out];
  ld.param.u32 %r1, [n];
  ld.param.u64 %rd8, [count];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.s32 %rd4, %r5, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd6];
  add.rn.f32 %f3, %f1, %f2;
  st.global.f32 [%rd7], %f3;
  atom.global.add.u32 %r6, [%rd8], 1;
DONE:
  ret;
}
)";

// A kernel that only loads and stores has a streaming form (its vectorised stores
// non-temporal), which a launch storing at least ROCUDA_CPU_STREAMING_STORES' 16 MiB runs, its
// workers fencing their stores after their blocks; one with an atomic has none. Both sum right,
// the large launch, the small one (ordinary stores) and one whose last block is partial.
TEST_F(CpuBlockForms, StreamingFormsStoreWhatTheOrdinaryFormsStore) {
  LoadedKernel* sums = load(kStreamingPtx, "sums");
  LoadedKernel* counted = load(kStreamingPtx, "countedSums");
  ASSERT_NE(sums, nullptr);
  ASSERT_NE(counted, nullptr);
  EXPECT_EQ(sums->info().cpuExecution, CpuExecution::BlockLoop);
  EXPECT_EQ(sums->info().cpuStreamingStoreBytes, 4u);
  EXPECT_EQ(counted->info().cpuStreamingStoreBytes, 0u);
  for (int n : {(5 << 20) + 77, 1000}) {
    std::vector<float> a(n), b(n), out(n, -1.0f);
    for (int i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i % 1013);
      b[i] = static_cast<float>(i % 31) * 0.5f;
    }
    const void* pa = a.data();
    const void* pb = b.data();
    void* po = out.data();
    uint32_t blocks = static_cast<uint32_t>((n + 255) / 256);
    ASSERT_TRUE(launch(*sums, {blocks, 1, 1}, {256, 1, 1}, {&pa, &pb, &po, &n}).ok());
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << i;
    uint32_t count = 0;
    void* pc = &count;
    std::fill(out.begin(), out.end(), -1.0f);
    ASSERT_TRUE(launch(*counted, {blocks, 1, 1}, {256, 1, 1}, {&pa, &pb, &po, &n, &pc}).ok());
    EXPECT_EQ(count, static_cast<uint32_t>(n));
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << i;
  }
}

}  // namespace
}  // namespace rocuda::backends
