// Atomic operations across many blocks, on global and shared memory: histograms with atomicAdd
// (int and unsigned), float atomicAdd with exactly representable sums, atomicMax/Min, a double
// add built from an atomicCAS loop, atomicExch, atomicInc wrap-around, atomicSub/And/Or/Xor;
// float atomicAdd's subnormals: flushed to zero on global memory, kept on shared memory.
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "e2e_check.h"

constexpr int kBins = 256;

struct Totals {
  int maxValue;
  int minValue;
  float floatSum;
  unsigned incCounter;
  int subCounter;
  unsigned andBits;
  unsigned orBits;
  unsigned xorBits;
  double doubleSum;
  int exchSlot;
  int sharedMax;  // max over blocks of the per-block shared-memory maximum
};

__device__ double casAddDouble(double* address, double value) {
  unsigned long long* bits = reinterpret_cast<unsigned long long*>(address);
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    old = atomicCAS(bits, assumed, __double_as_longlong(__longlong_as_double(assumed) + value));
  } while (assumed != old);
  return __longlong_as_double(old);
}

__device__ int binOf(int v) { return (v >> 4) & (kBins - 1); }

__global__ void globalAtomics(const int* data, int n, int* hist, Totals* t, int* exchOld,
                              unsigned incLimit) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = data[i];
  atomicAdd(&hist[binOf(v)], 1);
  atomicMax(&t->maxValue, v);
  atomicMin(&t->minValue, v);
  atomicAdd(&t->floatSum, 0.5f);
  atomicInc(&t->incCounter, incLimit);
  atomicSub(&t->subCounter, 3);
  atomicAnd(&t->andBits, ~(1u << (i % 32)) | (i % 64 < 32 ? 0u : 0xFFFFFFFFu));
  atomicOr(&t->orBits, 1u << (i % 32));
  atomicXor(&t->xorBits, static_cast<unsigned>(i));
  casAddDouble(&t->doubleSum, 0.25);
  exchOld[i] = atomicExch(&t->exchSlot, i);
}

__global__ void sharedHistogram(const int* data, int n, unsigned* hist, Totals* t) {
  __shared__ unsigned local[kBins];
  __shared__ int localMax;
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  if (threadIdx.x == 0) localMax = INT_MIN;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&local[binOf(data[i])], 1u);
    atomicMax(&localMax, data[i]);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&hist[b], local[b]);
  if (threadIdx.x == 0) atomicMax(&t->sharedMax, localMax);
}

// Subnormal cases of float atomicAdd: case i adds addend[i] to a location holding start[i].
// Global memory (directly and through a generic pointer) flushes subnormal inputs and results
// to sign-preserving zero; shared memory (also through a generic pointer) keeps them.
constexpr int kSubnormalCases = 4;
__device__ __noinline__ float addThrough(float* generic, float value) {
  return atomicAdd(generic, value);
}
__global__ void subnormalAdds(const uint32_t* start, const uint32_t* addend, float* global,
                              float* genericGlobal, float* shared, float* genericShared,
                              float* oldValues) {
  __shared__ float s[2 * kSubnormalCases];
  int i = threadIdx.x;
  float a = __uint_as_float(addend[i]);
  s[i] = __uint_as_float(start[i]);
  s[kSubnormalCases + i] = __uint_as_float(start[i]);
  oldValues[i] = atomicAdd(&global[i], a);
  addThrough(&genericGlobal[i], a);
  atomicAdd(&s[i], a);
  addThrough(&s[kSubnormalCases + i], a);
  shared[i] = s[i];
  genericShared[i] = s[kSubnormalCases + i];
}

void checkSubnormalAdds(Checker& check) {
  const std::vector<uint32_t> start = {0x00000001u, 0x00400000u, 0x00800000u, 0x00800001u};
  const std::vector<uint32_t> addend = {0x00000001u, 0x00400000u, 0x80000001u, 0x80800000u};
  // Flushed: subnormal inputs are zeros (cases 0-2), a subnormal sum is a zero (case 3).
  const uint32_t flushedSums[kSubnormalCases] = {0, 0, 0x00800000u, 0};
  const uint32_t exactSums[kSubnormalCases] = {0x00000002u, 0x00800000u, 0x007fffffu, 0x00000001u};
  uint32_t *dStart = upload(start), *dAddend = upload(addend);
  float* out;
  CHECK(cudaMalloc(&out, 5 * kSubnormalCases * sizeof(float)));
  CHECK(cudaMemcpy(out, start.data(), kSubnormalCases * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(out + kSubnormalCases, start.data(), kSubnormalCases * sizeof(float),
                   cudaMemcpyHostToDevice));
  subnormalAdds<<<1, kSubnormalCases>>>(dStart, dAddend, out, out + kSubnormalCases,
                                        out + 2 * kSubnormalCases, out + 3 * kSubnormalCases,
                                        out + 4 * kSubnormalCases);
  CHECK_LAUNCH();
  std::vector<uint32_t> got(5 * kSubnormalCases);
  CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kSubnormalCases; ++i) {
    check.eq("global atomicAdd, subnormals flushed", i, flushedSums[i], got[i]);
    check.eq("generic-to-global atomicAdd, subnormals flushed", i, flushedSums[i],
             got[kSubnormalCases + i]);
    check.eq("shared atomicAdd, subnormals kept", i, exactSums[i], got[2 * kSubnormalCases + i]);
    check.eq("generic-to-shared atomicAdd, subnormals kept", i, exactSums[i],
             got[3 * kSubnormalCases + i]);
    check.eq("atomicAdd returns the value it found", i, start[i], got[4 * kSubnormalCases + i]);
  }
  CHECK(cudaFree(dStart));
  CHECK(cudaFree(dAddend));
  CHECK(cudaFree(out));
}

int main() {
  const int n = 1 << 18;
  const unsigned incLimit = 999;
  Checker check("atomics");

  std::vector<int> data(n);
  for (int i = 0; i < n; ++i)
    data[i] = static_cast<int>((static_cast<unsigned>(i) * 2654435761u) >> 12) - 500000;

  int *dData, *dHist, *dExchOld;
  unsigned* dHistU;
  Totals* dT;
  CHECK(cudaMalloc(&dData, n * sizeof(int)));
  CHECK(cudaMalloc(&dHist, kBins * sizeof(int)));
  CHECK(cudaMalloc(&dHistU, kBins * sizeof(unsigned)));
  CHECK(cudaMalloc(&dExchOld, n * sizeof(int)));
  CHECK(cudaMalloc(&dT, sizeof(Totals)));
  CHECK(cudaMemcpy(dData, data.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dHist, 0, kBins * sizeof(int)));
  CHECK(cudaMemset(dHistU, 0, kBins * sizeof(unsigned)));
  Totals init = {INT_MIN, INT_MAX, 0.0f, 0u, 0, 0xFFFFFFFFu, 0u, 0u, 0.0, -1, INT_MIN};
  CHECK(cudaMemcpy(dT, &init, sizeof init, cudaMemcpyHostToDevice));

  globalAtomics<<<(n + 255) / 256, 256>>>(dData, n, dHist, dT, dExchOld, incLimit);
  CHECK_LAUNCH();
  sharedHistogram<<<64, 128>>>(dData, n, dHistU, dT);
  CHECK_LAUNCH();

  std::vector<int> hist(kBins), exchOld(n);
  std::vector<unsigned> histU(kBins);
  Totals t;
  CHECK(cudaMemcpy(hist.data(), dHist, kBins * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(histU.data(), dHistU, kBins * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(exchOld.data(), dExchOld, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&t, dT, sizeof t, cudaMemcpyDeviceToHost));

  // Host reference.
  std::vector<int> refHist(kBins, 0);
  int refMax = INT_MIN, refMin = INT_MAX;
  unsigned refXor = 0;
  for (int i = 0; i < n; ++i) {
    ++refHist[(data[i] >> 4) & (kBins - 1)];
    refMax = data[i] > refMax ? data[i] : refMax;
    refMin = data[i] < refMin ? data[i] : refMin;
    refXor ^= static_cast<unsigned>(i);
  }
  for (int b = 0; b < kBins; ++b) {
    check.eq("global histogram", b, refHist[b], hist[b]);
    check.eq("shared histogram", b, static_cast<unsigned>(refHist[b]), histU[b]);
  }
  check.eq("atomicMax", 0, refMax, t.maxValue);
  check.eq("atomicMin", 0, refMin, t.minValue);
  check.eq("shared atomicMax", 0, refMax, t.sharedMax);
  // Every partial sum is a multiple of 0.5 below 2^24, so float addition is exact in any order.
  check.eq("atomicAdd(float)", 0, 0.5f * n, t.floatSum);
  // atomicInc wraps to 0 after reaching incLimit: n increments leave n mod (limit + 1).
  check.eq("atomicInc", 0, static_cast<unsigned>(n) % (incLimit + 1), t.incCounter);
  check.eq("atomicSub", 0, -3 * n, t.subCounter);
  // Threads with i % 64 < 32 clear bit i % 32; all 32 bits get cleared.
  check.eq("atomicAnd", 0, 0u, t.andBits);
  check.eq("atomicOr", 0, 0xFFFFFFFFu, t.orBits);
  check.eq("atomicXor", 0, refXor, t.xorBits);
  // Multiples of 0.25 below 2^53: exact in any order.
  check.eq("atomicCAS double add", 0, 0.25 * n, t.doubleSum);

  // atomicExch: the returned old values plus the final value are a permutation of {-1, 0..n-1}.
  std::vector<int> seen(n + 1, 0);
  bool inRange = true;
  for (int i = 0; i < n; ++i) {
    int v = exchOld[i];
    if (v < -1 || v >= n) {
      inRange = false;
      continue;
    }
    ++seen[v + 1];
  }
  if (t.exchSlot >= -1 && t.exchSlot < n)
    ++seen[t.exchSlot + 1];
  else
    inRange = false;
  check.expect(inRange, "atomicExch old values are in range");
  for (int v = 0; v <= n; ++v) check.eq("atomicExch value count", v - 1, 1, seen[v]);

  checkSubnormalAdds(check);

  std::printf("atomics: n=%d, %d bins, max=%d min=%d\n", n, kBins, t.maxValue, t.minValue);
  CHECK(cudaFree(dData));
  CHECK(cudaFree(dHist));
  CHECK(cudaFree(dHistU));
  CHECK(cudaFree(dExchOld));
  CHECK(cudaFree(dT));
  return check.finish();
}
