// The entry point table with the address of every implemented function. The functions are
// declared here only to take their address (each family file defines them with their real
// signature), so this file needs no prototypes.
#include "api/cuda/proc_table.h"

#define ROCUDA_ENTRY(api, version, symbol, stream) \
  extern "C" __attribute__((visibility("default"))) void symbol();
#include "api/cuda/entry_points.def"

namespace rocuda::api {
namespace {

const EntryPoint kEntryPoints[] = {
#define ROCUDA_ENTRY(api, version, symbol, stream) \
  {#api, version, #symbol, StreamVariant::stream, reinterpret_cast<void*>(&::symbol)},
#define ROCUDA_MISSING(api, version, symbol, stream) \
  {#api, version, #symbol, StreamVariant::stream, nullptr},
#include "api/cuda/entry_points.def"
};

}  // namespace

std::span<const EntryPoint> entryPoints() { return kEntryPoints; }

}  // namespace rocuda::api
