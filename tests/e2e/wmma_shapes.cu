// Every WMMA shape and element type CUDA's <mma.h> offers, one warp per tile: half inputs in
// 32x8x16 and 8x32x16 (float and half accumulators), bf16 in the same shapes, tf32 16x16x8,
// double 8x8x4, 8-bit integers (signed and unsigned, with and without saturation) in all three
// 16-row-class shapes, 4-bit integers 8x8x32 and single bits 8x8x128 (XOR and AND with
// population count). Row- and column-major loads and stores with padded leading dimensions;
// element-wise work on fragments. Inputs are small integers (or multiples of 1/4), so every
// product and sum is exact and results must match the host bit for bit.
// Built as compute_80 PTX (bf16, tf32, double and AND-popc need sm_80).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>
#include <vector>

#include "e2e_check.h"

using namespace nvcuda;

// Leading dimensions: each matrix gets 8 elements of padding per row or column, so a stride
// taken from the tile's size instead of the given one reads the wrong elements.
constexpr int kPad = 8;

// D = A * B + C * 2 for one tile. A is row-major (or column-major with ColumnA), B column-major
// (row-major with RowB), C and D row-major (column-major with ColumnCD), all padded.
template <int M, int N, int K, typename In, typename Acc, typename Storage, bool ColumnA, bool RowB,
          bool ColumnCD>
__global__ void tile(const Storage* a, const Storage* b, const Acc* c, Acc* d) {
#if __CUDA_ARCH__ >= 800
  using LayoutA = std::conditional_t<ColumnA, wmma::col_major, wmma::row_major>;
  using LayoutB = std::conditional_t<RowB, wmma::row_major, wmma::col_major>;
  constexpr wmma::layout_t cd = ColumnCD ? wmma::mem_col_major : wmma::mem_row_major;
  wmma::fragment<wmma::matrix_a, M, N, K, In, LayoutA> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, In, LayoutB> fb;
  wmma::fragment<wmma::accumulator, M, N, K, Acc> fc;
  wmma::load_matrix_sync(fa, a, (ColumnA ? M : K) + kPad);
  wmma::load_matrix_sync(fb, b, (RowB ? N : K) + kPad);
  wmma::load_matrix_sync(fc, c, (ColumnCD ? M : N) + kPad, cd);
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = fc.x[i] * Acc(2);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(d, fc, (ColumnCD ? M : N) + kPad, cd);
#endif
}

// 8-bit integers: D = A * B + C, wrapping or (Saturate) clamped to the int range.
template <int M, int N, int K, typename In, bool Saturate>
__global__ void integerTile(const In* a, const In* b, const int* c, int* d) {
#if __CUDA_ARCH__ >= 800
  wmma::fragment<wmma::matrix_a, M, N, K, In, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, M, N, K, In, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, M, N, K, int> fc;
  wmma::load_matrix_sync(fa, a, K + kPad);
  wmma::load_matrix_sync(fb, b, K + kPad);
  wmma::load_matrix_sync(fc, c, N + kPad, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc, Saturate);
  wmma::store_matrix_sync(d, fc, N + kPad, wmma::mem_row_major);
#endif
}

// 4-bit integers, 8x8x32: A row-major, B column-major, 8 elements per 32-bit word.
template <typename In>
__global__ void nibbleTile(const unsigned* a, const unsigned* b, const int* c, int* d) {
#if __CUDA_ARCH__ >= 800
  wmma::fragment<wmma::matrix_a, 8, 8, 32, In, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 8, 32, In, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 8, 8, 32, int> fc;
  wmma::load_matrix_sync(fa, a, 64);  // leading dimensions in elements: 32 used, 32 padding
  wmma::load_matrix_sync(fb, b, 64);
  wmma::load_matrix_sync(fc, c, 8, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
#endif
}

// Single bits, 8x8x128: D = C + popc(row of A op column of B), op XOR or (And) AND.
template <bool And>
__global__ void bitTile(const unsigned* a, const unsigned* b, const int* c, int* d) {
#if __CUDA_ARCH__ >= 800
  using wmma::experimental::precision::b1;
  wmma::fragment<wmma::matrix_a, 8, 8, 128, b1, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 8, 128, b1, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 8, 8, 128, int> fc;
  wmma::load_matrix_sync(fa, a, 256);  // 128 bits used, 128 padding
  wmma::load_matrix_sync(fb, b, 256);
  wmma::load_matrix_sync(fc, c, 8, wmma::mem_row_major);
  wmma::bmma_sync(fc, fa, fb, fc,
                  And ? wmma::experimental::bmmaBitOpAND : wmma::experimental::bmmaBitOpXOR);
  wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
#endif
}

float quarter(int i) { return static_cast<float>((i * 37 + 11) % 33 - 16) / 4.0f; }
float small(int i) { return static_cast<float>((i * 29 + 5) % 7 - 3); }

// Index of (row, column) in a padded matrix of `rows` x `columns`.
int at(bool columnMajor, int rows, int columns, int row, int column) {
  return columnMajor ? column * (rows + kPad) + row : row * (columns + kPad) + column;
}

// Runs `tile` for one floating-point configuration and checks every element of D; elements
// outside the tile (the padding) must be left untouched.
template <int M, int N, int K, typename In, typename Acc, typename Storage, bool ColumnA, bool RowB,
          bool ColumnCD, typename ToStorage, typename ToAcc, typename FromAcc>
void runFloat(Checker& check, const char* what, float (*value)(int), ToStorage toStorage,
              ToAcc toAcc, FromAcc fromAcc) {
  const int aSize = ColumnA ? K * (M + kPad) : M * (K + kPad);
  const int bSize = RowB ? K * (N + kPad) : N * (K + kPad);
  const int cSize = ColumnCD ? N * (M + kPad) : M * (N + kPad);
  std::vector<Storage> a(aSize), b(bSize);
  std::vector<Acc> c(cSize), d(cSize, toAcc(-99.0f));
  std::vector<double> av(aSize), bv(bSize), cv(cSize);
  for (int i = 0; i < aSize; ++i) a[i] = toStorage(static_cast<float>(av[i] = value(i)));
  for (int i = 0; i < bSize; ++i) b[i] = toStorage(static_cast<float>(bv[i] = value(i + 500)));
  for (int i = 0; i < cSize; ++i) c[i] = toAcc(static_cast<float>(cv[i] = value(i + 900)));
  Storage* da = upload(a);
  Storage* db = upload(b);
  Acc* dc = upload(c);
  Acc* dd = upload(d);
  tile<M, N, K, In, Acc, Storage, ColumnA, RowB, ColumnCD><<<1, 32>>>(da, db, dc, dd);
  CHECK_LAUNCH();
  d = download(dd, cSize);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int where = at(ColumnCD, M, N, i, j);
      double want = cv[where] * 2;
      for (int k = 0; k < K; ++k) want += av[at(ColumnA, M, K, i, k)] * bv[at(!RowB, K, N, k, j)];
      check.eq(what, where, static_cast<float>(want), static_cast<float>(fromAcc(d[where])));
    }
  int padding = ColumnCD ? M : N;  // the first padding element after the first row/column
  check.eq(what, padding, -99.0f, static_cast<float>(fromAcc(d[padding])));
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc),
                  static_cast<void*>(dd)})
    CHECK(cudaFree(p));
}

template <int M, int N, int K, typename In, bool Saturate>
void runInteger(Checker& check, const char* what, int low, int high) {
  const int aSize = M * (K + kPad), bSize = N * (K + kPad), cSize = M * (N + kPad);
  std::vector<In> a(aSize), b(bSize);
  std::vector<int> c(cSize);
  for (int i = 0; i < aSize; ++i) a[i] = static_cast<In>(low + (i * 97 + 13) % (high - low + 1));
  for (int i = 0; i < bSize; ++i) b[i] = static_cast<In>(low + (i * 61 + 7) % (high - low + 1));
  // Accumulators near both ends of the int range, so that sums wrap or saturate.
  for (int i = 0; i < cSize; ++i)
    c[i] = i % 3 == 0 ? INT32_MAX - 1000 * (i % 7) : i % 3 == 1 ? INT32_MIN + 1000 * (i % 5) : i;
  In* da = upload(a);
  In* db = upload(b);
  int* dc = upload(c);
  int* dd = upload(std::vector<int>(cSize, -99));
  integerTile<M, N, K, In, Saturate><<<1, 32>>>(da, db, dc, dd);
  CHECK_LAUNCH();
  std::vector<int> d = download(dd, cSize);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int64_t want = c[i * (N + kPad) + j];
      for (int k = 0; k < K; ++k)
        want += int64_t(a[i * (K + kPad) + k]) * int64_t(b[j * (K + kPad) + k]);
      int expected = Saturate ? static_cast<int>(want > INT32_MAX   ? INT32_MAX
                                                 : want < INT32_MIN ? INT32_MIN
                                                                    : want)
                              : static_cast<int>(static_cast<uint32_t>(want));
      check.eq(what, i * (N + kPad) + j, expected, d[i * (N + kPad) + j]);
    }
  check.eq(what, N, -99, d[N]);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc),
                  static_cast<void*>(dd)})
    CHECK(cudaFree(p));
}

// Element k of a row stored `bits` bits per element, 32 / bits per word, the lowest bits first.
int element(const std::vector<unsigned>& words, int row, int rowWords, int k, int bits,
            bool isSigned) {
  unsigned word = words[row * rowWords + k * bits / 32];
  unsigned v = (word >> (k * bits % 32)) & ((1u << bits) - 1);
  if (isSigned && (v >> (bits - 1))) return static_cast<int>(v) - (1 << bits);
  return static_cast<int>(v);
}

// Sub-byte tiles: 4-bit integers (`bits` 4, signed or not) or single bits (`bits` 1, XOR or AND).
template <typename Launch>
void runSubByte(Checker& check, const char* what, int bits, int k, bool isSigned, bool bitAnd,
                Launch launch) {
  const int rowWords = 2 * k * bits / 32;  // the rows are padded to twice their length
  std::vector<unsigned> a(8 * rowWords), b(8 * rowWords);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0x9e3779b9u * static_cast<unsigned>(i + 1);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = 0x85ebca6bu * static_cast<unsigned>(i + 3) ^ (i << 7);
  std::vector<int> c(64);
  for (int i = 0; i < 64; ++i) c[i] = i * 3 - 90;
  unsigned* da = upload(a);
  unsigned* db = upload(b);
  int* dc = upload(c);
  int* dd = upload(std::vector<int>(64, -99));
  launch(da, db, dc, dd);
  CHECK_LAUNCH();
  std::vector<int> d = download(dd, 64);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      int want = c[i * 8 + j];
      for (int kk = 0; kk < k; ++kk) {
        int x = element(a, i, rowWords, kk, bits, isSigned);
        int y = element(b, j, rowWords, kk, bits, isSigned);  // B column-major: column j
        want += bits == 1 ? (bitAnd ? (x & y) : (x ^ y)) : x * y;
      }
      check.eq(what, i * 8 + j, want, d[i * 8 + j]);
    }
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc),
                  static_cast<void*>(dd)})
    CHECK(cudaFree(p));
}

int main() {
  Checker check("wmma_shapes");
  auto toHalf = [](float x) { return __float2half(x); };
  auto fromHalf = [](half x) { return __half2float(x); };
  auto toBf16 = [](float x) { return __float2bfloat16(x); };
  auto same = [](float x) { return x; };
  auto toDouble = [](float x) { return static_cast<double>(x); };
  auto fromDouble = [](double x) { return static_cast<float>(x); };

  // half inputs: the two non-square shapes, float and half accumulators, every layout mix.
  runFloat<32, 8, 16, half, float, half, false, false, false>(check, "f16 32x8x16", quarter, toHalf,
                                                              same, same);
  runFloat<32, 8, 16, half, half, half, true, true, true>(check, "f16 32x8x16 half acc", small,
                                                          toHalf, toHalf, fromHalf);
  runFloat<8, 32, 16, half, float, half, true, false, true>(check, "f16 8x32x16", quarter, toHalf,
                                                            same, same);
  runFloat<8, 32, 16, half, half, half, false, true, false>(check, "f16 8x32x16 half acc", small,
                                                            toHalf, toHalf, fromHalf);
  runFloat<16, 16, 16, half, float, half, true, true, false>(check, "f16 16x16x16", quarter, toHalf,
                                                             same, same);
  // bf16 inputs.
  runFloat<32, 8, 16, __nv_bfloat16, float, __nv_bfloat16, false, true, false>(
      check, "bf16 32x8x16", quarter, toBf16, same, same);
  runFloat<8, 32, 16, __nv_bfloat16, float, __nv_bfloat16, true, false, true>(
      check, "bf16 8x32x16", quarter, toBf16, same, same);
  // tf32 inputs (the values are exact in tf32) and double.
  runFloat<16, 16, 8, wmma::precision::tf32, float, float, false, false, false>(
      check, "tf32 16x16x8", quarter, same, same, same);
  runFloat<16, 16, 8, wmma::precision::tf32, float, float, true, true, true>(
      check, "tf32 16x16x8 column", quarter, same, same, same);
  runFloat<8, 8, 4, double, double, double, false, false, false>(check, "f64 8x8x4", quarter,
                                                                 toDouble, toDouble, fromDouble);
  runFloat<8, 8, 4, double, double, double, true, true, true>(check, "f64 8x8x4 column", quarter,
                                                              toDouble, toDouble, fromDouble);

  // 8-bit integers over the whole byte range.
  runInteger<16, 16, 16, signed char, false>(check, "s8 16x16x16", -128, 127);
  runInteger<16, 16, 16, signed char, true>(check, "s8 16x16x16 satfinite", -128, 127);
  runInteger<32, 8, 16, unsigned char, false>(check, "u8 32x8x16", 0, 255);
  runInteger<8, 32, 16, unsigned char, true>(check, "u8 8x32x16 satfinite", 0, 255);
  runInteger<8, 32, 16, signed char, false>(check, "s8 8x32x16", -128, 127);

  // 4-bit integers and single bits.
  using wmma::experimental::precision::s4;
  using wmma::experimental::precision::u4;
  runSubByte(check, "s4 8x8x32", 4, 32, true, false, [](unsigned* a, unsigned* b, int* c, int* d) {
    nibbleTile<s4><<<1, 32>>>(a, b, c, d);
  });
  runSubByte(check, "u4 8x8x32", 4, 32, false, false, [](unsigned* a, unsigned* b, int* c, int* d) {
    nibbleTile<u4><<<1, 32>>>(a, b, c, d);
  });
  runSubByte(
      check, "b1 8x8x128 xor", 1, 128, false, false,
      [](unsigned* a, unsigned* b, int* c, int* d) { bitTile<false><<<1, 32>>>(a, b, c, d); });
  runSubByte(
      check, "b1 8x8x128 and", 1, 128, false, true,
      [](unsigned* a, unsigned* b, int* c, int* d) { bitTile<true><<<1, 32>>>(a, b, c, d); });
  return check.finish();
}
