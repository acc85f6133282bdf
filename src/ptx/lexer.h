// PTX tokenizer: one pass over the text into a flat token vector. Tokens are views into the
// source (no per-token allocation); line/column are tracked for diagnostics.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace rocuda::ptx {

enum class TokenKind : uint8_t {
  End,
  Identifier,  // foo, %r1, $L__BB0_1, _ (the sink), %tid (component is a separate Directive)
  Directive,   // .global, .shared::cta, .L2::cache_hint, .v4, .2d (dot included in the text)
  Number,      // 42, 0x1F, 0f3F800000, 1.5e3, 10U (sign not included)
  String,      // "text" (quotes included)
  Comma,
  Semicolon,
  Colon,
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Plus,
  Minus,
  Bang,
  At,
  Less,
  Greater,
  Equal,
  Pipe,
  Invalid,  // a character PTX does not use
};

struct Token {
  TokenKind kind = TokenKind::End;
  uint32_t offset = 0;  // byte offset into the source
  uint32_t length = 0;
  uint32_t line = 1;    // 1-based
  uint32_t column = 1;  // 1-based
};

struct LexResult {
  std::vector<Token> tokens;  // always ends with an End token
  // Unterminated block comments / strings: offsets where they started.
  std::vector<Token> errors;
};

LexResult lex(std::string_view text);

const char* tokenKindName(TokenKind kind);

}  // namespace rocuda::ptx
