#include "ptx/link.h"

#include <map>
#include <set>
#include <utility>

namespace rocuda::ptx {
namespace {

using Renames = std::map<std::string, std::string, std::less<>>;

// The new name of `name`, or nullptr when it keeps its name.
const std::string* renamed(std::string_view name, const Renames& renames,
                           const std::set<std::string, std::less<>>* shadowed) {
  if (name.empty() || (shadowed != nullptr && shadowed->find(name) != shadowed->end()))
    return nullptr;
  auto it = renames.find(name);
  return it == renames.end() ? nullptr : &it->second;
}

void renameName(std::string& name, const Renames& renames,
                const std::set<std::string, std::less<>>* shadowed) {
  if (const std::string* fresh = renamed(name, renames, shadowed)) name = *fresh;
}

// Operands live in the parser's arena, which is never written: a renamed operand (or list) is a
// new one in `arena`. Returns whether `op` changed.
bool renameOperand(Operand& op, const Renames& renames,
                   const std::set<std::string, std::less<>>& shadowed, Arena& arena) {
  auto reference = [&](std::string_view name, const SymbolReference* old, const Operand* parts,
                       size_t partCount) {
    return arena.create(SymbolReference{name, old ? old->offset : 0, parts,
                                        static_cast<uint32_t>(partCount)});
  };
  if (op.kind == Operand::Kind::Symbol) {
    const std::string* fresh = renamed(op.symbol(), renames, &shadowed);
    if (fresh == nullptr) return false;
    op = Operand::makeSymbol(reference(arena.intern(*fresh), op.reference(), nullptr, 0));
    return true;
  }
  if (op.kind == Operand::Kind::Address) {
    Address address = op.address();
    const std::string* fresh = address.baseKind == Address::BaseKind::Symbol
                                   ? renamed(address.symbol, renames, &shadowed)
                                   : nullptr;
    // The parts after the base: [tex, {coords}] or [tex, sampler, {coords}].
    std::vector<Operand> parts(op.elements().begin(), op.elements().end());
    bool partsChanged = false;
    for (Operand& part : parts) partsChanged |= renameOperand(part, renames, shadowed, arena);
    if (fresh == nullptr && !partsChanged) return false;
    std::string_view name = fresh ? arena.intern(*fresh) : address.symbol;
    const Operand* storedParts =
        partsChanged ? arena.copy(parts.data(), parts.size()) : op.elements().data();
    op = Operand::makeAddress(address.baseKind, address.reg, address.offset,
                              reference(name, op.reference(), storedParts, parts.size()));
    return true;
  }
  if (op.kind == Operand::Kind::Vector || op.kind == Operand::Kind::List) {
    std::vector<Operand> elements(op.elements().begin(), op.elements().end());
    bool changed = false;
    for (Operand& element : elements) changed |= renameOperand(element, renames, shadowed, arena);
    if (!changed) return false;
    op = Operand::makeList(op.kind, arena.copy(elements.data(), elements.size()),
                           elements.size());
    return true;
  }
  return false;
}

void renameInitializer(Variable& variable, const Renames& renames,
                       const std::set<std::string, std::less<>>* shadowed, Arena& arena) {
  for (InitializerElement& element : variable.initializer) {
    if (element.kind() != InitializerElement::Kind::SymbolAddress) continue;
    const std::string* fresh = renamed(element.symbol(), renames, shadowed);
    if (fresh == nullptr) continue;
    element = InitializerElement::makeSymbolAddress(
        arena.create(SymbolReference{arena.intern(*fresh), element.offset(), nullptr}),
        element.generic(), element.maskedByte());
  }
}

// Names a function body declares itself (parameters, locals, labels) hide module-scope names.
std::set<std::string, std::less<>> shadowedIn(const Function& f) {
  std::set<std::string, std::less<>> names;
  for (const Variable& v : f.params) names.insert(v.name);
  for (const Variable& v : f.returnParams) names.insert(v.name);
  for (const Variable& v : f.locals) names.insert(v.name);
  for (const Statement& s : f.body)
    if (s.isLabel()) names.emplace(s.labelName());
  for (const CallPrototype& p : f.callPrototypes) names.insert(p.label);
  for (const TargetList& t : f.targetLists) names.insert(t.label);
  return names;
}

void renameFunction(Function& f, const Renames& renames, Arena& arena) {
  renameName(f.name, renames, nullptr);
  if (f.isDeclaration) return;
  std::set<std::string, std::less<>> shadowed = shadowedIn(f);
  std::vector<Operand> operands;
  for (Statement& s : f.body) {
    if (s.isLabel()) continue;
    Instruction& inst = s.instruction;
    operands.assign(inst.operands().begin(), inst.operands().end());
    bool changed = false;
    for (Operand& op : operands) changed |= renameOperand(op, renames, shadowed, arena);
    if (changed) inst.setOperands(arena, operands.data(), operands.size());
  }
  for (Variable& v : f.locals) renameInitializer(v, renames, &shadowed, arena);
  for (TargetList& t : f.targetLists)
    if (t.isCallTargets)
      for (std::string& target : t.targets) renameName(target, renames, &shadowed);
}

void renameModule(Module& m, const Renames& renames) {
  if (renames.empty()) return;
  // A new arena of this module's own: the others may be shared with copies of the module.
  m.arenas.push_back(std::make_shared<Arena>());
  Arena& arena = *m.arenas.back();
  for (Variable& v : m.globals) {
    renameName(v.name, renames, nullptr);
    renameInitializer(v, renames, nullptr, arena);
  }
  for (Function& f : m.functions) renameFunction(f, renames, arena);
  for (auto& [alias, target] : m.aliases) {
    renameName(alias, renames, nullptr);
    renameName(target, renames, nullptr);
  }
}

std::set<std::string> moduleScopeNames(const Module& m) {
  std::set<std::string> names;
  for (const Variable& v : m.globals) names.insert(v.name);
  for (const Function& f : m.functions) names.insert(f.name);
  return names;
}

// Module-local names that another module also uses get a suffix unique to their module.
void renameCollidingLocals(std::vector<Module>& modules) {
  std::vector<std::set<std::string>> names;
  for (const Module& m : modules) names.push_back(moduleScopeNames(m));
  auto usedElsewhere = [&](const std::string& name, size_t self) {
    for (size_t j = 0; j < names.size(); ++j)
      if (j != self && names[j].count(name) != 0) return true;
    return false;
  };
  for (size_t k = 0; k < modules.size(); ++k) {
    Renames renames;
    auto consider = [&](const std::string& name, Linkage linkage) {
      if (linkage != Linkage::Default || !usedElsewhere(name, k) || renames.count(name)) return;
      std::string fresh = name + "_rl" + std::to_string(k);
      while (usedElsewhere(fresh, modules.size()) || names[k].count(fresh)) fresh += "_";
      renames.emplace(name, fresh);
    };
    for (const Variable& v : modules[k].globals) consider(v.name, v.linkage);
    for (const Function& f : modules[k].functions) consider(f.name, f.linkage);
    renameModule(modules[k], renames);
    names[k] = moduleScopeNames(modules[k]);
  }
}

bool isStrong(Linkage linkage) {
  return linkage == Linkage::Visible || linkage == Linkage::Default;
}

// Which definition of each name wins: (module, index in globals or functions).
struct Choice {
  size_t module = 0;
  size_t index = 0;
  Linkage linkage = Linkage::Default;
  bool isFunction = false;
  uint64_t size = 0;
};

void choose(std::map<std::string, Choice>& chosen, const std::string& name, Choice candidate,
            std::vector<std::string>& errors) {
  auto [it, inserted] = chosen.emplace(name, candidate);
  if (inserted) return;
  Choice& current = it->second;
  if (current.isFunction != candidate.isFunction) {
    errors.push_back("'" + name + "' is defined both as a function and as a variable");
  } else if (isStrong(current.linkage) && isStrong(candidate.linkage)) {
    errors.push_back("multiple definitions of '" + name + "'");
  } else if (isStrong(candidate.linkage)) {
    current = candidate;  // a strong definition replaces a weak or common one
  } else if (current.linkage == Linkage::Common && candidate.linkage == Linkage::Common &&
             candidate.size > current.size) {
    current = candidate;  // the largest common variable
  }
}

std::map<std::string, Choice> chooseDefinitions(const std::vector<Module>& modules,
                                                std::vector<std::string>& errors) {
  std::map<std::string, Choice> chosen;
  for (size_t k = 0; k < modules.size(); ++k) {
    const Module& m = modules[k];
    for (size_t i = 0; i < m.globals.size(); ++i)
      if (m.globals[i].linkage != Linkage::Extern)
        choose(chosen, m.globals[i].name,
               {k, i, m.globals[i].linkage, false, m.globals[i].sizeInBytes()}, errors);
    for (size_t i = 0; i < m.functions.size(); ++i)
      if (!m.functions[i].isDeclaration)
        choose(chosen, m.functions[i].name, {k, i, m.functions[i].linkage, true, 0}, errors);
  }
  return chosen;
}

// The numeric part of the first target, "sm_90a" -> 90 (0 when not an sm_XX target).
unsigned targetNumber(const Module& m) {
  if (m.targets.empty() || m.targets[0].rfind("sm_", 0) != 0) return 0;
  unsigned value = 0;
  for (char c : m.targets[0].substr(3)) {
    if (c < '0' || c > '9') break;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value;
}

void mergeHeaders(const std::vector<Module>& modules, Module& out,
                  std::vector<std::string>& errors) {
  const Module* highest = &modules[0];
  for (const Module& m : modules) {
    if (m.versionMajor * 100 + m.versionMinor > out.versionMajor * 100 + out.versionMinor) {
      out.versionMajor = m.versionMajor;
      out.versionMinor = m.versionMinor;
    }
    if (targetNumber(m) > targetNumber(*highest)) highest = &m;
    if (m.addressSize != modules[0].addressSize)
      errors.push_back("modules disagree on .address_size");
  }
  out.targets = highest->targets;
  out.addressSize = modules[0].addressSize;
}

}  // namespace

LinkResult linkModules(std::vector<Module> modules) {
  LinkResult result;
  result.module.name = "<linked>";
  if (modules.empty()) {
    result.errors.push_back("nothing to link");
    return result;
  }
  mergeHeaders(modules, result.module, result.errors);
  renameCollidingLocals(modules);
  std::map<std::string, Choice> chosen = chooseDefinitions(modules, result.errors);
  if (!result.ok()) return result;

  std::set<std::string> declared;  // unresolved externs already emitted
  for (size_t k = 0; k < modules.size(); ++k) {
    Module& m = modules[k];
    for (size_t i = 0; i < m.globals.size(); ++i) {
      Variable& v = m.globals[i];
      auto it = chosen.find(v.name);
      bool keep = it == chosen.end()
                      ? declared.insert(v.name).second
                      : it->second.module == k && it->second.index == i && !it->second.isFunction;
      if (keep) result.module.globals.push_back(std::move(v));
    }
    for (size_t i = 0; i < m.functions.size(); ++i) {
      Function& f = m.functions[i];
      auto it = chosen.find(f.name);
      bool keep = it == chosen.end()
                      ? declared.insert(f.name).second
                      : it->second.module == k && it->second.index == i && it->second.isFunction;
      if (keep) result.module.functions.push_back(std::move(f));
    }
    for (auto& alias : m.aliases) result.module.aliases.push_back(std::move(alias));
    // The kept functions and globals point into their module's arenas.
    for (auto& arena : m.arenas) result.module.arenas.push_back(arena);
  }
  return result;
}

std::set<std::string, std::less<>> reachableFunctions(const Module& module,
                                                      const std::vector<std::string>& roots) {
  std::set<std::string, std::less<>> reached;
  std::vector<const Function*> pending;
  auto name = [&](std::string_view symbol) {
    const Function* f = module.findFunction(symbol);
    if (f == nullptr || !reached.insert(f->name).second) return;
    if (!f->isDeclaration) pending.push_back(f);
    for (const auto& [alias, target] : module.aliases)  // `.alias a, b`: naming a runs b
      if (alias == symbol)
        if (const Function* aliased = module.findFunction(target);
            aliased != nullptr && reached.insert(aliased->name).second && !aliased->isDeclaration)
          pending.push_back(aliased);
  };
  auto visit = [&](const Operand& op, auto& self) -> void {
    if (op.kind == Operand::Kind::Symbol) {
      name(op.symbol());
    } else if (op.kind == Operand::Kind::Address &&
               op.address().baseKind == Address::BaseKind::Symbol) {
      name(op.address().symbol);
    } else if (op.kind == Operand::Kind::Vector || op.kind == Operand::Kind::List) {
      for (const Operand& e : op.elements()) self(e, self);
    }
  };
  for (const std::string& root : roots) name(root);
  bool initializersNamed = false;
  while (!pending.empty()) {
    const Function* f = pending.back();
    pending.pop_back();
    bool indirect = false;
    for (const Statement& statement : f->body) {
      if (statement.isLabel()) continue;
      const Instruction& inst = statement.instruction;
      for (const Operand& op : inst.operands()) visit(op, visit);
      if (inst.opcode == Opcode::call && !inst.operands().empty()) {
        size_t at = inst.operands()[0].kind == Operand::Kind::List ? 1 : 0;
        if (at < inst.operands().size() && inst.operands()[at].kind == Operand::Kind::Register)
          indirect = true;
      }
    }
    if (indirect && !initializersNamed) {
      initializersNamed = true;
      for (const Variable& variable : module.globals)
        for (const InitializerElement& element : variable.initializer)
          if (element.kind() == InitializerElement::Kind::SymbolAddress) name(element.symbol());
    }
  }
  return reached;
}

std::set<std::string, std::less<>> unresolvedFunctions(const Module& module) {
  std::set<std::string, std::less<>> unresolved;
  for (const Function& f : module.functions)
    if (f.isDeclaration && !f.isEntry && !isDeviceRuntimeFunction(f.name))
      unresolved.insert(f.name);
  for (const Function& f : module.functions)  // a prototype of a function defined later
    if (!f.isDeclaration) unresolved.erase(f.name);
  for (const auto& [alias, target] : module.aliases) unresolved.erase(alias);  // .alias a, b
  if (unresolved.empty()) return unresolved;
  std::vector<std::string> kernels;
  for (const Function& f : module.functions)
    if (f.isEntry && !f.isDeclaration) kernels.push_back(f.name);
  std::set<std::string, std::less<>> reached = reachableFunctions(module, kernels);
  std::set<std::string, std::less<>> named;
  for (const std::string& f : unresolved)
    if (reached.count(f)) named.insert(f);
  return named;
}

}  // namespace rocuda::ptx
