// Static libraries (`ar` archives, as nvcc -lib and nvJitLink's host-library inputs make them):
// each member is an ELF object or cubin read like any other image. The System V / GNU format:
// "!<arch>\n", then 60-byte member headers (name, mtime, uid, gid, mode, decimal size, "`\n"),
// members 2-byte aligned; "/" and "/SYM64/" are symbol tables, "//" holds long names.
#include <string>

#include "fatbin/internal.h"

namespace rocuda::fatbin {
namespace {

constexpr char kArchiveMagic[] = "!<arch>\n";
constexpr size_t kMagicBytes = sizeof(kArchiveMagic) - 1;
constexpr size_t kHeaderBytes = 60;

// The decimal size field (bytes 48..57), space padded; false when it is not a number.
bool memberSize(const uint8_t* header, uint64_t& size) {
  size = 0;
  bool digits = false;
  for (size_t i = 48; i < 58; ++i) {
    char c = static_cast<char>(header[i]);
    if (c == ' ') break;
    if (c < '0' || c > '9') return false;
    size = size * 10 + static_cast<uint64_t>(c - '0');
    digits = true;
  }
  return digits;
}

// The member's name for diagnostics: "name/" (short), "/123" (offset into the long-name table).
std::string memberName(const uint8_t* header, const uint8_t* longNames, uint64_t longNamesSize) {
  std::string raw(reinterpret_cast<const char*>(header), 16);
  raw.erase(raw.find_last_not_of(' ') + 1);
  if (raw.size() > 1 && raw[0] == '/' && longNames != nullptr) {
    uint64_t offset = 0;
    for (size_t i = 1; i < raw.size(); ++i) {
      if (raw[i] < '0' || raw[i] > '9') return raw;
      offset = offset * 10 + static_cast<uint64_t>(raw[i] - '0');
    }
    std::string name;
    for (uint64_t i = offset; i < longNamesSize && longNames[i] != '\n'; ++i)
      name += static_cast<char>(longNames[i]);
    if (!name.empty() && name.back() == '/') name.pop_back();
    return name;
  }
  if (!raw.empty() && raw.back() == '/') raw.pop_back();
  return raw;
}

}  // namespace

bool isArchive(const uint8_t* data, size_t size) {
  return data != nullptr && size >= kMagicBytes &&
         std::memcmp(data, kArchiveMagic, kMagicBytes) == 0;
}

Result<ImageContents> readArchive(const uint8_t* data, size_t size, uint32_t targetArch) {
  if (!isArchive(data, size)) return detail::invalid("not an ar archive (no \"!<arch>\" magic)");
  ImageContents out;
  const uint8_t* longNames = nullptr;
  uint64_t longNamesSize = 0;
  uint64_t offset = kMagicBytes;
  while (offset < size) {
    if (size - offset < kHeaderBytes)
      return detail::invalid("archive truncated in a member header at offset " +
                             std::to_string(offset));
    const uint8_t* header = data + offset;
    uint64_t bytes = 0;
    if (header[58] != '`' || header[59] != '\n' || !memberSize(header, bytes))
      return detail::invalid("corrupt archive member header at offset " + std::to_string(offset));
    uint64_t start = offset + kHeaderBytes;
    if (bytes > size - start)
      return detail::invalid("archive member at offset " + std::to_string(offset) + " declares " +
                             std::to_string(bytes) + " bytes, past the end of the archive");
    std::string name = memberName(header, longNames, longNamesSize);
    const uint8_t* member = data + start;
    if (std::memcmp(header, "//", 2) == 0 && header[2] == ' ') {
      longNames = member;
      longNamesSize = bytes;
    } else if (header[0] == '/' && (header[1] == ' ' || std::memcmp(header, "/SYM64/", 7) == 0)) {
      // symbol table: nothing to read
    } else if (detectImageBytes(member, bytes) == ImageKind::Elf) {
      Result<ImageContents> contents = readImageBytes(member, bytes, targetArch);
      if (!contents)
        return detail::invalid("archive member " + name + ": " + contents.error().message);
      for (PtxProgram& program : contents->ptx) {
        program.name = name + ": " + program.name;
        out.ptx.push_back(std::move(program));
      }
      for (uint32_t arch : contents->sassArchs) detail::addSassArch(out, arch);
      for (std::string& unit : contents->ltoIrOnly) out.ltoIrOnly.push_back(name + ": " + unit);
    }
    // Other members (text files, non-ELF objects) carry no device code.
    offset = start + bytes + (bytes & 1);
  }
  return out;
}

}  // namespace rocuda::fatbin
