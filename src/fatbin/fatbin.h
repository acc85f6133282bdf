// Reading CUDA binaries: the fatbin wrapper (.nvFatBinSegment), fatbin containers
// (.nv_fatbin / __nv_relfatbin), ELF files carrying them, and plain PTX text. The driver API
// compiles PTX, so the result is the best PTX of each translation unit plus, for diagnostics,
// the SASS architectures the binary carries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/result.h"

namespace rocuda::fatbin {

inline constexpr uint32_t kWrapperMagic = 0x466243B1;
inline constexpr uint32_t kContainerMagic = 0xBA55ED50;

enum class ImageKind { FatbinWrapper, FatbinContainer, Elf, PtxText, Unknown };

// Recognises what a pointer passed to cuLibraryLoadData / cuModuleLoadData /
// cuModuleLoadFatBinary points at. Reads at most the first bytes needed to decide (for text: up
// to the first directive). nullptr gives Unknown.
ImageKind detectImage(const void* image);

// The same decision for a buffer of known size; never reads outside [data, data + size).
ImageKind detectImageBytes(const uint8_t* data, size_t size);

const char* imageKindName(ImageKind kind);

struct PtxProgram {
  std::string text;                     // decompressed PTX, without the trailing NUL
  uint32_t arch = 0;                    // compute_XX of the entry (e.g. 75)
  uint32_t isaMajor = 0, isaMinor = 0;  // PTX ISA version from the entry header
  std::string name;                     // readable name for diagnostics
  // From an executable's __nv_relfatbin section: a unit of -rdc=true device code, to be linked
  // with the others (ImageContents::relocatable says the same of a whole v2 wrapper).
  bool relocatable = false;
};

struct ImageContents {
  std::vector<PtxProgram> ptx;      // one per translation unit that carries PTX
  std::vector<uint32_t> sassArchs;  // archs of ELF (SASS) entries seen, sorted, unique
  // A cubin's kernels (its entry functions' symbols), so that a lookup of another name is told
  // NotFound rather than "no PTX" (and for diagnostics). Filled for cubins loaded directly.
  std::vector<std::string> sassKernels;
  // Translation units with NVVM LTO-IR (entry kind 8: `nvcc -dc -arch=lto_NN`) and no PTX, named
  // by their lowest lto_XX. Only NVIDIA's nvJitLink reads LTO-IR.
  std::vector<std::string> ltoIrOnly;
  // The PTX comes from the relocatable fatbins of an -rdc=true program (a v2 wrapper): its
  // translation units reference each other's functions and variables and are linked as one.
  bool relocatable = false;
};

// Extracts the best PTX of each translation unit for a device of compute capability
// `targetArch` (e.g. 86): the PTX entry with the highest arch <= targetArch, else the lowest.
// PTX text gives one program; an ELF cubin gives no PTX. Corrupt, truncated or unknown input is
// an InvalidImage error. An image without PTX is not an error (ptx is empty).
// Sizes come from the headers (wrapper -> container header, ELF header -> section table,
// text -> NUL terminator).
Result<ImageContents> readImage(const void* image, uint32_t targetArch);

// Same for a buffer of known size: one or more fatbin containers back to back, an ELF file
// (host executable / object with .nv_fatbin or __nv_relfatbin, or a cubin) or PTX text.
// Never reads outside [data, data + size). A wrapper is refused (its pointers cannot be checked).
Result<ImageContents> readImageBytes(const uint8_t* data, size_t size, uint32_t targetArch);

// Static libraries (ar archives of ELF objects and cubins, e.g. from `nvcc -lib -rdc=true`):
// the PTX of every member, read as readImageBytes reads one image. Linker inputs only: a module
// cannot be loaded from an archive.
bool isArchive(const uint8_t* data, size_t size);
Result<ImageContents> readArchive(const uint8_t* data, size_t size, uint32_t targetArch);

// "sm_75, sm_86": the architectures a binary carries SASS for, as messages name them.
std::string sassArchList(const std::vector<uint32_t>& sassArchs);

// "kernel 'NAME' has no PTX in this binary (it carries only SASS for sm_75); Rocuda compiles
// PTX: rebuild with -gencode arch=compute_75,code=compute_75 (or add it next to your -arch)".
std::string noPtxMessage(std::string_view kernelName, const std::vector<uint32_t>& sassArchs);

}  // namespace rocuda::fatbin
