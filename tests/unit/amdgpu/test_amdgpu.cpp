// Code objects for every AMD target, checked with LLVM's own tools: ELF header, HSA metadata
// (target, kernels, wave size, kernel-argument layout, LDS size), symbols, no undefined symbols,
// clean disassembly. Expected kernel layouts come from the host compilation of the same PTX.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "compiler/amdgpu/amdgpu_codegen.h"
#include "compiler/compiler.h"
#include "ptx/link.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace rocuda::compiler {
namespace {

struct ToolOutput {
  int status = -1;
  std::string text;
};

ToolOutput runTool(const std::string& command) {
  ToolOutput out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.text.append(buffer, n);
  out.status = pclose(pipe);
  return out;
}

std::string tool(const char* name) { return std::string(ROCUDA_LLVM_TOOLS) + "/" + name; }

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string writeTemp(const std::vector<uint8_t>& bytes, const std::string& name) {
  std::string path =
      testing::TempDir() + "rocuda_amdgpu_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

// One kernel's entry of the HSA metadata, as llvm-readelf --notes prints it (YAML).
struct KernelArg {
  uint64_t offset = 0, size = 0;
  std::string valueKind;
};
struct KernelMeta {
  std::map<std::string, std::string> fields;  // ".name" -> "...", ...
  std::vector<KernelArg> explicitArgs;        // hidden_* arguments left out
};

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Kernels start with "  - ", their arguments with "      - "; fields are ".key: value".
std::vector<KernelMeta> parseKernels(const std::string& notes, std::string& target) {
  std::vector<KernelMeta> kernels;
  std::vector<KernelArg> args;
  auto flushArgs = [&] {
    for (const auto& a : args)
      if (a.valueKind.rfind("hidden_", 0) != 0) kernels.back().explicitArgs.push_back(a);
    args.clear();
  };
  std::istringstream in(notes);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("amdhsa.target:", 0) == 0) target = trim(line.substr(14));
    bool newKernel = line.rfind("  - .", 0) == 0, newArg = line.rfind("      - .", 0) == 0;
    if (newKernel) {
      if (!kernels.empty()) flushArgs();
      kernels.emplace_back();
    }
    if (newArg) args.emplace_back();
    size_t dot = line.find('.'), colon = line.find(':');
    if (kernels.empty() || dot == std::string::npos || colon == std::string::npos) continue;
    std::string key = line.substr(dot, colon - dot), value = trim(line.substr(colon + 1));
    bool inArg = !args.empty() && line.size() > 8 && line.rfind("        ", 0) == 0;
    if ((newArg || inArg) && !args.empty()) {
      if (key == ".offset") args.back().offset = std::stoull(value);
      if (key == ".size") args.back().size = std::stoull(value);
      if (key == ".value_kind") args.back().valueKind = value;
    } else if (!newArg && line.rfind("    .", 0) == 0) {
      kernels.back().fields[key] = value;
    } else if (newKernel) {
      kernels.back().fields[key] = value;
    }
  }
  if (!kernels.empty()) flushArgs();
  return kernels;
}

// The line of llvm-readelf's symbol table naming `symbol`, or "".
std::string symbolLine(const std::string& text, const std::string& symbol) {
  std::istringstream in(text);
  std::string line, suffix = " " + symbol;
  while (std::getline(in, line))
    if (line.size() > suffix.size() &&
        line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0)
      return line;
  return "";
}

// The kernels' layout as the host path sees it (the same translation).
const ModuleInfo& hostInfo(const std::string& program, const std::string& ptx) {
  static std::map<std::string, ModuleInfo> cache;
  auto it = cache.find(program);
  if (it != cache.end()) return it->second;
  auto host = compileForHost(ptx, program, CompileOptions{});
  EXPECT_TRUE(host.ok()) << host.error().message;
  return cache[program] = host.ok() ? host->info : ModuleInfo{};
}

std::vector<std::string> programs() {
  std::vector<std::string> out;
  std::stringstream list(ROCUDA_AMDGPU_PROGRAMS);
  std::string name;
  while (std::getline(list, name, ','))
    if (!name.empty()) out.push_back(name);
  return out;
}

void checkElfHeader(const std::vector<uint8_t>& co, int codeObjectVersion) {
  ASSERT_GT(co.size(), 64u);
  EXPECT_EQ(std::string(co.begin(), co.begin() + 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(co[4], 2);                      // ELFCLASS64
  EXPECT_EQ(co[7], 64);                     // ELFOSABI_AMDGPU_HSA
  EXPECT_EQ(co[8], codeObjectVersion - 2);  // ELFABIVERSION_AMDGPU_HSA_V4 = 2, V5 = 3
  EXPECT_EQ(co[16] | (co[17] << 8), 3);     // ET_DYN: an executable (shared) code object
  EXPECT_EQ(co[18] | (co[19] << 8), 224);   // EM_AMDGPU
}

// Everything one code object must satisfy for `info` on `processor`.
void checkCodeObject(const std::vector<uint8_t>& co, const ModuleInfo& info,
                     const std::string& processor, const std::string& name) {
  std::string path = writeTemp(co, name + "." + processor + ".co");
  ToolOutput notes = runTool(tool("llvm-readelf") + " --notes --symbols " + path);
  ASSERT_EQ(notes.status, 0) << notes.text;
  // One metadata note for the whole code object (partitions' notes are merged).
  size_t metadataNotes = 0;
  for (size_t at = notes.text.find("NT_AMDGPU_METADATA"); at != std::string::npos;
       at = notes.text.find("NT_AMDGPU_METADATA", at + 1))
    ++metadataNotes;
  EXPECT_EQ(metadataNotes, 1u) << notes.text;
  std::string target;
  std::vector<KernelMeta> kernels = parseKernels(notes.text, target);
  EXPECT_EQ(target, "amdgcn-amd-amdhsa--" + processor);
  ASSERT_EQ(kernels.size(), info.kernels.size()) << notes.text;
  int wave = amdgpuWavefrontSize(processor);
  for (const KernelInfo& k : info.kernels) {
    SCOPED_TRACE(k.name);
    const KernelMeta* meta = nullptr;
    for (const auto& m : kernels)
      if (m.fields.count(".name") && m.fields.at(".name") == k.name) meta = &m;
    ASSERT_NE(meta, nullptr) << notes.text;
    EXPECT_EQ(meta->fields.at(".symbol"), k.name + ".kd");
    EXPECT_EQ(meta->fields.at(".wavefront_size"), std::to_string(wave));
    // LDS covers the window's static part; sm_80's reserved region only where the kernel
    // touches shared memory (reading %reserved_smem_offset_* alone needs no LDS).
    EXPECT_GE(std::stoull(meta->fields.at(".group_segment_fixed_size")),
              k.staticSharedBytes - (k.usesReservedShared ? kReservedSharedBytes : 0u));
    // The PTX parameters at CUDA's offsets, then the launch registers of a kernel that reads
    // them (AmdgpuLaunchRegisters, 24 bytes, 8-aligned).
    ASSERT_EQ(meta->explicitArgs.size(), k.params.size() + (k.readsLaunchRegisters ? 1 : 0));
    for (size_t i = 0; i < k.params.size(); ++i) {
      EXPECT_EQ(meta->explicitArgs[i].offset, k.params[i].offset) << "param " << i;
      EXPECT_EQ(meta->explicitArgs[i].size, k.params[i].size) << "param " << i;
      EXPECT_EQ(meta->explicitArgs[i].valueKind, "by_value") << "param " << i;
    }
    if (k.readsLaunchRegisters) {
      EXPECT_EQ(meta->explicitArgs.back().size, sizeof(AmdgpuLaunchRegisters));
      EXPECT_EQ(meta->explicitArgs.back().offset % 8, 0u);
      EXPECT_EQ(meta->explicitArgs.back().valueKind, "by_value");
    }
    EXPECT_NE(symbolLine(notes.text, k.name).find(" FUNC "), std::string::npos);
    EXPECT_NE(symbolLine(notes.text, k.name + ".kd").find(" OBJECT "), std::string::npos);
  }
  // hipModuleGetGlobal finds __device__ and __constant__ variables by name.
  for (const GlobalInfo& g : info.globals)
    EXPECT_NE(symbolLine(notes.text, g.name).find(" OBJECT  GLOBAL "), std::string::npos) << g.name;
  ToolOutput undefined = runTool(tool("llvm-nm") + " -u " + path);
  EXPECT_EQ(undefined.status, 0);
  EXPECT_EQ(undefined.text, "");
  ToolOutput disassembly =
      runTool(tool("llvm-objdump") + " -d --mcpu=" + processor + " " + path + " > /dev/null");
  EXPECT_EQ(disassembly.status, 0) << disassembly.text;
  EXPECT_EQ(disassembly.text.find("warning"), std::string::npos) << disassembly.text;
  std::filesystem::remove(path);
}

// `ptx` compiled for every supported processor, each code object passing every check.
void compilesForEveryTarget(const std::string& ptx, const std::string& name) {
  for (const auto& processor : supportedAmdgpuProcessors()) {
    SCOPED_TRACE(processor);
    auto co = compileForAmdgpu(ptx, name, AmdgpuTarget{processor, "", 5});
    ASSERT_TRUE(co.ok()) << co.error().message;
    checkElfHeader(co->output, 5);
    checkCodeObject(co->output, co->info, processor, name);
  }
}

class AmdgpuProgram : public testing::TestWithParam<std::string> {};

TEST_P(AmdgpuProgram, CompilesForEveryTarget) {
  const std::string& program = GetParam();
  std::string ptx = readFile(std::string(ROCUDA_AMDGPU_PTX_DIR) + "/" + program + ".ptx");
  ASSERT_FALSE(ptx.empty());
  const ModuleInfo& info = hostInfo(program, ptx);
  ASSERT_FALSE(info.kernels.empty());
  compilesForEveryTarget(ptx, program);
}

// The kernels of `co` by name, from its metadata note, and the size of its printf format table
// ("" if it has none).
struct CodeObjectSummary {
  std::map<std::string, KernelMeta> kernels;
  std::string printfFormatsSize;
};
CodeObjectSummary summarize(const std::vector<uint8_t>& co, const std::string& name) {
  std::string path = writeTemp(co, name);
  ToolOutput notes = runTool(tool("llvm-readelf") + " --notes --symbols " + path);
  std::filesystem::remove(path);
  EXPECT_EQ(notes.status, 0) << notes.text;
  std::string target;
  CodeObjectSummary summary;
  for (KernelMeta& k : parseKernels(notes.text, target))
    summary.kernels[k.fields[".name"]] = std::move(k);
  std::istringstream symbol(symbolLine(notes.text, kAmdgpuPrintfFormatsSymbol));
  std::string index, value;
  symbol >> index >> value >> summary.printfFormatsSize;
  return summary;
}

// Large modules compile as partitions of their kernels on several threads
// (partition_kernels.cpp); forced here on every program with two kernels or more. The linked code
// object passes every check, and describes each kernel exactly as the whole-module compile does:
// the same argument layout and the same registers, LDS and scratch (each partition holds all of its
// kernels' code), and one printf format table as large as the whole module's. The same partitions
// link to the same bytes every time.
TEST_P(AmdgpuProgram, CompilesInPartitions) {
  const std::string& program = GetParam();
  std::string ptx = readFile(std::string(ROCUDA_AMDGPU_PTX_DIR) + "/" + program + ".ptx");
  const ModuleInfo& info = hostInfo(program, ptx);
  AmdgpuCompileOptions whole, split;
  whole.threads = 1;
  split.threads = 3;
  split.minimumInstructionsToPartition = 0;
  size_t expected = std::min<size_t>(3, info.kernels.size());
  for (const char* processor : {"gfx1100", "gfx90a"}) {
    SCOPED_TRACE(processor);
    AmdgpuTarget target{processor, "", 5};
    auto parts = compileForAmdgpu(ptx, program, target, split);
    ASSERT_TRUE(parts.ok()) << parts.error().message;
    EXPECT_EQ(parts->partitions, expected);
    checkCodeObject(parts->output, parts->info, processor, program + ".parts");
    auto reference = compileForAmdgpu(ptx, program, target, whole);
    ASSERT_TRUE(reference.ok()) << reference.error().message;
    EXPECT_EQ(reference->partitions, 1u);
    CodeObjectSummary fromParts = summarize(parts->output, program + ".parts.co");
    CodeObjectSummary fromWhole = summarize(reference->output, program + ".whole.co");
    ASSERT_EQ(fromParts.kernels.size(), fromWhole.kernels.size());
    for (const auto& [name, meta] : fromWhole.kernels) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(fromParts.kernels.count(name));
      // The one LDS window of a code unit is sized for its largest kernel, so a kernel's
      // group segment depends on which kernels share its partition (checkCodeObject above
      // holds each to its own static shared memory); everything else must be identical.
      auto partFields = fromParts.kernels[name].fields, wholeFields = meta.fields;
      partFields.erase(".group_segment_fixed_size");
      wholeFields.erase(".group_segment_fixed_size");
      EXPECT_EQ(partFields, wholeFields);
    }
    // The partitions agree on one table holding every format once.
    EXPECT_EQ(fromParts.printfFormatsSize, fromWhole.printfFormatsSize);
    if (std::string(processor) == "gfx1100") {
      auto again = compileForAmdgpu(ptx, program, target, split);
      ASSERT_TRUE(again.ok());
      EXPECT_TRUE(again->output == parts->output);
    }
  }
}

// Relocatable device code (-rdc=true): translation units that call each other's functions
// (directly and through a table of function pointers) and use each other's __device__ and
// __constant__ variables, linked at the PTX level as the loader links them, compile into one code
// object whose kernels and variables pass every check.
TEST(AmdgpuPtx, LinkedTranslationUnitsCompileAsOneCodeObject) {
  std::vector<ptx::Module> units;
  std::stringstream list(ROCUDA_AMDGPU_RDC_UNITS);
  std::string name;
  bool refersToAnotherUnit = false;
  while (std::getline(list, name, ',')) {
    std::string text = readFile(std::string(ROCUDA_AMDGPU_PTX_DIR) + "/" + name);
    ASSERT_FALSE(text.empty()) << name;
    refersToAnotherUnit |= text.find(".extern") != std::string::npos;
    ptx::ParseResult parsed = ptx::parseModule(text, name);
    ASSERT_FALSE(parsed.hasErrors()) << parsed.formatDiagnostics();
    units.push_back(std::move(parsed.module));
  }
  if (units.empty()) GTEST_SKIP() << "no nvcc: no relocatable PTX";
  ASSERT_EQ(units.size(), 2u);
  EXPECT_TRUE(refersToAnotherUnit);
  ptx::LinkResult linked = ptx::linkModules(std::move(units));
  ASSERT_TRUE(linked.ok()) << linked.errors.front();
  std::string ptx = ptx::printModule(linked.module);
  const ModuleInfo& info = hostInfo("separable_compilation.linked", ptx);
  ASSERT_FALSE(info.kernels.empty());
  ASSERT_FALSE(info.globals.empty());
  compilesForEveryTarget(ptx, "separable_compilation.linked");
}

INSTANTIATE_TEST_SUITE_P(E2e, AmdgpuProgram, testing::ValuesIn(programs()),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AmdgpuProgram);

// ---- hand-written PTX ----

constexpr const char* kSharedPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.extern .shared .align 16 .b8 dyn[];
.visible .entry staged(.param .u8 flag, .param .align 16 .b8 blob[24], .param .u64 out)
{
  .shared .align 4 .b8 tile[1000];
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [blob+4];
  mov.u32 %r2, %tid.x;
  mov.u32 %r6, %ntid.x;
  mov.u32 %r7, %nctaid.x;
  shl.b32 %r3, %r2, 2;
  mov.u32 %r4, tile;
  add.s32 %r4, %r4, %r3;
  st.shared.u32 [%r4], %r1;
  mov.u32 %r5, dyn;
  add.s32 %r5, %r5, %r3;
  st.shared.u32 [%r5], %r6;
  bar.sync 0;
  ld.shared.u32 %r1, [%r4+4];
  add.s32 %r1, %r1, %r7;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r1;
  ret;
}
)";

// A PTX module calling `body` from a kernel with one pointer parameter.
std::string kernelWith(const std::string& declarations, const std::string& body) {
  return ".version 7.0\n.target sm_75\n.address_size 64\n" + declarations +
         "\n.visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n"
         ".reg .pred %p<4>;\n" +
         body + "\nret;\n}\n";
}

TEST(AmdgpuPtx, KernelArgumentsFollowCudaLayout) {
  ModuleInfo info = hostInfo("shared", kSharedPtx);
  ASSERT_EQ(info.kernels.size(), 1u);
  const KernelInfo& k = info.kernels[0];
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[1].offset, 16u);  // .align 16 after a byte
  EXPECT_EQ(k.params[2].offset, 40u);
  EXPECT_GE(k.staticSharedBytes, 1000u);
  for (const char* processor : {"gfx1100", "gfx90a", "gfx1201"}) {
    SCOPED_TRACE(processor);
    auto co = compileForAmdgpu(kSharedPtx, "shared", AmdgpuTarget{processor, "", 5});
    ASSERT_TRUE(co.ok()) << co.error().message;
    checkCodeObject(co->output, info, processor, "shared");
    std::string path = writeTemp(co->output, std::string("shared_dis.") + processor);
    ToolOutput dis = runTool(tool("llvm-objdump") + " -d --mcpu=" + processor + " " + path);
    std::filesystem::remove(path);
    // bar.sync 0 is the hardware work-group barrier (split into signal/wait on gfx12).
    EXPECT_NE(dis.text.find("s_barrier"), std::string::npos);
    // Shared memory is LDS, reached with ds_* instructions rather than flat ones.
    EXPECT_NE(dis.text.find("ds_"), std::string::npos);
  }
}

TEST(AmdgpuPtx, CodeObjectVersions) {
  for (int version : {4, 5}) {
    auto co = compileForAmdgpu(kSharedPtx, "shared", AmdgpuTarget{"gfx942", "+sramecc", version});
    ASSERT_TRUE(co.ok()) << co.error().message;
    checkElfHeader(co->output, version);
    std::string path = writeTemp(co->output, "version.co");
    ToolOutput notes = runTool(tool("llvm-readelf") + " --notes " + path);
    std::filesystem::remove(path);
    // amdhsa.version 1.1 is code object v4, 1.2 is v5.
    EXPECT_NE(notes.text.find("amdhsa.version:\n  - 1\n  - " + std::to_string(version - 3)),
              std::string::npos)
        << notes.text;
  }
  auto bad = compileForAmdgpu(kSharedPtx, "shared", AmdgpuTarget{"gfx942", "", 3});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidValue);
}

// Two kernels sharing a function, a variable and a constant table.
constexpr const char* kTwoKernelsPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .global .align 4 .u32 counter;
.const .align 4 .b32 table[4] = {1, 2, 3, 4};
.func (.param .b32 r) scale(.param .b32 x)
{
  .reg .b32 %r<4>;
  ld.param.b32 %r1, [x];
  ld.const.u32 %r2, [table+4];
  mul.lo.u32 %r3, %r1, %r2;
  st.param.b32 [r], %r3;
  ret;
}
.visible .entry first(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  {
  .param .b32 a;
  .param .b32 b;
  st.param.b32 [a], %r1;
  call.uni (b), scale, (a);
  ld.param.b32 %r2, [b];
  }
  atom.global.add.u32 %r3, [counter], %r2;
  st.global.u32 [%rd1], %r3;
  ret;
}
.visible .entry second(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  ld.global.u32 %r1, [counter];
  {
  .param .b32 a;
  .param .b32 b;
  st.param.b32 [a], %r1;
  call.uni (b), scale, (a);
  ld.param.b32 %r2, [b];
  }
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

// The same kernels, one calling `scale` through a function pointer.
std::string twoKernelsOneIndirect() {
  std::string ptx = kTwoKernelsPtx;
  std::string direct = "call.uni (b), scale, (a);";
  size_t at = ptx.rfind(direct);
  ptx.replace(at, direct.size(),
              "prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);\n"
              "  mov.u64 %rd2, scale;\n  call (b), %rd2, (a), prototype_0;");
  return ptx;
}

TEST(AmdgpuPtx, PartitionsOnlyWhatItCan) {
  AmdgpuTarget target{"gfx1100", "", 5};
  ModuleInfo info = hostInfo("two_kernels", kTwoKernelsPtx);
  ASSERT_EQ(info.kernels.size(), 2u);
  AmdgpuCompileOptions forced;
  forced.threads = 4;
  forced.minimumInstructionsToPartition = 0;
  auto parts = compileForAmdgpu(kTwoKernelsPtx, "two_kernels", target, forced);
  ASSERT_TRUE(parts.ok()) << parts.error().message;
  EXPECT_EQ(parts->partitions, 2u);  // no more partitions than kernels
  checkCodeObject(parts->output, info, "gfx1100", "two_kernels");

  AmdgpuCompileOptions byDefault;
  byDefault.threads = 4;
  auto small = compileForAmdgpu(kTwoKernelsPtx, "two_kernels", target, byDefault);
  ASSERT_TRUE(small.ok()) << small.error().message;
  EXPECT_EQ(small->partitions, 1u);  // far under the size worth partitioning

  AmdgpuCompileOptions oneThread = forced;
  oneThread.threads = 1;
  auto serial = compileForAmdgpu(kTwoKernelsPtx, "two_kernels", target, oneThread);
  ASSERT_TRUE(serial.ok()) << serial.error().message;
  EXPECT_EQ(serial->partitions, 1u);

  // A function whose address is taken may be called from any kernel: compiled whole.
  std::string indirect = twoKernelsOneIndirect();
  ModuleInfo indirectInfo = hostInfo("two_kernels_indirect", indirect);
  auto whole = compileForAmdgpu(indirect, "two_kernels_indirect", target, forced);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(whole->partitions, 1u);
  checkCodeObject(whole->output, indirectInfo, "gfx1100", "two_kernels_indirect");

  // Assembly and IR come from the whole module.
  AmdgpuCompileOptions assembly = forced;
  assembly.output = AmdgpuOutput::Assembly;
  auto text = compileForAmdgpu(kTwoKernelsPtx, "two_kernels", target, assembly);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(text->partitions, 1u);
}

TEST(AmdgpuPtx, RejectsWhatItCannotLower) {
  struct Case {
    std::string ptx, mustName;
  } cases[] = {
      // The result of a printf whose format is known only at run time: its argument count
      // would need the format parsed on the device (the call itself is recorded by address).
      {kernelWith(".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);",
                  "{\n.param .b64 f;\n.param .b64 a;\n.param .b32 r;\nld.param.u64 %rd1, [p];\n"
                  "st.param.b64 [f], %rd1;\nst.param.b64 [a], 0;\ncall.uni (r), vprintf, (f, a);\n"
                  "ld.param.b32 %r1, [r];\n}\nst.global.u32 [%rd1], %r1;"),
       "result of a printf"},
      // A 128-bit atomic exchange (sm_90's atomicExch on a 16-byte type).
      {".version 8.3\n.target sm_90" +
           kernelWith("",
                      ".reg .b128 %q<3>;\nld.param.u64 %rd1, [p];\n"
                      "mov.b128 %q1, {%rd1, %rd1};\n"
                      "atom.global.exch.b128 %q2, [%rd1], %q1;")
               .substr(std::string(".version 7.0\n.target sm_75").size()),
       "128-bit atomics"},
      // A driver call of NVIDIA's device runtime library other than launches, streams, events
      // and the last error (cudaDeviceGetLimit's): the CPU device's runtime only.
      {kernelWith(".extern .func (.param .b32 r) __cuda_syscall_cnpv2GetLimit(.param .b64 "
                  "v, .param .b32 l);",
                  "{\n.param .b64 v;\n.param .b32 l;\n.param .b32 r;\nst.param.b64 [v], 0;\n"
                  "st.param.b32 [l], 0;\ncall.uni (r), __cuda_syscall_cnpv2GetLimit, (v, "
                  "l);\n}"),
       "__cuda_syscall_cnpv2GetLimit"},
  };
  for (const auto& c : cases) {
    auto co = compileForAmdgpu(c.ptx, "bad", AmdgpuTarget{"gfx1100", "", 5});
    ASSERT_FALSE(co.ok()) << c.ptx;
    EXPECT_EQ(co.error().code, ErrorCode::UnsupportedPtx) << co.error().message;
    EXPECT_NE(co.error().message.find(c.mustName), std::string::npos) << co.error().message;
  }
}

TEST(AmdgpuPtx, ReportsBadInput) {
  auto invalid = compileForAmdgpu("this is not PTX", "junk", AmdgpuTarget{"gfx1100", "", 5});
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().code, ErrorCode::InvalidPtx);
  auto target = compileForAmdgpu(kSharedPtx, "shared", AmdgpuTarget{"gfx803", "", 5});
  ASSERT_FALSE(target.ok());
  EXPECT_EQ(target.error().code, ErrorCode::InvalidValue);
}

}  // namespace
}  // namespace rocuda::compiler
