// Tensor-core code as CUDA programs write it: the WMMA API (16x16x16 tiles: half inputs with
// float and half accumulators, bf16 inputs, row- and column-major loads and stores, element-wise
// work on accumulator fragments) and inline-PTX mma.sync (m16n8k16 f16, m16n8k8 tf32) with
// fragments loaded per the PTX ISA's layout. Inputs are small multiples of 1/4 (integers for
// half accumulators), so every product and sum is exact and results must match bit for bit.
// Built as compute_80 PTX (bf16 and tf32 need sm_80).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <vector>

#include "e2e_check.h"

using namespace nvcuda;

constexpr int kM = 64, kN = 64, kK = 64;

// C = alpha * (A * B) with A row-major (M x K), B column-major (K x N), C row-major; each warp
// computes one 16x16 tile, looping over K.
__global__ void wmmaGemm(const half* a, const half* b, float* c, float alpha) {
#if __CUDA_ARCH__ >= 800
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int tileRow = warp / (kN / 16), tileCol = warp % (kN / 16);
  if (tileRow >= kM / 16) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < kK; k += 16) {
    wmma::load_matrix_sync(fa, a + tileRow * 16 * kK + k, kK);
    wmma::load_matrix_sync(fb, b + tileCol * 16 * kK + k, kK);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] *= alpha;
  wmma::store_matrix_sync(c + tileRow * 16 * kN + tileCol * 16, acc, kN, wmma::mem_row_major);
#endif
}

// D = A * B + C in half precision, C and D column-major with a leading dimension of 32.
__global__ void wmmaHalf(const half* a, const half* b, const half* c, half* d) {
#if __CUDA_ARCH__ >= 800
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, half> acc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::load_matrix_sync(acc, c, 32, wmma::mem_col_major);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 32, wmma::mem_col_major);
#endif
}

// D = A * B with bf16 inputs (A column-major, B row-major), stored column-major.
__global__ void wmmaBf16(const __nv_bfloat16* a, const __nv_bfloat16* b, float* d) {
#if __CUDA_ARCH__ >= 800
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 1.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_col_major);
#endif
}

__device__ unsigned pack(const half* m, int i0, int i1) {
  return static_cast<unsigned>(__half_as_ushort(m[i0])) |
         static_cast<unsigned>(__half_as_ushort(m[i1])) << 16;
}

// One m16n8k16 mma: A 16x16 row-major, B 16x8 column-major (b[n * 16 + k]), C/D 16x8 row-major.
__global__ void mmaF16(const half* a, const half* b, const float* c, float* d) {
#if __CUDA_ARCH__ >= 800
  int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  unsigned ra[4], rb[2];
  for (int r = 0; r < 4; ++r) {
    int row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2);
    ra[r] = pack(a, row * 16 + col, row * 16 + col + 1);
  }
  for (int r = 0; r < 2; ++r) {
    int k = 2 * t + 8 * r;
    rb[r] = pack(b, g * 16 + k, g * 16 + k + 1);
  }
  float rc[4], rd[4];
  for (int i = 0; i < 4; ++i) rc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=f"(rd[0]), "=f"(rd[1]), "=f"(rd[2]), "=f"(rd[3])
      : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "f"(rc[0]),
        "f"(rc[1]), "f"(rc[2]), "f"(rc[3]));
  for (int i = 0; i < 4; ++i) d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = rd[i];
#endif
}

// Volta's mma.m8n8k4 (f16 in, f32 accumulators): four independent 8x8x4 products, one per quad
// pair q (lanes 4q..4q+3 and 16+4q..16+4q+3). A[q] 8x4 row-major, B[q] 4x8 column-major
// (b[q * 32 + n * 4 + k]), C[q] and D[q] 8x8 row-major; t = lane % 4, h = lane / 16.
__global__ void mmaQuadPairs(const half* a, const half* b, const float* c, float* d) {
  int lane = threadIdx.x % 32, q = (lane / 4) % 4, t = lane % 4, h = lane / 16;
  const half* qa = a + q * 32;
  const half* qb = b + q * 32;
  int row = t + 4 * h, column = t + 4 * h;  // A's row and B's column this lane holds
  unsigned ra[2] = {pack(qa, row * 4, row * 4 + 1), pack(qa, row * 4 + 2, row * 4 + 3)};
  unsigned rb[2] = {pack(qb, column * 4, column * 4 + 1), pack(qb, column * 4 + 2, column * 4 + 3)};
  float rc[8], rd[8];
  auto at = [&](int i) {
    return ((lane & 1) + (i & 2) + 4 * h) * 8 + (i & 4) + (lane & 2) + (i & 1);
  };
  for (int i = 0; i < 8; ++i) rc[i] = c[q * 64 + at(i)];
  asm volatile(
      "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11}, {%12,%13,%14,%15,%16,%17,%18,%19};"
      : "=f"(rd[0]), "=f"(rd[1]), "=f"(rd[2]), "=f"(rd[3]), "=f"(rd[4]), "=f"(rd[5]), "=f"(rd[6]),
        "=f"(rd[7])
      : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rb[1]), "f"(rc[0]), "f"(rc[1]), "f"(rc[2]),
        "f"(rc[3]), "f"(rc[4]), "f"(rc[5]), "f"(rc[6]), "f"(rc[7]));
  for (int i = 0; i < 8; ++i) d[q * 64 + at(i)] = rd[i];
}

__device__ unsigned toTf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// One m16n8k8 tf32 mma: A 16x8 row-major, B 8x8 (b[n * 8 + k]), C/D 16x8 row-major.
__global__ void mmaTf32(const float* a, const float* b, const float* c, float* d) {
#if __CUDA_ARCH__ >= 800
  int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  unsigned ra[4], rb[2];
  for (int i = 0; i < 4; ++i) ra[i] = toTf32(a[(g + 8 * (i % 2)) * 8 + t + 4 * (i / 2)]);
  for (int i = 0; i < 2; ++i) rb[i] = toTf32(b[g * 8 + t + 4 * i]);
  float rc[4], rd[4];
  for (int i = 0; i < 4; ++i) rc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};"
      : "=f"(rd[0]), "=f"(rd[1]), "=f"(rd[2]), "=f"(rd[3])
      : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "f"(rc[0]),
        "f"(rc[1]), "f"(rc[2]), "f"(rc[3]));
  for (int i = 0; i < 4; ++i) d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = rd[i];
#endif
}

// movmatrix (sm_75): each warp's 8x8 matrix of 16-bit values, in the ldmatrix fragment layout
// (lane L holds row L/4, columns 2(L%4) and 2(L%4)+1), transposed in registers.
__global__ void transpose8x8(const unsigned* in, unsigned* out) {
  unsigned word = in[blockIdx.x * blockDim.x + threadIdx.x], moved = 0;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(moved) : "r"(word));
  out[blockIdx.x * blockDim.x + threadIdx.x] = moved;
}

// Deterministic small values: multiples of 1/4 in [-4, 4], or integers in [-3, 3].
float quarter(int i) { return static_cast<float>((i * 37 + 11) % 33 - 16) / 4.0f; }
float small(int i) { return static_cast<float>((i * 29 + 5) % 7 - 3); }

int main() {
  Checker check("tensor_cores");

  {  // WMMA GEMM, 16 tiles over 4 blocks of 4 warps, alpha applied to the fragments.
    std::vector<half> a(kM * kK), b(kK * kN);
    std::vector<float> af(kM * kK), bf(kK * kN);
    for (int i = 0; i < kM * kK; ++i) a[i] = __float2half(af[i] = quarter(i));
    for (int i = 0; i < kK * kN; ++i) b[i] = __float2half(bf[i] = quarter(i + 1000));
    half* da = upload(a);
    half* db = upload(b);
    float* dc = nullptr;
    CHECK(cudaMalloc(&dc, kM * kN * sizeof(float)));
    wmmaGemm<<<4, 128>>>(da, db, dc, 0.5f);
    CHECK_LAUNCH();
    std::vector<float> c = download(dc, kM * kN);
    for (int i = 0; i < kM; ++i)
      for (int j = 0; j < kN; ++j) {
        double want = 0;
        for (int k = 0; k < kK; ++k) want += double(af[i * kK + k]) * bf[j * kK + k];  // B column-major
        check.eq("wmma gemm", i * kN + j, static_cast<float>(want * 0.5), c[i * kN + j]);
      }
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
  }

  {  // WMMA with a half accumulator, column-major C/D with a leading dimension of 32.
    std::vector<half> a(256), b(256), c(32 * 16);
    std::vector<float> af(256), bf(256), cf(32 * 16, 0.0f);
    for (int i = 0; i < 256; ++i) a[i] = __float2half(af[i] = small(i));
    for (int i = 0; i < 256; ++i) b[i] = __float2half(bf[i] = small(i + 7));
    for (int i = 0; i < 32 * 16; ++i) c[i] = __float2half(cf[i] = small(i + 3) * 8);
    half* da = upload(a);
    half* db = upload(b);
    half* dc = upload(c);
    half* dd = upload(std::vector<half>(32 * 16, __float2half(-99.0f)));
    wmmaHalf<<<1, 32>>>(da, db, dc, dd);
    CHECK_LAUNCH();
    std::vector<half> d = download(dd, 32 * 16);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        // A column-major (a[k * 16 + i]), B row-major (b[k * 16 + j]), C/D column-major, ld 32.
        double want = cf[j * 32 + i];
        for (int k = 0; k < 16; ++k) want += double(af[k * 16 + i]) * bf[k * 16 + j];
        check.eq("wmma half", j * 32 + i, static_cast<float>(want), __half2float(d[j * 32 + i]));
      }
    // Rows 16..31 of each column were never part of the tile: untouched.
    for (int j = 0; j < 16; ++j)
      check.eq("wmma half padding", j * 32 + 20, -99.0f, __half2float(d[j * 32 + 20]));
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dd));
  }

  {  // WMMA with bf16 inputs, the accumulator filled with 1.
    std::vector<__nv_bfloat16> a(256), b(256);
    std::vector<float> af(256), bf(256);
    for (int i = 0; i < 256; ++i) a[i] = __float2bfloat16(af[i] = quarter(i + 5));
    for (int i = 0; i < 256; ++i) b[i] = __float2bfloat16(bf[i] = quarter(i + 77));
    __nv_bfloat16* da = upload(a);
    __nv_bfloat16* db = upload(b);
    float* dd = nullptr;
    CHECK(cudaMalloc(&dd, 256 * sizeof(float)));
    wmmaBf16<<<1, 32>>>(da, db, dd);
    CHECK_LAUNCH();
    std::vector<float> d = download(dd, 256);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        double want = 1.0;
        for (int k = 0; k < 16; ++k) want += double(af[k * 16 + i]) * bf[k * 16 + j];
        check.eq("wmma bf16", j * 16 + i, static_cast<float>(want), d[j * 16 + i]);
      }
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dd));
  }

  {  // Inline PTX: mma.sync m16n8k16 f16 and m16n8k8 tf32.
    std::vector<half> a(256), b(128);
    std::vector<float> af(256), bf(128), c(128), ta(128), tb(64);
    for (int i = 0; i < 256; ++i) a[i] = __float2half(af[i] = quarter(i + 9));
    for (int i = 0; i < 128; ++i) b[i] = __float2half(bf[i] = quarter(i + 19));
    for (int i = 0; i < 128; ++i) c[i] = quarter(i + 29);
    for (int i = 0; i < 128; ++i) ta[i] = quarter(i + 39);
    for (int i = 0; i < 64; ++i) tb[i] = quarter(i + 49);
    half* da = upload(a);
    half* db = upload(b);
    float* dc = upload(c);
    float* dta = upload(ta);
    float* dtb = upload(tb);
    float* dd = nullptr;
    float* dt = nullptr;
    CHECK(cudaMalloc(&dd, 128 * sizeof(float)));
    CHECK(cudaMalloc(&dt, 128 * sizeof(float)));
    mmaF16<<<1, 32>>>(da, db, dc, dd);
    CHECK_LAUNCH();
    mmaTf32<<<1, 32>>>(dta, dtb, dc, dt);
    CHECK_LAUNCH();
    std::vector<float> d = download(dd, 128), tdown = download(dt, 128);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        double want = c[i * 8 + j], wantT = c[i * 8 + j];
        for (int k = 0; k < 16; ++k) want += double(af[i * 16 + k]) * bf[j * 16 + k];
        for (int k = 0; k < 8; ++k) wantT += double(ta[i * 8 + k]) * tb[j * 8 + k];
        check.eq("mma f16", i * 8 + j, static_cast<float>(want), d[i * 8 + j]);
        check.eq("mma tf32", i * 8 + j, static_cast<float>(wantT), tdown[i * 8 + j]);
      }
    for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc),
                    static_cast<void*>(dta), static_cast<void*>(dtb), static_cast<void*>(dd),
                    static_cast<void*>(dt)})
      CHECK(cudaFree(p));
  }
  {  // mma.m8n8k4 f16: four products per warp, one per quad pair.
    std::vector<half> a(128), b(128);
    std::vector<float> af(128), bf(128), c(256);
    for (int i = 0; i < 128; ++i) a[i] = __float2half(af[i] = quarter(i + 59));
    for (int i = 0; i < 128; ++i) b[i] = __float2half(bf[i] = quarter(i + 69));
    for (int i = 0; i < 256; ++i) c[i] = quarter(i + 79);
    half* da = upload(a);
    half* db = upload(b);
    float* dc = upload(c);
    float* dd = nullptr;
    CHECK(cudaMalloc(&dd, 256 * sizeof(float)));
    mmaQuadPairs<<<1, 32>>>(da, db, dc, dd);
    CHECK_LAUNCH();
    std::vector<float> d = download(dd, 256);
    for (int q = 0; q < 4; ++q)
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) {
          double want = c[q * 64 + i * 8 + j];
          for (int k = 0; k < 4; ++k)
            want += double(af[q * 32 + i * 4 + k]) * bf[q * 32 + j * 4 + k];
          check.eq("mma m8n8k4", q * 64 + i * 8 + j, static_cast<float>(want),
                   d[q * 64 + i * 8 + j]);
        }
    for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc),
                    static_cast<void*>(dd)})
      CHECK(cudaFree(p));
  }
  {  // movmatrix: two blocks of two warps, each warp its own matrix M_w[r][c].
    const int warps = 4;
    auto element = [](int w, int r, int c) { return unsigned(0x1000 * (w + 1) + 16 * r + c); };
    std::vector<unsigned> in(32 * warps);
    for (int w = 0; w < warps; ++w)
      for (int lane = 0; lane < 32; ++lane) {
        int r = lane / 4, c = 2 * (lane % 4);
        in[w * 32 + lane] = element(w, r, c) | element(w, r, c + 1) << 16;
      }
    unsigned* din = upload(in);
    unsigned* dout = nullptr;
    CHECK(cudaMalloc(&dout, in.size() * sizeof(unsigned)));
    transpose8x8<<<2, 64>>>(din, dout);
    CHECK_LAUNCH();
    std::vector<unsigned> out = download(dout, in.size());
    for (int w = 0; w < warps; ++w)
      for (int lane = 0; lane < 32; ++lane) {
        int r = lane / 4, c = 2 * (lane % 4);  // lane holds row r, columns c, c+1 of M^T
        unsigned want = element(w, c, r) | element(w, c + 1, r) << 16;
        check.eq("movmatrix", w * 32 + lane, want, out[w * 32 + lane]);
      }
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
  }
  return check.finish();
}
