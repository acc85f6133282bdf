// 128-bit integer arithmetic in device code (__int128): nvcc builds division and remainder from
// 32-bit carry chains that mix sub.cc/subc.cc with addc, so this checks the carry flag's meaning
// across them, against the host's own __int128 arithmetic.
#include <cstdint>
#include <vector>

#include "e2e_check.h"

using u128 = unsigned __int128;
using s128 = __int128;

struct Pair {
  uint64_t hi, lo;
};

__host__ __device__ u128 join(Pair p) { return (static_cast<u128>(p.hi) << 64) | p.lo; }
__host__ __device__ Pair split(u128 v) {
  return {static_cast<uint64_t>(v >> 64), static_cast<uint64_t>(v)};
}

// out[6 i ..]: unsigned quotient and remainder, signed quotient and remainder, product, and the
// quotient by a constant divisor.
__global__ void arithmetic(const Pair* a, const Pair* b, Pair* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  u128 x = join(a[i]), y = join(b[i]);
  out[6 * i + 0] = split(x / y);
  out[6 * i + 1] = split(x % y);
  out[6 * i + 2] = split(static_cast<u128>(static_cast<s128>(x) / static_cast<s128>(y)));
  out[6 * i + 3] = split(static_cast<u128>(static_cast<s128>(x) % static_cast<s128>(y)));
  out[6 * i + 4] = split(x * y);
  out[6 * i + 5] = split(x / 1000000007u);
}

int main() {
  Checker check("wide_integers");
  std::vector<Pair> a, b;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  const Pair edges[] = {{0, 1},         {0, 3},          {1, 0},         {0, ~0ull},
                        {~0ull, ~0ull}, {1ull << 63, 0}, {0x40, 0x1234}, {0, 1000000007}};
  for (const Pair& x : edges)
    for (const Pair& y : edges) {
      a.push_back(x);
      b.push_back(y);
    }
  for (int i = 0; i < 2048; ++i) {
    a.push_back({next() >> (next() % 64), next()});
    // Divisors of every width: some below 2^64, some above.
    uint64_t hi = i % 3 == 0 ? 0 : next() >> (next() % 64);
    b.push_back({hi, next() | 1});
  }
  int n = static_cast<int>(a.size());
  Pair *dA = upload(a), *dB = upload(b), *dOut;
  CHECK(cudaMalloc(&dOut, 6 * n * sizeof(Pair)));
  arithmetic<<<(n + 127) / 128, 128>>>(dA, dB, dOut, n);
  CHECK_LAUNCH();
  std::vector<Pair> got = download(dOut, 6 * static_cast<size_t>(n));
  const char* names[6] = {"unsigned /", "unsigned %", "signed /", "signed %", "*", "/ 1000000007"};
  for (int i = 0; i < n; ++i) {
    u128 x = join(a[i]), y = join(b[i]);
    bool signedOverflow =
        static_cast<s128>(x) == static_cast<s128>(u128{1} << 127) && static_cast<s128>(y) == -1;
    u128 want[6] = {
        x / y,
        x % y,
        signedOverflow ? 0 : static_cast<u128>(static_cast<s128>(x) / static_cast<s128>(y)),
        signedOverflow ? 0 : static_cast<u128>(static_cast<s128>(x) % static_cast<s128>(y)),
        x * y,
        x / 1000000007u};
    for (int k = 0; k < 6; ++k) {
      if (signedOverflow && (k == 2 || k == 3)) continue;  // undefined in C++
      u128 g = join(got[6 * i + k]);
      check.eq(names[k], i, static_cast<uint64_t>(want[k] >> 64), static_cast<uint64_t>(g >> 64));
      check.eq(names[k], i, static_cast<uint64_t>(want[k]), static_cast<uint64_t>(g));
    }
  }
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dOut));
  return check.finish();
}
