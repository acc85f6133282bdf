// The device library's tensor copies: cp.async.bulk.tensor and cp.reduce.async.bulk.tensor in
// tile mode, between a box of a tensor in global memory and shared memory, as described by a
// tensor map (support/tensor_map.h, the bytes cuTensorMapEncodeTiled wrote). Part of the device
// library (texture_sampler.h says what that is): the CPU device links these functions, AMD GPU
// modules link their bitcode.
//
// The box is laid out densely in shared memory, dimension 0 fastest; a swizzled map moves each
// 16-byte chunk as the hardware's tensor copies do, by XORing bits 4.. of its shared-memory
// address with bits 7.. (1, 2 or 3 bits for the 32-, 64- and 128-byte spans).
#pragma once

#include <stdint.h>

extern "C" {
// Loads the box at `coords` (rank of them, signed) into shared memory at `shared`, whose address
// in the shared window is `sharedAddress` (the swizzle's input). Elements outside the tensor read
// as zero (NaN for floats when the map asks). Returns the box's bytes (the transaction count the
// mbarrier receives), or -1 when `map` is not a tensor map of this rank.
int32_t __rocuda_tensor_load(void* shared, uint32_t sharedAddress, const void* map, int32_t rank,
                             const int32_t* coords);
// Stores the box at `coords` from shared memory; elements outside the tensor are not written.
// `reduction` -1 stores; otherwise each element is combined atomically with the one in global
// memory: 0 add, 1 min, 2 max, 3 inc, 4 dec, 5 and, 6 or, 7 xor (for the map's element type).
// Returns 0, or -1 for a map that is not one of this rank or a reduction its type lacks.
int32_t __rocuda_tensor_store(const void* map, int32_t rank, const int32_t* coords,
                              const void* shared, uint32_t sharedAddress, int32_t reduction);
}
