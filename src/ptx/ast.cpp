// Out-of-line helpers of the PTX AST: type sizes and names, variable sizes, module lookups.
#include "ptx/ast.h"

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
    case ScalarType::Pred:
      return "pred";
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

}  // namespace rocuda::ptx
