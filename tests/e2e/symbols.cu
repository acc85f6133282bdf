// Module-scope variables: a __constant__ table written with cudaMemcpyToSymbol (also at an
// offset), __device__ variables read with cudaMemcpyFromSymbol, a statically initialised
// __device__ array, a __device__ table written through cudaGetSymbolAddress, and pointers to
// both inside packed structs (nvcc writes those a byte at a time with PTX's mask operator),
// and the initial values again after cudaDeviceReset.
#include <vector>

#include "e2e_check.h"

constexpr int kCoeffs = 16;
constexpr int kTable = 256;

__constant__ int coeffs[kCoeffs];
__device__ int bias;
__device__ int table[kTable];
__device__ int initialised[4] = {11, -22, 33, -44};
__device__ unsigned long long lastWriter;  // written by the kernel, read back by the host

struct __attribute__((packed)) PackedRef {
  char tag;
  const int* target;  // at byte 1: `.u8 packedRefs[18] = {97, 0xFF(generic(initialised)+4), ...}`
};
__device__ PackedRef packedRefs[2] = {{'a', initialised + 1}, {'b', table}};

__global__ void followPacked(int* out, unsigned long long* addresses) {
  for (int k = 0; k < 2; ++k) {
    out[k] = packedRefs[k].tag + *packedRefs[k].target;
    addresses[k] = reinterpret_cast<unsigned long long>(packedRefs[k].target);
  }
}

__global__ void apply(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = in[i] * coeffs[i % kCoeffs] + table[i % kTable] + bias + initialised[i % 4];
  if (i == n - 1) lastWriter = 0x123456789abcdefULL + static_cast<unsigned long long>(i);
}

int main() {
  const int n = 100003;
  Checker check("symbols");

  // Coefficients: first half in one copy, second half through the offset form.
  int hostCoeffs[kCoeffs];
  for (int k = 0; k < kCoeffs; ++k) hostCoeffs[k] = k * 3 - 20;
  CHECK(cudaMemcpyToSymbol(coeffs, hostCoeffs, (kCoeffs / 2) * sizeof(int)));
  CHECK(cudaMemcpyToSymbol(coeffs, hostCoeffs + kCoeffs / 2, (kCoeffs / 2) * sizeof(int),
                           (kCoeffs / 2) * sizeof(int), cudaMemcpyHostToDevice));
  const int hostBias = 1000;
  CHECK(cudaMemcpyToSymbol(bias, &hostBias, sizeof hostBias));

  // The table goes through its device address with a plain cudaMemcpy.
  int* tableAddr = nullptr;
  size_t tableSize = 0;
  CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&tableAddr), table));
  CHECK(cudaGetSymbolSize(&tableSize, table));
  check.eq("cudaGetSymbolSize(table)", 0, kTable * sizeof(int), tableSize);
  check.expect(tableAddr != nullptr, "cudaGetSymbolAddress(table) is non-null");
  std::vector<int> hostTable(kTable);
  for (int k = 0; k < kTable; ++k) hostTable[k] = (k * 37) % 101;
  CHECK(cudaMemcpy(tableAddr, hostTable.data(), kTable * sizeof(int), cudaMemcpyHostToDevice));

  // Read back the constant and the static initialiser before any kernel ran.
  int readCoeffs[kCoeffs];
  int readInit[4];
  CHECK(cudaMemcpyFromSymbol(readCoeffs, coeffs, sizeof readCoeffs));
  CHECK(cudaMemcpyFromSymbol(readInit, initialised, sizeof readInit));
  for (int k = 0; k < kCoeffs; ++k) check.eq("coeffs readback", k, hostCoeffs[k], readCoeffs[k]);
  const int expectedInit[4] = {11, -22, 33, -44};
  for (int k = 0; k < 4; ++k) check.eq("initialised", k, expectedInit[k], readInit[k]);
  int readOneInit = 0;  // offset form of cudaMemcpyFromSymbol
  CHECK(cudaMemcpyFromSymbol(&readOneInit, initialised, sizeof(int), 2 * sizeof(int)));
  check.eq("initialised[2] via offset", 2, 33, readOneInit);

  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i % 1000 - 500;
  int *dIn, *dOut;
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK(cudaMalloc(&dOut, n * sizeof(int)));
  CHECK(cudaMemcpy(dIn, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  apply<<<(n + 127) / 128, 128>>>(dIn, dOut, n);
  CHECK_LAUNCH();

  std::vector<int> out(n);
  CHECK(cudaMemcpy(out.data(), dOut, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    int expected =
        in[i] * hostCoeffs[i % kCoeffs] + hostTable[i % kTable] + hostBias + expectedInit[i % 4];
    check.eq("out", i, expected, out[i]);
  }
  unsigned long long writer = 0;
  CHECK(cudaMemcpyFromSymbol(&writer, lastWriter, sizeof writer));
  check.eq("lastWriter", 0, 0x123456789abcdefULL + static_cast<unsigned long long>(n - 1), writer);

  // Symbol data is module-global: a second copy changes what the next launch sees.
  const int newBias = -7;
  CHECK(cudaMemcpyToSymbol(bias, &newBias, sizeof newBias));
  apply<<<(n + 127) / 128, 128>>>(dIn, dOut, n);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(out.data(), dOut, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i += 97) {
    int expected =
        in[i] * hostCoeffs[i % kCoeffs] + hostTable[i % kTable] + newBias + expectedInit[i % 4];
    check.eq("out after bias update", i, expected, out[i]);
  }
  // Packed structs with pointers: the addresses are the symbols' device addresses.
  int* initialisedAddr = nullptr;
  CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&initialisedAddr), initialised));
  unsigned long long* dAddresses;
  CHECK(cudaMalloc(&dAddresses, 2 * sizeof(unsigned long long)));
  followPacked<<<1, 1>>>(dOut, dAddresses);
  CHECK_LAUNCH();
  int followed[2];
  unsigned long long addresses[2];
  CHECK(cudaMemcpy(followed, dOut, sizeof followed, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(addresses, dAddresses, sizeof addresses, cudaMemcpyDeviceToHost));
  check.eq("packedRefs[0] tag + *target", 0, 'a' + expectedInit[1], followed[0]);
  check.eq("packedRefs[1] tag + *target", 1, 'b' + hostTable[0], followed[1]);
  check.eq("packedRefs[0].target", 0, reinterpret_cast<unsigned long long>(initialisedAddr + 1),
           addresses[0]);
  check.eq("packedRefs[1].target", 1, reinterpret_cast<unsigned long long>(tableAddr),
           addresses[1]);
  CHECK(cudaFree(dAddresses));
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));

  // cudaDeviceReset: the next use loads the program into a new context, where the variables
  // hold their initial values again (and the __constant__ table its zeros).
  int changed[4] = {1, 2, 3, 4};
  CHECK(cudaMemcpyToSymbol(initialised, changed, sizeof changed));
  CHECK(cudaMemcpyToSymbol(coeffs, changed, sizeof changed));
  CHECK(cudaDeviceReset());
  int again[4] = {}, constants[4] = {7, 7, 7, 7};
  CHECK(cudaMemcpyFromSymbol(again, initialised, sizeof again));
  CHECK(cudaMemcpyFromSymbol(constants, coeffs, sizeof constants));
  for (int i = 0; i < 4; ++i) {
    check.eq("initialised after reset", i, expectedInit[i], again[i]);
    check.eq("coeffs after reset", i, 0, constants[i]);
  }

  std::printf("symbols: n=%d\n", n);
  return check.finish();
}
