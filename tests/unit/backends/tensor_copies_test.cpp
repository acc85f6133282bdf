// The device library's tensor copies, called as translated kernels call them: maps that are not
// tensor maps, ranks that do not match, the reductions each element type allows and their
// arithmetic (inc/dec wrap-around, 16-bit floats rounded once), and swizzled stores.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backends/cpu/device_library_runtime.h"
#include "support/tensor_map.h"

namespace rocuda::backends::cpu {
namespace {

using support::TensorMapDescriptor;

// CUtensorMapDataType values used below.
constexpr uint8_t kU32 = 2, kS32 = 3, kF16 = 6, kBF16 = 9;

// A 1-D map of `n` elements of `bytes` each, read in boxes of `box`.
TensorMapDescriptor linearMap(void* data, uint8_t dataType, uint8_t bytes, uint8_t floatKind,
                              uint64_t n, uint16_t box) {
  TensorMapDescriptor m{};
  m.magic = support::kTensorMapMagic;
  m.rank = 1;
  m.dataType = dataType;
  m.elementBytes = bytes;
  m.floatKind = floatKind;
  m.globalAddress = reinterpret_cast<uint64_t>(data);
  m.globalDim[0] = n;
  m.globalStride[0] = bytes;
  m.boxDim[0] = box;
  m.elementStride[0] = 1;
  return m;
}

TEST(TensorCopies, RefuseWhatIsNotATensorMapOfTheRank) {
  std::vector<uint32_t> data(16, 7), shared(16);
  TensorMapDescriptor m = linearMap(data.data(), kU32, 4, 0, 16, 16);
  int32_t coords[5] = {0};
  EXPECT_EQ(__rocuda_tensor_load(shared.data(), 0, &m, 1, coords), 64);
  EXPECT_EQ(shared[3], 7u);
  EXPECT_EQ(__rocuda_tensor_load(shared.data(), 0, &m, 2, coords), -1);  // .2d on a 1-D map
  EXPECT_EQ(__rocuda_tensor_load(shared.data(), 0, nullptr, 1, coords), -1);
  TensorMapDescriptor garbage{};
  EXPECT_EQ(__rocuda_tensor_load(shared.data(), 0, &garbage, 1, coords), -1);
  EXPECT_EQ(__rocuda_tensor_store(&garbage, 1, coords, shared.data(), 0, -1), -1);
}

TEST(TensorCopies, ReductionsFollowTheElementType) {
  std::vector<uint32_t> data(8, 5), shared(8, 3);
  int32_t coords[5] = {0};
  TensorMapDescriptor u32 = linearMap(data.data(), kU32, 4, 0, 8, 8);
  EXPECT_EQ(__rocuda_tensor_store(&u32, 1, coords, shared.data(), 0, 3), 0);  // inc
  EXPECT_EQ(data[0], 0u);                                                     // 5 >= 3: wraps to 0
  EXPECT_EQ(__rocuda_tensor_store(&u32, 1, coords, shared.data(), 0, 3), 0);
  EXPECT_EQ(data[0], 1u);
  EXPECT_EQ(__rocuda_tensor_store(&u32, 1, coords, shared.data(), 0, 4), 0);  // dec
  EXPECT_EQ(data[0], 0u);
  EXPECT_EQ(__rocuda_tensor_store(&u32, 1, coords, shared.data(), 0, 4), 0);
  EXPECT_EQ(data[0], 3u);  // 0: becomes the operand
  TensorMapDescriptor s32 = linearMap(data.data(), kS32, 4, 0, 8, 8);
  EXPECT_EQ(__rocuda_tensor_store(&s32, 1, coords, shared.data(), 0, 3), -1);  // no s32 inc
  EXPECT_EQ(__rocuda_tensor_store(&s32, 1, coords, shared.data(), 0, 8), -1);  // no such op
  std::vector<int32_t> negatives(8, -4);
  EXPECT_EQ(__rocuda_tensor_store(&s32, 1, coords, negatives.data(), 0, 1), 0);  // signed min
  EXPECT_EQ(static_cast<int32_t>(data[0]), -4);
}

TEST(TensorCopies, SixteenBitFloatsAddAndCompare) {
  // f16: 1 + 2^-11 is a tie that rounds to even (1); two halves in one 32-bit word stay apart.
  std::vector<uint16_t> data(8, 0x3c00), shared(8, 0x1000);  // 1.0 and 2^-11
  int32_t coords[5] = {0};
  TensorMapDescriptor f16 = linearMap(data.data(), kF16, 2, 1, 8, 8);
  EXPECT_EQ(__rocuda_tensor_store(&f16, 1, coords, shared.data(), 0, 0), 0);
  EXPECT_EQ(data[0], 0x3c00);
  EXPECT_EQ(data[1], 0x3c00);
  shared.assign(8, 0xc000);  // -2: min
  EXPECT_EQ(__rocuda_tensor_store(&f16, 1, coords, shared.data(), 0, 1), 0);
  EXPECT_EQ(data[5], 0xc000);
  // bf16: 1 + 1 = 2.
  std::vector<uint16_t> brain(8, 0x3f80), ones(8, 0x3f80);
  TensorMapDescriptor bf16 = linearMap(brain.data(), kBF16, 2, 2, 8, 8);
  EXPECT_EQ(__rocuda_tensor_store(&bf16, 1, coords, ones.data(), 0, 0), 0);
  EXPECT_EQ(brain[7], 0x4000);
}

TEST(TensorCopies, StoresSkipWhatLiesOutside) {
  std::vector<uint32_t> data(8, 0), shared(8);
  for (uint32_t i = 0; i < 8; ++i) shared[i] = 100 + i;
  TensorMapDescriptor m = linearMap(data.data(), kU32, 4, 0, 8, 8);
  int32_t coords[5] = {-3};
  EXPECT_EQ(__rocuda_tensor_store(&m, 1, coords, shared.data(), 0, -1), 0);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(data[i], i < 5 ? 103 + i : 0u) << i;
}

TEST(TensorCopies, SwizzledStoreReadsTheChunksWhereTheLoadPutThem) {
  // 8 rows of 128 bytes with the 128-byte swizzle: a load then a store is the identity, and the
  // load moved row r's chunk c to chunk c ^ r.
  constexpr int kRow = 32, kRows = 8;
  std::vector<uint32_t> data(kRow * kRows), back(kRow * kRows, 0);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint32_t>(i);
  alignas(1024) static uint32_t shared[kRow * kRows];
  TensorMapDescriptor m{};
  m.magic = support::kTensorMapMagic;
  m.rank = 2;
  m.dataType = kU32;
  m.elementBytes = 4;
  m.swizzle = support::TensorMapSwizzle::Span128;
  m.globalAddress = reinterpret_cast<uint64_t>(data.data());
  m.globalDim[0] = kRow;
  m.globalDim[1] = kRows;
  m.globalStride[0] = 4;
  m.globalStride[1] = kRow * 4;
  m.boxDim[0] = kRow;
  m.boxDim[1] = kRows;
  m.elementStride[0] = m.elementStride[1] = 1;
  int32_t coords[5] = {0, 0};
  ASSERT_EQ(__rocuda_tensor_load(shared, 0, &m, 2, coords), kRow * kRows * 4);
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < 8; ++c) EXPECT_EQ(shared[r * kRow + ((c ^ r) * 4)], data[r * kRow + c * 4]);
  m.globalAddress = reinterpret_cast<uint64_t>(back.data());
  ASSERT_EQ(__rocuda_tensor_store(&m, 2, coords, shared, 0, -1), 0);
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace rocuda::backends::cpu
