// L2 access properties (sm_80): libcu++'s cuda::annotated_ptr with the streaming, persisting and
// range properties (ld/st.global.L2::cache_hint with a cache policy), cuda::apply_access_property
// and cuda::discard_memory (prefetch / discard.global.L2), and the PTX forms libcu++ does not
// emit itself: createpolicy and atomics with a cache hint. Hints change no result: every output
// is checked against a host reference.
#include <cuda/annotated_ptr>
#include <cuda/discard_memory>
#include <vector>

#include "e2e_check.h"

__host__ __device__ inline float input(int i) { return float(i % 1000) - 250.0f; }

__global__ void streamingToPersisting(const float* in, float* out, int n) {
  cuda::annotated_ptr<const float, cuda::access_property::streaming> src(in);
  cuda::annotated_ptr<float, cuda::access_property::persisting> dst(out);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i] * 2.0f + 1.0f;
}

// The first half of `in` persisting, the rest streaming.
__global__ void rangeProperty(const float* in, float* out, int n) {
  cuda::access_property property(const_cast<float*>(in), n * sizeof(float) / 2, n * sizeof(float),
                                 cuda::access_property::persisting{},
                                 cuda::access_property::streaming{});
  cuda::annotated_ptr<const float, cuda::access_property> src(in, property);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = src[i] - 3.0f;
}

// Scratch written, its property applied, then discarded: what the program keeps (`out`) is
// unaffected.
__global__ void discardScratch(float* scratch, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] = input(i) * 4.0f;
  __syncthreads();
  if (i < n) out[i] = scratch[i] + 0.5f;
  cuda::apply_access_property(scratch, n * sizeof(float), cuda::access_property::normal{});
  if (threadIdx.x == 0)
    cuda::discard_memory(scratch + blockIdx.x * blockDim.x, blockDim.x * sizeof(float));
}

// Counts through atom and red with an L2 cache hint whose policy createpolicy made.
__global__ void hintedAtomics(unsigned* counters, unsigned* olds) {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 %0, 1.0;"
               : "=l"(policy));
  unsigned old;
  asm volatile("atom.global.add.L2::cache_hint.u32 %0, [%1], 1, %2;"
               : "=r"(old)
               : "l"(counters), "l"(policy)
               : "memory");
  asm volatile("red.global.add.L2::cache_hint.u32 [%0], %1, %2;" ::"l"(counters + 1),
               "r"(threadIdx.x), "l"(policy)
               : "memory");
  olds[blockIdx.x * blockDim.x + threadIdx.x] = old;
}

int main() {
  Checker check("access_properties");
  const int n = 10000, threads = 128, blocks = (n + threads - 1) / threads;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = input(i);
  float* in = upload(host);
  float *out = nullptr, *scratch = nullptr;
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMalloc(&scratch, n * sizeof(float)));

  streamingToPersisting<<<blocks, threads>>>(in, out, n);
  CHECK_LAUNCH();
  std::vector<float> got = download(out, n);
  for (int i = 0; i < n; ++i)
    check.eq("annotated_ptr streaming/persisting", i, input(i) * 2.0f + 1.0f, got[i]);

  rangeProperty<<<blocks, threads>>>(in, out, n);
  CHECK_LAUNCH();
  got = download(out, n);
  for (int i = 0; i < n; ++i) check.eq("access_property range", i, input(i) - 3.0f, got[i]);

  discardScratch<<<blocks, threads>>>(scratch, out, n);
  CHECK_LAUNCH();
  got = download(out, n);
  for (int i = 0; i < n; ++i) check.eq("discard_memory", i, input(i) * 4.0f + 0.5f, got[i]);

  const int atomicBlocks = 6, atomicThreads = 64, total = atomicBlocks * atomicThreads;
  unsigned* counters = upload(std::vector<unsigned>{0, 0});
  unsigned* olds = nullptr;
  CHECK(cudaMalloc(&olds, total * sizeof(unsigned)));
  hintedAtomics<<<atomicBlocks, atomicThreads>>>(counters, olds);
  CHECK_LAUNCH();
  std::vector<unsigned> sums = download(counters, 2), seen = download(olds, total);
  check.eq("atom.add.L2::cache_hint total", 0, unsigned(total), sums[0]);
  check.eq("red.add.L2::cache_hint total", 1,
           unsigned(atomicBlocks * (atomicThreads - 1) * atomicThreads / 2), sums[1]);
  // Every old value is distinct: each thread's increment was atomic.
  std::vector<int> hits(total, 0);
  for (unsigned v : seen)
    if (v < unsigned(total)) ++hits[v];
  for (int v = 0; v < total; ++v) check.eq("atom.add.L2::cache_hint old values", v, 1, hits[v]);

  for (void* p : {static_cast<void*>(in), static_cast<void*>(out), static_cast<void*>(scratch),
                  static_cast<void*>(counters), static_cast<void*>(olds)})
    CHECK(cudaFree(p));
  std::printf("access_properties: %d elements through annotated pointers, %d hinted atomics\n", n,
              total);
  return check.finish();
}
