// Parallel compilation of one module: its kernels are divided into partitions, each optimised
// and compiled to an object on its own thread in its own LLVMContext; lld links the objects into
// one code object (link_code_object.cpp merges their metadata notes).
//
// A partition defines its kernels and every function they call (copies, made internal, where
// kernels of several partitions share one), so each kernel's register, LDS and scratch use is
// computed from all of its code, as in a whole-module compile. Variables: partition 0 defines
// them, the others refer to them (through available_externally copies, which their optimiser
// still reads). LDS variables are per kernel anyway and go wherever they are used.
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <map>
#include <set>

#include "compiler/amdgpu/amdgpu_lowering.h"

namespace rocuda::compiler::amdgpu {
namespace {

bool isKernel(const llvm::Function& fn) {
  return fn.getCallingConv() == llvm::CallingConv::AMDGPU_KERNEL && !fn.isDeclaration();
}

// The first function whose address the module uses other than as a direct callee (function
// pointers, indirect calls, address tables): its possible callers cannot be known per kernel.
const llvm::Function* addressTakenFunction(const llvm::Module& module) {
  for (const llvm::Function& fn : module) {
    if (fn.isIntrinsic()) continue;
    for (const llvm::Use& use : fn.uses()) {
      const auto* call = llvm::dyn_cast<llvm::CallBase>(use.getUser());
      if (!call || !call->isCallee(&use)) return &fn;
    }
  }
  return nullptr;
}

// `kernel` and every defined function it reaches through direct calls.
std::set<const llvm::Function*> reachableFrom(const llvm::Function& kernel) {
  std::set<const llvm::Function*> reached{&kernel};
  std::vector<const llvm::Function*> pending{&kernel};
  while (!pending.empty()) {
    const llvm::Function* fn = pending.back();
    pending.pop_back();
    for (const llvm::Instruction& inst : llvm::instructions(*fn))
      if (const auto* call = llvm::dyn_cast<llvm::CallBase>(&inst))
        if (const llvm::Function* callee = call->getCalledFunction();
            callee && !callee->isDeclaration() && reached.insert(callee).second)
          pending.push_back(callee);
  }
  return reached;
}

size_t instructionCount(const llvm::Function& fn) {
  size_t count = 0;
  for (const llvm::BasicBlock& block : fn) count += block.size();
  return count;
}

}  // namespace

KernelPartitions partitionKernels(llvm::Module& module, unsigned partitions,
                                  size_t minimumInstructions) {
  KernelPartitions plan;
  std::vector<const llvm::Function*> kernels;
  size_t total = 0;
  for (const llvm::Function& fn : module) {
    if (isKernel(fn)) kernels.push_back(&fn);
    total += instructionCount(fn);
  }
  if (partitions < 2) {
    plan.wholeBecause = "one thread";
    return plan;
  }
  if (kernels.size() < 2) {
    plan.wholeBecause = "fewer than two kernels";
    return plan;
  }
  if (total < minimumInstructions) {
    plan.wholeBecause =
        std::to_string(total) + " instructions, under " + std::to_string(minimumInstructions);
    return plan;
  }
  if (const llvm::Function* taken = addressTakenFunction(module)) {
    plan.wholeBecause = "the address of '" + taken->getName().str() + "' is taken";
    return plan;
  }

  struct Weighed {
    const llvm::Function* kernel;
    std::set<const llvm::Function*> code;
    size_t cost = 0;
  };
  std::vector<Weighed> weighed;
  for (const llvm::Function* kernel : kernels) {
    Weighed w{kernel, reachableFrom(*kernel)};
    for (const llvm::Function* fn : w.code) w.cost += instructionCount(*fn);
    weighed.push_back(std::move(w));
  }
  // Largest first, each to the lightest partition (ties by module order: deterministic).
  std::stable_sort(weighed.begin(), weighed.end(),
                   [](const Weighed& a, const Weighed& b) { return a.cost > b.cost; });
  partitions = std::min<unsigned>(partitions, kernels.size());
  std::vector<size_t> load(partitions, 0);
  std::vector<std::set<const llvm::Function*>> members(partitions);
  for (const Weighed& w : weighed) {
    size_t lightest = std::min_element(load.begin(), load.end()) - load.begin();
    load[lightest] += w.cost;
    members[lightest].insert(w.code.begin(), w.code.end());
  }
  // Partition contents in module order, so that a partition compiles the same way every time.
  plan.functions.resize(partitions);
  for (const llvm::Function& fn : module)
    for (unsigned p = 0; p < partitions; ++p)
      if (members[p].count(&fn)) plan.functions[p].push_back(fn.getName().str());

  // Every partition may now define a copy of a shared function, and every partition refers to
  // the variables partition 0 defines.
  for (llvm::Function& fn : module)
    if (!fn.isDeclaration() && !isKernel(fn)) fn.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable& gv : module.globals())
    if (gv.hasLocalLinkage() && gv.getAddressSpace() != kLocalAS) {
      gv.setLinkage(llvm::GlobalValue::ExternalLinkage);
      gv.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
  return plan;
}

Result<std::unique_ptr<llvm::Module>> loadPartition(llvm::MemoryBufferRef bitcode,
                                                    llvm::LLVMContext& context,
                                                    const std::vector<std::string>& functions,
                                                    bool definesVariables) {
  auto loaded = llvm::getLazyBitcodeModule(bitcode, context);
  if (!loaded)
    return makeError(ErrorCode::Internal,
                     "cannot read a partition's bitcode: " + llvm::toString(loaded.takeError()));
  std::unique_ptr<llvm::Module> module = std::move(*loaded);
  std::set<llvm::StringRef> kept(functions.begin(), functions.end());
  // Only the partition's function bodies are read; the others become declarations, then go.
  std::vector<llvm::Function*> dropped;
  for (llvm::Function& fn : *module) {
    if (kept.count(fn.getName())) {
      if (llvm::Error error = fn.materialize())
        return makeError(ErrorCode::Internal, "cannot read function '" + fn.getName().str() +
                                                  "': " + llvm::toString(std::move(error)));
    } else if (!fn.isDeclaration() || fn.isMaterializable()) {
      fn.deleteBody();
      dropped.push_back(&fn);
    }
  }
  if (llvm::Error error = module->materializeAll())
    return makeError(ErrorCode::Internal,
                     "cannot read a partition: " + llvm::toString(std::move(error)));
  for (llvm::Function* fn : dropped)
    if (fn->use_empty()) fn->eraseFromParent();
  if (!definesVariables)
    for (llvm::GlobalVariable& gv : module->globals()) {
      if (gv.isDeclaration() || gv.getAddressSpace() == kLocalAS ||
          gv.getName().starts_with("llvm."))
        continue;
      // The optimiser still sees the initializer (constants fold), then drops it. nvcc's printf
      // formats are mutable .global strings: printf's lowering, after optimisation, finds their
      // text in kInitialStringMetadata.
      if (auto* data = llvm::dyn_cast<llvm::ConstantDataSequential>(gv.getInitializer());
          data && data->isString())
        gv.setMetadata(
            kInitialStringMetadata,
            llvm::MDNode::get(context, llvm::MDString::get(context, data->getAsString())));
      gv.setLinkage(llvm::GlobalValue::AvailableExternallyLinkage);
    }
  return module;
}

}  // namespace rocuda::compiler::amdgpu
