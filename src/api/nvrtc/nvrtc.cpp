// libnvrtc.so.13: NVIDIA's run-time CUDA C++ compiler, as Rocuda hands it to applications.
// Compiling CUDA C++ is NVRTC's job and NVIDIA's library does it (it runs on any machine, GPU or
// not): every call is forwarded to it (support/nvidia_library.h finds and loads it). One thing
// changes. Asked for a real architecture (`-arch=sm_86`), NVRTC emits SASS, which Rocuda cannot
// run; this library asks it for the matching virtual architecture (`compute_86`) instead and
// answers nvrtcGetCUBIN with the PTX, which Rocuda's module loader compiles for the device (CuPy,
// for one, compiles to "cubin"). Everything else, LTO-IR (-dlto) included, is NVRTC's own answer.
#include <dlfcn.h>

#include <cstddef>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rocuda/nvrtc_abi.h"
#include "support/nvidia_library.h"
#include "support/log.h"

#define ROCUDA_EXPORT extern "C" __attribute__((visibility("default")))

using namespace rocuda::nvrtc;

namespace {

using Program = nvrtcProgram;

// NVIDIA's entry points, resolved by name.
struct Nvrtc {
  void* library = nullptr;
  std::string path;
  void* resolve(const char* name) const { return library ? dlsym(library, name) : nullptr; }
};

Nvrtc loadNvrtc() {
  std::optional<rocuda::platform::NvidiaLibrary> found = rocuda::platform::openNvidiaLibrary(
      "ROCUDA_NVIDIA_NVRTC", "libnvrtc.so.13", {"nvrtcCompileProgram"},
      reinterpret_cast<const void*>(&loadNvrtc));
  if (found) {
    rocuda::log::info("NVRTC: forwarding to NVIDIA's " + found->path);
    return {found->handle, found->path};
  }
  rocuda::log::error(
      "NVRTC: NVIDIA's libnvrtc.so.13 was not found (set ROCUDA_NVIDIA_NVRTC to its path, or "
      "CUDA_HOME); every NVRTC call fails with NVRTC_ERROR_INTERNAL_ERROR");
  return {};
}

const Nvrtc& nvrtc() {
  static const Nvrtc instance = loadNvrtc();
  return instance;
}

template <class F>
F entry(const char* name) {
  return reinterpret_cast<F>(nvrtc().resolve(name));
}

// Programs whose real-architecture request was turned into PTX: their "cubin" is the PTX.
struct PtxAsCubin {
  std::mutex mutex;
  std::set<Program> programs;
};

PtxAsCubin& ptxAsCubin() {
  static PtxAsCubin instance;
  return instance;
}

bool answersCubinWithPtx(Program prog) {
  PtxAsCubin& p = ptxAsCubin();
  std::lock_guard lock(p.mutex);
  return p.programs.count(prog) != 0;
}

void setAnswersCubinWithPtx(Program prog, bool on) {
  PtxAsCubin& p = ptxAsCubin();
  std::lock_guard lock(p.mutex);
  if (on)
    p.programs.insert(prog);
  else
    p.programs.erase(prog);
}

// "sm_86" / "sm_90a" / "sm_100f" -> "compute_86" / "compute_90a" / "compute_100f"; nullopt for
// anything else (compute_XX, lto_XX, native...), which is left as it is.
std::optional<std::string> virtualArchFor(std::string_view arch) {
  if (arch.substr(0, 3) != "sm_" || arch.size() < 5) return std::nullopt;
  return "compute_" + std::string(arch.substr(3));
}

}  // namespace

namespace rocuda::nvrtc {

// The options with every real architecture replaced by its virtual one; `rewrote` says whether
// one was. Spellings: -arch=X, -arch X, --gpu-architecture=X, --gpu-architecture X.
std::vector<std::string> rewriteArchitectures(const std::vector<std::string>& options,
                                              bool& rewrote) {
  rewrote = false;
  std::vector<std::string> out;
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& o = options[i];
    bool handled = false;
    for (std::string_view flag : {"-arch", "--gpu-architecture"}) {
      if (o.size() > flag.size() && o.compare(0, flag.size(), flag) == 0 && o[flag.size()] == '=') {
        if (auto v = virtualArchFor(std::string_view(o).substr(flag.size() + 1))) {
          out.push_back(std::string(flag) + "=" + *v);
          rewrote = handled = true;
        }
      } else if (o == flag && i + 1 < options.size()) {
        if (auto v = virtualArchFor(options[i + 1])) {
          out.push_back(o);
          out.push_back(*v);
          ++i;
          rewrote = handled = true;
        }
      }
      if (handled) break;
    }
    if (!handled) out.push_back(o);
  }
  return out;
}

}  // namespace rocuda::nvrtc

// ---- entry points ----

// Forward a call to NVIDIA's function of the same name (INTERNAL_ERROR when it is absent).
#define ROCUDA_NVRTC_FORWARD(name, params, args)                     \
  ROCUDA_EXPORT nvrtcResult name params {                            \
    auto real = entry<nvrtcResult(*) params>(#name);                 \
    return real != nullptr ? real args : NVRTC_ERROR_INTERNAL_ERROR; \
  }

ROCUDA_EXPORT const char* nvrtcGetErrorString(nvrtcResult result) {
  auto real = entry<const char* (*)(nvrtcResult)>("nvrtcGetErrorString");
  return real != nullptr ? real(result) : "NVRTC_ERROR unknown (NVIDIA's NVRTC is not installed)";
}

ROCUDA_NVRTC_FORWARD(nvrtcVersion, (int* major, int* minor), (major, minor))
ROCUDA_NVRTC_FORWARD(nvrtcGetNumSupportedArchs, (int* numArchs), (numArchs))
ROCUDA_NVRTC_FORWARD(nvrtcGetSupportedArchs, (int* supportedArchs), (supportedArchs))
ROCUDA_NVRTC_FORWARD(nvrtcCreateProgram,
                     (Program * prog, const char* src, const char* name, int numHeaders,
                      const char* const* headers, const char* const* includeNames),
                     (prog, src, name, numHeaders, headers, includeNames))
ROCUDA_NVRTC_FORWARD(nvrtcGetPTXSize, (Program prog, size_t* size), (prog, size))
ROCUDA_NVRTC_FORWARD(nvrtcGetPTX, (Program prog, char* ptx), (prog, ptx))
ROCUDA_NVRTC_FORWARD(nvrtcGetLTOIRSize, (Program prog, size_t* size), (prog, size))
ROCUDA_NVRTC_FORWARD(nvrtcGetLTOIR, (Program prog, char* ltoir), (prog, ltoir))
ROCUDA_NVRTC_FORWARD(nvrtcGetOptiXIRSize, (Program prog, size_t* size), (prog, size))
ROCUDA_NVRTC_FORWARD(nvrtcGetOptiXIR, (Program prog, char* optixir), (prog, optixir))
ROCUDA_NVRTC_FORWARD(nvrtcGetProgramLogSize, (Program prog, size_t* size), (prog, size))
ROCUDA_NVRTC_FORWARD(nvrtcGetProgramLog, (Program prog, char* log), (prog, log))
ROCUDA_NVRTC_FORWARD(nvrtcAddNameExpression, (Program prog, const char* name), (prog, name))
ROCUDA_NVRTC_FORWARD(nvrtcGetLoweredName, (Program prog, const char* name, const char** lowered),
                     (prog, name, lowered))
ROCUDA_NVRTC_FORWARD(nvrtcGetPCHHeapSize, (size_t * size), (size))
ROCUDA_NVRTC_FORWARD(nvrtcSetPCHHeapSize, (size_t size), (size))
ROCUDA_NVRTC_FORWARD(nvrtcGetPCHCreateStatus, (Program prog), (prog))
ROCUDA_NVRTC_FORWARD(nvrtcGetPCHHeapSizeRequired, (Program prog, size_t* size), (prog, size))
ROCUDA_NVRTC_FORWARD(nvrtcSetFlowCallback,
                     (Program prog, int (*callback)(void*, void*), void* payload),
                     (prog, callback, payload))

ROCUDA_EXPORT nvrtcResult nvrtcDestroyProgram(Program* prog) {
  auto real = entry<nvrtcResult (*)(Program*)>("nvrtcDestroyProgram");
  if (real == nullptr) return NVRTC_ERROR_INTERNAL_ERROR;
  Program old = prog != nullptr ? *prog : nullptr;
  nvrtcResult result = real(prog);
  if (result == NVRTC_SUCCESS && old != nullptr) setAnswersCubinWithPtx(old, false);
  return result;
}

ROCUDA_EXPORT nvrtcResult nvrtcCompileProgram(Program prog, int numOptions,
                                              const char* const* options) {
  auto real = entry<nvrtcResult (*)(Program, int, const char* const*)>("nvrtcCompileProgram");
  if (real == nullptr) return NVRTC_ERROR_INTERNAL_ERROR;
  if (numOptions < 0 || (numOptions > 0 && options == nullptr))
    return real(prog, numOptions, options);
  std::vector<std::string> given;
  for (int i = 0; i < numOptions; ++i) {
    if (options[i] == nullptr) return real(prog, numOptions, options);  // NVRTC reports it
    given.emplace_back(options[i]);
  }
  bool rewrote = false;
  std::vector<std::string> rewritten = rocuda::nvrtc::rewriteArchitectures(given, rewrote);
  std::vector<const char*> argv;
  for (const std::string& o : rewritten) argv.push_back(o.c_str());
  nvrtcResult result = real(prog, static_cast<int>(argv.size()), argv.data());
  if (result == NVRTC_SUCCESS || result == NVRTC_ERROR_COMPILATION)
    setAnswersCubinWithPtx(prog, rewrote && result == NVRTC_SUCCESS);
  return result;
}

ROCUDA_EXPORT nvrtcResult nvrtcGetCUBINSize(Program prog, size_t* size) {
  if (!answersCubinWithPtx(prog)) {
    auto real = entry<nvrtcResult (*)(Program, size_t*)>("nvrtcGetCUBINSize");
    return real != nullptr ? real(prog, size) : NVRTC_ERROR_INTERNAL_ERROR;
  }
  if (size == nullptr) return NVRTC_ERROR_INVALID_INPUT;
  auto ptxSize = entry<nvrtcResult (*)(Program, size_t*)>("nvrtcGetPTXSize");
  return ptxSize != nullptr ? ptxSize(prog, size) : NVRTC_ERROR_INTERNAL_ERROR;
}

ROCUDA_EXPORT nvrtcResult nvrtcGetCUBIN(Program prog, char* cubin) {
  if (!answersCubinWithPtx(prog)) {
    auto real = entry<nvrtcResult (*)(Program, char*)>("nvrtcGetCUBIN");
    return real != nullptr ? real(prog, cubin) : NVRTC_ERROR_INTERNAL_ERROR;
  }
  if (cubin == nullptr) return NVRTC_ERROR_INVALID_INPUT;
  auto ptx = entry<nvrtcResult (*)(Program, char*)>("nvrtcGetPTX");
  return ptx != nullptr ? ptx(prog, cubin) : NVRTC_ERROR_INTERNAL_ERROR;
}
