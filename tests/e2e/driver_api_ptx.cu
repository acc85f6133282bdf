// The driver API used directly, the way JIT-style applications do: cuInit, cuDeviceGet,
// cuCtxCreate (CUDA 13 signature), cuModuleLoadData with a PTX string embedded below,
// cuModuleGetFunction / cuModuleGetGlobal, cuMemAlloc, cuMemcpyHtoD, cuLaunchKernel with
// kernelParams, cuCtxSynchronize, cuMemcpyDtoH; plus error cases that must be reported, not
// crash, and leave the context usable. Links against libcuda (-lcuda); no runtime API calls.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CU_CHECK(call)                                                                          \
  do {                                                                                          \
    CUresult cuErr_ = (call);                                                                   \
    if (cuErr_ != CUDA_SUCCESS) {                                                               \
      const char* cuName_ = nullptr;                                                            \
      const char* cuText_ = nullptr;                                                            \
      cuGetErrorName(cuErr_, &cuName_);                                                         \
      cuGetErrorString(cuErr_, &cuText_);                                                       \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%d): %s\n", __FILE__, __LINE__, #call,        \
                   cuName_ ? cuName_ : "?", static_cast<int>(cuErr_), cuText_ ? cuText_ : "?"); \
      std::exit(2);                                                                             \
    }                                                                                           \
  } while (0)

// Hand-written PTX: out[i] = in[i] * a + b for i < n, counting the threads that wrote into the
// module-scope variable `launched`; and `iota`, which writes base + global index.
static const char kPtx[] = R"PTX(
.version 8.0
.target sm_75
.address_size 64

.visible .global .align 4 .u32 launched;

.visible .entry affine(
  .param .u64 in_ptr,
  .param .u64 out_ptr,
  .param .u32 a,
  .param .u32 b,
  .param .u32 n
)
{
  .reg .pred %p<2>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;

  ld.param.u64 %rd1, [in_ptr];
  ld.param.u64 %rd2, [out_ptr];
  ld.param.u32 %r1, [a];
  ld.param.u32 %r2, [b];
  ld.param.u32 %r3, [n];
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r5, %ntid.x;
  mov.u32 %r6, %tid.x;
  mad.lo.s32 %r7, %r4, %r5, %r6;
  setp.ge.s32 %p1, %r7, %r3;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.s32 %rd5, %r7, 4;
  add.s64 %rd6, %rd3, %rd5;
  ld.global.u32 %r8, [%rd6];
  mad.lo.s32 %r9, %r8, %r1, %r2;
  add.s64 %rd7, %rd4, %rd5;
  st.global.u32 [%rd7], %r9;
  atom.global.add.u32 %r10, [launched], 1;
DONE:
  ret;
}

.visible .entry iota(
  .param .u64 out_ptr,
  .param .u64 base
)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<7>;

  ld.param.u64 %rd1, [out_ptr];
  ld.param.u64 %rd2, [base];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  cvt.u64.u32 %rd3, %r4;
  add.s64 %rd4, %rd2, %rd3;
  cvta.to.global.u64 %rd5, %rd1;
  mul.wide.u32 %rd6, %r4, 8;
  add.s64 %rd5, %rd5, %rd6;
  st.global.u64 [%rd5], %rd4;
  ret;
}

// A function that writes through a pointer into its caller's local memory (st.local after
// cvta.to.local), as NVVM does for functions it does not inline: the same thread's local
// memory, which memcheck (ROCUDA_MEMCHECK=1: e2e.driver_api_ptx.memcheck) must accept.
.func store_through(.param .b64 p, .param .b64 v)
{
  .reg .b64 %rd<4>;
  .local .align 8 .b8 own[8];
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd2, [v];
  cvta.to.local.u64 %rd3, %rd1;
  st.local.u64 [%rd3], %rd2;
  ret;
}

.visible .entry through_caller_local(.param .u64 out_ptr)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<10>;
  .reg .b64 %SP;
  .reg .b64 %SPL;
  .local .align 8 .b8 depot[64];
  mov.u64 %SPL, depot;
  cvta.local.u64 %SP, %SPL;
  add.u64 %rd1, %SP, 56;
  mov.u32 %r1, %tid.x;
  cvt.u64.u32 %rd2, %r1;
  add.u64 %rd2, %rd2, 42;
  {
    .param .b64 a0;
    .param .b64 a1;
    st.param.b64 [a0], %rd1;
    st.param.b64 [a1], %rd2;
    call.uni store_through, (a0, a1);
  }
  add.u64 %rd3, %SPL, 56;
  ld.local.u64 %rd4, [%rd3];
  ld.param.u64 %rd5, [out_ptr];
  cvta.to.global.u64 %rd6, %rd5;
  mul.wide.u32 %rd7, %r1, 8;
  add.s64 %rd8, %rd6, %rd7;
  st.global.u64 [%rd8], %rd4;
  ret;
}
)PTX";

// Well-formed PTX text with an instruction that does not exist.
static const char kBadPtx[] = R"PTX(
.version 8.0
.target sm_75
.address_size 64
.visible .entry broken()
{
  frobnicate.u32 %r1, 42;
  ret;
}
)PTX";

static int failures = 0;

static void expectResult(const char* what, CUresult got, CUresult want1, CUresult want2) {
  if (got == want1 || got == want2) return;
  const char* name = nullptr;
  cuGetErrorName(got, &name);
  std::fprintf(stderr, "MISMATCH %s: got %d (%s), expected %d or %d\n", what, static_cast<int>(got),
               name ? name : "?", static_cast<int>(want1), static_cast<int>(want2));
  ++failures;
}

// Launches `affine` on n elements and checks the result; returns the number of mismatches.
static int runAffine(CUfunction affine, int n, int a, int b) {
  std::vector<int> in(n), out(n, 0);
  for (int i = 0; i < n; ++i) in[i] = (i * 7919) % 10007 - 5000;
  CUdeviceptr dIn = 0, dOut = 0;
  CU_CHECK(cuMemAlloc(&dIn, n * sizeof(int)));
  CU_CHECK(cuMemAlloc(&dOut, n * sizeof(int)));
  CU_CHECK(cuMemcpyHtoD(dIn, in.data(), n * sizeof(int)));
  void* params[] = {&dIn, &dOut, &a, &b, &n};
  const unsigned block = 128;
  CU_CHECK(cuLaunchKernel(affine, (n + block - 1) / block, 1, 1, block, 1, 1, 0, nullptr, params,
                          nullptr));
  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuMemcpyDtoH(out.data(), dOut, n * sizeof(int)));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int expected = in[i] * a + b;
    if (out[i] != expected && bad++ < 8)
      std::fprintf(stderr, "MISMATCH affine[%d]: expected %d, got %d\n", i, expected, out[i]);
  }
  CU_CHECK(cuMemFree(dIn));
  CU_CHECK(cuMemFree(dOut));
  return bad;
}

int main() {
  CU_CHECK(cuInit(0));
  int driverVersion = 0;
  CU_CHECK(cuDriverGetVersion(&driverVersion));
  int count = 0;
  CU_CHECK(cuDeviceGetCount(&count));
  if (count < 1) {
    std::fprintf(stderr, "no devices\nFAILED\n");
    return 1;
  }
  CUdevice dev;
  CU_CHECK(cuDeviceGet(&dev, 0));
  char name[256] = {0};
  CU_CHECK(cuDeviceGetName(name, sizeof name, dev));
  int major = 0, minor = 0;
  CU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CU_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  size_t totalMem = 0;
  CU_CHECK(cuDeviceTotalMem(&totalMem, dev));
  std::printf("driver_api_ptx: driver %d, device \"%s\" (sm_%d%d), %zu bytes\n", driverVersion,
              name, major, minor, totalMem);
  if (name[0] == '\0' || totalMem == 0 || driverVersion < 13000) {
    std::fprintf(stderr, "device query returned empty name, zero memory or an old version\n");
    ++failures;
  }

  CUcontext ctx = nullptr;
  CU_CHECK(cuCtxCreate(&ctx, nullptr, 0, dev));
  CUmodule module = nullptr;
  CU_CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction affine = nullptr, iota = nullptr;
  CU_CHECK(cuModuleGetFunction(&affine, module, "affine"));
  CU_CHECK(cuModuleGetFunction(&iota, module, "iota"));
  CUfunction throughCallerLocal = nullptr;
  CU_CHECK(cuModuleGetFunction(&throughCallerLocal, module, "through_caller_local"));

  // The module global starts at zero (PTX .global without an initialiser).
  CUdeviceptr launched = 0;
  size_t launchedSize = 0;
  CU_CHECK(cuModuleGetGlobal(&launched, &launchedSize, module, "launched"));
  if (launchedSize != sizeof(unsigned)) {
    std::fprintf(stderr, "MISMATCH cuModuleGetGlobal size: expected 4, got %zu\n", launchedSize);
    ++failures;
  }
  const int n = 100000;
  failures += runAffine(affine, n, 3, -17);
  unsigned launchedCount = 0;
  CU_CHECK(cuMemcpyDtoH(&launchedCount, launched, sizeof launchedCount));
  if (launchedCount != static_cast<unsigned>(n)) {
    std::fprintf(stderr, "MISMATCH launched: expected %d, got %u\n", n, launchedCount);
    ++failures;
  }

  // Deliberate errors.
  CUfunction missing = nullptr;
  expectResult("cuModuleGetFunction(missing name)",
               cuModuleGetFunction(&missing, module, "no_such_kernel"), CUDA_ERROR_NOT_FOUND,
               CUDA_ERROR_NOT_FOUND);
  CUdeviceptr missingGlobal = 0;
  expectResult("cuModuleGetGlobal(missing name)",
               cuModuleGetGlobal(&missingGlobal, nullptr, module, "no_such_global"),
               CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
  CUmodule garbage = nullptr;
  expectResult("cuModuleLoadData(garbage)",
               cuModuleLoadData(&garbage, "this is not PTX or a cubin at all"),
               CUDA_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_IMAGE);
  CUmodule broken = nullptr;
  expectResult("cuModuleLoadData(unknown instruction)", cuModuleLoadData(&broken, kBadPtx),
               CUDA_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_PTX);
  const char* errName = nullptr;
  const char* errText = nullptr;
  if (cuGetErrorName(CUDA_ERROR_NOT_FOUND, &errName) != CUDA_SUCCESS || errName == nullptr ||
      std::strcmp(errName, "CUDA_ERROR_NOT_FOUND") != 0 ||
      cuGetErrorString(CUDA_ERROR_INVALID_PTX, &errText) != CUDA_SUCCESS || errText == nullptr) {
    std::fprintf(stderr, "cuGetErrorName/cuGetErrorString gave wrong answers\n");
    ++failures;
  }

  // The context still works after the errors: a second kernel, then affine again.
  const int m = 4096;
  CUdeviceptr dIota = 0;
  CU_CHECK(cuMemAlloc(&dIota, m * sizeof(unsigned long long)));
  unsigned long long base = 0x100000000ULL;
  void* iotaParams[] = {&dIota, &base};
  CU_CHECK(cuLaunchKernel(iota, m / 256, 1, 1, 256, 1, 1, 0, nullptr, iotaParams, nullptr));
  CU_CHECK(cuCtxSynchronize());
  std::vector<unsigned long long> iotaOut(m);
  CU_CHECK(cuMemcpyDtoH(iotaOut.data(), dIota, m * sizeof(unsigned long long)));
  int iotaBad = 0;
  for (int i = 0; i < m; ++i)
    if (iotaOut[i] != base + i && iotaBad++ < 8)
      std::fprintf(stderr, "MISMATCH iota[%d]: expected %llu, got %llu\n", i, base + i, iotaOut[i]);
  failures += iotaBad;
  failures += runAffine(affine, 777, -2, 5);
  CU_CHECK(cuMemFree(dIota));

  // A function's result written into its caller's local memory: thread t reads back 42 + t.
  CUdeviceptr dLocal = 0;
  CU_CHECK(cuMemAlloc(&dLocal, 64 * sizeof(unsigned long long)));
  void* localParams[] = {&dLocal};
  CU_CHECK(cuLaunchKernel(throughCallerLocal, 1, 1, 1, 64, 1, 1, 0, nullptr, localParams, nullptr));
  CU_CHECK(cuCtxSynchronize());
  std::vector<unsigned long long> localOut(64);
  CU_CHECK(cuMemcpyDtoH(localOut.data(), dLocal, 64 * sizeof(unsigned long long)));
  for (int t = 0; t < 64; ++t)
    if (localOut[t] != 42u + t) {
      std::fprintf(stderr, "MISMATCH through_caller_local[%d]: expected %d, got %llu\n", t, 42 + t,
                   localOut[t]);
      ++failures;
    }
  CU_CHECK(cuMemFree(dLocal));

  CU_CHECK(cuModuleUnload(module));
  CU_CHECK(cuCtxDestroy(ctx));
  if (failures != 0) {
    std::fprintf(stderr, "driver_api_ptx: %d mismatch(es)\nFAILED\n", failures);
    return 1;
  }
  std::printf("driver_api_ptx: PASSED\n");
  return 0;
}
