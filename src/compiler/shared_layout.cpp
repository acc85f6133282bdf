// Shared-memory layout: find which .shared variables each kernel can reach through its call
// graph, then place variables so that those used by one kernel never overlap, while variables of
// different kernels may. Dynamic (unsized extern) arrays start after the largest static part
// among the kernels that use them, so one offset serves every .func that touches them.
#include "compiler/shared_layout.h"

#include <algorithm>
#include <set>
#include <vector>

#include "ptx/link.h"

namespace rocuda::compiler::detail {
namespace {

uint64_t alignTo(uint64_t value, uint64_t alignment) {
  if (alignment <= 1) return value;
  return (value + alignment - 1) / alignment * alignment;
}

// Dynamic shared memory is an unsized array (`extern __shared__ T a[]`, which nvcc declares
// `.extern .shared ... a[]`). A sized `.extern .shared` array, as LLVM's NVPTX back end declares
// module-level shared arrays (Taichi's SharedArray), is static: ptxas allocates it so.
bool isDynamic(const ptx::Variable& var) {
  return std::any_of(var.dims.begin(), var.dims.end(), [](uint64_t d) { return d == 0; });
}

// The reserved region as a variable of the layout (kernels that read none leave it out).
const ptx::Variable& reservedSharedVariable() {
  static const ptx::Variable variable = [] {
    ptx::Variable v;
    v.name = kReservedSharedKey;
    v.space = ptx::StateSpace::Shared;
    v.type = ptx::ScalarType::B8;
    v.alignment = 16;
    v.dims = {kReservedSharedBytes};
    return v;
  }();
  return variable;
}

struct SharedVar {
  std::string key;
  const ptx::Variable* var;
};

struct FunctionRefs {
  std::set<std::string> shared;  // keys of shared variables named in the body
};

class RefCollector {
 public:
  RefCollector(const ptx::Module& module, const ptx::Function& fn, FunctionRefs& out)
      : module_(module), fn_(fn), out_(out) {}

  void symbol(std::string_view view) {
    std::string name(view);
    for (const auto& var : fn_.locals)
      if (var.name == name) {
        if (var.space == ptx::StateSpace::Shared) out_.shared.insert(fn_.name + "/" + name);
        return;
      }
    if (const ptx::Variable* g = module_.findGlobal(name)) {
      if (g->space == ptx::StateSpace::Shared) out_.shared.insert(name);
      return;
    }
  }

  void operand(const ptx::Operand& op) {
    switch (op.kind) {
      case ptx::Operand::Kind::Symbol:
        symbol(op.symbol());
        break;
      case ptx::Operand::Kind::Address:
        if (op.address().baseKind == ptx::Address::BaseKind::Symbol) symbol(op.address().symbol);
        break;
      case ptx::Operand::Kind::Vector:
      case ptx::Operand::Kind::List:
        for (const auto& e : op.elements()) operand(e);
        break;
      case ptx::Operand::Kind::SpecialRegister:
        if (isReservedSharedRegister(op.special())) out_.shared.insert(kReservedSharedKey);
        break;
      default:
        break;
    }
  }

 private:
  const ptx::Module& module_;
  const ptx::Function& fn_;
  FunctionRefs& out_;
};

bool readsReservedShared(const ptx::Operand& op) {
  if (op.kind == ptx::Operand::Kind::SpecialRegister) return isReservedSharedRegister(op.special());
  if (op.kind == ptx::Operand::Kind::Vector || op.kind == ptx::Operand::Kind::List)
    for (const auto& e : op.elements())
      if (readsReservedShared(e)) return true;
  return false;
}

bool moduleReadsReservedShared(const ptx::Module& module) {
  for (const auto& fn : module.functions)
    for (const auto& st : fn.body)
      if (!st.isLabel())
        for (const auto& op : st.instruction.operands())
          if (readsReservedShared(op)) return true;
  return false;
}

std::vector<SharedVar> sharedVariables(const ptx::Module& module) {
  std::vector<SharedVar> vars;
  if (moduleReadsReservedShared(module))
    vars.push_back({kReservedSharedKey, &reservedSharedVariable()});
  for (const auto& var : module.globals)
    if (var.space == ptx::StateSpace::Shared) vars.push_back({var.name, &var});
  for (const auto& fn : module.functions)
    for (const auto& var : fn.locals)
      if (var.space == ptx::StateSpace::Shared) vars.push_back({fn.name + "/" + var.name, &var});
  return vars;
}

std::unordered_map<std::string, FunctionRefs> collectRefs(const ptx::Module& module) {
  std::unordered_map<std::string, FunctionRefs> refs;
  for (const auto& fn : module.functions) {
    FunctionRefs& r = refs[fn.name];
    RefCollector collect(module, fn, r);
    for (const auto& st : fn.body) {
      if (st.isLabel()) continue;
      const auto& inst = st.instruction;
      for (const auto& op : inst.operands()) collect.operand(op);
    }
  }
  return refs;
}

std::set<std::string> reachable(const ptx::Module& module, const std::vector<std::string>& roots) {
  std::set<std::string, std::less<>> reached = ptx::reachableFunctions(module, roots);
  return std::set<std::string>(reached.begin(), reached.end());
}

// Shared variables each kernel can reach through the functions it can run.
std::unordered_map<std::string, std::set<std::string>> kernelVariables(
    const ptx::Module& module, const std::vector<SharedVar>& vars) {
  std::unordered_map<std::string, FunctionRefs> refs = collectRefs(module);
  std::unordered_map<std::string, std::set<std::string>> kernelVars;
  for (const auto& fn : module.functions) {
    if (!fn.isEntry || fn.isDeclaration) continue;
    std::set<std::string>& mine = kernelVars[fn.name];
    for (const auto& name : reachable(module, {fn.name}))
      mine.insert(refs[name].shared.begin(), refs[name].shared.end());
  }
  return kernelVars;
}

}  // namespace

bool isReservedSharedRegister(ptx::SpecialRegister reg) {
  return reg == ptx::SpecialRegister::ReservedSmemOffsetBegin ||
         reg == ptx::SpecialRegister::ReservedSmemOffsetEnd ||
         reg == ptx::SpecialRegister::ReservedSmemOffsetCap ||
         reg == ptx::SpecialRegister::ReservedSmemOffsetN;
}

SharedLayout computeSharedLayout(const ptx::Module& module) {
  std::vector<SharedVar> vars = sharedVariables(module);
  auto kernelVars = kernelVariables(module, vars);
  SharedLayout layout;
  // Static variables: each starts after every placed variable that some kernel uses with it.
  std::unordered_map<std::string, uint64_t> ends;
  std::set<std::string> externKeys;
  uint64_t dynamicAlign = 16;
  for (const auto& v : vars) {
    layout.windowAlignment =
        std::max<uint64_t>(layout.windowAlignment, v.var->effectiveAlignment());
    if (isDynamic(*v.var)) {
      externKeys.insert(v.key);
      dynamicAlign = std::max<uint64_t>(dynamicAlign, v.var->effectiveAlignment());
      continue;
    }
    uint64_t start = 0;
    for (const auto& [kernel, used] : kernelVars) {
      if (!used.count(v.key)) continue;
      for (const auto& other : used)
        if (auto it = ends.find(other); it != ends.end()) start = std::max(start, it->second);
    }
    start = alignTo(start, std::max(1u, v.var->effectiveAlignment()));
    layout.offsets[v.key] = start;
    ends[v.key] = start + v.var->sizeInBytes();
  }
  // Dynamic arrays: after the static part of every kernel that uses one.
  uint64_t dynamicStart = 0;
  std::set<std::string> externUsers;
  for (const auto& [kernel, used] : kernelVars) {
    uint64_t end = 0;
    for (const auto& key : used) {
      if (auto it = ends.find(key); it != ends.end()) end = std::max(end, it->second);
      if (externKeys.count(key)) externUsers.insert(kernel);
    }
    layout.staticBytes[kernel] = end;
    if (used.count(kReservedSharedKey)) layout.reservedRegionUsers.insert(kernel);
    if (externUsers.count(kernel)) dynamicStart = std::max(dynamicStart, end);
  }
  dynamicStart = alignTo(dynamicStart, dynamicAlign);
  for (const auto& key : externKeys) layout.offsets[key] = dynamicStart;
  for (const auto& [kernel, used] : kernelVars)
    layout.dynamicOffset[kernel] = externUsers.count(kernel)
                                       ? dynamicStart
                                       : alignTo(layout.staticBytes[kernel], dynamicAlign);
  return layout;
}

std::set<std::string> reachableFunctions(const ptx::Module& module, const std::string& kernel) {
  return reachable(module, {kernel});
}

std::set<std::string> functionsReachableFromKernels(const ptx::Module& module) {
  std::vector<std::string> kernels;
  for (const auto& fn : module.functions)
    if (fn.isEntry) kernels.push_back(fn.name);
  return reachable(module, kernels);
}

}  // namespace rocuda::compiler::detail
