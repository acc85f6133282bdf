// The device code separable_compilation.cu uses from another translation unit (-rdc=true).
#include "separable_compilation.h"

__device__ int deviceOffset = 0;
__device__ int launchCount = 0;
__constant__ int kTable[kTableSize];

__device__ int scaleAndOffset(int x) { return 3 * x + deviceOffset; }

__device__ int increment(int x) { return x + 1; }
__device__ int twice(int x) { return x * 2; }
__device__ int negate(int x) { return -x; }
__device__ Operation operations[kOperations] = {increment, twice, negate};
