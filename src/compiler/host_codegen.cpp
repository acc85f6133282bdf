// Host code generation: optimise the neutral IR with the new pass manager and emit an ELF object
// for this machine's CPU.
#include "compiler/host_codegen.h"

#include <llvm/ADT/SmallBitVector.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>
#include <llvm/Transforms/Utils/Local.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace rocuda::compiler::detail {

namespace {

// Set one of LLVM's boolean command-line options (a process-wide setting of the shared LLVM
// library) without parsing a command line; nothing when this LLVM has no such option.
void setLlvmFlag(llvm::StringRef name, llvm::StringRef value = "true") {
  auto& options = llvm::cl::getRegisteredOptions();
  auto it = options.find(name);
  if (it != options.end()) it->second->addOccurrence(0, name, value);
}

}  // namespace

void configureLlvmOptions() {
  static std::once_flag once;
  std::call_once(once, [] {
    // On AVX-512 hosts X86's domain reassignment (moving mask arithmetic into k registers) takes
    // time that grows far faster than the function: three quarters of the code generation of
    // llama.cpp's MMQ kernels (171 of 227 s for one module) for no measurable gain.
    setLlvmFlag("disable-x86-domain-reassignment");
    // LLVM 19's loop vectorizer takes a masked, wrapping index such as `(tid * 5) & 255` for a
    // fixed stride and loads an interleave group that runs past the wrap (llvm-project issue
    // 156849, fixed after LLVM 19): a block form's thread loop then reads the wrong elements.
    // Strided accesses become gathers instead, which compute every lane's own address.
    setLlvmFlag("enable-interleaved-mem-accesses", "false");
    // CodeGenPrepare starts over from a function's first block after every change to the
    // control flow unless the function is "huge", when it revisits only the blocks it changed.
    // Below that size (10,000 blocks) the restarts are quadratic: 41% of the code generation of
    // CUB's one-sweep radix sort kernel (797 blocks) for gfx1100. Every function is treated as
    // huge; the Thrust module's gfx1100 assembly is the same byte for byte.
    setLlvmFlag("cgpp-huge-func", "0");
  });
}

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    configureLlvmOptions();
  });
}

llvm::StringMap<bool> hostCpuFeatures() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  for (const char* flushesDenormals : {"avx512bf16", "avxneconvert"})
    if (features.count(flushesDenormals)) features[flushesDenormals] = false;
  return features;
}

Result<std::unique_ptr<llvm::TargetMachine>> createHostTargetMachine(int optLevel) {
  initializeNativeTarget();
  std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) return makeError(ErrorCode::Internal, "no LLVM target for " + triple + ": " + error);
  llvm::SubtargetFeatures features;
  for (const auto& feature : hostCpuFeatures())
    features.AddFeature(feature.first(), feature.second);
  features.AddFeature("prefer-no-scatter");
  llvm::TargetOptions options;
  auto level = optLevel <= 0   ? llvm::CodeGenOptLevel::None
               : optLevel == 1 ? llvm::CodeGenOptLevel::Less
               : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                               : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, llvm::sys::getHostCPUName(), features.getString(),
                                  options, llvm::Reloc::PIC_, llvm::CodeModel::Small, level));
  if (!tm) return makeError(ErrorCode::Internal, "cannot create a target machine for " + triple);
  return tm;
}

// InstCombine parsed from text verifies by default that it reached a fixpoint, and a module
// where it does not (llama.cpp's binary-operation kernels) ends the process with a fatal error:
// no-verify-fixpoint, as in the default pipelines. Loops are unrolled here, after the
// vectorizer, and not by the block forms' default pipeline before it: a work-item loop unrolled
// four times there was past unswitching's size limit, so a round's test of a block-uniform value
// (a reduction tree's `s > 0`) stayed in the loop with its stores, and the loop scalar
// (bench/cpu_device: the shared-memory reduction took 0.54-0.58x PoCL's time, 0.34-0.43x since).
constexpr const char* kRoundUnswitchPipeline =
    "function(loop-mssa(licm,simple-loop-unswitch<nontrivial>),simplifycfg,"
    "instcombine<no-verify-fixpoint>,loop-mssa(licm))";
// After splitThreadRanges: its answered tests folded, the invariants of interchanged stride
// loops' passes hoisted, then the vectorizer and the unroller.
constexpr const char* kRoundVectorizePipeline =
    "function(simplifycfg,instcombine<no-verify-fixpoint>,loop-mssa(licm),loop-vectorize,"
    "simplifycfg,"
    "instcombine<no-verify-fixpoint>,loop-unroll<O2>,simplifycfg,instcombine<no-verify-fixpoint>)";

// The widest vectors host code is vectorised to, in bits. A work-item loop runs the threads of
// one block, often 32 to 256 of them and fewer in each round of a reduction tree; at 512 bits
// (16 threads a vector) bench/cpu_device's shared-memory reduction took 1.67-1.76x PoCL's time
// on an AVX-512 host, at 256 bits 0.62-0.63x (the 2D stencil moved the other way, 1.03-1.09x to
// 1.25-1.32x). Clang prefers 256 bits on Intel's AVX-512 CPUs too. AVX-512's instructions
// (masks, 32 registers) stay in use at 256 bits.
constexpr const char* kPreferredVectorBits = "256";

namespace {

// The vector whose every lane `test` ors together, lane by lane (`extractelement` of each lane
// of one <N x i1>, joined by `or` or `select %a, true, %b`), or null.
llvm::Value* lanesOredBy(llvm::Instruction& test) {
  using namespace llvm::PatternMatch;
  llvm::Value* vector = nullptr;
  llvm::SmallBitVector lanes;
  llvm::SmallVector<llvm::Value*, 16> pending = {&test};
  while (!pending.empty()) {
    llvm::Value* value = pending.pop_back_val();
    llvm::Value *left, *right, *source;
    uint64_t lane;
    if (match(value, m_LogicalOr(m_Value(left), m_Value(right))) &&
        (value == &test || value->hasOneUse())) {
      if (pending.size() > 64) return nullptr;
      pending.push_back(left);
      pending.push_back(right);
    } else if (match(value, m_ExtractElt(m_Value(source), m_ConstantInt(lane)))) {
      auto* type = llvm::dyn_cast<llvm::FixedVectorType>(source->getType());
      if (type == nullptr || (vector != nullptr && source != vector) ||
          lane >= type->getNumElements())
        return nullptr;
      if (vector == nullptr) lanes.resize(type->getNumElements());
      vector = source;
      lanes.set(lane);
    } else {
      return nullptr;
    }
  }
  return vector != nullptr && lanes.all() ? vector : nullptr;
}

}  // namespace

void reduceLaneTests(llvm::Module& module) {
  using namespace llvm::PatternMatch;
  for (llvm::Function& f : module) {
    llvm::SmallVector<std::pair<llvm::Instruction*, llvm::Value*>, 4> tests;
    for (llvm::Instruction& inst : llvm::instructions(f)) {
      if (!inst.getType()->isIntegerTy(1) || !match(&inst, m_LogicalOr(m_Value(), m_Value())))
        continue;
      // Only the chain's last `or`: the others are parts of it.
      if (inst.hasOneUse() && match(inst.user_back(), m_LogicalOr(m_Value(), m_Value()))) continue;
      if (llvm::Value* vector = lanesOredBy(inst)) tests.push_back({&inst, vector});
    }
    for (auto [test, vector] : tests) {
      llvm::IRBuilder<> b(test);
      // Frozen: a poison lane makes the reduction poison, where `select %a, true, %b` with %a
      // true does not look at %b.
      llvm::Value* any = b.CreateOrReduce(b.CreateFreeze(vector));
      test->replaceAllUsesWith(any);
      llvm::RecursivelyDeleteTriviallyDeadInstructions(test);
    }
  }
}

void optimizeForHost(llvm::Module& module, llvm::TargetMachine& tm, int optLevel,
                     bool transformLoops) {
  module.setTargetTriple(tm.getTargetTriple().str());
  module.setDataLayout(tm.createDataLayout());
  for (llvm::Function& function : module)
    if (!function.isDeclaration()) function.addFnAttr("prefer-vector-width", kPreferredVectorBits);
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = transformLoops;
  tuning.LoopVectorization = transformLoops;
  PassContext passes(tm, tuning, /*memsetLoops=*/transformLoops);  // false: on block forms
  llvm::OptimizationLevel level = optLevel <= 0   ? llvm::OptimizationLevel::O0
                                  : optLevel == 1 ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0
                                    ? passes.pb.buildO0DefaultPipeline(level)
                                    : passes.pb.buildPerModuleDefaultPipeline(level);
  mpm.run(module, passes.mam);
  if (transformLoops) reduceLaneTests(module);
}

llvm::StringMap<unsigned> optimizeRoundLoops(llvm::Module& module, llvm::TargetMachine& tm,
                                             int optLevel) {
  if (optLevel <= 0) return {};
  // Once the steps are inlined into the rounds and their block-uniform slots' loads hoisted
  // (host_block_forms.cpp), conditions on uniform values are invariant in the work-item loops,
  // but the default pipeline unswitches before they are: unswitch again, then let the
  // vectorizer see the loops that result.
  auto run = [&](const char* pipeline) {
    // Afresh: splitThreadRanges changes functions behind its analyses.
    PassContext passes(tm, llvm::PipelineTuningOptions(), /*memsetLoops=*/false);
    llvm::ModulePassManager pm;
    if (llvm::Error error = passes.pb.parsePassPipeline(pm, pipeline)) {
      llvm::consumeError(std::move(error));  // a fixed, valid text: cannot happen
      return;
    }
    pm.run(module, passes.mam);
  };
  run(kRoundUnswitchPipeline);
  prefetchNextBlocks(module);
  llvm::StringMap<unsigned> interchanged = interchangeStrideLoops(module);
  splitThreadRanges(module);
  versionUniformTests(module);
  unrollPeriodicThreadTests(module);
  run(kRoundVectorizePipeline);
  reduceLaneTests(module);
  return interchanged;
}

namespace {

// The translator turns an address register into a pointer at each access, so an if/else that
// stores to one address through both sides holds two `inttoptr` of one value, and LLVM's sinking
// only merges stores to the same pointer. Each value's casts become one, made where the value is.
void mergeAddressCasts(llvm::Function& function) {
  std::unordered_map<llvm::Value*, llvm::SmallVector<llvm::IntToPtrInst*, 2>> casts;
  for (llvm::Instruction& inst : llvm::instructions(function))
    if (auto* cast = llvm::dyn_cast<llvm::IntToPtrInst>(&inst))
      casts[cast->getOperand(0)].push_back(cast);
  for (auto& [value, group] : casts) {
    if (group.size() < 2) continue;
    llvm::IntToPtrInst* kept = group.front();
    if (auto* def = llvm::dyn_cast<llvm::Instruction>(value)) {
      auto at = def->getInsertionPointAfterDef();
      if (!at) continue;  // an invoke's result: leave the casts where they are
      kept->moveBefore(&**at);
    } else {
      kept->moveBefore(&*function.getEntryBlock().getFirstInsertionPt());
    }
    for (llvm::IntToPtrInst* other : llvm::ArrayRef(group).drop_front()) {
      if (other->getType() != kept->getType()) continue;  // another address space
      other->replaceAllUsesWith(kept);
      other->eraseFromParent();
    }
  }
}

}  // namespace

void sinkCommonStores(llvm::Module& module, llvm::TargetMachine& tm, int optLevel) {
  if (optLevel <= 0) return;
  for (llvm::Function& function : module)
    if (!function.isDeclaration()) mergeAddressCasts(function);
  // The default pipelines sink common code only late, after their vectorizer.
  PassContext passes(tm);
  llvm::ModulePassManager sink;
  if (llvm::Error error =
          passes.pb.parsePassPipeline(sink, "function(simplifycfg<sink-common-insts>)")) {
    llvm::consumeError(std::move(error));  // a fixed, valid text: cannot happen
    return;
  }
  sink.run(module, passes.mam);
}

PassContext::PassContext(llvm::TargetMachine& tm, llvm::PipelineTuningOptions tuning,
                         bool memsetLoops)
    : pb(&tm, tuning) {
  if (!memsetLoops) {  // registered first, so registerFunctionAnalyses keeps it
    llvm::TargetLibraryInfoImpl library(tm.getTargetTriple());
    library.setUnavailable(llvm::LibFunc_memset);
    fam.registerPass([library] { return llvm::TargetLibraryAnalysis(library); });
  }
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
}

Result<std::vector<uint8_t>> emitObject(llvm::Module& module, llvm::TargetMachine& tm,
                                        bool assembly) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager pm;
  auto type = assembly ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile;
  if (tm.addPassesToEmitFile(pm, stream, nullptr, type))
    return makeError(ErrorCode::Internal,
                     "the target " + tm.getTargetTriple().str() + " cannot emit object files");
  pm.run(module);
  return std::vector<uint8_t>(buffer.begin(), buffer.end());
}

bool kernelReaches(llvm::Module& module, const std::string& name,
                   const std::vector<std::string>& callees) {
  llvm::Function* kernel = module.getFunction(name);
  if (!kernel) return false;
  std::unordered_set<llvm::Function*> targets;
  for (const auto& callee : callees)
    if (llvm::Function* f = module.getFunction(callee); f && !f->use_empty()) targets.insert(f);
  if (targets.empty()) return false;
  std::vector<llvm::Function*> work{kernel};
  std::unordered_set<llvm::Function*> seen{kernel};
  while (!work.empty()) {
    llvm::Function* f = work.back();
    work.pop_back();
    for (auto& block : *f)
      for (auto& inst : block) {
        auto* call = llvm::dyn_cast<llvm::CallBase>(&inst);
        if (!call) continue;
        llvm::Function* callee = call->getCalledFunction();
        if (!callee) return true;  // indirect: may reach one (conservative)
        if (targets.count(callee)) return true;
        if (!callee->isDeclaration() && seen.insert(callee).second) work.push_back(callee);
      }
  }
  return false;
}

void dropMatrixLaneFunctions(llvm::Module& module) {
  llvm::Function* sync = module.getFunction("__rocuda_mma_sync");
  if (sync == nullptr) return;
  std::unordered_set<llvm::Function*> lanes;
  for (llvm::User* user : sync->users())
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(user)) {
      if (auto* lane = llvm::dyn_cast<llvm::Function>(call->getArgOperand(1))) lanes.insert(lane);
      call->setArgOperand(
          1, llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(module.getContext())));
    }
  for (llvm::Function* lane : lanes)
    if (lane->use_empty()) lane->eraseFromParent();
}

}  // namespace rocuda::compiler::detail
