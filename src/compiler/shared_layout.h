// Internal to src/compiler: where each .shared variable lives in a block's shared window.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>

#include "compiler/compiler.h"
#include "ptx/ast.h"

namespace rocuda::compiler::detail {

struct SharedLayout {
  // Offsets keyed by variable name (module scope) or "function/name" (function scope).
  std::unordered_map<std::string, uint64_t> offsets;
  std::unordered_map<std::string, uint64_t> staticBytes;    // per kernel
  std::unordered_map<std::string, uint64_t> dynamicOffset;  // per kernel
  std::set<std::string> reservedRegionUsers;                // kernels with the reserved region
  // The strictest alignment any shared variable asks for (at least 16): offsets honour it
  // relative to the window, so the window's own address must be aligned to it.
  uint64_t windowAlignment = 16;
};

// The reserved shared memory of sm_80+ (%reserved_smem_offset_*; cooperative groups keep the
// scratch of tiles larger than a warp there): a static region of kReservedSharedBytes in the
// window of each kernel that reads one of those registers, laid out like a .shared variable
// under this key. %reserved_smem_offset_1 is kReservedSharedSecondSlot bytes into it.
inline constexpr const char* kReservedSharedKey = "%rocuda.reserved_smem";
inline constexpr uint64_t kReservedSharedSecondSlot = 256;
bool isReservedSharedRegister(ptx::SpecialRegister reg);

// Kernels never share a window, so variables that no kernel uses together may overlap: each
// kernel's window holds only what it (and the functions it can call) touches.
SharedLayout computeSharedLayout(const ptx::Module& module);

// Names of the functions `kernel` can call, directly or not, itself included (every function of
// the module when it may call through a pointer).
std::set<std::string> reachableFunctions(const ptx::Module& module, const std::string& kernel);
// The same for every kernel of the module at once.
std::set<std::string> functionsReachableFromKernels(const ptx::Module& module);

}  // namespace rocuda::compiler::detail
