#include "fatbin_test_util.h"

#include <lz4.h>
#include <zstd.h>

#include <fstream>
#include <iterator>

namespace rocuda::fatbin::test {

std::string inputPath(const std::string& name) {
#ifdef ROCUDA_FATBIN_INPUTS
  return std::string(ROCUDA_FATBIN_INPUTS) + "/" + name;
#else
  (void)name;
  return {};
#endif
}

Bytes readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

namespace {

Bytes compress(const std::string& data, Compression compression) {
  Bytes out;
  if (compression == Compression::Lz4) {
    out.resize(LZ4_compressBound(static_cast<int>(data.size())));
    int n = LZ4_compress_default(data.data(), reinterpret_cast<char*>(out.data()),
                                 static_cast<int>(data.size()), static_cast<int>(out.size()));
    out.resize(n > 0 ? n : 0);
    return out;
  }
  out.resize(ZSTD_compressBound(data.size()));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag,
                         compression == Compression::ZstdNoContentSize ? 0 : 1);
  size_t n = ZSTD_compress2(cctx, out.data(), out.size(), data.data(), data.size());
  ZSTD_freeCCtx(cctx);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

}  // namespace

Bytes buildContainer(const std::vector<SynthEntry>& entries, std::vector<size_t>* entryOffsets) {
  Bytes out(16, 0);
  put<uint32_t>(out, 0, 0xBA55ED50);
  put<uint16_t>(out, 4, 1);
  put<uint16_t>(out, 6, 0x10);
  for (const SynthEntry& e : entries) {
    std::string raw = e.payload;
    if (e.kind == 1) raw.push_back('\0');
    Bytes payload = e.compression == Compression::None ? Bytes(raw.begin(), raw.end())
                                                       : compress(raw, e.compression);
    size_t compressedSize = e.compression == Compression::None ? 0 : payload.size();
    while (payload.size() % 8) payload.push_back(0);
    size_t at = out.size();
    if (entryOffsets) entryOffsets->push_back(at);
    out.resize(at + 0x40, 0);
    uint64_t flags = 0x11;
    if (e.compression == Compression::Lz4) flags |= 0x2000;
    if (e.compression == Compression::Zstd || e.compression == Compression::ZstdNoContentSize)
      flags |= 0x8000;
    put<uint16_t>(out, at + 0x00, e.kind);
    put<uint16_t>(out, at + 0x02, 0x0101);
    put<uint32_t>(out, at + kEntryHeaderSize, 0x40);
    put<uint64_t>(out, at + kEntryPayloadSize, payload.size());
    put<uint32_t>(out, at + kEntryCompressedSize, static_cast<uint32_t>(compressedSize));
    put<uint16_t>(out, at + 0x18, e.isaMinor);
    put<uint16_t>(out, at + 0x1A, e.isaMajor);
    put<uint32_t>(out, at + kEntryArch, e.arch);
    put<uint64_t>(out, at + kEntryFlags, flags);
    put<uint64_t>(out, at + kEntryUncompressedSize, compressedSize ? raw.size() : 0);
    out.insert(out.end(), payload.begin(), payload.end());
  }
  put<uint64_t>(out, 8, out.size() - 16);
  return out;
}

std::string samplePtx(const std::string& kernel, const std::string& version, uint32_t arch) {
  return "//\n// synthetic\n//\n\n.version " + version + "\n.target sm_" + std::to_string(arch) +
         "\n.address_size 64\n\n.visible .entry " + kernel + "(\n.param .u64 p\n)\n{\nret;\n}\n";
}

}  // namespace rocuda::fatbin::test
