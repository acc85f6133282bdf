#include "ptx_test_util.h"

#include <fstream>
#include <sstream>

namespace rocuda::ptx::test {

std::string wrapKernel(std::string_view body, std::string_view moduleScope) {
  std::string text =
      ".version 9.0\n"                      // 1
      ".target sm_90\n"                     // 2
      ".address_size 64\n";                 // 3
  text += std::string(moduleScope) + "\n";  // 4 (one line expected)
  text +=
      ".visible .entry k(.param .u64 k_param_0)\n"  // 5
      "{\n"                                         // 6
      ".reg .pred %p<8>; .reg .b16 %rs<8>;\n"       // 7
      ".reg .b32 %r<16>; .reg .b64 %rd<16>;\n"      // 8
      ".reg .f32 %f<16>; .reg .f64 %fd<8>;\n"       // 9
      ".reg .b16 %h<4>;\n"                          // 10
      "// body\n";                                  // 11
  text += std::string(body) + "\n}\n";              // 12...
  return text;
}

ParseResult parseKernel(std::string_view body, std::string_view moduleScope) {
  return parseModule(wrapKernel(body, moduleScope), "test.ptx");
}

const Function* firstFunction(const ParseResult& result) {
  // The kernel of wrapKernel() when present, else the first definition.
  if (const Function* kernel = result.module.findFunction("k")) return kernel;
  for (const auto& function : result.module.functions)
    if (!function.isDeclaration) return &function;
  return nullptr;
}

const Instruction* onlyInstruction(const ParseResult& result) {
  const Function* function = firstFunction(result);
  if (function == nullptr || function->body.size() != 1 ||
      function->body[0].kind() != Statement::Kind::Instruction)
    return nullptr;
  return &function->body[0].instruction;
}

std::string registerName(const Function& function, const Operand& operand) {
  if (operand.kind != Operand::Kind::Register || operand.reg() >= function.registerCount())
    return "";
  return function.registerName(operand.reg());
}

bool readFile(const std::string& path, std::string& out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  std::ostringstream buffer;
  buffer << file.rdbuf();
  out = buffer.str();
  return true;
}

}  // namespace rocuda::ptx::test
