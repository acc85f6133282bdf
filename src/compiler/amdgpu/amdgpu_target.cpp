// AMD GPU processors: gcnArchName parsing and the wave size of each supported processor.
#include <algorithm>
#include <cctype>

#include "compiler/amdgpu/amdgpu_codegen.h"

namespace rocuda::compiler {
namespace {

struct ProcessorInfo {
  const char* name;
  int wavefrontSize;
  bool hasSramecc;  // target features gcnArchName may carry
  bool hasXnack;
};

// RDNA runs CUDA's 32-lane warps natively in wave32; CDNA has only wave64.
constexpr ProcessorInfo kProcessors[] = {
    {"gfx1030", 32, false, false}, {"gfx1100", 32, false, false}, {"gfx1101", 32, false, false},
    {"gfx1102", 32, false, false}, {"gfx1150", 32, false, false}, {"gfx1151", 32, false, false},
    {"gfx1200", 32, false, false}, {"gfx1201", 32, false, false}, {"gfx90a", 64, true, true},
    {"gfx942", 64, true, true},
};

const ProcessorInfo* findProcessor(std::string_view name) {
  for (const auto& p : kProcessors)
    if (name == p.name) return &p;
  return nullptr;
}

bool looksLikeGfx(std::string_view name) {
  if (name.size() < 4 || name.substr(0, 3) != "gfx") return false;
  return std::all_of(name.begin() + 3, name.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

}  // namespace

const std::vector<std::string>& supportedAmdgpuProcessors() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& p : kProcessors) out.emplace_back(p.name);
    return out;
  }();
  return names;
}

int amdgpuWavefrontSize(std::string_view processor) {
  const ProcessorInfo* p = findProcessor(processor);
  return p ? p->wavefrontSize : 0;
}

Result<AmdgpuTarget> parseGcnArchName(std::string_view gcnArchName) {
  std::string_view rest = gcnArchName;
  size_t colon = rest.find(':');
  std::string_view name = rest.substr(0, colon);
  const ProcessorInfo* processor = findProcessor(name);
  if (!processor) {
    if (looksLikeGfx(name))
      return makeError(ErrorCode::NotSupported,
                       "AMD GPU '" + std::string(name) + "' is not a supported target");
    return makeError(ErrorCode::InvalidValue,
                     "'" + std::string(gcnArchName) + "' is not an AMD GPU architecture name");
  }
  AmdgpuTarget target;
  target.processor = std::string(name);
  while (colon != std::string_view::npos) {
    rest = rest.substr(colon + 1);
    colon = rest.find(':');
    std::string_view feature = rest.substr(0, colon);
    if (feature.size() < 2 || (feature.back() != '+' && feature.back() != '-'))
      return makeError(ErrorCode::InvalidValue, "malformed target feature '" +
                                                    std::string(feature) + "' in '" +
                                                    std::string(gcnArchName) + "'");
    std::string_view base = feature.substr(0, feature.size() - 1);
    bool allowed =
        (base == "sramecc" && processor->hasSramecc) || (base == "xnack" && processor->hasXnack);
    if (!allowed)
      return makeError(ErrorCode::InvalidValue, "target feature '" + std::string(base) +
                                                    "' does not apply to " + target.processor);
    if (!target.features.empty()) target.features += ',';
    target.features += feature.back();
    target.features += base;
  }
  return target;
}

}  // namespace rocuda::compiler
