// 128-bit atomics (sm_90): atomicCAS and atomicExch on 16-byte values, which nvcc emits as
// atom.global.cas.b128 / atom.global.exch.b128. Every thread adds its index to a 128-bit counter
// that starts just below 2^64 (so the sum carries into the high half) with a compare-and-swap
// loop, and swaps its own tag into a slot; checked against the host's sum and the tags seen.
// (Not compiled for the AMD targets: AMD GPUs have no atomic wider than 64 bits, and the AMD
// code generator refuses these by name.)
#include <vector>

#include "e2e_check.h"

using U128 = unsigned __int128;

__global__ void count(U128* counter, U128* slot, U128* swapped) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  U128 seen = *counter;
  while (true) {
    U128 old = atomicCAS(counter, seen, seen + static_cast<U128>(i));
    if (old == seen) break;
    seen = old;
  }
  U128 tag = (static_cast<U128>(i) << 64) | static_cast<U128>(~i & 0xffffffffu);
  swapped[i] = atomicExch(slot, tag);
}

int main() {
  Checker check("atomics_128");
  const int threads = 128, blocks = 16, n = threads * blocks;
  const U128 start = (static_cast<U128>(1) << 64) - 1000;
  U128* counter = upload(std::vector<U128>{start});
  const U128 initialTag = 12345;
  U128* slot = upload(std::vector<U128>{initialTag});
  U128* swapped = nullptr;
  CHECK(cudaMalloc(&swapped, n * sizeof(U128)));
  count<<<blocks, threads>>>(counter, slot, swapped);
  CHECK_LAUNCH();
  U128 want = start;
  for (int i = 0; i < n; ++i) want += static_cast<U128>(i);
  U128 got = download(counter, 1)[0];
  check.eq("counter high", 0, static_cast<unsigned long long>(want >> 64),
           static_cast<unsigned long long>(got >> 64));
  check.eq("counter low", 0, static_cast<unsigned long long>(want),
           static_cast<unsigned long long>(got));
  // The exchanges form one chain: the initial tag and every thread's tag but the last one's are
  // each seen exactly once, and the last is still in the slot.
  std::vector<U128> seen = download(swapped, n);
  U128 last = download(slot, 1)[0];
  std::vector<int> times(n, 0);
  int initialSeen = 0;
  for (U128 tag : seen) {
    if (tag == initialTag) {
      ++initialSeen;
      continue;
    }
    int i = static_cast<int>(tag >> 64);
    bool wellFormed = i >= 0 && i < n && static_cast<unsigned>(tag) == (~i & 0xffffffffu);
    check.eq("a swapped-out value is a whole tag", i, true, wellFormed);
    if (wellFormed) ++times[i];
  }
  int lastIndex = static_cast<int>(last >> 64);
  check.eq("the initial tag swapped out once", 0, 1, initialSeen);
  for (int i = 0; i < n; ++i)
    check.eq("each tag swapped out once", i, i == lastIndex ? 0 : 1, times[i]);
  for (void* p :
       {static_cast<void*>(counter), static_cast<void*>(slot), static_cast<void*>(swapped)})
    CHECK(cudaFree(p));
  std::printf("atomics_128: %d threads through a 128-bit compare-and-swap and exchange\n", n);
  return check.finish();
}
