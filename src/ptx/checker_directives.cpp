// Semantic checks of directives and declarations: the PTX ISA version and target each feature
// needs, where each performance directive may stand, the directives that exclude each other,
// and the instruction forms later versions removed. Every rule here was measured with ptxas 13.0
// (a case one version or target below each minimum, and the accepted one).
#include <cassert>

#include "ptx/parser_impl.h"

namespace rocuda::ptx::detail {

namespace {

// A feature's lowest `.version` (major * 10 + minor) and generic `.target` (0: any).
struct Feature {
  std::string_view name;
  uint16_t version;
  uint16_t sm;
};

constexpr Feature kFeatures[] = {
    // Performance directives of a function header.
    {".maxntid", 13, 0},
    {".reqntid", 21, 0},
    {".minnctapersm", 20, 0},
    {".maxnctapersm", 13, 0},
    {".maxnreg", 13, 0},
    {".maxclusterrank", 78, 90},
    {".reqnctapercluster", 78, 90},
    {".explicitcluster", 78, 90},
    {".blocksareclusters", 90, 90},
    {".noreturn", 64, 30},
    {".abi_preserve", 90, 80},
    {".abi_preserve_control", 90, 80},
    {".pragma", 20, 0},
    {"used_bytes_mask", 83, 50},
    {"enable_smem_spilling", 87, 75},
    // Module scope.
    {".alias", 63, 30},
    {".weak", 31, 0},
    {".common", 50, 0},
    {"texmode_independent", 15, 0},
    {"timestamp and file size in .file", 32, 0},
    {"function_name and inlined_at in .loc", 70, 0},
    // Declarations.
    {".callprototype", 21, 20},
    {".calltargets", 21, 20},
    {".branchtargets", 60, 30},
    {".attribute(.managed)", 40, 30},
    {".attribute(.unified)", 80, 90},
    {"kernel parameter attribute .ptr", 22, 0},
    {".b128", 83, 70},
    {"generic()", 31, 0},
    {"mask() initializer", 71, 0},
};

const Feature* findFeature(std::string_view name) {
  for (const Feature& feature : kFeatures)
    if (feature.name == name) return &feature;
  return nullptr;
}

bool isOneOf(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view candidate : names)
    if (name == candidate) return true;
  return false;
}

}  // namespace

std::string Parser::versionRequirementMessage(std::string_view what, unsigned version) const {
  return "'" + std::string(what) + "' requires PTX ISA .version " + versionText(version) +
         " or later (the module declares .version " + versionText(versionNumber_) + ")";
}

std::string Parser::targetRequirementMessage(std::string_view what, unsigned sm) const {
  return "'" + std::string(what) + "' requires .target sm_" + std::to_string(sm) +
         " or higher (the module targets " + target_.name + ")";
}

void Parser::requireFeature(const Token& at, std::string_view name) {
  const Feature* feature = findFeature(name);
  assert(feature != nullptr && "every feature checked is in kFeatures");
  if (feature == nullptr) return;
  if (versionNumber_ != 0 && versionNumber_ < feature->version)
    error(at, versionRequirementMessage(name, feature->version));
  if (target_.known && target_.sm < feature->sm)
    error(at, targetRequirementMessage(name, feature->sm));
}

// Called with the directive's token current; `function` holds what was parsed before it.
void Parser::checkPerformanceDirective(const Function& function, const Token& at) {
  std::string_view name = text(at);
  const PerformanceDirectives& perf = function.performance;
  if (name == ".maxnctapersm") {
    if (versionNumber_ >= 21)
      error(at, "'.maxnctapersm' was removed in PTX ISA .version 2.1 (use .minnctapersm)");
  } else if (findFeature(name) != nullptr) {
    requireFeature(at, name);
  }
  bool entryOnly = isOneOf(
      name, {".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg",
             ".maxclusterrank", ".reqnctapercluster", ".explicitcluster", ".blocksareclusters"});
  bool funcOnly = isOneOf(name, {".noreturn", ".abi_preserve", ".abi_preserve_control"});
  if (entryOnly && !function.isEntry)
    error(at, "'" + std::string(name) + "' applies to kernels only (.entry), not to .func '" +
                  function.name + "'");
  if (funcOnly && function.isEntry)
    error(at, "'" + std::string(name) + "' applies to .func only, not to the kernel '" +
                  function.name + "'");
  if (name == ".pragma" && !function.isEntry)
    error(at, "'.pragma' in the header of .func '" + function.name +
                  "' (only a kernel's header takes pragmas; put it in the body)");
  if (name == ".noreturn" && !function.returnParams.empty())
    error(at, "'.noreturn' on function '" + function.name + "', which returns a value");
  if (name == ".noreturn" && perf.noreturn) error(at, "'.noreturn' given twice");
  auto conflicts = [&](bool other, std::string_view otherName) {
    if (other)
      error(at,
            "'" + std::string(name) + "' and '" + std::string(otherName) + "' exclude each other");
  };
  if (name == ".maxntid") conflicts(!perf.reqntid.empty(), ".reqntid");
  if (name == ".reqntid") conflicts(!perf.maxntid.empty(), ".maxntid");
  if (name == ".maxclusterrank") conflicts(!perf.reqnctapercluster.empty(), ".reqnctapercluster");
  if (name == ".reqnctapercluster") conflicts(perf.maxclusterrank.has_value(), ".maxclusterrank");
}

// After the header's directives: the values each one must have, and what .blocksareclusters
// depends on.
void Parser::checkPerformanceValues(const Function& function, const Token& blocksAreClusters) {
  const PerformanceDirectives& perf = function.performance;
  auto positive = [&](const char* name, bool zero) {
    if (zero)
      errorAt(kUnknownOffset, function.loc,
              std::string("'") + name + "' of '" + function.name + "' must be positive");
  };
  auto hasZero = [](const std::vector<uint32_t>& values) {
    for (uint32_t value : values)
      if (value == 0) return true;
    return false;
  };
  positive(".maxntid", hasZero(perf.maxntid));
  positive(".reqntid", hasZero(perf.reqntid));
  positive(".minnctapersm", perf.minnctapersm == 0u);
  positive(".maxnreg", perf.maxnreg == 0u);
  if (perf.blocksAreClusters && (perf.reqntid.empty() || perf.reqnctapercluster.empty()))
    error(blocksAreClusters,
          "'.blocksareclusters' needs .reqntid and .reqnctapercluster on '" + function.name + "'");
}

void Parser::checkPragma(const Token& at, std::string_view quoted, bool inFunction) {
  requireFeature(at, ".pragma");
  std::string_view body = quoted.size() >= 2 ? quoted.substr(1, quoted.size() - 2) : quoted;
  for (std::string_view name : {"used_bytes_mask", "enable_smem_spilling"}) {
    if (body.substr(0, name.size()) != name) continue;
    requireFeature(at, name);
    if (!inFunction)
      error(at, "'.pragma \"" + std::string(name) + "\"' is allowed only inside a function");
  }
}

// Forms a later PTX ISA version removed: the token that became mandatory is absent.
void Parser::checkRemovedForms(const Instruction& inst, const Token& start) {
  switch (inst.opcode) {
    case Opcode::shfl:
    case Opcode::vote:
      // The pre-Volta forms: refused on sm_70 and later from PTX ISA 6.4.
      if (!inst.hasModifier("sync") && target_.known && target_.sm >= 70 && versionNumber_ >= 64)
        error(start, "'" + std::string(opcodeName(inst.opcode)) +
                         "' without '.sync' is not supported on .target sm_70 and higher from "
                         "PTX ISA .version 6.4 (use " +
                         opcodeName(inst.opcode) + ".sync)");
      return;
    case Opcode::wmma: {
      if (!inst.hasModifier("aligned") && versionNumber_ >= 63)
        error(start, "'wmma' needs '.aligned' from PTX ISA .version 6.3");
      bool floating = false;
      for (ScalarType type : inst.types()) floating |= isFloat(type);
      if (inst.hasModifier("mma") && inst.hasModifier("satfinite") && floating &&
          versionNumber_ >= 65)
        error(start,
              "'wmma.mma' with floating-point types takes no '.satfinite' from PTX ISA "
              ".version 6.5");
      return;
    }
    case Opcode::mov:
      // ptxas refuses half types on mov at every version: .b16/.b32 move them.
      for (ScalarType type : inst.types())
        if (type == ScalarType::F16 || type == ScalarType::F16x2 || type == ScalarType::BF16 ||
            type == ScalarType::BF16x2)
          error(start, std::string("'mov' does not take .") + scalarTypeName(type) + " (use mov.b" +
                           std::to_string(scalarTypeSize(type) * 8) + ")");
      return;
    default:
      return;
  }
}

// Module-scope and declaration rules that need the whole module: aliases name functions that
// are defined here and are not kernels.
void Parser::checkAliases() {
  for (size_t i = 0; i < out_.module.aliases.size(); ++i) {
    const auto& [alias, aliased] = out_.module.aliases[i];
    SourceLocation loc = i < aliasLocs_.size() ? aliasLocs_[i] : SourceLocation{};
    const Function* target = out_.module.findFunction(aliased);  // the definition if any
    if (target == nullptr) {
      if (out_.module.findGlobal(aliased) != nullptr)
        errorAt(kUnknownOffset, loc,
                "'.alias " + alias + "' names the variable '" + aliased +
                    "' (an alias names a function)");
      else
        errorAt(kUnknownOffset, loc,
                "'.alias " + alias + "' names the undeclared function '" + aliased + "'");
    } else if (target->isEntry) {
      errorAt(kUnknownOffset, loc,
              "'.alias " + alias + "' names the kernel '" + aliased + "' (an alias names a .func)");
    } else if (target->isDeclaration || target->linkage == Linkage::Weak) {
      errorAt(kUnknownOffset, loc,
              "'.alias " + alias + "' names '" + aliased + "', which must be defined here (not " +
                  (target->linkage == Linkage::Weak ? ".weak" : "only declared") + ")");
    }
  }
}

}  // namespace rocuda::ptx::detail
