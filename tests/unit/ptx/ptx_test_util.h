// Helpers shared by the PTX front-end tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ptx/ast.h"
#include "ptx/parser.h"

namespace rocuda::ptx::test {

// Wraps instructions in a minimal module with one kernel and common registers
// (%p<8>, %rs<8>, %r<16>, %rd<16>, %f<16>, %fd<8>, %h<4>), then parses it.
std::string wrapKernel(std::string_view declarationsAndBody, std::string_view moduleScope = "");
ParseResult parseKernel(std::string_view body, std::string_view moduleScope = "");

// The only instruction of the kernel `k` (or the first definition); null unless exactly one.
const Instruction* onlyInstruction(const ParseResult& result);
const Function* firstFunction(const ParseResult& result);

// The register name an operand refers to ("" when it is not a register).
std::string registerName(const Function& function, const Operand& operand);

bool readFile(const std::string& path, std::string& out);

// AST spans as vectors, for comparisons in expectations.
template <class T>
std::vector<T> toVector(Span<T> span) {
  return std::vector<T>(span.begin(), span.end());
}
inline std::vector<std::string> strings(Span<std::string_view> span) {
  return std::vector<std::string>(span.begin(), span.end());
}

// The line number in `wrapKernel` output where the body starts (for exact diagnostics).
inline constexpr unsigned kBodyFirstLine = 12;

}  // namespace rocuda::ptx::test
