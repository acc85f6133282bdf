// Tensor maps (cuTensorMapEncodeTiled) and the tensor copies that read them (PTX
// cp.async.bulk.tensor and cp.reduce.async.bulk.tensor, sm_90), as libcu++ emits them: tiles of
// a 2-D tensor loaded at coordinates that reach past every edge (negative ones too: those
// elements read as zero) and stored back incremented (elements outside the tensor are not
// written); the shared-memory layouts of the 128- and 64-byte swizzles; a 3-D box with an
// element stride and a dimension out of range; NaN fill of floats; reductions of many blocks into
// one box (add, on integers and floats); cuTensorMapReplaceAddress; and the argument checks of
// cuTensorMapEncodeTiled. Checked against host references.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <cuda/barrier>
#include <cuda/ptx>
#include <vector>

#include "e2e_check.h"

// A cuda::barrier in __shared__ is initialised by init(), not by its constructor.
#pragma nv_diag_suppress static_var_with_dynamic_init

using BlockBarrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

PFN_cuTensorMapEncodeTiled_v12000 encodeTiled;

CUtensorMap makeMap(CUtensorMapDataType type, int rank, void* base, const cuuint64_t* dims,
                    const cuuint64_t* strides, const cuuint32_t* box,
                    const cuuint32_t* elementStrides,
                    CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE,
                    CUtensorMapFloatOOBfill fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) {
  CUtensorMap map;
  CUresult r =
      encodeTiled(&map, type, rank, base, dims, strides, box, elementStrides,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, fill);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", static_cast<int>(r));
    std::exit(2);
  }
  return map;
}

// Thread 0 starts the copy into `tile` and arrives with its bytes as the expected transactions;
// the others arrive; everyone waits for the phase.
template <class Issue>
__device__ void loadThen(BlockBarrier& barrier, unsigned bytes, Issue issue) {
  BlockBarrier::arrival_token token;
  if (threadIdx.x == 0) {
    issue();
    token = cuda::device::barrier_arrive_tx(barrier, 1, bytes);
  } else {
    token = barrier.arrive();
  }
  barrier.wait(std::move(token));
}

__device__ void initBarrier(BlockBarrier& barrier) {
  if (threadIdx.x == 0) {
    init(&barrier, blockDim.x);
    cde::fence_proxy_async_shared_cta();
  }
  __syncthreads();
}

// --- 2-D tiles past every edge, loaded, recorded, incremented and stored back. ---
constexpr int kWidth = 200, kHeight = 100, kBoxX = 32, kBoxY = 16;
constexpr int kShiftX = -8, kShiftY = -4;  // tiles start left of and above the tensor

__global__ void tileRoundTrip(const __grid_constant__ CUtensorMap map, int* seen) {
  __shared__ alignas(128) int tile[kBoxY][kBoxX];
  __shared__ BlockBarrier barrier;
  initBarrier(barrier);
  int x0 = int(blockIdx.x) * kBoxX + kShiftX, y0 = int(blockIdx.y) * kBoxY + kShiftY;
  loadThen(barrier, sizeof(tile),
           [&] { cde::cp_async_bulk_tensor_2d_global_to_shared(&tile, &map, x0, y0, barrier); });
  int block = blockIdx.y * gridDim.x + blockIdx.x;
  for (int i = threadIdx.x; i < kBoxX * kBoxY; i += blockDim.x) {
    seen[block * kBoxX * kBoxY + i] = tile[i / kBoxX][i % kBoxX];
    tile[i / kBoxX][i % kBoxX] += 1;
  }
  cde::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    cde::cp_async_bulk_tensor_2d_shared_to_global(&map, x0, y0, &tile);
    cde::cp_async_bulk_commit_group();
    cde::cp_async_bulk_wait_group_read<0>();
  }
}

void checkRoundTrip(Checker& check) {
  std::vector<int> host(kWidth * kHeight);
  for (int i = 0; i < kWidth * kHeight; ++i) host[i] = i * 7 + 1;
  int* data = upload(host);
  dim3 grid((kWidth - kShiftX + kBoxX - 1) / kBoxX, (kHeight - kShiftY + kBoxY - 1) / kBoxY);
  int blocks = grid.x * grid.y;
  int* seen = nullptr;
  CHECK(cudaMalloc(&seen, blocks * kBoxX * kBoxY * sizeof(int)));
  cuuint64_t dims[] = {kWidth, kHeight}, strides[] = {kWidth * sizeof(int)};
  cuuint32_t box[] = {kBoxX, kBoxY}, ones[] = {1, 1};
  CUtensorMap map = makeMap(CU_TENSOR_MAP_DATA_TYPE_INT32, 2, data, dims, strides, box, ones);
  tileRoundTrip<<<grid, 128>>>(map, seen);
  CHECK_LAUNCH();
  std::vector<int> tiles = download(seen, blocks * kBoxX * kBoxY);
  std::vector<int> after = download(data, host.size());
  for (int by = 0; by < int(grid.y); ++by)
    for (int bx = 0; bx < int(grid.x); ++bx)
      for (int i = 0; i < kBoxX * kBoxY; ++i) {
        int x = bx * kBoxX + kShiftX + i % kBoxX, y = by * kBoxY + kShiftY + i / kBoxX;
        bool inside = x >= 0 && x < kWidth && y >= 0 && y < kHeight;
        check.eq("2-D tile as loaded", (by * grid.x + bx) * kBoxX * kBoxY + i,
                 inside ? host[y * kWidth + x] : 0, tiles[(by * grid.x + bx) * kBoxX * kBoxY + i]);
      }
  for (int i = 0; i < kWidth * kHeight; ++i)
    check.eq("2-D tensor after the stores", i, host[i] + 1, after[i]);
  CHECK(cudaFree(seen));
  CHECK(cudaFree(data));
}

// --- Swizzled layouts: the box's raw shared memory, as the hardware lays it out. ---
constexpr int kSwizzleRows = 8;

template <class T, int kRowElements>
__global__ void swizzledTile(const __grid_constant__ CUtensorMap map, T* raw) {
  __shared__ alignas(1024) T tile[kSwizzleRows * kRowElements];
  __shared__ BlockBarrier barrier;
  initBarrier(barrier);
  loadThen(barrier, sizeof(tile), [&] {
    cde::cp_async_bulk_tensor_2d_global_to_shared(tile, &map, 0, blockIdx.x * kSwizzleRows,
                                                  barrier);
  });
  for (int i = threadIdx.x; i < kSwizzleRows * kRowElements; i += blockDim.x)
    raw[blockIdx.x * kSwizzleRows * kRowElements + i] = tile[i];
}

// The 16-byte chunk at byte `offset` of a box lands at offset ^ ((offset >> 7) & mask) << 4 of
// a 1024-byte-aligned buffer (mask 7 for 128-byte spans, 3 for 64, 1 for 32).
unsigned swizzled(unsigned offset, unsigned mask) { return offset ^ (((offset >> 7) & mask) << 4); }

template <class T, int kRowElements>
void checkSwizzle(Checker& check, CUtensorMapDataType type, CUtensorMapSwizzle swizzle,
                  unsigned mask, const char* what) {
  constexpr int kRows = 32, kBlocks = kRows / kSwizzleRows;
  std::vector<T> host(kRows * kRowElements);
  for (size_t i = 0; i < host.size(); ++i) host[i] = T(float(i % 2039));
  T* data = upload(host);
  T* raw = nullptr;
  CHECK(cudaMalloc(&raw, host.size() * sizeof(T)));
  cuuint64_t dims[] = {kRowElements, kRows}, strides[] = {kRowElements * sizeof(T)};
  cuuint32_t box[] = {kRowElements, kSwizzleRows}, ones[] = {1, 1};
  CUtensorMap map = makeMap(type, 2, data, dims, strides, box, ones, swizzle);
  swizzledTile<T, kRowElements><<<kBlocks, 64>>>(map, raw);
  CHECK_LAUNCH();
  std::vector<T> got = download(raw, host.size());
  constexpr unsigned kTileBytes = kSwizzleRows * kRowElements * sizeof(T);
  for (int b = 0; b < kBlocks; ++b)
    for (unsigned offset = 0; offset < kTileBytes; offset += sizeof(T)) {
      unsigned element = offset / sizeof(T);  // the box's element at this offset
      unsigned lands = swizzled(offset, mask) / sizeof(T);
      check.eq(what, b * kTileBytes / sizeof(T) + lands,
               float(host[b * kSwizzleRows * kRowElements + element]),
               float(got[b * kSwizzleRows * kRowElements + lands]));
    }
  CHECK(cudaFree(raw));
  CHECK(cudaFree(data));
}

// --- 3-D: every second row (element stride 2), and a depth that runs off the tensor. ---
constexpr int kDepthX = 16, kDepthY = 12, kDepthZ = 4;

__global__ void stridedBox(const __grid_constant__ CUtensorMap map, int* raw) {
  __shared__ alignas(128) int tile[2][3][kDepthX];  // box {16, 6, 2} with y stride 2: 16 x 3 x 2
  __shared__ BlockBarrier barrier;
  initBarrier(barrier);
  loadThen(barrier, sizeof(tile),
           [&] { cde::cp_async_bulk_tensor_3d_global_to_shared(&tile, &map, 0, 7, 3, barrier); });
  for (int i = threadIdx.x; i < 2 * 3 * kDepthX; i += blockDim.x) raw[i] = (&tile[0][0][0])[i];
}

void checkStridedBox(Checker& check) {
  std::vector<int> host(kDepthX * kDepthY * kDepthZ);
  for (size_t i = 0; i < host.size(); ++i) host[i] = int(i) + 100;
  int* data = upload(host);
  int* raw = nullptr;
  CHECK(cudaMalloc(&raw, 2 * 3 * kDepthX * sizeof(int)));
  cuuint64_t dims[] = {kDepthX, kDepthY, kDepthZ};
  cuuint64_t strides[] = {kDepthX * sizeof(int), kDepthX * kDepthY * sizeof(int)};
  cuuint32_t box[] = {kDepthX, 6, 2}, elementStrides[] = {1, 2, 1};
  CUtensorMap map =
      makeMap(CU_TENSOR_MAP_DATA_TYPE_INT32, 3, data, dims, strides, box, elementStrides);
  stridedBox<<<1, 96>>>(map, raw);
  CHECK_LAUNCH();
  std::vector<int> got = download(raw, 2 * 3 * kDepthX);
  for (int z = 0; z < 2; ++z)
    for (int r = 0; r < 3; ++r)
      for (int x = 0; x < kDepthX; ++x) {
        int gy = 7 + 2 * r, gz = 3 + z;
        int expected = gz < kDepthZ ? host[(gz * kDepthY + gy) * kDepthX + x] : 0;
        check.eq("3-D box with element stride 2", (z * 3 + r) * kDepthX + x, expected,
                 got[(z * 3 + r) * kDepthX + x]);
      }
  CHECK(cudaFree(raw));
  CHECK(cudaFree(data));
}

// --- NaN fill of floats outside the tensor. ---
__global__ void nanFilledTile(const __grid_constant__ CUtensorMap map, float* raw) {
  __shared__ alignas(128) float tile[4][16];
  __shared__ BlockBarrier barrier;
  initBarrier(barrier);
  loadThen(barrier, sizeof(tile),
           [&] { cde::cp_async_bulk_tensor_2d_global_to_shared(&tile, &map, 12, 8, barrier); });
  for (int i = threadIdx.x; i < 64; i += blockDim.x) raw[i] = tile[i / 16][i % 16];
}

void checkNanFill(Checker& check) {
  constexpr int kX = 20, kY = 10;
  std::vector<float> host(kX * kY);
  for (int i = 0; i < kX * kY; ++i) host[i] = float(i) * 0.5f;
  float* data = upload(host);
  float* raw = nullptr;
  CHECK(cudaMalloc(&raw, 64 * sizeof(float)));
  cuuint64_t dims[] = {kX, kY}, strides[] = {kX * sizeof(float)};
  cuuint32_t box[] = {16, 4}, ones[] = {1, 1};
  CUtensorMap map =
      makeMap(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, data, dims, strides, box, ones,
              CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
  nanFilledTile<<<1, 64>>>(map, raw);
  CHECK_LAUNCH();
  std::vector<float> got = download(raw, 64);
  for (int i = 0; i < 64; ++i) {
    int x = 12 + i % 16, y = 8 + i / 16;
    if (x < kX && y < kY)
      check.eq("NaN-filled tile, inside", i, host[y * kX + x], got[i]);
    else
      check.eq("NaN-filled tile, outside is NaN", i, 1, int(std::isnan(got[i])));
  }
  CHECK(cudaFree(raw));
  CHECK(cudaFree(data));
}

// --- Reductions: every block adds its tile into the same box at once. ---
constexpr int kReduceBlocks = 24, kReduceX = 16, kReduceY = 8;

template <class T>
__global__ void reduceIntoBox(const __grid_constant__ CUtensorMap map) {
  __shared__ alignas(128) T tile[kReduceY][kReduceX];
  for (int i = threadIdx.x; i < kReduceX * kReduceY; i += blockDim.x)
    tile[i / kReduceX][i % kReduceX] = T(i % 5 + blockIdx.x);
  cde::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    const int32_t coords[2] = {4, 2};
    cuda::ptx::cp_reduce_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared,
                                           cuda::ptx::op_add, &map, coords, &tile[0][0]);
    cuda::ptx::cp_async_bulk_commit_group();
    cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
  }
}

template <class T>
void checkReduction(Checker& check, CUtensorMapDataType type, const char* what) {
  constexpr int kX = 24, kY = 12;  // the box at (4, 2) reaches x 19 and y 9: all inside
  std::vector<T> host(kX * kY);
  for (int i = 0; i < kX * kY; ++i) host[i] = T(i % 7);
  T* data = upload(host);
  cuuint64_t dims[] = {kX, kY}, strides[] = {kX * sizeof(T)};
  cuuint32_t box[] = {kReduceX, kReduceY}, ones[] = {1, 1};
  CUtensorMap map = makeMap(type, 2, data, dims, strides, box, ones);
  reduceIntoBox<T><<<kReduceBlocks, 64>>>(map);
  CHECK_LAUNCH();
  std::vector<T> got = download(data, host.size());
  for (int y = 0; y < kY; ++y)
    for (int x = 0; x < kX; ++x) {
      T expected = host[y * kX + x];
      if (x >= 4 && x < 4 + kReduceX && y >= 2 && y < 2 + kReduceY) {
        int i = (y - 2) * kReduceX + (x - 4);
        for (int b = 0; b < kReduceBlocks; ++b) expected += T(i % 5 + b);
      }
      check.eq(what, y * kX + x, expected, got[y * kX + x]);
    }
  CHECK(cudaFree(data));
}

// --- cuTensorMapReplaceAddress: the same map over another buffer. ---
__global__ void firstRow(const __grid_constant__ CUtensorMap map, int* out) {
  __shared__ alignas(128) int tile[16];
  __shared__ BlockBarrier barrier;
  initBarrier(barrier);
  loadThen(barrier, sizeof(tile),
           [&] { cde::cp_async_bulk_tensor_1d_global_to_shared(tile, &map, 16, barrier); });
  if (threadIdx.x < 16) out[threadIdx.x] = tile[threadIdx.x];
}

void checkReplaceAddress(Checker& check) {
  std::vector<int> a(64), b(64);
  for (int i = 0; i < 64; ++i) a[i] = i, b[i] = 1000 + i;
  int* da = upload(a);
  int* db = upload(b);
  int* out = nullptr;
  CHECK(cudaMalloc(&out, 16 * sizeof(int)));
  cuuint64_t dims[] = {64};
  cuuint32_t box[] = {16}, ones[] = {1};
  CUtensorMap map = makeMap(CU_TENSOR_MAP_DATA_TYPE_INT32, 1, da, dims, nullptr, box, ones);
  auto replace = driverEntry<PFN_cuTensorMapReplaceAddress_v12000>("cuTensorMapReplaceAddress");
  check.eq("cuTensorMapReplaceAddress", 0, int(CUDA_SUCCESS), int(replace(&map, db)));
  firstRow<<<1, 32>>>(map, out);
  CHECK_LAUNCH();
  std::vector<int> got = download(out, 16);
  for (int i = 0; i < 16; ++i) check.eq("1-D box of the replaced address", i, b[16 + i], got[i]);
  CHECK(cudaFree(out));
  CHECK(cudaFree(db));
  CHECK(cudaFree(da));
}

// --- The argument checks NVIDIA documents for cuTensorMapEncodeTiled. ---
void checkEncodeErrors(Checker& check) {
  void* data = nullptr;
  CHECK(cudaMalloc(&data, 1 << 16));
  alignas(64) CUtensorMap map;
  cuuint64_t dims[] = {64, 64}, strides[] = {256}, badStrides[] = {200};
  cuuint32_t box[] = {32, 8}, wideBox[] = {64, 8}, zeroBox[] = {0, 8}, ones[] = {1, 1};
  cuuint32_t badElementStrides[] = {1, 9};
  auto encode = [&](CUtensorMapDataType type, cuuint32_t rank, void* base, const cuuint64_t* st,
                    const cuuint32_t* bx, const cuuint32_t* es, CUtensorMapSwizzle swizzle,
                    CUtensorMapFloatOOBfill fill) {
    return int(encodeTiled(&map, type, rank, base, dims, st, bx, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                           swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE, fill));
  };
  const auto i32 = CU_TENSOR_MAP_DATA_TYPE_INT32;
  const auto none = CU_TENSOR_MAP_SWIZZLE_NONE;
  const auto zero = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  const int invalid = CUDA_ERROR_INVALID_VALUE;
  check.eq("a valid map", 0, int(CUDA_SUCCESS),
           encode(i32, 2, data, strides, box, ones, none, zero));
  check.eq("rank 0", 0, invalid, encode(i32, 0, data, strides, box, ones, none, zero));
  check.eq("rank 6", 0, invalid, encode(i32, 6, data, strides, box, ones, none, zero));
  check.eq("global address not 16-byte aligned", 0, invalid,
           encode(i32, 2, static_cast<char*>(data) + 4, strides, box, ones, none, zero));
  check.eq("stride not a multiple of 16", 0, invalid,
           encode(i32, 2, data, badStrides, box, ones, none, zero));
  check.eq("box dimension 0", 0, invalid, encode(i32, 2, data, strides, zeroBox, ones, none, zero));
  check.eq("element stride 9", 0, invalid,
           encode(i32, 2, data, strides, box, badElementStrides, none, zero));
  check.eq("inner box wider than the 128-byte swizzle", 0, invalid,
           encode(i32, 2, data, strides, wideBox, ones, CU_TENSOR_MAP_SWIZZLE_128B, zero));
  check.eq("NaN fill of integers", 0, invalid,
           encode(i32, 2, data, strides, box, ones, none,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA));
  check.eq(
      "a NULL tensor map", 0, invalid,
      int(encodeTiled(nullptr, i32, 2, data, dims, strides, box, ones,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, none, CU_TENSOR_MAP_L2_PROMOTION_NONE, zero)));
  CHECK(cudaFree(data));
}

int main() {
  Checker check("tensor_maps");
  encodeTiled = driverEntry<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  checkEncodeErrors(check);
  checkRoundTrip(check);
  checkSwizzle<float, 32>(check, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_SWIZZLE_128B, 7,
                          "128-byte swizzle (f32)");
  checkSwizzle<__half, 32>(check, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, CU_TENSOR_MAP_SWIZZLE_64B, 3,
                           "64-byte swizzle (f16)");
  checkStridedBox(check);
  checkNanFill(check);
  checkReduction<int>(check, CU_TENSOR_MAP_DATA_TYPE_INT32, "reduction (add, s32)");
  checkReduction<float>(check, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, "reduction (add, f32)");
  checkReplaceAddress(check);
  std::printf("tensor_maps: tiled tensor maps through loads, stores, swizzles and reductions\n");
  return check.finish();
}
