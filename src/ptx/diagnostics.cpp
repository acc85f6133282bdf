// Diagnostic formatting and the parser's error reporting and recovery helpers.
#include <algorithm>

#include "ptx/parser_impl.h"

namespace rocuda::ptx {

std::string Diagnostic::format() const {
  const char* kind = severity == Severity::Error     ? "error"
                     : severity == Severity::Warning ? "warning"
                                                     : "note";
  std::string result = file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) +
                       ": " + kind + ": " + message + "\n" + sourceLine + "\n";
  // The caret keeps tabs so it lines up under the source line in a terminal.
  for (uint32_t i = 1; i < loc.column && i - 1 < sourceLine.size(); ++i)
    result += sourceLine[i - 1] == '\t' ? '\t' : ' ';
  result += "^\n";
  return result;
}

bool ParseResult::hasErrors() const {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Diagnostic::Severity::Error; });
}

std::string ParseResult::formatDiagnostics() const {
  std::string result;
  for (const auto& diagnostic : diagnostics) result += diagnostic.format();
  return result;
}

namespace detail {

void Parser::errorAt(uint32_t offset, SourceLocation loc, std::string message) {
  if (errorCount_ >= kMaxErrors) return;
  ++errorCount_;
  Diagnostic diagnostic;
  diagnostic.file = out_.module.name;
  diagnostic.loc = loc;
  diagnostic.message = std::move(message);
  if (errorCount_ == kMaxErrors) diagnostic.message = "too many errors; giving up";
  if (offset == kUnknownOffset) {
    // Index the line starts once, on the first error that needs it.
    if (lineStarts_.empty()) {
      lineStarts_.push_back(0);
      for (size_t i = 0; i < text_.size(); ++i)
        if (text_[i] == '\n') lineStarts_.push_back(static_cast<uint32_t>(i + 1));
    }
    size_t line = loc.line == 0 ? 0 : loc.line - 1;
    offset = line < lineStarts_.size() ? lineStarts_[line] : static_cast<uint32_t>(text_.size());
  }
  // Very long lines (minified input) are cut so that one diagnostic stays readable and
  // many errors on one huge line stay cheap: at most kMaxLine characters around the error.
  constexpr size_t kMaxLine = 400;
  size_t at = std::min<size_t>(offset, text_.size());
  size_t begin = at;
  while (begin > 0 && text_[begin - 1] != '\n' && at - begin < kMaxLine) --begin;
  size_t end = at;
  while (end < text_.size() && text_[end] != '\n' && end - begin < kMaxLine) ++end;
  size_t length = end - begin;
  diagnostic.sourceLine.assign(text_.substr(begin, length));
  if (!diagnostic.sourceLine.empty() && diagnostic.sourceLine.back() == '\r')
    diagnostic.sourceLine.pop_back();
  out_.diagnostics.push_back(std::move(diagnostic));
}

void Parser::error(const Token& token, std::string message) {
  errorAt(token.offset, locOf(token), std::move(message));
}

std::string Parser::describe(const Token& token) const {
  switch (token.kind) {
    case TokenKind::End:
      return "end of file";
    case TokenKind::Identifier:
    case TokenKind::Directive:
    case TokenKind::Number:
      return "'" + std::string(text(token).substr(0, 60)) + "'";
    case TokenKind::String:
      return "a string";
    default:
      return tokenKindName(token.kind);
  }
}

bool Parser::expect(TokenKind kind, std::string_view context) {
  if (accept(kind)) return true;
  std::string message = std::string("expected ") + tokenKindName(kind);
  if (!context.empty()) message += " " + std::string(context);
  message += ", found " + describe(tok());
  error(tok(), std::move(message));
  return false;
}

void Parser::skipStatement() {
  unsigned depth = 0;
  while (!at(TokenKind::End)) {
    if (at(TokenKind::Semicolon) && depth == 0) {
      advance();
      return;
    }
    if (at(TokenKind::LBrace)) ++depth;
    if (at(TokenKind::RBrace)) {
      if (depth == 0) return;  // closes the enclosing block: the caller handles it
      --depth;
    }
    advance();
  }
}

void Parser::skipRestOfLine(uint32_t line) {
  while (!at(TokenKind::End) && tok().line == line && !at(TokenKind::Semicolon) &&
         !at(TokenKind::RBrace) && !at(TokenKind::LBrace))
    advance();
}

}  // namespace detail
}  // namespace rocuda::ptx
