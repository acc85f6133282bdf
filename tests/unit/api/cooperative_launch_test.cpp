// Cooperative launches through libcuda.so.1: the device attributes, cuLaunchCooperativeKernel
// (both stream forms), cuLaunchKernelEx and graph kernel nodes with the cooperative attribute,
// running a kernel whose blocks meet at a grid barrier built as cooperative groups builds it
// (%envreg1/%envreg2 -> workspace, atom.add.release.gpu, ld.acquire.gpu spin); an ordinary launch
// sees no workspace; grids over the occupancy and invalid arguments are refused. The same grid
// barrier through the device runtime's driver syscalls (__cuda_syscall_CGS_*, as numba-cuda
// reaches them through libcudadevrt.a's cudaCGSynchronize).
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "api/cuda/graph_abi.h"
#include "tests/unit/api/libcuda_harness.h"

namespace rocuda::cuda::testing {
namespace {

// grid_sum(slots, out): thread 0 of every block writes slots[ctaid] = ctaid + 1, the grid meets
// at the barrier, then every thread writes the sum of all slots to out[global id]. Without a
// workspace (an ordinary launch) every thread writes 0xffffffff instead. `rounds` repeats the
// barrier with the barrier word's top bit flipping each time.
constexpr const char* kPtx = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry grid_sum(.param .u64 slots, .param .u64 out, .param .u32 rounds)
{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [slots];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r20, [rounds];
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
  add.s64 %rd6, %rd3, 4;
  setp.ne.u32 %p2, %r2, 0;
  // nb: 1, or 0x80000000 - (nblocks - 1) from block 0, so the top bit flips once all arrived
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
  bar.sync 0;
  @%p2 bra WAITED;
  atom.add.release.gpu.u32 %r10, [%rd6], %r7;
SPIN:
  ld.acquire.gpu.u32 %r11, [%rd6];
  xor.b32 %r12, %r11, %r10;
  setp.gt.s32 %p4, %r12, -1;
  @%p4 bra SPIN;
WAITED:
  bar.sync 0;
  mov.u32 %r15, 0;
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
  // Nobody may overwrite a slot before every block has read them all.
  bar.sync 0;
  @%p2 bra WAITED2;
  atom.add.release.gpu.u32 %r10, [%rd6], %r7;
SPIN2:
  ld.acquire.gpu.u32 %r11, [%rd6];
  xor.b32 %r12, %r11, %r10;
  setp.gt.s32 %p4, %r12, -1;
  @%p4 bra SPIN2;
WAITED2:
  bar.sync 0;
  add.u32 %r21, %r21, 1;
  setp.lt.u32 %p6, %r21, %r20;
  @%p6 bra ROUND;
  ret;
INVALID:
  mov.u32 %r18, -1;
  st.global.u32 [%rd10], %r18;
  ret;
}
)";

constexpr unsigned kThreads = 64;

class Cooperative : public Driver {
 protected:
  void SetUp() override {
    Driver::SetUp();
    ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module_, kPtx), CUDA_SUCCESS);
    ASSERT_EQ(
        CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&kernel_, module_, "grid_sum"),
        CUDA_SUCCESS);
    ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                  &multiprocessors_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, int*, CUfunction, int, size_t)(
                  &perMultiprocessor_, kernel_, kThreads, 0),
              CUDA_SUCCESS);
    ASSERT_GT(perMultiprocessor_, 0);
  }
  void TearDown() override {
    for (CUdeviceptr p : allocations_) EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(p), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module_), CUDA_SUCCESS);
    Driver::TearDown();
  }

  CUdeviceptr allocate(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&p, bytes), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemsetD8, CUdeviceptr, unsigned char, size_t)(p, 0, bytes), CUDA_SUCCESS);
    allocations_.push_back(p);
    return p;
  }

  // Buffers for a grid of `blocks`; `params` points at them.
  struct Buffers {
    CUdeviceptr slots = 0, out = 0;
    unsigned rounds = 3;
    void* params[3] = {};
  };
  void prepare(Buffers& b, unsigned blocks) {
    b.slots = allocate(blocks * sizeof(uint32_t));
    b.out = allocate(blocks * kThreads * sizeof(uint32_t));
    b.params[0] = &b.slots;
    b.params[1] = &b.out;
    b.params[2] = &b.rounds;
  }

  // Each round adds sum(ctaid + 1 + round) over the blocks to every thread's output.
  void expectSums(const Buffers& b, unsigned blocks) {
    ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
    std::vector<uint32_t> out(blocks * kThreads);
    ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), b.out,
                                                              out.size() * sizeof(uint32_t)),
              CUDA_SUCCESS);
    uint32_t expected = 0;
    for (unsigned round = 0; round < b.rounds; ++round)
      for (unsigned block = 0; block < blocks; ++block) expected += block + 1 + round;
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], expected) << "thread " << i;
  }

  unsigned maxBlocks() const { return unsigned(perMultiprocessor_ * multiprocessors_); }

  CUmodule module_ = nullptr;
  CUfunction kernel_ = nullptr;
  int multiprocessors_ = 0, perMultiprocessor_ = 0;
  std::vector<CUdeviceptr> allocations_;
};

using LaunchCooperative = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                       unsigned, unsigned, CUstream, void**);
using LaunchEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);

LaunchCooperative launchCooperative(cuuint64_t flags = 0) {
  return proc<LaunchCooperative>("cuLaunchCooperativeKernel", 12090, flags);
}

// grid_sum again, with the grid barrier as a call: `SYNC(handle, flags)` after `HANDLE(1)`, the
// functions of CUDA's device runtime (cudaCGGetIntrinsicHandle / cudaCGSynchronize, linked from
// libcudadevrt.a) or the driver syscalls under them. A failed synchronisation (no handle outside
// a cooperative launch) writes 0xffffffff.
std::string syscallSumPtx(const std::string& handleFn, const std::string& syncFn) {
  std::string ptx = R"(
.version 7.0
.target sm_70
.address_size 64
.extern .func (.param .b64 h) HANDLE(.param .b32 scope);
.extern .func (.param .b32 r) SYNC(.param .b64 h, .param .b32 flags);
.visible .entry syscall_sum(.param .u64 slots, .param .u64 out, .param .u32 rounds)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [slots];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [rounds];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  {
    .param .b32 scope;
    .param .b64 h;
    st.param.b32 [scope], 1;
    call.uni (h), HANDLE, (scope);
    ld.param.b64 %rd3, [h];
  }
  mov.u32 %r5, 0;   // round
  mov.u32 %r6, 0;   // the running sum
ROUND:
  setp.ne.u32 %p1, %r3, 0;
  @%p1 bra SYNC1;
  add.u32 %r7, %r2, %r5;
  add.u32 %r7, %r7, 1;
  mul.wide.u32 %rd4, %r2, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.global.u32 [%rd5], %r7;
SYNC1:
  {
    .param .b64 h;
    .param .b32 flags;
    .param .b32 r;
    st.param.b64 [h], %rd3;
    st.param.b32 [flags], 0;
    call.uni (r), SYNC, (h, flags);
    ld.param.b32 %r8, [r];
  }
  setp.ne.u32 %p2, %r8, 0;
  @%p2 bra FAILED;
  mov.u32 %r9, 0;
SUM:
  mul.wide.u32 %rd6, %r9, 4;
  add.s64 %rd7, %rd1, %rd6;
  ld.global.u32 %r10, [%rd7];
  add.u32 %r6, %r6, %r10;
  add.u32 %r9, %r9, 1;
  setp.lt.u32 %p3, %r9, %r4;
  @%p3 bra SUM;
  {
    .param .b64 h;
    .param .b32 flags;
    .param .b32 r;
    st.param.b64 [h], %rd3;
    st.param.b32 [flags], 0;
    call.uni (r), SYNC, (h, flags);
    ld.param.b32 %r8, [r];
  }
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p3, %r5, %r1;
  @%p3 bra ROUND;
  bra.uni STORE;
FAILED:
  mov.u32 %r6, -1;
STORE:
  mov.u32 %r11, %ntid.x;
  mad.lo.s32 %r12, %r2, %r11, %r3;
  mul.wide.u32 %rd8, %r12, 4;
  add.s64 %rd9, %rd2, %rd8;
  st.global.u32 [%rd9], %r6;
  ret;
}
)";
  for (auto [from, to] : {std::pair<std::string, std::string>{"HANDLE", handleFn}, {"SYNC", syncFn}})
    for (size_t at = ptx.find(from); at != std::string::npos; at = ptx.find(from, at + to.size()))
      ptx.replace(at, from.size(), to);
  return ptx;
}

class DeviceRuntimeGridSync : public Cooperative {
 protected:
  void expectRuns(CUmodule module, bool cooperative) {
    CUfunction f = nullptr;
    ASSERT_EQ(
        CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&f, module, "syscall_sum"),
        CUDA_SUCCESS);
    unsigned blocks = 2 * unsigned(multiprocessors_) + 1;
    Buffers b;
    prepare(b, blocks);
    if (cooperative) {
      ASSERT_EQ(launchCooperativeKernel(f, blocks, b.params), CUDA_SUCCESS);
      expectSums(b, blocks);
      return;
    }
    auto launch = CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, unsigned, CUstream, void**, void**);
    ASSERT_EQ(launch(f, blocks, 1, 1, kThreads, 1, 1, 0, nullptr, b.params, nullptr),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
    std::vector<uint32_t> out(blocks * kThreads);
    ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), b.out,
                                                              out.size() * sizeof(uint32_t)),
              CUDA_SUCCESS);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 0xffffffffu) << "thread " << i;
  }
  static CUresult launchCooperativeKernel(CUfunction f, unsigned blocks, void** params) {
    return proc<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**)>(
        "cuLaunchCooperativeKernel", 12090)(f, blocks, 1, 1, kThreads, 1, 1, 0, nullptr, params);
  }
};

TEST_F(DeviceRuntimeGridSync, DriverSyscallsMeetAtTheGridBarrier) {
  std::string ptx =
      syscallSumPtx("__cuda_syscall_CGS_get_intrinsic_handle", "__cuda_syscall_CGS_sync");
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, ptx.c_str()), CUDA_SUCCESS);
  expectRuns(module, /*cooperative=*/true);
  expectRuns(module, /*cooperative=*/false);  // no handle: the syscall reports the failure
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// The real device runtime library, linked as numba-cuda links it.
TEST_F(DeviceRuntimeGridSync, CudadevrtLibraryLinksAndSynchronises) {
#ifndef ROCUDA_CUDADEVRT_PATH
  GTEST_SKIP() << "the CUDA toolkit's libcudadevrt.a was not found at configure time";
#else
  std::string ptx = syscallSumPtx("cudaCGGetIntrinsicHandle", "cudaCGSynchronize");
  CUlinkState state = nullptr;
  ASSERT_EQ(CU(cuLinkCreate, unsigned, CUjit_option*, void**, CUlinkState*)(0, nullptr, nullptr,
                                                                             &state),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuLinkAddData, CUlinkState, CUjitInputType, void*, size_t, const char*, unsigned,
               CUjit_option*, void**)(state, CU_JIT_INPUT_PTX, ptx.data(), ptx.size() + 1,
                                      "syscall_sum.ptx", 0, nullptr, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuLinkAddFile, CUlinkState, CUjitInputType, const char*, unsigned, CUjit_option*,
               void**)(state, CU_JIT_INPUT_LIBRARY, ROCUDA_CUDADEVRT_PATH, 0, nullptr, nullptr),
            CUDA_SUCCESS);
  void* image = nullptr;
  ASSERT_EQ(CU(cuLinkComplete, CUlinkState, void**, size_t*)(state, &image, nullptr),
            CUDA_SUCCESS);
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, image), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuLinkDestroy, CUlinkState)(state), CUDA_SUCCESS);
  expectRuns(module, /*cooperative=*/true);
  expectRuns(module, /*cooperative=*/false);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
#endif
}

// Driver queries in device code through the device runtime's own functions (a module without
// libcudadevrt calls __cudaCDP2*): the device, a limit, a kernel's attributes and occupancy, each
// what the host API answers. tests/e2e/device_queries.cu asks the same through libcudadevrt.
constexpr const char* kQueriesPtx = R"(
.version 7.0
.target sm_70
.address_size 64
.extern .func (.param .b32 r) __cudaCDP2GetDevice(.param .b64 p0);
.extern .func (.param .b32 r) __cudaCDP2DeviceGetLimit(.param .b64 p0, .param .b32 p1);
.extern .func (.param .b32 r) __cudaCDP2FuncGetAttributes(.param .b64 p0, .param .b64 p1);
.extern .func (.param .b32 r) __cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
  .param .b64 p0, .param .b64 p1, .param .b32 p2, .param .b64 p3, .param .b32 p4);

.visible .entry sized(.param .u64 out) .maxntid 256, 1, 1
{
  .shared .align 4 .b8 tile[1200];
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  mov.u64 %rd1, tile;
  st.shared.u32 [%rd1], %r1;
  ret;
}

.visible .entry ask(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  {
  .param .b64 p0;
  st.param.b64 [p0], %rd1;
  .param .b32 r;
  call.uni (r), __cudaCDP2GetDevice, (p0);
  ld.param.b32 %r1, [r];
  }
  st.global.u32 [%rd1+4], %r1;
  add.u64 %rd2, %rd1, 8;
  {
  .param .b64 p0;
  st.param.b64 [p0], %rd2;
  .param .b32 p1;
  st.param.b32 [p1], 0;
  .param .b32 r;
  call.uni (r), __cudaCDP2DeviceGetLimit, (p0, p1);
  ld.param.b32 %r2, [r];
  }
  st.global.u32 [%rd1+16], %r2;
  add.u64 %rd3, %rd1, 64;
  mov.u64 %rd4, sized;
  {
  .param .b64 p0;
  st.param.b64 [p0], %rd3;
  .param .b64 p1;
  st.param.b64 [p1], %rd4;
  .param .b32 r;
  call.uni (r), __cudaCDP2FuncGetAttributes, (p0, p1);
  ld.param.b32 %r3, [r];
  }
  st.global.u32 [%rd1+20], %r3;
  add.u64 %rd5, %rd1, 24;
  {
  .param .b64 p0;
  st.param.b64 [p0], %rd5;
  .param .b64 p1;
  st.param.b64 [p1], %rd4;
  .param .b32 p2;
  st.param.b32 [p2], 128;
  .param .b64 p3;
  st.param.b64 [p3], 0;
  .param .b32 p4;
  st.param.b32 [p4], 0;
  .param .b32 r;
  call.uni (r), __cudaCDP2OccupancyMaxActiveBlocksPerMultiprocessorWithFlags, (p0, p1, p2, p3, p4);
  ld.param.b32 %r4, [r];
  }
  st.global.u32 [%rd1+28], %r4;
  ret;
}
)";

TEST_F(Driver, DeviceRuntimeQueriesAnswerAsTheHostApi) {
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kQueriesPtx), CUDA_SUCCESS);
  CUfunction ask = nullptr, sized = nullptr;
  auto get = CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*);
  ASSERT_EQ(get(&ask, module, "ask"), CUDA_SUCCESS);
  ASSERT_EQ(get(&sized, module, "sized"), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetLimit, CUlimit, size_t)(CU_LIMIT_STACK_SIZE, 3072), CUDA_SUCCESS);
  CUdeviceptr out = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&out, 256), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD8, CUdeviceptr, unsigned char, size_t)(out, 0xff, 256), CUDA_SUCCESS);
  void* params[] = {&out};
  ASSERT_EQ(
      CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
         unsigned, CUstream, void**, void**)(ask, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
      CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  uint8_t bytes[256];
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(bytes, out, sizeof bytes), CUDA_SUCCESS);
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, bytes + at, 4);
    return v;
  };
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, bytes + at, 8);
    return v;
  };
  // Errors first: every query succeeded.
  EXPECT_EQ(u32(4), 0u);
  EXPECT_EQ(u32(16), 0u);
  EXPECT_EQ(u32(20), 0u);
  EXPECT_EQ(u32(28), 0u);
  EXPECT_EQ(u32(0), 0u);     // device 0, the context's
  EXPECT_EQ(u64(8), 3072u);  // the stack limit the host set
  int blocks = -1, shared = -1, threads = -1;
  ASSERT_EQ(CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, int*, CUfunction, int, size_t)(
                &blocks, sized, 128, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(u32(24), static_cast<uint32_t>(blocks));
  auto attribute = CU(cuFuncGetAttribute, int*, CUfunction_attribute, CUfunction);
  ASSERT_EQ(attribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, sized), CUDA_SUCCESS);
  ASSERT_EQ(attribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, sized), CUDA_SUCCESS);
  EXPECT_EQ(shared, 1200);
  EXPECT_EQ(threads, 256);
  EXPECT_EQ(u64(64), static_cast<uint64_t>(shared));        // cudaFuncAttributes::sharedSizeBytes
  EXPECT_EQ(u32(64 + 24), static_cast<uint32_t>(threads));  // ::maxThreadsPerBlock
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(out), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuCtxSetLimit, CUlimit, size_t)(CU_LIMIT_STACK_SIZE, 1024), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// Device runtime functions NVIDIA's driver provides beside libcudadevrt: cudaEventRecordWithFlags
// answers as cudaEventRecord does (an invalid handle for a null event, an invalid value for an
// unknown flag); cudaGraphLaunch from a kernel launched outside a graph answers
// cudaErrorNotPermitted; cudaGraphKernelNodeSetParam of something that is no device-updatable
// node, cudaErrorInvalidValue.
constexpr const char* kDriverBuiltinsPtx = R"(
.version 7.0
.target sm_70
.address_size 64
.extern .func (.param .b32 r) cudaGraphLaunch(.param .b64 g, .param .b64 s);
.extern .func (.param .b32 r) cudaGraphKernelNodeSetParam(.param .b64 n, .param .b64 o,
  .param .b64 v, .param .b64 s);
.extern .func (.param .b32 r) cudaEventRecordWithFlags(.param .b64 e, .param .b64 s,
  .param .b32 f);

.visible .entry records(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  {
  .param .b64 e;
  st.param.b64 [e], 264;
  .param .b64 s;
  st.param.b64 [s], 0;
  .param .b32 f;
  st.param.b32 [f], 1;
  .param .b32 r;
  call.uni (r), cudaEventRecordWithFlags, (e, s, f);
  ld.param.b32 %r1, [r];
  }
  st.global.u32 [%rd1], %r1;
  {
  .param .b64 e;
  st.param.b64 [e], 0;
  .param .b64 s;
  st.param.b64 [s], 0;
  .param .b32 f;
  st.param.b32 [f], 0;
  .param .b32 r;
  call.uni (r), cudaEventRecordWithFlags, (e, s, f);
  ld.param.b32 %r2, [r];
  }
  st.global.u32 [%rd1+4], %r2;
  {
  .param .b64 e;
  st.param.b64 [e], 264;
  .param .b64 s;
  st.param.b64 [s], 0;
  .param .b32 f;
  st.param.b32 [f], 7;
  .param .b32 r;
  call.uni (r), cudaEventRecordWithFlags, (e, s, f);
  ld.param.b32 %r3, [r];
  }
  st.global.u32 [%rd1+8], %r3;
  {
  .param .b64 g;
  st.param.b64 [g], 0;
  .param .b64 s;
  st.param.b64 [s], 0x0200000000000000;
  .param .b32 r;
  call.uni (r), cudaGraphLaunch, (g, s);
  ld.param.b32 %r3, [r];
  }
  st.global.u32 [%rd1+12], %r3;
  ret;
}

.visible .entry updatesNode(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  {
  .param .b64 n;
  st.param.b64 [n], 0;
  .param .b64 o;
  st.param.b64 [o], 0;
  .param .b64 v;
  st.param.b64 [v], 0;
  .param .b64 s;
  st.param.b64 [s], 0;
  .param .b32 r;
  call.uni (r), cudaGraphKernelNodeSetParam, (n, o, v, s);
  ld.param.b32 %r1, [r];
  }
  st.global.u32 [%rd1+16], %r1;
  ret;
}
)";

TEST_F(Driver, DriverBuiltinsOfTheDeviceRuntime) {
  CUmodule module = nullptr;
  ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kDriverBuiltinsPtx),
            CUDA_SUCCESS);
  CUfunction records = nullptr, updatesNode = nullptr;
  auto get = CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*);
  ASSERT_EQ(get(&records, module, "records"), CUDA_SUCCESS);
  ASSERT_EQ(get(&updatesNode, module, "updatesNode"), CUDA_SUCCESS);
  auto launch = CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, CUstream, void**, void**);
  CUdeviceptr out = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&out, 32), CUDA_SUCCESS);
  void* params[] = {&out};
  ASSERT_EQ(launch(records, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(launch(updatesNode, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  uint32_t answers[5] = {};
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(answers, out, sizeof answers),
            CUDA_SUCCESS);
  EXPECT_EQ(answers[0], 0u);    // cudaSuccess (cudaEventRecordExternal)
  EXPECT_EQ(answers[1], 400u);  // cudaErrorInvalidResourceHandle
  EXPECT_EQ(answers[2], 1u);    // cudaErrorInvalidValue
  EXPECT_EQ(answers[3], 800u);  // cudaErrorNotPermitted
  EXPECT_EQ(answers[4], 1u);    // cudaErrorInvalidValue
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(out), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

TEST_F(Cooperative, DeviceReportsCooperativeLaunchButNotMultiDevice) {
  int value = -1;
  auto get = CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice);
  ASSERT_EQ(get(&value, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0), CUDA_SUCCESS);
  EXPECT_EQ(value, 1);
  ASSERT_EQ(get(&value, CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, 0), CUDA_SUCCESS);
  EXPECT_EQ(value, 0);
}

TEST_F(Cooperative, EveryBlockTheDeviceHoldsMeetsAtTheGridBarrier) {
  // Blocks of 64 threads: many more blocks than cores, all spinning on one another.
  unsigned blocks = maxBlocks();
  Buffers b;
  prepare(b, blocks);
  ASSERT_EQ(launchCooperative()(kernel_, blocks, 1, 1, kThreads, 1, 1, 0, nullptr, b.params),
            CUDA_SUCCESS);
  expectSums(b, blocks);
}

TEST_F(Cooperative, PerThreadStreamFormAndTwoDimensionalGrid) {
  unsigned blocks = maxBlocks() / 2 * 2;
  Buffers b;
  prepare(b, blocks);
  ASSERT_EQ(launchCooperative(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)(
                kernel_, blocks, 1, 1, kThreads, 1, 1, 0, CU_STREAM_PER_THREAD, b.params),
            CUDA_SUCCESS);
  expectSums(b, blocks);
}

TEST_F(Cooperative, LaunchKernelExWithTheCooperativeAttribute) {
  unsigned blocks = 2 * unsigned(multiprocessors_) + 1;
  Buffers b;
  b.rounds = 5;
  prepare(b, blocks);
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attribute.value.cooperative = 1;
  CUlaunchConfig config{blocks, 1, 1, kThreads, 1, 1, 0, nullptr, &attribute, 1};
  ASSERT_EQ(proc<LaunchEx>("cuLaunchKernelEx", 12090)(&config, kernel_, b.params, nullptr),
            CUDA_SUCCESS);
  expectSums(b, blocks);
}

// The programmatic and launch-completion events fire by the kernel's end (Rocuda records them
// right after it): waiting for one sees the kernel's results. They must disable timing.
TEST_F(Cooperative, LaunchEventsFireByTheKernelsEnd) {
  unsigned blocks = 3;
  Buffers b;
  prepare(b, blocks);
  CUevent timed = nullptr, untimed = nullptr, completion = nullptr;
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&timed, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuEventCreate, CUevent*, unsigned)(&completion, CU_EVENT_DISABLE_TIMING),
            CUDA_SUCCESS);
  CUlaunchAttribute attributes[3]{};
  attributes[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attributes[0].value.cooperative = 1;
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
  attributes[1].value.programmaticEvent.event = timed;
  attributes[2].id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
  attributes[2].value.launchCompletionEvent.event = completion;
  CUlaunchConfig config{blocks, 1, 1, kThreads, 1, 1, 0, nullptr, attributes, 3};
  auto launchEx = proc<LaunchEx>("cuLaunchKernelEx", 12090);
  EXPECT_EQ(launchEx(&config, kernel_, b.params, nullptr), CUDA_ERROR_INVALID_VALUE);
  attributes[1].value.programmaticEvent.event = reinterpret_cast<CUevent>(&blocks);
  EXPECT_EQ(launchEx(&config, kernel_, b.params, nullptr), CUDA_ERROR_INVALID_HANDLE);
  attributes[1].value.programmaticEvent.event = untimed;
  // Record flags: "Does not accept CU_EVENT_RECORD_EXTERNAL" (and none other is defined).
  for (int flags : {int{CU_EVENT_RECORD_EXTERNAL}, 0x40}) {
    attributes[1].value.programmaticEvent.flags = flags;
    EXPECT_EQ(launchEx(&config, kernel_, b.params, nullptr), CUDA_ERROR_INVALID_VALUE) << flags;
    attributes[1].value.programmaticEvent.flags = 0;
    attributes[2].value.launchCompletionEvent.flags = flags;
    EXPECT_EQ(launchEx(&config, kernel_, b.params, nullptr), CUDA_ERROR_INVALID_VALUE) << flags;
    attributes[2].value.launchCompletionEvent.flags = 0;
  }
  // An attribute id CUDA does not define is an invalid value.
  CUlaunchAttribute unknown[1]{};
  unknown[0].id = static_cast<CUlaunchAttributeID>(999);
  CUlaunchConfig unknownConfig{blocks, 1, 1, kThreads, 1, 1, 0, nullptr, unknown, 1};
  EXPECT_EQ(launchEx(&unknownConfig, kernel_, b.params, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(launchEx(&config, kernel_, b.params, nullptr), CUDA_SUCCESS);
  // Read back on a stream that does not wait for the launch's: only the event orders it.
  CUstream reader = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&reader, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  for (CUevent event : {untimed, completion}) {
    ASSERT_EQ(CU(cuEventSynchronize, CUevent)(event), CUDA_SUCCESS);
    std::vector<uint32_t> out(blocks * kThreads);
    ASSERT_EQ(CU(cuMemcpyDtoHAsync, void*, CUdeviceptr, size_t, CUstream)(
                  out.data(), b.out, out.size() * sizeof(uint32_t), reader),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(reader), CUDA_SUCCESS);
    uint32_t expected = 0;
    for (unsigned round = 0; round < b.rounds; ++round)
      for (unsigned block = 0; block < blocks; ++block) expected += block + 1 + round;
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], expected) << "thread " << i;
  }
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(reader), CUDA_SUCCESS);
  for (CUevent event : {timed, untimed, completion})
    EXPECT_EQ(CU(cuEventDestroy, CUevent)(event), CUDA_SUCCESS);
}

TEST_F(Cooperative, OrdinaryLaunchHasNoGridWorkspace) {
  unsigned blocks = 3;
  Buffers b;
  prepare(b, blocks);
  auto launch = CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, CUstream, void**, void**);
  ASSERT_EQ(launch(kernel_, blocks, 1, 1, kThreads, 1, 1, 0, nullptr, b.params, nullptr),
            CUDA_SUCCESS);
  // The attribute set to 0 is an ordinary launch too.
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attribute.value.cooperative = 0;
  CUlaunchConfig config{blocks, 1, 1, kThreads, 1, 1, 0, nullptr, &attribute, 1};
  ASSERT_EQ(proc<LaunchEx>("cuLaunchKernelEx", 12090)(&config, kernel_, b.params, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  std::vector<uint32_t> out(blocks * kThreads);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), b.out,
                                                            out.size() * sizeof(uint32_t)),
            CUDA_SUCCESS);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], 0xffffffffu) << "thread " << i;
}

TEST_F(Cooperative, GridOverTheOccupancyIsTooLarge) {
  Buffers b;
  prepare(b, maxBlocks() + 1);
  EXPECT_EQ(
      launchCooperative()(kernel_, maxBlocks() + 1, 1, 1, kThreads, 1, 1, 0, nullptr, b.params),
      CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  // Counted over all three dimensions.
  EXPECT_EQ(launchCooperative()(kernel_, maxBlocks(), 2, 1, kThreads, 1, 1, 0, nullptr, b.params),
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attribute.value.cooperative = 1;
  CUlaunchConfig config{maxBlocks() + 1, 1, 1, kThreads, 1, 1, 0, nullptr, &attribute, 1};
  EXPECT_EQ(proc<LaunchEx>("cuLaunchKernelEx", 12090)(&config, kernel_, b.params, nullptr),
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  // Dynamic shared memory lowers the occupancy, and with it the limit.
  int sharedPerMultiprocessor = 0;
  ASSERT_EQ(
      CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
          &sharedPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 0),
      CUDA_SUCCESS);
  size_t shared = size_t(sharedPerMultiprocessor) / 3 + 1024;  // two blocks per multiprocessor
  ASSERT_LE(shared, 48u * 1024);
  int perMultiprocessor = 0;
  ASSERT_EQ(CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, int*, CUfunction, int, size_t)(
                &perMultiprocessor, kernel_, kThreads, shared),
            CUDA_SUCCESS);
  EXPECT_EQ(perMultiprocessor, 2);
  unsigned limit = unsigned(perMultiprocessor * multiprocessors_);
  EXPECT_EQ(launchCooperative()(kernel_, limit + 1, 1, 1, kThreads, 1, 1, unsigned(shared), nullptr,
                                b.params),
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  EXPECT_EQ(launchCooperative()(kernel_, limit, 1, 1, kThreads, 1, 1, unsigned(shared), nullptr,
                                b.params),
            CUDA_SUCCESS);
  expectSums(b, limit);
}

TEST_F(Cooperative, InvalidArgumentsAreRefused) {
  Buffers b;
  prepare(b, 2);
  auto launch = launchCooperative();
  EXPECT_EQ(launch(nullptr, 2, 1, 1, kThreads, 1, 1, 0, nullptr, b.params),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(launch(kernel_, 0, 1, 1, kThreads, 1, 1, 0, nullptr, b.params),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(kernel_, 2, 1, 1, 0, 1, 1, 0, nullptr, b.params), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(kernel_, 2, 1, 1, 2048, 1, 1, 0, nullptr, b.params), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(kernel_, 2, 1, 1, kThreads, 1, 1, 0, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(kernel_, 2, 1, 1, kThreads, 1, 1, 1u << 30, nullptr, b.params),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Cooperative, GraphKernelNodeWithTheCooperativeAttribute) {
  unsigned blocks = maxBlocks();
  Buffers b;
  prepare(b, blocks);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  CUDA_KERNEL_NODE_PARAMS_v2 params{};
  params.func = kernel_;
  params.gridDimX = blocks;
  params.gridDimY = params.gridDimZ = 1;
  params.blockDimX = kThreads;
  params.blockDimY = params.blockDimZ = 1;
  params.kernelParams = b.params;
  CUgraphNode node = nullptr;
  ASSERT_EQ(proc<CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                              const CUDA_KERNEL_NODE_PARAMS_v2*)>("cuGraphAddKernelNode", 12090)(
                &node, graph, nullptr, 0, &params),
            CUDA_SUCCESS);
  CUlaunchAttributeValue value{};
  value.cooperative = 1;
  ASSERT_EQ(CU(cuGraphKernelNodeSetAttribute, CUgraphNode, CUkernelNodeAttrID,
               const CUlaunchAttributeValue*)(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value),
            CUDA_SUCCESS);
  CUlaunchAttributeValue read{};
  ASSERT_EQ(CU(cuGraphKernelNodeGetAttribute, CUgraphNode, CUkernelNodeAttrID,
               CUlaunchAttributeValue*)(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &read),
            CUDA_SUCCESS);
  EXPECT_EQ(read.cooperative, 1);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(
      CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
      CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, nullptr), CUDA_SUCCESS);
  expectSums(b, blocks);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda::testing
