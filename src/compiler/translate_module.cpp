// Module-level translation: globals with initializers, the shared-memory window layout, function
// declarations (kernels, internal .funcs, external callees) and the kernel parameter layout.
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "compiler/shared_layout.h"
#include "compiler/translator.h"
#include "ptx/link.h"
#include "ptx/parser.h"
#include "support/log.h"

namespace rocuda::compiler::detail {
namespace {

uint64_t alignTo(uint64_t value, uint64_t alignment) {
  if (alignment <= 1) return value;
  return (value + alignment - 1) / alignment * alignment;
}

// The symbol name of a special register function: "%tid.x" -> "__rocuda_sreg_tid_x".
std::string sregSymbol(ptx::SpecialRegister reg, uint32_t index) {
  std::string name = ptx::specialRegisterName(reg);
  if (!name.empty() && name[0] == '%') name.erase(0, 1);
  std::replace(name.begin(), name.end(), '.', '_');
  if (reg == ptx::SpecialRegister::Envreg || reg == ptx::SpecialRegister::Pm) {
    // specialRegisterName may or may not carry the index; make the symbol unique.
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name.back())))
      name += std::to_string(index);
  }
  if (reg == ptx::SpecialRegister::Pm64) name += std::to_string(index) + "_64";
  return "__rocuda_sreg_" + name;
}

}  // namespace

ModuleTranslator::ModuleTranslator(llvm::LLVMContext& context, const ptx::Module& ptx,
                                   std::string_view name)
    : context_(context),
      ptx_(ptx),
      module_(std::make_unique<llvm::Module>(llvm::StringRef(name.data(), name.size()), context)) {}

llvm::Function* ModuleTranslator::sregFunction(ptx::SpecialRegister reg, uint32_t index) {
  std::string name = sregSymbol(reg, index);
  bool wide = reg == ptx::SpecialRegister::Clock64 || reg == ptx::SpecialRegister::GlobalTimer ||
              reg == ptx::SpecialRegister::CurrentGraphExec;
  llvm::Type* type = wide ? llvm::Type::getInt64Ty(context_) : llvm::Type::getInt32Ty(context_);
  if (auto* existing = module_->getFunction(name)) return existing;
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(type, false),
                                    llvm::Function::ExternalLinkage, name, *module_);
  // Clocks change between calls; every other special register is constant for a thread.
  bool varies = reg == ptx::SpecialRegister::Clock || reg == ptx::SpecialRegister::Clock64 ||
                reg == ptx::SpecialRegister::GlobalTimer;
  if (!varies) fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  fn->setWillReturn();
  return fn;
}

llvm::Function* ModuleTranslator::barrierFunction() {
  const char* name = "__rocuda_barrier_sync";
  if (auto* existing = module_->getFunction(name)) return existing;
  auto* i32 = llvm::Type::getInt32Ty(context_);
  auto* fn = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context_), {i32, i32}, false),
      llvm::Function::ExternalLinkage, name, *module_);
  fn->setConvergent();  // never duplicated into divergent paths, never CSE'd (touches memory)
  fn->setDoesNotThrow();
  return fn;
}

llvm::Function* ModuleTranslator::sharedBaseFunction() {
  const char* name = "__rocuda_shared_base";
  if (auto* existing = module_->getFunction(name)) return existing;
  auto* fn =
      llvm::Function::Create(llvm::FunctionType::get(llvm::PointerType::get(context_, 0), false),
                             llvm::Function::ExternalLinkage, name, *module_);
  fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  fn->setWillReturn();
  return fn;
}

llvm::Function* ModuleTranslator::trapFunction() {
  const char* name = "__rocuda_trap";
  if (auto* existing = module_->getFunction(name)) return existing;
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(context_), false),
                                    llvm::Function::ExternalLinkage, name, *module_);
  fn->setDoesNotReturn();
  fn->setDoesNotThrow();
  return fn;
}

llvm::Function* ModuleTranslator::libmFunction(const std::string& name, llvm::Type* type,
                                               unsigned arity) {
  if (auto* existing = module_->getFunction(name)) return existing;
  std::vector<llvm::Type*> args(arity, type);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(type, args, false),
                                    llvm::Function::ExternalLinkage, name, *module_);
  fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  fn->setWillReturn();
  return fn;
}

llvm::GlobalVariable* ModuleTranslator::findGlobal(std::string_view name) const {
  auto it = globals_.find(std::string(name));
  return it == globals_.end() ? nullptr : it->second;
}

llvm::Constant* ModuleTranslator::kernelReference(std::string_view kernel) {
  std::string name = "__rocuda_kernel_ref." + std::string(kernel);
  if (llvm::GlobalVariable* existing = module_->getNamedGlobal(name)) return existing;
  auto* text = llvm::ConstantDataArray::getString(context_, std::string(kernel));
  auto* reference = new llvm::GlobalVariable(*module_, text->getType(), /*isConstant=*/true,
                                             llvm::GlobalValue::PrivateLinkage, text, name);
  reference->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  return reference;
}

llvm::Function* ModuleTranslator::findFunction(std::string_view name) const {
  auto it = functions_.find(std::string(name));
  return it == functions_.end() ? nullptr : it->second;
}

const ptx::Function* ModuleTranslator::findFunctionDef(std::string_view name) const {
  auto it = functionDefs_.find(std::string(name));
  return it == functionDefs_.end() ? nullptr : it->second;
}

bool ModuleTranslator::sharedOffset(std::string_view name, uint64_t& offset) const {
  auto it = sharedOffsets_.find(std::string(name));
  if (it == sharedOffsets_.end()) return false;
  offset = it->second;
  return true;
}

bool ModuleTranslator::localSharedOffset(const std::string& function, std::string_view name,
                                         uint64_t& offset) const {
  return sharedOffset(function + "/" + std::string(name), offset);
}

Status ModuleTranslator::layoutShared() {
  SharedLayout layout = computeSharedLayout(ptx_);
  sharedOffsets_ = std::move(layout.offsets);
  sharedStaticBytes_ = std::move(layout.staticBytes);
  sharedDynamicOffset_ = std::move(layout.dynamicOffset);
  reservedSharedUsers_ = std::move(layout.reservedRegionUsers);
  if (layout.windowAlignment > 16) {
    // Targets that place the window themselves (AMD GPUs: after a counter prefix) read it.
    auto* type = llvm::Type::getInt64Ty(context_);
    module_->addModuleFlag(llvm::Module::Max, kSharedWindowAlignmentFlag,
                           llvm::ConstantInt::get(type, layout.windowAlignment));
  }
  return Status::success();
}

Result<llvm::Constant*> ModuleTranslator::addressInitializer(const ptx::Variable& var,
                                                             const ptx::InitializerElement& init) {
  llvm::Constant* target = findGlobal(init.symbol());
  // A kernel's address is its reference, as `mov r, K` gives it (libcudadevrt keeps its copy and
  // fill kernels in such a table and launches them from the device).
  if (const ptx::Function* def = findFunctionDef(init.symbol());
      !target && def != nullptr && def->isEntry)
    target = kernelReference(init.symbol());
  if (!target) target = findFunction(init.symbol());
  if (target && llvm::isa<llvm::Function>(target) && mayExit(init.symbol()))
    return makeError(ErrorCode::UnsupportedPtx,
                     "initializer of '" + var.name + "' takes the address of '" +
                         std::string(init.symbol()) +
                         "', which can exit the thread: not supported through a pointer");
  if (!target)
    return makeError(ErrorCode::UnsupportedPtx,
                     "initializer of '" + var.name + "' takes the address of '" +
                         std::string(init.symbol()) +
                         "', which is not a global or function of this module");
  auto* i8 = llvm::Type::getInt8Ty(context_);
  return llvm::ConstantExpr::getGetElementPtr(
      i8, target, llvm::ConstantInt::get(llvm::Type::getInt64Ty(context_), init.offset()));
}

// A byte array that holds addresses one byte at a time (PTX's mask operator: nvcc writes a
// pointer inside a packed struct as `0xFF(generic(g)), 0xFF00(generic(g)), ...`). Each run of
// bytes 0..7 of one address becomes one unaligned 8-byte field of a packed struct. Anything
// else (part of an address) is refused: LLVM has no constant shift, and a truncated address
// would need a relocation that overflows for code loaded above 4 GiB.
Result<llvm::Constant*> ModuleTranslator::maskedAddressInitializer(const ptx::Variable& var,
                                                                   llvm::Type*& storageType) {
  auto* i8 = llvm::Type::getInt8Ty(context_);
  const auto& elements = var.initializer;
  uint64_t count = std::max<uint64_t>(var.sizeInBytes(), elements.size());
  std::vector<llvm::Constant*> fields;
  for (uint64_t i = 0; i < count;) {
    if (i >= elements.size()) {
      fields.push_back(llvm::ConstantInt::get(i8, 0));
      ++i;
      continue;
    }
    const ptx::InitializerElement& init = elements[i];
    if (init.kind() == ptx::InitializerElement::Kind::Number) {
      fields.push_back(llvm::ConstantInt::get(i8, init.number().bits));
      ++i;
      continue;
    }
    if (!init.masked() || init.maskedByte() != 0)
      return makeError(ErrorCode::UnsupportedPtx,
                       "initializer of '" + var.name + "', byte " + std::to_string(i) +
                           ": only whole runs of an address's low bytes (0xFF, 0xFF00, ...) "
                           "are supported in byte arrays");
    uint64_t run = 1;
    while (i + run < elements.size() && run < 8) {
      const ptx::InitializerElement& next = elements[i + run];
      if (next.kind() != ptx::InitializerElement::Kind::SymbolAddress || next.maskedByte() != run ||
          next.symbol() != init.symbol() || next.offset() != init.offset() ||
          next.generic() != init.generic())
        break;
      ++run;
    }
    if (run != 8)
      return makeError(ErrorCode::UnsupportedPtx,
                       "initializer of '" + var.name + "', byte " + std::to_string(i) + ": " +
                           std::to_string(run) + " bytes of an address (only all 8 are supported)");
    auto address = addressInitializer(var, init);
    if (!address.ok()) return address.error();
    fields.push_back(llvm::ConstantExpr::getPtrToInt(*address, llvm::Type::getInt64Ty(context_)));
    i += run;
  }
  std::vector<llvm::Type*> types;
  for (llvm::Constant* field : fields) types.push_back(field->getType());
  auto* type = llvm::StructType::get(context_, types, /*isPacked=*/true);
  storageType = type;
  return llvm::ConstantStruct::get(type, fields);
}

Result<llvm::Constant*> ModuleTranslator::initializerFor(const ptx::Variable& var,
                                                         llvm::Type*& storageType) {
  unsigned elementBytes = std::max(1u, ptx::scalarTypeSize(var.type));
  auto* elementType = llvm::IntegerType::get(context_, elementBytes * 8);
  uint64_t count = var.sizeInBytes() / elementBytes;
  if (count == 0) count = var.initializer.size();
  storageType = llvm::ArrayType::get(elementType, count);
  if (!var.hasInitializer) return llvm::Constant::getNullValue(storageType);
  if (std::any_of(var.initializer.begin(), var.initializer.end(),
                  [](const ptx::InitializerElement& e) { return e.masked(); }))
    return maskedAddressInitializer(var, storageType);

  std::vector<llvm::Constant*> elements;
  elements.reserve(count);
  bool isF32 = var.type == ptx::ScalarType::F32, isF64 = var.type == ptx::ScalarType::F64;
  for (uint64_t i = 0; i < count; ++i) {
    if (i >= var.initializer.size()) {
      elements.push_back(llvm::ConstantInt::get(elementType, 0));
      continue;
    }
    const auto& init = var.initializer[i];
    if (init.kind() == ptx::InitializerElement::Kind::SymbolAddress) {
      auto address = addressInitializer(var, init);
      if (!address.ok()) return address.error();
      elements.push_back(llvm::ConstantExpr::getPtrToInt(*address, elementType));
      continue;
    }
    const auto& imm = init.number();
    uint64_t bits = imm.bits;
    if (isF32 || isF64) {
      double value = imm.value;
      if (imm.kind == ptx::Immediate::Kind::F32Bits) {
        float f;
        uint32_t b32 = static_cast<uint32_t>(imm.bits);
        std::memcpy(&f, &b32, 4);
        value = f;
      } else if (imm.kind == ptx::Immediate::Kind::F64Bits) {
        std::memcpy(&value, &imm.bits, 8);
      } else if (imm.kind == ptx::Immediate::Kind::Integer) {
        value = static_cast<double>(static_cast<int64_t>(imm.bits));
      }
      bool sameKind = (isF32 && imm.kind == ptx::Immediate::Kind::F32Bits) ||
                      (isF64 && imm.kind == ptx::Immediate::Kind::F64Bits);
      if (!sameKind) {
        if (isF32) {
          float f = static_cast<float>(value);
          uint32_t b32;
          std::memcpy(&b32, &f, 4);
          bits = b32;
        } else {
          std::memcpy(&bits, &value, 8);
        }
      }
    } else if (imm.kind == ptx::Immediate::Kind::Double) {
      bits = static_cast<uint64_t>(static_cast<int64_t>(imm.value));
    }
    elements.push_back(llvm::ConstantInt::get(elementType, bits));
  }
  return llvm::ConstantArray::get(llvm::cast<llvm::ArrayType>(storageType), elements);
}

Status ModuleTranslator::declareGlobals(ModuleInfo& info) {
  // Two passes: create every global first so initializers may take each other's addresses.
  std::vector<std::pair<const ptx::Variable*, llvm::GlobalVariable*>> pending;
  for (const auto& var : ptx_.globals) {
    if (var.space == ptx::StateSpace::Shared) continue;
    if (var.space != ptx::StateSpace::Global && var.space != ptx::StateSpace::Const)
      return makeError(ErrorCode::UnsupportedPtx,
                       "module-scope ." + std::string(ptx::stateSpaceName(var.space)) +
                           " variable '" + var.name + "' at " + std::to_string(var.loc.line) + ":" +
                           std::to_string(var.loc.column));
    if (globals_.count(var.name)) continue;
    unsigned elementBytes = std::max(1u, ptx::scalarTypeSize(var.type));
    uint64_t count = var.sizeInBytes() / elementBytes;
    if (count == 0) count = std::max<size_t>(var.initializer.size(), 1);
    auto* type = llvm::ArrayType::get(llvm::IntegerType::get(context_, elementBytes * 8), count);
    // In one kernel's unit every variable is a declaration: another unit defines it.
    bool external = var.linkage == ptx::Linkage::Extern || !onlyKernel.empty();
    // Not constant even for .const: the host writes __constant__ data through cuMemcpyHtoD.
    auto* gv = new llvm::GlobalVariable(*module_, type, false, llvm::GlobalValue::ExternalLinkage,
                                        nullptr, var.name);
    gv->setAlignment(llvm::Align(std::max(1u, var.effectiveAlignment())));
    globals_[var.name] = gv;
    if (!external) {
      pending.emplace_back(&var, gv);
      info.globals.push_back(
          GlobalInfo{var.name, var.space, var.sizeInBytes(), var.hasInitializer, var.managed});
    }
  }
  // Functions must exist before initializers that take their address.
  ROCUDA_TRY(declareFunctions());
  for (auto& [var, gv] : pending) {
    llvm::Type* storageType = nullptr;
    auto init = initializerFor(*var, storageType);
    if (!init.ok()) return init.error();
    if (storageType != gv->getValueType()) {
      // Unsized array sized by its initializer, or a byte array holding addresses (a packed
      // struct): replace with a correctly typed global.
      auto* replacement = new llvm::GlobalVariable(*module_, storageType, false,
                                                   llvm::GlobalValue::ExternalLinkage, *init);
      replacement->setAlignment(gv->getAlign());
      replacement->takeName(gv);
      gv->replaceAllUsesWith(replacement);
      gv->eraseFromParent();
      globals_[var->name] = replacement;
      for (auto& g : info.globals)
        if (g.name == var->name) g.size = module_->getDataLayout().getTypeAllocSize(storageType);
    } else {
      gv->setInitializer(*init);
    }
  }
  return Status::success();
}

void ModuleTranslator::findExitingFunctions() {
  // Each .func with its direct callees; those that exit themselves first, then their callers
  // until nothing changes.
  std::vector<std::pair<std::string, std::set<std::string>>> callees;
  for (const auto& [name, fn] : functionDefs_) {
    if (fn->isEntry || fn->isDeclaration) continue;
    std::set<std::string> calls;
    for (const auto& statement : fn->body) {
      if (statement.isLabel()) continue;
      const ptx::Instruction& inst = statement.instruction;
      if (inst.opcode == ptx::Opcode::exit) exiting_.insert(name);
      if (inst.opcode != ptx::Opcode::call || inst.operands().empty()) continue;
      size_t at = inst.operands()[0].kind == ptx::Operand::Kind::List ? 1 : 0;
      if (at < inst.operands().size() && inst.operands()[at].kind == ptx::Operand::Kind::Symbol) {
        calls.insert(std::string(inst.operands()[at].symbol()));
        if (inst.operands()[at].symbol() == kAssertFunction) exiting_.insert(name);  // see call()
      }
    }
    callees.emplace_back(name, std::move(calls));
  }
  std::unordered_map<std::string, std::string> aliasTargets(ptx_.aliases.begin(),
                                                            ptx_.aliases.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [name, calls] : callees)
      if (!exiting_.count(name))
        for (const std::string& callee : calls)
          if (exiting_.count(callee) ||
              (aliasTargets.count(callee) && exiting_.count(aliasTargets[callee]))) {
            exiting_.insert(name);
            changed = true;
            break;
          }
  }
}

Status ModuleTranslator::declareFunctions() {
  auto* ptr = llvm::PointerType::get(context_, 0);
  auto* voidTy = llvm::Type::getVoidTy(context_);
  for (const auto& fn : ptx_.functions) {
    auto it = functionDefs_.find(fn.name);
    if (it == functionDefs_.end() || (it->second->isDeclaration && !fn.isDeclaration))
      functionDefs_[fn.name] = &fn;
  }
  findExitingFunctions();
  for (const auto& source : ptx_.functions) {
    if (functionDefs_[source.name] != &source) continue;
    const ptx::Function& fn = source;
    const std::string& name = fn.name;
    llvm::Function* f = nullptr;
    if (fn.isEntry) {
      f = llvm::Function::Create(llvm::FunctionType::get(voidTy, {ptr}, false),
                                 llvm::Function::ExternalLinkage, name, *module_);
    } else if (!fn.isDeclaration) {
      std::vector<llvm::Type*> args(fn.returnParams.size() + fn.params.size() + mayExit(name), ptr);
      f = llvm::Function::Create(llvm::FunctionType::get(voidTy, args, false),
                                 llvm::Function::InternalLinkage, name, *module_);
    } else if (name == "vprintf") {
      f = llvm::Function::Create(
          llvm::FunctionType::get(llvm::Type::getInt32Ty(context_), {ptr, ptr}, false),
          llvm::Function::ExternalLinkage, name, *module_);
    } else {
      // An external callee (malloc, free, __assertfail...): called with values.
      // An aggregate parameter (a .b8 array: a struct by value, e.g. a dim3) by its address.
      auto typeOf = [&](const ptx::Variable& v) -> llvm::Type* {
        if (!v.dims.empty()) return ptr;
        return llvm::IntegerType::get(context_, std::max(1u, ptx::scalarTypeSize(v.type)) * 8);
      };
      llvm::Type* ret = fn.returnParams.empty() ? voidTy : typeOf(fn.returnParams[0]);
      std::vector<llvm::Type*> args;
      for (const auto& p : fn.params) args.push_back(typeOf(p));
      f = llvm::Function::Create(llvm::FunctionType::get(ret, args, false),
                                 llvm::Function::ExternalLinkage, name, *module_);
    }
    functions_[name] = f;
  }
  // `.alias a, b;`: a names the function b. The alias's prototype (PTX declares one before the
  // directive) is no external function: its declaration goes.
  for (const auto& [alias, target] : ptx_.aliases) {
    if (!functions_.count(target)) continue;
    if (auto it = functions_.find(alias); it != functions_.end()) {
      if (!functionDefs_[alias]->isDeclaration || !it->second->use_empty()) continue;
      it->second->eraseFromParent();
    }
    functions_[alias] = functions_[target];
    functionDefs_[alias] = functionDefs_[target];
  }
  return checkUnresolvedCallees();
}

std::string ModuleTranslator::sourcePosition(uint32_t file, uint32_t line) const {
  if (line == 0) return {};
  std::string name = file < ptx_.files.size() && !ptx_.files[file].empty()
                         ? ptx_.files[file]
                         : "file " + std::to_string(file);
  return name + ":" + std::to_string(line);
}

namespace {

// The opcode of the instruction at `loc` as the PTX writes it (its modifiers in their order),
// skipping a guard predicate; empty when the text does not have it there.
std::string_view opcodeAsWritten(std::string_view text, ptx::SourceLocation loc) {
  size_t at = 0;
  for (uint32_t line = 1; line < loc.line && at != std::string_view::npos; ++line) {
    at = text.find('\n', at);
    if (at != std::string_view::npos) ++at;
  }
  if (at == std::string_view::npos || loc.column == 0) return {};
  at += loc.column - 1;
  auto isSpace = [](char c) { return c == ' ' || c == '\t'; };
  auto tokenEnd = [&](size_t from) {
    size_t end = from;
    while (end < text.size() && !isSpace(text[end]) && text[end] != ';' && text[end] != '\n' &&
           text[end] != '\r')
      ++end;
    return end;
  };
  if (at >= text.size()) return {};
  if (text[at] == '@') {  // @%p / @!%p
    at = tokenEnd(at);
    while (at < text.size() && isSpace(text[at])) ++at;
  }
  size_t end = tokenEnd(at);
  return end > at ? text.substr(at, end - at) : std::string_view();
}

}  // namespace

std::string ModuleTranslator::describe(const ptx::Instruction& inst) const {
  std::string_view written = opcodeAsWritten(sourceText, inst.loc);
  if (!written.starts_with(ptx::opcodeName(inst.opcode))) written = {};  // not where we thought
  std::string text = "'" + (written.empty() ? instructionName(inst) : std::string(written)) +
                     "' at " + std::to_string(inst.loc.line) + ":" +
                     std::to_string(inst.loc.column);
  if (std::string source = sourcePosition(inst.sourceFile, inst.sourceLine); !source.empty())
    text += " (" + source + ")";
  return text;
}

Status ModuleTranslator::checkUnresolvedCallees() const {
  // Only code a kernel can reach counts: libcudadevrt's functions name syscalls NVIDIA's driver
  // supplies and Rocuda does not, harmless while nothing calls them.
  std::set<std::string, std::less<>> unresolved = ptx::unresolvedFunctions(ptx_);
  if (unresolved.empty()) return Status::success();
  std::set<std::string> reachable = functionsReachableFromKernels(ptx_);
  for (const auto& fn : ptx_.functions) {
    if (fn.isDeclaration || !reachable.count(fn.name)) continue;
    for (const auto& statement : fn.body) {
      if (statement.isLabel()) continue;
      const ptx::Instruction& inst = statement.instruction;
      for (const auto& op : inst.operands())
        if (op.kind == ptx::Operand::Kind::Symbol && unresolved.count(op.symbol()))
          return invalidInstruction(*this, inst,
                                    "unresolved extern function '" + std::string(op.symbol()) +
                                        "': no module defines it (a program built with "
                                        "-rdc=true links the module that does)");
    }
  }
  return Status::success();
}

KernelInfo ModuleTranslator::kernelInfo(const ptx::Function& fn) const {
  KernelInfo info;
  info.name = fn.name;
  uint64_t offset = 0, maxAlign = 1;
  for (const auto& p : fn.params) {
    uint32_t align = std::max(1u, p.effectiveAlignment());
    offset = alignTo(offset, align);
    auto size = static_cast<uint32_t>(p.sizeInBytes());
    info.params.push_back(KernelParamInfo{static_cast<uint32_t>(offset), size, align});
    offset += size;
    maxAlign = std::max<uint64_t>(maxAlign, align);
  }
  info.paramBufferSize = static_cast<uint32_t>(alignTo(offset, maxAlign));
  if (auto it = sharedStaticBytes_.find(fn.name); it != sharedStaticBytes_.end())
    info.staticSharedBytes = static_cast<uint32_t>(it->second);
  if (auto it = sharedDynamicOffset_.find(fn.name); it != sharedDynamicOffset_.end())
    info.dynamicSharedOffset = static_cast<uint32_t>(it->second);
  info.usesReservedShared = reservedSharedUsers_.count(fn.name) != 0;
  // Every depot the kernel can reach, each once (recursion makes the true depth unbounded).
  uint64_t local = 0;
  std::set<std::string> reached = reachableFunctions(ptx_, fn.name);
  for (const auto& name : reached)
    if (const ptx::Function* f = findFunctionDef(name))
      for (const auto& var : f->locals)
        if (var.space == ptx::StateSpace::Local) local += var.sizeInBytes();
  info.localBytesPerThread = static_cast<uint32_t>(local);
  info.usesPrintf = reached.count("vprintf") != 0;
  if (auto own = unsupportedFunctions_.find(fn.name); own != unsupportedFunctions_.end()) {
    info.unsupported = own->second;
  } else {
    for (const auto& name : reached)
      if (auto it = unsupportedFunctions_.find(name); it != unsupportedFunctions_.end()) {
        info.unsupported = it->second;
        break;
      }
  }
  info.usesDeviceMalloc = reached.count("malloc") != 0 || reached.count("free") != 0;
  // The device runtime's launches, as nvcc calls them and as libcudadevrt's wrappers do.
  for (const char* launch :
       {"__cudaCDP2LaunchDeviceV2", "__cudaCDP2LaunchDevice", "__cuda_syscall_cnpv2LaunchDeviceV2",
        "__cuda_syscall_cnpv2LaunchDevice"})
    info.launchesGrids = info.launchesGrids || reached.count(launch) != 0;
  info.launchesGraphs = reached.count("cudaGraphLaunch") != 0;
  for (const char* update : {"cudaGraphKernelNodeSetParam", "cudaGraphKernelNodeSetEnabled",
                             "cudaGraphKernelNodeSetGridDim", "cudaGraphKernelNodeUpdatesApply"})
    info.updatesGraphNodes = info.updatesGraphNodes || reached.count(update) != 0;
  for (size_t i = 0; i < 3 && i < fn.performance.maxntid.size(); ++i)
    info.maxntid[i] = fn.performance.maxntid[i];
  for (size_t i = 0; i < 3 && i < fn.performance.reqntid.size(); ++i)
    info.reqntid[i] = fn.performance.reqntid[i];
  for (size_t i = 0; i < 3 && i < fn.performance.reqnctapercluster.size(); ++i)
    info.reqnctapercluster[i] = fn.performance.reqnctapercluster[i];
  info.explicitCluster = fn.performance.explicitCluster;
  return info;
}

Result<std::unique_ptr<llvm::Module>> ModuleTranslator::translate(ModuleInfo& info) {
  if (ptx_.addressSize != 64)
    return makeError(ErrorCode::UnsupportedPtx, ".address_size 32 is not supported");
  ROCUDA_TRY(layoutShared());
  ROCUDA_TRY(declareGlobals(info));
  std::set<std::string> selected;  // with onlyKernel: the functions to translate
  if (!onlyKernel.empty()) {
    const ptx::Function* kernel = findFunctionDef(onlyKernel);
    if (kernel == nullptr || !kernel->isEntry || kernel->isDeclaration)
      return makeError(ErrorCode::NotFound, "the module has no kernel '" + onlyKernel + "'");
    selected = reachableFunctions(ptx_, onlyKernel);
  }
  for (const auto& fn : ptx_.functions) {
    if (fn.isDeclaration || functionDefs_[fn.name] != &fn) continue;
    // Another kernel named in this one (a device-side launch) is its own unit's: only its
    // reference is needed here.
    if (!onlyKernel.empty() && (!selected.count(fn.name) || (fn.isEntry && fn.name != onlyKernel)))
      continue;
    FunctionTranslator ft(*this, fn, functions_[fn.name]);
    Status translated = ft.translate();
    if (translated.ok()) continue;
    if (!deferUnsupported || translated.error().code != ErrorCode::UnsupportedPtx)
      return translated.error();
    llvm::Function* f = functions_[fn.name];
    f->deleteBody();
    llvm::IRBuilder<> stub(llvm::BasicBlock::Create(context_, "unsupported", f));
    stub.CreateCall(trapFunction());
    stub.CreateUnreachable();
    unsupportedFunctions_[fn.name] = translated.error().message;
    log::info(module_->getModuleIdentifier() + ": " + translated.error().message +
              "; a kernel that reaches it fails at launch with CUDA_ERROR_NOT_SUPPORTED");
  }
  if (!onlyKernel.empty()) {
    // The functions left out are internal declarations, which are not valid IR: none is used
    // (nothing translated reaches them), so they go.
    for (auto it = module_->begin(); it != module_->end();) {
      llvm::Function& f = *it++;
      if (!f.isDeclaration() || !f.hasLocalLinkage()) continue;
      if (!f.use_empty())
        return makeError(ErrorCode::Internal, "kernel '" + onlyKernel + "' uses function '" +
                                                  f.getName().str() + "', which it cannot reach");
      f.eraseFromParent();
    }
  }
  defineDeviceSyscalls(*this);
  if (!keepsF32Subnormals)
    module_->addModuleFlag(llvm::Module::Error, kF32FlushFlag,
                           llvm::ConstantInt::get(llvm::Type::getInt32Ty(context_), 1));
  // Kernels in source order.
  for (const auto& fn : ptx_.functions)
    if (fn.isEntry && !fn.isDeclaration && functionDefs_[fn.name] == &fn &&
        (onlyKernel.empty() || fn.name == onlyKernel))
      info.kernels.push_back(kernelInfo(fn));
  return std::move(module_);
}

Result<std::unique_ptr<llvm::Module>> translatePtx(llvm::LLVMContext& context,
                                                   std::string_view ptxText,
                                                   std::string_view moduleName, ModuleInfo& info,
                                                   bool memcheck, std::string_view onlyKernel,
                                                   bool deferUnsupported) {
  ptx::ParseResult parsed = ptx::parseModule(ptxText, moduleName);
  if (parsed.hasErrors()) return makeError(ErrorCode::InvalidPtx, parsed.formatDiagnostics());
  // PTX ISA 9.x (compiler.h: kNewestPtxVersion).
  const ptx::Module& m = parsed.module;
  std::string version = std::to_string(m.versionMajor) + "." + std::to_string(m.versionMinor);
  std::string newest =
      std::to_string(kNewestPtxVersion[0]) + "." + std::to_string(kNewestPtxVersion[1]);
  if (m.versionMajor > kNewestPtxVersion[0])
    return makeError(ErrorCode::UnsupportedPtxVersion, std::string(moduleName) + ": PTX .version " +
                                                           version + " is newer than " + newest +
                                                           ", the newest this driver reads");
  if (m.versionMajor == kNewestPtxVersion[0] && m.versionMinor > kNewestPtxVersion[1])
    log::info(std::string(moduleName) + ": PTX .version " + version + " is newer than " + newest +
              "; its instructions are all known, so it is compiled as " + newest);
  ModuleTranslator translator(context, parsed.module, moduleName);
  translator.memcheck = memcheck;
  translator.onlyKernel = std::string(onlyKernel);
  translator.deferUnsupported = deferUnsupported;
  translator.sourceText = ptxText;
  return translator.translate(info);
}

Status verifiedIr(const llvm::Module& module, std::string_view moduleName, std::string_view stage) {
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(module, &os))
    return makeError(ErrorCode::Internal, std::string(stage) + " IR of '" +
                                              std::string(moduleName) +
                                              "' does not verify: " + problems);
  return Status::success();
}

}  // namespace rocuda::compiler::detail
