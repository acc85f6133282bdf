// Tensor copies in tile mode (tensor_copies.h): the box is walked row by row (a row is the box's
// extent along dimension 0, contiguous in global memory) and moved in 16-byte chunks, the unit
// the swizzle permutes; a chunk wholly inside the tensor is one copy, one at an edge goes element
// by element.
#include "device_library/tensor_copies.h"

#include "device_library/float_bits.h"
#include "support/tensor_map.h"

namespace rocuda::device_library {
namespace {

using support::TensorMapDescriptor;

constexpr uint32_t kChunkBytes = 16;

const TensorMapDescriptor* mapOf(const void* map, int32_t rank) {
  const auto* m = static_cast<const TensorMapDescriptor*>(map);
  if (m == nullptr || m->magic != support::kTensorMapMagic || rank < 1 ||
      rank > static_cast<int32_t>(support::kTensorMapMaxRank) || m->rank != rank ||
      m->elementBytes == 0 || kChunkBytes % m->elementBytes != 0)
    return nullptr;
  return m;
}

// Where the chunk at byte `offset` of the box lands in shared memory.
uint32_t swizzledOffset(const TensorMapDescriptor& m, uint32_t sharedAddress, uint32_t offset) {
  uint32_t mask = (1u << static_cast<uint32_t>(m.swizzle)) - 1;  // 0, 1, 3 or 7 bits
  uint32_t address = sharedAddress + offset;
  return (address ^ (((address >> 7) & mask) << 4)) - sharedAddress;
}

// One row of the box: where it starts in global memory, whether dimensions 1.. are inside the
// tensor, and its first coordinate along dimension 0.
struct Row {
  uint8_t* global;
  bool inside;
  int64_t x;
};

Row rowOf(const TensorMapDescriptor& m, const int32_t* coords, uint32_t row) {
  Row r{nullptr, true, coords[0]};
  uint64_t offset = 0;
  for (unsigned i = 1; i < m.rank; ++i) {
    uint32_t n = support::tensorBoxElements(m, i);
    int64_t c =
        static_cast<int64_t>(coords[i]) + static_cast<int64_t>(row % n) * m.elementStride[i];
    row /= n;
    if (c < 0 || static_cast<uint64_t>(c) >= m.globalDim[i]) r.inside = false;
    offset += static_cast<uint64_t>(c) * m.globalStride[i];
  }
  r.global = reinterpret_cast<uint8_t*>(m.globalAddress + offset);
  return r;
}

bool insideAlongX(const TensorMapDescriptor& m, int64_t x) {
  return x >= 0 && static_cast<uint64_t>(x) < m.globalDim[0];
}

void copyBytes(uint8_t* to, const uint8_t* from, uint32_t bytes) {
  for (uint32_t i = 0; i < bytes; ++i) to[i] = from[i];
}

// The value of an element outside the tensor: zero, or a NaN of the element's type.
void fillElement(uint8_t* to, const TensorMapDescriptor& m) {
  for (uint32_t i = 0; i < m.elementBytes; ++i) to[i] = 0;
  if (!m.fillWithNaN || m.floatKind == 0) return;
  to[m.elementBytes - 1] = 0x7f;  // little endian: the sign and exponent's top bits
  to[m.elementBytes - 2] = 0xff;  // the rest of the exponent and the quiet bit
}

// --- Reductions (cp.reduce.async.bulk.tensor): relaxed atomics on each element. ---

enum Reduction : int32_t { kAdd = 0, kMin, kMax, kInc, kDec, kAnd, kOr, kXor };
enum FloatKind : uint8_t { kInteger = 0, kF16, kBF16, kF32, kF64 };
// CUtensorMapDataType values.
enum DataType : uint8_t { kU8 = 0, kU16, kU32, kS32, kU64, kS64 };

// The element types PTX allows each reduction: add u32 s32 u64 f32 f16 bf16; min and max u32 s32
// u64 s64 f16 bf16; inc and dec u32; and, or and xor 32- and 64-bit integers.
bool reductionAllowed(const TensorMapDescriptor& m, int32_t op) {
  bool u32 = m.dataType == kU32, s32 = m.dataType == kS32;
  bool u64 = m.dataType == kU64, s64 = m.dataType == kS64;
  bool half = m.floatKind == kF16 || m.floatKind == kBF16;
  switch (op) {
    case kAdd:
      return u32 || s32 || u64 || half || m.floatKind == kF32;
    case kMin:
    case kMax:
      return u32 || s32 || u64 || s64 || half;
    case kInc:
    case kDec:
      return u32;
    case kAnd:
    case kOr:
    case kXor:
      return u32 || s32 || u64 || s64;
    default:
      return false;
  }
}

template <class T>
T combine(T old, T value, int32_t op) {
  switch (op) {
    case kAdd:
      return old + value;
    case kMin:
      return value < old ? value : old;
    case kMax:
      return old < value ? value : old;
    case kInc:
      return old >= value ? T(0) : T(old + 1);
    case kDec:
      return (old == T(0) || old > value) ? value : T(old - 1);
    case kAnd:
      return old & value;
    case kOr:
      return old | value;
    default:
      return old ^ value;
  }
}

float combineFloat(float old, float value, int32_t op) {
  if (op == kAdd) return old + value;
  if (__builtin_isnan(old) || __builtin_isnan(value))  // min/max: a NaN operand gives the other
    return __builtin_isnan(old) ? value : old;
  return op == kMin ? (value < old ? value : old) : (old < value ? value : old);
}

template <class T>
void reduceAtomically(T* target, T value, int32_t op) {
  T old = __atomic_load_n(target, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(target, &old, combine(old, value, op), /*weak=*/true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

// f32 through its bits; f16 and bf16 inside their aligned 32-bit word. f32 arithmetic rounds a
// sum of two 16-bit floats exactly once (24 bits >= 2 x 11 + 2).
void reduceFloatAtomically(uint8_t* element, const uint8_t* source, const TensorMapDescriptor& m,
                           int32_t op) {
  if (m.floatKind == kF32) {
    auto* word = reinterpret_cast<uint32_t*>(element);
    float value;
    __builtin_memcpy(&value, source, 4);
    uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED), next;
    do {
      float f;
      __builtin_memcpy(&f, &old, 4);
      f = combineFloat(f, value, op);
      __builtin_memcpy(&next, &f, 4);
    } while (
        !__atomic_compare_exchange_n(word, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return;
  }
  uintptr_t address = reinterpret_cast<uintptr_t>(element);
  auto* word = reinterpret_cast<uint32_t*>(address & ~uintptr_t(3));
  uint32_t shift = static_cast<uint32_t>(address & 2) * 8;
  uint16_t bits;
  __builtin_memcpy(&bits, source, 2);
  bool brain = m.floatKind == kBF16;
  float value = brain ? bfloat16ToFloat(bits) : halfToFloat(bits);
  uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED), next;
  do {
    auto current = static_cast<uint16_t>(old >> shift);
    float f = brain ? bfloat16ToFloat(current) : halfToFloat(current);
    f = combineFloat(f, value, op);
    uint16_t result = brain ? floatToBfloat16(f) : floatToHalf(f);
    next = (old & ~(0xffffu << shift)) | (static_cast<uint32_t>(result) << shift);
  } while (
      !__atomic_compare_exchange_n(word, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

void reduceElement(uint8_t* element, const uint8_t* source, const TensorMapDescriptor& m,
                   int32_t op) {
  if (m.floatKind != kInteger) return reduceFloatAtomically(element, source, m, op);
  if (m.elementBytes == 8) {
    uint64_t value;
    __builtin_memcpy(&value, source, 8);
    if (m.dataType == kS64)
      reduceAtomically(reinterpret_cast<int64_t*>(element), static_cast<int64_t>(value), op);
    else
      reduceAtomically(reinterpret_cast<uint64_t*>(element), value, op);
    return;
  }
  uint32_t value;
  __builtin_memcpy(&value, source, 4);
  if (m.dataType == kS32)
    reduceAtomically(reinterpret_cast<int32_t*>(element), static_cast<int32_t>(value), op);
  else
    reduceAtomically(reinterpret_cast<uint32_t*>(element), value, op);
}

// Walks the box's chunks: visit(chunkInShared, chunkInGlobal, elementInside...) per chunk.
template <class Visit>
void forEachChunk(const TensorMapDescriptor& m, const int32_t* coords, uint32_t sharedAddress,
                  Visit&& visit) {
  uint32_t rowBytes = support::tensorBoxElements(m, 0) * m.elementBytes;
  uint32_t rows = 1;
  for (unsigned i = 1; i < m.rank; ++i) rows *= support::tensorBoxElements(m, i);
  uint32_t perChunk = kChunkBytes / m.elementBytes;
  for (uint32_t row = 0; row < rows; ++row) {
    Row r = rowOf(m, coords, row);
    for (uint32_t chunk = 0; chunk < rowBytes; chunk += kChunkBytes) {
      int64_t x = r.x + chunk / m.elementBytes;
      bool whole = r.inside && insideAlongX(m, x) && insideAlongX(m, x + perChunk - 1);
      uint32_t shared = swizzledOffset(m, sharedAddress, row * rowBytes + chunk);
      visit(shared, r.global + x * static_cast<int64_t>(m.elementBytes), whole, r.inside, x,
            perChunk);
    }
  }
}

}  // namespace
}  // namespace rocuda::device_library

using namespace rocuda::device_library;

extern "C" {

int32_t __rocuda_tensor_load(void* shared, uint32_t sharedAddress, const void* map, int32_t rank,
                             const int32_t* coords) {
  const TensorMapDescriptor* m = mapOf(map, rank);
  if (m == nullptr) return -1;
  auto* base = static_cast<uint8_t*>(shared);
  forEachChunk(*m, coords, sharedAddress,
               [&](uint32_t offset, const uint8_t* global, bool whole, bool rowInside, int64_t x,
                   uint32_t perChunk) {
                 uint8_t* to = base + offset;
                 if (whole) return static_cast<void>(__builtin_memcpy(to, global, kChunkBytes));
                 for (uint32_t e = 0; e < perChunk; ++e, to += m->elementBytes)
                   if (rowInside && insideAlongX(*m, x + e))
                     copyBytes(to, global + e * m->elementBytes, m->elementBytes);
                   else
                     fillElement(to, *m);
               });
  return static_cast<int32_t>(rocuda::support::tensorBoxBytes(*m));
}

int32_t __rocuda_tensor_store(const void* map, int32_t rank, const int32_t* coords,
                              const void* shared, uint32_t sharedAddress, int32_t reduction) {
  const TensorMapDescriptor* m = mapOf(map, rank);
  if (m == nullptr || (reduction >= 0 && !reductionAllowed(*m, reduction))) return -1;
  const auto* base = static_cast<const uint8_t*>(shared);
  forEachChunk(*m, coords, sharedAddress,
               [&](uint32_t offset, uint8_t* global, bool whole, bool rowInside, int64_t x,
                   uint32_t perChunk) {
                 const uint8_t* from = base + offset;
                 if (whole && reduction < 0)
                   return static_cast<void>(__builtin_memcpy(global, from, kChunkBytes));
                 for (uint32_t e = 0; e < perChunk; ++e, from += m->elementBytes) {
                   if (!rowInside || !insideAlongX(*m, x + e)) continue;
                   uint8_t* element = global + e * m->elementBytes;
                   if (reduction < 0)
                     copyBytes(element, from, m->elementBytes);
                   else
                     reduceElement(element, from, *m, reduction);
                 }
               });
  return 0;
}

}  // extern "C"
