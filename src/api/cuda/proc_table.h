// The table of driver entry points (entry_points.def) and cuGetProcAddress's choice among the
// variants of one name. The choice is a pure function over a table so it can be tested alone.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rocuda::api {

enum class StreamVariant : uint8_t { Legacy, PerThread };

struct EntryPoint {
  const char* api;     // name asked for
  int version;         // first CUDA version meaning this variant
  const char* symbol;  // exported (versioned) symbol
  StreamVariant stream;
  void* function;  // nullptr when not implemented
};

// Every row of entry_points.def, with the addresses of the implemented functions
// (entry_points.cpp; requires the whole library).
std::span<const EntryPoint> entryPoints();

enum class ProcStatus : uint8_t { Found, SymbolNotFound, VersionNotSufficient };

struct ProcLookup {
  const EntryPoint* entry = nullptr;  // the chosen variant (set even when not implemented)
  ProcStatus status = ProcStatus::SymbolNotFound;
};

// The variant of `api` with the highest version <= cudaVersion; with `perThread`, the per-thread
// default-stream variant when the name has one. Found only when that variant is implemented.
ProcLookup resolveProc(std::span<const EntryPoint> table, std::string_view api, int cudaVersion,
                       bool perThread);

}  // namespace rocuda::api
