// Hostile input: no crash, no hang, no unbounded recursion, whatever the bytes.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "ptx/printer.h"
#include "ptx_test_util.h"

namespace rocuda::ptx {
namespace {

const char* const kSample =
    ".version 9.0\n.target sm_90\n.address_size 64\n"
    ".global .align 4 .b8 str[4] = {1, 2, 3, 0};\n"
    ".extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n"
    ".visible .entry k(.param .u64 .ptr .global .align 4 p, .param .u32 n) .maxntid 64, 1, 1\n"
    "{\n .reg .pred %p<3>;\n .reg .b32 %r<8>;\n .reg .f32 %f<4>;\n .reg .b64 %rd<6>;\n"
    " .shared .align 4 .f32 s[64];\n"
    " ld.param.u64 %rd1, [p];\n mov.u32 %r1, %tid.x;\n setp.ge.u32 %p1, %r1, 64;\n"
    " @%p1 bra $L__BB0_2;\n mul.wide.u32 %rd2, %r1, 4;\n add.s64 %rd3, %rd1, %rd2;\n"
    " ld.global.f32 %f1, [%rd3+-4];\n st.shared.f32 [s+8], %f1;\n bar.sync 0;\n"
    " { .param .b64 param0; st.param.b64 [param0], %rd1; .param .b64 param1;\n"
    "   .param .b32 retval0; call.uni (retval0), vprintf, (param0, param1); }\n"
    " mov.b64 %rd4, {%r1, %r2};\n fma.rn.f32 %f2, %f1, 0f3F800000, 0f00000000;\n"
    "$L__BB0_2:\n ret;\n}\n";

TEST(PtxRobustness, CleanSampleParses) {
  ParseResult r = parseModule(kSample, "sample.ptx");
  EXPECT_FALSE(r.hasErrors()) << r.formatDiagnostics();
  ASSERT_EQ(r.module.functions.size(), 2u);
  EXPECT_EQ(r.module.functions[1].body.size(), 15u);
}

TEST(PtxRobustness, EveryPrefixOfSampleParses) {
  std::string_view text = kSample;
  size_t withErrors = 0;
  for (size_t length = 0; length <= text.size(); ++length) {
    ParseResult r = parseModule(text.substr(0, length), "prefix.ptx");
    withErrors += r.hasErrors() ? 1 : 0;
    for (const Diagnostic& d : r.diagnostics) {
      ASSERT_GE(d.loc.line, 1u);
      ASSERT_GE(d.loc.column, 1u);
      ASSERT_FALSE(d.message.empty());
    }
  }
  // Most prefixes end mid-function and must be reported, not silently accepted.
  EXPECT_GT(withErrors, text.size() / 2);
}

TEST(PtxRobustness, EmptyAndWhitespaceInput) {
  for (std::string_view text : {std::string_view(""), std::string_view("  \n\t\r\n"),
                                std::string_view("// only a comment")}) {
    ParseResult r = parseModule(text, "e.ptx");
    EXPECT_FALSE(r.hasErrors());
    EXPECT_TRUE(r.module.functions.empty());
  }
}

TEST(PtxRobustness, DeepBlockNestingIsBounded) {
  std::string body(100000, '{');
  body += "ret;";
  body += std::string(100000, '}');
  ParseResult r = test::parseKernel(body);
  ASSERT_TRUE(r.hasErrors());
  EXPECT_EQ(r.diagnostics[0].message, "blocks nested too deeply (more than 256 levels)");
}

TEST(PtxRobustness, DeepInitializerAndOperandNestingIsBounded) {
  std::string init = ".version 9.0\n.global .u32 x[1] = " + std::string(100000, '{') + "1" +
                     std::string(100000, '}') + ";\n";
  ParseResult r = parseModule(init, "init.ptx");
  ASSERT_TRUE(r.hasErrors());
  EXPECT_EQ(r.diagnostics[0].message, "initializer braces nested too deeply");
  ParseResult ops = test::parseKernel("mov.b64 %rd1, " + std::string(50000, '{') + "%r1;");
  ASSERT_TRUE(ops.hasErrors());
  EXPECT_EQ(ops.diagnostics[0].message, "unexpected nested operand list");
}

TEST(PtxRobustness, HugeRegisterCountsAreRejected) {
  ParseResult r = test::parseKernel(".reg .b32 %big<4000000000>;");
  ASSERT_TRUE(r.hasErrors());
  EXPECT_EQ(r.diagnostics[0].message, "too many registers in function 'k'");
  ParseResult dims = parseModule(".global .u8 x[99999999999][99999999999];", "d.ptx");
  EXPECT_FALSE(dims.hasErrors());
  EXPECT_EQ(dims.module.globals[0].sizeInBytes(), UINT64_MAX);
}

TEST(PtxRobustness, ErrorFloodIsCapped) {
  std::string garbage;
  for (int i = 0; i < 30000; ++i) garbage += "x;\n";
  ParseResult r = parseModule(garbage, "flood.ptx");
  ASSERT_EQ(r.diagnostics.size(), 10000u);
  EXPECT_EQ(r.diagnostics.back().message, "too many errors; giving up");
}

TEST(PtxRobustness, ManyErrorsOnOneHugeLineStayFast) {
  std::string line = ".entry k() {";
  for (int i = 0; i < 10000; ++i) line += " bogus;";
  line += " }";
  auto start = std::chrono::steady_clock::now();
  ParseResult r = parseModule(line, "oneline.ptx");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.diagnostics.size(), 10000u);
  EXPECT_EQ(r.diagnostics[5].loc.column, 13u + 7 * 5 + 1);
  EXPECT_LE(r.diagnostics[5].sourceLine.size(), 400u);
  EXPECT_LT(seconds, 5.0);
}

TEST(PtxRobustness, RandomBytesNeverCrash) {
  std::mt19937 rng(12345);
  const std::string alphabet =
      ".%$_@!{}()[]<>,;:+-=|\"/* \n\t0123456789abcdefxXfFdDuU.regentryfunc";
  for (int round = 0; round < 3000; ++round) {
    size_t length = rng() % 200;
    std::string text;
    for (size_t i = 0; i < length; ++i)
      text +=
          (round % 3 == 0) ? static_cast<char>(rng() & 0xff) : alphabet[rng() % alphabet.size()];
    ParseResult r = parseModule(text, "random.ptx");
    for (const Diagnostic& d : r.diagnostics) ASSERT_FALSE(d.format().empty());
  }
}

TEST(PtxRobustness, MutatedSampleNeverCrashes) {
  std::mt19937 rng(777);
  const std::string sample = kSample;
  const char* const snippets[] = {"{", "}",   ";",      "(",  ")",  "[", "]",
                                  ",", "%r1", ".reg",   "@",  "!",  "_", "0f",
                                  "-", "+",   ".entry", "\"", "/*", "<", ">"};
  for (int round = 0; round < 3000; ++round) {
    std::string text = sample;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % (text.size() + 1);
      switch (rng() % 3) {
        case 0:
          text.erase(at, rng() % 8);
          break;
        case 1:
          text.insert(at, snippets[rng() % (sizeof(snippets) / sizeof(snippets[0]))]);
          break;
        default:
          if (at < text.size()) text[at] = static_cast<char>(rng() & 0x7f);
          break;
      }
    }
    ParseResult r = parseModule(text, "mutated.ptx");
    // Whatever survived must still print and re-parse without crashing.
    ParseResult again = parseModule(printModule(r.module), "printed.ptx");
    (void)again;
  }
}

TEST(PtxRobustness, NulBytesAndCarriageReturns) {
  std::string text = ".version 9.0\r\n.target sm_90\r\n.entry k()\r\n{\r\n ret;\r\n}\r\n";
  ParseResult r = parseModule(text, "crlf.ptx");
  EXPECT_FALSE(r.hasErrors()) << r.formatDiagnostics();
  std::string withNul = text;
  withNul[30] = '\0';
  ParseResult nul = parseModule(withNul, "nul.ptx");
  EXPECT_TRUE(nul.hasErrors());
}

TEST(PtxRobustness, PrintedSampleRoundTrips) {
  ParseResult first = parseModule(kSample, "sample.ptx");
  std::string printed = printModule(first.module);
  ParseResult second = parseModule(printed, "printed.ptx");
  EXPECT_FALSE(second.hasErrors()) << second.formatDiagnostics() << printed;
  EXPECT_EQ(printModule(second.module), printed);
}

}  // namespace
}  // namespace rocuda::ptx
