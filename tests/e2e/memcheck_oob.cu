// ROCUDA_MEMCHECK=1: planted invalid accesses are caught with the right thread, block and line.
// One case per process (CUDA_ERROR_ILLEGAL_ADDRESS is sticky, the context is unusable after it):
//   memcheck_oob global|shared|async_copy|local|local_sync|free|off|race
// Every case first runs a correct kernel (global, shared and local memory) under memcheck and
// checks its results; then the planted bug: the launch must fail with cudaErrorIllegalAddress,
// stay failed, and the error line Rocuda writes to stderr (captured here) must name the
// access, thread, block, CUDA line (built with -lineinfo) and the allocation. `off` runs with
// memcheck off: the planted global write (inside the allocation's alignment padding, so
// harmless) goes unchecked and nothing breaks. `race` (ROCUDA_MEMCHECK=race): the correct kernel
// reports no race, a kernel missing a __syncthreads reports both hazards and still completes.
#include <cuda_pipeline.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "e2e_check.h"

constexpr int kN = 1000;  // 4000 bytes: the CPU device rounds allocations to 256 (4096 bytes)

// Correct: a block-wide sum through shared memory, a dynamically indexed local array and global
// reads and writes.
__global__ void correctKernel(const int* in, int* out, const int* order, int n) {
  __shared__ int tile[128];
  int local[16];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  for (int k = 0; k < 16; ++k) local[k] = v + k;
  tile[threadIdx.x] = local[order[threadIdx.x % 16]];
  __syncthreads();
  int left = tile[(threadIdx.x + blockDim.x - 1) % blockDim.x];
  if (i < n) out[i] = tile[threadIdx.x] + left;
}

// Correct: device-side malloc/free (memcheck must know these allocations too).
__global__ void deviceHeap(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int* scratch = static_cast<int*>(malloc(4 * sizeof(int)));
  if (scratch == nullptr) {
    out[i] = -1;
    return;
  }
  for (int k = 0; k < 4; ++k) scratch[k] = i * k;
  out[i] = scratch[0] + scratch[1] + scratch[2] + scratch[3];
  free(scratch);
}

// Correct: the end of a 28-byte dynamic shared array read as one 16-byte vector, as NVIDIA's
// NVVM widens such reads (numba-cuda's dynamic shared slices): bytes 28..31 are read but unused.
__global__ void widenedTailRead(int* out) {
  extern __shared__ int words[];
  words[threadIdx.x] = static_cast<int>(threadIdx.x) * 10 + 1;
  __syncthreads();
  if (threadIdx.x != 0) return;
  unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(words + 4));
  int x, y, z, w;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
               : "r"(address));
  out[0] = x + y + z;
}

// The planted bugs: one thread of one block goes wrong.
constexpr int kBadThread = 5, kBadBlock = 2;

// Only the planted thread writes out of bounds: the grid's threads past kN write nothing (a
// guard on `index` let them write the 8 ints after the end too, and under load one of them was
// sometimes the access memcheck reported first).
__global__ void plantedGlobalWrite(int* data, int badIndex) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int index = (threadIdx.x == kBadThread && blockIdx.x == kBadBlock) ? badIndex : i;
  if (i < kN) data[index] = i;  // kGlobalLine
}
constexpr int kGlobalLine = __LINE__ - 2;

__global__ void plantedSharedWrite(int* out, int badOffset) {
  __shared__ int tile[64];
  int index = (threadIdx.x == kBadThread && blockIdx.x == kBadBlock) ? 64 + badOffset
                                                                     : threadIdx.x;
  tile[index] = threadIdx.x;  // kSharedLine
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + 1) % 64];
}
constexpr int kSharedLine = __LINE__ - 4;

// An asynchronous global->shared copy (cp.async with a source size, as cuda_pipeline.h emits
// it) reading past the end of its allocation.
__global__ void plantedAsyncCopy(const int* data, int* out, int badIndex) {
  __shared__ int tile[128];
  int index = (threadIdx.x == kBadThread && blockIdx.x == kBadBlock) ? badIndex : threadIdx.x;
  __pipeline_memcpy_async(&tile[threadIdx.x], &data[index], sizeof(int));  // kAsyncCopyLine
  __pipeline_commit();
  __pipeline_wait_prior(0);
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[threadIdx.x];
}
constexpr int kAsyncCopyLine = __LINE__ - 5;

// Sync: with a barrier, so that the kernel runs as a Continuation (local memory in frames).
template <bool Sync>
__global__ void plantedLocalWrite(int* out, const int* indices) {
  int local[8];
  for (int k = 0; k < 8; ++k) local[k] = k * threadIdx.x;
  int index = indices[blockIdx.x * blockDim.x + threadIdx.x];
  if (Sync) __syncthreads();
  local[index] = 42;  // kLocalLine
  int sum = 0;
  for (int k = 0; k < 8; ++k) sum += local[(k + index) & 7];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
constexpr int kLocalLine = __LINE__ - 5;

// One thread stores an int one byte past an int boundary: a misaligned address.
__global__ void misalignedStore(int* data, int culprit) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  char* bytes = reinterpret_cast<char*>(data + t);
  if (t == culprit) bytes += 1;
  *reinterpret_cast<int*>(bytes) = t;  // kMisalignedLine
}
constexpr int kMisalignedLine = __LINE__ - 2;

__global__ void readAfterFree(const int* data, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = data[i];  // kFreeLine
}
constexpr int kFreeLine = __LINE__ - 2;

// A planted race: each thread reads what a thread of another warp wrote, with no barrier.
__global__ void missingBarrier(int* out) {
  __shared__ int tile[128];
  tile[threadIdx.x] = threadIdx.x * 3;  // kRaceWriteLine
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x + 64) % 128];  // kRaceReadLine
}
constexpr int kRaceWriteLine = __LINE__ - 3, kRaceReadLine = __LINE__ - 2;

// Not a race: threads of different warps write different bytes of the same words (the byte
// counters of a 64-bin histogram), and read them after a barrier.
__global__ void byteCounters(unsigned char* out) {
  __shared__ unsigned char counters[256];
  // Word k's four bytes are written by threads k, k + 64, k + 128, k + 192: four warps.
  counters[(threadIdx.x % 64) * 4 + threadIdx.x / 64] = static_cast<unsigned char>(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = counters[255 - threadIdx.x];
}

namespace {

void runCorrectKernel(Checker& check) {
  const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads;
  int hostIn[n], hostOrder[16], hostOut[n];
  for (int i = 0; i < n; ++i) hostIn[i] = 3 * i - 700;
  for (int k = 0; k < 16; ++k) hostOrder[k] = (k * 7) % 16;
  int *in, *out, *order;
  CHECK(cudaMalloc(&in, n * sizeof(int)));
  CHECK(cudaMalloc(&out, n * sizeof(int)));
  CHECK(cudaMalloc(&order, sizeof hostOrder));
  CHECK(cudaMemcpy(in, hostIn, sizeof hostIn, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(order, hostOrder, sizeof hostOrder, cudaMemcpyHostToDevice));
  correctKernel<<<blocks, threads>>>(in, out, order, n);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(hostOut, out, sizeof hostOut, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    int b = i / threads, t = i % threads;
    auto tileAt = [&](int thread) {
      int j = b * threads + thread;
      int v = j < n ? hostIn[j] : 0;
      return v + hostOrder[thread % 16];
    };
    check.eq("correctKernel", i, tileAt(t) + tileAt((t + threads - 1) % threads), hostOut[i]);
  }
  deviceHeap<<<blocks, threads>>>(out, n);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(hostOut, out, sizeof hostOut, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) check.eq("deviceHeap", i, 6 * i, hostOut[i]);
  widenedTailRead<<<1, 7, 7 * sizeof(int)>>>(out);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(hostOut, out, sizeof(int), cudaMemcpyDeviceToHost));
  check.eq("widenedTailRead", 0, 41 + 51 + 61, hostOut[0]);
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  CHECK(cudaFree(order));
}

// Runs `launch` with stderr sent to a file; returns the synchronize result and what was written.
template <class Launch>
cudaError_t captureStderr(Launch launch, std::string& text) {
  char path[] = "/tmp/memcheck_oob_XXXXXX";
  int file = mkstemp(path);
  if (file < 0) return cudaErrorUnknown;
  std::fflush(stderr);
  int saved = dup(2);
  dup2(file, 2);
  launch();
  cudaError_t launchError = cudaGetLastError();
  cudaError_t sync = cudaDeviceSynchronize();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char buffer[4096];
  lseek(file, 0, SEEK_SET);
  ssize_t got;
  while ((got = read(file, buffer, sizeof buffer)) > 0) text.append(buffer, got);
  close(file);
  unlink(path);
  std::fputs(text.c_str(), stderr);  // still visible in the test's output
  return launchError != cudaSuccess ? launchError : sync;
}

void expectReport(Checker& check, const std::string& text, const std::string& part) {
  bool found = text.find(part) != std::string::npos;
  if (!found) std::fprintf(stderr, "report lacks: %s\n", part.c_str());
  check.expect(found, "the memcheck report names the access");
}

void expectIllegalAddress(Checker& check, cudaError_t result) {
  if (result != cudaErrorIllegalAddress)
    std::fprintf(stderr, "expected cudaErrorIllegalAddress, got %s\n", cudaGetErrorName(result));
  check.expect(result == cudaErrorIllegalAddress, "the launch fails with an illegal address");
  check.expect(cudaDeviceSynchronize() == cudaErrorIllegalAddress, "the error is sticky");
}

std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

std::string threadAndBlock() {
  return "by thread (" + std::to_string(kBadThread) + ",0,0) in block (" +
         std::to_string(kBadBlock) + ",0,0) of kernel ";
}

std::string line(int cudaLine) { return "memcheck_oob.cu:" + std::to_string(cudaLine) + ")"; }

void globalCase(Checker& check, bool memcheck) {
  int* data;
  CHECK(cudaMalloc(&data, kN * sizeof(int)));
  std::string text;
  cudaError_t result = captureStderr([&] { plantedGlobalWrite<<<8, 128>>>(data, kN + 3); }, text);
  if (!memcheck) {
    check.expect(result == cudaSuccess, "without memcheck the planted write is not checked");
    int first[4];
    CHECK(cudaMemcpy(first, data, sizeof first, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4; ++i) check.eq("data", i, i, first[i]);
    CHECK(cudaFree(data));
    return;
  }
  expectIllegalAddress(check, result);
  expectReport(check, text, "memcheck: invalid global write of 4 bytes at " + hex(data + kN + 3));
  expectReport(check, text, threadAndBlock() + "_Z18plantedGlobalWritePii, PTX line ");
  expectReport(check, text, line(kGlobalLine));
  expectReport(check, text,
               ": 12 bytes after the end of the allocation at " + hex(data) + " of 4000 bytes");
}

void asyncCopyCase(Checker& check) {
  int *data, *out;
  CHECK(cudaMalloc(&data, kN * sizeof(int)));
  CHECK(cudaMalloc(&out, 8 * 128 * sizeof(int)));
  std::string text;
  cudaError_t result =
      captureStderr([&] { plantedAsyncCopy<<<8, 128>>>(data, out, kN + 64); }, text);
  expectIllegalAddress(check, result);
  expectReport(check, text, "memcheck: invalid global read of 4 bytes at " + hex(data + kN + 64));
  expectReport(check, text, threadAndBlock() + "_Z16plantedAsyncCopyPKiPii, PTX line ");
  expectReport(check, text, line(kAsyncCopyLine));
}

void sharedCase(Checker& check) {
  int* out;
  CHECK(cudaMalloc(&out, 8 * 64 * sizeof(int)));
  std::string text;
  cudaError_t result = captureStderr([&] { plantedSharedWrite<<<8, 64>>>(out, 3); }, text);
  expectIllegalAddress(check, result);
  expectReport(check, text, "memcheck: invalid shared write of 4 bytes at 0x");
  expectReport(check, text, threadAndBlock() + "_Z18plantedSharedWritePii, PTX line ");
  expectReport(check, text, line(kSharedLine));
  expectReport(check, text, ": 12 bytes after the end of the block's 256 bytes of shared memory");
}

void localCase(Checker& check, bool sync) {
  const int count = 4 * 32;
  int hostIndices[count];
  for (int i = 0; i < count; ++i) hostIndices[i] = i % 8;
  hostIndices[kBadBlock * 32 + kBadThread] = 10;
  int *out, *indices;
  CHECK(cudaMalloc(&out, count * sizeof(int)));
  CHECK(cudaMalloc(&indices, sizeof hostIndices));
  CHECK(cudaMemcpy(indices, hostIndices, sizeof hostIndices, cudaMemcpyHostToDevice));
  std::string text;
  cudaError_t result = captureStderr([&] {
    if (sync)
      plantedLocalWrite<true><<<4, 32>>>(out, indices);
    else
      plantedLocalWrite<false><<<4, 32>>>(out, indices);
  }, text);
  expectIllegalAddress(check, result);
  expectReport(check, text, "memcheck: invalid local write of 4 bytes at 0x");
  expectReport(check, text, threadAndBlock() + (sync ? "_Z17plantedLocalWriteILb1EEvPiPKi"
                                                      : "_Z17plantedLocalWriteILb0EEvPiPKi") +
                                ", PTX line ");
  expectReport(check, text, line(kLocalLine));
  expectReport(check, text, ": 8 bytes after the end of the thread's local memory of 32 bytes");
}

void freeCase(Checker& check) {
  int *data, *out;
  CHECK(cudaMalloc(&data, 256 * sizeof(int)));
  CHECK(cudaMalloc(&out, 256 * sizeof(int)));
  CHECK(cudaFree(data));
  std::string text;
  cudaError_t result = captureStderr([&] { readAfterFree<<<2, 128>>>(data, out); }, text);
  expectIllegalAddress(check, result);
  // Every thread reads freed memory: which one is reported first depends on the schedule.
  expectReport(check, text, "memcheck: invalid global read of 4 bytes at 0x");
  expectReport(check, text, ") of kernel _Z13readAfterFreePKiPi, PTX line ");
  expectReport(check, text, line(kFreeLine));
  expectReport(check, text,
               ": use after free of the allocation at " + hex(data) + " of 1024 bytes");
}

void misalignedCase(Checker& check) {
  int* data;
  CHECK(cudaMalloc(&data, 257 * sizeof(int)));
  std::string text;
  cudaError_t result = captureStderr([&] { misalignedStore<<<2, 128>>>(data, 130); }, text);
  if (result != cudaErrorMisalignedAddress)
    std::fprintf(stderr, "expected cudaErrorMisalignedAddress, got %s\n", cudaGetErrorName(result));
  check.expect(result == cudaErrorMisalignedAddress, "the launch fails with a misaligned address");
  check.expect(cudaDeviceSynchronize() == cudaErrorMisalignedAddress, "the error is sticky");
  expectReport(check, text,
               "memcheck: invalid global write of 4 bytes at " +
                   hex(reinterpret_cast<char*>(data) + 130 * 4 + 1));
  expectReport(check, text, " by thread (2,0,0) in block (1,0,0) of kernel _Z15misalignedStorePii");
  expectReport(check, text, line(kMisalignedLine));
  expectReport(check, text, ": the address is not a multiple of the access size");
}

void raceCase(Checker& check) {
  std::string clean;
  check.expect(captureStderr([&] { runCorrectKernel(check); }, clean) == cudaSuccess,
               "the correct kernel succeeds under the race check");
  check.expect(clean.find("race") == std::string::npos, "the correct kernel reports no race");
  unsigned char* bytes;
  CHECK(cudaMalloc(&bytes, 2 * 256));
  std::string byteText;
  check.expect(captureStderr([&] { byteCounters<<<2, 256>>>(bytes); }, byteText) == cudaSuccess,
               "byte counters run under the race check");
  check.expect(byteText.find("race") == std::string::npos,
               "writes to different bytes of one word are no race");
  CHECK(cudaFree(bytes));
  int* out;
  CHECK(cudaMalloc(&out, 2 * 128 * sizeof(int)));
  std::string text;
  cudaError_t result = captureStderr([&] { missingBarrier<<<2, 128>>>(out); }, text);
  check.expect(result == cudaSuccess, "a race is reported, not fatal");
  expectReport(check, text, "memcheck: shared memory race (write after read) in block (");
  expectReport(check, text, "memcheck: shared memory race (read after write) in block (");
  expectReport(check, text, ") of kernel _Z14missingBarrierPi: ");
  expectReport(check, text, line(kRaceWriteLine) + ", conflicts with a read by thread (");
  expectReport(check, text, line(kRaceReadLine) + ", conflicts with a write by thread (");
  expectReport(check, text, ", with no barrier between");
  CHECK(cudaFree(out));
}

}  // namespace

int main(int argc, char** argv) {
  Checker check("memcheck_oob");
  std::string mode = argc > 1 ? argv[1] : "global";
  if (mode != "race") runCorrectKernel(check);
  if (mode == "global") {
    globalCase(check, true);
  } else if (mode == "off") {
    globalCase(check, false);
    runCorrectKernel(check);  // the device is still fine
  } else if (mode == "shared") {
    sharedCase(check);
  } else if (mode == "async_copy") {
    asyncCopyCase(check);
  } else if (mode == "local" || mode == "local_sync") {
    localCase(check, mode == "local_sync");
  } else if (mode == "free") {
    freeCase(check);
  } else if (mode == "misaligned") {
    misalignedCase(check);
  } else if (mode == "race") {
    raceCase(check);
  } else {
    std::fprintf(stderr, "unknown case '%s'\n", mode.c_str());
    return 2;
  }
  return check.finish();
}
