// Out-of-line helpers of the PTX AST: the arena, the compact operand and instruction encodings,
// type sizes and names, variable sizes, register and module lookups.
#include "ptx/ast.h"

#include <algorithm>
#include <cstring>

namespace rocuda::ptx {

unsigned scalarTypeSize(ScalarType type) {
  switch (type) {
    case ScalarType::None:
      return 0;
    case ScalarType::B8:
    case ScalarType::U8:
    case ScalarType::S8:
      return 1;
    case ScalarType::B16:
    case ScalarType::U16:
    case ScalarType::S16:
      return 2;
    case ScalarType::B32:
    case ScalarType::U32:
    case ScalarType::S32:
      return 4;
    case ScalarType::B64:
    case ScalarType::U64:
    case ScalarType::S64:
      return 8;
    case ScalarType::B128:
      return 16;
    case ScalarType::F16:
    case ScalarType::BF16:
      return 2;
    case ScalarType::F16x2:
    case ScalarType::BF16x2:
    case ScalarType::S16x2:
    case ScalarType::U16x2:
      return 4;
    case ScalarType::TF32:
    case ScalarType::F32:
      return 4;
    case ScalarType::F64:
      return 8;
    case ScalarType::E4M3:
    case ScalarType::E5M2:
      return 1;
    case ScalarType::E4M3x2:
    case ScalarType::E5M2x2:
    case ScalarType::E2M3x2:
    case ScalarType::E3M2x2:
    case ScalarType::UE8M0x2:
      return 2;
    case ScalarType::E2M1x2:
      return 1;
    case ScalarType::S4:
    case ScalarType::U4:
    case ScalarType::S2:
    case ScalarType::U2:
    case ScalarType::B1:
      return 1;
    case ScalarType::Pred:
      return 1;
    case ScalarType::TexRef:
    case ScalarType::SamplerRef:
    case ScalarType::SurfRef:
      return 8;
  }
  return 0;
}

bool isSignedInteger(ScalarType type) {
  switch (type) {
    case ScalarType::S8:
    case ScalarType::S16:
    case ScalarType::S32:
    case ScalarType::S64:
    case ScalarType::S4:
    case ScalarType::S2:
      return true;
    default:
      return false;
  }
}

bool isUnsignedInteger(ScalarType type) {
  switch (type) {
    case ScalarType::U8:
    case ScalarType::U16:
    case ScalarType::U32:
    case ScalarType::U64:
    case ScalarType::U4:
    case ScalarType::U2:
      return true;
    default:
      return false;
  }
}

bool isBitType(ScalarType type) {
  switch (type) {
    case ScalarType::B8:
    case ScalarType::B16:
    case ScalarType::B32:
    case ScalarType::B64:
    case ScalarType::B128:
    case ScalarType::B1:
      return true;
    default:
      return false;
  }
}

bool isInteger(ScalarType type) {
  return isBitType(type) || isSignedInteger(type) || isUnsignedInteger(type);
}

ScalarType bitTypeOfSize(unsigned bytes) {
  switch (bytes) {
    case 1: return ScalarType::B8;
    case 2: return ScalarType::B16;
    case 4: return ScalarType::B32;
    case 8: return ScalarType::B64;
    case 16: return ScalarType::B128;
    default: return ScalarType::None;
  }
}

bool isFloat(ScalarType type) {
  switch (type) {
    case ScalarType::F16:
    case ScalarType::F16x2:
    case ScalarType::BF16:
    case ScalarType::BF16x2:
    case ScalarType::TF32:
    case ScalarType::F32:
    case ScalarType::F64:
    case ScalarType::E4M3:
    case ScalarType::E5M2:
    case ScalarType::E4M3x2:
    case ScalarType::E5M2x2:
    case ScalarType::E2M3x2:
    case ScalarType::E3M2x2:
    case ScalarType::E2M1x2:
    case ScalarType::UE8M0x2:
      return true;
    default:
      return false;
  }
}

const char* scalarTypeName(ScalarType type) {
  switch (type) {
    case ScalarType::None:
      return "";
    case ScalarType::B8:
      return "b8";
    case ScalarType::B16:
      return "b16";
    case ScalarType::B32:
      return "b32";
    case ScalarType::B64:
      return "b64";
    case ScalarType::B128:
      return "b128";
    case ScalarType::U8:
      return "u8";
    case ScalarType::U16:
      return "u16";
    case ScalarType::U32:
      return "u32";
    case ScalarType::U64:
      return "u64";
    case ScalarType::S8:
      return "s8";
    case ScalarType::S16:
      return "s16";
    case ScalarType::S32:
      return "s32";
    case ScalarType::S64:
      return "s64";
    case ScalarType::F16:
      return "f16";
    case ScalarType::F16x2:
      return "f16x2";
    case ScalarType::BF16:
      return "bf16";
    case ScalarType::BF16x2:
      return "bf16x2";
    case ScalarType::TF32:
      return "tf32";
    case ScalarType::F32:
      return "f32";
    case ScalarType::F64:
      return "f64";
    case ScalarType::E4M3:
      return "e4m3";
    case ScalarType::E5M2:
      return "e5m2";
    case ScalarType::E4M3x2:
      return "e4m3x2";
    case ScalarType::E5M2x2:
      return "e5m2x2";
    case ScalarType::E2M3x2:
      return "e2m3x2";
    case ScalarType::E3M2x2:
      return "e3m2x2";
    case ScalarType::E2M1x2:
      return "e2m1x2";
    case ScalarType::UE8M0x2:
      return "ue8m0x2";
    case ScalarType::S4:
      return "s4";
    case ScalarType::U4:
      return "u4";
    case ScalarType::S2:
      return "s2";
    case ScalarType::U2:
      return "u2";
    case ScalarType::B1:
      return "b1";
    case ScalarType::S16x2:
      return "s16x2";
    case ScalarType::U16x2:
      return "u16x2";
    case ScalarType::Pred:
      return "pred";
    case ScalarType::TexRef:
      return "texref";
    case ScalarType::SamplerRef:
      return "samplerref";
    case ScalarType::SurfRef:
      return "surfref";
  }
  return "";
}

const char* stateSpaceName(StateSpace space) {
  switch (space) {
    case StateSpace::None:
      return "";
    case StateSpace::Reg:
      return "reg";
    case StateSpace::Sreg:
      return "sreg";
    case StateSpace::Const:
      return "const";
    case StateSpace::Global:
      return "global";
    case StateSpace::Local:
      return "local";
    case StateSpace::Param:
      return "param";
    case StateSpace::Shared:
      return "shared";
    case StateSpace::SharedCluster:
      return "shared::cluster";
    case StateSpace::Tex:
      return "tex";
  }
  return "";
}

const char* specialRegisterName(SpecialRegister reg) {
  static const char* const kNames[] = {
      "%tid.x",
      "%tid.y",
      "%tid.z",
      "%ntid.x",
      "%ntid.y",
      "%ntid.z",
      "%ctaid.x",
      "%ctaid.y",
      "%ctaid.z",
      "%nctaid.x",
      "%nctaid.y",
      "%nctaid.z",
      "%clusterid.x",
      "%clusterid.y",
      "%clusterid.z",
      "%nclusterid.x",
      "%nclusterid.y",
      "%nclusterid.z",
      "%cluster_ctaid.x",
      "%cluster_ctaid.y",
      "%cluster_ctaid.z",
      "%cluster_nctaid.x",
      "%cluster_nctaid.y",
      "%cluster_nctaid.z",
      "%cluster_ctarank",
      "%cluster_nctarank",
      "%is_explicit_cluster",
      "%laneid",
      "%warpid",
      "%nwarpid",
      "%smid",
      "%nsmid",
      "%gridid",
      "%lanemask_eq",
      "%lanemask_le",
      "%lanemask_lt",
      "%lanemask_ge",
      "%lanemask_gt",
      "%clock",
      "%clock_hi",
      "%clock64",
      "%globaltimer",
      "%globaltimer_lo",
      "%globaltimer_hi",
      "%dynamic_smem_size",
      "%total_smem_size",
      "%aggr_smem_size",
      "%envreg",
      "%pm",
      "%current_graph_exec",
      "%reserved_smem_offset_begin",
      "%reserved_smem_offset_end",
      "%reserved_smem_offset_cap",
      "%reserved_smem_offset_",
      "WARP_SZ",
      "%pm",  // Pm64: printed with its index and "_64"
  };
  auto index = static_cast<size_t>(reg);
  return index < sizeof(kNames) / sizeof(kNames[0]) ? kNames[index] : "%?";
}

const char* opcodeName(Opcode opcode) {
#define ROCUDA_PTX_OPCODE_NAME_1(name) #name
#define ROCUDA_PTX_OPCODE_NAME_2(name, spelling) spelling
#define ROCUDA_PTX_OPCODE_PICK(_1, _2, macro, ...) macro
#define ROCUDA_PTX_OPCODE_NAME(...)                                                               \
  ROCUDA_PTX_OPCODE_PICK(__VA_ARGS__, ROCUDA_PTX_OPCODE_NAME_2, ROCUDA_PTX_OPCODE_NAME_1, unused) \
  (__VA_ARGS__),
  static const char* const kNames[] = {ROCUDA_PTX_OPCODES(ROCUDA_PTX_OPCODE_NAME)};
#undef ROCUDA_PTX_OPCODE_NAME
#undef ROCUDA_PTX_OPCODE_PICK
#undef ROCUDA_PTX_OPCODE_NAME_2
#undef ROCUDA_PTX_OPCODE_NAME_1
  auto index = static_cast<size_t>(opcode);
  return index < sizeof(kNames) / sizeof(kNames[0]) ? kNames[index] : "?";
}

uint64_t Variable::sizeInBytes() const {
  uint64_t size = uint64_t{scalarTypeSize(type)} * vectorWidth;
  for (uint64_t dim : dims) {
    if (dim == 0) return 0;
    // Saturate instead of wrapping on absurd declarations.
    if (size != 0 && dim > UINT64_MAX / size) return UINT64_MAX;
    size *= dim;
  }
  return size;
}

uint32_t Variable::effectiveAlignment() const {
  if (alignment != 0) return alignment;
  uint32_t natural = scalarTypeSize(type) * vectorWidth;
  return natural == 0 ? 1 : natural;
}

const Function* Module::findFunction(std::string_view wanted) const {
  const Function* declaration = nullptr;
  for (const auto& function : functions) {
    if (function.name != wanted) continue;
    if (!function.isDeclaration) return &function;
    if (declaration == nullptr) declaration = &function;
  }
  return declaration;
}

const Variable* Module::findGlobal(std::string_view wanted) const {
  // Prefer the definition over an `.extern` declaration of the same variable.
  const Variable* declaration = nullptr;
  for (const auto& variable : globals) {
    if (variable.name != wanted) continue;
    if (variable.linkage != Linkage::Extern) return &variable;
    if (declaration == nullptr) declaration = &variable;
  }
  return declaration;
}


// ---- Arena ----

void* Arena::allocate(size_t bytes, size_t alignment) {
  auto aligned = [&](char* p) {
    auto address = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<char*>((address + alignment - 1) & ~(uintptr_t{alignment} - 1));
  };
  char* at = cursor_ ? aligned(cursor_) : nullptr;
  if (at == nullptr || static_cast<size_t>(end_ - at) < bytes) {
    // Chunks grow geometrically (small modules stay small); big requests get their own.
    size_t size = std::max(nextChunk_, bytes + alignment);
    nextChunk_ = std::min<size_t>(nextChunk_ * 2, size_t{1} << 20);
    chunks_.emplace_back(new char[size]);
    reserved_ += size;
    cursor_ = chunks_.back().get();
    end_ = cursor_ + size;
    at = aligned(cursor_);
  }
  cursor_ = at + bytes;
  return at;
}

std::string_view Arena::copyString(std::string_view text) {
  if (text.empty()) return {};
  char* out = static_cast<char*>(allocate(text.size(), 1));
  std::memcpy(out, text.data(), text.size());
  return {out, text.size()};
}

std::string_view Arena::intern(std::string_view text) {
  auto it = interned_.find(text);
  if (it != interned_.end()) return *it;
  std::string_view copy = copyString(text);
  interned_.insert(copy);
  return copy;
}

// ---- Operand ----

Operand Operand::makeRegister(uint32_t reg, bool negated, const std::string_view* component,
                              bool minus) {
  Operand op;
  op.kind = Kind::Register;
  op.negated = negated;
  op.index_ = reg;
  op.payload_ = reinterpret_cast<uintptr_t>(component);
  if (minus) op.flags_ |= kMinus;
  return op;
}

Operand Operand::makeSpecial(SpecialRegister reg, uint32_t index, bool negated, VectorForm form) {
  Operand op;
  op.kind = Kind::SpecialRegister;
  op.negated = negated;
  op.sub_ = static_cast<uint8_t>(reg);
  op.index_ = index;
  if (form == VectorForm::Whole) op.flags_ |= kWhole;
  if (form == VectorForm::W) op.flags_ |= kComponentW;
  return op;
}

std::string_view Operand::component() const {
  if (kind != Kind::Register || payload_ == 0) return {};
  return *reinterpret_cast<const std::string_view*>(payload_);
}

Operand Operand::makeImmediate(const Immediate& imm) {
  Operand op;
  op.kind = Kind::Immediate;
  op.sub_ = static_cast<uint8_t>(imm.kind);
  if (imm.kind == Immediate::Kind::Double)
    std::memcpy(&op.payload_, &imm.value, sizeof(double));
  else
    op.payload_ = imm.bits;
  return op;
}

Operand Operand::makeSymbol(const SymbolReference* reference) {
  Operand op;
  op.kind = Kind::Symbol;
  op.flags_ = kHasReference;
  op.payload_ = reinterpret_cast<uintptr_t>(reference);
  return op;
}

Operand Operand::makeAddress(Address::BaseKind base, uint32_t reg, int64_t offset,
                             const SymbolReference* reference) {
  Operand op;
  op.kind = Kind::Address;
  op.sub_ = static_cast<uint8_t>(base);
  op.index_ = base == Address::BaseKind::Register ? reg : 0;
  if (reference != nullptr) {
    op.flags_ = kHasReference;
    op.payload_ = reinterpret_cast<uintptr_t>(reference);
  } else {
    op.payload_ = static_cast<uint64_t>(offset);
  }
  return op;
}

Operand Operand::makeList(Kind kind, const Operand* elements, size_t count) {
  Operand op;
  op.kind = kind;
  op.index_ = static_cast<uint32_t>(count);
  op.payload_ = reinterpret_cast<uintptr_t>(elements);
  return op;
}

Operand Operand::makeSink() { return Operand(); }

Immediate Operand::imm() const {
  Immediate imm;
  if (kind != Kind::Immediate) return imm;
  imm.kind = static_cast<Immediate::Kind>(sub_);
  imm.bits = payload_;
  if (imm.kind == Immediate::Kind::Double) std::memcpy(&imm.value, &payload_, sizeof(double));
  return imm;
}

const SymbolReference* Operand::reference() const {
  return (flags_ & kHasReference) ? reinterpret_cast<const SymbolReference*>(payload_) : nullptr;
}

std::string_view Operand::symbol() const {
  const SymbolReference* ref = kind == Kind::Symbol ? reference() : nullptr;
  return ref ? ref->name : std::string_view();
}

int64_t Operand::symbolOffset() const {
  const SymbolReference* ref = kind == Kind::Symbol ? reference() : nullptr;
  return ref ? ref->offset : 0;
}

Address Operand::address() const {
  Address address;
  if (kind != Kind::Address) return address;
  address.baseKind = static_cast<Address::BaseKind>(sub_);
  address.reg = address.baseKind == Address::BaseKind::Register ? index_ : 0;
  if (const SymbolReference* ref = reference()) {
    if (address.baseKind == Address::BaseKind::Symbol) address.symbol = ref->name;
    address.offset = ref->offset;
  } else {
    address.offset = static_cast<int64_t>(payload_);
  }
  return address;
}

Span<Operand> Operand::elements() const {
  if (kind == Kind::Vector || kind == Kind::List)
    return {reinterpret_cast<const Operand*>(payload_), index_};
  if (kind == Kind::Address) {
    const SymbolReference* ref = reference();
    if (ref != nullptr && ref->coordinates != nullptr)
      return {ref->coordinates, ref->coordinateCount};
  }
  return {};
}

// ---- Instruction and Statement ----

namespace {
size_t alignUp(size_t value, size_t alignment) { return (value + alignment - 1) / alignment * alignment; }
}  // namespace

Span<std::string_view> Instruction::modifiers() const {
  const char* base = static_cast<const char*>(parts_);
  size_t at = alignUp(sizeof(Operand) * operandCount_, alignof(std::string_view));
  return {reinterpret_cast<const std::string_view*>(base + at), modifierCount_};
}

Span<ScalarType> Instruction::types() const {
  const char* base = static_cast<const char*>(parts_);
  size_t at = alignUp(sizeof(Operand) * operandCount_, alignof(std::string_view)) +
              sizeof(std::string_view) * modifierCount_;
  return {reinterpret_cast<const ScalarType*>(base + at), typeCount_};
}

void Instruction::setParts(Arena& arena, const Operand* operands, size_t operandCount,
                           const std::string_view* modifiers, size_t modifierCount,
                           const ScalarType* types, size_t typeCount) {
  operandCount = std::min<size_t>(operandCount, 255);
  modifierCount = std::min<size_t>(modifierCount, 255);
  typeCount = std::min<size_t>(typeCount, 255);
  size_t modifiersAt = alignUp(sizeof(Operand) * operandCount, alignof(std::string_view));
  size_t typesAt = modifiersAt + sizeof(std::string_view) * modifierCount;
  size_t bytes = typesAt + typeCount;
  operandCount_ = static_cast<uint8_t>(operandCount);
  modifierCount_ = static_cast<uint8_t>(modifierCount);
  typeCount_ = static_cast<uint8_t>(typeCount);
  if (bytes == 0) {
    parts_ = nullptr;
    return;
  }
  char* block = static_cast<char*>(arena.allocate(bytes, alignof(Operand)));
  for (size_t i = 0; i < operandCount; ++i)
    new (block + sizeof(Operand) * i) Operand(operands[i]);
  for (size_t i = 0; i < modifierCount; ++i)
    new (block + modifiersAt + sizeof(std::string_view) * i) std::string_view(modifiers[i]);
  if (typeCount) std::memcpy(block + typesAt, types, typeCount);
  parts_ = block;
}

void Instruction::setOperands(Arena& arena, const Operand* operands, size_t count) {
  Span<std::string_view> mods = modifiers();
  Span<ScalarType> tys = types();
  std::vector<std::string_view> keptModifiers(mods.begin(), mods.end());
  std::vector<ScalarType> keptTypes(tys.begin(), tys.end());
  setParts(arena, operands, count, keptModifiers.data(), keptModifiers.size(), keptTypes.data(),
           keptTypes.size());
}

Statement Statement::makeLabel(Arena& arena, std::string_view name, SourceLocation loc) {
  Statement statement;
  statement.label_ = arena.create(arena.intern(name));
  statement.instruction.loc = loc;
  return statement;
}

// ---- InitializerElement ----

InitializerElement InitializerElement::makeNumber(const Immediate& number) {
  InitializerElement element;
  element.kind_ = Kind::Number;
  element.numberKind_ = number.kind;
  if (number.kind == Immediate::Kind::Double)
    std::memcpy(&element.payload_, &number.value, sizeof(double));
  else
    element.payload_ = number.bits;
  return element;
}

InitializerElement InitializerElement::makeSymbolAddress(const SymbolReference* reference,
                                                         bool generic, uint8_t maskedByte) {
  InitializerElement element;
  element.kind_ = Kind::SymbolAddress;
  element.generic_ = generic;
  element.maskedByte_ = maskedByte;
  element.payload_ = reinterpret_cast<uintptr_t>(reference);
  return element;
}

Immediate InitializerElement::number() const {
  Immediate imm;
  if (kind_ != Kind::Number) return imm;
  imm.kind = numberKind_;
  imm.bits = payload_;
  if (imm.kind == Immediate::Kind::Double) std::memcpy(&imm.value, &payload_, sizeof(double));
  return imm;
}

std::string_view InitializerElement::symbol() const {
  return kind_ == Kind::SymbolAddress ? reinterpret_cast<const SymbolReference*>(payload_)->name
                                      : std::string_view();
}

int64_t InitializerElement::offset() const {
  return kind_ == Kind::SymbolAddress ? reinterpret_cast<const SymbolReference*>(payload_)->offset
                                      : 0;
}

// ---- Function registers ----

uint32_t Function::registerCount() const {
  if (registerDeclarations.empty()) return 0;
  const RegisterDeclaration& last = registerDeclarations.back();
  return last.first + last.count;
}

const RegisterDeclaration& Function::declarationOf(uint32_t reg) const {
  // The last declaration whose first index is <= reg.
  auto it = std::upper_bound(
      registerDeclarations.begin(), registerDeclarations.end(), reg,
      [](uint32_t value, const RegisterDeclaration& d) { return value < d.first; });
  return *(it == registerDeclarations.begin() ? it : it - 1);
}

std::string Function::registerName(uint32_t reg) const {
  auto renamed = std::lower_bound(
      renamedRegisters.begin(), renamedRegisters.end(), reg,
      [](const std::pair<uint32_t, std::string_view>& entry, uint32_t value) {
        return entry.first < value;
      });
  if (renamed != renamedRegisters.end() && renamed->first == reg) return std::string(renamed->second);
  if (registerDeclarations.empty()) return "%?";
  const RegisterDeclaration& d = declarationOf(reg);
  if (!d.isRange) return std::string(d.name);
  return std::string(d.name) + std::to_string(reg - d.first);
}

int64_t Function::findRegister(std::string_view name) const {
  for (const auto& [reg, renamed] : renamedRegisters)
    if (renamed == name) return reg;
  auto isRenamed = [&](uint32_t reg) {
    auto it = std::lower_bound(
        renamedRegisters.begin(), renamedRegisters.end(), reg,
        [](const std::pair<uint32_t, std::string_view>& entry, uint32_t value) {
          return entry.first < value;
        });
    return it != renamedRegisters.end() && it->first == reg;
  };
  for (const RegisterDeclaration& d : registerDeclarations) {
    if (!d.isRange) {
      if (d.name == name && !isRenamed(d.first)) return d.first;
      continue;
    }
    if (name.size() <= d.name.size() || name.substr(0, d.name.size()) != d.name) continue;
    std::string_view digits = name.substr(d.name.size());
    if (digits.size() > 9 || (digits.size() > 1 && digits[0] == '0')) continue;
    uint32_t number = 0;
    bool ok = true;
    for (char c : digits) {
      if (c < '0' || c > '9') ok = false;
      number = number * 10 + static_cast<uint32_t>(c - '0');
    }
    if (ok && number < d.count && !isRenamed(d.first + number)) return d.first + number;
  }
  return -1;
}

Module::Module() { arenas.push_back(std::make_shared<Arena>()); }

SpaceSpelling spaceSpellingOf(std::string_view suffix) {
  if (suffix == "shared::cta") return SpaceSpelling::Cta;
  if (suffix == "param::entry") return SpaceSpelling::Entry;
  if (suffix == "param::func") return SpaceSpelling::Func;
  return SpaceSpelling::Plain;
}

const char* spaceSpellingSuffix(SpaceSpelling spelling) {
  static const char* const kSuffixes[] = {"", "::cta", "::entry", "::func"};
  return kSuffixes[static_cast<int>(spelling)];
}

bool isNumberedSpecialRegister(SpecialRegister reg) {
  return reg == SpecialRegister::Envreg || reg == SpecialRegister::Pm ||
         reg == SpecialRegister::Pm64 || reg == SpecialRegister::ReservedSmemOffsetN;
}

bool isDeviceRuntimeFunction(std::string_view name) {
  return name == "vprintf" || name == "__assertfail" || name == "malloc" || name == "free" ||
         name == "cudaGraphSetConditional" || name == "cudaGraphLaunch" ||
         name == "cudaGraphKernelNodeSetParam" || name == "cudaGraphKernelNodeSetEnabled" ||
         name == "cudaGraphKernelNodeSetGridDim" || name == "cudaGraphKernelNodeUpdatesApply" ||
         name == "cudaEventRecordWithFlags" || name == "cudaEventRecordWithFlags_ptsz" ||
         name.starts_with("__cudaCDP2") || name.starts_with("__cuda_syscall_cnpv2") ||
         name.starts_with("__cuda_syscall_cnpMaxActiveBlocksPerMultiprocessor") ||
         name == "__cuda_syscall_CGS_get_intrinsic_handle" || name == "__cuda_syscall_CGS_sync";
}

}  // namespace rocuda::ptx
