// Dynamic parallelism (CUDA 12's model): kernels launching kernels from device code. Each block
// of a parent grid launches a child that fills its slice; a kernel launches itself recursively,
// and one without end stops at CUDA's nesting limit;
// a child uses dynamic shared memory and barriers; a tail launch (cudaStreamTailLaunch) sees
// everything the parent grid's other children wrote, however late they were launched; a
// fire-and-forget child has finished when the host synchronizes; device-side streams, an event
// ordering two of them, and cudaGetLastError. Checked against host references.
#include <vector>

#include "e2e_check.h"

__global__ void fillSlice(int* out, int base) {
  out[base + threadIdx.x] = 3 * (base + threadIdx.x) + 1;
}

__global__ void parent(int* out) {
  if (threadIdx.x == 0) fillSlice<<<1, 32>>>(out, blockIdx.x * 32);
}

// depth, depth-1, ..., 0: each level writes its slot and launches the next.
__global__ void countdown(int* out, int depth) {
  out[depth] = 100 + depth;
  if (depth > 0) countdown<<<1, 1>>>(out, depth - 1);
}

// Launches itself without end: CUDA stops it at its nesting limit (24 levels), the failed
// device-side launch an error of that call only.
__global__ void unbounded(int* levels, int depth) {
  levels[depth] = 1;
  unbounded<<<1, 1>>>(levels, depth + 1);
  // The launch that fails (past the limit) reports why, through the device's last error.
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) levels[32] = error;
}

// A block CUDA cannot run (2048 threads): the launch call and the last error both say
// cudaErrorInvalidConfiguration, and the error is then cleared.
__global__ void impossibleChild(int* errors) {
  void* buffer =
      cudaGetParameterBufferV2(reinterpret_cast<void*>(fillSlice), dim3(1), dim3(2048), 0);
  int* out = nullptr;
  memcpy(buffer, &out, sizeof out);
  errors[0] = cudaLaunchDeviceV2(buffer, 0);
  errors[1] = cudaGetLastError();
  errors[2] = cudaGetLastError();
}

// CUDA records the device runtime's errors per thread: thread 5's impossible launch is thread 5's
// last error only, thread 6's good launch leaves its own clear, and the others see none.
__global__ void perThreadErrors(int* seen, int* out) {
  if (threadIdx.x == 5) fillSlice<<<1, 4096>>>(out, 0);
  if (threadIdx.x == 6) fillSlice<<<1, 1>>>(out, 0);
  __syncthreads();
  seen[blockIdx.x * blockDim.x + threadIdx.x] = cudaGetLastError();
}

// The first form of the device launch API: cudaGetParameterBuffer, then cudaLaunchDevice with
// the kernel and its shape.
__global__ void firstLaunchApi(int* out, int* errors) {
  void* buffer = cudaGetParameterBuffer(8, 2 * sizeof(void*));
  struct {
    int* out;
    int base;
  } params{out, 64};
  memcpy(buffer, &params, sizeof params);
  errors[0] = cudaLaunchDevice(reinterpret_cast<void*>(fillSlice), buffer, dim3(1), dim3(32), 0, 0);
}

// A kernel's address kept in a __device__ table (as libcudadevrt keeps its copy and fill
// kernels) launches it; cudaGetParameterBuffer takes the parameters' packed size (12 bytes, no
// padding to the buffer's 16); cudaPeekAtLastError leaves the error cudaGetLastError clears;
// more dynamic shared memory than a block may have is refused; the launch-only streams
// (cudaStreamTailLaunch, cudaStreamFireAndForget) take no event record or wait.
__device__ void* kernelTable[1] = {reinterpret_cast<void*>(fillSlice)};

__global__ void deviceRuntimeRules(int* out, int* errors) {
  struct {
    int* out;
    int base;
  } slice{out, 96};
  void* buffer = cudaGetParameterBufferV2(kernelTable[0], dim3(1), dim3(32), 0);
  errors[0] = buffer == nullptr;
  if (buffer != nullptr) {
    memcpy(buffer, &slice, 12);
    errors[1] = cudaLaunchDeviceV2(buffer, 0);
  }
  void* packed = cudaGetParameterBuffer(8, 12);
  slice.base = 128;
  memcpy(packed, &slice, 12);
  errors[2] = cudaLaunchDevice(reinterpret_cast<void*>(fillSlice), packed, dim3(1), dim3(32), 0, 0);
  void* bad = cudaGetParameterBufferV2(reinterpret_cast<void*>(fillSlice), dim3(1), dim3(2048), 0);
  memcpy(bad, &slice, 12);
  cudaLaunchDeviceV2(bad, 0);
  errors[3] = cudaPeekAtLastError();
  errors[4] = cudaPeekAtLastError();
  errors[5] = cudaGetLastError();
  errors[6] = cudaGetLastError();
  void* huge =
      cudaGetParameterBufferV2(reinterpret_cast<void*>(fillSlice), dim3(1), dim3(32), 1 << 20);
  memcpy(huge, &slice, 12);
  errors[7] = cudaLaunchDeviceV2(huge, 0);
  cudaGetLastError();
  cudaEvent_t event;
  cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  errors[8] = cudaEventRecord(event, cudaStreamTailLaunch);
  errors[9] = cudaStreamWaitEvent(cudaStreamFireAndForget, event, 0);
  cudaEventDestroy(event);
}

// One block reverses `n` values through dynamic shared memory.
__global__ void reverseBlock(int* data, int n) {
  extern __shared__ int staged[];
  int t = threadIdx.x;
  staged[t] = data[t];
  __syncthreads();
  data[t] = staged[n - 1 - t];
}

__global__ void launchReverse(int* data, int n) {
  reverseBlock<<<1, n, n * sizeof(int)>>>(data, n);
}

__global__ void sumAll(const int* values, int n, long long* sum) {
  long long s = 0;
  for (int i = 0; i < n; ++i) s += values[i];
  *sum = s;
}

// Block 0 launches the tail first; every block then launches a child filling its slice.
__global__ void tailAfterChildren(int* values, long long* sum) {
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) sumAll<<<1, 1, 0, cudaStreamTailLaunch>>>(values, gridDim.x * 32, sum);
  fillSlice<<<1, 32>>>(values, blockIdx.x * 32);
}

// A device-side stream of its own per block; the launch's status through cudaGetLastError.
__global__ void onDeviceStreams(int* out, int* errors) {
  if (threadIdx.x != 0) return;
  cudaStream_t stream;
  int created = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  fillSlice<<<1, 32, 0, stream>>>(out, blockIdx.x * 32);
  int peeked = cudaPeekAtLastError();
  int launched = cudaGetLastError();
  int destroyed = cudaStreamDestroy(stream);
  errors[blockIdx.x] = created | peeked | launched | destroyed;
}

__global__ void doubleSlice(const int* in, int* out, int base) {
  out[base + threadIdx.x] = 2 * in[base + threadIdx.x];
}

// Two device-side streams ordered by an event: the second child reads what the first wrote.
__global__ void eventOrdered(int* out, int* doubled, int* errors) {
  if (threadIdx.x != 0) return;
  cudaStream_t first, second;
  cudaEvent_t written;
  int status = cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking);
  status |= cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking);
  status |= cudaEventCreateWithFlags(&written, cudaEventDisableTiming);
  fillSlice<<<1, 32, 0, first>>>(out, blockIdx.x * 32);
  status |= cudaEventRecord(written, first);
  status |= cudaStreamWaitEvent(second, written, 0);
  doubleSlice<<<1, 32, 0, second>>>(out, doubled, blockIdx.x * 32);
  status |= cudaGetLastError();
  status |= cudaEventDestroy(written);
  status |= cudaStreamDestroy(first);
  status |= cudaStreamDestroy(second);
  errors[blockIdx.x] = status;
}

__global__ void fireAndForget(int* out) {
  if (threadIdx.x == 0) fillSlice<<<1, 32, 0, cudaStreamFireAndForget>>>(out, blockIdx.x * 32);
}

int main() {
  Checker check("dynamic_parallelism");
  const int blocks = 8, n = blocks * 32;
  int* d = nullptr;
  long long* sum = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  CHECK(cudaMalloc(&sum, sizeof(long long)));

  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  parent<<<blocks, 64>>>(d);
  CHECK_LAUNCH();
  std::vector<int> got = download(d, n);
  for (int i = 0; i < n; ++i) check.eq("parent/child", i, 3 * i + 1, got[i]);

  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  countdown<<<1, 1>>>(d, 20);
  CHECK_LAUNCH();
  got = download(d, 21);
  for (int i = 0; i <= 20; ++i) check.eq("recursive countdown", i, 100 + i, got[i]);

  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  unbounded<<<1, 1>>>(d, 0);
  CHECK_LAUNCH();
  got = download(d, 64);
  int levels = 0;
  while (levels < 64 && got[levels] == 1) ++levels;
  check.eq("unbounded recursion: levels 0..15 ran", 0, true, levels >= 16);
  check.eq("unbounded recursion: stopped at the nesting limit", 0, true, levels <= 24);
  for (int i = levels; i < 32; ++i)
    check.eq("unbounded recursion: nothing past the limit", i, 0, got[i]);
  check.eq("the launch past the limit: cudaErrorLaunchMaxDepthExceeded", 32,
           static_cast<int>(cudaErrorLaunchMaxDepthExceeded), got[32]);

  CHECK(cudaMemset(d, 0xff, 3 * sizeof(int)));
  impossibleChild<<<1, 1>>>(d);
  CHECK_LAUNCH();
  got = download(d, 3);
  check.eq("device launch of 2048 threads", 0, static_cast<int>(cudaErrorInvalidConfiguration),
           got[0]);
  check.eq("its last error", 1, static_cast<int>(cudaErrorInvalidConfiguration), got[1]);
  check.eq("the last error, cleared", 2, 0, got[2]);

  {
    constexpr int kBlocks = 3, kThreads = 64;
    int* seen = nullptr;
    CHECK(cudaMalloc(&seen, kBlocks * kThreads * sizeof(int)));
    CHECK(cudaMemset(seen, 0xff, kBlocks * kThreads * sizeof(int)));
    perThreadErrors<<<kBlocks, kThreads>>>(seen, d);
    CHECK_LAUNCH();
    std::vector<int> errorsSeen = download(seen, kBlocks * kThreads);
    for (int i = 0; i < kBlocks * kThreads; ++i)
      check.eq("each thread's own last error", i,
               i % kThreads == 5 ? static_cast<int>(cudaErrorInvalidConfiguration) : 0,
               errorsSeen[i]);
    CHECK(cudaFree(seen));
  }

  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  CHECK(cudaMemset(d + n - 1, 0xff, sizeof(int)));
  firstLaunchApi<<<1, 1>>>(d, d + n - 1);
  CHECK_LAUNCH();
  got = download(d, n);
  for (int i = 0; i < 32; ++i) check.eq("cudaLaunchDevice", i, 3 * (64 + i) + 1, got[64 + i]);
  check.eq("cudaLaunchDevice's answer", 0, 0, got[n - 1]);

  std::vector<int> values(128);
  for (int i = 0; i < 128; ++i) values[i] = i * i;
  CHECK(cudaMemcpy(d, values.data(), 128 * sizeof(int), cudaMemcpyHostToDevice));
  launchReverse<<<1, 1>>>(d, 128);
  CHECK_LAUNCH();
  got = download(d, 128);
  for (int i = 0; i < 128; ++i)
    check.eq("child with dynamic shared memory", i, values[127 - i], got[i]);

  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  CHECK(cudaMemset(sum, 0, sizeof(long long)));
  tailAfterChildren<<<blocks, 32>>>(d, sum);
  CHECK_LAUNCH();
  long long want = 0;
  for (int i = 0; i < n; ++i) want += 3 * i + 1;
  check.eq("tail launch after every child", 0, want, download(sum, 1)[0]);

  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  int* errors = nullptr;
  CHECK(cudaMalloc(&errors, blocks * sizeof(int)));
  CHECK(cudaMemset(errors, 0xff, blocks * sizeof(int)));
  onDeviceStreams<<<blocks, 32>>>(d, errors);
  CHECK_LAUNCH();
  got = download(d, n);
  for (int i = 0; i < n; ++i) check.eq("device-side streams", i, 3 * i + 1, got[i]);
  std::vector<int> statuses = download(errors, blocks);
  for (int b = 0; b < blocks; ++b) check.eq("device-side stream calls succeed", b, 0, statuses[b]);

  int* doubled = nullptr;
  CHECK(cudaMalloc(&doubled, n * sizeof(int)));
  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  CHECK(cudaMemset(doubled, 0, n * sizeof(int)));
  CHECK(cudaMemset(errors, 0xff, blocks * sizeof(int)));
  eventOrdered<<<blocks, 32>>>(d, doubled, errors);
  CHECK_LAUNCH();
  got = download(doubled, n);
  for (int i = 0; i < n; ++i) check.eq("stream waiting for an event", i, 2 * (3 * i + 1), got[i]);
  statuses = download(errors, blocks);
  for (int b = 0; b < blocks; ++b) check.eq("device-side event calls succeed", b, 0, statuses[b]);
  CHECK(cudaFree(doubled));
  CHECK(cudaFree(errors));

  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  fireAndForget<<<blocks, 32>>>(d);
  CHECK_LAUNCH();
  got = download(d, n);
  for (int i = 0; i < n; ++i) check.eq("fire and forget", i, 3 * i + 1, got[i]);

  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  int* rules = nullptr;
  CHECK(cudaMalloc(&rules, 10 * sizeof(int)));
  CHECK(cudaMemset(rules, 0xff, 10 * sizeof(int)));
  deviceRuntimeRules<<<1, 1>>>(d, rules);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  got = download(d, n);
  for (int i = 96; i < 160; ++i)
    check.eq("launch through a kernel table / packed size", i, 3 * i + 1, got[i]);
  std::vector<int> ruleErrors = download(rules, 10);
  const int expectedRules[10] = {0, 0, 0, 9, 9, 9, 0, 1, 1, 1};  // 9: invalid configuration
  for (int i = 0; i < 10; ++i) check.eq("device runtime rule", i, expectedRules[i], ruleErrors[i]);
  CHECK(cudaFree(rules));

  CHECK(cudaFree(d));
  CHECK(cudaFree(sum));
  std::printf("dynamic_parallelism: device-side launches from %d blocks, recursion depth 20\n",
              blocks);
  return check.finish();
}
