#include "api/nvjitlink/nvidia_lto.h"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>
#include <optional>

#include "rocuda/nvjitlink_abi.h"
#include "support/log.h"
#include "support/nvidia_library.h"

namespace rocuda::nvjitlink {
namespace {

// NVIDIA's entry points, by the versioned names its header calls.
struct NvidiaNvJitLink {
  void* library = nullptr;
  std::string path;
  nvJitLinkResult (*create)(nvJitLinkHandle*, uint32_t, const char**) = nullptr;
  nvJitLinkResult (*destroy)(nvJitLinkHandle*) = nullptr;
  nvJitLinkResult (*addData)(nvJitLinkHandle, nvJitLinkInputType, const void*, size_t,
                             const char*) = nullptr;
  nvJitLinkResult (*complete)(nvJitLinkHandle) = nullptr;
  nvJitLinkResult (*ptxSize)(nvJitLinkHandle, size_t*) = nullptr;
  nvJitLinkResult (*ptx)(nvJitLinkHandle, char*) = nullptr;
  nvJitLinkResult (*errorLogSize)(nvJitLinkHandle, size_t*) = nullptr;
  nvJitLinkResult (*errorLog)(nvJitLinkHandle, char*) = nullptr;
};

std::optional<NvidiaNvJitLink> load() {
  constexpr const char* kCreate = "__nvJitLinkCreate_13_0";
  constexpr const char* kDestroy = "__nvJitLinkDestroy_13_0";
  constexpr const char* kAddData = "__nvJitLinkAddData_13_0";
  constexpr const char* kComplete = "__nvJitLinkComplete_13_0";
  constexpr const char* kPtxSize = "__nvJitLinkGetLinkedPtxSize_13_0";
  constexpr const char* kPtx = "__nvJitLinkGetLinkedPtx_13_0";
  constexpr const char* kErrorLogSize = "__nvJitLinkGetErrorLogSize_13_0";
  constexpr const char* kErrorLog = "__nvJitLinkGetErrorLog_13_0";
  std::optional<platform::NvidiaLibrary> found = platform::openNvidiaLibrary(
      "ROCUDA_NVIDIA_NVJITLINK", "libnvJitLink.so.13",
      {kCreate, kDestroy, kAddData, kComplete, kPtxSize, kPtx, kErrorLogSize, kErrorLog},
      reinterpret_cast<const void*>(&load));
  if (!found) return std::nullopt;
  NvidiaNvJitLink n;
  n.library = found->handle;
  n.path = found->path;
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(found->handle, name));
  };
  bind(n.create, kCreate);
  bind(n.destroy, kDestroy);
  bind(n.addData, kAddData);
  bind(n.complete, kComplete);
  bind(n.ptxSize, kPtxSize);
  bind(n.ptx, kPtx);
  bind(n.errorLogSize, kErrorLogSize);
  bind(n.errorLog, kErrorLog);
  log::info("nvJitLink: LTO-IR goes through NVIDIA's " + n.path);
  return n;
}

const std::optional<NvidiaNvJitLink>& nvidia() {
  static std::once_flag once;
  static std::optional<NvidiaNvJitLink> instance;
  std::call_once(once, [] { instance = load(); });
  return instance;
}

std::string errorLogOf(const NvidiaNvJitLink& n, nvJitLinkHandle handle) {
  size_t size = 0;
  if (n.errorLogSize(handle, &size) != NVJITLINK_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (n.errorLog(handle, log.data()) != NVJITLINK_SUCCESS) return {};
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return log;
}

}  // namespace

Result<std::string> ltoToPtx(const std::vector<std::string>& options,
                             const std::vector<LtoInput>& inputs) {
  const std::optional<NvidiaNvJitLink>& n = nvidia();
  if (!n)
    return makeError(ErrorCode::NotFound,
                     "LTO-IR needs NVIDIA's libnvJitLink.so.13 to become PTX, and it was not "
                     "found (set ROCUDA_NVIDIA_NVJITLINK to its path, or CUDA_HOME); or build "
                     "the device code as PTX (without -dlto / -gen-lto, numba: lto=False)");
  std::vector<const char*> argv;
  bool ptx = false;
  for (const std::string& o : options) {
    argv.push_back(o.c_str());
    ptx = ptx || o == "-ptx";
  }
  if (!ptx) argv.push_back("-ptx");
  nvJitLinkHandle handle = nullptr;
  nvJitLinkResult r = n->create(&handle, static_cast<uint32_t>(argv.size()), argv.data());
  if (r != NVJITLINK_SUCCESS)
    return makeError(ErrorCode::InvalidPtx, "NVIDIA's nvJitLink refused the options (error " +
                                                std::to_string(static_cast<int>(r)) + ")");
  auto failed = [&](const std::string& what) {
    std::string message =
        what + " in NVIDIA's nvJitLink (" + n->path + "): " + errorLogOf(*n, handle);
    n->destroy(&handle);
    return makeError(ErrorCode::InvalidPtx, message);
  };
  for (const LtoInput& input : inputs)
    if (n->addData(handle, input.type, input.bytes.data(), input.bytes.size(),
                   input.name.c_str()) != NVJITLINK_SUCCESS)
      return failed("adding " + input.name + " failed");
  if (n->complete(handle) != NVJITLINK_SUCCESS) return failed("the LTO link failed");
  size_t size = 0;
  if (n->ptxSize(handle, &size) != NVJITLINK_SUCCESS || size == 0) return failed("no PTX came out");
  std::string text(size, '\0');
  if (n->ptx(handle, text.data()) != NVJITLINK_SUCCESS) return failed("reading the PTX failed");
  n->destroy(&handle);
  text.resize(text.find('\0') == std::string::npos ? text.size() : text.find('\0'));
  return text;
}

}  // namespace rocuda::nvjitlink
