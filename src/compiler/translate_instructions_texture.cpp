// Texture and surface instructions as calls into the device runtime's sampler (the
// `__rocuda_tex_*` / `__rocuda_surf_*` functions of the contract in compiler.h): tex, tld4, txq,
// suld.b, sust.b, sust.p, sured, suq. The handle operand is a 64-bit texture/surface object
// (texture references bound by name are not supported). Results come back through a 16-byte stack
// buffer; .f16 / .f16x2 results are its float lanes rounded to half, and the `d|p` forms' residency
// predicate is always true.
#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

// Geometry codes of the texture sampler (device_library/texture_sampler.h).
enum Geometry : int { k1D = 0, k2D = 1, k3D = 2, kA1D = 3, kA2D = 4, kCube = 5, kACube = 6 };

int geometryOf(const ptx::Instruction& inst) {
  static const std::pair<const char*, int> kNames[] = {
      {"1d", k1D},   {"2d", k2D},     {"3d", k3D},      {"a1d", kA1D},
      {"a2d", kA2D}, {"cube", kCube}, {"acube", kACube}};
  for (const auto& [name, code] : kNames)
    if (inst.hasModifier(name)) return code;
  return -1;
}

llvm::FunctionCallee runtime(FunctionTranslator& t, const char* name, llvm::Type* ret,
                             std::vector<llvm::Type*> args) {
  auto callee = t.mt.module().getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) f->setDoesNotThrow();
  return callee;
}

// The object handle of `[handle, {coords}]` (a 64-bit register or immediate).
Result<llvm::Value*> handleOf(FunctionTranslator& t, const ptx::Instruction& inst,
                              const ptx::Operand& op) {
  if (op.kind != ptx::Operand::Kind::Address)
    return t.unsupported(inst, "expected [handle, {coordinates}]");
  if (op.address().baseKind != ptx::Address::BaseKind::Register)
    return t.unsupported(inst, "texture and surface references by name (use objects)");
  if (op.elements().size() > 1)
    return t.unsupported(inst, "a separate sampler operand (texmode_independent)");
  return t.read(ptx::Operand::makeRegister(op.address().reg), ScalarType::B64);
}

// The coordinate operands of an address operand (a vector, or a single operand).
std::vector<const ptx::Operand*> coordinatesOf(const ptx::Operand& op) {
  std::vector<const ptx::Operand*> out;
  if (op.elements().empty()) return out;
  const ptx::Operand& coords = op.elements()[0];
  if (coords.kind == ptx::Operand::Kind::Vector) {
    for (const auto& e : coords.elements()) out.push_back(&e);
  } else {
    out.push_back(&coords);
  }
  return out;
}

// The destination registers: a vector operand's elements, or the operand itself.
std::vector<const ptx::Operand*> elementsOf(const ptx::Operand& op) {
  std::vector<const ptx::Operand*> out;
  if (op.kind == ptx::Operand::Kind::Vector) {
    for (const auto& e : op.elements()) out.push_back(&e);
  } else {
    out.push_back(&op);
  }
  return out;
}

// How many leading coordinates a geometry uses, and whether the first is the array index.
bool coordinateLayout(int geometry, size_t& spatial, bool& layered) {
  layered = geometry == kA1D || geometry == kA2D || geometry == kACube;
  switch (geometry) {
    case k1D:
    case kA1D:
      spatial = 1;
      return true;
    case k2D:
    case kA2D:
      spatial = 2;
      return true;
    case k3D:
    case kCube:
    case kACube:
      spatial = 3;
      return true;
    default:
      return false;
  }
}

// Copy the 32-bit lanes of `buffer` into the destination registers. Half results (tex .f16 and
// .f16x2) are the float lanes rounded to nearest even: .f16 one per register, .f16x2 two (the
// first in the low half).
Status writeLanes(FunctionTranslator& t, const ptx::Operand& dst, llvm::Value* buffer,
                  ScalarType type) {
  auto& B = t.b;
  auto lanes = elementsOf(dst);
  size_t perRegister = type == ScalarType::F16x2 ? 2 : 1;
  if (lanes.size() * perRegister > 4)
    return makeError(ErrorCode::InvalidPtx, "more than four result lanes");
  auto lane = [&](size_t i) {
    return B.CreateLoad(t.i32(),
                        B.CreateConstInBoundsGEP1_32(t.i32(), buffer, static_cast<unsigned>(i)));
  };
  auto half = [&](size_t i) {  // the bits of lane i as f16
    llvm::Value* h = B.CreateFPTrunc(B.CreateBitCast(lane(i), B.getFloatTy()), B.getHalfTy());
    return B.CreateZExt(B.CreateBitCast(h, B.getInt16Ty()), t.i32());
  };
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (type == ScalarType::F16) {
      ROCUDA_TRY(t.write(*lanes[i], B.CreateTrunc(half(i), B.getInt16Ty()), ScalarType::B16));
    } else if (type == ScalarType::F16x2) {
      ROCUDA_TRY(t.write(*lanes[i], B.CreateOr(half(2 * i), B.CreateShl(half(2 * i + 1), 16)),
                         ScalarType::B32));
    } else {
      ROCUDA_TRY(t.write(*lanes[i], lane(i), type));
    }
  }
  return Status::success();
}

// tex and tld4 with `d|p` (PTX 7.1): p says whether the texels were resident in memory, which
// they always are here (no sparse textures).
Status writeResidency(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (!inst.destinationPair) return Status::success();
  return t.write(inst.operands()[1], t.b.getTrue(), ScalarType::Pred);
}

Status tex(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  int geometry = geometryOf(inst);
  size_t spatial = 0;
  bool layered = false;
  size_t where = inst.destinationPair ? 2 : 1;  // the [handle, {coordinates}] operand
  if (!coordinateLayout(geometry, spatial, layered) || inst.types().size() != 2 ||
      inst.operands().size() < where + 1)
    return t.unsupported(inst);
  ScalarType result = inst.types()[0], coordType = inst.types()[1];
  if (result != ScalarType::F32 && result != ScalarType::S32 && result != ScalarType::U32 &&
      result != ScalarType::F16 && result != ScalarType::F16x2)
    return t.unsupported(inst, "result type");
  if (coordType != ScalarType::F32 && coordType != ScalarType::S32)
    return t.unsupported(inst, "coordinate type");
  ROCUDA_VALUE(handle, handleOf(t, inst, inst.operands()[where]));
  auto coords = coordinatesOf(inst.operands()[where]);
  size_t first = layered ? 1 : 0;
  if (coords.size() < first + spatial) return t.invalid(inst, "too few coordinates");
  llvm::Value* layer = B.getInt32(0);
  if (layered) {
    ROCUDA_VALUE(index, t.read(*coords[0], ScalarType::S32));
    layer = index;
  }
  bool isFloat = coordType == ScalarType::F32;
  llvm::Type* coordTy = isFloat ? B.getFloatTy() : t.i32();
  llvm::Value* xyz[3] = {llvm::Constant::getNullValue(coordTy),
                         llvm::Constant::getNullValue(coordTy),
                         llvm::Constant::getNullValue(coordTy)};
  for (size_t i = 0; i < spatial; ++i) {
    ROCUDA_VALUE(c, t.read(*coords[first + i], coordType));
    xyz[i] = c;
  }
  llvm::Value* buffer = t.entryAlloca(llvm::ArrayType::get(t.i32(), 4), 16, "tex.out");
  std::vector<llvm::Type*> types = {t.ptrTy(), t.i64(), t.i32(), coordTy,
                                    coordTy,   coordTy, t.i32()};
  std::vector<llvm::Value*> args = {buffer, handle, B.getInt32(geometry), xyz[0], xyz[1],
                                    xyz[2], layer};
  // tex.level: an explicit level of detail; tex.grad: the coordinates' gradients along x and y,
  // from which the runtime derives it. Both choose among a mipmapped texture's levels.
  const char* name = isFloat ? "__rocuda_tex_fetch_f" : "__rocuda_tex_fetch_i";
  bool level = inst.hasModifier("level"), gradients = inst.hasModifier("grad");
  if ((level || gradients) && !isFloat)
    return t.unsupported(inst, "tex.level / tex.grad with integer coordinates");
  const auto& ops = inst.operands();
  size_t expected = where + 1 + (level ? 1 : 0) + (gradients ? 2 : 0);
  if (ops.size() > expected)  // the optional offset vector and depth-compare value
    return t.unsupported(inst, "texel offsets and depth comparison");
  if (ops.size() != expected) return t.invalid(inst, "too few operands");
  if (level) {
    ROCUDA_VALUE(lod, t.read(ops[where + 1], ScalarType::F32));
    name = "__rocuda_tex_fetch_lod";
    types.push_back(B.getFloatTy());
    args.push_back(lod);
  } else if (gradients) {
    name = "__rocuda_tex_fetch_grad";
    for (size_t g = 0; g < 2; ++g) {
      auto components = elementsOf(ops[where + 1 + g]);
      for (size_t i = 0; i < 3; ++i) {
        llvm::Value* component = llvm::ConstantFP::get(B.getFloatTy(), 0.0);
        if (i < components.size() && i < spatial) {
          ROCUDA_VALUE(c, t.read(*components[i], ScalarType::F32));
          component = c;
        }
        types.push_back(B.getFloatTy());
        args.push_back(component);
      }
    }
  }
  B.CreateCall(runtime(t, name, B.getVoidTy(), types), args);
  ROCUDA_TRY(writeResidency(t, inst));
  return writeLanes(t, inst.operands()[0], buffer, result);
}

Status tld4(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  int component = -1;
  const char* names[] = {"r", "g", "b", "a"};
  for (int i = 0; i < 4; ++i)
    if (inst.hasModifier(names[i])) component = i;
  int geometry = geometryOf(inst);
  size_t where = inst.destinationPair ? 2 : 1;
  if (component < 0 || (geometry != k2D && geometry != kA2D) || inst.types().size() != 2 ||
      inst.types()[1] != ScalarType::F32 || inst.operands().size() < where + 1)
    return t.unsupported(inst);
  ROCUDA_VALUE(handle, handleOf(t, inst, inst.operands()[where]));
  auto coords = coordinatesOf(inst.operands()[where]);
  size_t first = geometry == kA2D ? 1 : 0;
  if (coords.size() < first + 2) return t.invalid(inst, "too few coordinates");
  llvm::Value* layer = B.getInt32(0);
  if (first == 1) {
    ROCUDA_VALUE(index, t.read(*coords[0], ScalarType::S32));
    layer = index;
  }
  ROCUDA_VALUE(x, t.read(*coords[first], ScalarType::F32));
  ROCUDA_VALUE(y, t.read(*coords[first + 1], ScalarType::F32));
  llvm::Value* buffer = t.entryAlloca(llvm::ArrayType::get(t.i32(), 4), 16, "tld4.out");
  auto callee = runtime(t, "__rocuda_tex_gather", B.getVoidTy(),
                        {t.ptrTy(), t.i64(), t.i32(), B.getFloatTy(), B.getFloatTy(), t.i32()});
  B.CreateCall(callee, {buffer, handle, B.getInt32(component), x, y, layer});
  ROCUDA_TRY(writeResidency(t, inst));
  return writeLanes(t, inst.operands()[0], buffer, inst.types()[0]);
}

Status query(FunctionTranslator& t, const ptx::Instruction& inst, bool surface) {
  static const char* kQueries[] = {"width",         "height",
                                   "depth",         "channel_data_type",
                                   "channel_order", "normalized_coords",
                                   "filter_mode",   "addr_mode_0",
                                   "addr_mode_1",   "addr_mode_2",
                                   "array_size",    "num_mipmap_levels",
                                   "num_samples"};
  int which = -1;
  for (int i = 0; i < 13; ++i)
    if (inst.hasModifier(kQueries[i])) which = i;
  if (which < 0 || inst.operands().size() < 2) return t.unsupported(inst);
  ROCUDA_VALUE(handle, handleOf(t, inst, inst.operands()[1]));
  auto callee = runtime(t, surface ? "__rocuda_surf_query" : "__rocuda_tex_query", t.i32(),
                        {t.i64(), t.i32()});
  llvm::Value* value = t.b.CreateCall(callee, {handle, t.b.getInt32(which)});
  return t.write(inst.operands()[0], value, ScalarType::B32);
}

// Surface coordinates: x (bytes), y, z, layer as i32 values.
Result<std::array<llvm::Value*, 4>> surfaceCoordinates(FunctionTranslator& t,
                                                       const ptx::Instruction& inst,
                                                       const ptx::Operand& address, int geometry) {
  size_t spatial = 0;
  bool layered = false;
  if (!coordinateLayout(geometry, spatial, layered) || geometry == kCube || geometry == kACube)
    return t.unsupported(inst, "surface geometry");
  auto coords = coordinatesOf(address);
  size_t first = layered ? 1 : 0;
  if (coords.size() < first + spatial) return t.invalid(inst, "too few coordinates");
  std::array<llvm::Value*, 4> out = {t.b.getInt32(0), t.b.getInt32(0), t.b.getInt32(0),
                                     t.b.getInt32(0)};
  for (size_t i = 0; i < spatial; ++i) {
    ROCUDA_VALUE(c, t.read(*coords[first + i], ScalarType::B32));
    out[i] = c;
  }
  if (layered) {
    ROCUDA_VALUE(index, t.read(*coords[0], ScalarType::B32));
    out[3] = index;
  }
  return out;
}

int boundaryMode(const ptx::Instruction& inst) {
  if (inst.hasModifier("clamp")) return 1;
  if (inst.hasModifier("zero")) return 2;
  return 0;  // .trap, the default
}

// After a surface call in .trap mode: a non-zero status traps.
void trapOnFailure(FunctionTranslator& t, llvm::Value* status) {
  auto& B = t.b;
  llvm::BasicBlock* trapBlock = llvm::BasicBlock::Create(t.ctx(), "surf.trap", t.function);
  llvm::BasicBlock* next = llvm::BasicBlock::Create(t.ctx(), "surf.ok", t.function);
  B.CreateCondBr(B.CreateICmpNE(status, B.getInt32(0)), trapBlock, next);
  B.SetInsertPoint(trapBlock);
  B.CreateCall(t.mt.trapFunction());
  B.CreateUnreachable();
  B.SetInsertPoint(next);
}

unsigned elementBytes(ScalarType type) {
  switch (type) {
    case ScalarType::B8:
      return 1;
    case ScalarType::B16:
      return 2;
    case ScalarType::B32:
      return 4;
    case ScalarType::B64:
      return 8;
    default:
      return 0;
  }
}

Status surfaceAccess(FunctionTranslator& t, const ptx::Instruction& inst, bool load) {
  auto& B = t.b;
  bool formatted = inst.hasModifier("p");
  if ((!inst.hasModifier("b") && !formatted) || (formatted && load) || inst.types().size() != 1 ||
      inst.operands().size() != 2)
    return t.unsupported(inst);
  unsigned element = elementBytes(inst.types()[0]);
  unsigned bytes = element * inst.vectorWidth;
  if (element == 0 || bytes > 16 || (formatted && element != 4))
    return t.unsupported(inst, "element type");
  const ptx::Operand& address = inst.operands()[load ? 1 : 0];
  const ptx::Operand& data = inst.operands()[load ? 0 : 1];
  int geometry = geometryOf(inst);
  ROCUDA_VALUE(handle, handleOf(t, inst, address));
  auto coords = surfaceCoordinates(t, inst, address, geometry);
  if (!coords.ok()) return coords.error();
  llvm::Type* bufferType = llvm::ArrayType::get(t.i8(), 16);
  llvm::Value* buffer = t.entryAlloca(bufferType, 16, load ? "suld.out" : "sust.in");
  llvm::Type* elementType = B.getIntNTy(element * 8);
  auto lanes = elementsOf(data);
  if (lanes.size() != inst.vectorWidth) return t.invalid(inst, "vector width mismatch");
  if (!load) {
    B.CreateStore(llvm::Constant::getNullValue(bufferType), buffer);
    for (size_t i = 0; i < lanes.size(); ++i) {
      ROCUDA_VALUE(v, t.read(*lanes[i], inst.types()[0]));
      B.CreateStore(
          v, B.CreateConstInBoundsGEP1_32(t.i8(), buffer, static_cast<unsigned>(i * element)));
    }
  }
  int mode = boundaryMode(inst);
  std::vector<llvm::Value*> args = {buffer,       handle,       B.getInt32(geometry), (*coords)[0],
                                    (*coords)[1], (*coords)[2], (*coords)[3]};
  const char* name =
      load ? "__rocuda_surf_load" : (formatted ? "__rocuda_surf_store_p" : "__rocuda_surf_store");
  args.push_back(B.getInt32(formatted ? -1 : static_cast<int32_t>(bytes)));
  args.push_back(B.getInt32(mode));
  std::vector<llvm::Type*> types = {t.ptrTy(), t.i64()};
  for (int i = 0; i < 7; ++i) types.push_back(t.i32());
  llvm::Value* status = B.CreateCall(runtime(t, name, t.i32(), types), args);
  if (mode == 0) trapOnFailure(t, status);
  if (!load) return Status::success();
  for (size_t i = 0; i < lanes.size(); ++i) {
    llvm::Value* slot =
        B.CreateConstInBoundsGEP1_32(t.i8(), buffer, static_cast<unsigned>(i * element));
    ROCUDA_TRY(t.write(*lanes[i], B.CreateLoad(elementType, slot), inst.types()[0]));
  }
  return Status::success();
}

// sured.{b,p}.op.geom.type.mode [surf, coords], value: an atomic read-modify-write of the
// surface's element, done by the runtime. .b: x in bytes, the type as written; .p: x in samples,
// .b32/.b64 signed or unsigned as the surface's format says.
Status surfaceReduction(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  bool formatted = inst.hasModifier("p");
  if ((!inst.hasModifier("b") && !formatted) || inst.types().size() != 1 ||
      inst.operands().size() != 2)
    return t.unsupported(inst);
  static const char* kOps[] = {"add", "min", "max", "and", "or"};
  int op = -1;
  for (int i = 0; i < 5; ++i)
    if (inst.hasModifier(kOps[i])) op = i;
  // The runtime's type codes: 0 u32, 1 s32, 2 u64, 3 s64, 4 b32, 5 b64 (.p: the format decides).
  ScalarType type = inst.types()[0];
  int typeCode = type == ScalarType::U32   ? 0
                 : type == ScalarType::S32 ? 1
                 : type == ScalarType::U64 ? 2
                 : type == ScalarType::S64 ? 3
                 : type == ScalarType::B32 ? 4
                 : type == ScalarType::B64 ? 5
                                           : -1;
  if (op < 0 || typeCode < 0) return t.unsupported(inst, "operation or type");
  int geometry = geometryOf(inst);
  if (geometry != k1D && geometry != k2D && geometry != k3D)
    return t.unsupported(inst, "surface geometry");
  ROCUDA_VALUE(handle, handleOf(t, inst, inst.operands()[0]));
  auto coords = surfaceCoordinates(t, inst, inst.operands()[0], geometry);
  if (!coords.ok()) return coords.error();
  bool wide = typeCode == 2 || typeCode == 3 || typeCode == 5;
  ROCUDA_VALUE(value, t.read(inst.operands()[1], wide ? ScalarType::B64 : ScalarType::B32));
  if (!wide) value = B.CreateZExt(value, t.i64());
  int mode = boundaryMode(inst);
  std::vector<llvm::Type*> types = {t.i64(), t.i32(), t.i32(), t.i32(), t.i32(), t.i32(),
                                    t.i64(), t.i32(), t.i32(), t.i32(), t.i32()};
  llvm::Value* status = B.CreateCall(
      runtime(t, "__rocuda_surf_reduce", t.i32(), types),
      {handle, B.getInt32(geometry), (*coords)[0], (*coords)[1], (*coords)[2], (*coords)[3], value,
       B.getInt32(op), B.getInt32(typeCode), B.getInt32(formatted ? 1 : 0), B.getInt32(mode)});
  if (mode == 0) trapOnFailure(t, status);
  return Status::success();
}

}  // namespace

Status translateTextureOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  switch (inst.opcode) {
    case ptx::Opcode::tex:
      return tex(t, inst);
    case ptx::Opcode::tld4:
      return tld4(t, inst);
    case ptx::Opcode::txq:
      return query(t, inst, false);
    case ptx::Opcode::suq:
      return query(t, inst, true);
    case ptx::Opcode::suld:
      return surfaceAccess(t, inst, true);
    case ptx::Opcode::sust:
      return surfaceAccess(t, inst, false);
    case ptx::Opcode::sured:
      return surfaceReduction(t, inst);
    default:
      return t.unsupported(inst);
  }
}

}  // namespace rocuda::compiler::detail
