// The CUDA side of the CPU-device benchmark: ordinary CUDA C++ kernels, compiled by nvcc to PTX
// at build time (-ptx -arch=compute_75) and loaded through the driver API by cuda_runner.cpp.
// kernels.cl holds the same kernels in OpenCL C for PoCL; native_kernels.cpp the OpenMP versions.
// Names are extern "C" so the module exports them unmangled.

constexpr int kReduceBlock = 256;   // threads per block of both reductions
constexpr int kTile = 16;           // SGEMM tile edge (16 x 16 threads)
constexpr int kTransposeTile = 32;  // transpose tile edge (32 x 8 threads, 4 rows each)
constexpr int kTransposeRows = 8;
constexpr int kBins = 256;

extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Out of place (out = a*x + y) so that repeated runs see the same input.
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

// The same as a grid-stride loop (the grid sized to the machine, each thread looping over the
// data with the grid's stride), as much CUDA code is written.
extern "C" __global__ void saxpy_grid_stride(float a, const float* x, const float* y, float* out,
                                             int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = a * x[i] + y[i];
}

// Each block sums 2 * blockDim.x elements: a tree in shared memory, one barrier per level.
extern "C" __global__ void reduce_shared(const float* in, float* partial, int n) {
  __shared__ float sums[kReduceBlock];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * (2 * blockDim.x) + tid;
  float v = 0.0f;
  if (i < n) v = in[i];
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  sums[tid] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sums[tid] += sums[tid + s];
    __syncthreads();
  }
  if (tid == 0) partial[blockIdx.x] = sums[0];
}

__device__ float warpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Same work per block as reduce_shared, reduced with warp shuffles: one barrier per block.
extern "C" __global__ void reduce_shuffle(const float* in, float* partial, int n) {
  __shared__ float warpSums[kReduceBlock / 32];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * (2 * blockDim.x) + tid;
  float v = 0.0f;
  if (i < n) v = in[i];
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  v = warpSum(v);
  if ((tid & 31) == 0) warpSums[tid / 32] = v;
  __syncthreads();
  if (tid < 32) {
    v = tid < blockDim.x / 32 ? warpSums[tid] : 0.0f;
    v = warpSum(v);
    if (tid == 0) partial[blockIdx.x] = v;
  }
}

// C (m x n) = A (m x k) * B (k x n), row-major; all sizes multiples of kTile.
extern "C" __global__ void sgemm_tiled(const float* a, const float* b, float* c, int m, int n,
                                       int k) {
  __shared__ float tileA[kTile][kTile];
  __shared__ float tileB[kTile][kTile];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * kTile + ty;
  int col = blockIdx.x * kTile + tx;
  float acc = 0.0f;
  for (int t = 0; t < k; t += kTile) {
    tileA[ty][tx] = a[row * k + t + tx];
    tileB[ty][tx] = b[(t + ty) * n + col];
    __syncthreads();
    for (int j = 0; j < kTile; ++j) acc += tileA[ty][j] * tileB[j][tx];
    __syncthreads();
  }
  if (row < m) c[row * n + col] = acc;
}

// 5-point stencil on a width x height grid; the border is copied.
extern "C" __global__ void stencil5(const float* in, float* out, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int i = y * width + x;
  if (x == 0 || y == 0 || x == width - 1 || y == height - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - width] + in[i + width]);
}

// 256-bin histogram of bytes: per-block bins in shared memory, merged into `bins` with global
// atomics. Grid-stride loop, so the grid size is a tuning choice, not the problem size.
extern "C" __global__ void histogram256(const unsigned char* data, unsigned* bins, int n) {
  __shared__ unsigned local[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

// out (width x height) = transpose of in (height x width), through a padded shared tile.
extern "C" __global__ void transpose_tiled(const float* in, float* out, int width, int height) {
  __shared__ float tile[kTransposeTile][kTransposeTile + 1];
  int x = blockIdx.x * kTransposeTile + threadIdx.x;
  int y = blockIdx.y * kTransposeTile + threadIdx.y;
  for (int r = 0; r < kTransposeTile; r += kTransposeRows)
    if (x < width && y + r < height) tile[threadIdx.y + r][threadIdx.x] = in[(y + r) * width + x];
  __syncthreads();
  x = blockIdx.y * kTransposeTile + threadIdx.x;
  y = blockIdx.x * kTransposeTile + threadIdx.y;
  for (int r = 0; r < kTransposeTile; r += kTransposeRows)
    if (x < height && y + r < width) out[(y + r) * height + x] = tile[threadIdx.x][threadIdx.y + r];
}
