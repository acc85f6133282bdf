// Device printf: every conversion CUDA's printf supports, from one thread, and one line from
// each thread of a few blocks. The program captures its own standard output while the kernels
// run (CUDA delivers device printf by the next synchronisation) and compares it with the same
// formats printed on the host.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "e2e_check.h"

__device__ const char kWord[] = "device";

__global__ void conversions(int i, unsigned u, long long ll, double d, float f, char c) {
  printf("int %d unsigned %u hex %#x octal %o\n", i, u, u, u);
  printf("long long %lld unsigned %llu width [%8d] [%-6d] [%+d]\n", ll,
         static_cast<unsigned long long>(ll), i, i, i);
  printf("double %.3f %e %g float %f char %c percent %%\n", d, d, d, f, c);
  printf("string %s [%10s] null %s\n", kWord, kWord, static_cast<const char*>(nullptr));
  printf("no arguments\n");
}

__global__ void perThread(int* returned) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  returned[t] = printf("block %d thread %d value %.1f\n", blockIdx.x, threadIdx.x, t * 0.5);
}

// Standard output goes to a temporary file between begin() and end().
class CapturedStdout {
 public:
  void begin() {
    std::fflush(stdout);
    file_ = std::tmpfile();
    saved_ = dup(STDOUT_FILENO);
    dup2(fileno(file_), STDOUT_FILENO);
  }
  std::string end() {
    std::fflush(stdout);
    dup2(saved_, STDOUT_FILENO);
    close(saved_);
    std::rewind(file_);
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file_)) > 0) text.append(buffer, n);
    std::fclose(file_);
    return text;
  }

 private:
  FILE* file_ = nullptr;
  int saved_ = -1;
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

template <typename... T>
std::string hostFormat(const char* format, T... values) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, values...);
  return buffer;
}

int main() {
  const int blocks = 3, threads = 4, n = blocks * threads;
  int* returned = nullptr;
  CHECK(cudaMalloc(&returned, n * sizeof(int)));

  CapturedStdout capture;
  capture.begin();
  conversions<<<1, 1>>>(-42, 3000000000u, -1234567890123LL, 3.14159, 0.25f, 'Z');
  cudaError_t launched = cudaGetLastError();
  cudaError_t finished = cudaDeviceSynchronize();
  std::string first = capture.end();
  CHECK(launched);
  CHECK(finished);

  capture.begin();
  perThread<<<blocks, threads>>>(returned);
  launched = cudaGetLastError();
  finished = cudaDeviceSynchronize();
  std::string second = capture.end();
  CHECK(launched);
  CHECK(finished);

  std::vector<std::string> expected = {
      hostFormat("int %d unsigned %u hex %#x octal %o", -42, 3000000000u, 3000000000u,
                 3000000000u),
      hostFormat("long long %lld unsigned %llu width [%8d] [%-6d] [%+d]", -1234567890123LL,
                 static_cast<unsigned long long>(-1234567890123LL), -42, -42, -42),
      hostFormat("double %.3f %e %g float %f char %c percent %%", 3.14159, 3.14159, 3.14159,
                 0.25, 'Z'),
      hostFormat("string %s [%10s] null %s", "device", "device", "(null)"),
      "no arguments",
  };
  int failures = 0;
  if (lines(first) != expected) {
    std::fprintf(stderr, "device_printf: conversions printed:\n%s\nexpected:\n", first.c_str());
    for (const auto& line : expected) std::fprintf(stderr, "%s\n", line.c_str());
    ++failures;
  }

  // Threads print in any order: compare sorted.
  std::vector<std::string> got = lines(second), want;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t)
      want.push_back(hostFormat("block %d thread %d value %.1f", b, t, (b * threads + t) * 0.5));
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  if (got != want) {
    std::fprintf(stderr, "device_printf: per-thread lines differ:\n%s\n", second.c_str());
    ++failures;
  }
  // CUDA's printf returns the number of arguments it read.
  std::vector<int> counts(n);
  CHECK(cudaMemcpy(counts.data(), returned, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int t = 0; t < n; ++t)
    if (counts[t] != 3) {
      std::fprintf(stderr, "device_printf: printf in thread %d returned %d, expected 3\n", t,
                   counts[t]);
      ++failures;
      break;
    }
  CHECK(cudaFree(returned));
  if (failures) return 1;
  std::printf("device_printf: %zu formatted lines and %d per-thread lines match the host\n",
              expected.size(), n);
  return 0;
}
