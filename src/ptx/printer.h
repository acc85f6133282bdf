// ptx::Module -> PTX text. The output parses back to an equal module (flattened: every register
// declared on its own, nested blocks gone, shadowed names `%r5#1` spelled `%r5$1`), which makes
// it useful for debugging the front end and for round-trip tests.
#pragma once

#include <string>

#include "ptx/ast.h"

namespace rocuda::ptx {

std::string printModule(const Module& module);
std::string printInstruction(const Function& function, const Instruction& inst);

}  // namespace rocuda::ptx
