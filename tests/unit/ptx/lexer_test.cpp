// Lexer: token kinds, positions, comments, dotted modifiers and numbers.
#include "ptx/lexer.h"

#include <gtest/gtest.h>

namespace rocuda::ptx {
namespace {

std::string_view textOf(std::string_view source, const Token& token) {
  return source.substr(token.offset, token.length);
}

TEST(PtxLexer, SplitsInstructionIntoOpcodeAndModifiers) {
  std::string_view source = "ld.global.nc.v4.f32 {%f1, %f2}, [%rd1+-4];";
  LexResult result = lex(source);
  ASSERT_TRUE(result.errors.empty());
  std::vector<std::string_view> texts;
  for (const Token& token : result.tokens)
    if (token.kind != TokenKind::End) texts.push_back(textOf(source, token));
  std::vector<std::string_view> expected = {"ld",   ".global", ".nc", ".v4", ".f32", "{",
                                            "%f1",  ",",       "%f2", "}",   ",",    "[",
                                            "%rd1", "+",       "-",   "4",   "]",    ";"};
  EXPECT_EQ(texts, expected);
  EXPECT_EQ(result.tokens[1].kind, TokenKind::Directive);
  EXPECT_EQ(result.tokens.back().kind, TokenKind::End);
}

TEST(PtxLexer, KeepsScopeQualifiersInsideModifiers) {
  std::string_view source = "mbarrier.try_wait.shared::cta.b64 .L2::cache_hint";
  LexResult result = lex(source);
  ASSERT_EQ(result.tokens.size(), 6u);
  EXPECT_EQ(textOf(source, result.tokens[2]), ".shared::cta");
  EXPECT_EQ(textOf(source, result.tokens[4]), ".L2::cache_hint");
}

TEST(PtxLexer, TracksLinesAndColumnsAcrossComments) {
  std::string_view source = "// line one\n  /* multi\n line */ add /*x*/ .u32\n\tret;";
  LexResult result = lex(source);
  ASSERT_EQ(result.tokens.size(), 5u);
  EXPECT_EQ(textOf(source, result.tokens[0]), "add");
  EXPECT_EQ(result.tokens[0].line, 3u);
  EXPECT_EQ(result.tokens[0].column, 10u);
  EXPECT_EQ(result.tokens[1].column, 20u);
  EXPECT_EQ(textOf(source, result.tokens[2]), "ret");
  EXPECT_EQ(result.tokens[2].line, 4u);
  EXPECT_EQ(result.tokens[2].column, 2u);
}

TEST(PtxLexer, NumbersIncludeFloatsHexAndSuffixes) {
  std::string_view source = "0f3F800000 0d3FF0000000000000 0x1Fu 1.5e-3 42U 017 0b101 9.0";
  LexResult result = lex(source);
  ASSERT_EQ(result.tokens.size(), 9u);
  for (size_t i = 0; i + 1 < result.tokens.size(); ++i)
    EXPECT_EQ(result.tokens[i].kind, TokenKind::Number) << i;
  EXPECT_EQ(textOf(source, result.tokens[3]), "1.5e-3");
  EXPECT_EQ(textOf(source, result.tokens[7]), "9.0");
}

TEST(PtxLexer, ReportsUnterminatedCommentAndString) {
  LexResult comment = lex("add /* never closed");
  ASSERT_EQ(comment.errors.size(), 1u);
  EXPECT_EQ(comment.errors[0].column, 5u);
  LexResult string = lex(".pragma \"abc\n;");
  ASSERT_EQ(string.errors.size(), 1u);
  EXPECT_EQ(string.errors[0].kind, TokenKind::String);
}

TEST(PtxLexer, SpecialRegisterComponentIsSeparateDirective) {
  std::string_view source = "%tid.x %envreg3 $L__BB0_2: _";
  LexResult result = lex(source);
  ASSERT_EQ(result.tokens.size(), 7u);
  EXPECT_EQ(textOf(source, result.tokens[0]), "%tid");
  EXPECT_EQ(textOf(source, result.tokens[1]), ".x");
  EXPECT_EQ(textOf(source, result.tokens[2]), "%envreg3");
  EXPECT_EQ(textOf(source, result.tokens[3]), "$L__BB0_2");
  EXPECT_EQ(result.tokens[4].kind, TokenKind::Colon);
  EXPECT_EQ(textOf(source, result.tokens[5]), "_");
}

}  // namespace
}  // namespace rocuda::ptx
