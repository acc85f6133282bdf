#include "api/cuda/proc_table.h"

namespace rocuda::api {

ProcLookup resolveProc(std::span<const EntryPoint> table, std::string_view api, int cudaVersion,
                       bool perThread) {
  const EntryPoint* best = nullptr;
  const EntryPoint* bestLegacy = nullptr;
  bool known = false;
  for (const EntryPoint& entry : table) {
    if (api != entry.api) continue;
    known = true;
    if (entry.version > cudaVersion) continue;
    const EntryPoint*& slot = entry.stream == StreamVariant::PerThread ? best : bestLegacy;
    if (slot == nullptr || entry.version > slot->version) slot = &entry;
  }
  // Without the per-thread flag, or for a name with no per-thread form, the legacy variant.
  const EntryPoint* chosen = perThread && best != nullptr ? best : bestLegacy;
  if (chosen == nullptr) {
    return {nullptr, known ? ProcStatus::VersionNotSufficient : ProcStatus::SymbolNotFound};
  }
  return {chosen, chosen->function != nullptr ? ProcStatus::Found : ProcStatus::SymbolNotFound};
}

}  // namespace rocuda::api
