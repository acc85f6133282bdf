// The compiler: PTX text -> ptx::Module -> target-neutral LLVM IR -> code for one target.
//
// This header is the whole interface the rest of Rocuda sees; it deliberately exposes no LLVM
// type, so that core and the backends compile without LLVM headers.
//
// The target-neutral IR contract (what translated kernels expect of the device runtime):
//  * A kernel `.entry K(params)` becomes `void K(ptr params)`; `params` points at the kernel
//    parameters packed as KernelInfo::params describes (CUDA's layout: each parameter at its
//    natural or declared alignment). `.func`s become internal functions.
//  * Special registers are calls `i32 __rocuda_sreg_<name>()` (`i64` for clock64/globaltimer),
//    with <name> from ptx::specialRegisterName without '%' and with '.' as '_': tid_x, ntid_y,
//    ctaid_z, nctaid_x, laneid, warpid, nwarpid, smid, nsmid, gridid, lanemask_lt, clock,
//    clock64, globaltimer, dynamic_smem_size, total_smem_size...
//  * `bar.sync a{, b}` / `barrier.sync` / `__syncthreads` is `void __rocuda_barrier_sync(i32 id,
//    i32 threads)` (threads 0 = the whole block).
//  * Shared memory: every `.shared` variable gets an offset in the block's shared window
//    (KernelInfo::staticSharedBytes bytes, then dynamic shared memory at
//    KernelInfo::dynamicSharedOffset). A shared-space address is that offset; the generic address
//    is `__rocuda_shared_base() + offset` (`ptr __rocuda_shared_base()`).
//  * `trap` is `void __rocuda_trap()` (noreturn); printf is a call to `i32 vprintf(ptr, ptr)`.
//  * Other external .funcs the PTX declares (malloc, free, __assertfail...) are called by value
//    with integer arguments of their .param sizes; the loader resolves them from `runtime` first,
//    then from the process (so the runtime must supply __assertfail).
//  * Barrier reductions (`bar.red`, __syncthreads_count/and/or): `i32 __rocuda_barrier_reduce(
//    i32 op, i32 id, i32 threads, i32 predicate)`, op 0 popc (returns the count), 1 and, 2 or
//    (return 0/1). Kernels calling it have usesBarriers set.
//  * Warp collectives (all convergent; `mask` is the PTX member mask; kernels calling any of them
//    have usesWarpCollectives set):
//      `void __rocuda_warp_sync(i32 mask)` (bar.warp.sync / __syncwarp);
//      `i64 __rocuda_shfl_sync(i32 mode, i32 value, i32 b, i32 c, i32 mask)`, mode 0 up, 1 down,
//        2 bfly, 3 idx; b and c as in PTX; returns the value in bits 0..31, the PTX predicate
//        (source lane in range) in bit 32;
//      `i32 __rocuda_vote_sync(i32 mode, i32 predicate, i32 mask)`, mode 0 all, 1 any, 2 uni
//        (return 0/1), 3 ballot (returns the ballot);
//      `i32 __rocuda_redux_sync(i32 op, i32 value, i32 mask)`, op 0 add, 1 min.u32, 2 max.u32,
//        3 min.s32, 4 max.s32, 5 and, 6 or, 7 xor;
//      `i64 __rocuda_match_sync(i32 mode, i64 value, i32 mask)`, mode 0 any, 1 all; returns the
//        lane mask in bits 0..31 and (match.all) the predicate in bit 32.
//    `activemask` is the full warp (0xffffffff) for now.
//  * `.global` / `.const` variables are LLVM globals named as in the PTX, looked up by name.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptx/ast.h"
#include "support/result.h"

namespace rocuda::compiler {

// Bumped whenever generated code changes meaning: part of every cache key.
inline constexpr std::string_view kCompilerVersion = "rocuda-compiler-2";

struct KernelParamInfo {
  uint32_t offset = 0;  // in the packed parameter buffer
  uint32_t size = 0;
  uint32_t alignment = 1;
};

struct KernelInfo {
  std::string name;
  std::vector<KernelParamInfo> params;
  uint32_t paramBufferSize = 0;      // bytes, including trailing padding to the largest alignment
  uint32_t staticSharedBytes = 0;    // static shared memory used
  uint32_t dynamicSharedOffset = 0;  // where dynamic (extern) shared memory starts in the window
  // .local depots of the kernel and of every function it can call (each counted once). Depots
  // are allocas: they live on the stack of the thread (or fiber) running the kernel, which
  // therefore needs this much plus the frames of the generated code.
  uint32_t localBytesPerThread = 0;
  std::array<uint32_t, 3> maxntid{0, 0, 0};  // .maxntid, 0 when absent
  std::array<uint32_t, 3> reqntid{0, 0, 0};  // .reqntid, 0 when absent
  bool usesBarriers = false;  // after inlining, calls __rocuda_barrier_sync or _barrier_reduce
  bool usesWarpCollectives = false;  // after inlining, calls a warp collective (see above)
};

struct GlobalInfo {
  std::string name;
  ptx::StateSpace space = ptx::StateSpace::Global;  // Global or Const
  uint64_t size = 0;
};

struct ModuleInfo {
  std::vector<KernelInfo> kernels;
  std::vector<GlobalInfo> globals;  // .global and .const variables defined (not .extern)

  const KernelInfo* findKernel(std::string_view name) const;
  const GlobalInfo* findGlobal(std::string_view name) const;

  // A compact binary form, for the code cache. deserialize returns an error on malformed bytes.
  std::vector<uint8_t> serialize() const;
  static Result<ModuleInfo> deserialize(const uint8_t* data, size_t size);
};

struct CompileOptions {
  int optLevel = 2;  // 0..3
};

// Host code for one PTX module: a relocatable object file for this machine plus its ModuleInfo.
struct HostObject {
  ModuleInfo info;
  std::vector<uint8_t> object;

  // The code cache's entry format: ModuleInfo then the object. deserialize checks every size.
  std::vector<uint8_t> serialize() const;
  static Result<HostObject> deserialize(const uint8_t* data, size_t size);
};

// The host target code is generated for ("x86_64-pc-linux-gnu, znver4, +avx2,..."): part of
// every cache key, since an object built for one CPU may not run on another.
std::string hostTargetName();

// Parse, check, translate, optimise and emit host machine code. Errors:
// InvalidPtx (message holds the formatted diagnostics), UnsupportedPtx, Internal.
Result<HostObject> compileForHost(std::string_view ptxText, std::string_view moduleName,
                                  const CompileOptions& options);

// Host code loaded into this process (ORC JIT), with its symbols resolved.
class HostCode {
 public:
  virtual ~HostCode() = default;
  // Address of a kernel (`void(void* params)`) or of a global variable; nullptr if absent.
  virtual void* lookup(std::string_view name) = 0;
};

// Symbols the generated code calls (__rocuda_* and vprintf), supplied by the backend's runtime.
using RuntimeSymbols = std::vector<std::pair<std::string, void*>>;

// Load host code into the process. Error InvalidImage if the object cannot be linked (e.g. it
// calls a runtime function not in `runtime`: the message names it).
Result<std::unique_ptr<HostCode>> loadHostCode(const HostObject& object,
                                               const RuntimeSymbols& runtime);

}  // namespace rocuda::compiler
