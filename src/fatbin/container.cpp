// Fatbin containers: header {u32 magic, u16 version, u16 header size, u64 entries size}, then
// entries, each a header (>= 0x40 bytes) followed by its payload. See
// shared/notes/cuda13-driver-contract.md, "Fatbin container".
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <vector>

#include "fatbin/internal.h"

namespace rocuda::fatbin::detail {
namespace {

constexpr uint16_t kEntryPtx = 1;
constexpr uint16_t kEntryElf = 2;
constexpr uint16_t kEntryLtoIr = 8;
constexpr uint32_t kMinEntryHeader = 0x40;
constexpr uint16_t kMinContainerHeader = 0x10;
constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;

struct Entry {
  uint64_t offset = 0;  // of the entry header, within the container
  uint16_t kind = 0;
  uint32_t headerSize = 0;
  uint64_t payloadSize = 0;
  uint32_t compressedSize = 0;
  uint16_t isaMinor = 0, isaMajor = 0;
  uint32_t arch = 0;
  uint32_t nameOffset = 0, nameLength = 0;
  uint64_t flags = 0;
  uint64_t uncompressedSize = 0;
};

std::string describe(std::string_view where, uint64_t offset) {
  return std::string(where) + " at offset " + hex(offset);
}

// Reads and checks one entry header at `offset` (relative to the container start `data`, which
// holds `end` bytes).
Result<Entry> readEntry(const uint8_t* data, uint64_t end, uint64_t offset,
                        std::string_view where) {
  Entry e;
  e.offset = offset;
  if (end - offset < kMinEntryHeader)
    return invalid("truncated fatbin entry header in " + describe(where, offset) + ": " +
                   std::to_string(end - offset) + " bytes left, need 64");
  const uint8_t* p = data + offset;
  size_t n = kMinEntryHeader;
  load(p, n, 0x00, e.kind);
  load(p, n, 0x04, e.headerSize);
  load(p, n, 0x08, e.payloadSize);
  load(p, n, 0x10, e.compressedSize);
  load(p, n, 0x18, e.isaMinor);
  load(p, n, 0x1A, e.isaMajor);
  load(p, n, 0x1C, e.arch);
  load(p, n, 0x20, e.nameOffset);
  load(p, n, 0x24, e.nameLength);
  load(p, n, 0x28, e.flags);
  load(p, n, 0x38, e.uncompressedSize);
  uint64_t left = end - offset;
  if (e.headerSize < kMinEntryHeader || e.headerSize > left)
    return invalid("fatbin entry in " + describe(where, offset) + " declares header size " +
                   hex(e.headerSize) + " (must be >= 0x40 and fit in the " + std::to_string(left) +
                   " bytes left)");
  if (e.payloadSize > left - e.headerSize)
    return invalid("fatbin entry in " + describe(where, offset) + " declares payload size " +
                   std::to_string(e.payloadSize) + " but only " +
                   std::to_string(left - e.headerSize) + " bytes are left in the container");
  return e;
}

std::string entryFileName(const uint8_t* data, const Entry& e) {
  if (e.nameLength == 0 || e.nameOffset < kMinEntryHeader) return {};
  if (e.nameOffset > e.headerSize || e.headerSize - e.nameOffset < e.nameLength) return {};
  const char* s = reinterpret_cast<const char*>(data + e.offset + e.nameOffset);
  std::string name(s, strnlen(s, e.nameLength));
  bool printable =
      std::all_of(name.begin(), name.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  return printable ? name : std::string();
}

Result<std::string> decompressZstd(const uint8_t* src, size_t srcSize, uint64_t outSize,
                                   std::string_view what) {
  unsigned long long frame = ZSTD_getFrameContentSize(src, srcSize);
  if (frame == ZSTD_CONTENTSIZE_ERROR)
    return invalid(std::string(what) + ": payload is not a zstd frame");
  if (frame != ZSTD_CONTENTSIZE_UNKNOWN && frame != outSize)
    return invalid(std::string(what) + ": zstd frame holds " + std::to_string(frame) +
                   " bytes but the entry declares " + std::to_string(outSize));
  std::string out(outSize, '\0');
  size_t got = ZSTD_decompress(out.data(), out.size(), src, srcSize);
  if (ZSTD_isError(got))
    return invalid(std::string(what) + ": zstd decompression failed: " + ZSTD_getErrorName(got));
  if (got != outSize)
    return invalid(std::string(what) + ": zstd data decompressed to " + std::to_string(got) +
                   " bytes, the entry declares " + std::to_string(outSize));
  return out;
}

Result<std::string> decompressLz4(const uint8_t* src, size_t srcSize, uint64_t outSize,
                                  std::string_view what) {
  std::string out(outSize, '\0');
  int got = LZ4_decompress_safe(reinterpret_cast<const char*>(src), out.data(),
                                static_cast<int>(srcSize), static_cast<int>(outSize));
  if (got < 0) return invalid(std::string(what) + ": LZ4 decompression failed (corrupt block)");
  if (static_cast<uint64_t>(got) != outSize)
    return invalid(std::string(what) + ": LZ4 data decompressed to " + std::to_string(got) +
                   " bytes, the entry declares " + std::to_string(outSize));
  return out;
}

// The entry's payload, decompressed when its flags say so.
Result<std::string> payloadOf(const uint8_t* data, const Entry& e, std::string_view what) {
  const uint8_t* payload = data + e.offset + e.headerSize;
  bool lz4 = (e.flags & kFlagLz4) != 0, zstd = (e.flags & kFlagZstd) != 0;
  if (!lz4 && !zstd) return std::string(reinterpret_cast<const char*>(payload), e.payloadSize);
  if (lz4 && zstd)
    return invalid(std::string(what) + ": flags " + hex(e.flags) +
                   " claim both LZ4 and zstd compression");
  uint64_t srcSize = e.compressedSize != 0 ? e.compressedSize : e.payloadSize;
  if (srcSize > e.payloadSize)
    return invalid(std::string(what) + ": compressed size " + std::to_string(srcSize) +
                   " exceeds the payload size " + std::to_string(e.payloadSize));
  if (srcSize > kMaxImageBytes)  // keeps the LZ4 API's int sizes meaningful
    return invalid(std::string(what) + ": compressed payload of " + std::to_string(srcSize) +
                   " bytes is implausibly large");
  if (e.uncompressedSize == 0 || e.uncompressedSize > kMaxDecompressedBytes)
    return invalid(std::string(what) + ": implausible uncompressed size " +
                   std::to_string(e.uncompressedSize) + " (limit " +
                   std::to_string(kMaxDecompressedBytes) + ")");
  return zstd ? decompressZstd(payload, srcSize, e.uncompressedSize, what)
              : decompressLz4(payload, srcSize, e.uncompressedSize, what);
}

// The PTX entry to compile for targetArch: highest arch <= target, else the lowest arch.
const Entry* choosePtx(const std::vector<Entry>& ptx, uint32_t targetArch) {
  const Entry* best = nullptr;
  for (const Entry& e : ptx)
    if (e.arch <= targetArch && (!best || e.arch > best->arch)) best = &e;
  if (best) return best;
  for (const Entry& e : ptx)
    if (!best || e.arch < best->arch) best = &e;
  return best;
}

Result<PtxProgram> extractPtx(const uint8_t* data, const Entry& e, std::string_view where) {
  std::string label = "PTX compute_" + std::to_string(e.arch);
  std::string what = label + " entry in " + describe(where, e.offset);
  Result<std::string> text = payloadOf(data, e, what);
  if (!text) return text.takeError();
  PtxProgram program;
  program.text = std::move(text.value());
  // Text stops at its NUL; uncompressed payloads are also zero-padded to 8 bytes.
  program.text.resize(strnlen(program.text.data(), program.text.size()));
  program.arch = e.arch;
  program.isaMajor = e.isaMajor;
  program.isaMinor = e.isaMinor;
  std::string file = entryFileName(data, e);
  program.name = (file.empty() ? std::string("fatbin") : file) + " " + label;
  return program;
}

// One container (whose size was checked) = one translation unit.
Status readContainer(const uint8_t* data, uint64_t size, uint32_t targetArch, ImageContents& out,
                     std::string_view where) {
  uint16_t headerSize = 0;
  load(data, size, 6, headerSize);
  std::vector<Entry> ptx;
  uint32_t ltoIrArch = 0;  // the lowest lto_XX, 0 when none
  for (uint64_t offset = headerSize; offset < size;) {
    Result<Entry> entry = readEntry(data, size, offset, where);
    if (!entry) return entry.takeError();
    if (entry->kind == kEntryPtx) ptx.push_back(*entry);
    if (entry->kind == kEntryElf) addSassArch(out, entry->arch);
    if (entry->kind == kEntryLtoIr && (ltoIrArch == 0 || entry->arch < ltoIrArch))
      ltoIrArch = entry->arch;
    offset += entry->headerSize + entry->payloadSize;
  }
  const Entry* chosen = choosePtx(ptx, targetArch);
  if (!chosen) {
    if (ltoIrArch != 0) out.ltoIrOnly.push_back(std::string(where) + " (LTO-IR lto_" +
                                                std::to_string(ltoIrArch) + ")");
    return Status::success();
  }
  Result<PtxProgram> program = extractPtx(data, *chosen, where);
  if (!program) return program.takeError();
  out.ptx.push_back(std::move(program.value()));
  return Status::success();
}

}  // namespace

std::string hex(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[value & 0xf]);
    value >>= 4;
  } while (value != 0);
  return "0x" + s;
}

void addSassArch(ImageContents& out, uint32_t arch) {
  auto it = std::lower_bound(out.sassArchs.begin(), out.sassArchs.end(), arch);
  if (it == out.sassArchs.end() || *it != arch) out.sassArchs.insert(it, arch);
}

Result<uint64_t> containerSize(const uint8_t* data, uint64_t available, std::string_view where) {
  uint32_t magic = 0;
  uint16_t version = 0, headerSize = 0;
  uint64_t entriesSize = 0;
  if (!load(data, available, 0, magic) || !load(data, available, 8, entriesSize))
    return invalid("truncated fatbin container header in " + std::string(where) + ": " +
                   std::to_string(available) + " bytes, need 16");
  load(data, available, 4, version);
  load(data, available, 6, headerSize);
  if (magic != kContainerMagic)
    return invalid("bad fatbin container magic " + hex(magic) + " in " + std::string(where) +
                   " (expected " + hex(kContainerMagic) + ")");
  if (headerSize < kMinContainerHeader || headerSize > available)
    return invalid("fatbin container in " + std::string(where) + " declares header size " +
                   hex(headerSize) + " (version " + std::to_string(version) + ")");
  if (entriesSize > available - headerSize)
    return invalid("fatbin container in " + std::string(where) + " declares " +
                   std::to_string(entriesSize) + " bytes of entries but only " +
                   std::to_string(available - headerSize) + " bytes are available (truncated?)");
  return headerSize + entriesSize;
}

Status readContainers(const uint8_t* data, size_t size, uint32_t targetArch, ImageContents& out,
                      std::string_view where) {
  size_t offset = 0;
  unsigned index = 0;
  while (offset < size) {
    std::string here = std::string(where) + (index ? " (container " + std::to_string(index + 1) +
                                                         " at offset " + hex(offset) + ")"
                                                   : std::string());
    Result<uint64_t> total = containerSize(data + offset, size - offset, here);
    if (!total) return total.takeError();
    ROCUDA_TRY(readContainer(data + offset, *total, targetArch, out, here));
    offset += *total;
    ++index;
    // Containers in a section are 8-byte aligned; skip the zero padding between them.
    while (offset < size && data[offset] == 0) ++offset;
  }
  return Status::success();
}

}  // namespace rocuda::fatbin::detail
