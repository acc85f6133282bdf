// Shared between the fatbin sources; not part of the component's interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fatbin/fatbin.h"

namespace rocuda::fatbin::detail {

// Upper bounds that keep corrupt headers from making us allocate or walk absurd amounts.
inline constexpr uint64_t kMaxImageBytes = 1ull << 30;  // one container / ELF from a pointer
inline constexpr uint64_t kMaxDecompressedBytes = 256ull << 20;  // one PTX or cubin entry
inline constexpr size_t kMaxRelocatableFatbins = 1u << 16;       // wrapper v2 array length

// Little-endian loads from [data, data + size); false when the field does not fit.
template <class T>
bool load(const uint8_t* data, size_t size, uint64_t offset, T& out) {
  if (offset > size || size - offset < sizeof(T)) return false;
  std::memcpy(&out, data + offset, sizeof(T));
  return true;
}

inline Error invalid(std::string message) {
  return makeError(ErrorCode::InvalidImage, std::move(message));
}

std::string hex(uint64_t value);

void addSassArch(ImageContents& out, uint32_t arch);

// Total bytes (header + entries) of the container at `data`, checked against `available`.
Result<uint64_t> containerSize(const uint8_t* data, uint64_t available, std::string_view where);

// One or more containers back to back (each 8-byte aligned, zero padding between them), each
// one translation unit: appends its best PTX to out.ptx and its SASS archs to out.sassArchs.
Status readContainers(const uint8_t* data, size_t size, uint32_t targetArch, ImageContents& out,
                      std::string_view where);

// A 64-bit little-endian ELF: a cubin (SASS arch from e_flags) or a host file whose
// .nv_fatbin / __nv_relfatbin sections hold containers.
Status readElf(const uint8_t* data, size_t size, uint32_t targetArch, ImageContents& out);

// Size of an ELF image in memory, from its header and section table (for readImage).
Result<uint64_t> elfExtent(const uint8_t* data);

}  // namespace rocuda::fatbin::detail
