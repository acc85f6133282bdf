#include "backends/hip/dynamic_library.h"

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace rocuda::backends::hip {

#ifdef _WIN32

Result<LibraryHandle> openLibrary(const std::string& path) {
  HMODULE module = LoadLibraryExA(path.c_str(), nullptr, 0);
  if (module == nullptr)
    return makeError(ErrorCode::FileNotFound,
                     "LoadLibrary failed with error " + std::to_string(GetLastError()));
  return static_cast<LibraryHandle>(module);
}

void* findSymbol(LibraryHandle library, const char* name) {
  return reinterpret_cast<void*>(GetProcAddress(static_cast<HMODULE>(library), name));
}

void closeLibrary(LibraryHandle library) {
  if (library != nullptr) FreeLibrary(static_cast<HMODULE>(library));
}

#else

Result<LibraryHandle> openLibrary(const std::string& path) {
  // RTLD_LOCAL: HIP's symbols must not interpose on anything else in the process (libcuda
  // shims and HIP share names like hipMalloc only by accident, but stay out of the global scope).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return makeError(ErrorCode::FileNotFound, reason != nullptr ? reason : "dlopen failed");
  }
  return handle;
}

void* findSymbol(LibraryHandle library, const char* name) {
  return library != nullptr ? dlsym(library, name) : nullptr;
}

void closeLibrary(LibraryHandle library) {
  if (library != nullptr) dlclose(library);
}

#endif

}  // namespace rocuda::backends::hip
