// Internal to src/compiler: helper routines the host objects may need beyond the C library.
#pragma once

#include "compiler/compiler.h"

namespace rocuda::compiler::detail {

// Name/address pairs the loader defines (after the runtime's own symbols).
RuntimeSymbols hostBuiltins();

}  // namespace rocuda::compiler::detail
