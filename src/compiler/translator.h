// Internal to src/compiler: the PTX -> target-neutral LLVM IR translator.
//
// ModuleTranslator owns the module-level state (globals, shared-memory layout, function
// declarations); FunctionTranslator translates one body. Instruction families live in
// translate_instructions_*.cpp, each a free function taking the FunctionTranslator.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/compiler.h"
#include "ptx/ast.h"
#include "support/result.h"

// Evaluate a Result<llvm::Value*> expression into `var`, returning its error from the caller.
#define ROCUDA_VALUE(var, expr)                        \
  auto var##Result_ = (expr);                          \
  if (!var##Result_.ok()) return var##Result_.error(); \
  llvm::Value* var = *var##Result_

namespace rocuda::compiler::detail {

// CUDA's device-side assert (the runtime defines it per target): a failed assert ends its thread.
inline constexpr std::string_view kAssertFunction = "__assertfail";

// Wider type of the same signedness (mul.wide): u16 -> u32, s32 -> s64.
ptx::ScalarType widenedType(ptx::ScalarType type);

// Metadata on memory accesses another thread may be waiting to see change (acquire, relaxed and
// volatile loads outside .local/.param/.const, atom.cas): where a spin-wait polls. Its string
// says where the memory is: "global" (only another block or the host can change it while the
// block runs on one host thread), "shared", or "generic" (either). The host code generator makes
// such accesses inside loops yield to the other threads of the block, or the host thread, while
// they keep reading the same value (markPollableAccess, insertSpinPolls); other targets ignore
// it.
inline constexpr const char* kPollMetadata = "rocuda.poll";
void markPollableAccess(llvm::Instruction& access, ptx::StateSpace space);

// Metadata of `kind` holding one string (kScopeMetadata, kSpaceMetadata below): the translator
// sets it, target lowerings read it ("" when the instruction has none).
void setStringMetadata(llvm::Instruction& inst, const char* kind, llvm::StringRef value);
llvm::StringRef stringMetadata(const llvm::Instruction& inst, const char* kind);

// Metadata naming the PTX scope ("cta", "cluster", "gpu" or "sys") of an atomic access or a
// fence; the LLVM sync scope stays system-wide. Targets with a scoped memory model (AMDGPU)
// narrow their sync scope by it; the host ignores it (system-wide order honours every scope).
inline constexpr const char* kScopeMetadata = "rocuda.scope";
// Mark `access` with the scope modifier of `inst` (membar's .gl is "gpu"), or `defaultScope`
// when it has none (nullptr: leave it system-wide).
void markScope(llvm::Instruction& access, const ptx::Instruction& inst, const char* defaultScope);

// Metadata on loads, stores and atomics whose PTX names their state space although the address
// is generic in the neutral IR: "global" (ld/st/atom/red.global), "constant" (ld.const, and
// ld.global.nc / ldu.global: memory the kernel only reads). Targets with address spaces
// (AMDGPU) access the memory through the narrower space; the host ignores it.
inline constexpr const char* kSpaceMetadata = "rocuda.space";
// Mark `access` by the space and modifiers of `inst`; other spaces are left unmarked.
void markSpace(llvm::Instruction& access, const ptx::Instruction& inst);

// Metadata on atomics (and the atomic loads of their compare-and-swap loops) whose PTX space is
// the block's own shared memory (atom/red.shared, .shared::cta, and .shared::cluster while a
// cluster is one block). No other block can reach that memory: a target that runs all of a
// block's threads on one host thread (the CPU device) may do them as plain accesses once the
// work-item loops are vectorized; AMDGPU ignores it.
inline constexpr const char* kBlockPrivateMetadata = "rocuda.block_private";
// Mark `access` block-private when `inst` names a shared space.
void markBlockPrivate(llvm::Instruction& access, const ptx::Instruction& inst);

// Metadata on the atomicrmw fadd of atom/red.add.f32 on global ("global") or generic ("generic")
// memory: on global memory the hardware flushes subnormal inputs and results to sign-preserving
// zero (the PTX ISA and the Programming Guide: atomic f32 adds on global memory always run in
// flush-to-zero mode; on shared memory they keep subnormals). The CPU device expands it
// (flushAtomicSums); AMDGPU keeps the hardware's atomic.
inline constexpr const char* kFlushedSumMetadata = "rocuda.flushed_sum";

// Module flag (i64, present when above 16): the alignment the shared window's address needs
// (SharedLayout::windowAlignment). The CPU device aligns every window to a page anyway.
inline constexpr const char* kSharedWindowAlignmentFlag = "rocuda.shared_window_align";

// Module flag (i32 1, present when true): no instruction of the module needs f32 subnormals kept
// (every f32 operation that could see or make one flushes them, .ftz, as nvcc -use_fast_math
// writes), so a target may run the module with f32 subnormals flushed by the hardware (AMD GPUs'
// denormal mode) and `__rocuda_flush_f32` needs no code of its own there.
inline constexpr const char* kF32FlushFlag = "rocuda.f32_flush";

class ModuleTranslator {
 public:
  ModuleTranslator(llvm::LLVMContext& context, const ptx::Module& ptx, std::string_view name);

  // Translate the whole module; fills `info` (kernels, globals) except KernelInfo::usesBarriers.
  Result<std::unique_ptr<llvm::Module>> translate(ModuleInfo& info);

  llvm::LLVMContext& context() { return context_; }
  llvm::Module& module() { return *module_; }
  const ptx::Module& ptx() const { return ptx_; }

  // Runtime entry points of the IR contract (declared on first use).
  llvm::Function* sregFunction(ptx::SpecialRegister reg, uint32_t index);
  llvm::Function* barrierFunction();
  llvm::Function* sharedBaseFunction();
  llvm::Function* trapFunction();
  llvm::Function* libmFunction(const std::string& name, llvm::Type* type, unsigned arity);
  // ROCUDA_MEMCHECK (translate_memcheck.cpp): `void __rocuda_memcheck(ptr address, i64 size,
  // i32 access, i32 ptxLine, ptr source, ptr localBase, i64 localSize)`, and the constant string
  // "file:line" of an instruction's CUDA source position (null when the PTX has none).
  llvm::Function* memcheckFunction();
  llvm::Constant* memcheckSource(uint32_t file, uint32_t line);

  // An instruction for diagnostics: "'<opcode as written>' at LINE:COLUMN", then " (FILE:LINE)"
  // when the PTX has its CUDA source position (nvcc -lineinfo).
  std::string describe(const ptx::Instruction& inst) const;
  // "FILE:LINE" of CUDA source position `line` of `.file` `file`; empty when line is 0.
  std::string sourcePosition(uint32_t file, uint32_t line) const;
  // The PTX text the module was parsed from, for the instructions as written (may be empty).
  std::string_view sourceText;

  // Instrument every memory access with a __rocuda_memcheck call (host code only).
  bool memcheck = false;
  // When set: translate only this kernel and the functions it can reach, with the module's
  // .global/.const variables declared rather than defined (one kernel's unit of the CPU
  // device's lazy compilation, linked against the unit that defines them); `info` then
  // describes that kernel and no globals.
  std::string onlyKernel;
  // When set, a function with an instruction the translator refuses (UnsupportedPtx) does not fail
  // the module: its body traps and the kernels that reach it carry KernelInfo::unsupported (the
  // code compiled to run; the PTX checker and the ISA tests want every refusal as an error).
  bool deferUnsupported = false;
  // Set by an instruction whose result can depend on f32 subnormals (see kF32FlushFlag).
  bool keepsF32Subnormals = false;

  llvm::GlobalVariable* findGlobal(std::string_view name) const;
  llvm::Function* findFunction(std::string_view name) const;
  const ptx::Function* findFunctionDef(std::string_view name) const;
  // What `mov r, K` gives for a kernel K (the function of a device-side launch, dynamic
  // parallelism): the address of a private constant holding K's name, by which the device's
  // runtime finds the kernel in the launching module.
  llvm::Constant* kernelReference(std::string_view kernel);
  // Whether the .func `name` can end its thread with `exit`, itself or through a direct call.
  // Such a function takes one more pointer argument, last: its caller's exit flag (an i8 the
  // function sets before returning when the thread exited), which the caller tests after the
  // call (translate_instructions_control.cpp).
  bool mayExit(std::string_view name) const { return exiting_.count(std::string(name)) != 0; }
  // Offset in the shared window of a module-scope or function-local .shared variable.
  bool sharedOffset(std::string_view name, uint64_t& offset) const;
  // Function-local shared variables are laid out module-wide, keyed "function/name".
  bool localSharedOffset(const std::string& function, std::string_view name,
                         uint64_t& offset) const;

 private:
  Status declareGlobals(ModuleInfo& info);
  Status layoutShared();
  Status declareFunctions();
  // A declared-only callee that is no device-runtime function, called from code a kernel can
  // reach: InvalidPtx naming it and the call (NVIDIA's JIT: "Unresolved extern function").
  Status checkUnresolvedCallees() const;
  void findExitingFunctions();
  Result<llvm::Constant*> initializerFor(const ptx::Variable& var, llvm::Type*& storageType);
  // The address an initializer element takes (a pointer constant).
  Result<llvm::Constant*> addressInitializer(const ptx::Variable& var,
                                             const ptx::InitializerElement& init);
  Result<llvm::Constant*> maskedAddressInitializer(const ptx::Variable& var,
                                                   llvm::Type*& storageType);
  KernelInfo kernelInfo(const ptx::Function& fn) const;

  llvm::LLVMContext& context_;
  const ptx::Module& ptx_;
  std::unique_ptr<llvm::Module> module_;
  std::unordered_map<std::string, llvm::GlobalVariable*> globals_;
  std::unordered_map<std::string, llvm::Function*> functions_;
  std::unordered_map<std::string, const ptx::Function*> functionDefs_;
  // Functions with an instruction the translator refuses (unsupported, not invalid), and why:
  // their body traps, and the kernels that reach one fail at launch (KernelInfo::unsupported),
  // not the module at load, so that a module's other kernels run (a Hopper fast path compiled
  // beside its fallback).
  std::map<std::string, std::string> unsupportedFunctions_;
  std::set<std::string> exiting_;  // see mayExit
  std::unordered_map<std::string, uint64_t> sharedOffsets_;
  std::unordered_map<std::string, uint64_t> sharedStaticBytes_;    // per kernel
  std::unordered_map<std::string, uint64_t> sharedDynamicOffset_;  // per kernel
  std::set<std::string> reservedSharedUsers_;  // kernels whose window holds the reserved region
  std::unordered_map<uint64_t, llvm::Constant*> memcheckSources_;  // (file << 32 | line)
};

class FunctionTranslator {
 public:
  FunctionTranslator(ModuleTranslator& mt, const ptx::Function& fn, llvm::Function* llvmFunction);
  Status translate();

  // ---- used by the instruction families ----
  ModuleTranslator& mt;
  const ptx::Function& fn;
  llvm::Function* function;
  llvm::IRBuilder<> b;

  // A mul with no rounding modifier and no .sat whose product is still in its register: an add
  // or sub with no rounding modifier in the same block that reads it is fused with it into one
  // fma, as ptxas does ("mul/add sequences with no rounding modifiers may be optimized to use
  // fused-multiply-add instructions"), so that results match NVIDIA's bit for bit. Any write to
  // the register forgets it. Only a product read once is fused: one with other readers keeps
  // its rounding (libdevice's powf compensates a product's rounding error with it; fused, its
  // error grew from under 4 ulp to 41).
  struct ContractibleProduct {
    llvm::Value* a;
    llvm::Value* b;
    llvm::BasicBlock* block;
    ptx::ScalarType type;
    bool ftz;
  };
  std::unordered_map<uint32_t, ContractibleProduct> contractibleProducts;
  // How many operands of the function name each register (definitions and reads): a product
  // register named twice is written once and read once.
  std::vector<uint32_t> registerMentions;

  // The records of this function's warp matrix operations (__rocuda_mma_sync), one per record
  // size (in i64 slots), reused by every instruction of that size.
  std::unordered_map<size_t, llvm::AllocaInst*> matrixRecords;

  llvm::LLVMContext& ctx() { return mt.context(); }
  llvm::Type* i1() { return b.getInt1Ty(); }
  llvm::Type* i8() { return b.getInt8Ty(); }
  llvm::Type* i32() { return b.getInt32Ty(); }
  llvm::Type* i64() { return b.getInt64Ty(); }
  llvm::Type* ptrTy() { return b.getPtrTy(); }

  // Integer type holding a PTX type's bits (i1 for predicates).
  llvm::Type* bitsType(ptx::ScalarType type);
  // The type arithmetic uses: float/double/half/bfloat, <2 x half> for f16x2, else bitsType.
  llvm::Type* valueType(ptx::ScalarType type);

  // Read an operand as a value of PTX type `type` (extends/truncates registers as PTX does).
  Result<llvm::Value*> read(const ptx::Operand& op, ptx::ScalarType type);
  // Whether `op` is a .pred register (where an instruction's grammar allows a predicate or an
  // integer in one position, e.g. cp.async's ignore-src or src-size).
  bool isPredicateRegister(const ptx::Operand& op) const {
    return op.kind == ptx::Operand::Kind::Register && op.reg() < registers_.size() &&
           registers_[op.reg()] != nullptr &&
           registers_[op.reg()]->getAllocatedType()->isIntegerTy(1);
  }
  // Write `value` (of valueType(type) or bitsType(type)) to a register operand; `_` is a no-op.
  Status write(const ptx::Operand& op, llvm::Value* value, ptx::ScalarType type);
  // The pointer an address operand `[...]` designates in state space `space`.
  Result<llvm::Value*> address(const ptx::Operand& op, ptx::StateSpace space);
  // ROCUDA_MEMCHECK: check [ptr, ptr+size) before `inst` accesses it (nothing when off).
  void checkAccess(const ptx::Instruction& inst, llvm::Value* ptr, uint64_t size, bool write,
                   ptx::StateSpace space, bool atomic = false, bool acquires = false);
  // The same for a size known only at run time (an i64).
  void checkAccess(const ptx::Instruction& inst, llvm::Value* ptr, llvm::Value* size, bool write,
                   ptx::StateSpace space, bool atomic = false, bool acquires = false);
  // Under memcheck, a fence or membar: what the race check orders accesses by.
  void checkFence(const ptx::Instruction& inst);
  // The value of a symbol used as an operand (`mov r, sym`): its address in its own space.
  Result<llvm::Value*> symbolValue(std::string_view name, int64_t offset);

  llvm::Value* sharedBase();
  llvm::AllocaInst* carryFlag();
  // This thread's exit flag (see ModuleTranslator::mayExit): a .func that may exit has it as its
  // last argument; a kernel keeps its own, cleared at entry.
  llvm::Value* exitFlag();
  // Storage of a .param variable of this function or of a caller-side .param local.
  llvm::Value* paramStorage(std::string_view name);
  // Mark the current block finished: later instructions go to a fresh (unreachable) block.
  void startDeadBlock();
  llvm::BasicBlock* labelBlock(std::string_view name);
  // `ret`: copies .reg return parameters out, then returns.
  void emitReturn();
  // A pointer to the storage of a symbol (variable, parameter, function) in any space.
  Result<llvm::Value*> symbolPointer(std::string_view name);
  // An alloca in the entry block (valid anywhere in the function).
  llvm::AllocaInst* entryAlloca(llvm::Type* type, uint64_t align, const std::string& name = "");

  Error unsupported(const ptx::Instruction& inst, const std::string& why = "") const;
  Error invalid(const ptx::Instruction& inst, const std::string& why) const;

 private:
  // A cluster special register's value (translate_function.cpp), or nullptr.
  llvm::Value* clusterRegister(ptx::SpecialRegister reg);
  llvm::Value* derivedRegister(ptx::SpecialRegister reg);
  llvm::Value* reservedSharedRegister(const ptx::Operand& op);
  Status createStorage();
  void countRegisterMentions();
  Status translateInstruction(const ptx::Instruction& inst);
  // "line:column of 'ld.global.u32'": where an operand that cannot be used is.
  std::string operandContext() const;
  // A register operand with a component, selector or '-' (parsed, not translated yet) is refused.
  Status supportedRegisterForm(const ptx::Operand& op) const;

  std::vector<llvm::AllocaInst*> registers_;
  std::unordered_map<std::string, llvm::Value*> locals_;  // .local/.param locals and params
  std::unordered_map<std::string, llvm::BasicBlock*> labels_;
  const ptx::Instruction* current_ = nullptr;  // being translated, for operand diagnostics
  llvm::BasicBlock* entry_ = nullptr;
  llvm::AllocaInst* carry_ = nullptr;
  llvm::Value* exitFlag_ = nullptr;
  llvm::Value* sharedBase_ = nullptr;
  llvm::Value* params_ = nullptr;                              // kernels: the parameter buffer
  std::vector<std::pair<uint32_t, llvm::Value*>> regReturns_;  // .reg return params -> out ptr
};

// Parse `ptxText` and translate it into a target-neutral module in `context`, filling `info`:
// InvalidPtx with every parser diagnostic, or the translator's own error. Not verified yet (the
// callers dump the IR first, so that IR that does not verify can be looked at).
// With `onlyKernel`, only that kernel (ModuleTranslator::onlyKernel); `deferUnsupported`: see
// ModuleTranslator::deferUnsupported.
Result<std::unique_ptr<llvm::Module>> translatePtx(llvm::LLVMContext& context,
                                                   std::string_view ptxText,
                                                   std::string_view moduleName, ModuleInfo& info,
                                                   bool memcheck = false,
                                                   std::string_view onlyKernel = {},
                                                   bool deferUnsupported = false);

// An Internal error saying that `stage`'s IR of `moduleName` does not verify, and why (a
// compiler fault), when `module` is not valid IR.
Status verifiedIr(const llvm::Module& module, std::string_view moduleName, std::string_view stage);

// Instruction families: each returns UnsupportedPtx for forms it does not implement.
Status translateIntegerOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateBitOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateFloatOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateCompareOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateConvertOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateMemoryOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateAtomicOp(FunctionTranslator& t, const ptx::Instruction& inst);
// How many of the instruction's operands come before the cache policy that .L2::cache_hint adds
// at the end (the policy is read, so that a bad operand is reported, and otherwise unused:
// policies are hints; createpolicy in translate_instructions_memory.cpp).
Result<size_t> operandsBeforeCachePolicy(FunctionTranslator& t, const ptx::Instruction& inst);
// cp.reduce.async.bulk's reduction of the `bytes` (i64) at `src` into `dst`, element by element
// with the instruction's operation and type (translate_instructions_atomic.cpp).
Status emitBulkReduction(FunctionTranslator& t, const ptx::Instruction& inst, llvm::Value* dst,
                         llvm::Value* src, llvm::Value* bytes);
Status translateControlOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateMovOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateWarpOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateMmaOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateWmmaOp(FunctionTranslator& t, const ptx::Instruction& inst);
// ldmatrix, stmatrix and movmatrix.
Status translateMatrixLoadStore(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateMBarrierOp(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateVideoOp(FunctionTranslator& t, const ptx::Instruction& inst);
// cp.async.mbarrier.arrive (translate_instructions_mbarrier.cpp).
Status translateAsyncArrive(FunctionTranslator& t, const ptx::Instruction& inst);
// complete_tx of `bytes` (i32) on the mbarrier at `mbarrier`, as an asynchronous copy that
// signals it does when its data has landed (translate_instructions_mbarrier.cpp).
void completeMBarrierTransactions(FunctionTranslator& t, llvm::Value* mbarrier, llvm::Value* bytes);
// Bodies for the driver "syscalls" CUDA's device runtime library declares (cooperative groups'
// grid synchronisation), where the module declares them (translate_device_syscalls.cpp).
void defineDeviceSyscalls(ModuleTranslator& mt);
// A device-runtime function at which threads wait for or combine with others (warp collectives,
// barriers, mbarrier waits), declared convergent and nounwind so that no pass moves its calls
// across control flow (translate_instructions_warp.cpp).
llvm::FunctionCallee convergentRuntimeFunction(FunctionTranslator& t, const char* name,
                                               llvm::Type* ret, std::vector<llvm::Type*> args);
// shfl.sync.idx of a 32-bit value from `lane` over the whole warp (all 32 lanes take part).
llvm::Value* shuffleFromLane(FunctionTranslator& t, llvm::Value* value, llvm::Value* lane);
Status translateBarrierReduction(FunctionTranslator& t, const ptx::Instruction& inst);
Status translateTextureOp(FunctionTranslator& t, const ptx::Instruction& inst);

// The OCP FP8 value (e4m3, or e5m2 with `e5m2`) in the low byte of `bits` (i32), widened exactly to
// f16 (translate_instructions_convert.cpp).
llvm::Value* fp8ToHalf(FunctionTranslator& t, llvm::Value* bits, bool e5m2);

// .ftz: a subnormal (of any float type, scalar or packed) becomes a zero of the same sign; an f32
// through `float __rocuda_flush_f32(float)`, an internal function of the module that targets
// running with f32 subnormals flushed may redefine (kF32FlushFlag).
llvm::Value* flushSubnormal(FunctionTranslator& t, llvm::Value* v);
// The same flush emitted inline at `B` (for code built outside a FunctionTranslator).
llvm::Value* flushBelowNormal(llvm::IRBuilder<>& B, llvm::Value* v);

// PTX min/max of two float values (element by element): -0 below +0; a NaN input yields the
// other (both NaN, or any with `propagateNaN`: the canonical NaN). The atomic min/max use it too
// ("the exact same floating-point instructions as the non-atomic min and max").
llvm::Value* minMaxOfTwo(FunctionTranslator& t, bool isMin, bool propagateNaN, llvm::Value* a,
                         llvm::Value* b);

// PTX's canonical NaN of `ty` (each element of a vector): every bit but the sign set
// (0x7fffffff, 0x7fff), what NVIDIA writes for a NaN result (translate_instructions_float.cpp).
llvm::Constant* canonicalNaN(llvm::Type* ty);

// .sat of floating-point results: clamped to [+0.0, 1.0] (-0.0 too), NaN becomes +0.0
// (translate_instructions_float.cpp).
llvm::Value* saturateUnit(FunctionTranslator& t, llvm::Value* v);

// .relu (fma, cvt): a negative result (and -0) becomes +0 and a NaN PTX's canonical NaN, element by
// element (translate_instructions_float.cpp).
llvm::Value* reluOf(FunctionTranslator& t, llvm::Value* v);

// Whether `inst`'s result can depend on f32 subnormals being kept (see kF32FlushFlag).
bool keepsF32Subnormals(const ptx::Instruction& inst);

// Move a round-to-nearest result `r` one step for .rz/.rm/.rp; `err` has the sign of exact - r
// (in r's type or a wider one).
llvm::Value* applyDirectedRounding(FunctionTranslator& t, llvm::Value* r, llvm::Value* err,
                                   const std::string& mode);

// "cvt.rz.f32.f64" for messages.
std::string instructionName(const ptx::Instruction& inst);
// InvalidPtx for `inst`: "invalid 'name' at line:column: why".
Error invalidInstruction(const ModuleTranslator& mt, const ptx::Instruction& inst,
                         const std::string& why);
// The rounding modifier of an instruction ("rn", "rzi", ...) or "" when none.
std::string roundingModifier(const ptx::Instruction& inst);

}  // namespace rocuda::compiler::detail
