// NaN results with NVIDIA's bits. See host_codegen.h.
//
// The values of a function are partitioned by the bit-preserving instructions that join them
// (phi, select, bitcast, vector and aggregate element moves, a warp shuffle: "carriers"). Where a
// partition's bits are observed (stored, passed, returned, read as an integer, or given to a sign
// operation), its NaNs must be canonical. If every leaf of the partition is an arithmetic
// result of one type, one canonicalization just before the observation does (a loop's
// accumulator is fixed once, at its store after the loop); if a leaf is anything else (a load,
// an argument, a NaN constant: bits that must pass unchanged), each arithmetic result of the
// partition is canonicalized where it is computed instead.
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/EquivalenceClasses.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>

#include <vector>

#include "compiler/host_codegen.h"
#include "compiler/translator.h"

namespace rocuda::compiler::detail {

namespace {

// A call whose result only moves or changes the sign bit: exact on every host.
bool isSignOperation(const llvm::Instruction& inst) {
  if (inst.getOpcode() == llvm::Instruction::FNeg) return true;
  auto* intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
  return intrinsic && (intrinsic->getIntrinsicID() == llvm::Intrinsic::fabs ||
                       intrinsic->getIntrinsicID() == llvm::Intrinsic::copysign);
}

// select(x is NaN, canonical NaN, x): the translator's own canonicalization (cvt, .relu).
bool isCanonicalizedValue(const llvm::Instruction& inst) {
  auto* select = llvm::dyn_cast<llvm::SelectInst>(&inst);
  if (!select || select->getTrueValue() != canonicalNaN(select->getType())) return false;
  auto* test = llvm::dyn_cast<llvm::FCmpInst>(select->getCondition());
  return test && test->getPredicate() == llvm::FCmpInst::FCMP_UNO &&
         test->getOperand(0) == select->getFalseValue() &&
         test->getOperand(1) == select->getFalseValue();
}

// An instruction computing a single- or half-precision value (scalar or packed) whose NaN
// bits the host chooses. Double precision keeps the host's behaviour: NVIDIA documents the
// one NaN of single precision only.
bool isArithmeticResult(const llvm::Instruction& inst) {
  llvm::Type* element = inst.getType()->getScalarType();
  if (!(element->isFloatTy() || element->isHalfTy() || element->isBFloatTy()) ||
      isSignOperation(inst))
    return false;
  switch (inst.getOpcode()) {
    case llvm::Instruction::FAdd:
    case llvm::Instruction::FSub:
    case llvm::Instruction::FMul:
    case llvm::Instruction::FDiv:
    case llvm::Instruction::FRem:
    case llvm::Instruction::FPTrunc:
    case llvm::Instruction::FPExt:
      return true;
    case llvm::Instruction::Call: {
      // Intrinsics and helpers; a function defined here canonicalizes what it returns.
      const llvm::Function* callee = llvm::cast<llvm::CallInst>(inst).getCalledFunction();
      return callee && callee->isDeclaration();
    }
    default:
      return false;
  }
}

// `__rocuda_shfl_sync`: its result's low half is another lane's value operand (or its own),
// bits unchanged, and bit 32 the in-range predicate.
bool isShuffle(const llvm::Value* value) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(value);
  return call && call->getCalledFunction() &&
         call->getCalledFunction()->getName() == "__rocuda_shfl_sync" && call->arg_size() == 5;
}

// The value half of a shuffle's result.
bool isShuffledValue(const llvm::Instruction& inst) {
  return llvm::isa<llvm::TruncInst>(inst) && inst.getType()->isIntegerTy(32) &&
         isShuffle(inst.getOperand(0));
}

// A use that reads only a shuffle's predicate, none of the bits it moved.
bool readsShufflePredicate(const llvm::Instruction& user) {
  if (user.getOpcode() != llvm::Instruction::LShr) return false;
  auto* shift = llvm::dyn_cast<llvm::ConstantInt>(user.getOperand(1));
  return shift && shift->getZExtValue() >= 32 && isShuffle(user.getOperand(0));
}

bool isCarrier(const llvm::Instruction& inst) {
  if (inst.getType()->isPtrOrPtrVectorTy() || isCanonicalizedValue(inst)) return false;
  // A shuffle moves a value between the lanes of a warp: the bits that reach another lane are
  // those of the operand, so a NaN needs fixing only where some lane observes it.
  if (isShuffle(&inst) || isShuffledValue(inst)) return true;
  return llvm::isa<llvm::PHINode, llvm::SelectInst, llvm::FreezeInst, llvm::BitCastInst,
                   llvm::ExtractElementInst, llvm::InsertElementInst, llvm::ShuffleVectorInst,
                   llvm::ExtractValueInst, llvm::InsertValueInst>(inst);
}

// Operand `index` of a carrier passes its bits into the carrier's value.
bool carriesOperand(const llvm::Instruction& carrier, unsigned index) {
  if (llvm::isa<llvm::SelectInst>(carrier)) return index != 0;
  if (llvm::isa<llvm::ExtractElementInst>(carrier)) return index == 0;
  if (llvm::isa<llvm::InsertElementInst>(carrier)) return index != 2;
  if (isShuffle(&carrier)) return index == 1;
  return true;  // phi, freeze, bitcast, shufflevector (its mask is no operand), aggregates
}

// A use that reads the value as a number: a NaN's bits do not matter to it.
bool readsAsNumber(const llvm::Instruction& user) {
  if (isSignOperation(user)) return false;
  if (isArithmeticResult(user)) return true;
  if (llvm::isa<llvm::FCmpInst, llvm::FPToSIInst, llvm::FPToUIInst>(user)) return true;
  auto* intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(&user);
  return intrinsic && (intrinsic->getIntrinsicID() == llvm::Intrinsic::is_fpclass ||
                       intrinsic->getIntrinsicID() == llvm::Intrinsic::fptosi_sat ||
                       intrinsic->getIntrinsicID() == llvm::Intrinsic::fptoui_sat);
}

// Could `bits`, read as a floating-point value of its width (any format of that width), be a
// NaN other than the canonical one?
bool mayBeForeignNaN(const llvm::APInt& bits) {
  auto nonCanonicalNaN = [&](unsigned exponentBits) {
    unsigned width = bits.getBitWidth();
    unsigned mantissaBits = width - 1 - exponentBits;
    llvm::APInt exponent = bits.lshr(mantissaBits).trunc(exponentBits);
    return exponent.isAllOnes() && !bits.trunc(mantissaBits).isZero() && !bits.isMaxSignedValue();
  };
  switch (bits.getBitWidth()) {
    case 16:
      return nonCanonicalNaN(5) || nonCanonicalNaN(8);  // half or bfloat
    case 32:
      return nonCanonicalNaN(8);
    case 64:
      return nonCanonicalNaN(11);
    default:
      return false;
  }
}

bool mayBeForeignNaN(const llvm::Constant* constant) {
  if (llvm::isa<llvm::UndefValue>(constant) || constant->isNullValue()) return false;
  if (auto* fp = llvm::dyn_cast<llvm::ConstantFP>(constant))
    return mayBeForeignNaN(fp->getValueAPF().bitcastToAPInt());
  if (auto* integer = llvm::dyn_cast<llvm::ConstantInt>(constant))
    return mayBeForeignNaN(integer->getValue());
  if (auto* data = llvm::dyn_cast<llvm::ConstantDataSequential>(constant)) {
    for (unsigned i = 0; i < data->getNumElements(); ++i)
      if (mayBeForeignNaN(data->getElementAsConstant(i))) return true;
    return false;
  }
  if (llvm::isa<llvm::ConstantAggregate>(constant)) {
    for (const llvm::Use& element : constant->operands())
      if (mayBeForeignNaN(llvm::cast<llvm::Constant>(element.get()))) return true;
    return false;
  }
  // Constant expressions (an address, the canonical NaN's bitcast): compare with the canonical NaN.
  if (constant->getType()->isFPOrFPVectorTy()) return constant != canonicalNaN(constant->getType());
  return true;
}

// A value whose NaN, if it is one, is the canonical NaN already.
bool isExactLeaf(const llvm::Value* value) {
  if (auto* constant = llvm::dyn_cast<llvm::Constant>(value)) return !mayBeForeignNaN(constant);
  auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
  return inst && isCanonicalizedValue(*inst);
}

struct Partition {
  std::vector<llvm::Instruction*> arithmetic;
  llvm::Type* type = nullptr;  // of every arithmetic leaf; null while none
  bool mixed = false;          // a leaf of another kind or type: canonicalize where computed
  bool atLeaves = false;
};

struct Observation {
  llvm::Instruction* user;
  unsigned operand;
};

llvm::Value* canonicalized(llvm::IRBuilder<>& builder, llvm::Value* value) {
  return builder.CreateSelect(builder.CreateFCmpUNO(value, value), canonicalNaN(value->getType()),
                              value);
}

void canonicalizeFunction(llvm::Function& fn) {
  auto joined = [](const llvm::Value* value) {
    auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
    return inst && (isCarrier(*inst) || isArithmeticResult(*inst));
  };
  llvm::EquivalenceClasses<llvm::Instruction*> classes;
  for (llvm::BasicBlock& block : fn)
    for (llvm::Instruction& inst : block) {
      if (isArithmeticResult(inst)) classes.insert(&inst);
      if (!isCarrier(inst)) continue;
      classes.insert(&inst);
      for (unsigned i = 0; i < inst.getNumOperands(); ++i)
        if (carriesOperand(inst, i) && joined(inst.getOperand(i)))
          classes.unionSets(&inst, llvm::cast<llvm::Instruction>(inst.getOperand(i)));
    }
  if (classes.empty()) return;

  llvm::DenseMap<llvm::Instruction*, Partition> partitions;  // by leader
  auto partitionOf = [&](llvm::Instruction* inst) -> Partition& {
    return partitions[classes.getLeaderValue(inst)];
  };
  std::vector<Observation> observations;
  for (llvm::BasicBlock& block : fn)
    for (llvm::Instruction& inst : block) {
      if (isArithmeticResult(inst)) {
        Partition& partition = partitionOf(&inst);
        partition.arithmetic.push_back(&inst);
        if (partition.type && partition.type != inst.getType()) partition.mixed = true;
        partition.type = inst.getType();
      }
      if (isCarrier(inst)) {
        for (unsigned i = 0; i < inst.getNumOperands(); ++i) {
          llvm::Value* operand = inst.getOperand(i);
          if (!carriesOperand(inst, i)) {
            // Bits a carrier reads without passing them on (a shuffle's lane) are observed.
            if (joined(operand)) observations.push_back({&inst, i});
            continue;
          }
          if (!joined(operand) && !isExactLeaf(operand)) partitionOf(&inst).mixed = true;
        }
        continue;
      }
      if (readsAsNumber(inst) || readsShufflePredicate(inst)) continue;
      for (unsigned i = 0; i < inst.getNumOperands(); ++i)
        if (joined(inst.getOperand(i))) observations.push_back({&inst, i});
    }

  // An observation fixes the bits where it reads them if it can see them as the partition's
  // arithmetic type; otherwise the partition's arithmetic results are fixed where computed.
  const llvm::DataLayout& layout = fn.getParent()->getDataLayout();
  auto fixableAtObservation = [&](const Partition& partition, llvm::Type* observed) {
    if (partition.mixed) return false;
    if (observed == partition.type) return true;
    return (observed->isIntOrIntVectorTy() || observed->isFPOrFPVectorTy()) &&
           layout.getTypeSizeInBits(observed) == layout.getTypeSizeInBits(partition.type);
  };
  for (const Observation& observation : observations) {
    auto* value = llvm::cast<llvm::Instruction>(observation.user->getOperand(observation.operand));
    Partition& partition = partitionOf(value);
    if (!partition.arithmetic.empty() && !fixableAtObservation(partition, value->getType()))
      partition.atLeaves = true;
  }

  for (auto& [leader, partition] : partitions) {
    if (!partition.atLeaves) continue;
    for (llvm::Instruction* arithmetic : partition.arithmetic) {
      llvm::IRBuilder<> builder(arithmetic->getNextNode());
      llvm::Value* fixed = canonicalized(builder, arithmetic);
      // Readers that take the value as a number keep the raw result (no select on their path).
      arithmetic->replaceUsesWithIf(fixed, [&](llvm::Use& use) {
        auto* user = llvm::cast<llvm::Instruction>(use.getUser());
        return user != fixed && user != llvm::cast<llvm::SelectInst>(fixed)->getCondition() &&
               !readsAsNumber(*user);
      });
    }
  }
  for (const Observation& observation : observations) {
    llvm::Value* value = observation.user->getOperand(observation.operand);
    auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
    if (!inst || classes.findValue(inst) == classes.end()) continue;  // already a fixed value
    const Partition& partition = partitionOf(inst);
    if (partition.arithmetic.empty() || partition.atLeaves) continue;
    llvm::IRBuilder<> builder(observation.user);
    llvm::Value* asArithmetic = builder.CreateBitCast(value, partition.type);
    llvm::Value* fixed =
        builder.CreateBitCast(canonicalized(builder, asArithmetic), value->getType());
    observation.user->setOperand(observation.operand, fixed);
  }
}

}  // namespace

void canonicalizeNaNResults(llvm::Module& module) {
  for (llvm::Function& fn : module)
    if (!fn.isDeclaration()) canonicalizeFunction(fn);
}

}  // namespace rocuda::compiler::detail
