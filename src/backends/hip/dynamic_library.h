// Loading a shared library at run time (dlopen / LoadLibrary). Candidate to move into
// support/platform once its owner takes it: it is the only OS call the HIP backend makes.
#pragma once

#include <string>

#include "support/result.h"

namespace rocuda::backends::hip {

// An opaque handle of a loaded library; nullptr is never a valid one.
using LibraryHandle = void*;

// Load `path` (a file path, or a bare name searched on the loader path). The error message is
// the loader's own (dlerror / GetLastError).
Result<LibraryHandle> openLibrary(const std::string& path);
// The address of an exported symbol, or nullptr when the library does not export it.
void* findSymbol(LibraryHandle library, const char* name);
void closeLibrary(LibraryHandle library);

}  // namespace rocuda::backends::hip
