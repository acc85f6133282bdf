// PTX text -> ptx::Module, with diagnostics that point at the problem.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ptx/ast.h"

namespace rocuda::ptx {

struct Diagnostic {
  enum class Severity { Error, Warning, Note };
  Severity severity = Severity::Error;
  std::string file;         // the module name given to parseModule
  SourceLocation loc;
  std::string message;
  std::string sourceLine;   // the offending line of source, without its newline

  // "file:line:column: error: message\n<source line>\n<spaces>^"
  std::string format() const;
};

struct ParseResult {
  Module module;                        // as much as could be parsed, also when there are errors
  std::vector<Diagnostic> diagnostics;  // in source order
  bool hasErrors() const;
  std::string formatDiagnostics() const;  // every diagnostic, formatted, one after another
};

// Lex, parse and check one PTX module. Never throws, never aborts, whatever the input.
ParseResult parseModule(std::string_view text, std::string_view fileName);

}  // namespace rocuda::ptx
