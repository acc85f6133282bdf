#include "support/nvidia_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#include "support/env.h"
#include "support/platform.h"

namespace rocuda::platform {
namespace {

std::string realPath(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : std::string();
}

// The directories of the shared libraries the process has loaded, in load order: where the
// application's own CUDA toolkit is (a Python wheel's nvidia/cu13/lib, holding the libnvvm that
// produced the LTO-IR to link).
std::vector<std::string> loadedLibraryDirectories() {
  std::vector<std::string> directories;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        auto& list = *static_cast<std::vector<std::string>*>(out);
        std::string path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        size_t slash = path.rfind('/');
        if (slash == std::string::npos) return 0;
        std::string directory = path.substr(0, slash);
        if (std::find(list.begin(), list.end(), directory) == list.end()) list.push_back(directory);
        return 0;
      },
      &directories);
  return directories;
}

}  // namespace

std::optional<NvidiaLibrary> openNvidiaLibrary(const char* overrideVariable,
                                               const std::string& fileName,
                                               std::initializer_list<const char*> requiredSymbols,
                                               const void* self) {
  std::vector<std::string> candidates;
  if (auto path = env::get(overrideVariable)) candidates.push_back(*path);
  // The copy beside a library the application loaded (its toolkit, as new as what it produces),
  // then the installed toolkit.
  for (const std::string& directory : loadedLibraryDirectories())
    candidates.push_back(directory + "/" + fileName);
  std::vector<std::string> roots;
  if (auto home = env::get("CUDA_HOME")) roots.push_back(*home);
  roots.push_back("/usr/local/cuda");
  for (const std::string& root : roots)
    for (const char* dir : {"/lib64/", "/lib/", "/targets/x86_64-linux/lib/"})
      candidates.push_back(root + dir + fileName);
  std::string own = libraryPathOf(self);
  for (const std::string& candidate : candidates) {
    std::string path = realPath(candidate);
    if (path.empty() || path == own) continue;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle == nullptr) continue;
    bool complete = true;
    for (const char* symbol : requiredSymbols) complete = complete && dlsym(handle, symbol);
    if (complete) return NvidiaLibrary{handle, path};
    dlclose(handle);
  }
  return std::nullopt;
}

}  // namespace rocuda::platform
