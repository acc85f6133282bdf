// NVIDIA's own copy of a CUDA library Rocuda also ships (libnvJitLink.so.13, libnvrtc.so.13),
// for the work only NVIDIA's can do (LTO-IR, compiling CUDA C++). Found by path, never the
// Rocuda file of the same name, and loaded RTLD_LOCAL | RTLD_DEEPBIND so that it binds its own
// symbols rather than Rocuda's exports of the same names.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

namespace rocuda::platform {

struct NvidiaLibrary {
  void* handle = nullptr;
  std::string path;
};

// Tries $<overrideVariable> (a path to the file), then `fileName` in the directory of each shared
// library the process has loaded (the application's own toolkit: a Python wheel's libnvvm
// beside its libnvJitLink), then in $CUDA_HOME and /usr/local/cuda under lib64/, lib/ and
// targets/x86_64-linux/lib/; skips the file holding `self` (an address in the calling library)
// and files that do not export every required symbol.
std::optional<NvidiaLibrary> openNvidiaLibrary(const char* overrideVariable,
                                               const std::string& fileName,
                                               std::initializer_list<const char*> requiredSymbols,
                                               const void* self);

}  // namespace rocuda::platform
