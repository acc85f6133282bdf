// The AMDGPU back end: target machine, optimisation pipeline, object emission.
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/Scalar/InferAddressSpaces.h>

#include <cctype>
#include <mutex>
#include <string>
#include <string_view>

#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/host_codegen.h"
#include "support/log.h"

extern "C" {
void LLVMInitializeAMDGPUTargetInfo();
void LLVMInitializeAMDGPUTarget();
void LLVMInitializeAMDGPUTargetMC();
void LLVMInitializeAMDGPUAsmPrinter();
}

namespace rocuda::compiler::amdgpu {

constexpr const char* kTriple = "amdgcn-amd-amdhsa";

Result<std::unique_ptr<llvm::TargetMachine>> createAmdgpuTargetMachine(const AmdgpuTarget& target) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    detail::configureLlvmOptions();
  });
  if (amdgpuWavefrontSize(target.processor) == 0)
    return makeError(ErrorCode::InvalidValue,
                     "'" + target.processor + "' is not a supported AMD GPU");
  if (target.codeObjectVersion != 4 && target.codeObjectVersion != 5)
    return makeError(ErrorCode::InvalidValue, "AMD code object version " +
                                                  std::to_string(target.codeObjectVersion) +
                                                  " is not supported (4 or 5)");
  std::string error;
  const llvm::Target* llvmTarget = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (!llvmTarget) return makeError(ErrorCode::Internal, "no LLVM AMDGPU target: " + error);
  std::string features = target.features;
  // CDNA has only wave64; RDNA runs CUDA warps natively in wave32.
  std::string wave =
      amdgpuWavefrontSize(target.processor) == 32 ? "+wavefrontsize32" : "+wavefrontsize64";
  features = features.empty() ? wave : features + "," + wave;
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(llvmTarget->createTargetMachine(
      kTriple, target.processor, features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Default));
  if (!tm)
    return makeError(ErrorCode::Internal, "cannot create a target machine for " + target.processor);
  return tm;
}

void prepareModuleForTarget(llvm::Module& module, llvm::TargetMachine& tm, int codeObjectVersion) {
  module.setTargetTriple(tm.getTargetTriple().str());
  module.setDataLayout(tm.createDataLayout());
  module.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", codeObjectVersion * 100);
}

namespace {

// The optimisation pipeline: LLVM 19's O2 as this PassBuilder builds it for amdgcn-amd-amdhsa
// (buildPerModuleDefaultPipeline with default tuning options, so no SLP vectorizer; printed with
// printPipeline; its loop vectorizer interleaves loops for gfx90a, so it stays) less what
// changes nothing in code nvcc has already optimised: the InstCombines after the loop
// vectorizer, before the loop passes and after the vector combiner, the second jump threading
// and value propagation, called-value propagation (no indirect call to resolve) and the second
// GlobalOpt. Measured against O2 on the test suite's and the benchmark's PTX (228 code objects
// for gfx1100 and gfx90a): the same registers and scratch everywhere, the same instructions but
// in 4 objects (-6 to +2 of thousands), in 20% less time (Thrust's O2 1.09 -> 0.87 s, one thread).
// Placeholders ($...) stand for the options O2 gives its InstCombine and SimplifyCFG runs
// (kPipelineOptions).
constexpr std::string_view kPipelineText = R"(
  annotation2metadata, forceattrs, inferattrs, coro-early,
  function<eager-inv>(ee-instrument<>, lower-expect, $cfg-first, sroa<modify-cfg>, early-cse<>),
  openmp-opt, amdgpu-printf-runtime-binding, amdgpu-unify-metadata, ipsccp, globalopt,
  function<eager-inv>(mem2reg, $combine, amdgpu-usenative, amdgpu-simplifylib, $cfg),
  always-inline, require<globals-aa>, function(invalidate<aa>), require<profile-summary>,
  cgscc(devirt<4>(
    inline, function-attrs<skip-non-recursive-function-attrs>, openmp-opt-cgscc,
    function(amdgpu-promote-kernel-arguments, infer-address-spaces,
             amdgpu-lower-kernel-attributes, amdgpu-promote-alloca-to-vector),
    function<eager-inv;no-rerun>(
      sroa<modify-cfg>, early-cse<memssa>, speculative-execution<only-if-divergent-target>,
      jump-threading, correlated-propagation, $cfg, $combine, aggressive-instcombine,
      libcalls-shrinkwrap, amdgpu-usenative, amdgpu-simplifylib, tailcallelim, $cfg,
      reassociate, constraint-elimination,
      loop-mssa(loop-instsimplify, loop-simplifycfg, licm<no-allowspeculation>,
                loop-rotate<header-duplication;no-prepare-for-lto>, licm<allowspeculation>,
                simple-loop-unswitch<no-nontrivial;trivial>),
      $cfg,
      loop(loop-idiom, indvars, simple-loop-unswitch<no-nontrivial;trivial>, loop-deletion,
           loop-unroll-full),
      sroa<modify-cfg>, vector-combine, mldst-motion<no-split-footer-bb>, gvn<>, sccp, bdce,
      $combine, amdgpu-usenative, amdgpu-simplifylib, adce, memcpyopt, dse, move-auto-init,
      loop-mssa(licm<allowspeculation>), coro-elide, $cfg-hoist, $combine, amdgpu-usenative,
      amdgpu-simplifylib),
    function-attrs, coro-split)),
  deadargelim, coro-cleanup, globaldce, elim-avail-extern, rpo-function-attrs,
  recompute-globalsaa,
  function<eager-inv>(
    float2int, lower-constant-intrinsics,
    loop(loop-rotate<header-duplication;no-prepare-for-lto>, loop-deletion), loop-distribute,
    inject-tli-mappings, loop-vectorize<no-interleave-forced-only;no-vectorize-forced-only;>,
    infer-alignment, loop-load-elim, $cfg-late, vector-combine, loop-unroll<O2>, transform-warning, sroa<preserve-cfg>, infer-alignment,
    $combine, loop-mssa(licm<allowspeculation>), alignment-from-assumptions, loop-sink,
    instsimplify, div-rem-pairs, tailcallelim, $cfg-last),
  amdgpu-attributor, globaldce, constmerge, cg-profile, rel-lookup-table-converter,
  function(annotation-remarks)
)";

// The options O2 gives its InstCombine and SimplifyCFG runs, longest placeholder first.
constexpr std::pair<std::string_view, std::string_view> kPipelineOptions[] = {
    {"$combine", "instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>"},
    {"$cfg-first",
     "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;no-switch-range-to-icmp;"
     "no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts;"
     "speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>"},
    {"$cfg-hoist",
     "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;"
     "no-switch-to-lookup;keep-loops;hoist-common-insts;sink-common-insts;speculate-blocks;"
     "simplify-cond-branch;no-speculate-unpredictables>"},
    {"$cfg-late",
     "simplifycfg<bonus-inst-threshold=1;forward-switch-cond;switch-range-to-icmp;"
     "switch-to-lookup;no-keep-loops;hoist-common-insts;sink-common-insts;speculate-blocks;"
     "simplify-cond-branch;no-speculate-unpredictables>"},
    {"$cfg-last",
     "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;"
     "no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts;"
     "speculate-blocks;simplify-cond-branch;speculate-unpredictables>"},
    {"$cfg",
     "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;"
     "no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts;"
     "speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>"},
};

}  // namespace

std::string optimizationPipeline() {
  std::string text;
  for (char c : kPipelineText)
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  for (const auto& [placeholder, passes] : kPipelineOptions)
    for (size_t at = text.find(placeholder); at != std::string::npos;
         at = text.find(placeholder, at + passes.size()))
      text.replace(at, placeholder.size(), passes);
  return text;
}

void optimizeForAmdgpu(llvm::Module& module, llvm::TargetMachine& tm) {
  detail::PassContext passes(tm);
  // Inline the runtime and kernel bodies first, so that InferAddressSpaces sees every flat
  // pointer next to the private, global or LDS object it came from.
  llvm::ModulePassManager first;
  first.addPass(llvm::AlwaysInlinerPass());
  first.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::InferAddressSpacesPass()));
  first.run(module, passes.mam);
  llvm::ModulePassManager pipeline;
  if (llvm::Error error = passes.pb.parsePassPipeline(pipeline, optimizationPipeline())) {
    // An LLVM other than the one the pipeline was taken from: its own O2 does the same work.
    static std::once_flag warned;
    std::string message = llvm::toString(std::move(error));
    std::call_once(warned, [&] {
      log::warning(
          "AMD GPU code generation uses LLVM's O2 pipeline: this LLVM does not accept "
          "Rocuda's (" +
          message + ")");
    });
    pipeline = passes.pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  }
  pipeline.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::InferAddressSpacesPass()));
  pipeline.run(module, passes.mam);
}

}  // namespace rocuda::compiler::amdgpu
