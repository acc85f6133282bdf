// Shared helpers for the end-to-end CUDA programs: every CUDA call is checked (exit 2 on an
// unexpected error) and result comparisons print the first few mismatches (exit 1 on failure).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t checkErr_ = (call);                                                  \
    if (checkErr_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(checkErr_), static_cast<int>(checkErr_));      \
      std::exit(2);                                                                  \
    }                                                                                \
  } while (0)

// Checks a kernel launch: the launch itself, then (optionally) its completion.
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

// A driver API function the runtime hands out (cudaGetDriverEntryPointByVersion, CUDA 12's
// ABI), as type F; exits (2) when the driver has none of that name.
template <class F>
F driverEntry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status;
  CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || fn == nullptr) {
    std::fprintf(stderr, "no driver entry point %s\n", name);
    std::exit(2);
  }
  return reinterpret_cast<F>(fn);
}

// A device copy of `host` (cudaMalloc'd; the caller frees it), and a host copy of `n` elements.
template <typename T>
T* upload(const std::vector<T>& host) {
  T* device = nullptr;
  CHECK(cudaMalloc(&device, host.size() * sizeof(T)));
  CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return device;
}

template <typename T>
std::vector<T> download(const T* device, size_t n) {
  std::vector<T> host(n);
  CHECK(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

// Collects mismatches; prints the first kMaxPrinted of them.
class Checker {
 public:
  static constexpr int kMaxPrinted = 8;

  explicit Checker(const char* name) : name_(name) {}

  template <typename T>
  void eq(const char* what, long long index, T expected, T got) {
    if (expected == got) return;
    if (failures_++ >= kMaxPrinted) return;
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      std::fprintf(stderr, "MISMATCH %s[%lld]: expected %lld, got %lld\n", what, index,
                   static_cast<long long>(expected), static_cast<long long>(got));
    } else if constexpr (std::is_integral_v<T>) {
      std::fprintf(stderr, "MISMATCH %s[%lld]: expected %llu (0x%llx), got %llu (0x%llx)\n", what,
                   index, static_cast<unsigned long long>(expected),
                   static_cast<unsigned long long>(expected), static_cast<unsigned long long>(got),
                   static_cast<unsigned long long>(got));
    } else {
      std::fprintf(stderr, "MISMATCH %s[%lld]: expected %.9g, got %.9g\n", what, index,
                   static_cast<double>(expected), static_cast<double>(got));
    }
  }

  // |expected - got| <= absTol + relTol * |expected|; NaN never matches.
  void near(const char* what, long long index, double expected, double got, double absTol,
            double relTol = 0.0) {
    if (std::fabs(expected - got) <= absTol + relTol * std::fabs(expected)) return;
    if (failures_++ >= kMaxPrinted) return;
    std::fprintf(stderr, "MISMATCH %s[%lld]: expected %.9g, got %.9g (tolerance %.3g + %.3g rel)\n",
                 what, index, expected, got, absTol, relTol);
  }

  // A condition that must hold; `detail` says what was observed.
  void expect(bool ok, const char* what) {
    if (ok) return;
    if (failures_++ >= kMaxPrinted) return;
    std::fprintf(stderr, "CHECK FAILED: %s\n", what);
  }

  int failures() const { return failures_; }

  // Prints the verdict; returns the process exit status.
  int finish() const {
    if (failures_ != 0) {
      std::fprintf(stderr, "%s: %d mismatch(es)\nFAILED\n", name_, failures_);
      return 1;
    }
    std::printf("%s: PASSED\n", name_);
    return 0;
  }

 private:
  const char* name_;
  int failures_ = 0;
};
