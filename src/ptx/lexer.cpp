// Hand-written PTX lexer: a single forward scan with table lookups, no allocation per token.
#include "ptx/lexer.h"

#include <array>

namespace rocuda::ptx {
namespace {

// Character classes used by the scanner.
enum : uint8_t { kIdentStart = 1, kIdentChar = 2, kDigit = 4, kSpace = 8 };

constexpr std::array<uint8_t, 256> makeClassTable() {
  std::array<uint8_t, 256> table{};
  for (int c = 'a'; c <= 'z'; ++c) table[c] = kIdentStart | kIdentChar;
  for (int c = 'A'; c <= 'Z'; ++c) table[c] = kIdentStart | kIdentChar;
  for (int c = '0'; c <= '9'; ++c) table[c] = kIdentChar | kDigit;
  table['_'] = kIdentStart | kIdentChar;
  table['$'] = kIdentStart | kIdentChar;
  table['%'] = kIdentStart;
  table[' '] = kSpace;
  table['\t'] = kSpace;
  table['\r'] = kSpace;
  table['\f'] = kSpace;
  table['\v'] = kSpace;
  return table;
}
constexpr auto kClass = makeClassTable();

inline bool isIdentChar(char c) { return kClass[static_cast<uint8_t>(c)] & kIdentChar; }
inline bool isIdentStart(char c) { return kClass[static_cast<uint8_t>(c)] & kIdentStart; }
inline bool isDigit(char c) { return kClass[static_cast<uint8_t>(c)] & kDigit; }

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  LexResult run() {
    LexResult result;
    result.tokens.reserve(text_.size() / 4 + 16);
    while (true) {
      skipTrivia(result);
      if (pos_ >= text_.size()) break;
      result.tokens.push_back(scanToken(result));
    }
    Token end;
    end.kind = TokenKind::End;
    end.offset = static_cast<uint32_t>(text_.size());
    end.line = line_;
    end.column = column();
    result.tokens.push_back(end);
    return result;
  }

 private:
  uint32_t column() const { return static_cast<uint32_t>(pos_ - lineStart_) + 1; }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void newline() {
    ++line_;
    lineStart_ = pos_;
  }

  Token startToken(TokenKind kind) const {
    Token token;
    token.kind = kind;
    token.offset = static_cast<uint32_t>(pos_);
    token.line = line_;
    token.column = column();
    return token;
  }

  void skipTrivia(LexResult& result) {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (kClass[static_cast<uint8_t>(c)] & kSpace) {
        ++pos_;
      } else if (c == '\n') {
        ++pos_;
        newline();
      } else if (c == '/' && peek(1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '/' && peek(1) == '*') {
        Token start = startToken(TokenKind::Invalid);
        pos_ += 2;
        bool closed = false;
        while (pos_ < text_.size()) {
          if (text_[pos_] == '*' && peek(1) == '/') {
            pos_ += 2;
            closed = true;
            break;
          }
          ++pos_;
          if (text_[pos_ - 1] == '\n') newline();
        }
        if (!closed) {
          start.length = 2;
          result.errors.push_back(start);
        }
      } else {
        break;
      }
    }
  }

  // Identifier-like run, allowing `::` joints (for .shared::cta, .L2::cache_hint, ...).
  void scanWord(bool allowScope) {
    while (pos_ < text_.size()) {
      if (isIdentChar(text_[pos_])) {
        ++pos_;
      } else if (allowScope && text_[pos_] == ':' && peek(1) == ':' && isIdentChar(peek(2))) {
        pos_ += 2;
      } else {
        break;
      }
    }
  }

  void scanNumber() {
    // Hex-float / hex / binary forms: 0f..., 0d..., 0x..., 0b...: all letters and digits.
    char c1 = peek(1);
    if (peek() == '0' && (c1 == 'f' || c1 == 'F' || c1 == 'd' || c1 == 'D' || c1 == 'x' ||
                          c1 == 'X' || c1 == 'b' || c1 == 'B')) {
      pos_ += 2;
      while (pos_ < text_.size() && isIdentChar(text_[pos_])) ++pos_;
      return;
    }
    while (isDigit(peek())) ++pos_;
    if (peek() == '.' && isDigit(peek(1))) {
      ++pos_;
      while (isDigit(peek())) ++pos_;
    } else if (peek() == '.' && !isIdentStart(peek(1))) {
      ++pos_;  // "1." is a float literal; "1.x" is not
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
      pos_ += 2;
      while (isDigit(peek())) ++pos_;
    }
    // Suffix letters (U) and anything glued on are kept so the parser can reject them.
    while (pos_ < text_.size() && isIdentChar(text_[pos_])) ++pos_;
  }

  Token scanToken(LexResult& result) {
    char c = text_[pos_];
    Token token = startToken(TokenKind::Invalid);
    size_t begin = pos_;
    if (isIdentStart(c)) {
      token.kind = TokenKind::Identifier;
      ++pos_;
      scanWord(false);
    } else if (isDigit(c)) {
      token.kind = TokenKind::Number;
      scanNumber();
    } else if (c == '.' && isIdentChar(peek(1))) {
      token.kind = TokenKind::Directive;
      ++pos_;
      scanWord(true);
    } else if (c == '"') {
      token.kind = TokenKind::String;
      ++pos_;
      while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n') {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] != '\n') ++pos_;
        ++pos_;
      }
      if (pos_ < text_.size() && text_[pos_] == '"') {
        ++pos_;
      } else {
        token.length = static_cast<uint32_t>(pos_ - begin);
        result.errors.push_back(token);
      }
    } else {
      token.kind = punctuation(c);
      ++pos_;
    }
    token.length = static_cast<uint32_t>(pos_ - begin);
    return token;
  }

  static TokenKind punctuation(char c) {
    switch (c) {
      case ',':
        return TokenKind::Comma;
      case ';':
        return TokenKind::Semicolon;
      case ':':
        return TokenKind::Colon;
      case '(':
        return TokenKind::LParen;
      case ')':
        return TokenKind::RParen;
      case '[':
        return TokenKind::LBracket;
      case ']':
        return TokenKind::RBracket;
      case '{':
        return TokenKind::LBrace;
      case '}':
        return TokenKind::RBrace;
      case '+':
        return TokenKind::Plus;
      case '-':
        return TokenKind::Minus;
      case '!':
        return TokenKind::Bang;
      case '@':
        return TokenKind::At;
      case '<':
        return TokenKind::Less;
      case '>':
        return TokenKind::Greater;
      case '=':
        return TokenKind::Equal;
      case '|':
        return TokenKind::Pipe;
      default:
        return TokenKind::Invalid;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t lineStart_ = 0;
  uint32_t line_ = 1;
};

}  // namespace

LexResult lex(std::string_view text) { return Lexer(text).run(); }

const char* tokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::End:
      return "end of file";
    case TokenKind::Identifier:
      return "identifier";
    case TokenKind::Directive:
      return "directive";
    case TokenKind::Number:
      return "number";
    case TokenKind::String:
      return "string";
    case TokenKind::Comma:
      return "','";
    case TokenKind::Semicolon:
      return "';'";
    case TokenKind::Colon:
      return "':'";
    case TokenKind::LParen:
      return "'('";
    case TokenKind::RParen:
      return "')'";
    case TokenKind::LBracket:
      return "'['";
    case TokenKind::RBracket:
      return "']'";
    case TokenKind::LBrace:
      return "'{'";
    case TokenKind::RBrace:
      return "'}'";
    case TokenKind::Plus:
      return "'+'";
    case TokenKind::Minus:
      return "'-'";
    case TokenKind::Bang:
      return "'!'";
    case TokenKind::At:
      return "'@'";
    case TokenKind::Less:
      return "'<'";
    case TokenKind::Greater:
      return "'>'";
    case TokenKind::Equal:
      return "'='";
    case TokenKind::Pipe:
      return "'|'";
    case TokenKind::Invalid:
      return "invalid character";
  }
  return "token";
}

}  // namespace rocuda::ptx
