// What separable_compilation_device.cu defines for separable_compilation.cu (-rdc=true).
#pragma once

constexpr int kTableSize = 8;
constexpr int kOperations = 3;
using Operation = int (*)(int);

extern __device__ int deviceOffset;
extern __device__ int launchCount;
extern __constant__ int kTable[kTableSize];
extern __device__ Operation operations[kOperations];
__device__ int scaleAndOffset(int x);
