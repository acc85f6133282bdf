// Fatbin reader: real nvcc output (zstd, LZ4, uncompressed, multi-arch, -G, -rdc, ELF files),
// synthetic containers, in-memory wrappers and PTX text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "fatbin/fatbin.h"
#include "fatbin_test_util.h"

namespace rocuda::fatbin {
namespace {

using test::Bytes;
using test::Compression;
using test::SynthEntry;

// Loads an nvcc-built input or skips the test when the build had no nvcc.
#define LOAD_INPUT(var, name)                                  \
  std::string var##Path = test::inputPath(name);               \
  if (var##Path.empty()) GTEST_SKIP() << "built without nvcc"; \
  Bytes var = test::readFile(var##Path);                       \
  ASSERT_FALSE(var.empty()) << "cannot read " << var##Path

ImageContents mustRead(const Bytes& bytes, uint32_t arch) {
  Result<ImageContents> result = readImageBytes(bytes.data(), bytes.size(), arch);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? result.value() : ImageContents{};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void expectKernelsPtx(const PtxProgram& p) {
  EXPECT_TRUE(contains(p.text, ".entry _Z6addOnePii")) << p.text;
  EXPECT_TRUE(contains(p.text, ".entry _Z5scalePff")) << p.text;
  EXPECT_TRUE(contains(p.text, ".version 9.0"));
  EXPECT_EQ(p.text.find('\0'), std::string::npos);
  EXPECT_EQ(p.isaMajor, 9u);
  EXPECT_EQ(p.isaMinor, 0u);
}

// --- Real nvcc output ----------------------------------------------------------------------

class RealFatbin : public ::testing::TestWithParam<const char*> {};

TEST_P(RealFatbin, ExtractsDefaultPtxAndSass) {
  LOAD_INPUT(bytes, GetParam());
  EXPECT_EQ(detectImageBytes(bytes.data(), bytes.size()), ImageKind::FatbinContainer);
  EXPECT_EQ(detectImage(bytes.data()), ImageKind::FatbinContainer);
  ImageContents c = mustRead(bytes, 86);
  ASSERT_EQ(c.ptx.size(), 1u);
  expectKernelsPtx(c.ptx[0]);
  EXPECT_EQ(c.ptx[0].arch, 75u);
  EXPECT_EQ(c.ptx[0].name, "fatbin PTX compute_75");
  EXPECT_EQ(c.sassArchs, std::vector<uint32_t>{75});
  // Through a raw pointer the container header gives the size.
  Result<ImageContents> viaPointer = readImage(bytes.data(), 86);
  ASSERT_TRUE(viaPointer.ok()) << viaPointer.error().message;
  ASSERT_EQ(viaPointer->ptx.size(), 1u);
  EXPECT_EQ(viaPointer->ptx[0].text, c.ptx[0].text);
}

INSTANTIATE_TEST_SUITE_P(Compressions, RealFatbin,
                         ::testing::Values("zstd.fatbin", "lz4.fatbin", "none.fatbin"));

TEST(FatbinReal, AllCompressionsGiveTheSameText) {
  LOAD_INPUT(zstd, "zstd.fatbin");
  LOAD_INPUT(lz4, "lz4.fatbin");
  LOAD_INPUT(none, "none.fatbin");
  std::string a = mustRead(zstd, 75).ptx.at(0).text;
  EXPECT_EQ(a, mustRead(lz4, 75).ptx.at(0).text);
  EXPECT_EQ(a, mustRead(none, 75).ptx.at(0).text);
}

TEST(FatbinReal, ChoosesHighestPtxArchNotAboveTarget) {
  LOAD_INPUT(bytes, "multi.fatbin");
  const std::pair<uint32_t, uint32_t> cases[] = {{86, 80}, {75, 75},  {80, 80}, {89, 80},
                                                 {90, 90}, {120, 90}, {70, 75}, {0, 75}};
  for (auto [target, expected] : cases) {
    ImageContents c = mustRead(bytes, target);
    ASSERT_EQ(c.ptx.size(), 1u) << "target " << target;
    EXPECT_EQ(c.ptx[0].arch, expected) << "target " << target;
    EXPECT_TRUE(contains(c.ptx[0].text, ".target sm_" + std::to_string(expected)));
    expectKernelsPtx(c.ptx[0]);
    EXPECT_EQ(c.sassArchs, std::vector<uint32_t>{86});
  }
}

TEST(FatbinReal, DebugBuildNamesTheSourceFile) {
  LOAD_INPUT(bytes, "debug.fatbin");
  ImageContents c = mustRead(bytes, 75);
  ASSERT_EQ(c.ptx.size(), 1u);
  // nvcc -G records the source path as given on its command line.
  const std::string suffix = "kernels.cu PTX compute_75";
  ASSERT_GE(c.ptx[0].name.size(), suffix.size());
  EXPECT_EQ(c.ptx[0].name.substr(c.ptx[0].name.size() - suffix.size()), suffix);
  EXPECT_TRUE(contains(c.ptx[0].text, ".entry _Z6addOnePii"));
}

TEST(FatbinReal, SassOnlyHasNoPtxAndNamesArchs) {
  LOAD_INPUT(bytes, "sass.fatbin");
  ImageContents c = mustRead(bytes, 86);
  EXPECT_TRUE(c.ptx.empty());
  EXPECT_EQ(c.sassArchs, std::vector<uint32_t>{86});
  std::string message = noPtxMessage("_Z6addOnePii", c.sassArchs);
  EXPECT_EQ(message,
            "kernel '_Z6addOnePii' has no PTX in this binary (it carries only SASS for sm_86); "
            "Rocuda compiles PTX: rebuild with -gencode arch=compute_86,code=compute_86 (or add "
            "it next to your -arch)");
}

TEST(FatbinReal, CubinIsElfWithoutPtx) {
  LOAD_INPUT(bytes, "kernels.cubin");
  EXPECT_EQ(detectImage(bytes.data()), ImageKind::Elf);
  ImageContents c = mustRead(bytes, 86);
  EXPECT_TRUE(c.ptx.empty());
  EXPECT_EQ(c.sassArchs, std::vector<uint32_t>{86});
  // Its kernels, from the symbol table (entries only), so other names are told NotFound.
  std::vector<std::string> kernels = c.sassKernels;
  std::sort(kernels.begin(), kernels.end());
  EXPECT_EQ(kernels, (std::vector<std::string>{"_Z5scalePff", "_Z6addOnePii"}));
  Result<ImageContents> viaPointer = readImage(bytes.data(), 86);
  ASSERT_TRUE(viaPointer.ok()) << viaPointer.error().message;
  EXPECT_EQ(viaPointer->sassArchs, std::vector<uint32_t>{86});
}

TEST(FatbinReal, ObjectFileNvFatbinSection) {
  LOAD_INPUT(bytes, "kernels.o");
  ImageContents c = mustRead(bytes, 75);
  ASSERT_EQ(c.ptx.size(), 1u);
  expectKernelsPtx(c.ptx[0]);
  EXPECT_EQ(c.sassArchs, std::vector<uint32_t>{75});
}

std::vector<std::string> entriesOf(const ImageContents& c) {
  std::vector<std::string> names;
  for (const PtxProgram& p : c.ptx) {
    for (const char* k : {"_Z6addOnePii", "_Z6secondPi", "_Z9useHelperPi", "_Z5otherPi"})
      if (contains(p.text, std::string(".entry ") + k)) names.push_back(k);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(FatbinReal, ExecutableWithTwoUnits) {
  LOAD_INPUT(bytes, "plain.exe");
  ImageContents c = mustRead(bytes, 75);
  ASSERT_EQ(c.ptx.size(), 2u);
  EXPECT_EQ(entriesOf(c), (std::vector<std::string>{"_Z6addOnePii", "_Z6secondPi"}));
  EXPECT_TRUE(contains(c.ptx[0].name, "(unit 1)"));
  EXPECT_TRUE(contains(c.ptx[1].name, "(unit 2)"));
  // From a pointer the ELF header and section table give the extent.
  Result<ImageContents> viaPointer = readImage(bytes.data(), 75);
  ASSERT_TRUE(viaPointer.ok()) << viaPointer.error().message;
  EXPECT_EQ(entriesOf(*viaPointer), entriesOf(c));
}

TEST(FatbinReal, RdcExecutableReadsRelocatableFatbins) {
  LOAD_INPUT(bytes, "rdc.exe");
  ImageContents c = mustRead(bytes, 75);
  ASSERT_EQ(c.ptx.size(), 2u);
  EXPECT_EQ(entriesOf(c), (std::vector<std::string>{"_Z5otherPi", "_Z9useHelperPi"}));
  for (const PtxProgram& p : c.ptx) EXPECT_TRUE(contains(p.text, ".version 9.0"));
  EXPECT_EQ(c.sassArchs, std::vector<uint32_t>{75});
}

// --- Wrappers in memory (what cudart passes to cuLibraryLoadData) --------------------------

struct Wrapper {
  uint32_t magic = kWrapperMagic;
  uint32_t version = 1;
  const void* data = nullptr;
  const void* extra = nullptr;
};
static_assert(sizeof(Wrapper) == 24);

TEST(FatbinWrapper, Version1PointsAtContainer) {
  Bytes container = test::buildContainer({{1, 75, test::samplePtx("k1"), Compression::Zstd}});
  Wrapper w{kWrapperMagic, 1, container.data(), nullptr};
  EXPECT_EQ(detectImage(&w), ImageKind::FatbinWrapper);
  Result<ImageContents> c = readImage(&w, 86);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->ptx.size(), 1u);
  EXPECT_TRUE(contains(c->ptx[0].text, ".entry k1"));
}

TEST(FatbinWrapper, Version2ReadsEveryRelocatableFatbin) {
  Bytes linked = test::buildContainer({{2, 75, std::string(64, 'E'), Compression::None}});
  Bytes tu1 = test::buildContainer({{2, 75, std::string(32, 'E'), Compression::Zstd},
                                    {1, 75, test::samplePtx("k1"), Compression::Zstd}});
  Bytes tu2 = test::buildContainer({{1, 75, test::samplePtx("k2"), Compression::Lz4}});
  const void* list[] = {tu1.data(), tu2.data(), nullptr};
  Wrapper w{kWrapperMagic, 2, linked.data(), list};
  Result<ImageContents> c = readImage(&w, 75);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->ptx.size(), 2u);
  EXPECT_TRUE(contains(c->ptx[0].text, ".entry k1"));
  EXPECT_TRUE(contains(c->ptx[1].text, ".entry k2"));
  EXPECT_EQ(c->ptx[1].name, "fatbin PTX compute_75 (unit 2)");
  EXPECT_EQ(c->sassArchs, std::vector<uint32_t>{75});
}

TEST(FatbinWrapper, Version2WithRealRelocatableFatbin) {
  LOAD_INPUT(rel, "rdc_a.fatbin");
  const void* list[] = {rel.data(), nullptr};
  Wrapper w{kWrapperMagic, 2, nullptr, list};
  Result<ImageContents> c = readImage(&w, 75);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->ptx.size(), 1u);
  EXPECT_TRUE(contains(c->ptx[0].text, ".entry _Z9useHelperPi"));
  EXPECT_TRUE(contains(c->ptx[0].text, "_Z6helperi"));  // the external device function
}

TEST(FatbinWrapper, BadWrappersAreErrors) {
  Wrapper nullData{kWrapperMagic, 1, nullptr, nullptr};
  Result<ImageContents> a = readImage(&nullData, 75);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, ErrorCode::InvalidImage);
  EXPECT_TRUE(contains(a.error().message, "null")) << a.error().message;
  Bytes container = test::buildContainer({{1, 75, test::samplePtx("k"), Compression::None}});
  Wrapper badVersion{kWrapperMagic, 7, container.data(), nullptr};
  Result<ImageContents> b = readImage(&badVersion, 75);
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(contains(b.error().message, "version 7")) << b.error().message;
  // A wrapper's pointers cannot be checked in a byte buffer.
  Result<ImageContents> c =
      readImageBytes(reinterpret_cast<const uint8_t*>(&badVersion), sizeof badVersion, 75);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::InvalidImage);
}

// --- PTX text and detection -----------------------------------------------------------------

TEST(FatbinText, PtxTextIsOneProgram) {
  std::string text = "  /* block */\n// line\n.version 7.8\n.target sm_80\n.address_size 64\n";
  EXPECT_EQ(detectImage(text.c_str()), ImageKind::PtxText);
  Result<ImageContents> c = readImage(text.c_str(), 86);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->ptx.size(), 1u);
  EXPECT_EQ(c->ptx[0].text, text);
  EXPECT_EQ(c->ptx[0].isaMajor, 7u);
  EXPECT_EQ(c->ptx[0].isaMinor, 8u);
  EXPECT_EQ(c->ptx[0].arch, 80u);
  // With a known size the text stops at the size or the first NUL.
  Result<ImageContents> d =
      readImageBytes(reinterpret_cast<const uint8_t*>(text.data()), text.size(), 86);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ptx.at(0).text, text);
}

TEST(FatbinText, DetectsKinds) {
  auto bytes = [](const char* s) { return reinterpret_cast<const uint8_t*>(s); };
  EXPECT_EQ(detectImage(nullptr), ImageKind::Unknown);
  EXPECT_EQ(detectImage(""), ImageKind::Unknown);
  EXPECT_EQ(detectImage("."), ImageKind::Unknown);
  EXPECT_EQ(detectImage("// only a comment"), ImageKind::Unknown);
  EXPECT_EQ(detectImage("/* unterminated .version"), ImageKind::Unknown);
  EXPECT_EQ(detectImage("hello"), ImageKind::Unknown);
  EXPECT_EQ(detectImage("\x7f"
                        "ELF"),
            ImageKind::Elf);
  EXPECT_EQ(detectImage("\x7f"
                        "EL"),
            ImageKind::Unknown);
  EXPECT_EQ(detectImage("\n\t.version 8.0"), ImageKind::PtxText);
  EXPECT_EQ(detectImageBytes(bytes(".version"), 1), ImageKind::Unknown);
  // Every PTX module begins with .version; text that starts with another directive is no image
  // NVIDIA's driver knows (CUDA_ERROR_INVALID_IMAGE), nor one whose first word only begins so.
  EXPECT_EQ(detectImage(".target sm_75\n.address_size 64\n"), ImageKind::Unknown);
  EXPECT_EQ(detectImage(".versions 8.0"), ImageKind::Unknown);
  EXPECT_EQ(detectImage("// nvcc\n.version\t8.0"), ImageKind::PtxText);
  EXPECT_EQ(detectImageBytes(bytes("\x50\xed\x55\xba"), 3), ImageKind::Unknown);
  EXPECT_EQ(detectImageBytes(bytes("\x50\xed\x55\xba"), 4), ImageKind::FatbinContainer);
  Result<ImageContents> r = readImage("garbage", 75);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::InvalidImage);
  EXPECT_TRUE(contains(r.error().message, "unrecognised image")) << r.error().message;
  Result<ImageContents> empty = readImageBytes(nullptr, 0, 75);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, ErrorCode::InvalidImage);
}

TEST(FatbinText, NoPtxMessageListsArchs) {
  EXPECT_EQ(noPtxMessage("k", {75, 86}),
            "kernel 'k' has no PTX in this binary (it carries only SASS for sm_75, sm_86); "
            "Rocuda compiles PTX: rebuild with -gencode arch=compute_75,code=compute_75 (or add "
            "it next to your -arch)");
  EXPECT_TRUE(contains(noPtxMessage("k", {}), "no SASS either"));
}

// --- Synthetic containers -------------------------------------------------------------------

TEST(FatbinSynthetic, OldIsaAndEveryCompression) {
  for (Compression comp :
       {Compression::None, Compression::Lz4, Compression::Zstd, Compression::ZstdNoContentSize}) {
    std::string ptx = test::samplePtx("old", "6.4", 52);
    Bytes c = test::buildContainer({{1, 52, ptx, comp, 6, 4}});
    ImageContents r = mustRead(c, 86);
    ASSERT_EQ(r.ptx.size(), 1u);
    EXPECT_EQ(r.ptx[0].text, ptx);
    EXPECT_EQ(r.ptx[0].arch, 52u);
    EXPECT_EQ(r.ptx[0].isaMajor, 6u);
    EXPECT_EQ(r.ptx[0].isaMinor, 4u);
    EXPECT_TRUE(r.sassArchs.empty());
  }
}

TEST(FatbinSynthetic, ConcatenatedContainersAreUnits) {
  Bytes a = test::buildContainer({{1, 75, test::samplePtx("a"), Compression::Zstd}});
  Bytes b = test::buildContainer({{2, 80, "ELF!ELF!", Compression::None},
                                  {1, 80, test::samplePtx("b", "9.0", 80), Compression::Lz4}});
  Bytes both = a;
  both.resize(both.size() + 16, 0);  // padding as in a section
  both.insert(both.end(), b.begin(), b.end());
  ImageContents r = mustRead(both, 86);
  ASSERT_EQ(r.ptx.size(), 2u);
  EXPECT_TRUE(contains(r.ptx[0].text, ".entry a"));
  EXPECT_TRUE(contains(r.ptx[1].text, ".entry b"));
  EXPECT_EQ(r.sassArchs, std::vector<uint32_t>{80});
  // Bytes after a container that are not a container are an error.
  both.push_back(0x42);
  Result<ImageContents> bad = readImageBytes(both.data(), both.size(), 86);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidImage);
}

TEST(FatbinSynthetic, UnknownEntryKindsAreSkipped) {
  Bytes c = test::buildContainer({{8, 75, "nvvm-ir-ish", Compression::None},
                                  {1, 75, test::samplePtx("k"), Compression::None}});
  ImageContents r = mustRead(c, 75);
  ASSERT_EQ(r.ptx.size(), 1u);
  EXPECT_TRUE(r.sassArchs.empty());
  EXPECT_TRUE(r.ltoIrOnly.empty());  // LTO-IR beside PTX: the PTX is what Rocuda links
}

TEST(FatbinSynthetic, LtoIrWithoutPtxIsReported) {
  Bytes c = test::buildContainer({{8, 90, "lto-ir-ish", Compression::None},
                                  {8, 80, "lto-ir-ish", Compression::None},
                                  {2, 80, "sass-ish", Compression::None}});
  ImageContents r = mustRead(c, 86);
  EXPECT_TRUE(r.ptx.empty());
  ASSERT_EQ(r.ltoIrOnly.size(), 1u);
  EXPECT_NE(r.ltoIrOnly[0].find("LTO-IR lto_80"), std::string::npos) << r.ltoIrOnly[0];
}

TEST(FatbinSynthetic, EmptyContainerHasNothing) {
  Bytes c = test::buildContainer({});
  ImageContents r = mustRead(c, 75);
  EXPECT_TRUE(r.ptx.empty());
  EXPECT_TRUE(r.sassArchs.empty());
}

// An ar archive as GNU ar writes it: magic, then 60-byte headers (name, 12 bytes of mtime,
// uid, gid, mode, decimal size, "`\n") and members padded to even offsets.
struct ArMember {
  std::string name;  // as it appears in the header ("/", "//", "x.o/", "/0")
  Bytes bytes;
};

Bytes buildArchive(const std::vector<ArMember>& members) {
  std::string out = "!<arch>\n";
  for (const ArMember& m : members) {
    char header[61];
    std::snprintf(header, sizeof header, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", m.name.c_str(), "0",
                  "0", "0", "644", m.bytes.size());
    out.append(header, 60);
    out.append(m.bytes.begin(), m.bytes.end());
    if (m.bytes.size() % 2) out += '\n';
  }
  return Bytes(out.begin(), out.end());
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

TEST(FatbinArchive, MembersWithShortAndLongNamesGiveTheirPtx) {
  LOAD_INPUT(object, "kernels.o");
  LOAD_INPUT(cubin, "kernels.cubin");
  std::string longName = "kernels_object_with_a_long_name.o";
  Bytes archive = buildArchive({{"/", Bytes(8, 0)},
                                {"//", text(longName + "/\n")},
                                {"/0", object},
                                {"notes.txt/", text("not device code")},
                                {"sass.cubin/", cubin}});
  ASSERT_TRUE(isArchive(archive.data(), archive.size()));
  Result<ImageContents> c = readArchive(archive.data(), archive.size(), 86);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->ptx.size(), 1u);  // the cubin carries SASS only, the text file nothing
  expectKernelsPtx(c->ptx[0]);
  EXPECT_EQ(c->ptx[0].name.rfind(longName + ": ", 0), 0u) << c->ptx[0].name;
  EXPECT_EQ(c->sassArchs, (std::vector<uint32_t>{75, 86}));
}

TEST(FatbinArchive, CorruptArchivesAreErrors) {
  Bytes good = buildArchive({{"a.txt/", text("abc")}});
  ASSERT_TRUE(readArchive(good.data(), good.size(), 86).ok());
  EXPECT_FALSE(isArchive(good.data(), 7));
  Bytes notArchive = text(".version 9.0\n");
  EXPECT_FALSE(isArchive(notArchive.data(), notArchive.size()));
  EXPECT_FALSE(readArchive(notArchive.data(), notArchive.size(), 86).ok());

  auto expectError = [](Bytes bytes, const std::string& part) {
    Result<ImageContents> r = readArchive(bytes.data(), bytes.size(), 86);
    ASSERT_FALSE(r.ok()) << part;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidImage);
    EXPECT_TRUE(contains(r.error().message, part)) << r.error().message;
  };
  Bytes truncated(good.begin(), good.begin() + 8 + 30);
  expectError(truncated, "truncated in a member header");
  Bytes badTerminator = good;
  badTerminator[8 + 58] = 'x';
  expectError(badTerminator, "corrupt archive member header");
  Bytes badSize = good;
  badSize[8 + 48] = 'z';
  expectError(badSize, "corrupt archive member header");
  Bytes pastEnd = good;
  pastEnd[8 + 48] = '9';
  pastEnd[8 + 49] = '9';
  expectError(pastEnd, "past the end of the archive");
  // A member that looks like ELF but is not a valid one names the member.
  Bytes elf = text("\x7f" "ELF");
  elf.resize(64, 0);
  expectError(buildArchive({{"broken.o/", elf}}), "archive member broken.o");
}

}  // namespace
}  // namespace rocuda::fatbin
