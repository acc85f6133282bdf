// Entry points: recognise an image, follow fatbin wrappers, read PTX text, build messages.
#include "fatbin/fatbin.h"

#include <cstring>
#include <limits>

#include "fatbin/internal.h"

namespace rocuda::fatbin {
namespace {

using detail::invalid;

constexpr uint8_t kWrapperBytes[4] = {0xB1, 0x43, 0x62, 0x46};
constexpr uint8_t kContainerBytes[4] = {0x50, 0xED, 0x55, 0xBA};
constexpr uint8_t kElfBytes[4] = {0x7F, 'E', 'L', 'F'};
constexpr size_t kWrapperSize = 24;  // {u32 magic, u32 version, void* data, void* extra}
constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();

// Compares byte by byte so that a short NUL-terminated string is never read past its end (no
// magic contains a zero byte).
bool startsWith(const uint8_t* data, size_t size, const uint8_t (&magic)[4]) {
  for (size_t i = 0; i < 4; ++i)
    if (i >= size || data[i] != magic[i]) return false;
  return true;
}

bool isSpace(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// PTX text: after whitespace and comments, the `.version` directive every module begins with
// (NVIDIA's driver takes text that starts with another directive, `.target`, for no image:
// CUDA_ERROR_INVALID_IMAGE). Stops at a NUL.
bool looksLikePtx(const uint8_t* p, size_t size) {
  size_t i = 0;
  auto at = [&](size_t k) -> uint8_t { return k < size ? p[k] : 0; };
  while (at(i) != 0) {
    if (isSpace(at(i))) {
      ++i;
    } else if (at(i) == '/' && at(i + 1) == '/') {
      while (at(i) != 0 && at(i) != '\n') ++i;
    } else if (at(i) == '/' && at(i + 1) == '*') {
      i += 2;
      while (at(i) != 0 && !(at(i) == '*' && at(i + 1) == '/')) ++i;
      if (at(i) == 0) return false;
      i += 2;
    } else {
      static constexpr char kVersion[] = ".version";
      for (size_t k = 0; k + 1 < sizeof kVersion; ++k)
        if (at(i + k) != static_cast<uint8_t>(kVersion[k])) return false;
      return isSpace(at(i + sizeof kVersion - 1));
    }
  }
  return false;
}

ImageKind detect(const uint8_t* p, size_t size) {
  if (!p || size == 0) return ImageKind::Unknown;
  if (startsWith(p, size, kWrapperBytes)) return ImageKind::FatbinWrapper;
  if (startsWith(p, size, kContainerBytes)) return ImageKind::FatbinContainer;
  if (startsWith(p, size, kElfBytes)) return ImageKind::Elf;
  if (looksLikePtx(p, size)) return ImageKind::PtxText;
  return ImageKind::Unknown;
}

// Reads "NAME <digits>[.<digits>]" after the first occurrence of `directive` in the text.
bool findNumbers(std::string_view text, std::string_view directive, uint32_t& major,
                 uint32_t& minor) {
  size_t at = text.find(directive);
  if (at == std::string_view::npos) return false;
  size_t i = at + directive.size();
  auto number = [&](uint32_t& out) {
    size_t start = i;
    out = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 6)
      out = out * 10 + static_cast<uint32_t>(text[i++] - '0');
    return i > start;
  };
  if (!number(major)) return false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    number(minor);
  }
  return true;
}

PtxProgram ptxFromText(const uint8_t* data, size_t size) {
  PtxProgram program;
  const char* s = reinterpret_cast<const char*>(data);
  program.text.assign(s, size == kUnbounded ? std::strlen(s) : strnlen(s, size));
  uint32_t unused = 0;
  findNumbers(program.text, ".version ", program.isaMajor, program.isaMinor);
  findNumbers(program.text, ".target sm_", program.arch, unused);
  program.name = "PTX text";
  return program;
}

Error unknownImage(const uint8_t* p) {
  std::string first =
      p ? " (first byte " + detail::hex(p[0]) + ")" : std::string(" (null pointer)");
  return invalid("unrecognised image" + first + ": not a fatbin wrapper (magic " +
                 detail::hex(kWrapperMagic) + "), fatbin container (magic " +
                 detail::hex(kContainerMagic) + "), ELF file or PTX text");
}

// Tell translation units apart in diagnostics once there are several.
ImageContents finish(ImageContents contents) {
  if (contents.ptx.size() > 1)
    for (size_t i = 0; i < contents.ptx.size(); ++i)
      contents.ptx[i].name += " (unit " + std::to_string(i + 1) + ")";
  return contents;
}

// A container reached through a pointer: its header gives its size.
Status readContainerAt(const void* pointer, uint32_t targetArch, ImageContents& out,
                       const std::string& where) {
  if (!pointer) return invalid(where + " is a null pointer");
  auto* data = static_cast<const uint8_t*>(pointer);
  // A v2 array may in principle list wrappers; follow one level.
  if (startsWith(data, kWrapperSize, kWrapperBytes)) {
    const void* inner = nullptr;
    std::memcpy(&inner, data + 8, sizeof inner);
    if (!inner) return invalid(where + " is a fatbin wrapper with a null data pointer");
    data = static_cast<const uint8_t*>(inner);
  }
  Result<uint64_t> size = detail::containerSize(data, detail::kMaxImageBytes, where);
  if (!size) return size.takeError();
  return detail::readContainers(data, *size, targetArch, out, where);
}

Result<ImageContents> readWrapper(const uint8_t* wrapper, uint32_t targetArch) {
  uint32_t version = 0;
  const void* data = nullptr;
  const void* const* fatbins = nullptr;
  std::memcpy(&version, wrapper + 4, sizeof version);
  std::memcpy(&data, wrapper + 8, sizeof data);
  std::memcpy(&fatbins, wrapper + 16, sizeof fatbins);
  ImageContents out;
  if (version == 1) {
    ROCUDA_TRY(readContainerAt(data, targetArch, out, "fatbin wrapper v1 data"));
    return finish(std::move(out));
  }
  if (version != 2)
    return invalid("fatbin wrapper version " + std::to_string(version) + " (expected 1 or 2)");
  // -rdc=true: `data` is the device-linked fatbin (SASS); the PTX is in the per-TU fatbins.
  ImageContents linked;
  if (data) ROCUDA_TRY(readContainerAt(data, targetArch, linked, "fatbin wrapper v2 linked data"));
  for (uint32_t arch : linked.sassArchs) detail::addSassArch(out, arch);
  for (size_t i = 0; fatbins; ++i) {
    if (i == detail::kMaxRelocatableFatbins)
      return invalid("fatbin wrapper v2: relocatable fatbin list has no terminating null");
    if (!fatbins[i]) break;
    ROCUDA_TRY(readContainerAt(fatbins[i], targetArch, out,
                               "fatbin wrapper v2 relocatable fatbin " + std::to_string(i + 1)));
  }
  if (out.ptx.empty())
    out.ptx = std::move(linked.ptx);
  else
    out.relocatable = true;
  return finish(std::move(out));
}

}  // namespace

ImageKind detectImage(const void* image) {
  return detect(static_cast<const uint8_t*>(image), kUnbounded);
}

ImageKind detectImageBytes(const uint8_t* data, size_t size) { return detect(data, size); }

const char* imageKindName(ImageKind kind) {
  switch (kind) {
    case ImageKind::FatbinWrapper:
      return "fatbin wrapper";
    case ImageKind::FatbinContainer:
      return "fatbin container";
    case ImageKind::Elf:
      return "ELF";
    case ImageKind::PtxText:
      return "PTX text";
    case ImageKind::Unknown:
      break;
  }
  return "unknown";
}

Result<ImageContents> readImage(const void* image, uint32_t targetArch) {
  auto* data = static_cast<const uint8_t*>(image);
  ImageContents out;
  switch (detectImage(image)) {
    case ImageKind::FatbinWrapper:
      return readWrapper(data, targetArch);
    case ImageKind::FatbinContainer:
      ROCUDA_TRY(readContainerAt(data, targetArch, out, "fatbin container"));
      return finish(std::move(out));
    case ImageKind::Elf: {
      Result<uint64_t> size = detail::elfExtent(data);
      if (!size) return size.takeError();
      return readImageBytes(data, *size, targetArch);
    }
    case ImageKind::PtxText:
      out.ptx.push_back(ptxFromText(data, kUnbounded));
      return out;
    case ImageKind::Unknown:
      break;
  }
  return unknownImage(data);
}

Result<ImageContents> readImageBytes(const uint8_t* data, size_t size, uint32_t targetArch) {
  if (!data || size == 0) return invalid("empty image (no bytes)");
  ImageContents out;
  switch (detect(data, size)) {
    case ImageKind::FatbinWrapper:
      return invalid("a fatbin wrapper (magic " + detail::hex(kWrapperMagic) +
                     ") holds pointers into its process; pass the container it points at");
    case ImageKind::FatbinContainer:
      ROCUDA_TRY(detail::readContainers(data, size, targetArch, out, "fatbin container"));
      return finish(std::move(out));
    case ImageKind::Elf:
      ROCUDA_TRY(detail::readElf(data, size, targetArch, out));
      return finish(std::move(out));
    case ImageKind::PtxText:
      out.ptx.push_back(ptxFromText(data, size));
      return out;
    case ImageKind::Unknown:
      break;
  }
  return unknownImage(data);
}

std::string sassArchList(const std::vector<uint32_t>& sassArchs) {
  std::string list;
  for (uint32_t arch : sassArchs) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(arch);
  return list;
}

std::string noPtxMessage(std::string_view kernelName, const std::vector<uint32_t>& sassArchs) {
  std::string message = "kernel '" + std::string(kernelName) + "' has no PTX in this binary";
  if (sassArchs.empty())
    message += " (it carries no SASS either)";
  else
    message += " (it carries only SASS for " + sassArchList(sassArchs) + ")";
  // Suggest the oldest architecture the program was built for: its PTX runs everywhere after.
  uint32_t arch = sassArchs.empty() ? 75 : sassArchs.front();
  std::string a = std::to_string(arch);
  message += "; Rocuda compiles PTX: rebuild with -gencode arch=compute_" + a + ",code=compute_" +
             a + " (or add it next to your -arch)";
  return message;
}

}  // namespace rocuda::fatbin
