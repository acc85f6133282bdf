// Helpers for the fatbin tests: reading nvcc-built inputs and building synthetic containers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace rocuda::fatbin::test {

using Bytes = std::vector<uint8_t>;

// Path of an nvcc-built input, or "" when the build had no nvcc.
std::string inputPath(const std::string& name);
Bytes readFile(const std::string& path);

enum class Compression { None, Lz4, Zstd, ZstdNoContentSize };

struct SynthEntry {
  uint16_t kind = 1;  // 1 PTX, 2 ELF
  uint32_t arch = 75;
  std::string payload;  // for PTX: the text (a NUL is appended)
  Compression compression = Compression::None;
  uint16_t isaMajor = 9, isaMinor = 0;
};

// A container as nvcc lays it out: 16-byte header, entries with 0x40-byte headers, payloads
// padded to 8 bytes. Offsets of the entry headers are returned in entryOffsets when given.
Bytes buildContainer(const std::vector<SynthEntry>& entries,
                     std::vector<size_t>* entryOffsets = nullptr);

template <class T>
void put(Bytes& bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}
template <class T>
T get(const Bytes& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

// Fields of an entry header (offsets from the entry start).
inline constexpr size_t kEntryHeaderSize = 0x04, kEntryPayloadSize = 0x08,
                        kEntryCompressedSize = 0x10, kEntryArch = 0x1C, kEntryFlags = 0x28,
                        kEntryUncompressedSize = 0x38;

std::string samplePtx(const std::string& kernel, const std::string& version = "9.0",
                      uint32_t arch = 75);

}  // namespace rocuda::fatbin::test
