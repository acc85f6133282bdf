// The target-neutral LLVM IR of a PTX module (compiler.h's contract), before any target's
// lowering: what `rocuda compile --target neutral` prints and the neutral-IR FileCheck tests read;
// and the translation alone, which `rocuda ptx-check --translate` reports on.
#pragma once

#include <string>
#include <string_view>

#include "compiler/compiler.h"
#include "support/result.h"

namespace rocuda::compiler {

// The translated, verified module as LLVM assembly text; InvalidPtx or UnsupportedPtx errors
// as compileForHost gives them.
Result<std::string> neutralIrText(std::string_view ptxText, std::string_view moduleName);

// The module translated as the CPU device would, every function (nothing compiled), for
// checking: its description, in which a kernel that reaches an instruction Rocuda does not
// support has KernelInfo::unsupported (the instruction, its position and why); an error for
// invalid PTX or for what stops the whole module.
Result<ModuleInfo> checkTranslation(std::string_view ptxText, std::string_view moduleName);

}  // namespace rocuda::compiler
