// ELF input: a CUDA cubin (SASS only) or a host executable / object / shared library whose
// .nv_fatbin (per-TU and device-link containers) and __nv_relfatbin (-rdc per-TU containers)
// sections hold fatbin containers. Only 64-bit little-endian ELF, which is all nvcc produces.
#include <algorithm>
#include <optional>

#include "fatbin/internal.h"

namespace rocuda::fatbin::detail {
namespace {

constexpr uint16_t kMachineCuda = 190;
constexpr uint32_t kSectionSymbolTable = 2;
constexpr uint32_t kSectionNoBits = 8;
constexpr uint64_t kSymbolSize = 24;          // Elf64_Sym
constexpr uint8_t kSymbolFunction = 2;        // STT_FUNC
constexpr uint8_t kCudaEntryFunction = 0x10;  // st_other: a kernel (.entry), not a .func
constexpr uint16_t kSectionHeaderSize = 64;
constexpr uint16_t kExtendedIndex = 0xffff;

struct ElfHeader {
  uint16_t machine = 0;
  uint8_t abiVersion = 0;
  uint32_t flags = 0;
  uint64_t sectionOffset = 0;
  uint64_t sectionCount = 0;
  uint32_t nameSection = 0;
};

struct Section {
  uint32_t name = 0;
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
};

bool loadSection(const uint8_t* data, size_t size, const ElfHeader& h, uint64_t index, Section& s) {
  uint64_t at = h.sectionOffset + index * kSectionHeaderSize;
  return load(data, size, at + 0x00, s.name) && load(data, size, at + 0x04, s.type) &&
         load(data, size, at + 0x18, s.offset) && load(data, size, at + 0x20, s.size) &&
         load(data, size, at + 0x28, s.link);
}

Result<ElfHeader> readHeader(const uint8_t* data, size_t size) {
  if (size < 64) return invalid("truncated ELF header: " + std::to_string(size) + " bytes");
  if (data[4] != 2 || data[5] != 1)
    return invalid("unsupported ELF file: only 64-bit little-endian ELF is read");
  ElfHeader h;
  uint16_t entrySize = 0, count = 0, names = 0;
  h.abiVersion = data[8];
  load(data, size, 0x12, h.machine);
  load(data, size, 0x28, h.sectionOffset);
  load(data, size, 0x30, h.flags);
  load(data, size, 0x3A, entrySize);
  load(data, size, 0x3C, count);
  load(data, size, 0x3E, names);
  h.sectionCount = count;
  h.nameSection = names;
  if (h.sectionOffset == 0) {
    h.sectionCount = 0;
    return h;
  }
  if (entrySize != kSectionHeaderSize)
    return invalid("ELF section header size " + std::to_string(entrySize) + " (expected 64)");
  Section first;
  if (!loadSection(data, size, h, 0, first))
    return invalid("ELF section table at " + hex(h.sectionOffset) + " lies outside the file");
  // Extended numbering: real counts live in section 0 when they do not fit 16 bits.
  if (count == 0) h.sectionCount = first.size;
  if (names == kExtendedIndex) h.nameSection = first.link;
  uint64_t tableEnd = h.sectionCount * kSectionHeaderSize;
  if (h.sectionCount > size / kSectionHeaderSize || h.sectionOffset > size ||
      tableEnd > size - h.sectionOffset)
    return invalid("ELF section table (" + std::to_string(h.sectionCount) + " sections at " +
                   hex(h.sectionOffset) + ") lies outside the " + std::to_string(size) +
                   "-byte file");
  return h;
}

// The cubin's SM architecture: e_flags bits 8..15 since ELF ABI version 8, bits 0..7 before.
uint32_t cubinArch(const ElfHeader& h) {
  return h.abiVersion >= 8 ? (h.flags >> 8) & 0xff : h.flags & 0xff;
}

std::optional<std::string_view> sectionName(const uint8_t* data, size_t size, const Section& names,
                                            uint32_t offset) {
  if (names.type == kSectionNoBits || names.offset > size || names.size > size - names.offset ||
      offset >= names.size)
    return std::nullopt;
  const char* s = reinterpret_cast<const char*>(data + names.offset + offset);
  size_t length = strnlen(s, names.size - offset);
  if (length == names.size - offset) return std::nullopt;  // not terminated inside the table
  return std::string_view(s, length);
}

// The names of a cubin's kernels: its symbol table's functions marked as entries.
void readCubinKernels(const uint8_t* data, size_t size, const ElfHeader& h,
                      std::vector<std::string>& kernels) {
  for (uint64_t i = 0; i < h.sectionCount; ++i) {
    Section symbols, strings;
    loadSection(data, size, h, i, symbols);  // in range: readHeader checked the table
    if (symbols.type != kSectionSymbolTable || symbols.link >= h.sectionCount) continue;
    loadSection(data, size, h, symbols.link, strings);
    if (symbols.offset > size || symbols.size > size - symbols.offset) continue;
    for (uint64_t at = symbols.offset; at + kSymbolSize <= symbols.offset + symbols.size;
         at += kSymbolSize) {
      uint32_t name = 0;
      uint8_t info = 0, other = 0;
      load(data, size, at, name);
      load(data, size, at + 4, info);
      load(data, size, at + 5, other);
      if ((info & 0xf) != kSymbolFunction || (other & kCudaEntryFunction) == 0) continue;
      if (std::optional<std::string_view> text = sectionName(data, size, strings, name))
        kernels.emplace_back(*text);
    }
  }
}

}  // namespace

Status readElf(const uint8_t* data, size_t size, uint32_t targetArch, ImageContents& out) {
  Result<ElfHeader> header = readHeader(data, size);
  if (!header) return header.takeError();
  const ElfHeader& h = *header;
  Section names;
  bool haveNames =
      h.nameSection < h.sectionCount && loadSection(data, size, h, h.nameSection, names);
  bool sawFatbin = false;
  for (uint64_t i = 0; haveNames && i < h.sectionCount; ++i) {
    Section s;
    loadSection(data, size, h, i, s);  // in range: readHeader checked the table
    std::optional<std::string_view> name = sectionName(data, size, names, s.name);
    if (!name || (*name != ".nv_fatbin" && *name != "__nv_relfatbin")) continue;
    if (s.type == kSectionNoBits || s.size == 0) continue;
    if (s.offset > size || s.size > size - s.offset)
      return invalid("ELF section " + std::string(*name) + " (" + std::to_string(s.size) +
                     " bytes at " + hex(s.offset) + ") lies outside the " + std::to_string(size) +
                     "-byte file");
    sawFatbin = true;
    size_t before = out.ptx.size();
    ROCUDA_TRY(readContainers(data + s.offset, s.size, targetArch, out,
                              "ELF section " + std::string(*name)));
    if (*name == "__nv_relfatbin")
      for (size_t p = before; p < out.ptx.size(); ++p) out.ptx[p].relocatable = true;
  }
  // A cubin is SASS for one architecture and never carries PTX.
  if (!sawFatbin && h.machine == kMachineCuda) {
    addSassArch(out, cubinArch(h));
    readCubinKernels(data, size, h, out.sassKernels);
  }
  return Status::success();
}

Result<uint64_t> elfExtent(const uint8_t* data) {
  // The caller vouches for the memory; the limit only stops absurd header values.
  Result<ElfHeader> header = readHeader(data, kMaxImageBytes);
  if (!header) return header.takeError();
  const ElfHeader& h = *header;
  uint64_t extent = std::max<uint64_t>(64, h.sectionOffset + h.sectionCount * kSectionHeaderSize);
  for (uint64_t i = 0; i < h.sectionCount; ++i) {
    Section s;
    loadSection(data, kMaxImageBytes, h, i, s);
    if (s.type == kSectionNoBits) continue;
    if (s.offset > kMaxImageBytes || s.size > kMaxImageBytes - s.offset)
      return invalid("ELF section " + std::to_string(i) + " (" + std::to_string(s.size) +
                     " bytes at " + hex(s.offset) + ") is implausibly large");
    extent = std::max(extent, s.offset + s.size);
  }
  return extent;
}

}  // namespace rocuda::fatbin::detail
