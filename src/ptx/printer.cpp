// PTX printer: the inverse of the parser, for debugging and round-trip tests.
#include "ptx/printer.h"

#include <cstdio>
#include <set>

namespace rocuda::ptx {
namespace {

// '#' (our flattening suffix) is not a PTX identifier character.
std::string spell(std::string_view name) {
  std::string result(name);
  for (char& c : result)
    if (c == '#') c = '$';
  return result;
}

std::string hex(uint64_t value, int digits) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%0*llX", digits, static_cast<unsigned long long>(value));
  return buffer;
}

std::string printImmediate(const Immediate& imm) {
  switch (imm.kind) {
    case Immediate::Kind::Integer:
      return std::to_string(static_cast<int64_t>(imm.bits));
    case Immediate::Kind::F32Bits:
      return "0f" + hex(imm.bits, 8);
    case Immediate::Kind::F64Bits:
      return "0d" + hex(imm.bits, 16);
    case Immediate::Kind::Double: {
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "%.17g", imm.value);
      std::string text = buffer;
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      return text;
    }
  }
  return "0";
}

// `+4` / `+-4`: ptxas wants the plus sign also before a negative offset.
std::string printOffset(int64_t offset) {
  if (offset == 0) return "";
  return "+" + std::to_string(offset);
}

std::string printOperand(const Function& function, const Operand& op) {
  std::string prefix = op.negated ? "!" : "";
  auto regName = [&](uint32_t index) {
    return index < function.registerCount() ? spell(function.registerName(index))
                                            : std::string("%<bad>");
  };
  switch (op.kind) {
    case Operand::Kind::Register: {
      std::string text = (op.minus() ? "-" : "") + prefix + regName(op.reg());
      if (!op.component().empty()) text += "." + std::string(op.component());
      return text;
    }
    case Operand::Kind::SpecialRegister: {
      std::string name = specialRegisterName(op.special());
      if (op.vectorForm() != Operand::VectorForm::Component)  // "%tid.x" -> "%tid" / "%tid.w"
        name = name.substr(0, name.rfind('.')) +
               (op.vectorForm() == Operand::VectorForm::W ? ".w" : "");
      if (isNumberedSpecialRegister(op.special())) name += std::to_string(op.envregIndex());
      if (op.special() == SpecialRegister::Pm64) name += "_64";
      return prefix + name;
    }
    case Operand::Kind::Immediate:
      return printImmediate(op.imm());
    case Operand::Kind::Symbol:
      return spell(op.symbol()) + printOffset(op.symbolOffset());
    case Operand::Kind::Address: {
      std::string text = "[";
      const Address a = op.address();
      if (a.baseKind == Address::BaseKind::Register)
        text += regName(a.reg) + printOffset(a.offset);
      else if (a.baseKind == Address::BaseKind::Symbol)
        text += spell(a.symbol) + printOffset(a.offset);
      else
        text += std::to_string(a.offset);
      for (const auto& element : op.elements()) text += ", " + printOperand(function, element);
      return text + "]";
    }
    case Operand::Kind::Vector:
    case Operand::Kind::List: {
      bool vector = op.kind == Operand::Kind::Vector;
      std::string text = vector ? "{" : "(";
      Span<Operand> elements = op.elements();
      for (size_t i = 0; i < elements.size(); ++i)
        text += (i ? ", " : "") + printOperand(function, elements[i]);
      return text + (vector ? "}" : ")");
    }
    case Operand::Kind::Sink:
      return "_";
  }
  return "?";
}

// [.attribute(..)] [.align N] [.vN] .type [.ptr [.space] [.align N]] name[dims]
std::string printVariableHead(const Variable& var) {
  std::string text;
  if (var.managed) text += " .attribute(.managed)";
  if (var.alignment) text += " .align " + std::to_string(var.alignment);
  if (var.vectorWidth > 1) text += " .v" + std::to_string(var.vectorWidth);
  text += std::string(" .") + scalarTypeName(var.type);
  if (var.pointeeSpace != StateSpace::None || var.pointeeAlignment) {
    text += " .ptr";
    if (var.pointeeSpace != StateSpace::None)
      text += std::string(" .") + stateSpaceName(var.pointeeSpace);
    if (var.pointeeAlignment) text += " .align " + std::to_string(var.pointeeAlignment);
  }
  text += " " + spell(var.name);
  for (uint64_t dim : var.dims) text += dim ? "[" + std::to_string(dim) + "]" : "[]";
  return text;
}

std::string printElement(const InitializerElement& e) {
  if (e.kind() == InitializerElement::Kind::Number) return printImmediate(e.number());
  std::string symbol(e.symbol());
  std::string address =
      (e.generic() ? "generic(" + symbol + ")" : symbol) + printOffset(e.offset());
  if (!e.masked()) return address;
  char mask[24];
  std::snprintf(mask, sizeof mask, "0x%llX",
                static_cast<unsigned long long>(0xFFull << (8 * e.maskedByte())));
  return mask + ("(" + address + ")");
}

// Elements [first, first + count) grouped by the array dimensions from `dim` on.
std::string printInitializerGroup(const Variable& var, size_t dim, size_t first, size_t count) {
  std::string text = "{";
  if (dim + 1 >= var.dims.size() || var.dims[dim] == 0) {
    for (size_t i = 0; i < count; ++i)
      text += (i ? ", " : "") + printElement(var.initializer[first + i]);
    return text + "}";
  }
  size_t inner = count / var.dims[dim];
  for (size_t i = 0; i < var.dims[dim]; ++i)
    text += (i ? ", " : "") + printInitializerGroup(var, dim + 1, first + i * inner, inner);
  return text + "}";
}

std::string printInitializer(const Variable& var) {
  const auto& init = var.initializer;
  if (var.dims.empty() && var.vectorWidth == 1 && init.size() == 1) return printElement(init[0]);
  // Nested braces only when the element count fills the declared shape exactly.
  uint64_t total = var.vectorWidth;
  for (uint64_t dim : var.dims) total *= dim;
  if (var.dims.size() > 1 && total == init.size()) return printInitializerGroup(var, 0, 0, total);
  std::string text = "{";
  for (size_t i = 0; i < init.size(); ++i) text += (i ? ", " : "") + printElement(init[i]);
  return text + "}";
}

std::string printVariable(const Variable& var) {
  static const char* const kLinkage[] = {"", ".visible ", ".extern ", ".weak ", ".common "};
  std::string text = kLinkage[static_cast<int>(var.linkage)];
  text += std::string(".") + stateSpaceName(var.space) + printVariableHead(var);
  if (var.hasInitializer && !var.opaqueFields.empty()) {
    text += " = {";
    for (size_t i = 0; i < var.opaqueFields.size(); ++i)
      text += (i ? ", " : " ") + var.opaqueFields[i].first + " = " + var.opaqueFields[i].second;
    text += " }";
  } else if (var.hasInitializer) {
    text += " = " + printInitializer(var);
  }
  return text + ";\n";
}

std::string printParams(const std::vector<Variable>& params) {
  std::string text = "(";
  for (size_t i = 0; i < params.size(); ++i) {
    text += i ? ", " : "";
    text += std::string(".") + stateSpaceName(params[i].space) + printVariableHead(params[i]);
  }
  return text + ")";
}

void printUints(std::string& text, const char* name, const std::vector<uint32_t>& values) {
  if (values.empty()) return;
  text += std::string(" ") + name + " ";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
}

std::string printFunction(const Function& f) {
  static const char* const kLinkage[] = {"", ".visible ", ".extern ", ".weak ", ".common "};
  std::string text = kLinkage[static_cast<int>(f.linkage)];
  text += f.isEntry ? ".entry " : ".func ";
  if (!f.returnParams.empty()) text += printParams(f.returnParams) + " ";
  text += f.name + printParams(f.params);
  const PerformanceDirectives& p = f.performance;
  printUints(text, ".maxntid", p.maxntid);
  printUints(text, ".reqntid", p.reqntid);
  printUints(text, ".reqnctapercluster", p.reqnctapercluster);
  if (p.minnctapersm) text += " .minnctapersm " + std::to_string(*p.minnctapersm);
  if (p.maxnctapersm) text += " .maxnctapersm " + std::to_string(*p.maxnctapersm);
  if (p.maxnreg) text += " .maxnreg " + std::to_string(*p.maxnreg);
  if (p.maxclusterrank) text += " .maxclusterrank " + std::to_string(*p.maxclusterrank);
  if (p.explicitCluster) text += " .explicitcluster";
  if (p.blocksAreClusters) text += " .blocksareclusters";
  if (p.noreturn) text += " .noreturn";
  if (f.isDeclaration) return text + ";\n";
  text += "\n{\n";
  for (const RegisterDeclaration& d : f.registerDeclarations) {
    bool isParam = false;
    for (const auto* list : {&f.params, &f.returnParams})
      for (const Variable& v : *list)
        isParam |= !d.isRange && v.space == StateSpace::Reg && v.name == d.name;
    if (isParam) continue;
    std::string head = "  .reg";
    if (d.vectorWidth > 1) head += " .v" + std::to_string(d.vectorWidth);
    head += std::string(" .") + scalarTypeName(d.type) + " ";
    // A range prints as a range unless some of its registers were renamed (shadowing).
    bool renamed = false;
    for (const auto& entry : f.renamedRegisters)
      renamed |= entry.first >= d.first && entry.first < d.first + d.count;
    if (d.isRange && !renamed) {
      text += head + spell(d.name) + "<" + std::to_string(d.count) + ">;\n";
      continue;
    }
    for (uint32_t i = 0; i < d.count; ++i)
      text += head + spell(f.registerName(d.first + i)) + ";\n";
  }
  for (const Variable& v : f.locals) text += "  " + printVariable(v);
  for (const CallPrototype& proto : f.callPrototypes) {
    text += "  " + proto.label + ": .callprototype ";
    if (!proto.returnParams.empty()) text += printParams(proto.returnParams) + " ";
    text += "_ " + printParams(proto.params) + ";\n";
  }
  for (const TargetList& list : f.targetLists) {
    text += "  " + list.label + (list.isCallTargets ? ": .calltargets " : ": .branchtargets ");
    for (size_t i = 0; i < list.targets.size(); ++i) text += (i ? ", " : "") + list.targets[i];
    text += ";\n";
  }
  for (const std::string& pragma : p.pragmas) text += "  .pragma " + pragma + ";\n";
  for (const Statement& s : f.body) {
    if (s.isLabel())
      text += spell(s.labelName()) + ":\n";
    else
      text += "  " + printInstruction(f, s.instruction) + "\n";
  }
  return text + "}\n";
}

}  // namespace

std::string printInstruction(const Function& function, const Instruction& inst) {
  std::string text;
  if (std::optional<uint32_t> guard = inst.guard()) {
    text += inst.guardNegated ? "@!" : "@";
    text += *guard < function.registerCount() ? spell(function.registerName(*guard)) : "%<bad>";
    text += " ";
  }
  text += opcodeName(inst.opcode);
  size_t nextModifier = 0, nextType = 0;
  Span<std::string_view> modifiers = inst.modifiers();
  Span<ScalarType> types = inst.types();
  Span<Operand> operands = inst.operands();
  bool spaceDone = inst.space == StateSpace::None, vectorDone = inst.vectorWidth <= 1;
  auto space = [&] {
    if (!spaceDone)
      text += std::string(".") + stateSpaceName(inst.space) +
              spaceSpellingSuffix(inst.spaceSpelling);
    spaceDone = true;
  };
  auto vector = [&] {
    if (!vectorDone) text += ".v" + std::to_string(inst.vectorWidth);
    vectorDone = true;
  };
  // Suffixes in source order when known; whatever is left follows in the default order.
  for (size_t i = 0; i < inst.suffixCount; ++i) {
    switch ((inst.suffixLayout >> (2 * i)) & 3) {
      case 0:
        if (nextModifier < modifiers.size()) text += "." + std::string(modifiers[nextModifier++]);
        break;
      case 1:
        if (nextType < types.size()) text += std::string(".") + scalarTypeName(types[nextType++]);
        break;
      case 2:
        space();
        break;
      default:
        vector();
        break;
    }
  }
  space();
  while (nextModifier < modifiers.size()) text += "." + std::string(modifiers[nextModifier++]);
  vector();
  while (nextType < types.size()) text += std::string(".") + scalarTypeName(types[nextType++]);
  for (size_t i = 0; i < operands.size(); ++i) {
    const char* separator = i == 0 ? " " : (i == 1 && inst.destinationPair) ? "|" : ", ";
    text += separator + printOperand(function, operands[i]);
  }
  return text + ";";
}

std::string printModule(const Module& module) {
  std::string text = ".version " + std::to_string(module.versionMajor) + "." +
                     std::to_string(module.versionMinor) + "\n.target ";
  for (size_t i = 0; i < module.targets.size(); ++i) text += (i ? ", " : "") + module.targets[i];
  text += "\n.address_size " + std::to_string(module.addressSize) + "\n";
  for (size_t i = 0; i < module.files.size(); ++i)
    if (!module.files[i].empty())
      text += ".file " + std::to_string(i) + " \"" + module.files[i] + "\"\n";
  // Prototypes first (once per name): globals may take the address of functions, and
  // functions may call each other in any order.
  std::set<std::string> declared;
  for (const Function& f : module.functions) {
    if (f.isEntry || !declared.insert(f.name).second) continue;
    Function prototype = f;
    prototype.isDeclaration = true;
    text += printFunction(prototype);
  }
  for (const Variable& v : module.globals) text += printVariable(v);
  for (const Function& f : module.functions)
    if (!f.isDeclaration || (f.isEntry && declared.insert(f.name).second)) text += printFunction(f);
  for (const auto& [alias, target] : module.aliases)
    text += ".alias " + alias + ", " + target + ";\n";
  return text;
}

}  // namespace rocuda::ptx
