// The target-neutral LLVM IR of a PTX module (compiler.h's contract), before any target's
// lowering: what `rocuda compile --target neutral` prints and the neutral-IR FileCheck tests read.
#pragma once

#include <string>
#include <string_view>

#include "support/result.h"

namespace rocuda::compiler {

// The translated, verified module as LLVM assembly text; InvalidPtx or UnsupportedPtx errors
// as compileForHost gives them.
Result<std::string> neutralIrText(std::string_view ptxText, std::string_view moduleName);

}  // namespace rocuda::compiler
