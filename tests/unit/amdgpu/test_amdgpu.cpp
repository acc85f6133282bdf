// Code objects for every AMD target, checked with LLVM's own tools: ELF header, HSA metadata
// (target, kernels, wave size, kernel-argument layout, LDS size), symbols, no undefined symbols,
// clean disassembly. Expected kernel layouts come from the host compilation of the same PTX.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "compiler/amdgpu/amdgpu_codegen.h"
#include "compiler/compiler.h"

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
  std::string path = testing::TempDir() + "rocuda_amdgpu_" + name;
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
    EXPECT_GE(std::stoull(meta->fields.at(".group_segment_fixed_size")), k.staticSharedBytes);
    ASSERT_EQ(meta->explicitArgs.size(), k.params.size());
    for (size_t i = 0; i < k.params.size(); ++i) {
      EXPECT_EQ(meta->explicitArgs[i].offset, k.params[i].offset) << "param " << i;
      EXPECT_EQ(meta->explicitArgs[i].size, k.params[i].size) << "param " << i;
      EXPECT_EQ(meta->explicitArgs[i].valueKind, "by_value") << "param " << i;
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

class AmdgpuProgram : public testing::TestWithParam<std::string> {};

TEST_P(AmdgpuProgram, CompilesForEveryTarget) {
  const std::string& program = GetParam();
  std::string ptx = readFile(std::string(ROCUDA_AMDGPU_PTX_DIR) + "/" + program + ".ptx");
  ASSERT_FALSE(ptx.empty());
  const ModuleInfo& info = hostInfo(program, ptx);
  ASSERT_FALSE(info.kernels.empty());
  for (const auto& processor : supportedAmdgpuProcessors()) {
    SCOPED_TRACE(processor);
    auto co = compileForAmdgpu(ptx, program, AmdgpuTarget{processor, "", 5});
    ASSERT_TRUE(co.ok()) << co.error().message;
    checkElfHeader(co->output, 5);
    checkCodeObject(co->output, info, processor, program);
  }
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

TEST(AmdgpuPtx, RejectsWhatItCannotLower) {
  struct Case {
    std::string ptx, mustName;
  } cases[] = {
      // A format that is not a string constant of the module: its layout is unknown.
      {kernelWith(
           ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);",
           "{\n.param .b64 f;\n.param .b64 a;\n.param .b32 r;\nld.param.u64 %rd1, [p];\n"
           "st.param.b64 [f], %rd1;\nst.param.b64 [a], 0;\ncall.uni (r), vprintf, (f, a);\n}"),
       "not a string constant"},
      {kernelWith(".extern .func (.param .b64 r) malloc(.param .b64 s);",
                  "{\n.param .b64 s;\n.param .b64 r;\nst.param.b64 [s], 16;\n"
                  "call.uni (r), malloc, (s);\n}"),
       "malloc"},
      {kernelWith("", "bar.sync 1, 64;"), "barrier"},
      {kernelWith("",
                  "setp.eq.u32 %p1, %r1, 0;\nbar.red.popc.u32 %r2, 1, 64, %p1;\n"
                  "ld.param.u64 %rd1, [p];\nst.global.u32 [%rd1], %r2;"),
       "barrier"},
      {kernelWith("", "mov.u32 %r1, %smid;\nld.param.u64 %rd1, [p];\nst.global.u32 [%rd1], %r1;"),
       "__rocuda_sreg_smid"},
      // alloca() in device code with a run-time size (PTX ISA 7.3).
      {".version 7.3" + kernelWith("",
                                   "ld.param.u64 %rd1, [p];\nalloca.u64 %rd2, %rd1, 16;\n"
                                   "st.local.u32 [%rd2], 1;")
                            .substr(std::string(".version 7.0").size()),
       "alloca"},
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
