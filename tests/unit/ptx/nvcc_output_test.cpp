// Real nvcc output (generated at build time for several architectures): parses without a single
// diagnostic, round-trips through the printer, survives truncation, and has the expected content.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>

#include "generated_inputs.h"
#include "ptx/printer.h"
#include "ptx_test_util.h"

namespace rocuda::ptx {
namespace {

std::vector<std::string> generatedNames() {
  std::vector<std::string> names;
  for (const char* const* name = kGeneratedPtx; *name != nullptr; ++name) names.push_back(*name);
  return names;
}

std::string pathOf(const std::string& name) {
  return std::string(ROCUDA_PTX_TEST_DIR) + "/" + name + ".ptx";
}

// Loads and parses a generated file; skips the test when nvcc was not available.
struct Generated {
  std::string text;
  ParseResult result;
  bool load(const std::string& name) {
    if (!test::readFile(pathOf(name), text)) return false;
    result = parseModule(text, name + ".ptx");
    return true;
  }
};

#define LOAD_OR_SKIP(var, name)                        \
  Generated var;                                       \
  if (!var.load(name)) {                               \
    GTEST_SKIP() << "no nvcc output " << pathOf(name); \
  }                                                    \
  ASSERT_FALSE(var.result.hasErrors()) << var.result.formatDiagnostics()

class NvccOutput : public ::testing::TestWithParam<std::string> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NvccOutput);

TEST_P(NvccOutput, ParsesWithoutDiagnosticsAndRoundTrips) {
  Generated g;
  ASSERT_TRUE(g.load(GetParam())) << pathOf(GetParam());
  EXPECT_TRUE(g.result.diagnostics.empty()) << g.result.formatDiagnostics().substr(0, 4000);
  const Module& m = g.result.module;
  EXPECT_GE(m.versionMajor, 8u);
  ASSERT_FALSE(m.targets.empty());
  EXPECT_EQ(m.targets[0].substr(0, 3), "sm_");
  EXPECT_EQ(m.addressSize, 64u);
  size_t definitions = 0;
  for (const Function& f : m.functions) {
    if (f.isDeclaration) continue;
    ++definitions;
    EXPECT_FALSE(f.body.empty()) << f.name;
    for (const Statement& s : f.body) {
      if (s.kind() != Statement::Kind::Instruction) continue;
      for (const Operand& op : s.instruction.operands()) {
        if (op.kind == Operand::Kind::Register) {
          ASSERT_LT(op.reg(), f.registerCount());
        }
      }
    }
  }
  EXPECT_GT(definitions, 0u);
  std::string printed = printModule(m);
  ParseResult again = parseModule(printed, "printed.ptx");
  EXPECT_FALSE(again.hasErrors()) << again.formatDiagnostics().substr(0, 4000);
  EXPECT_EQ(printModule(again.module), printed);
}

TEST_P(NvccOutput, TruncatedPrefixesDoNotCrash) {
  Generated g;
  ASSERT_TRUE(g.load(GetParam()));
  // Every prefix of small files; evenly spaced prefixes of big ones (about 20 MB of parsing
  // per file at most, to bound the run time).
  size_t prefixes = std::clamp<size_t>(40'000'000 / std::max<size_t>(g.text.size(), 1), 50, 600);
  size_t step = g.text.size() <= 4096 ? 1 : g.text.size() / prefixes;
  size_t reported = 0;
  for (size_t length = 0; length < g.text.size(); length += step) {
    ParseResult r = parseModule(std::string_view(g.text).substr(0, length), "prefix.ptx");
    reported += r.hasErrors();
  }
  EXPECT_GT(reported, 0u);
}

TEST_P(NvccOutput, MutationsDoNotCrash) {
  Generated g;
  ASSERT_TRUE(g.load(GetParam()));
  int rounds = g.text.size() > 64 * 1024 ? 4 : 40;  // big files: prefixes cover them too
  std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>()(GetParam())));
  const char* const snippets[] = {"{", "}", ";", ",", "[", "]", "%r1", "@", "_", ".reg", "("};
  size_t reported = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string text = g.text;
    // At the end of a statement, so that a mutation hits code rather than a comment or the
    // whitespace between tokens (where it may be harmless, depending on the file's layout).
    size_t at = text.find(';', rng() % text.size());
    if (at == std::string::npos) at = rng() % text.size();
    if (round % 2 == 0)
      text.erase(at, 1 + rng() % 16);
    else
      text.insert(at, snippets[rng() % (sizeof(snippets) / sizeof(snippets[0]))]);
    reported += parseModule(text, "mutated.ptx").hasErrors();
  }
  EXPECT_GT(reported, 0u);
}

INSTANTIATE_TEST_SUITE_P(Generated, NvccOutput, ::testing::ValuesIn(generatedNames()),
                         [](const auto& info) { return info.param; });

// The printed module must be valid PTX for NVIDIA's assembler too: nothing the compiler needs
// was lost or changed by parsing.
class PrintedPtxas : public ::testing::TestWithParam<std::string> {};

TEST_P(PrintedPtxas, AssemblerAcceptsPrintedModule) {
#ifndef ROCUDA_PTXAS
  GTEST_SKIP() << "ptxas not available";
#else
  LOAD_OR_SKIP(g, GetParam());
  std::string printed = printModule(g.result.module);
  std::string path = std::string(ROCUDA_PTX_TEST_DIR) + "/printed_" + GetParam() + ".ptx";
  {
    std::ofstream out(path);
    out << printed;
  }
  const auto& targets = g.result.module.targets;
  ASSERT_FALSE(targets.empty());
  std::string command =
      std::string(ROCUDA_PTXAS) + " -c -arch=" + targets[0] + " " + path + " -o /dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
#endif
}

INSTANTIATE_TEST_SUITE_P(Generated, PrintedPtxas,
                         ::testing::Values("vector_add_sm_90", "reduction_sm_90", "atomics_sm_90",
                                           "device_functions_sm_90", "device_functions_rdc_sm_90",
                                           "constant_printf_sm_90", "math_sm_90", "half_bf16_sm_75",
                                           "half_bf16_sm_90", "warp_sm_75", "warp_sm_90",
                                           "misc_sm_90", "sm90_features_sm_90a", "cluster_sm_90",
                                           "dynamic_parallelism_sm_90", "tensor_cores_sm_80",
                                           "math_sm_120"),
                         [](const auto& info) { return info.param; });

// Counts the registers nvcc declares with `.reg .t %name<N>;`, independently of the parser.
size_t declaredRegisterCount(std::string_view text, std::string_view functionName) {
  size_t start = text.find(std::string(functionName) + "(");
  size_t end = text.find("\n}", start);
  size_t count = 0;
  for (size_t at = text.find(".reg", start); at < end; at = text.find(".reg", at + 1)) {
    size_t open = text.find('<', at), close = text.find('>', at), line = text.find('\n', at);
    if (open < line && close < line)
      count += std::stoul(std::string(text.substr(open + 1, close - open - 1)));
    else
      ++count;
  }
  return count;
}

const Instruction* findInstruction(const Function& f, Opcode opcode, StateSpace space) {
  for (const Statement& s : f.body)
    if (s.kind() == Statement::Kind::Instruction && s.instruction.opcode == opcode &&
        s.instruction.space == space)
      return &s.instruction;
  return nullptr;
}

TEST(NvccContent, VectorAdd) {
  for (const char* arch : {"sm_75", "sm_90", "sm_120"}) {
    LOAD_OR_SKIP(g, std::string("vector_add_") + arch);
    const Module& m = g.result.module;
    ASSERT_EQ(m.functions.size(), 1u);
    const Function& k = m.functions[0];
    EXPECT_EQ(k.name, "_Z9vectorAddPKfS0_Pfi");
    EXPECT_TRUE(k.isEntry);
    EXPECT_EQ(k.linkage, Linkage::Visible);
    ASSERT_EQ(k.params.size(), 4u);
    EXPECT_EQ(k.params[0].type, ScalarType::U64);
    EXPECT_EQ(k.params[3].type, ScalarType::U32);
    EXPECT_EQ(k.registerCount(), declaredRegisterCount(g.text, k.name));
    const Instruction* load = findInstruction(k, Opcode::ld, StateSpace::Global);
    ASSERT_NE(load, nullptr);
    EXPECT_EQ(test::toVector(load->types()), std::vector<ScalarType>{ScalarType::F32});
    ASSERT_EQ(load->operands().size(), 2u);
    EXPECT_EQ(load->operands()[1].address().baseKind, Address::BaseKind::Register);
    const Instruction* store = findInstruction(k, Opcode::st, StateSpace::Global);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->operands()[0].kind, Operand::Kind::Address);
    bool sawTid = false;
    for (const Statement& s : k.body)
      for (const Operand& op : s.instruction.operands())
        sawTid |= op.kind == Operand::Kind::SpecialRegister && op.special() == SpecialRegister::TidX;
    EXPECT_TRUE(sawTid);
  }
}

TEST(NvccContent, ReductionUsesSharedMemoryBarriersAndLaunchBounds) {
  LOAD_OR_SKIP(g, "reduction_sm_86");
  const Function* sum = g.result.module.findFunction("_Z9reduceSumPKfPfi");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->performance.maxntid, (std::vector<uint32_t>{256, 1, 1}));
  EXPECT_EQ(sum->performance.minnctapersm, 2u);
  ASSERT_EQ(sum->locals.size(), 1u);
  EXPECT_EQ(sum->locals[0].space, StateSpace::Shared);
  EXPECT_EQ(sum->locals[0].sizeInBytes(), 1024u);
  const Instruction* bar = findInstruction(*sum, Opcode::bar, StateSpace::None);
  ASSERT_NE(bar, nullptr);
  EXPECT_EQ(test::strings(bar->modifiers()), std::vector<std::string>{"sync"});
  const Variable* dynamic = g.result.module.findGlobal("dynamicShared");
  ASSERT_NE(dynamic, nullptr);
  EXPECT_EQ(dynamic->linkage, Linkage::Extern);
  EXPECT_EQ(dynamic->dims, std::vector<uint64_t>{0});
  EXPECT_EQ(dynamic->space, StateSpace::Shared);
}

TEST(NvccContent, AtomicsHaveOperationModifiers) {
  LOAD_OR_SKIP(g, "atomics_sm_90");
  std::set<std::string> seen;
  for (const Function& f : g.result.module.functions)
    for (const Statement& s : f.body)
      if (s.instruction.opcode == Opcode::atom && !s.instruction.types().empty())
        seen.insert(s.instruction.modifiers().empty() ? ""
                                                    : std::string(s.instruction.modifiers().back()) + "." +
                                                          scalarTypeName(s.instruction.types()[0]));
  for (const char* op : {"add.f32", "add.f64", "cas.b32", "cas.b64", "add.u64", "exch.b32",
                         "min.s32", "max.u32", "inc.u32", "dec.u32"})
    EXPECT_TRUE(seen.count(op)) << op;
}

TEST(NvccContent, DeviceFunctionsCallsAndPrototypes) {
  LOAD_OR_SKIP(g, "device_functions_sm_80");
  const Module& m = g.result.module;
  const Function* big = m.findFunction("_Z7makeBigf");
  ASSERT_NE(big, nullptr);
  EXPECT_FALSE(big->isEntry);
  ASSERT_EQ(big->returnParams.size(), 1u);
  EXPECT_EQ(big->returnParams[0].sizeInBytes(), 128u);
  const Function* kernel = m.findFunction("_Z9useParamsPf6Params3Big");
  ASSERT_NE(kernel, nullptr);
  ASSERT_EQ(kernel->params.size(), 3u);
  EXPECT_EQ(kernel->params[1].sizeInBytes(), 24u);
  EXPECT_EQ(kernel->params[2].sizeInBytes(), 128u);
  EXPECT_FALSE(kernel->callPrototypes.empty());
  size_t direct = 0, indirect = 0;
  for (const Statement& s : kernel->body) {
    if (s.instruction.opcode != Opcode::call) continue;
    const auto& ops = s.instruction.operands();
    if (ops.size() >= 2 && ops[1].kind == Operand::Kind::Symbol) ++direct;
    if (ops.size() == 4 && ops[1].kind == Operand::Kind::Register) ++indirect;
  }
  EXPECT_GE(direct, 3u);
  EXPECT_EQ(indirect, 1u);
  const Variable* ops = m.findGlobal("ops");
  ASSERT_NE(ops, nullptr);
  ASSERT_EQ(ops->initializer.size(), 2u);
  EXPECT_EQ(ops->initializer[0].kind(), InitializerElement::Kind::SymbolAddress);
}

TEST(NvccContent, ConstantsPrintfAndManaged) {
  LOAD_OR_SKIP(g, "constant_printf_sm_75");
  const Module& m = g.result.module;
  const Function* vprintf = m.findFunction("vprintf");
  ASSERT_NE(vprintf, nullptr);
  EXPECT_TRUE(vprintf->isDeclaration);
  EXPECT_EQ(vprintf->linkage, Linkage::Extern);
  const Variable* coefficients = m.findGlobal("coefficients");
  ASSERT_NE(coefficients, nullptr);
  EXPECT_EQ(coefficients->space, StateSpace::Const);
  EXPECT_EQ(coefficients->sizeInBytes(), 64u);
  const Variable* table = m.findGlobal("table");
  ASSERT_NE(table, nullptr);
  EXPECT_TRUE(table->hasInitializer);
  const Variable* managed = m.findGlobal("managedCounter");
  ASSERT_NE(managed, nullptr);
  EXPECT_TRUE(managed->managed);
  const Variable* names = m.findGlobal("names");
  ASSERT_NE(names, nullptr);
  ASSERT_EQ(names->initializer.size(), 2u);
  EXPECT_TRUE(names->initializer[0].generic());
}

TEST(NvccContent, MathIsLongAndUsesFloatModifiers) {
  LOAD_OR_SKIP(g, "math_sm_89");
  const Function* f = g.result.module.findFunction("_Z9mathFloatPfi");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->body.size(), 300u);
  EXPECT_EQ(f->registerCount(), declaredRegisterCount(g.text, f->name));
  bool approx = false, rn = false;
  for (const Statement& s : f->body) {
    approx |= s.instruction.hasModifier("approx");
    rn |= s.instruction.opcode == Opcode::fma && s.instruction.hasModifier("rn");
  }
  EXPECT_TRUE(approx);
  EXPECT_TRUE(rn);
}

TEST(NvccContent, HalfAndBfloat16Types) {
  LOAD_OR_SKIP(g, "half_bf16_sm_90");
  std::set<ScalarType> types;
  for (const Function& f : g.result.module.functions)
    for (const Statement& s : f.body)
      for (ScalarType t : s.instruction.types()) types.insert(t);
  EXPECT_TRUE(types.count(ScalarType::F16));
  EXPECT_TRUE(types.count(ScalarType::BF16) || types.count(ScalarType::BF16x2));
  EXPECT_TRUE(types.count(ScalarType::F16x2));
}

TEST(NvccContent, WarpShufflesAndVotes) {
  LOAD_OR_SKIP(g, "warp_sm_80");
  const Function* f = g.result.module.findFunction("_Z7warpOpsPiPKf");
  ASSERT_NE(f, nullptr);
  std::set<std::string> shfl;
  bool ballot = false;
  for (const Statement& s : f->body) {
    if (s.instruction.opcode == Opcode::shfl) shfl.emplace(s.instruction.modifiers()[1]);
    if (s.instruction.opcode == Opcode::vote) ballot |= s.instruction.hasModifier("ballot");
  }
  EXPECT_EQ(shfl, (std::set<std::string>{"down", "bfly", "idx", "up"}));
  bool warpSize = false;
  for (const Statement& s : f->body)
    for (const Operand& op : s.instruction.operands())
      warpSize |= op.kind == Operand::Kind::SpecialRegister &&
                  op.special() == SpecialRegister::WarpSize;
  EXPECT_TRUE(warpSize);
  EXPECT_TRUE(ballot);
}

TEST(NvccContent, MiscTexturesAndSpecialRegisters) {
  LOAD_OR_SKIP(g, "misc_sm_75");
  const Function* f = g.result.module.findFunction("_Z8specialsPjyi");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->performance.maxntid, (std::vector<uint32_t>{128, 1, 1}));
  std::set<SpecialRegister> specials;
  const Instruction* tex = nullptr;
  for (const Statement& s : f->body) {
    if (s.instruction.opcode == Opcode::tex && tex == nullptr) tex = &s.instruction;
    for (const Operand& op : s.instruction.operands())
      if (op.kind == Operand::Kind::SpecialRegister) specials.insert(op.special());
  }
  for (SpecialRegister r :
       {SpecialRegister::SmId, SpecialRegister::LaneId, SpecialRegister::Clock64,
        SpecialRegister::GlobalTimer, SpecialRegister::NctaidY})
    EXPECT_TRUE(specials.count(r)) << specialRegisterName(r);
  ASSERT_NE(tex, nullptr);
  EXPECT_EQ(tex->vectorWidth, 4);
  EXPECT_EQ(test::strings(tex->modifiers()), std::vector<std::string>{"1d"});
  ASSERT_EQ(tex->operands().size(), 2u);
  EXPECT_EQ(tex->operands()[1].elements().size(), 1u);
}

TEST(NvccContent, HopperAsyncCopiesAndClusters) {
  LOAD_OR_SKIP(g, "sm90_features_sm_90a");
  EXPECT_EQ(g.result.module.targets, std::vector<std::string>{"sm_90a"});
  std::set<Opcode> opcodes;
  for (const Function& f : g.result.module.functions)
    for (const Statement& s : f.body) opcodes.insert(s.instruction.opcode);
  EXPECT_TRUE(opcodes.count(Opcode::mbarrier));
  EXPECT_TRUE(opcodes.count(Opcode::cp_async));
  EXPECT_TRUE(opcodes.count(Opcode::redux));
  EXPECT_TRUE(opcodes.count(Opcode::barrier));
}

TEST(NvccContent, TensorCoresAndSurfaces) {
  LOAD_OR_SKIP(g, "tensor_cores_sm_80");
  const Function* wmma = g.result.module.findFunction("_Z8wmmaHalfPK6__halfS1_Pf");
  ASSERT_NE(wmma, nullptr);
  const Instruction* mma = nullptr;
  for (const Statement& s : wmma->body)
    if (s.instruction.opcode == Opcode::wmma && s.instruction.hasModifier("mma"))
      mma = &s.instruction;
  ASSERT_NE(mma, nullptr);
  EXPECT_TRUE(mma->hasModifier("m16n16k16"));
  ASSERT_EQ(mma->operands().size(), 4u);
  EXPECT_EQ(mma->operands()[0].elements().size(), 8u);
  const Function* surfaces = g.result.module.findFunction("_Z8surfacesyi");
  ASSERT_NE(surfaces, nullptr);
  const Instruction* sust = findInstruction(*surfaces, Opcode::sust, StateSpace::None);
  ASSERT_NE(sust, nullptr);
  EXPECT_EQ(test::strings(sust->modifiers()), (std::vector<std::string>{"b", "2d", "trap"}));
  ASSERT_EQ(sust->operands().size(), 2u);
  EXPECT_EQ(sust->operands()[0].kind, Operand::Kind::Address);
  ASSERT_EQ(sust->operands()[0].elements().size(), 1u);
  EXPECT_EQ(sust->operands()[0].elements()[0].elements().size(), 2u);
}

TEST(NvccContent, DynamicParallelismDeclaresDeviceRuntime) {
  LOAD_OR_SKIP(g, "dynamic_parallelism_sm_90");
  const Function* buffer = g.result.module.findFunction("__cudaCDP2GetParameterBufferV2");
  ASSERT_NE(buffer, nullptr);
  EXPECT_TRUE(buffer->isDeclaration);
  const Function* parent = g.result.module.findFunction("_Z6parentPi");
  ASSERT_NE(parent, nullptr);
  size_t calls = 0;
  for (const Statement& s : parent->body) calls += s.instruction.opcode == Opcode::call;
  EXPECT_GE(calls, 4u);
}

TEST(NvccContent, DebugSectionsAreSkipped) {
  LOAD_OR_SKIP(g, "device_functions_G_sm_80");
  EXPECT_NE(g.text.find(".section\t.debug"), std::string::npos);
  EXPECT_FALSE(g.result.module.files.empty());
  EXPECT_NE(g.result.module.findFunction("_Z9useParamsPf6Params3Big"), nullptr);
}

TEST(NvccContent, ThrustAndCubAtSpeed) {
  LOAD_OR_SKIP(g, "thrust_cub_sm_90");
  EXPECT_GT(g.result.module.functions.size(), 10u);
  std::string big;
  while (big.size() < (8u << 20)) big += g.text;
  auto start = std::chrono::steady_clock::now();
  ParseResult r = parseModule(big, "big.ptx");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double mbPerSecond = big.size() / seconds / 1e6;
  RecordProperty("MBPerSecond", std::to_string(mbPerSecond));
  std::printf("parsed %.1f MB in %.3f s: %.1f MB/s\n", big.size() / 1e6, seconds, mbPerSecond);
  // Concatenation redefines every function: errors are expected, and reported quickly.
  EXPECT_TRUE(r.hasErrors());
  EXPECT_GT(mbPerSecond, 5.0);  // only catches pathological slowdowns on a loaded machine
}

}  // namespace
}  // namespace rocuda::ptx
