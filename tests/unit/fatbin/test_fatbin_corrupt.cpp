// Corrupt, truncated and hostile inputs: every one is an InvalidImage error with a message (or,
// for flips that keep the structure valid, a result), never a crash or an out-of-bounds read.
// Buffers are exact-size heap copies so that ASan / valgrind see any overread.
#include <gtest/gtest.h>
#include <zstd.h>

#include <random>

#include "fatbin/fatbin.h"
#include "fatbin_test_util.h"

namespace rocuda::fatbin {
namespace {

using test::Bytes;
using test::Compression;
using test::get;
using test::put;

Error expectInvalid(const Bytes& bytes, uint32_t arch = 75) {
  Result<ImageContents> r = readImageBytes(bytes.data(), bytes.size(), arch);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return {};
  EXPECT_EQ(r.error().code, ErrorCode::InvalidImage);
  EXPECT_FALSE(r.error().message.empty());
  return r.error();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Bytes realOrSynthetic(const char* name) {
  std::string path = test::inputPath(name);
  if (!path.empty()) {
    Bytes b = test::readFile(path);
    if (!b.empty()) return b;
  }
  return test::buildContainer({{2, 75, std::string(200, 'E'), Compression::None},
                               {1, 75, test::samplePtx("k"), Compression::Zstd},
                               {1, 80, test::samplePtx("k", "9.0", 80), Compression::Lz4}});
}

TEST(FatbinCorrupt, EveryTruncationIsAnError) {
  for (const char* name : {"zstd.fatbin", "lz4.fatbin", "none.fatbin", "multi.fatbin"}) {
    Bytes full = realOrSynthetic(name);
    ASSERT_TRUE(readImageBytes(full.data(), full.size(), 75).ok());
    for (size_t length = 1; length < full.size(); ++length) {
      Bytes cut(full.begin(), full.begin() + length);
      Result<ImageContents> r = readImageBytes(cut.data(), cut.size(), 75);
      ASSERT_FALSE(r.ok()) << name << " truncated to " << length;
      ASSERT_EQ(r.error().code, ErrorCode::InvalidImage);
      ASSERT_FALSE(r.error().message.empty());
    }
  }
}

TEST(FatbinCorrupt, TruncationMessageIsClear) {
  Bytes full = realOrSynthetic("zstd.fatbin");
  Bytes cut(full.begin(), full.begin() + full.size() / 2);
  Error e = expectInvalid(cut);
  EXPECT_TRUE(contains(e.message, "truncated")) << e.message;
}

// Random byte flips: the reader may accept a flip that keeps the structure valid (e.g. in SASS
// bytes), but must never crash and must report InvalidImage otherwise.
void flipFuzz(const Bytes& original, unsigned cases, unsigned seed, unsigned& rejected) {
  std::mt19937 rng(seed);
  for (unsigned i = 0; i < cases; ++i) {
    Bytes b = original;
    unsigned flips = 1 + rng() % 4;
    for (unsigned f = 0; f < flips; ++f)
      b[rng() % b.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    for (uint32_t arch : {75u, 90u}) {
      Result<ImageContents> r = readImageBytes(b.data(), b.size(), arch);
      if (r.ok()) continue;
      ASSERT_EQ(r.error().code, ErrorCode::InvalidImage) << "case " << i;
      ASSERT_FALSE(r.error().message.empty());
      ++rejected;
    }
  }
}

TEST(FatbinCorrupt, RandomByteFlipsInContainers) {
  unsigned rejected = 0;
  flipFuzz(realOrSynthetic("zstd.fatbin"), 1500, 1, rejected);
  flipFuzz(realOrSynthetic("lz4.fatbin"), 1000, 2, rejected);
  flipFuzz(realOrSynthetic("multi.fatbin"), 1000, 3, rejected);
  EXPECT_GT(rejected, 0u);  // the flips do reach the checks
}

TEST(FatbinCorrupt, RandomByteFlipsInElf) {
  std::string path = test::inputPath("kernels.o");
  if (path.empty()) GTEST_SKIP() << "built without nvcc";
  Bytes elf = test::readFile(path);
  ASSERT_FALSE(elf.empty());
  unsigned rejected = 0;
  flipFuzz(elf, 1000, 4, rejected);
  // ELF truncations: no crash; cutting into the section table is always an error.
  for (size_t length = 1; length < elf.size(); length += 7) {
    Bytes cut(elf.begin(), elf.begin() + length);
    Result<ImageContents> r = readImageBytes(cut.data(), cut.size(), 75);
    if (!r.ok()) {
      ASSERT_EQ(r.error().code, ErrorCode::InvalidImage);
    }
    if (length < 64) {
      ASSERT_FALSE(r.ok());
    }
  }
}

Bytes oneEntry(Compression comp, std::vector<size_t>& offsets) {
  return test::buildContainer({{1, 75, test::samplePtx("k"), comp}}, &offsets);
}

TEST(FatbinCorrupt, AbsurdSizesAndOffsets) {
  std::vector<size_t> at;
  Bytes good = oneEntry(Compression::Zstd, at);
  size_t e = at.at(0);
  auto mutated = [&](auto apply) {
    Bytes b = good;
    apply(b);
    return b;
  };
  EXPECT_TRUE(contains(expectInvalid(mutated([](Bytes& b) { put<uint64_t>(b, 8, ~0ull); })).message,
                       "bytes of entries"));
  EXPECT_TRUE(contains(expectInvalid(mutated([](Bytes& b) { put<uint16_t>(b, 6, 0); })).message,
                       "header size"));
  expectInvalid(mutated([](Bytes& b) { put<uint16_t>(b, 6, 0xffff); }));
  expectInvalid(mutated([](Bytes& b) { put<uint32_t>(b, 0, 0xBA55ED51); }));
  EXPECT_TRUE(contains(expectInvalid(mutated([&](Bytes& b) {
                         put<uint32_t>(b, e + test::kEntryHeaderSize, 0x10);
                       })).message,
                       "header size"));
  expectInvalid(mutated([&](Bytes& b) { put<uint32_t>(b, e + test::kEntryHeaderSize, ~0u); }));
  EXPECT_TRUE(contains(expectInvalid(mutated([&](Bytes& b) {
                         put<uint64_t>(b, e + test::kEntryPayloadSize, ~0ull - 8);
                       })).message,
                       "payload size"));
  expectInvalid(mutated([&](Bytes& b) { put<uint32_t>(b, e + test::kEntryCompressedSize, ~0u); }));
  EXPECT_TRUE(contains(expectInvalid(mutated([&](Bytes& b) {
                         put<uint64_t>(b, e + test::kEntryFlags, 0xA011);
                       })).message,
                       "both"));
  // Entries that claim to end beyond the declared container size.
  expectInvalid(mutated([&](Bytes& b) { put<uint64_t>(b, 8, get<uint64_t>(b, 8) - 8); }));
  // A name offset outside the header is ignored, not followed.
  Bytes named = mutated([&](Bytes& b) {
    put<uint32_t>(b, e + 0x20, 0xfffffff0u);
    put<uint32_t>(b, e + 0x24, 0x100);
  });
  Result<ImageContents> r = readImageBytes(named.data(), named.size(), 75);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ptx.at(0).name, "fatbin PTX compute_75");
}

TEST(FatbinCorrupt, DecompressionBombsAndLies) {
  for (Compression comp : {Compression::Zstd, Compression::Lz4, Compression::ZstdNoContentSize}) {
    std::vector<size_t> at;
    Bytes good = oneEntry(comp, at);
    size_t e = at.at(0);
    uint64_t real = get<uint64_t>(good, e + test::kEntryUncompressedSize);
    for (uint64_t declared : {uint64_t{0}, real - 1, real + 1, uint64_t{1} << 40, ~uint64_t{0}}) {
      Bytes b = good;
      put<uint64_t>(b, e + test::kEntryUncompressedSize, declared);
      Error err = expectInvalid(b);
      EXPECT_FALSE(err.message.empty()) << "declared " << declared;
    }
    // Garbage instead of compressed data.
    Bytes b = good;
    for (size_t i = e + 0x40; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 37);
    expectInvalid(b);
  }
  // A real bomb: 64 MiB of zeros compress to a few KB; the entry declares 1000 bytes.
  std::string zeros(64u << 20, '\0');
  Bytes frame(ZSTD_compressBound(zeros.size()));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  size_t n = ZSTD_compress2(cctx, frame.data(), frame.size(), zeros.data(), zeros.size());
  ZSTD_freeCCtx(cctx);
  ASSERT_FALSE(ZSTD_isError(n));
  frame.resize((n + 7) & ~size_t{7});
  zeros.clear();
  zeros.shrink_to_fit();
  std::vector<size_t> at;
  Bytes bomb = oneEntry(Compression::None, at);
  size_t e = at.at(0);
  bomb.resize(e + 0x40);
  bomb.insert(bomb.end(), frame.begin(), frame.end());
  put<uint64_t>(bomb, 8, bomb.size() - 16);
  put<uint64_t>(bomb, e + test::kEntryPayloadSize, frame.size());
  put<uint32_t>(bomb, e + test::kEntryCompressedSize, static_cast<uint32_t>(n));
  put<uint64_t>(bomb, e + test::kEntryFlags, 0x8011);
  put<uint64_t>(bomb, e + test::kEntryUncompressedSize, 1000);
  Error err = expectInvalid(bomb);
  EXPECT_TRUE(contains(err.message, "zstd")) << err.message;
}

TEST(FatbinCorrupt, BadElfHeaders) {
  Bytes elf(64, 0);
  elf[0] = 0x7f, elf[1] = 'E', elf[2] = 'L', elf[3] = 'F', elf[4] = 1, elf[5] = 1;
  EXPECT_TRUE(contains(expectInvalid(elf).message, "64-bit"));
  elf[4] = 2;
  put<uint64_t>(elf, 0x28, 0x1000);  // section table beyond the file
  put<uint16_t>(elf, 0x3A, 64);
  put<uint16_t>(elf, 0x3C, 3);
  EXPECT_TRUE(contains(expectInvalid(elf).message, "outside"));
  put<uint16_t>(elf, 0x3A, 40);
  expectInvalid(elf);
  Bytes tiny = {0x7f, 'E', 'L', 'F', 2, 1};
  EXPECT_TRUE(contains(expectInvalid(tiny).message, "truncated"));
}

}  // namespace
}  // namespace rocuda::fatbin
