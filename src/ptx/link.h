// Linking PTX modules (cuLinkCreate/AddData/Complete with PTX inputs, -rdc device code): several
// parsed modules become one, as nvlink would resolve them but at the PTX level.
//
//   - an `.extern` function or variable declared in one module binds to the `.visible` (or
//     `.weak`, or `.common`) definition of that name in another; unresolved externs stay
//     declarations (the runtime's vprintf, malloc... are provided when the module is loaded);
//   - two strong definitions of one visible name are an error; a weak one yields to a strong
//     one, the first of several weak ones is kept;
//   - module-local names (no linkage directive) that collide with a name of another module are
//     renamed in their module (`name_rl<k>`), with every reference to them;
//   - .version is the highest, .target the one of the highest sm_XX, .address_size must agree.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace rocuda::ptx {

struct LinkResult {
  Module module;
  std::vector<std::string> errors;  // empty on success
  bool ok() const { return errors.empty(); }
};

LinkResult linkModules(std::vector<Module> modules);

// The functions code reachable from `roots` (function names) can run: the roots, every function
// that code names (a call, or an address it takes), and so on. Where that code calls through a
// register, also every function a global variable's initializer names (a function-pointer
// table), with what those reach: function pointers come from taken addresses and initializers.
std::set<std::string, std::less<>> reachableFunctions(const Module& module,
                                                      const std::vector<std::string>& roots);

// The functions `module` declares but does not define, other than the device runtime's
// (isDeviceRuntimeFunction), that code reachable from its kernels names: what a complete
// program cannot have (nvlink's "undefined reference"). Code no kernel reaches does not count
// (libcudadevrt names syscalls nothing calls); a call through a register reaches every function.
std::set<std::string, std::less<>> unresolvedFunctions(const Module& module);

}  // namespace rocuda::ptx
