// The OpenCL C side of the CPU-device benchmark: the kernels of kernels.cu, one for one, for
// PoCL. Work-group = CUDA block, group id = blockIdx, local id = threadIdx.
// PoCL 3.1's CPU device has no sub-groups (OpenCL C 1.2), so reduce_shuffle is the local-memory
// equivalent: the warp-level steps become a tree in local memory with barriers.

#define REDUCE_BLOCK 256
#define TILE 16
#define TRANSPOSE_TILE 32
#define TRANSPOSE_ROWS 8
#define BINS 256

__kernel void empty_kernel(void) {}

__kernel void vector_add(__global const float* a, __global const float* b, __global float* c,
                         int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}

__kernel void saxpy(float a, __global const float* x, __global const float* y,
                    __global float* out, int n) {
  int i = get_global_id(0);
  if (i < n) out[i] = a * x[i] + y[i];
}

__kernel void saxpy_grid_stride(float a, __global const float* x, __global const float* y,
                                __global float* out, int n) {
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) out[i] = a * x[i] + y[i];
}

__kernel void reduce_shared(__global const float* in, __global float* partial, int n) {
  __local float sums[REDUCE_BLOCK];
  uint tid = get_local_id(0);
  uint size = get_local_size(0);
  uint i = get_group_id(0) * (2 * size) + tid;
  float v = 0.0f;
  if (i < n) v = in[i];
  if (i + size < n) v += in[i + size];
  sums[tid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = size / 2; s > 0; s >>= 1) {
    if (tid < s) sums[tid] += sums[tid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (tid == 0) partial[get_group_id(0)] = sums[0];
}

// Warp sums (32 lanes) as local-memory trees, then the first "warp" sums the warp results.
__kernel void reduce_shuffle(__global const float* in, __global float* partial, int n) {
  __local float lanes[REDUCE_BLOCK];
  __local float warpSums[REDUCE_BLOCK / 32];
  uint tid = get_local_id(0);
  uint size = get_local_size(0);
  uint i = get_group_id(0) * (2 * size) + tid;
  uint lane = tid & 31;
  float v = 0.0f;
  if (i < n) v = in[i];
  if (i + size < n) v += in[i + size];
  lanes[tid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint offset = 16; offset > 0; offset >>= 1) {
    if (lane < offset) lanes[tid] += lanes[tid + offset];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lane == 0) warpSums[tid / 32] = lanes[tid];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (tid == 0) {
    float total = 0.0f;
    for (uint w = 0; w < size / 32; ++w) total += warpSums[w];
    partial[get_group_id(0)] = total;
  }
}

__kernel void sgemm_tiled(__global const float* a, __global const float* b, __global float* c,
                          int m, int n, int k) {
  __local float tileA[TILE][TILE];
  __local float tileB[TILE][TILE];
  int tx = get_local_id(0), ty = get_local_id(1);
  int row = get_group_id(1) * TILE + ty;
  int col = get_group_id(0) * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < k; t += TILE) {
    tileA[ty][tx] = a[row * k + t + tx];
    tileB[ty][tx] = b[(t + ty) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < TILE; ++j) acc += tileA[ty][j] * tileB[j][tx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < m) c[row * n + col] = acc;
}

__kernel void stencil5(__global const float* in, __global float* out, int width, int height) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  if (x >= width || y >= height) return;
  int i = y * width + x;
  if (x == 0 || y == 0 || x == width - 1 || y == height - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - width] + in[i + width]);
}

__kernel void histogram256(__global const uchar* data, __global uint* bins, int n) {
  __local uint local_bins[BINS];
  int lid = get_local_id(0);
  int size = get_local_size(0);
  for (int b = lid; b < BINS; b += size) local_bins[b] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  int stride = get_global_size(0);
  for (int i = get_global_id(0); i < n; i += stride) atomic_inc(&local_bins[data[i]]);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int b = lid; b < BINS; b += size) atomic_add(&bins[b], local_bins[b]);
}

__kernel void transpose_tiled(__global const float* in, __global float* out, int width,
                              int height) {
  __local float tile[TRANSPOSE_TILE][TRANSPOSE_TILE + 1];
  int tx = get_local_id(0), ty = get_local_id(1);
  int x = get_group_id(0) * TRANSPOSE_TILE + tx;
  int y = get_group_id(1) * TRANSPOSE_TILE + ty;
  for (int r = 0; r < TRANSPOSE_TILE; r += TRANSPOSE_ROWS)
    if (x < width && y + r < height) tile[ty + r][tx] = in[(y + r) * width + x];
  barrier(CLK_LOCAL_MEM_FENCE);
  x = get_group_id(1) * TRANSPOSE_TILE + tx;
  y = get_group_id(0) * TRANSPOSE_TILE + ty;
  for (int r = 0; r < TRANSPOSE_TILE; r += TRANSPOSE_ROWS)
    if (x < height && y + r < width) out[(y + r) * height + x] = tile[tx][ty + r];
}
