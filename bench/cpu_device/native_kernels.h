// The OpenMP versions of the benchmark kernels (native_kernels.cpp, built with
// -O3 -march=native -fopenmp): what a programmer would write for the CPU directly.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rocuda::bench::native {

void emptyRegion();
void vectorAdd(const float* a, const float* b, float* c, std::size_t n);
void saxpy(float a, const float* x, const float* y, float* out, std::size_t n);
// Partial sums of consecutive `chunk`-element pieces of in[0..n), the output the CUDA kernels
// produce (one per block); the caller adds the partials, as it does for the kernels.
void reducePartials(const float* in, float* partial, std::size_t n, std::size_t chunk);
void sgemm(const float* a, const float* b, float* c, int m, int n, int k);
void stencil5(const float* in, float* out, int width, int height);
void histogram256(const unsigned char* data, unsigned* bins, std::size_t n);
void transpose(const float* in, float* out, int width, int height);

}  // namespace rocuda::bench::native
