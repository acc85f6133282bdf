// A device-side assert() that fails: the launch completes with cudaErrorAssert, the error is
// sticky for the context (as on NVIDIA hardware), and the process itself is unharmed. Every
// thread failing an assert reports it (two lanes of one warp here), each with its indices.
#undef NDEBUG  // the point of this program is a failing assert
#include <unistd.h>

#include <cassert>
#include <cstdlib>
#include <string>

#include "e2e_check.h"

__global__ void checkPositive(const int* values, int n, int* visited) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(visited, 1);
    assert(values[i] > 0);
  }
}

__global__ void twoLanesFail() { assert(threadIdx.x % 16 != 5); }

// What the failed asserts of `launch` print on stderr (the messages appear by the time the
// context is synchronized).
template <typename Launch>
std::string stderrOf(Launch launch, cudaError_t& sync) {
  char path[] = "/tmp/rocuda_assert_XXXXXX";
  int file = mkstemp(path);
  std::fflush(stderr);
  int saved = dup(2);
  dup2(file, 2);
  launch();
  sync = cudaDeviceSynchronize();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  char buffer[4096];
  lseek(file, 0, SEEK_SET);
  for (ssize_t n; (n = read(file, buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  close(file);
  unlink(path);
  return text;
}

int main() {
  Checker check("device_assert");
  const int n = 256;
  int host[n];
  for (int i = 0; i < n; ++i) host[i] = i == 77 ? -1 : i + 1;
  int *values, *visited;
  CHECK(cudaMalloc(&values, sizeof host));
  CHECK(cudaMalloc(&visited, sizeof(int)));
  CHECK(cudaMemset(visited, 0, sizeof(int)));
  CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));

  // A passing launch first: no error.
  host[77] = 78;
  CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));
  checkPositive<<<n / 64, 64>>>(values, n, visited);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());

  host[77] = -1;
  CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));
  checkPositive<<<n / 64, 64>>>(values, n, visited);
  check.expect(cudaGetLastError() == cudaSuccess, "the launch itself succeeds");
  cudaError_t sync = cudaDeviceSynchronize();
  if (sync != cudaErrorAssert)
    std::fprintf(stderr, "cudaDeviceSynchronize: expected cudaErrorAssert, got %s\n",
                 cudaGetErrorName(sync));
  check.expect(sync == cudaErrorAssert, "synchronize reports the failed assert");
  int dummy = 0;
  cudaError_t after = cudaMemcpy(&dummy, visited, sizeof(int), cudaMemcpyDeviceToHost);
  check.expect(after == cudaErrorAssert, "the assert error is sticky");
  // Nothing new is made in the context, and its state is not read, until it is reset.
  cudaStream_t stream = nullptr;
  check.expect(cudaStreamCreate(&stream) == cudaErrorAssert, "no stream after the assert");
  cudaEvent_t event = nullptr;
  check.expect(cudaEventCreate(&event) == cudaErrorAssert, "no event after the assert");
  size_t freeBytes = 0, totalBytes = 0;
  check.expect(cudaMemGetInfo(&freeBytes, &totalBytes) == cudaErrorAssert,
               "no memory information after the assert");
  size_t stack = 0;
  check.expect(cudaDeviceGetLimit(&stack, cudaLimitStackSize) == cudaErrorAssert,
               "no limits after the assert");

  // After a reset, two lanes of one warp fail: each reports its thread.
  CHECK(cudaDeviceReset());
  cudaError_t lanesSync = cudaSuccess;
  std::string messages = stderrOf([] { twoLanesFail<<<1, 32>>>(); }, lanesSync);
  check.expect(lanesSync == cudaErrorAssert, "the warp's failed asserts fail the launch");
  size_t lines = 0;  // (the driver may log more lines there: count the assert messages)
  for (size_t at = messages.find("Assertion `"); at != std::string::npos;
       at = messages.find("Assertion `", at + 1))
    ++lines;
  check.expect(lines == 2, "one message for each of the two failing threads");
  check.expect(messages.find("thread: [5,0,0] Assertion `threadIdx.x % 16 != 5` failed.") !=
                   std::string::npos,
               "thread 5 reports its assert");
  check.expect(messages.find("thread: [21,0,0] Assertion `threadIdx.x % 16 != 5` failed.") !=
                   std::string::npos,
               "thread 21 reports its assert");
  if (lines != 2) std::fprintf(stderr, "assert messages:\n%s", messages.c_str());
  std::printf("device_assert: assert failure reported as %s\n", cudaGetErrorName(sync));
  return check.finish();
}
