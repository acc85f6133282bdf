// Work a kernel leaves for the host to do after it on AMD GPUs, defined in IR over buffers the
// host gives the module. Dynamic parallelism: the device runtime functions nvcc's kernels call to
// launch kernels (__cudaCDP2GetParameterBufferV2 / __cudaCDP2LaunchDeviceV2 and the first forms)
// and graphs (cudaGraphLaunch),
// make device-side streams and events and read the last error, over the module's launch buffer
// (amdgpu_codegen.h: kAmdgpuDeviceLaunchesSymbol). A launch only records the grid; the host runs
// it once the launching grid has finished (backends/hip). Errors are cudaError_t values, returned
// and kept as the calling thread's last error (a u16 per thread in the LDS prefix). And
// cudaGraphSetConditional, over the module's condition slots (kAmdgpuGraphConditionsSymbol).
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/amdgpu/amdgpu_lowering.h"

namespace rocuda::compiler::amdgpu {
namespace {

using Builder = llvm::IRBuilder<>;

// cudaError_t values the functions answer.
constexpr uint32_t kInvalidValue = 1, kInvalidConfiguration = 9, kMaxDepthExceeded = 65,
                   kPendingCountExceeded = 69, kInvalidResourceHandle = 400, kNotPermitted = 800;
constexpr uint64_t kTailLaunchStream = 3;  // cudaStreamTailLaunch
// cudaGraphLaunch's device-side launch modes: cudaStreamGraphTailLaunch (1 << 56),
// ...FireAndForget (2 << 56) and ...FireAndForgetAsSibling (3 << 56).
constexpr unsigned kGraphModeShift = 56;
constexpr uint64_t kRecordBytes = sizeof(AmdgpuDeviceLaunchRecord);
constexpr uint64_t kHeaderBytes = sizeof(AmdgpuDeviceLaunchHeader);
// Device-side handles are numbered from these, 16 apart (the CPU device's numbering).
constexpr uint64_t kFirstStreamHandle = 0x100, kFirstEventHandle = 0x108;
// The largest parameter buffer of cudaGetParameterBuffer (CUDA's kernel parameter limit).
constexpr uint64_t kMaxParameterBytes = 32764;

// Volatile, so that a kernel's code does not depend on which kernels share its code unit: the
// optimiser drops stores to an LDS array that no kernel of the unit reads, and partitions of a
// module (compile_amdgpu.cpp) must compile each kernel as the whole module does.
void storeLastError(Builder& b, llvm::Value* error16, llvm::Value* slot) {
  b.CreateAlignedStore(error16, slot, llvm::Align(2), /*isVolatile=*/true);
}

#define ROCUDA_FIELD(name) offsetof(AmdgpuDeviceLaunchRecord, name)
#define ROCUDA_HEADER(name) offsetof(AmdgpuDeviceLaunchHeader, name)

llvm::SyncScope::ID agentScope(llvm::LLVMContext& context) {
  return context.getOrInsertSyncScopeID("agent");
}

// The driver's CNP error code that libcudadevrt maps back to `error` (a cudaError_t the
// functions answer): its map has no invalid-handle code, which becomes invalid value.
uint32_t cnpErrorOf(uint32_t error) {
  switch (error) {
    case kInvalidConfiguration:
      return 7;
    case kMaxDepthExceeded:
      return 5;
    case kPendingCountExceeded:
      return 12;
    default:
      return 1;
  }
}

// Builds one function of the device runtime. `syscall`: the function is libcudadevrt's call of
// the driver (__cuda_syscall_cnpv2*), which answers CNP codes and leaves the last error to the
// library (it records what it maps the code to through cnpv2SetLastError).
class LaunchRuntime {
 public:
  LaunchRuntime(llvm::Function& fn, llvm::Value* lastErrors, bool syscall)
      : fn_(fn), b_(defineRuntime(fn)), lastErrors_(lastErrors), syscall_(syscall) {}

  Builder& b() { return b_; }
  llvm::BasicBlock* block(const char* name) {
    return llvm::BasicBlock::Create(fn_.getContext(), name, &fn_);
  }

  // The launch buffer's address (0 when the host gave none) and its header's fields.
  llvm::Value* buffer() {
    if (!buffer_)
      buffer_ = b_.CreateAlignedLoad(b_.getInt64Ty(),
                                     hostSetAddress(*fn_.getParent(), kAmdgpuDeviceLaunchesSymbol),
                                     llvm::Align(8));
    return buffer_;
  }
  llvm::Value* global(llvm::Value* address, uint64_t offset) {
    auto* pointer = b_.CreateIntToPtr(address, llvm::PointerType::get(fn_.getContext(), kGlobalAS));
    return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), pointer, offset);
  }
  llvm::Value* load32(llvm::Value* address, uint64_t offset) {
    return b_.CreateAlignedLoad(b_.getInt32Ty(), global(address, offset), llvm::Align(4));
  }
  void store32(llvm::Value* value, llvm::Value* address, uint64_t offset) {
    b_.CreateAlignedStore(value, global(address, offset), llvm::Align(4));
  }
  llvm::Value* atomicAdd(llvm::Value* pointer, llvm::Value* value) {
    return b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, pointer, value,
                              llvm::Align(value->getType()->getPrimitiveSizeInBits() / 8),
                              llvm::AtomicOrdering::Monotonic, agentScope(fn_.getContext()));
  }

  // The calling thread's last error (u16 in the LDS prefix).
  llvm::Value* lastErrorSlot() {
    return b_.CreateInBoundsGEP(b_.getInt16Ty(), lastErrors_, linearThreadIndex(b_));
  }
  void setLastError(llvm::Value* error16) { storeLastError(b_, error16, lastErrorSlot()); }
  // Branch to a block returning `error` (a cudaError_t, not cudaSuccess) when `failed`, kept as
  // the last error (a syscall returns its CNP code instead); go on in a new block otherwise.
  void failIf(llvm::Value* failed, uint32_t error) {
    llvm::BasicBlock *fail = block("fail"), *next = block("next");
    b_.CreateCondBr(failed, fail, next);
    b_.SetInsertPoint(fail);
    if (syscall_) {
      b_.CreateRet(b_.getInt32(cnpErrorOf(error)));
    } else {
      setLastError(b_.getInt16(static_cast<uint16_t>(error)));
      b_.CreateRet(b_.getInt32(error));
    }
    b_.SetInsertPoint(next);
  }

  // A record of `paramBytes` (i32) cut from the buffer; returns the parameters' address (i64),
  // 0 with the last error set when the buffer has no room.
  llvm::Value* handOut(llvm::Value* kernelName, llvm::Value* grid[3], llvm::Value* blockDim[3],
                       llvm::Value* sharedBytes, llvm::Value* paramBytes) {
    llvm::BasicBlock *room = block("room"), *full = block("full"), *out = block("out");
    llvm::Value* address = buffer();
    llvm::BasicBlock* cut = block("cut");
    b_.CreateCondBr(b_.CreateICmpEQ(address, b_.getInt64(0)), full, cut);
    b_.SetInsertPoint(cut);
    // amdgpuDeviceLaunchRecordBytes(paramBytes), which the host walks the records by.
    llvm::Value* size = b_.CreateAnd(
        b_.CreateAdd(b_.CreateZExt(paramBytes, b_.getInt64Ty()), b_.getInt64(kRecordBytes + 15)),
        b_.getInt64(~uint64_t(15)));
    llvm::Value* offset = atomicAdd(global(address, ROCUDA_HEADER(used)), size);
    llvm::Value* capacity = b_.CreateAlignedLoad(
        b_.getInt64Ty(), global(address, ROCUDA_HEADER(capacity)), llvm::Align(8));
    b_.CreateCondBr(b_.CreateICmpULE(b_.CreateAdd(offset, size), capacity), room, full);

    b_.SetInsertPoint(room);
    llvm::Value* record = b_.CreateAdd(b_.CreateAdd(address, b_.getInt64(kHeaderBytes)), offset);
    b_.CreateAlignedStore(kernelName, global(record, ROCUDA_FIELD(kernelName)), llvm::Align(8));
    for (int i = 0; i < 3; ++i) {
      store32(grid[i], record, ROCUDA_FIELD(grid) + 4 * i);
      store32(blockDim[i], record, ROCUDA_FIELD(block) + 4 * i);
    }
    store32(sharedBytes, record, ROCUDA_FIELD(sharedBytes));
    store32(paramBytes, record, ROCUDA_FIELD(paramBytes));
    store32(b_.getInt32(0), record, ROCUDA_FIELD(sequence));
    store32(b_.getInt32(0), record, ROCUDA_FIELD(mode));
    llvm::Value* parameters = b_.CreateAdd(record, b_.getInt64(kRecordBytes));
    b_.CreateBr(out);

    b_.SetInsertPoint(full);
    setLastError(b_.getInt16(kPendingCountExceeded));
    b_.CreateBr(out);

    b_.SetInsertPoint(out);
    llvm::PHINode* result = b_.CreatePHI(b_.getInt64Ty(), 2);
    result->addIncoming(parameters, room);
    result->addIncoming(b_.getInt64(0), full);
    return result;
  }

  // Launch the record before `parameters` (i64, not 0) into `stream`: its shape checked, its
  // depth within CUDA's limit, numbered for the host. Returns cudaSuccess.
  void launchRecord(llvm::Value* parameters, llvm::Value* stream) {
    llvm::Value* record = b_.CreateSub(parameters, b_.getInt64(kRecordBytes));
    llvm::Value* grid[3];
    llvm::Value* threads = b_.getInt64(1);
    llvm::Value* bad = b_.getFalse();
    for (int i = 0; i < 3; ++i) {
      grid[i] = load32(record, ROCUDA_FIELD(grid) + 4 * i);
      llvm::Value* extent = load32(record, ROCUDA_FIELD(block) + 4 * i);
      threads = b_.CreateMul(threads, b_.CreateZExt(extent, b_.getInt64Ty()));
      bad = b_.CreateOr(bad, b_.CreateICmpEQ(grid[i], b_.getInt32(0)));
      if (i == 2) bad = b_.CreateOr(bad, b_.CreateICmpUGT(extent, b_.getInt32(64)));
      if (i > 0) bad = b_.CreateOr(bad, b_.CreateICmpUGT(grid[i], b_.getInt32(65535)));
    }
    bad = b_.CreateOr(bad, b_.CreateICmpEQ(threads, b_.getInt64(0)));
    bad = b_.CreateOr(bad, b_.CreateICmpUGT(threads, b_.getInt64(1024)));
    failIf(bad, kInvalidConfiguration);
    llvm::Value* address = buffer();
    failIf(b_.CreateICmpEQ(address, b_.getInt64(0)), kInvalidValue);
    llvm::Value* depth = load32(address, ROCUDA_HEADER(depth));
    failIf(
        b_.CreateICmpUGE(b_.CreateAdd(depth, b_.getInt32(1)), b_.getInt32(kAmdgpuMaxLaunchNesting)),
        kMaxDepthExceeded);
    number(record,
           b_.CreateZExt(b_.CreateICmpEQ(stream, b_.getInt64(kTailLaunchStream)), b_.getInt32Ty()));
    b_.CreateRet(b_.getInt32(0));
  }

  // Number `record` for the host (an atomic add to the header's `launched`) with its `mode`.
  void number(llvm::Value* record, llvm::Value* mode) {
    llvm::Value* sequence = b_.CreateAdd(
        atomicAdd(global(buffer(), ROCUDA_HEADER(launched)), b_.getInt32(1)), b_.getInt32(1));
    store32(mode, record, ROCUDA_FIELD(mode));
    store32(sequence, record, ROCUDA_FIELD(sequence));
  }

  // A record of work the host does after the grid (a graph launch, a node update): `name` (i64)
  // in its kernelName, `words` in its grid, `size` bytes (i32) from `value` (a flat pointer, or
  // null) after it, numbered with `mode`. Returns from the function with
  // cudaErrorLaunchPendingCountExceeded (kept as the last error) when the buffer has no room; goes
  // on in a new block otherwise.
  void recordForHost(llvm::Value* name, llvm::Value* mode, llvm::Value* words[3],
                     llvm::Value* value, llvm::Value* size) {
    llvm::Value* zero = b_.getInt32(0);
    llvm::Value* none[3] = {zero, zero, zero};
    llvm::Value* parameters = handOut(name, words, none, zero, size);
    llvm::BasicBlock *full = block("full"), *room = block("room");
    b_.CreateCondBr(b_.CreateICmpEQ(parameters, b_.getInt64(0)), full, room);
    b_.SetInsertPoint(full);
    b_.CreateRet(b_.getInt32(kPendingCountExceeded));
    b_.SetInsertPoint(room);
    if (value != nullptr)
      b_.CreateMemCpy(
          b_.CreateIntToPtr(parameters, llvm::PointerType::get(fn_.getContext(), kGlobalAS)),
          llvm::MaybeAlign(1), value, llvm::MaybeAlign(1), size);
    number(b_.CreateSub(parameters, b_.getInt64(kRecordBytes)), mode);
  }

  // cudaGraphLaunch(graphExec, stream): a record without parameters naming the graph and its
  // launch mode, numbered for the host, which hands it to the graph launch running the grid.
  // Refused here: another stream, and any launch of a grid that runs outside a graph.
  void launchGraph(llvm::Value* graphExec, llvm::Value* stream) {
    llvm::Value* mode = b_.CreateLShr(stream, kGraphModeShift);
    failIf(b_.CreateOr(b_.CreateICmpNE(b_.CreateShl(mode, kGraphModeShift), stream),
                       b_.CreateOr(b_.CreateICmpEQ(mode, b_.getInt64(0)),
                                   b_.CreateICmpUGT(mode, b_.getInt64(3)))),
           kInvalidValue);
    llvm::Value* address = buffer();
    failIf(b_.CreateICmpEQ(address, b_.getInt64(0)), kNotPermitted);
    failIf(b_.CreateICmpEQ(load32(address, ROCUDA_HEADER(inGraph)), b_.getInt32(0)), kNotPermitted);
    llvm::Value* zero = b_.getInt32(0);
    llvm::Value* none[3] = {zero, zero, zero};
    recordForHost(
        graphExec,
        b_.CreateAdd(b_.getInt32(kAmdgpuGraphLaunchMode), b_.CreateTrunc(mode, b_.getInt32Ty())),
        none, nullptr, zero);
    b_.CreateRet(b_.getInt32(0));
  }

  // An update of the device-updatable node `node` (i64): a record of `field`
  // (cudaGraphKernelNodeField) with `words` in its grid and `size` bytes from `value` after it.
  void recordNodeUpdate(llvm::Value* node, uint32_t field, llvm::Value* words[3],
                        llvm::Value* value, llvm::Value* size) {
    failIf(b_.CreateICmpEQ(buffer(), b_.getInt64(0)), kInvalidValue);
    recordForHost(node, b_.getInt32(kAmdgpuNodeUpdateMode + field), words, value, size);
  }
  // The three updates: of the parameters (offset i64, value flat pointer, size i64), the
  // enabled state (i32) and the grid (three i32, checked against CUDA's limits).
  void recordParamUpdate(llvm::Value* node, llvm::Value* offset, llvm::Value* value,
                         llvm::Value* size) {
    failIf(b_.CreateICmpUGT(size, b_.getInt64(kMaxParameterBytes)), kInvalidValue);
    llvm::Value* words[3] = {b_.CreateTrunc(offset, b_.getInt32Ty()),
                             b_.CreateTrunc(b_.CreateLShr(offset, 32), b_.getInt32Ty()),
                             b_.getInt32(0)};
    recordNodeUpdate(node, kParamField, words, value, b_.CreateTrunc(size, b_.getInt32Ty()));
  }
  void recordEnabledUpdate(llvm::Value* node, llvm::Value* enable) {
    llvm::Value* words[3] = {
        b_.CreateZExt(b_.CreateICmpNE(enable, b_.getInt32(0)), b_.getInt32Ty()), b_.getInt32(0),
        b_.getInt32(0)};
    recordNodeUpdate(node, kEnabledField, words, nullptr, b_.getInt32(0));
  }
  void recordGridUpdate(llvm::Value* node, llvm::Value* grid[3]) {
    llvm::Value* bad = b_.CreateICmpUGT(grid[0], b_.getInt32(0x7fffffff));
    for (int i = 0; i < 3; ++i) bad = b_.CreateOr(bad, b_.CreateICmpEQ(grid[i], b_.getInt32(0)));
    for (int i = 1; i < 3; ++i)
      bad = b_.CreateOr(bad, b_.CreateICmpUGT(grid[i], b_.getInt32(65535)));
    failIf(bad, kInvalidValue);
    recordNodeUpdate(node, kGridField, grid, nullptr, b_.getInt32(0));
  }
  static constexpr uint32_t kGridField = 1, kParamField = 2, kEnabledField = 3;

  // A new device-side handle, numbered from `first`.
  llvm::Value* newHandle(uint64_t first) {
    llvm::BasicBlock *count = block("count"), *made = block("made");
    llvm::Value* address = buffer();
    llvm::BasicBlock* entry = b_.GetInsertBlock();
    b_.CreateCondBr(b_.CreateICmpEQ(address, b_.getInt64(0)), made, count);
    b_.SetInsertPoint(count);
    llvm::Value* number = atomicAdd(global(address, ROCUDA_HEADER(handles)), b_.getInt32(1));
    b_.CreateBr(made);
    b_.SetInsertPoint(made);
    llvm::PHINode* n = b_.CreatePHI(b_.getInt32Ty(), 2);
    n->addIncoming(b_.getInt32(0), entry);
    n->addIncoming(number, count);
    return b_.CreateAdd(b_.getInt64(first), b_.CreateShl(b_.CreateZExt(n, b_.getInt64Ty()), 4));
  }

 private:
  llvm::Function& fn_;
  Builder b_;
  llvm::Value* lastErrors_;
  bool syscall_;
  llvm::Value* buffer_ = nullptr;
};

constexpr const char* kParamBytesFunction = "__rocuda_kernel_param_bytes";
// The same for the packed size (KernelInfo::parametersEnd), which cudaLaunchDevice checks.
constexpr const char* kParamEndFunction = "__rocuda_kernel_param_end";
// On a kernel reference: {parameter buffer bytes, packed bytes}.
constexpr const char* kParamBytesMetadata = "rocuda.param_bytes";
constexpr std::string_view kReferencePrefix = "__rocuda_kernel_ref.";

// The parameter bytes of the kernel whose name is at `kernelName` (i64), with the padding to
// the buffer's alignment or `packed` (KernelInfo::parametersEnd): a call that
// resolveKernelParameterBytes answers after the optimiser, when the argument is a kernel
// reference in the common case. Each reference carries its kernel's sizes; the largest kernel's
// is the call's second argument.
llvm::Value* parameterBytesOf(Builder& b, llvm::Module& module, const ModuleInfo& info,
                              llvm::Value* kernelName, bool packed = false) {
  uint64_t largest = 0;
  for (const KernelInfo& kernel : info.kernels)
    largest = std::max<uint64_t>(largest, packed ? kernel.parametersEnd() : kernel.paramBufferSize);
  for (llvm::GlobalVariable& reference : module.globals()) {
    if (!reference.getName().starts_with(kReferencePrefix) ||
        reference.getMetadata(kParamBytesMetadata))
      continue;
    std::string_view name = reference.getName().drop_front(kReferencePrefix.size());
    auto kernel = std::find_if(info.kernels.begin(), info.kernels.end(),
                               [&](const KernelInfo& k) { return k.name == name; });
    if (kernel == info.kernels.end()) continue;
    reference.setMetadata(
        kParamBytesMetadata,
        llvm::MDNode::get(module.getContext(),
                          {llvm::ConstantAsMetadata::get(b.getInt32(kernel->paramBufferSize)),
                           llvm::ConstantAsMetadata::get(b.getInt32(kernel->parametersEnd()))}));
  }
  auto* type = llvm::FunctionType::get(b.getInt32Ty(), {b.getInt64Ty(), b.getInt32Ty()}, false);
  llvm::FunctionCallee callee =
      module.getOrInsertFunction(packed ? kParamEndFunction : kParamBytesFunction, type);
  auto* fn = llvm::cast<llvm::Function>(callee.getCallee());
  fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  fn->setWillReturn();
  return b.CreateCall(callee, {kernelName, b.getInt32(static_cast<uint32_t>(largest))});
}

// Three u32 of a dim3 the caller passed by address.
void loadDim3(Builder& b, llvm::Value* pointer, llvm::Value* into[3]) {
  for (int i = 0; i < 3; ++i)
    into[i] = b.CreateAlignedLoad(b.getInt32Ty(),
                                  b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), pointer, 4 * i),
                                  llvm::Align(4));
}

bool signatureIs(const llvm::Function& fn, llvm::Type* result,
                 std::initializer_list<llvm::Type*> params) {
  if (fn.getReturnType() != result || fn.arg_size() != params.size()) return false;
  unsigned i = 0;
  for (llvm::Type* type : params)
    if (fn.getArg(i++)->getType() != type) return false;
  return true;
}

}  // namespace

bool defineDeviceLaunchFunction(llvm::Function& fn, llvm::Value* lastErrors,
                                const ModuleInfo& info) {
  llvm::LLVMContext& c = fn.getContext();
  auto* i32 = llvm::Type::getInt32Ty(c);
  auto* i64 = llvm::Type::getInt64Ty(c);
  auto* ptr = llvm::PointerType::get(c, kFlatAS);
  std::string_view name = fn.getName();
  // libcudadevrt's calls of the driver: the same functions under other names (argument types
  // differ only where noted below), answering CNP codes.
  bool syscall = name.starts_with("__cuda_syscall_cnpv2");
  if (syscall) {
    static const std::pair<std::string_view, std::string_view> kSameAs[] = {
        {"GetParameterBufferV2", "__cudaCDP2GetParameterBufferV2"},
        {"GetParameterBuffer", "__cudaCDP2GetParameterBuffer"},
        {"LaunchDeviceV2", "__cudaCDP2LaunchDeviceV2"},
        {"LaunchDevice", "__cudaCDP2LaunchDevice"},
        // The library's cudaGetLastError calls this, then SetLastError(0); its
        // cudaPeekAtLastError calls only this: the driver's call reads without clearing.
        {"GetLastError", "__cudaCDP2PeekAtLastError"},
        {"StreamCreate", "__cudaCDP2StreamCreateWithFlags"},
        {"EventCreate", "__cudaCDP2EventCreateWithFlags"},
        {"StreamDestroy", "__cudaCDP2StreamDestroy"},
        {"EventDestroy", "__cudaCDP2EventDestroy"},
        {"EventRecord", "__cudaCDP2EventRecord"},
        {"StreamWaitEvent", "__cudaCDP2StreamWaitEvent"}};
    std::string_view call = name.substr(std::string_view("__cuda_syscall_cnpv2").size());
    if (call == "SetLastError" && signatureIs(fn, i32, {i32})) {
      // The error the library made of a CNP code: the thread's last error, returned.
      LaunchRuntime r(fn, lastErrors, syscall);
      r.setLastError(r.b().CreateTrunc(fn.getArg(0), r.b().getInt16Ty()));
      r.b().CreateRet(fn.getArg(0));
      return true;
    }
    auto same = std::find_if(std::begin(kSameAs), std::end(kSameAs),
                             [&](const auto& entry) { return entry.first == call; });
    if (same == std::end(kSameAs)) return false;
    name = same->second;
  }
  // A dim3 the caller passed by address (a pointer, or an i64 in the syscalls).
  auto dim3At = [&](Builder& b, llvm::Value* address, llvm::Value* into[3]) {
    loadDim3(b, address->getType()->isPointerTy() ? address : b.CreateIntToPtr(address, ptr), into);
  };

  if (name == "__cudaCDP2GetParameterBufferV2" && signatureIs(fn, i64, {i64, ptr, ptr, i32})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    llvm::Value *grid[3], *blockDim[3];
    loadDim3(b, fn.getArg(1), grid);
    loadDim3(b, fn.getArg(2), blockDim);
    llvm::Value* bytes = parameterBytesOf(b, *fn.getParent(), info, fn.getArg(0));
    b.CreateRet(r.handOut(fn.getArg(0), grid, blockDim, fn.getArg(3), bytes));
    return true;
  }
  if (name == "__cudaCDP2GetParameterBuffer" &&
      (signatureIs(fn, i64, {i64, i64}) || (syscall && signatureIs(fn, i64, {i32, i32})))) {
    // (alignment, size): the kernel and shape come with cudaLaunchDevice.
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    llvm::BasicBlock *big = r.block("too_big"), *fits = r.block("fits");
    llvm::Value* size = b.CreateZExt(fn.getArg(1), i64);
    b.CreateCondBr(b.CreateICmpUGT(size, b.getInt64(kMaxParameterBytes)), big, fits);
    b.SetInsertPoint(big);
    r.setLastError(b.getInt16(kInvalidValue));
    b.CreateRet(b.getInt64(0));
    b.SetInsertPoint(fits);
    llvm::Value* zero = b.getInt32(0);
    llvm::Value* dims[3] = {zero, zero, zero};
    b.CreateRet(r.handOut(b.getInt64(0), dims, dims, zero, b.CreateTrunc(size, i32)));
    return true;
  }
  if (name == "cudaGraphLaunch" && !syscall && signatureIs(fn, i32, {i64, i64})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    r.launchGraph(fn.getArg(0), fn.getArg(1));
    return true;
  }
  if (name == "cudaGraphKernelNodeSetParam" && !syscall &&
      signatureIs(fn, i32, {i64, i64, i64, i64})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    r.recordParamUpdate(fn.getArg(0), fn.getArg(1), r.b().CreateIntToPtr(fn.getArg(2), ptr),
                        fn.getArg(3));
    r.b().CreateRet(r.b().getInt32(0));
    return true;
  }
  if (name == "cudaGraphKernelNodeSetEnabled" && !syscall && signatureIs(fn, i32, {i64, i32})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    r.recordEnabledUpdate(fn.getArg(0), fn.getArg(1));
    r.b().CreateRet(r.b().getInt32(0));
    return true;
  }
  if (name == "cudaGraphKernelNodeSetGridDim" && !syscall && signatureIs(fn, i32, {i64, ptr})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    llvm::Value* grid[3];
    loadDim3(r.b(), fn.getArg(1), grid);
    r.recordGridUpdate(fn.getArg(0), grid);
    r.b().CreateRet(r.b().getInt32(0));
    return true;
  }
  if (name == "cudaGraphKernelNodeUpdatesApply" && !syscall && signatureIs(fn, i32, {i64, i64})) {
    // cudaGraphKernelNodeUpdate (40 bytes): the node, the field (u32 at 8), then at 16 a dim3,
    // {pValue, offset, size} or the enabled flag. In order; the first failure returns.
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    r.buffer();  // loaded in the entry block, which dominates every update's record
    llvm::Value* updates = b.CreateIntToPtr(fn.getArg(0), ptr);
    llvm::Value* count = fn.getArg(1);
    llvm::BasicBlock* entry = b.GetInsertBlock();
    llvm::BasicBlock *head = r.block("update"), *done = r.block("done");
    b.CreateCondBr(b.CreateICmpEQ(count, b.getInt64(0)), done, head);
    b.SetInsertPoint(head);
    llvm::PHINode* index = b.CreatePHI(i64, 2);
    index->addIncoming(b.getInt64(0), entry);
    llvm::Value* update = b.CreateGEP(b.getInt8Ty(), updates, b.CreateMul(index, b.getInt64(40)));
    auto at = [&](uint64_t offset) {
      return b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), update, offset);
    };
    llvm::Value* node = b.CreateAlignedLoad(i64, at(0), llvm::Align(8));
    llvm::Value* field = b.CreateAlignedLoad(i32, at(8), llvm::Align(4));
    llvm::BasicBlock *grid = r.block("grid"), *param = r.block("param"),
                     *enabled = r.block("enabled"), *bad = r.block("bad"), *next = r.block("next");
    llvm::SwitchInst* which = b.CreateSwitch(field, bad, 3);
    which->addCase(b.getInt32(LaunchRuntime::kGridField), grid);
    which->addCase(b.getInt32(LaunchRuntime::kParamField), param);
    which->addCase(b.getInt32(LaunchRuntime::kEnabledField), enabled);
    b.SetInsertPoint(bad);
    r.failIf(b.getTrue(), kInvalidValue);
    b.CreateBr(next);  // unreachable: failIf returned
    b.SetInsertPoint(grid);
    llvm::Value* dims[3];
    loadDim3(b, at(16), dims);
    r.recordGridUpdate(node, dims);
    b.CreateBr(next);
    b.SetInsertPoint(param);
    llvm::Value* value = b.CreateIntToPtr(b.CreateAlignedLoad(i64, at(16), llvm::Align(8)), ptr);
    r.recordParamUpdate(node, b.CreateAlignedLoad(i64, at(24), llvm::Align(8)), value,
                        b.CreateAlignedLoad(i64, at(32), llvm::Align(8)));
    b.CreateBr(next);
    b.SetInsertPoint(enabled);
    r.recordEnabledUpdate(node, b.CreateAlignedLoad(i32, at(16), llvm::Align(4)));
    b.CreateBr(next);
    b.SetInsertPoint(next);
    llvm::Value* following = b.CreateAdd(index, b.getInt64(1));
    index->addIncoming(following, next);
    b.CreateCondBr(b.CreateICmpULT(following, count), head, done);
    b.SetInsertPoint(done);
    b.CreateRet(b.getInt32(0));
    return true;
  }
  if (name == "__cudaCDP2LaunchDeviceV2" && signatureIs(fn, i32, {i64, i64})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    llvm::Value* parameters = fn.getArg(0);
    r.failIf(b.CreateICmpEQ(parameters, b.getInt64(0)), kInvalidValue);
    llvm::Value* record = b.CreateSub(parameters, b.getInt64(kRecordBytes));
    llvm::Value* named =
        b.CreateAlignedLoad(i64, r.global(record, ROCUDA_FIELD(kernelName)), llvm::Align(8));
    r.failIf(b.CreateICmpEQ(named, b.getInt64(0)), kInvalidValue);
    r.launchRecord(parameters, fn.getArg(1));
    return true;
  }
  if (name == "__cudaCDP2LaunchDevice" &&
      (signatureIs(fn, i32, {i64, i64, ptr, ptr, i32, i64}) ||
       (syscall && signatureIs(fn, i32, {i64, i64, i64, i64, i32, i64})))) {
    // (kernel, buffer, grid, block, shared bytes, stream): names a cudaGetParameterBuffer record.
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    llvm::Value *kernel = fn.getArg(0), *parameters = fn.getArg(1);
    r.failIf(b.CreateOr(b.CreateICmpEQ(parameters, b.getInt64(0)),
                        b.CreateICmpEQ(kernel, b.getInt64(0))),
             kInvalidValue);
    llvm::Value* record = b.CreateSub(parameters, b.getInt64(kRecordBytes));
    llvm::Value* named =
        b.CreateAlignedLoad(i64, r.global(record, ROCUDA_FIELD(kernelName)), llvm::Align(8));
    llvm::Value* room = r.load32(record, ROCUDA_FIELD(paramBytes));
    llvm::Value* needed = parameterBytesOf(b, *fn.getParent(), info, kernel, /*packed=*/true);
    r.failIf(b.CreateOr(b.CreateICmpNE(named, b.getInt64(0)), b.CreateICmpULT(room, needed)),
             kInvalidValue);
    llvm::Value *grid[3], *blockDim[3];
    dim3At(b, fn.getArg(2), grid);
    dim3At(b, fn.getArg(3), blockDim);
    b.CreateAlignedStore(kernel, r.global(record, ROCUDA_FIELD(kernelName)), llvm::Align(8));
    for (int i = 0; i < 3; ++i) {
      r.store32(grid[i], record, ROCUDA_FIELD(grid) + 4 * i);
      r.store32(blockDim[i], record, ROCUDA_FIELD(block) + 4 * i);
    }
    r.store32(fn.getArg(4), record, ROCUDA_FIELD(sharedBytes));
    r.launchRecord(parameters, fn.getArg(5));
    return true;
  }
  if ((name == "__cudaCDP2GetLastError" || name == "__cudaCDP2PeekAtLastError") &&
      signatureIs(fn, i32, {})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    llvm::Value* slot = r.lastErrorSlot();
    llvm::Value* error = b.CreateAlignedLoad(b.getInt16Ty(), slot, llvm::Align(2));
    if (name == "__cudaCDP2GetLastError") storeLastError(b, b.getInt16(0), slot);
    b.CreateRet(b.CreateZExt(error, i32));
    return true;
  }
  bool stream = name == "__cudaCDP2StreamCreateWithFlags";
  if ((stream || name == "__cudaCDP2EventCreateWithFlags") && signatureIs(fn, i32, {i64, i32})) {
    // Non-blocking streams and events without timing only, as CUDA's device runtime requires.
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    uint32_t flags = stream ? 1 : 2;  // cudaStreamNonBlocking, cudaEventDisableTiming
    r.failIf(b.CreateOr(b.CreateICmpEQ(fn.getArg(0), b.getInt64(0)),
                        b.CreateICmpNE(fn.getArg(1), b.getInt32(flags))),
             kInvalidValue);
    llvm::Value* handle = r.newHandle(stream ? kFirstStreamHandle : kFirstEventHandle);
    b.CreateAlignedStore(handle, b.CreateIntToPtr(fn.getArg(0), ptr), llvm::Align(8));
    b.CreateRet(b.getInt32(0));
    return true;
  }
  // Grids run in one total order, so recording and waiting have nothing left to order: only
  // the handles are checked.
  if ((name == "__cudaCDP2StreamDestroy" || name == "__cudaCDP2EventDestroy") &&
      signatureIs(fn, i32, {i64})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    r.failIf(b.CreateICmpEQ(fn.getArg(0), b.getInt64(0)), kInvalidResourceHandle);
    b.CreateRet(b.getInt32(0));
    return true;
  }
  if (name == "__cudaCDP2EventRecord" && signatureIs(fn, i32, {i64, i64})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    r.failIf(b.CreateICmpEQ(fn.getArg(0), b.getInt64(0)), kInvalidResourceHandle);
    b.CreateRet(b.getInt32(0));
    return true;
  }
  if (name == "__cudaCDP2StreamWaitEvent" && signatureIs(fn, i32, {i64, i64, i32})) {
    LaunchRuntime r(fn, lastErrors, syscall);
    Builder& b = r.b();
    r.failIf(b.CreateICmpNE(fn.getArg(2), b.getInt32(0)), kInvalidValue);
    r.failIf(b.CreateICmpEQ(fn.getArg(1), b.getInt64(0)), kInvalidResourceHandle);
    b.CreateRet(b.getInt32(0));
    return true;
  }
  return false;
}

bool defineGraphSetConditional(llvm::Function& fn) {
  llvm::LLVMContext& c = fn.getContext();
  if (fn.getName() != "cudaGraphSetConditional" ||
      !signatureIs(fn, llvm::Type::getVoidTy(c),
                   {llvm::Type::getInt64Ty(c), llvm::Type::getInt32Ty(c)}))
    return false;
  Builder b = defineRuntime(fn);
  auto block = [&](const char* name) { return llvm::BasicBlock::Create(c, name, &fn); };
  llvm::BasicBlock *entry = b.GetInsertBlock(), *probe = block("probe"), *write = block("write"),
                   *next = block("next"), *done = block("done");
  llvm::Value* handle = fn.getArg(0);
  llvm::Value* table = b.CreateAlignedLoad(
      b.getInt64Ty(), hostSetAddress(*fn.getParent(), kAmdgpuGraphConditionsSymbol),
      llvm::Align(8));
  b.CreateCondBr(
      b.CreateOr(b.CreateICmpEQ(table, b.getInt64(0)), b.CreateICmpEQ(handle, b.getInt64(0))), done,
      probe);
  b.SetInsertPoint(probe);
  llvm::PHINode* index = b.CreatePHI(b.getInt64Ty(), 2);
  index->addIncoming(b.getInt64(0), entry);
  llvm::Value* slot = b.CreateIntToPtr(
      b.CreateAdd(table, b.CreateMul(index, b.getInt64(sizeof(AmdgpuGraphConditionSlot)))),
      llvm::PointerType::get(c, kGlobalAS));
  auto* exchange = b.CreateAtomicCmpXchg(slot, b.getInt64(0), handle, llvm::Align(8),
                                         llvm::AtomicOrdering::Monotonic,
                                         llvm::AtomicOrdering::Monotonic, agentScope(c));
  llvm::Value* mine = b.CreateOr(b.CreateExtractValue(exchange, 1),
                                 b.CreateICmpEQ(b.CreateExtractValue(exchange, 0), handle));
  b.CreateCondBr(mine, write, next);
  b.SetInsertPoint(write);
  b.CreateAlignedStore(
      fn.getArg(1),
      b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), slot, offsetof(AmdgpuGraphConditionSlot, value)),
      llvm::Align(8));
  b.CreateBr(done);
  b.SetInsertPoint(next);
  llvm::Value* following = b.CreateAdd(index, b.getInt64(1));
  index->addIncoming(following, next);
  auto* back = b.CreateCondBr(b.CreateICmpULT(following, b.getInt64(kAmdgpuGraphConditionSlots)),
                              probe, done);
  // One probe at a time: a kernel's few calls do not need the loop unrolled at every call site.
  llvm::MDNode* disable =
      llvm::MDNode::get(c, {llvm::MDString::get(c, "llvm.loop.unroll.disable")});
  llvm::MDNode* loop = llvm::MDNode::getDistinct(c, {nullptr, disable});
  loop->replaceOperandWith(0, loop);
  back->setMetadata(llvm::LLVMContext::MD_loop, loop);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  return true;
}

void clearLastErrorAtEntry(llvm::Function& kernel, llvm::Value* lastErrors) {
  llvm::BasicBlock& entry = kernel.getEntryBlock();
  auto at = entry.getFirstInsertionPt();
  while (llvm::isa<llvm::AllocaInst>(*at)) ++at;  // the allocas stay static
  Builder b(&entry, at);
  storeLastError(b, b.getInt16(0),
                 b.CreateInBoundsGEP(b.getInt16Ty(), lastErrors, linearThreadIndex(b)));
}

void resolveKernelParameterBytes(llvm::Module& module) {
  for (auto [function, operand] : {std::pair{kParamBytesFunction, 0u}, {kParamEndFunction, 1u}}) {
    llvm::Function* fn = module.getFunction(function);
    if (fn == nullptr) continue;
    std::vector<std::pair<llvm::GlobalVariable*, uint32_t>> references;
    for (llvm::GlobalVariable& reference : module.globals())
      if (llvm::MDNode* bytes = reference.getMetadata(kParamBytesMetadata))
        references.emplace_back(
            &reference, static_cast<uint32_t>(
                            llvm::mdconst::extract<llvm::ConstantInt>(bytes->getOperand(operand))
                                ->getZExtValue()));
    std::vector<llvm::CallInst*> calls;
    for (llvm::User* user : fn->users())
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(user)) calls.push_back(call);
    for (llvm::CallInst* call : calls) {
      llvm::Value* kernelName = call->getArgOperand(0);
      llvm::Value* bytes = call->getArgOperand(1);  // the largest kernel's
      // `ptrtoint (addrspacecast @reference)` where the call names a kernel directly.
      const llvm::GlobalVariable* named = nullptr;
      if (auto* cast = llvm::dyn_cast<llvm::ConstantExpr>(kernelName);
          cast != nullptr && cast->getOpcode() == llvm::Instruction::PtrToInt)
        named = llvm::dyn_cast<llvm::GlobalVariable>(cast->getOperand(0)->stripPointerCasts());
      auto known = std::find_if(references.begin(), references.end(),
                                [&](const auto& r) { return r.first == named; });
      Builder b(call);
      if (known != references.end()) {
        bytes = b.getInt32(known->second);
      } else {
        for (const auto& [reference, size] : references) {
          llvm::Constant* flat = llvm::ConstantExpr::getPointerCast(
              reference, llvm::PointerType::get(module.getContext(), kFlatAS));
          bytes = b.CreateSelect(
              b.CreateICmpEQ(kernelName, llvm::ConstantExpr::getPtrToInt(flat, b.getInt64Ty())),
              b.getInt32(size), bytes);
        }
      }
      call->replaceAllUsesWith(bytes);
      call->eraseFromParent();
    }
    fn->eraseFromParent();
  }
}

#undef ROCUDA_FIELD
#undef ROCUDA_HEADER

}  // namespace rocuda::compiler::amdgpu
